// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07: an all-reduce by hand. A ring (reduce-scatter, then all-gather) whose steps are
// ordered across workers by events alone, the cost model that says why a ring, a one-shot kernel
// that reads every peer's published copy at once, and a dispatcher that picks one by size from a
// measured crossover. Every call enqueues and returns, as NCCL's do.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 07-all-reduce --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "all_reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

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

Algorithm choose_algorithm(const AllReduceWorkspace& workspace, std::size_t count) {
  // TODO(task 4): one-shot below the crossover (where it fits), ring from there on.
  (void)workspace;
  (void)count;
  NOT_IMPLEMENTED("task 4");
}

void all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count) {
  // TODO(task 4): run the algorithm choose_algorithm picks.
  (void)workspace;
  (void)buffers;
  (void)count;
  NOT_IMPLEMENTED("task 4");
}

std::size_t crossover_from(const std::vector<AlgorithmTiming>& rows) {
  // TODO(task 4): the smallest count from which the ring stays faster (the header says exactly).
  (void)rows;
  NOT_IMPLEMENTED("task 4");
}

// TODO(task 4): time both algorithms at every count and store the crossover; helpers go here.
std::vector<AlgorithmTiming> measure_crossover(AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                               std::span<const std::size_t> counts, int warmup, int repeats) {
  (void)workspace;
  (void)buffers;
  (void)counts;
  (void)warmup;
  (void)repeats;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson07
