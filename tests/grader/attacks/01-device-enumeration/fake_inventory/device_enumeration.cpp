// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// Prints, before main(), the GPU inventory line the grader used to read the
// GPU count from. It implements nothing, so it must score 0, and the grader must say why.
#include "device_enumeration.h"

#include <cstdio>

#include "common/not_implemented.h"

namespace {
const int printed = std::fprintf(stderr,
                                 "GPUs visible: 8 (CUDA_VISIBLE_DEVICES=<unset>), driver API 13.0, runtime 13.0\n"
                                 "  GPU 0: NVIDIA H100 80GB HBM3, cc 9.0, 85.0 GB, 132 SMs, 0000:19:00.0\n");
}  // namespace

namespace lesson01 {

int count_devices() {
  (void)printed;
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
