// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Ends the whole program with "success" as soon as a test calls it. It implements nothing, so it must score 0, and the
// grader must say why.
#include "device_enumeration.h"

#include <cstdlib>

namespace lesson01 {

int count_devices() {
  std::exit(0);
}

DeviceInfo describe_device(int ordinal) {
  (void)ordinal;
  std::exit(0);
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  (void)criteria;
  std::exit(0);
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  (void)out;
  (void)devices;
  std::exit(0);
}

}  // namespace lesson01
