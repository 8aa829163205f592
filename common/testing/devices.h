// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What the tests ask the runtime about devices, written once: where a pointer lives, peer access
// switched on or off for a test (through the runtime, not through a student's code), and a child
// process run under a device mask (CUDA_VISIBLE_DEVICES), which needs care on a GPU in
// EXCLUSIVE_PROCESS compute mode.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../check.h"
#include "../device_guard.h"
#include "gpu_test.h"

namespace course::testing {

// What cudaPointerGetAttributes says about a pointer.
struct Placement {
  cudaError_t error = cudaSuccess;
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  int device = -1;
  bool is_device_memory_of(int d) const { return error == cudaSuccess && type == cudaMemoryTypeDevice && device == d; }
  std::string describe() const;  // "device memory of GPU 1", "unregistered host memory", ...
};
Placement placement_of(const void* pointer);

// The device a stream belongs to (CUDA_CHECK on cudaStreamGetDevice).
int stream_device(cudaStream_t stream);

// `count` elements from the memory of `device` at `device_ptr` (none: no CUDA call).
template <class T>
std::vector<T> read_back(const T* device_ptr, int device, std::size_t count) {
  std::vector<T> values(count);
  if (count == 0) return values;
  const DeviceGuard on(device);
  CUDA_CHECK(cudaMemcpy(values.data(), device_ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
  return values;
}

// The values into the memory of `device` at `device_ptr` (none: no CUDA call).
template <class T>
void upload(T* device_ptr, int device, std::span<const T> values) {
  if (values.empty()) return;
  const DeviceGuard on(device);
  CUDA_CHECK(cudaMemcpy(device_ptr, values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
}

// n copies of `value` in the memory of `device` at `device_ptr`, synchronously: one upload of at most
// 2^20 values, then device-to-device copies that each double what is filled (a constant input of
// gigabytes in milliseconds, with no kernel of the test's own).
void fill_device(float* device_ptr, int device, std::size_t n, float value);

// Makes `device` current, runs `call` under the watchdog, then CHECKs that `device` is current
// again: the code under test gives the caller its device back.
void call_keeps_device(int device, const std::string& what, std::chrono::seconds limit, const std::string& hint,
                       const std::function<void()>& call);

// ---- peer access ----

bool runtime_can_access(int device, int peer);  // cudaDeviceCanAccessPeer
// Ordered pairs (a, b), a != b, where each of the two can access the other.
std::vector<std::pair<int, int>> pairs_with_peer_access(int count);
// Turns peer access on or off from every device to every peer it can access; "already enabled"
// and "not enabled" are fine and cleared. Leaves the current device as it was. Returns the matrix
// enabled[device][peer] of what is on afterwards.
std::vector<std::vector<bool>> set_peer_access_by_runtime(bool on);
// What enabling (disabling) device -> peer once more answers, error cleared: "already enabled"
// ("not enabled") means it was on (off). Careful: if it was off (on), this switches it.
cudaError_t enable_again(int device, int peer);
cudaError_t disable_again(int device, int peer);

// ---- links ----

// GB/s (10^9 bytes) of one cudaMemcpyPeerAsync of `bytes` from src to dst, the median of 10
// timed runs after 2 untimed ones: the test's own measurement, to hold a student's against.
double reference_one_way(int src_device, int dst_device, std::size_t bytes);

// PCIe Gen5 x16 carries at most ~64 GB/s per direction: a peer copy faster than this runs over
// NVLink (or a similar fabric), where ratios between paths have wide margins.
constexpr double kFastLinkGigabytesPerSecond = 100;

// SKIPs unless a and b have peer access both ways over a link faster than PCIe (measured with
// copies of `bytes`); leaves peer access on.
void require_fast_link(int a, int b, std::size_t bytes);

// ---- a child process under a device mask ----

// Runs the hidden test case `case_name` of this program in a child process with
// CUDA_VISIBLE_DEVICES=`mask`; `parent_ordinals` are this process's ordinals of the GPUs the
// mask shows. A GPU in EXCLUSIVE_PROCESS compute mode takes one process at a time: if this
// process already holds a context on one of them, the child could not use it, so the case is
// SKIPPED with that reason. (Releasing the context with cudaDeviceReset would destroy every
// allocation of the cases around it, so it is not done.) A case that starts its child before its
// own first context-creating call runs wherever the case runs alone, as the grader reruns it.
// REQUIREs that the child wrote something; returns what it wrote.
std::string run_child_under_device_mask(const std::string& case_name, const std::string& mask,
                                        const std::vector<int>& parent_ordinals);

}  // namespace course::testing
