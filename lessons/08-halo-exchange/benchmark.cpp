// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08 benchmark (placeholder while written).
int main() { return 0; }
