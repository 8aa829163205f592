// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08, given: a worker's streams, events and residual scratch, made on its device. The
// boundary stream gets the device's greatest priority (the smallest number that
// cudaDeviceGetStreamPriorityRange allows): when both streams of a worker have blocks waiting, the
// block scheduler starts the boundary's first, so the rows the neighbours wait for are done early.
#include "common/check.h"
#include "common/device_guard.h"
#include "jacobi.h"

namespace lesson08 {

namespace {

constexpr unsigned kOrderingOnly = cudaEventDisableTiming;

int greatest_priority(int device) {
  const course::DeviceGuard on_device(device);
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}

}  // namespace

Worker::Worker(int device_, course::Range rows_)
    : device(device_),
      rows(rows_),
      stream(device_),
      boundary_stream(device_, greatest_priority(device_)),
      sent(device_, kOrderingOnly),
      interior_done(device_, kOrderingOnly),
      partials(device_, kResidualScratch),
      residual(device_, 2) {}

}  // namespace lesson08
