// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Correct-but-different lesson 02 file (tests/grader/correct/README.md): must earn full marks.
// Idioms: std::async(std::launch::async) for one thread per worker, the futures waited for all
// before any get(), so every worker is done before the lowest-numbered failure is rethrown.
#include <cuda_runtime.h>

#include <exception>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/not_implemented.h"
#include "kernels.cuh"
#include "set_device.h"

namespace lesson02 {

std::vector<Slice> allocate_slices(std::size_t n, std::span<const int> devices) {
  // Task 1: cudaMalloc allocates on the current device, so each slice's device is made current first.
  if (devices.empty()) throw std::invalid_argument("allocate_slices: no devices given");
  const std::vector<course::Range> ranges = course::split_ranges(n, static_cast<int>(devices.size()));
  int caller = 0;
  CUDA_CHECK(cudaGetDevice(&caller));
  std::vector<Slice> slices;
  slices.reserve(ranges.size());
  try {
    for (std::size_t k = 0; k < devices.size(); ++k) {
      Slice slice;
      slice.device = devices[k];
      slice.range = ranges[k];
      CUDA_CHECK(cudaSetDevice(slice.device));
      if (!slice.range.empty())
        CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&slice.data), slice.range.size() * sizeof(float)));
      slices.push_back(slice);
    }
  } catch (...) {
    // Give back what was allocated before the failure, with unchecked calls: cleanup must not
    // throw (free_slices would: its CUDA_CHECK could replace the first error with its own).
    for (const Slice& slice : slices) {
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
  if (slices.empty()) return;  // nothing to free: no CUDA call (so none on a machine without a GPU)
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

void run_on_all_devices(std::span<const int> devices, const DeviceWork& work) {
  // Task 2: launch on every worker's device first (each launch returns at once), then wait on each.
  if (devices.empty()) return;  // no workers: no CUDA call (so none on a machine without a GPU)
  int caller = 0;
  CUDA_CHECK(cudaGetDevice(&caller));
  std::vector<cudaStream_t> streams;  // streams[k] is worker k's, on devices[k]
  streams.reserve(devices.size());
  try {
    for (std::size_t k = 0; k < devices.size(); ++k) {
      CUDA_CHECK(cudaSetDevice(devices[k]));  // the stream and the launches into it belong to devices[k]
      cudaStream_t stream = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      streams.push_back(stream);
      work(static_cast<int>(k), devices[k], stream);  // enqueues and returns: no waiting inside this loop
    }
    for (cudaStream_t stream : streams) CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    for (std::size_t k = 0; k < streams.size(); ++k) {  // a stream with work left is freed when it is done
      (void)cudaSetDevice(devices[k]);
      (void)cudaStreamDestroy(streams[k]);
    }
    (void)cudaSetDevice(caller);
    throw;
  }
  for (std::size_t k = 0; k < streams.size(); ++k) {
    CUDA_CHECK(cudaSetDevice(devices[k]));
    CUDA_CHECK(cudaStreamDestroy(streams[k]));
  }
  CUDA_CHECK(cudaSetDevice(caller));
}

void scale_slices(std::span<const Slice> input, std::span<const Slice> output, float factor) {
  // Task 2: the slices carry their devices: that list goes to run_on_all_devices, worker k scales slice k.
  if (input.size() != output.size())
    throw std::invalid_argument("scale_slices: input and output have different numbers of slices");
  std::vector<int> devices;
  for (std::size_t k = 0; k < input.size(); ++k) {
    if (input[k].device != output[k].device || !(input[k].range == output[k].range))
      throw std::invalid_argument("scale_slices: input and output slice " + std::to_string(k) + " differ");
    devices.push_back(input[k].device);
  }
  run_on_all_devices(devices, [&](int k, int, cudaStream_t stream) {
    launch_scale(input[k].data, output[k].data, input[k].range.size(), factor, stream);
  });
}

void run_one_thread_per_device(std::span<const int> devices, const DeviceWork& work) {
  // Task 3: a new thread starts on device 0, whatever its parent's device, so each worker sets its own.
  std::vector<std::future<void>> workers;
  workers.reserve(devices.size());
  const auto worker = [&work](int k, int device) {
    CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    try {
      work(k, device, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (...) {
      (void)cudaStreamDestroy(stream);
      throw;
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
  };
  try {
    for (std::size_t k = 0; k < devices.size(); ++k)
      workers.push_back(std::async(std::launch::async, worker, static_cast<int>(k), devices[k]));
  } catch (...) {
    for (std::future<void>& started : workers) started.wait();
    throw;
  }
  for (std::future<void>& started : workers) started.wait();  // all of them, before any exception leaves
  for (std::future<void>& started : workers) started.get();   // in worker order: rethrows the lowest failure
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
