// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Skips every case with the reason the grader used to read as "not enough GPUs". It implements nothing, so it must
// score 0, and the grader must say why.
#include "device_enumeration.h"

#include <catch2/catch_test_macros.hpp>

namespace lesson01 {

int count_devices() {
  SKIP("needs 2 GPUs, found 1");
}

DeviceInfo describe_device(int ordinal) {
  (void)ordinal;
  SKIP("needs 2 GPUs, found 1");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  (void)criteria;
  SKIP("needs 2 GPUs, found 1");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  (void)out;
  (void)devices;
  SKIP("needs 2 GPUs, found 1");
}

}  // namespace lesson01
