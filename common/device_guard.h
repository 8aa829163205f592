// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// DeviceGuard makes a device current for one scope and restores the caller's device when
// the scope ends, also when an exception leaves it. The current device belongs to the
// calling host thread, so code that switches devices and forgets to switch back changes
// where its caller's next allocation lands. (Lesson 02 has students write their own.)
#pragma once

#include "check.h"

namespace course {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }  // a destructor must not throw
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  int previous() const noexcept { return previous_; }

 private:
  int previous_ = 0;
};

}  // namespace course
