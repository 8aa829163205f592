// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01: device enumeration. Find the GPUs, describe them, choose the ones a job can use.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 01-device-enumeration --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "device_enumeration.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <iomanip>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"

namespace lesson01 {

int count_devices() {
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
