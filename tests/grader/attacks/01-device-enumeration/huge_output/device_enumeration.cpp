// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Buries the grader in output: 64 MB each time a test calls it. It implements nothing, so it must score 0, and the
// grader must say why.
#include "device_enumeration.h"

#include <cstdio>
#include <string>

#include "common/not_implemented.h"

namespace lesson01 {

int count_devices() {
  const std::string line(1 << 20, 'x');
  for (int i = 0; i < 64; ++i) std::fwrite(line.data(), 1, line.size(), stdout);
  NOT_IMPLEMENTED("task 1");
}

DeviceInfo describe_device(int ordinal) {
  (void)ordinal;
  NOT_IMPLEMENTED("task");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  (void)criteria;
  NOT_IMPLEMENTED("task");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  (void)out;
  (void)devices;
  NOT_IMPLEMENTED("task");
}

}  // namespace lesson01
