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
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/not_implemented.h"
#include "kernels.cuh"

namespace lesson02 {

std::vector<Slice> allocate_slices(std::size_t n, int device_count) {
  // Task 1: cudaMalloc allocates on the current device, so each slice's device is made current first.
  const std::vector<course::Range> ranges = course::split_ranges(n, device_count);
  int caller = 0;
  CUDA_CHECK(cudaGetDevice(&caller));
  std::vector<Slice> slices;
  slices.reserve(ranges.size());
  try {
    for (int d = 0; d < device_count; ++d) {
      Slice slice;
      slice.device = d;
      slice.range = ranges[d];
      CUDA_CHECK(cudaSetDevice(d));
      if (!slice.range.empty())
        CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&slice.data), slice.range.size() * sizeof(float)));
      slices.push_back(slice);
    }
  } catch (...) {
    for (const Slice& slice : slices) {  // give back what was allocated before the failure
      (void)cudaSetDevice(slice.device);
      (void)cudaFree(slice.data);
    }
    (void)cudaSetDevice(caller);
    throw;
  }
  CUDA_CHECK(cudaSetDevice(caller));  // the caller's device, as the caller left it
  return slices;
}

void free_slices(std::vector<Slice>& slices) {
  // Task 1: each slice is freed with its own device current; then the caller gets its device back.
  int caller = 0;
  CUDA_CHECK(cudaGetDevice(&caller));
  for (Slice& slice : slices) {
    if (slice.data == nullptr) continue;
    CUDA_CHECK(cudaSetDevice(slice.device));
    CUDA_CHECK(cudaFree(slice.data));
    slice.data = nullptr;
  }
  slices.clear();
  CUDA_CHECK(cudaSetDevice(caller));
}

void run_on_all_devices(int device_count, const DeviceWork& work) {
  // Task 2: launch on every device first (each launch returns at once), then wait on each.
  int caller = 0;
  CUDA_CHECK(cudaGetDevice(&caller));
  std::vector<cudaStream_t> streams;
  streams.reserve(device_count > 0 ? device_count : 0);
  try {
    for (int d = 0; d < device_count; ++d) {
      CUDA_CHECK(cudaSetDevice(d));  // the stream and the launches into it belong to device d
      cudaStream_t stream = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      streams.push_back(stream);
      work(d, stream);  // enqueues and returns: no waiting inside this loop
    }
    for (cudaStream_t stream : streams) CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    for (std::size_t d = 0; d < streams.size(); ++d) {  // a stream with work left is freed when it is done
      (void)cudaSetDevice(static_cast<int>(d));
      (void)cudaStreamDestroy(streams[d]);
    }
    (void)cudaSetDevice(caller);
    throw;
  }
  for (std::size_t d = 0; d < streams.size(); ++d) {
    CUDA_CHECK(cudaSetDevice(static_cast<int>(d)));
    CUDA_CHECK(cudaStreamDestroy(streams[d]));
  }
  CUDA_CHECK(cudaSetDevice(caller));
}

void scale_slices(const std::vector<Slice>& input, const std::vector<Slice>& output, float factor) {
  // Task 2: slice k is on device k, so run_on_all_devices hands each device its own slice.
  if (input.size() != output.size())
    throw std::invalid_argument("scale_slices: input and output have different numbers of slices");
  run_on_all_devices(static_cast<int>(input.size()), [&](int d, cudaStream_t stream) {
    launch_scale(input[d].data, output[d].data, input[d].range.size(), factor, stream);
  });
}

void run_one_thread_per_device(int device_count, const DeviceWork& work) {
  // Task 3: a new thread starts on device 0, whatever its parent's device, so each worker sets its own.
  std::vector<std::exception_ptr> errors(device_count > 0 ? device_count : 0);
  std::vector<std::thread> workers;
  workers.reserve(errors.size());
  auto worker = [&work, &errors](int d) {
    try {
      CUDA_CHECK(cudaSetDevice(d));
      cudaStream_t stream = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      try {
        work(d, stream);
        CUDA_CHECK(cudaStreamSynchronize(stream));
      } catch (...) {
        (void)cudaStreamDestroy(stream);
        throw;
      }
      CUDA_CHECK(cudaStreamDestroy(stream));
    } catch (...) {
      errors[d] = std::current_exception();  // an exception leaving a thread would call std::terminate
    }
  };
  try {
    for (int d = 0; d < device_count; ++d) workers.emplace_back(worker, d);
  } catch (...) {  // a thread could not be started: join the ones that were
    for (std::thread& started : workers) started.join();
    throw;
  }
  for (std::thread& started : workers) started.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

ScopedDevice::ScopedDevice(int device) {
  // Task 4: remember the caller's device first, then switch.
  CUDA_CHECK(cudaGetDevice(&previous_));
  CUDA_CHECK(cudaSetDevice(device));
}

ScopedDevice::~ScopedDevice() {
  // Task 4: a destructor must not throw (it may run while an exception is on its way).
  (void)cudaSetDevice(previous_);
}

}  // namespace lesson02
