// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Correct-but-different lesson 02 file (tests/grader/correct/README.md): must earn full marks.
// Idioms: a stream class of the student's own (RAII: made on a given device, destroyed on its
// device without throwing), run_on_all_devices as a std::vector of them (their destructors clean up
// on every way out), exception types of the student's own derived from std::invalid_argument,
// NVTX's C++ API (nvtx3::scoped_range) around each call.
#include <cuda_runtime.h>

#include <exception>
#include <nvtx3/nvtx3.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/not_implemented.h"
#include "kernels.cuh"
#include "set_device.h"

namespace lesson02 {

namespace {

// The caller passed something that cannot be worked on.
struct BadSlices : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One stream of one device, destroyed with that device current (and the current device put back).
class OwnedStream {
 public:
  explicit OwnedStream(int device) : device_(device) {
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  OwnedStream(OwnedStream&& other) noexcept : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)) {}
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  OwnedStream& operator=(OwnedStream&&) = delete;
  ~OwnedStream() {
    if (stream_ == nullptr) return;
    int current = 0;
    const bool known = cudaGetDevice(&current) == cudaSuccess;
    (void)cudaSetDevice(device_);
    (void)cudaStreamDestroy(stream_);
    if (known) (void)cudaSetDevice(current);
  }
  cudaStream_t get() const noexcept { return stream_; }
  // Destroys the stream now, checked (for the normal way out).
  void destroy() {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamDestroy(std::exchange(stream_, nullptr)));
  }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::vector<Slice> allocate_slices(std::size_t n, std::span<const int> devices) {
  // Task 1: cudaMalloc allocates on the current device, so each slice's device is made current first.
  nvtx3::scoped_range range{"allocate_slices"};
  if (devices.empty()) throw BadSlices("allocate_slices: no devices given");
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
  nvtx3::scoped_range range{"run_on_all_devices"};
  try {
    std::vector<OwnedStream> streams;  // streams[k] is worker k's, on devices[k]
    streams.reserve(devices.size());
    for (std::size_t k = 0; k < devices.size(); ++k) {
      streams.emplace_back(devices[k]);  // leaves devices[k] current: the launches belong to it
      work(static_cast<int>(k), devices[k], streams.back().get());  // enqueues and returns
    }
    for (const OwnedStream& stream : streams) CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (OwnedStream& stream : streams) stream.destroy();
  } catch (...) {
    (void)cudaSetDevice(caller);  // the streams' destructors ran already
    throw;
  }
  CUDA_CHECK(cudaSetDevice(caller));
}

void scale_slices(std::span<const Slice> input, std::span<const Slice> output, float factor) {
  // Task 2: the slices carry their devices: that list goes to run_on_all_devices, worker k scales slice k.
  if (input.size() != output.size()) throw BadSlices("scale_slices: input and output have different numbers of slices");
  std::vector<int> devices;
  for (std::size_t k = 0; k < input.size(); ++k) {
    if (input[k].device != output[k].device || !(input[k].range == output[k].range))
      throw BadSlices("scale_slices: input and output slice " + std::to_string(k) + " differ");
    devices.push_back(input[k].device);
  }
  run_on_all_devices(devices, [&](int k, int, cudaStream_t stream) {
    launch_scale(input[k].data, output[k].data, input[k].range.size(), factor, stream);
  });
}

void run_one_thread_per_device(std::span<const int> devices, const DeviceWork& work) {
  // Task 3: a new thread starts on device 0, whatever its parent's device, so each worker sets its own.
  std::vector<std::exception_ptr> errors(devices.size());  // errors[k] is worker k's alone: no lock
  std::vector<std::thread> workers;
  workers.reserve(devices.size());
  auto worker = [&work, &errors](int k, int device) {
    try {
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
    } catch (...) {
      errors[k] = std::current_exception();  // an exception leaving a thread would call std::terminate
    }
  };
  try {
    for (std::size_t k = 0; k < devices.size(); ++k) workers.emplace_back(worker, static_cast<int>(k), devices[k]);
  } catch (...) {  // a thread could not be started: join the ones that were
    for (std::thread& started : workers) started.join();
    throw;
  }
  for (std::thread& started : workers) started.join();
  for (const std::exception_ptr& error : errors)  // in worker order: the lowest-numbered failure wins
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
