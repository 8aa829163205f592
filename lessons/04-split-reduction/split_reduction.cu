// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04: a split reduction. One sum of many floats, first as fast as one GPU allows (a kernel
// of your own that reads memory at full speed), then split over several workers that all run
// before anyone waits, then fed from pinned host memory with copies overlapping the reductions,
// then timed honestly against one GPU to find where splitting starts to pay.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 04-split-reduction --print-errorlogs
// checks your work. Everything outside the TODO regions stays as it is.
#include "split_reduction.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson04 {

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): write the two kernels here, then enqueue them below (a grid-stride loop; see the
// README for the whole recipe):
//  - a first pass with enough blocks to fill every SM (cudaDevAttrMultiProcessorCount times the
//    blocks that fit on one, cudaOccupancyMaxActiveBlocksPerMultiprocessor; fewer for small n;
//    never more than kMaxBlocks). The float4 loads need a 16-byte aligned address: handle the
//    floats before the first aligned one (the head) and after the last whole float4 (the tail)
//    one by one. Several independent float4 loads per thread and iteration keep memory busy. Add
//    up to 16 floats in float, then carry the running sum in double (the accuracy clause of the
//    header). Warp shuffles (__shfl_down_sync) and one shared-memory step give one partial per
//    block, written to partials[blockIdx.x];
//  - a second pass, one block, that adds the partials in double and writes (or adds to) *sum.
// n = 0 launches no first pass, but the second pass still writes 0. Check every launch with
// CUDA_CHECK_LAUNCH(), and never wait here: the caller decides when to wait.
void enqueue_sum(const float* data, std::size_t n, double* partials, double* sum, bool accumulate,
                 cudaStream_t stream) {
  (void)data;
  (void)n;
  (void)partials;
  (void)sum;
  (void)accumulate;
  (void)stream;
  NOT_IMPLEMENTED("task 1");
}

double sum_on_device(int device, const float* data, std::size_t n) {
  // TODO(task 1): make `device` current (course::DeviceGuard), make a course::Stream and the
  // scratch and result buffers there (course::DeviceBuffer), enqueue_sum, copy the double back on
  // the same stream and wait for that stream only.
  (void)device;
  (void)data;
  (void)n;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

// TODO(task 2): check the arguments first (std::invalid_argument), then, for every worker k in
// order: make its device current, and enqueue_sum its slice (course::split_range(n, W, k) says how
// long it is) on its stream, with its partials scratch, into its sum slot. Do not wait inside that
// loop. Then combine:
//  - on_host: cudaMemcpyAsync each worker's sum slot into workspace.host_partials[k] on the
//    worker's stream (so it comes after the reduction), then synchronize each stream and add;
//  - on_device: record each worker's `reduced` event on its stream; on workers[0]'s stream wait
//    for each event (cudaStreamWaitEvent) and cudaMemcpyPeerAsync the partial into
//    workspace.gathered.data() + k; a one-block kernel (your second pass) adds them into workspace.total;
//    copy that double to the host and wait for workers[0]'s stream.
// A helper for the host combine is worth writing: task 3 ends with the same step.
double sum_resident(SplitWorkspace& workspace, std::span<const float* const> slices, std::size_t n, Combine combine) {
  (void)workspace;
  (void)slices;
  (void)n;
  (void)combine;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

double sum_from_host(SplitWorkspace& workspace, const float* host, std::size_t n, const ChunkReduce& reduce) {
  // TODO(task 3): for every worker k (its device current), walk its range in chunks of
  // workspace.chunk_elements: chunk c goes into w.chunks[c % 2] with cudaMemcpyAsync on
  // w.copy_stream (pinned host memory makes it asynchronous), then record w.chunk_copied[c % 2];
  // w.stream waits for that event and reduce()s the chunk (accumulate = c > 0), then records
  // w.chunk_reduced[c % 2]. Before copying chunk c >= 2, w.copy_stream waits for
  // w.chunk_reduced[c % 2]: the buffer still holds chunk c-2 until it is reduced. An empty range
  // still calls reduce with 0 elements, so its sum slot says 0. No host wait until every worker
  // has everything enqueued; then combine on the host as in task 2.
  (void)workspace;
  (void)host;
  (void)n;
  (void)reduce;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

std::optional<std::size_t> crossover_size(const std::vector<SizeTiming>& rows) {
  // TODO(task 4): the smallest rows[i].n from which on (row i and every later row) the split's
  // median is below one worker's median; std::nullopt when the last row's split is not faster.
  (void)rows;
  NOT_IMPLEMENTED("task 4");
}

// TODO(task 4): check the arguments (std::invalid_argument, before any CUDA call). Then, before
// any timing: a SplitWorkspace of devices.first(1) and one of `devices`, a buffer of the largest
// size on devices[0], and one slice buffer per worker (sized for the largest n), all filled with
// something other than zeros (cudaMemset of 0x3C bytes gives the float 0.0115). For each n: time
// `options.warmup` untimed, then `options.repeats` timed calls of sum_resident on each workspace
// (std::chrono::steady_clock around each call) and keep the min, median and max in milliseconds.
// Fill the report, crossover from crossover_size. Helpers go here.
CrossoverReport measure_crossover(std::span<const int> devices, std::span<const std::size_t> sizes,
                                  const MeasureOptions& options) {
  (void)devices;
  (void)sizes;
  (void)options;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson04
