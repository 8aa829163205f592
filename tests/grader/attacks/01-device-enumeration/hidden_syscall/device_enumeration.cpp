// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// the untouched starter (it implements nothing, so it must score 0) plus one trick, and the
// grader must say why. A system call hidden from a linear disassembly inside a long instruction.
#include "device_enumeration.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <iomanip>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"

namespace {
long raw_write(long fd, const char* text, long length) {
  long result;
  asm volatile(
      "jmp 1f + 2\n"
      "1: movabs $0x9090909090050f90, %%r11\n"
      : "=a"(result)
      : "a"(1L), "D"(fd), "S"(text), "d"(length)
      : "r11", "rcx", "memory");
  return result;
}
}  // namespace

namespace lesson01 {

int count_devices() {
  (void)raw_write(2, "", 0);  // the trick runs where a test calls the student's code
  // TODO(task 1): return the number of visible GPUs, 0 (not an exception) when there is none.
  NOT_IMPLEMENTED("task 1");
}

DeviceInfo describe_device(int ordinal) {
  // TODO(task 2): fill a DeviceInfo for `ordinal`, leaving the caller's current device as it was.
  (void)ordinal;
  NOT_IMPLEMENTED("task 2");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  // TODO(task 3): the ordinals that meet every criterion, lowest first, at most max_devices.
  (void)criteria;
  NOT_IMPLEMENTED("task 3");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  // TODO(task 4): a header line, then one line per device with every field of DeviceInfo.
  (void)out;
  (void)devices;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson01
