// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07: an all-reduce by hand. A ring (reduce-scatter, then all-gather) whose steps are
// ordered across workers by events alone, the cost model that says why a ring, the one-shot (a
// kernel per worker reads every peer's published copy at once, ordered by events), the one-kernel
// (the same in one kernel per worker that orders itself through flags in its peers' memory), the
// LL one-shot (one kernel per worker that pushes its data into its peers' memory with the call's
// number in the same 8-byte word as every float), and a dispatcher that picks one by size from
// measured times. Every call enqueues and returns, as NCCL's do.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 07-all-reduce --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "all_reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cuda/atomic>
#include <cuda/std/chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"
#include "common/timer.h"

namespace lesson07 {

namespace {

// What every all-reduce rejects before any CUDA call (the header's common clause).
[[maybe_unused]] void check_buffers(const AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                    std::size_t count, const char* function) {
  if (buffers.size() != workspace.workers.size())
    throw std::invalid_argument(std::string(function) + ": " + std::to_string(buffers.size()) + " buffers for " +
                                std::to_string(workspace.workers.size()) + " workers");
  if (count > 0)
    for (std::size_t k = 0; k < buffers.size(); ++k)
      if (buffers[k] == nullptr)
        throw std::invalid_argument(std::string(function) + ": buffer " + std::to_string(k) + " is nullptr");
}

// x mod m in [0, m), for a negative x too.
[[maybe_unused]] int wrap(int x, int m) {
  return ((x % m) + m) % m;
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): the chunks, a step kernel and the ring, ordered by events only (README, task 1 and its hints).
course::Range ring_chunk(std::size_t count, int workers, int chunk) {
  (void)count;
  (void)workers;
  (void)chunk;
  NOT_IMPLEMENTED("task 1");
}

void enqueue_ring_step(const float* src, float* dst, std::size_t n, bool add, cudaStream_t stream) {
  // TODO(task 1): dst = src, or dst += src, for n floats: enqueue your kernel.
  (void)src;
  (void)dst;
  (void)n;
  (void)add;
  (void)stream;
  NOT_IMPLEMENTED("task 1");
}

void ring_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                     const RingStep& step) {
  // TODO(task 1): reduce-scatter then all-gather, each step after the left neighbour's event.
  (void)workspace;
  (void)buffers;
  (void)count;
  (void)step;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

Cost ring_cost(double bytes, int workers) {
  // TODO(task 2): what each worker receives, and in how many steps one after another.
  (void)bytes;
  (void)workers;
  NOT_IMPLEMENTED("task 2");
}

Cost one_shot_cost(double bytes, int workers) {
  // TODO(task 2): the same for the one-shot.
  (void)bytes;
  (void)workers;
  NOT_IMPLEMENTED("task 2");
}

double bus_bandwidth_gb_per_s(double bytes, double seconds, int workers) {
  // TODO(task 2): nccl-tests' busbw of an all-reduce.
  (void)bytes;
  (void)seconds;
  (void)workers;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

// TODO(task 3): your sum kernel here, then the publish / read handshake (README, task 3 and its hints).
void enqueue_sum_of_peers(const PeerSources& sources, float* out, std::size_t n, cudaStream_t stream) {
  (void)sources;
  (void)out;
  (void)n;
  (void)stream;
  NOT_IMPLEMENTED("task 3");
}

void one_shot_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                         const PeerSum& sum) {
  // TODO(task 3): publish everywhere, then read every peer's copy, reusing scratch safely.
  (void)workspace;
  (void)buffers;
  (void)count;
  (void)sum;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

// TODO(task 4): your kernel here: wait for the previous call's readers, publish your slice, tell
// your peers in their memory, wait for theirs, sum, and say you are done reading (README, task 4).
int one_kernel_blocks(const AllReduceWorkspace& workspace, std::size_t count) {
  // TODO(task 4): every block of every worker resident at once (your kernel's occupancy).
  (void)workspace;
  (void)count;
  NOT_IMPLEMENTED("task 4");
}

void enqueue_one_kernel(const OneKernelArgs& args, cudaStream_t stream) {
  // TODO(task 4): launch your kernel with args.blocks blocks.
  (void)args;
  (void)stream;
  NOT_IMPLEMENTED("task 4");
}

void one_kernel_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                           const OneKernelLaunch& launch) {
  // TODO(task 4): the checks (the buffers, a count above the scratch, an earlier give-up:
  // gave_up(workspace)), nothing to do for W = 1 or count = 0, then one launch per worker with its
  // device current and nothing else; the caller's device as it was.
  (void)workspace;
  (void)buffers;
  (void)count;
  (void)launch;
  NOT_IMPLEMENTED("task 4");
}

// ---- Task 5 -------------------------------------------------------------------------------------

// TODO(task 5): your LL kernel here: 1. push each of your lines, ll_word(float bits, e) twice, into
// slot k of half e % 2 of every peer's inbox (one 16-byte store per peer, no fence); 2. wait in
// your own inbox until both words of every peer's line carry exactly e's low 32 bits (give up
// after the patience: claim the report, then write it), then write the sum in worker order;
// 3. the last block moves the count of calls (README, task 5, "What your code must do").
int ll_one_shot_blocks(const AllReduceWorkspace& workspace, std::size_t count) {
  // TODO(task 5): one block while it covers every line (at least 32 threads a block), then a line
  // per thread, every block resident.
  (void)workspace;
  (void)count;
  NOT_IMPLEMENTED("task 5");
}

void enqueue_ll_one_shot(const LlOneShotArgs& args, cudaStream_t stream) {
  // TODO(task 5): launch your LL kernel with args.blocks blocks.
  (void)args;
  (void)stream;
  NOT_IMPLEMENTED("task 5");
}

void ll_one_shot_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                            const LlOneShotLaunch& launch) {
  // TODO(task 5): the checks (the buffers and a count above workspace.ll_max_count:
  // std::invalid_argument; an earlier give-up: std::runtime_error with gave_up(workspace)), nothing
  // to do for W = 1 or count = 0, then one launch per worker with its device current and nothing
  // else; the caller's device as it was.
  (void)workspace;
  (void)buffers;
  (void)count;
  (void)launch;
  NOT_IMPLEMENTED("task 5");
}

// ---- Task 6 -------------------------------------------------------------------------------------

Algorithm choose_algorithm(const AllReduceWorkspace& workspace, std::size_t count) {
  // TODO(task 6): the ring from the crossover (or where the scratch cannot hold it); below it, the
  // LL one-shot below ll_one_shot_below (where its inbox holds the count), then the one-kernel below
  // one_kernel_below, and the one-shot from there.
  (void)workspace;
  (void)count;
  NOT_IMPLEMENTED("task 6");
}

void all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count) {
  // TODO(task 6): run the algorithm choose_algorithm picks.
  (void)workspace;
  (void)buffers;
  (void)count;
  NOT_IMPLEMENTED("task 6");
}

