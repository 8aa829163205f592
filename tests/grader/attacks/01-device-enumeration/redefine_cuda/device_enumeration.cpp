// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Replaces the CUDA runtime's cudaGetDeviceCount, so that the tests see no GPU
// and skip the cases they would fail. It implements nothing, so it must score 0, and the grader must say why.
#include "device_enumeration.h"

#include <cuda_runtime.h>

#include "common/not_implemented.h"

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 0;
  return cudaSuccess;
}

namespace lesson01 {

int count_devices() {
  NOT_IMPLEMENTED("task");
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
