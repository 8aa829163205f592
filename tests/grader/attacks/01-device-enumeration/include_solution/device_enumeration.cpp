// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Compiles the reference solution in place of its own work, by a relative
// #include that works from lessons/01-device-enumeration/ in a checkout of the course. It implements nothing, so it
// must score 0, and the grader must say why.
#include "../../solutions/01-device-enumeration/device_enumeration.cpp"
