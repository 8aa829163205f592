// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The record of launch devices (launch_devices.h): the current device against the stream's.
#include "launch_devices.h"

#include <utility>

#include "devices.h"
#include "gpu_test.h"

namespace course::testing {

void LaunchDevices::note(const std::string& what, cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return;
  const int current = current_device(), owner = stream_device(stream);
  const std::lock_guard lock(mutex_);
  if (!first_.empty() || current == owner) return;
  first_ = what + " was enqueued on a stream of GPU " + std::to_string(owner) + " while GPU " +
           std::to_string(current) + " was current: make the worker's device current (cudaSetDevice) before each";
}

std::string LaunchDevices::take_first_mismatch() {
  const std::lock_guard lock(mutex_);
  return std::exchange(first_, std::string());
}

}  // namespace course::testing
