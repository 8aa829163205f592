// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Ends every case with Catch2's own "a check failed" exception, which
// Catch2 swallows without recording a failure. It implements nothing, so it must score 0, and the grader must say why.
#include "device_enumeration.h"

#include <catch2/internal/catch_test_failure_exception.hpp>

namespace lesson01 {

int count_devices() {
  throw Catch::TestFailureException{};
}

DeviceInfo describe_device(int ordinal) {
  (void)ordinal;
  throw Catch::TestFailureException{};
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  (void)criteria;
  throw Catch::TestFailureException{};
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  (void)out;
  (void)devices;
  throw Catch::TestFailureException{};
}

}  // namespace lesson01
