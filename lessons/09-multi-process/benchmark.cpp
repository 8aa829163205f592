// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
int main() {
  return 0;
}
