// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02: cudaSetDevice, and many GPUs from one process. Put a slice of a buffer on every
// GPU, drive all of them from one thread and then from one thread each, and write the device
// guard that keeps the current device where the caller left it.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 02-set-device --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "set_device.h"

#include <cuda_runtime.h>

#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/not_implemented.h"
#include "kernels.cuh"

namespace lesson02 {

std::vector<Slice> allocate_slices(std::size_t n, std::span<const int> devices) {
  // TODO(task 1): split [0, n) over the workers and cudaMalloc slice k on devices[k].
  (void)n;
  (void)devices;
  NOT_IMPLEMENTED("task 1");
}

void free_slices(std::vector<Slice>& slices) {
  // TODO(task 1): cudaFree every slice on its own device, then empty the list.
  (void)slices;
  NOT_IMPLEMENTED("task 1");
}

void run_on_all_devices(std::span<const int> devices, const DeviceWork& work) {
  // TODO(task 2): from this thread, enqueue every worker's work on a stream of its own, then wait.
  (void)devices;
  (void)work;
  NOT_IMPLEMENTED("task 2");
}

void scale_slices(std::span<const Slice> input, std::span<const Slice> output, float factor) {
  // TODO(task 2): scale slice k on its device with launch_scale, all slices at once (use run_on_all_devices).
  (void)input;
  (void)output;
  (void)factor;
  NOT_IMPLEMENTED("task 2");
}

void run_one_thread_per_device(std::span<const int> devices, const DeviceWork& work) {
  // TODO(task 3): one std::thread per worker; join them all, then rethrow the lowest-numbered failure.
  (void)devices;
  (void)work;
  NOT_IMPLEMENTED("task 3");
}

ScopedDevice::ScopedDevice(int device) {
  // TODO(task 4): remember the current device, then make `device` current.
  (void)device;
  NOT_IMPLEMENTED("task 4");
}

ScopedDevice::~ScopedDevice() {
  // TODO(task 4): make the remembered device current again, without throwing.
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson02
