// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Worker lists, sizes and the done counter (see workers.h).
#include "workers.h"

#include "../check.h"

namespace course::testing {

std::vector<Devices> shared_gpu_lists() {
  return {{0}, {0, 0}, {0, 0, 0}, {0, 0, 0, 0}};
}

std::vector<Devices> distinct_gpu_lists(int count) {
  if (count < 2) return {};
  return {all_gpus(count), {count - 1, 0, count - 1, 0}};
}

std::vector<Devices> worker_lists(int count) {
  std::vector<Devices> lists = shared_gpu_lists();
  for (Devices& list : distinct_gpu_lists(count)) lists.push_back(std::move(list));
  return lists;
}

Devices all_gpus(int count) {
  Devices all;
  for (int d = 0; d < count; ++d) all.push_back(d);
  return all;
}

Devices repeated(int device, int workers) {
  return Devices(static_cast<std::size_t>(workers), device);
}

std::string show(std::span<const int> devices) {
  std::string text = "{";
  for (std::size_t k = 0; k < devices.size(); ++k) text += (k ? ", " : "") + std::to_string(devices[k]);
  return text + "}";
}

std::vector<std::size_t> sizes_for(std::size_t workers) {
  return {0, 1, workers - 1, workers + 1, 4099 * workers + 1, (std::size_t{1} << 20) + 3};
}

namespace {
void CUDART_CB count_one(void* counter) {
  ++*static_cast<std::atomic<int>*>(counter);
}
}  // namespace

void DoneCounter::enqueue(cudaStream_t stream) {
  int device = -1;
  CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    devices_.insert(device);
  }
  CUDA_CHECK(cudaLaunchHostFunc(stream, count_one, &done_));
}

DoneCounter::~DoneCounter() {
  int previous = 0;
  (void)cudaGetDevice(&previous);
  for (const int device : devices_) {
    (void)cudaSetDevice(device);
    (void)cudaDeviceSynchronize();
  }
  (void)cudaSetDevice(previous);
  (void)cudaGetLastError();
}

}  // namespace course::testing
