// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07, given: the workers of an all-reduce and their memory, made once, before any timing.
// Everything a worker owns is created with its device current, so it belongs there; a device
// listed twice gets two workers with streams, events and scratch of their own. Peer access is
// switched on here, between distinct listed GPUs only: a device never asks for access to itself.
#include <set>
#include <stdexcept>
#include <string>

#include "all_reduce.h"
#include "common/check.h"
#include "common/device_guard.h"

namespace lesson07 {

namespace {

constexpr unsigned kOrderingOnly = cudaEventDisableTiming;

std::vector<course::Event> ordering_events(int device, std::size_t count) {
  std::vector<course::Event> events;
  events.reserve(count);
  for (std::size_t i = 0; i < count; ++i) events.emplace_back(device, kOrderingOnly);
  return events;
}

// Access from `device` to `peer`'s memory, on; "already enabled" is fine and cleared.
void enable_peer_access(int device, int peer) {
  int possible = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&possible, device, peer));
  if (possible == 0)
    throw std::runtime_error("GPU " + std::to_string(device) + " cannot access the memory of GPU " +
                             std::to_string(peer) + ": this lesson's kernels read their peers' buffers directly");
  const course::DeviceGuard on_device(device);
  const cudaError_t error = cudaDeviceEnablePeerAccess(peer, 0);
  if (error == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();
    return;
  }
  CUDA_CHECK(error);
}

}  // namespace

Worker::Worker(int device_, int workers, std::size_t scratch_count)
    : device(device_),
      stream(device_),
      entered(device_, kOrderingOnly),
      step_done(ordering_events(device_, 2 * static_cast<std::size_t>(workers - 1))),
      published(device_, kOrderingOnly),
      read_done(device_, kOrderingOnly),
      scratch(device_, scratch_count) {}

AllReduceWorkspace::AllReduceWorkspace(std::span<const int> devices, std::size_t one_shot_max_count_)
    : one_shot_max_count(one_shot_max_count_) {
  if (devices.empty()) throw std::invalid_argument("AllReduceWorkspace: the device list is empty");
  if (devices.size() > static_cast<std::size_t>(kMaxWorkers))
    throw std::invalid_argument("AllReduceWorkspace: at most " + std::to_string(kMaxWorkers) + " workers, got " +
                                std::to_string(devices.size()));
  const std::set<int> distinct(devices.begin(), devices.end());
  for (const int device : distinct)
    for (const int peer : distinct)
      if (device != peer) enable_peer_access(device, peer);
  const int count = static_cast<int>(devices.size());
  workers.reserve(devices.size());
  for (const int device : devices) workers.emplace_back(device, count, one_shot_max_count);
}

}  // namespace lesson07
