// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06: NCCL collectives. One thread makes a communicator per GPU and drives all of them, each
// collective inside one group call with a stream per device, then waits for each stream; then one
// process per GPU, joined by an id that rank 0 made; then the same rank again with a non-blocking
// communicator that gives up, aborts and says why when a peer never comes; then nccl-tests' sums.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 06-nccl --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "nccl_collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson06 {
namespace {

// Given: the checks every collective starts with (the contract's "usual validation").
[[maybe_unused]] void require_ranks(const char* function, std::span<const ncclComm_t> comms,
                                    std::span<const cudaStream_t> streams) {
  if (comms.empty()) throw std::invalid_argument(std::string(function) + ": no communicators");
  if (streams.size() != comms.size())
    throw std::invalid_argument(std::string(function) + ": " + std::to_string(streams.size()) + " streams for " +
                                std::to_string(comms.size()) + " ranks");
}

template <class T>
[[maybe_unused]] void require_buffers(const char* function, const char* what, std::span<T* const> buffers,
                                      std::size_t ranks, bool needed) {
  if (buffers.size() != ranks)
    throw std::invalid_argument(std::string(function) + ": " + std::to_string(buffers.size()) + " " + what +
                                " buffers for " + std::to_string(ranks) + " ranks");
  if (needed)
    for (std::size_t k = 0; k < ranks; ++k)
      if (buffers[k] == nullptr)
        throw std::invalid_argument(std::string(function) + ": " + what + " buffer of rank " + std::to_string(k) +
                                    " is nullptr");
}

[[maybe_unused]] void require_root(const char* function, int root, std::size_t ranks) {
  if (root < 0 || static_cast<std::size_t>(root) >= ranks)
    throw std::invalid_argument(std::string(function) + ": root " + std::to_string(root) + " is not one of the " +
                                std::to_string(ranks) + " ranks");
}

// Given: the device a communicator's rank runs on.
[[maybe_unused]] int device_of(ncclComm_t comm) {
  int device = -1;
  NCCL_CHECK(ncclCommCuDevice(comm, &device));
  return device;
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

std::vector<ncclComm_t> make_communicators(std::span<const int> devices) {
  // TODO(task 1): make_communicators (contract in the header; README hint "Task 1: make_communicators").
  (void)devices;
  NOT_IMPLEMENTED("task 1");
}

void destroy_communicators(std::vector<ncclComm_t>& comms) {
  // TODO(task 1): ncclCommDestroy every non-null communicator (NCCL_CHECK), then empty the vector.
  (void)comms;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

// TODO(task 2): all_reduce (contract in the header; README hint "Task 2: all_reduce").
void all_reduce(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
                std::span<const float* const> send, std::span<float* const> recv, std::size_t count, ncclRedOp_t op) {
  (void)comms;
  (void)streams;
  (void)send;
  (void)recv;
  (void)count;
  (void)op;
  NOT_IMPLEMENTED("task 2");
}

double split_sum(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
                 std::span<const float* const> slices, std::size_t n, std::span<double* const> totals) {
  // TODO(task 2): split_sum (contract in the header; README hint "Task 2: split_sum").
  (void)comms;
  (void)streams;
  (void)slices;
  (void)n;
  (void)totals;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

void broadcast(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
               std::span<const float* const> send, std::span<float* const> recv, std::size_t count, int root) {
  // TODO(task 3): validate (root included); ncclBroadcast for every rank inside one group; wait.
  (void)comms;
  (void)streams;
  (void)send;
  (void)recv;
  (void)count;
  (void)root;
  NOT_IMPLEMENTED("task 3");
}

void reduce(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
            std::span<const float* const> send, std::span<float* const> recv, std::size_t count, int root) {
  // TODO(task 3): validate (root included); ncclReduce (ncclSum) for every rank inside one group; wait.
  (void)comms;
  (void)streams;
  (void)send;
  (void)recv;
  (void)count;
  (void)root;
  NOT_IMPLEMENTED("task 3");
}

void all_gather(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
                std::span<const float* const> send, std::span<float* const> recv, std::size_t count) {
  // TODO(task 3): validate; ncclAllGather for every rank inside one group; wait.
  (void)comms;
  (void)streams;
  (void)send;
  (void)recv;
  (void)count;
  NOT_IMPLEMENTED("task 3");
}

void reduce_scatter(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
                    std::span<const float* const> send, std::span<float* const> recv, std::size_t count) {
  // TODO(task 3): validate; ncclReduceScatter (ncclSum) for every rank inside one group; wait.
  (void)comms;
  (void)streams;
  (void)send;
  (void)recv;
  (void)count;
  NOT_IMPLEMENTED("task 3");
}

void column_split_matvec(std::span<const ncclComm_t> comms, std::span<const cudaStream_t> streams,
                         std::span<const float* const> a_blocks, std::span<const float* const> x_blocks,
                         std::span<float* const> partials, std::span<float* const> y_blocks, std::size_t rows,
                         std::size_t cols) {
  // TODO(task 3): column_split_matvec (contract in the header; README hint "Task 3: column_split_matvec").
  (void)comms;
  (void)streams;
  (void)a_blocks;
  (void)x_blocks;
  (void)partials;
  (void)y_blocks;
  (void)rows;
  (void)cols;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

std::vector<float> rank_all_reduce(int rank, int nranks, const ncclUniqueId& id, int device,
                                   std::span<const float> input) {
  // TODO(task 4): rank_all_reduce (contract in the header; README hint "Task 4: rank_all_reduce").
  (void)rank;
  (void)nranks;
  (void)id;
  (void)device;
  (void)input;
  NOT_IMPLEMENTED("task 4");
}

// ---- Task 5 -------------------------------------------------------------------------------------

// TODO(task 5): rank_all_reduce_with_timeout (README hint "Task 5: rank_all_reduce_with_timeout").
RankOutcome rank_all_reduce_with_timeout(int rank, int nranks, const ncclUniqueId& id, int device,
                                         std::span<const float> input, std::chrono::milliseconds timeout) {
  (void)rank;
  (void)nranks;
  (void)id;
  (void)device;
  (void)input;
  (void)timeout;
  NOT_IMPLEMENTED("task 5");
}

// ---- Task 6 -------------------------------------------------------------------------------------

double algbw_gb_per_s(std::size_t bytes, double seconds) {
  // TODO(task 6): bytes / seconds in GB/s (10^9 bytes); reject seconds that are not finite and > 0.
  (void)bytes;
  (void)seconds;
  NOT_IMPLEMENTED("task 6");
}

double bus_factor(Collective collective, int nranks) {
  // TODO(task 6): nccl-tests' factors (see the header); reject nranks < 1.
  (void)collective;
  (void)nranks;
  NOT_IMPLEMENTED("task 6");
}

double busbw_gb_per_s(Collective collective, std::size_t bytes, double seconds, int nranks) {
  // TODO(task 6): algbw times the bus factor.
  (void)collective;
  (void)bytes;
  (void)seconds;
  (void)nranks;
  NOT_IMPLEMENTED("task 6");
}

}  // namespace lesson06
