// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07, given: the workers of an all-reduce and their memory, made once, before any timing.
// Everything a worker owns is created with its device current, so it belongs there; a device
// listed twice gets two workers with streams, events and scratch of their own. Peer access is
// switched on here, between distinct listed GPUs only: a device never asks for access to itself.
// Also given: the one-kernel's flags and the LL one-shot's inbox (zeroed), where their kernels
// report giving up, the wait that turns such a report into an exception, and the CUDA graph of a
// few calls.
#include <algorithm>
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

Worker::Worker(int device_, int workers, std::size_t scratch_count, std::size_t ll_count)
    : device(device_),
      stream(device_),
      entered(device_, kOrderingOnly),
      step_done(ordering_events(device_, 2 * static_cast<std::size_t>(workers - 1))),
      published(device_, kOrderingOnly),
      read_done(device_, kOrderingOnly),
      scratch(device_, scratch_count),
      kernel_scratch(device_, 2 * kernel_half(scratch_count)),
      signals(device_, 1),
      ll_inbox(device_, 2 * static_cast<std::size_t>(workers) * ll_lines(ll_count)),
      ll_calls(device_, 1),
      give_up_claim(device_, 1) {
  const course::DeviceGuard on_device(device);
  CUDA_CHECK(cudaMemset(signals.data(), 0, sizeof(Signals)));    // every flag and count starts at call 0
  CUDA_CHECK(cudaMemset(ll_inbox.data(), 0, ll_inbox.bytes()));  // every word says call 0: nothing arrived
  CUDA_CHECK(cudaMemset(ll_calls.data(), 0, sizeof(LlCalls)));
  CUDA_CHECK(cudaMemset(give_up_claim.data(), 0, sizeof(unsigned int)));
  CUDA_CHECK(cudaDeviceSynchronize());
}

AllReduceWorkspace::AllReduceWorkspace(std::span<const int> devices, std::size_t one_shot_max_count_,
                                       std::size_t ll_max_count_)
    : one_shot_max_count(one_shot_max_count_), ll_max_count(std::min(ll_max_count_, one_shot_max_count_)) {
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
  for (const int device : devices) workers.emplace_back(device, count, one_shot_max_count, ll_max_count);
  give_ups = course::PinnedBuffer<GiveUp>(devices.size());  // pinned: every GPU writes it directly
  for (std::size_t k = 0; k < give_ups.size(); ++k) give_ups[k] = GiveUp{};
}

std::string gave_up(const AllReduceWorkspace& workspace) {
  std::string text;
  for (int k = 0; k < workspace.size(); ++k) {
    // A kernel may write these words while the host reads them: volatile reads, `call` first (the
    // kernel writes it last, after the other fields).
    const volatile GiveUp& live = workspace.give_ups[k];
    GiveUp report;
    report.call = live.call;
    if (report.call == 0) continue;
    report.peer = live.peer;
    report.block = live.block;
    report.waiting_for = live.waiting_for;
    text += (text.empty() ? "" : "; ") + std::string("worker ") + std::to_string(k) + " (GPU " +
            std::to_string(workspace.workers[k].device) + "), block " + std::to_string(report.block) + " of call " +
            std::to_string(report.call) + ", gave up after " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(workspace.patience).count()) +
            " ms waiting for worker " + std::to_string(report.peer) +
            (report.waiting_for == 0 ? " to send its data of this call" : " to finish reading the previous call") +
            " (a peer's kernel that never runs, or that cannot run beside this one: the same GPU full, kernels "
            "serialized by a tool)";
  }
  return text;
}

void synchronize(const AllReduceWorkspace& workspace) {
  for (const Worker& worker : workspace.workers) worker.stream.synchronize();
  const std::string why = gave_up(workspace);
  if (!why.empty()) throw std::runtime_error("a kernel of the one-kernel or the LL one-shot gave up: " + why);
}

CapturedCalls::CapturedCalls(AllReduceWorkspace& workspace, const std::function<void()>& call, int calls)
    : workspace_(workspace) {
  if (calls < 1) throw std::invalid_argument("CapturedCalls: calls must be at least 1");
  for (const Worker& worker : workspace.workers) joins_.emplace_back(worker.device, kOrderingOnly);
  const course::DeviceGuard keep_callers_device(workspace.workers[0].device);
  const course::Stream& first = workspace.workers[0].stream;
  CUDA_CHECK(cudaStreamBeginCapture(first, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    // Every other worker's stream joins the capture by waiting for an event recorded in it.
    joins_[0].record(first);
    for (std::size_t k = 1; k < workspace.workers.size(); ++k)
      CUDA_CHECK(cudaStreamWaitEvent(workspace.workers[k].stream, joins_[0], 0));
    for (int i = 0; i < calls; ++i) call();
    CUDA_CHECK(cudaSetDevice(workspace.workers[0].device));
    for (std::size_t k = 1; k < workspace.workers.size(); ++k) {  // ... and leaves it by being waited for
      joins_[k].record(workspace.workers[k].stream);
      CUDA_CHECK(cudaStreamWaitEvent(first, joins_[k], 0));
    }
  } catch (...) {
    (void)cudaStreamEndCapture(first, &graph);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(first, &graph));
  const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
  (void)cudaGraphDestroy(graph);
  CUDA_CHECK(made);
}

CapturedCalls::~CapturedCalls() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
}

void CapturedCalls::launch() {
  const course::DeviceGuard keep_callers_device(workspace_.workers[0].device);
  const course::Stream& first = workspace_.workers[0].stream;
  for (std::size_t k = 1; k < workspace_.workers.size(); ++k) {  // after what every stream holds
    CUDA_CHECK(cudaSetDevice(workspace_.workers[k].device));
    joins_[k].record(workspace_.workers[k].stream);
    CUDA_CHECK(cudaSetDevice(workspace_.workers[0].device));
    CUDA_CHECK(cudaStreamWaitEvent(first, joins_[k], 0));
  }
  CUDA_CHECK(cudaGraphLaunch(exec_, first));
  joins_[0].record(first);
  for (std::size_t k = 1; k < workspace_.workers.size(); ++k)  // every stream waits for the replay
    CUDA_CHECK(cudaStreamWaitEvent(workspace_.workers[k].stream, joins_[0], 0));
}

}  // namespace lesson07
