// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01: device enumeration. Find the GPUs, describe them, choose the ones a job can use.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 01-device-enumeration --print-errorlogs
// checks your work. Everything outside the TODO regions stays as it is.
#include "device_enumeration.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <iomanip>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"

namespace lesson01 {

int count_devices() {
  // TODO(task 1): ask the runtime how many devices there are (cudaGetDeviceCount). "No driver"
  // (cudaErrorInsufficientDriver) and "no device" (cudaErrorNoDevice) mean 0 GPUs, not a failure:
  // return 0 (and call cudaGetLastError() to reset the runtime's last-error slot). Any other
  // error goes through CUDA_CHECK.
  NOT_IMPLEMENTED("task 1");
}

DeviceInfo describe_device(int ordinal) {
  // TODO(task 2): fill a DeviceInfo from cudaGetDeviceProperties, cudaDeviceGetPCIBusId and
  // cudaMemGetInfo. cudaMemGetInfo reports on the *current* device: make `ordinal` current with a
  // course::DeviceGuard, so the caller's device is restored when this function returns.
  // Format the UUID as the contract header describes.
  (void)ordinal;
  NOT_IMPLEMENTED("task 2");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  // TODO(task 3): walk the ordinals 0..count_devices()-1 in order, keep those whose compute
  // capability is at least (min_major, min_minor) and whose free memory is at least
  // min_free_memory, and stop once max_devices are kept.
  (void)criteria;
  NOT_IMPLEMENTED("task 3");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  // TODO(task 4): one header line, then one line per device with every field of DeviceInfo:
  // ordinal, name, "major.minor", total and free memory in GB (bytes / 1e9, one decimal),
  // SM count, PCI bus id and UUID. std::setw and std::left line the columns up.
  (void)out;
  (void)devices;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson01
