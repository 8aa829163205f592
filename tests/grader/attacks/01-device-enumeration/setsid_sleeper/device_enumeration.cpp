// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Leaves a process behind in a session of its own (out of reach of a
// process-group kill); the sleep's argument 4242.5 marks it. It implements nothing, so it must score 0, and the grader
// must say why.
#include "device_enumeration.h"

#include <unistd.h>

#include "common/not_implemented.h"

namespace lesson01 {

int count_devices() {
  if (fork() == 0) {
    setsid();
    execl("/bin/sleep", "sleep", "4242.5", static_cast<char*>(nullptr));
    _exit(0);
  }
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
