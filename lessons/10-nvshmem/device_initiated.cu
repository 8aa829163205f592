// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10: communication started by the GPU. The symmetric heap and the two ways to reach a peer's
// copy (a pointer, or a put); lesson 08's Jacobi as one kernel per GPU whose first and last blocks
// put the boundary rows into the neighbours' halos with a signal that the next sweep waits for; an all-reduce
// of one kernel per GPU that pushes every float to every PE in a word with its call's number (LL). No host
// orders anything.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 10-nvshmem --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "device_initiated.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cuda/atomic>
#include <cuda/std/chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson10 {
namespace {

// Given: helpers for tasks 2 and 3 (use them or write your own).

// An NVSHMEM call that returns a status (0: success) made into the course's kind of error.
[[maybe_unused]] void nvshmem_check(int status, const char* call) {
  if (status != 0) throw std::runtime_error(std::string(call) + " failed with status " + std::to_string(status));
}

// Waits until the signal word *signal (of this PE) is >= value; false when `patience_ns` passed first.
// The data a put-with-signal delivers arrives before its signal. Seeing the signal is a read: the fence
// after it (at system scope: the signal came from another GPU) orders this thread's later reads, and the
// barriers after it (__syncthreads, a grid's sync) those of the threads that read the data, after the
// data the signal covers (nvshmem_signal_wait_until, which never gives up, ends with a GPU-scope fence).
[[maybe_unused]] __device__ bool wait_for_signal(std::uint64_t* signal, std::uint64_t value, long long patience_ns) {
  if (!nvshmem_uint64_test(signal, NVSHMEM_CMP_GE, value)) {
    const auto start = cuda::std::chrono::system_clock::now();  // the GPU's global timer
    while (!nvshmem_uint64_test(signal, NVSHMEM_CMP_GE, value)) {
      const auto waited = cuda::std::chrono::system_clock::now() - start;
      if (waited > cuda::std::chrono::nanoseconds(patience_ns)) return false;
      if (waited > cuda::std::chrono::microseconds(20)) __nanosleep(200);
    }
  }
  __threadfence_system();
  return true;
}

// The report of a block that gave up, written by exactly one block: the first to claim it.
[[maybe_unused]] __device__ void report_give_up(GiveUp* report, unsigned int* claim, unsigned long long call, int peer,
                                                int block) {
  unsigned int free = 0;
  if (!cuda::atomic_ref<unsigned int, cuda::thread_scope_device>(*claim).compare_exchange_strong(
          free, 1u, cuda::memory_order_relaxed))
    return;  // another block's report stands
  volatile GiveUp* live = report;
  live->peer = peer;
  live->block = block;
  __threadfence_system();  // the fields before the call number that says they are there
  live->call = call;
}

// True once a block of this owner has claimed the report: the owner is broken, its kernels stop.
[[maybe_unused]] __device__ bool gave_up_already(unsigned int* claim) {
  return cuda::atomic_ref<unsigned int, cuda::thread_scope_device>(*claim).load(cuda::memory_order_relaxed) != 0;
}

// Throws std::runtime_error with the report when an earlier kernel of this owner gave up.
[[maybe_unused]] void throw_if_gave_up(const GiveUp* report, const char* call) {
  if (const std::string text = gave_up(*report); !text.empty())
    throw std::runtime_error(std::string(call) + ": an earlier kernel gave up, make a new one: " + text);
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): nvshmem_malloc with the PE's device current; its failure made into an exception.
SymmetricFloats allocate_symmetric(const Session& session, std::size_t count) {
  (void)session;
  (void)count;
  NOT_IMPLEMENTED("task 1");
}

// TODO(task 1): nvshmem_free, collectively; the buffer left empty.
void free_symmetric(const Session& session, SymmetricFloats& buffer) {
  (void)session;
  (void)buffer;
  NOT_IMPLEMENTED("task 1");
}

// TODO(task 1): what nvshmem_ptr says about PE pe's copy.
PeerPath peer_path(const Session& session, const SymmetricFloats& buffer, int pe) {
  (void)session;
  (void)buffer;
  (void)pe;
  NOT_IMPLEMENTED("task 1");
}

// TODO(task 1): a kernel per path (plain stores through nvshmem_ptr's address; nvshmem_putmem), the checks.
void enqueue_put(const Session& session, const float* source, const SymmetricFloats& destination, int pe,
                 std::size_t count, PeerPath path, cudaStream_t stream) {
  (void)session;
  (void)source;
  (void)destination;
  (void)pe;
  (void)count;
  (void)path;
  (void)stream;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

// TODO(task 2): the symmetric buffers (the same size on every PE), the signals, the initial rows.
JacobiBlock decompose(const Session& session, std::size_t ny, std::size_t nx, std::span<const float> initial) {
  (void)session;
  (void)ny;
  (void)nx;
  (void)initial;
  NOT_IMPLEMENTED("task 2");
}

// TODO(task 2): your sweep kernel (wait, sweep, grid.sync(), put with signal, swap) and its collective launch.
void run_device_initiated(const Session& session, JacobiBlock& block, int iterations) {
  (void)session;
  (void)block;
  (void)iterations;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

// TODO(task 3): the inbox on the symmetric heap (zeroed), the report, the most resident blocks.
AllReduceWorkspace open_all_reduce(const Session& session, std::size_t max_count) {
  (void)session;
  (void)max_count;
  NOT_IMPLEMENTED("task 3");
}

// TODO(task 3): your kernel (push each float in a word with the call's number, wait for every PE's word of
// each float, sum in PE order) and its launch (cudaLaunchCooperativeKernel on the stream).
void enqueue_all_reduce_kernel(const AllReduceArgs& args, cudaStream_t stream) {
  (void)args;
  (void)stream;
  NOT_IMPLEMENTED("task 3");
}

// TODO(task 3): the arguments of this call, one launch, the call counted.
void device_all_reduce(AllReduceWorkspace& workspace, const float* input, float* output, std::size_t count,
                       cudaStream_t stream, const AllReduceLaunch& launch) {
  (void)workspace;
  (void)input;
  (void)output;
  (void)count;
  (void)stream;
  (void)launch;
  NOT_IMPLEMENTED("task 3");
}

}  // namespace lesson10
