// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Owning wrappers for device memory, pinned host memory, streams and events. Each one
// remembers the device it was made on and makes that device current to free itself: memory from
// cudaMalloc, streams and events belong to the device that was current at their creation
// (cudaSetDevice in the runtime API reference). Not every resource does: pinned host memory is
// the host's (with unified addressing every device may use it), and a stream-ordered allocation
// (cudaMallocAsync) comes from the pool of its stream's device.
// They are move-only: one owner, freed once.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "check.h"
#include "device_guard.h"

namespace course {

// `count` elements of T in the global memory of `device`.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t count) : device_(device), count_(count) {
    if (count_ == 0) return;
    DeviceGuard guard(device_);
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count_ * sizeof(T)));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      device_ = other.device_;
      count_ = std::exchange(other.count_, 0);
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  int device() const noexcept { return device_; }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
    (void)cudaFree(data_);
    (void)cudaSetDevice(previous);
    data_ = nullptr;
  }
  int device_ = 0;
  std::size_t count_ = 0;
  T* data_ = nullptr;
};

// Page-locked host memory: the DMA engines read and write it directly, so copies from and to
// it can run asynchronously and at full link speed. A cudaMemcpyAsync with pageable memory is
// staged by the driver and returns only once the pageable side is done (host to device: copied to
// the staging buffer; device to host: the whole copy), so it is not asynchronous in the same way:
// https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), count_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : count_(std::exchange(other.count_, 0)), data_(std::exchange(other.data_, nullptr)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(count_, other.count_);
    std::swap(data_, other.data_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  std::size_t count_ = 0;
  T* data_ = nullptr;
};

// A non-blocking stream on `device` (it does not synchronize with the legacy default stream).
class Stream {
 public:
  explicit Stream(int device) : device_(device) {
    DeviceGuard guard(device_);
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  // The same with a priority (cudaDeviceGetStreamPriorityRange: a lower number is a higher
  // priority): a hint to start this stream's waiting blocks first "when possible"; the CUDA 13
  // reference promises no order and no preemption of blocks already running.
  Stream(int device, int priority) : device_(device) {
    DeviceGuard guard(device_);
    CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  }
  ~Stream() {
    if (stream_ == nullptr) return;
    int previous = 0;
    (void)cudaGetDevice(&previous);
    (void)cudaSetDevice(device_);
    (void)cudaStreamDestroy(stream_);
    (void)cudaSetDevice(previous);
  }
  Stream(Stream&& other) noexcept : device_(other.device_), stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const noexcept { return stream_; }
  operator cudaStream_t() const noexcept { return stream_; }
  int device() const noexcept { return device_; }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

// An event on `device`; cudaEventDisableTiming makes a cheaper one for pure ordering.
class Event {
 public:
  explicit Event(int device, unsigned flags = cudaEventDefault) : device_(device) {
    DeviceGuard guard(device_);
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
  }
  ~Event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  Event(Event&& other) noexcept : device_(other.device_), event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const noexcept { return event_; }
  operator cudaEvent_t() const noexcept { return event_; }
  int device() const noexcept { return device_; }
  void record(cudaStream_t stream) const { CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace course
