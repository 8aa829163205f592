// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03: peer access. Find which GPUs can reach each other's memory, switch that on, copy
// between GPUs directly or (where that is off) through pinned host memory with double buffering,
// let a kernel read another GPU's memory, and measure what each path costs.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 03-peer-access --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
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
  // TODO(task 1): ask the runtime about every ordered pair of distinct devices.
  NOT_IMPLEMENTED("task 1");
}

void print_peer_matrix(std::ostream& out, const PeerMatrix& matrix) {
  // TODO(task 1): print the matrix as the contract header spells it, one row per accessing device.
  (void)out;
  (void)matrix;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

PeerAccessState enable_peer_access_all() {
  // TODO(task 2): enable peer access for every ordered pair that allows it; return the record.
  NOT_IMPLEMENTED("task 2");
}

PeerAccessState disable_peer_access_all() {
  // TODO(task 2): disable peer access for every ordered pair; return an all-false record.
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

// TODO(task 3): copy direct or staged (two pinned buffers, overlapped); return the path (helpers here).
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

// TODO(task 4): a kernel for out[i] = local[i] + remote[i] here, launched on device `a` below.
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

// TODO(task 5): time one peer copy with CUDA events; shared helpers can go here too.
Measurement measure_one_way(int src_device, int dst_device, std::size_t bytes, const MeasureOptions& options) {
  (void)src_device;
  (void)dst_device;
  (void)bytes;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

Measurement measure_both_ways(int a, int b, std::size_t bytes, const MeasureOptions& options) {
  // TODO(task 5): time a -> b and b -> a at the same time, each on a stream of its source.
  (void)a;
  (void)b;
  (void)bytes;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

Measurement measure_latency(int src_device, int dst_device, const MeasureOptions& options) {
  // TODO(task 5): time kLatencyCopies tiny copies per run; report per copy.
  (void)src_device;
  (void)dst_device;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

Measurement measure_staged(int src_device, int dst_device, std::size_t bytes, bool overlapped, std::size_t chunk_bytes,
                           const MeasureOptions& options) {
  // TODO(task 5): time the overlapped or the serial staged copy with the host clock.
  (void)src_device;
  (void)dst_device;
  (void)bytes;
  (void)overlapped;
  (void)chunk_bytes;
  (void)options;
  NOT_IMPLEMENTED("task 5");
}

}  // namespace lesson03