// TODO(task 6): the smallest count from which the ring stays faster than the one-shot, the
// one-kernel and the LL one-shot (the header says exactly); a helper the three limits share may go here.
std::size_t crossover_from(const std::vector<AlgorithmTiming>& rows) {
  (void)rows;
  NOT_IMPLEMENTED("task 6");
}

std::size_t one_kernel_below_from(const std::vector<AlgorithmTiming>& rows) {
  // TODO(task 6): the smallest count from which the one-kernel stays no faster than the one-shot.
  (void)rows;
  NOT_IMPLEMENTED("task 6");
}

std::size_t ll_one_shot_below_from(const std::vector<AlgorithmTiming>& rows) {
  // TODO(task 6): the smallest count from which the LL one-shot stays no faster than the one-shot or
  // the one-kernel.
  (void)rows;
  NOT_IMPLEMENTED("task 6");
}

// TODO(task 6): time the four algorithms at every count (the LL one-shot where its inbox holds the
// count) and store the three limits; helpers go here.
std::vector<AlgorithmTiming> measure_crossover(AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                               std::span<const std::size_t> counts, int warmup, int repeats) {
  (void)workspace;
  (void)buffers;
  (void)counts;
  (void)warmup;
  (void)repeats;
  NOT_IMPLEMENTED("task 6");
}

}  // namespace lesson07
