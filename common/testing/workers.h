// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lists of workers for the lessons whose functions take their devices as a list in which a device
// may repeat ({0, 0, 0} = three workers on GPU 0): the lists every such test runs, sizes that
// always include the edges, and a counter that tells whether work was done when a call returned.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace course::testing {

using Devices = std::vector<int>;

// {0}, {0, 0}, {0, 0, 0}, {0, 0, 0, 0}: one GPU runs them.
std::vector<Devices> shared_gpu_lists();
// One worker per GPU, and the last GPU and GPU 0 twice each: {0, .., count-1}, {count-1, 0, count-1, 0}.
// The second ends on GPU 0, so a caller on the last GPU (the tests' habit) sees a device left
// behind by the last worker. Empty when count < 2.
std::vector<Devices> distinct_gpu_lists(int count);
// Both of the above.
std::vector<Devices> worker_lists(int count);
Devices all_gpus(int count);                // {0, 1, .., count-1}
Devices repeated(int device, int workers);  // {device, device, ..}: `workers` workers on one GPU

std::string show(std::span<const int> devices);  // "{0, 0, 1}"

// Sizes for k workers, edges included: 0, 1, fewer than k, not divisible by k, large.
std::vector<std::size_t> sizes_for(std::size_t workers);

// Counts work that has finished on the GPU: enqueue(stream) after a worker's work adds a host
// function that counts one when everything before it on that stream is done. Read done() right
// after the call under test returns. The destructor waits for every device it saw, so no host
// function outlives the counter.
class DoneCounter {
 public:
  DoneCounter() = default;
  DoneCounter(const DoneCounter&) = delete;
  DoneCounter& operator=(const DoneCounter&) = delete;
  ~DoneCounter();
  void enqueue(cudaStream_t stream);  // may be called from several threads
  int done() const { return done_.load(); }

 private:
  std::atomic<int> done_{0};
  std::mutex mutex_;
  std::set<int> devices_;
};

}  // namespace course::testing
