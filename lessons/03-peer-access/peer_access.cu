// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03: peer access. Find which GPUs can reach each other's memory, switch that on, copy
// between GPUs directly or (where that is off) through pinned host memory with double buffering,
// let a kernel read another GPU's memory, and measure what each path costs.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 03-peer-access --print-errorlogs
// checks your work. Everything outside the TODO regions stays as it is.
#include "peer_access.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <iomanip>
#include <stdexcept>
#include <string>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/timer.h"

namespace lesson03 {

// ---- Task 1 -------------------------------------------------------------------------------------

PeerMatrix query_peer_matrix() {
  // TODO(task 1): count the devices (cudaGetDeviceCount), size `links` n x n, and for every ordered
  // pair from != to fill its PeerLink: cudaDeviceCanAccessPeer(&v, from, to), then
  // cudaDeviceGetP2PAttribute(&v, attribute, from, to) for cudaDevP2PAttrPerformanceRank,
  // cudaDevP2PAttrAccessSupported and cudaDevP2PAttrNativeAtomicSupported. Leave the diagonal alone
  // (the attribute query rejects a device paired with itself). std::vector, never a fixed-size array.
  NOT_IMPLEMENTED("task 1");
}

void print_peer_matrix(std::ostream& out, const PeerMatrix& matrix) {
  // TODO(task 1): the header line "GPU0 GPU1 ...", then per accessing device "GPU<from>" and one
  // cell per column as the contract header spells them: X, -, P2P/r<rank>, P2P/r<rank>/A.
  // std::setw and std::left line the columns up; save and restore out.flags().
  (void)out;
  (void)matrix;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

PeerAccessState enable_peer_access_all() {
  // TODO(task 2): for every device, make it current (course::DeviceGuard) and, for every other
  // device it can access (cudaDeviceCanAccessPeer), call cudaDeviceEnablePeerAccess(peer, 0): it
  // opens ONE direction, current device -> peer. cudaErrorPeerAccessAlreadyEnabled is an answer,
  // not a failure: clear it with cudaGetLastError() (it is also the runtime's "last error"), and
  // pass every other error to CUDA_CHECK. Return the record of what is enabled now.
  NOT_IMPLEMENTED("task 2");
}

PeerAccessState disable_peer_access_all() {
  // TODO(task 2): the mirror image with cudaDeviceDisablePeerAccess(peer), where
  // cudaErrorPeerAccessNotEnabled is the answer to clear. Return an all-false record, n x n.
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

// TODO(task 3): decide the path (options.force_staged, peer_access.both_ways), then copy:
//  - direct: cudaMemcpyPeerAsync on a course::Stream of the source device, then synchronize;
//  - staged: two pinned slots of one chunk each (options.staging, or a course::PinnedBuffer you
//    allocate), a stream on the source device for device-to-host copies and one on the destination
//    device for host-to-device copies, and events to order them: chunk k's host-to-device copy waits
//    for its device-to-host copy (cudaStreamWaitEvent works across devices), and slot k % 2 may only
//    be refilled once chunk k-2 has left it. An event is recorded on a stream of its own device:
//    "filled" events on the source device, "drained" ones on the destination. The last chunk is
//    usually shorter. Never stage through pageable memory (std::vector): copies from and to it are
//    neither asynchronous nor fast.
// Check the options first (std::invalid_argument), and return the path taken. Helpers go here too.
CopyPath copy_between_devices(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                              const PeerAccessState& peer_access, const CopyOptions& options) {
  (void)dst;
  (void)dst_device;
  (void)src;
  (void)src_device;
  (void)bytes;
  (void)peer_access;
  (void)options;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

// TODO(task 4): write a __global__ kernel here that computes out[i] = local[i] + remote[i] for
// i < n (a grid-stride loop, or enough blocks to cover n: round the block count UP), then launch it
// below on device `a` (make it current with a course::DeviceGuard), check the launch with
// CUDA_CHECK_LAUNCH() and wait for it. n may be 0: launch nothing then (0 blocks is an error).
// `remote` lives on device b: the kernel dereferences it like any pointer, which works because
// peer access a -> b is on (the caller's job, not yours).
void add_peer_buffer(int a, float* out, const float* local, int b, const float* remote, std::size_t n) {
  (void)a;
  (void)out;
  (void)local;
  (void)b;
  (void)remote;
  (void)n;
  NOT_IMPLEMENTED("task 4");
}

// ---- Task 5 -------------------------------------------------------------------------------------

// TODO(task 5): allocate a course::DeviceBuffer on each side, make a course::Stream on the source
// device and time one cudaMemcpyPeerAsync with course::measure(device, stream, work,
// options.warmup, options.repeats) (common/timer.h: events, warm-up, median; its own defaults
// differ, and the tests check Measurement::repeats). Turn the course::Timing into a Measurement
// with course::gigabytes_per_second (GB = 10^9 bytes). A helper for that conversion can go here.
Measurement measure_one_way(int src_device, int dst_device, std::size_t bytes, const MeasureOptions& options) {
  (void)src_device;
  (void)dst_device;
  (void)bytes;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

Measurement measure_both_ways(int a, int b, std::size_t bytes, const MeasureOptions& options) {
  // TODO(task 5): one copy a -> b on a stream of a and one b -> a on a stream of b, at the same
  // time. Time on a's stream: inside the timed work, record an event on a's stream that b's stream
  // waits for (fork), enqueue both copies, record an event on b's stream that a's stream waits for
  // (join). Two copies on ONE stream would run one after the other. One operation moves 2 * bytes.
  (void)a;
  (void)b;
  (void)bytes;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

Measurement measure_latency(int src_device, int dst_device, const MeasureOptions& options) {
  // TODO(task 5): like measure_one_way, but each timed run enqueues kLatencyCopies copies of
  // kLatencyBytes; report the figures per copy.
  (void)src_device;
  (void)dst_device;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

Measurement measure_staged(int src_device, int dst_device, std::size_t bytes, bool overlapped, std::size_t chunk_bytes,
                           const MeasureOptions& options) {
  // TODO(task 5): allocate the device buffers and ONE course::PinnedBuffer of 2 * chunk_bytes, put
  // it in a CopyOptions (force_staged, chunk_bytes, staging), and time with course::measure_host
  // either copy_between_devices (overlapped) or copy_staged_serial (not overlapped).
  (void)src_device;
  (void)dst_device;
  (void)bytes;
  (void)overlapped;
  (void)chunk_bytes;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

}  // namespace lesson03
