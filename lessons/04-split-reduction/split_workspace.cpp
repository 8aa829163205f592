// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04, given: the workers of a split reduction and their memory, made once, before any
// timing. Everything a worker owns is created with its device current, so it belongs there; a
// device listed twice gets two workers with streams and buffers of their own. Allocation takes
// tens of microseconds to milliseconds: inside a timed region it would be part of what you measure.
#include <stdexcept>

#include "common/device_guard.h"
#include "split_reduction.h"

namespace lesson04 {

namespace {

constexpr unsigned kOrderingOnly = cudaEventDisableTiming;

}  // namespace

Worker::Worker(int device_, std::size_t chunk_elements)
    : device(device_),
      stream(device_),
      copy_stream(device_),
      reduced(device_, kOrderingOnly),
      partials(device_, kMaxBlocks),
      sum(device_, 1),
      chunks{course::DeviceBuffer<float>(device_, chunk_elements),
             course::DeviceBuffer<float>(device_, chunk_elements)},
      chunk_copied{course::Event(device_, kOrderingOnly), course::Event(device_, kOrderingOnly)},
      chunk_reduced{course::Event(device_, kOrderingOnly), course::Event(device_, kOrderingOnly)} {}

SplitWorkspace::SplitWorkspace(std::span<const int> devices, std::size_t chunk_elements_)
    : chunk_elements(chunk_elements_) {
  if (devices.empty()) throw std::invalid_argument("SplitWorkspace: the device list is empty");
  if (chunk_elements == 0) throw std::invalid_argument("SplitWorkspace: chunk_elements must be at least 1");
  workers.reserve(devices.size());
  for (const int device : devices) workers.emplace_back(device, chunk_elements);
  gathered = course::DeviceBuffer<double>(workers.front().device, workers.size());
  total = course::DeviceBuffer<double>(workers.front().device, 1);
  host_partials = course::PinnedBuffer<double>(workers.size());
  host_total = course::PinnedBuffer<double>(1);
}

}  // namespace lesson04
