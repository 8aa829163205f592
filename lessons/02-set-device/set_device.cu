// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02: cudaSetDevice, and many GPUs from one process. Put a slice of a buffer on every
// GPU, drive all of them from one thread and then from one thread each, and write the device
// guard that keeps the current device where the caller left it.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 02-set-device --print-errorlogs
// checks your work. Everything outside the TODO regions stays as it is.
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
  // TODO(task 1): throw std::invalid_argument if `devices` is empty. Split [0, n) with
  // course::split_ranges(n, k) for k = devices.size() workers. Remember the caller's device
  // (cudaGetDevice). For each worker k: make devices[k] current (cudaSetDevice), because cudaMalloc
  // allocates on the current device; cudaMalloc range.size() floats (nothing for an empty range:
  // data stays nullptr) and record {devices[k], data, range}. A device may repeat ({0, 0, 0}):
  // each worker still gets a slice of its own. Finally make the caller's device current again.
  // Wrap every CUDA call in CUDA_CHECK (common/check.h): cudaSetDevice for a device that does not
  // exist then throws course::ApiError, as the contract asks. If a call throws halfway, free what
  // you had allocated and give the caller its device back before letting the exception go on.
  (void)n;
  (void)devices;
  NOT_IMPLEMENTED("task 1");
}

void free_slices(std::vector<Slice>& slices) {
  // TODO(task 1): for each slice that has memory, make its device current and cudaFree it; then
  // empty the vector and make the caller's device current again.
  (void)slices;
  NOT_IMPLEMENTED("task 1");
}

void run_on_all_devices(std::span<const int> devices, const DeviceWork& work) {
  // TODO(task 2): remember the caller's device. First loop, worker k = 0, 1, ...: make devices[k]
  // current, create a stream on it (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)), one per
  // WORKER (keep them in a vector indexed by k, not by device: a device may repeat), and call
  // work(k, devices[k], s), which only enqueues. Do NOT wait inside this loop: the workers would
  // then run one after another. Second loop: cudaStreamSynchronize each stream. Then destroy each
  // stream (with its device current) and make the caller's device current again.
  (void)devices;
  (void)work;
  NOT_IMPLEMENTED("task 2");
}

void scale_slices(std::span<const Slice> input, std::span<const Slice> output, float factor) {
  // TODO(task 2): for each slice k, launch_scale(input[k].data, output[k].data, size, factor, stream)
  // on input[k].device, all slices at the same time. run_on_all_devices does the device and stream
  // work: collect the slices' devices into a list and pass it with a lambda that uses the worker
  // number k. Throw std::invalid_argument if input and output differ in size, device or range.
  (void)input;
  (void)output;
  (void)factor;
  NOT_IMPLEMENTED("task 2");
}

void run_one_thread_per_device(std::span<const int> devices, const DeviceWork& work) {
  // TODO(task 3): start one std::thread per worker k (give it k and devices[k] by value, not a
  // reference to the loop variable). In worker k: cudaSetDevice(devices[k]) first (a new thread
  // starts on device 0, not on its parent's device), create a stream, call work(k, devices[k],
  // stream), wait for the stream, destroy it. Start EVERY worker before joining any: joining each
  // right after its start serializes the workers. An exception must not leave a thread
  // (std::terminate): catch everything in the worker and keep it in its own slot of a
  // std::vector<std::exception_ptr> sized before the threads start (std::current_exception()).
  // After joining EVERY worker, rethrow the lowest-numbered one that is set (std::rethrow_exception).
  (void)devices;
  (void)work;
  NOT_IMPLEMENTED("task 3");
}

ScopedDevice::ScopedDevice(int device) {
  // TODO(task 4): store the current device in previous_ (cudaGetDevice) BEFORE switching, then make
  // `device` current (cudaSetDevice). Check both calls with CUDA_CHECK: for a device that does not
  // exist the constructor throws, and the current device stays as it was.
  (void)device;
  NOT_IMPLEMENTED("task 4");
}

ScopedDevice::~ScopedDevice() {
  // TODO(task 4): make previous_ current again. A destructor must not throw (it may run while an
  // exception is already on its way, and a second one ends the program), so call cudaSetDevice
  // without CUDA_CHECK: (void)cudaSetDevice(previous_). In this starter the constructor throws, so
  // this destructor never runs: an object whose constructor throws is never destroyed. If you see
  // "terminate called ... task 4 in ~ScopedDevice()", you wrote the constructor but not this.
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson02
