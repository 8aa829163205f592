// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05: y = W x over many GPUs. A bandwidth-bound gemv kernel of your own, then the product
// split by rows (x copied to every worker, the parts of y gathered) and by columns (partial ys
// summed on one device), the row split again with one cuBLAS handle per worker, and in managed
// memory with placement advice and prefetching.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 05-matvec --print-errorlogs
// checks your work. Everything outside the TODO regions stays as it is.
#include "matvec.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/managed_memory.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson05 {

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): write the gemv kernel here (a __global__ function in an anonymous namespace), then
// launch it below. One block (or one warp) per row: the threads stride along the row, each adds
// W[i * n + j] * x[j] for its columns into a float, and the partial sums are combined with warp
// shuffles (__shfl_down_sync) and, between the warps of a block, shared memory. Memory bandwidth is
// the limit: read four columns at once with float4 loads when n % 4 == 0 and W and x sit on 16-byte
// boundaries (check the pointers: a view into a larger buffer may not), floats otherwise. Launch on
// `stream`, enough blocks to cover the m rows (round up; or loop over rows inside the kernel), and
// check the launch with CUDA_CHECK_LAUNCH(). m == 0: return before any CUDA call. n == 0: every
// y[i] must still be written (0).
void launch_gemv(const float* W, const float* x, float* y, std::size_t m, std::size_t n, cudaStream_t stream) {
  (void)W;
  (void)x;
  (void)y;
  (void)m;
  (void)n;
  (void)stream;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

DistributedMatrix distribute_rows(std::span<const int> devices, int root, const float* W, std::size_t m,
                                  std::size_t n) {
  // TODO(task 2): check the arguments first (std::invalid_argument). Then fill a DistributedMatrix
  // (split = Split::rows, m, n, root) with one Worker per entry of `devices`, in order: worker k
  // runs on devices[k] (a device number, not k) and holds rows course::split_range(m, K, k) and all
  // n columns. Its buffers are course::DeviceBuffer<float>(devices[k], count) and its stream
  // course::Stream(devices[k]); build it with Worker{device, rows, cols, W, x, y, stream} and
  // push_back(std::move(worker)). Copy its rows of W from the host with cudaMemcpy, with its device
  // current (course::DeviceGuard).
  (void)devices;
  (void)root;
  (void)W;
  (void)m;
  (void)n;
  NOT_IMPLEMENTED("task 2");
}

void multiply_rows(DistributedMatrix& A, const float* x, float* y) {
  // TODO(task 2): check the arguments first (std::invalid_argument). Then, for every worker, with its
  // device current and on its stream, WITHOUT waiting: cudaMemcpyPeerAsync x from A.root into w.x,
  // launch_gemv on its block, cudaMemcpyPeerAsync its y into y + w.rows.begin on A.root. Only when
  // every worker has its work, wait for each stream. Skip copies of 0 bytes.
  (void)A;
  (void)x;
  (void)y;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

DistributedMatrix distribute_columns(std::span<const int> devices, int root, const float* W, std::size_t m,
                                     std::size_t n) {
  // TODO(task 3): as distribute_rows, with the roles of rows and columns swapped: worker k holds all
  // m rows and the columns course::split_range(n, K, k), so its block is m x cols.size(). Out of the
  // host's W that block is m pieces of cols.size() floats, one every n floats: cudaMemcpy2D copies
  // it in one call (dst pitch cols.size() * 4 bytes, src W + cols.begin with pitch n * 4 bytes).
  // Its y holds a partial y of all m rows. Then, on the root: A.partials (K * m floats) and
  // A.root_stream.emplace(root).
  (void)devices;
  (void)root;
  (void)W;
  (void)m;
  (void)n;
  NOT_IMPLEMENTED("task 3");
}

// TODO(task 3): write a kernel here that sums the partials on the root: y[i] = sum over k of
// partials[k * m + i]. In multiply_columns, check the arguments (std::invalid_argument), then for
// every worker, with its device current and on its stream, without waiting: copy x[cols] from the
// root into w.x, launch_gemv of its m x cols.size() block into w.y (its partial y), copy w.y to
// A.partials.data() + k * m on the root, and record a course::Event (made on the worker's device)
// after that copy. Then on the root: A.root_stream waits for every event (cudaStreamWaitEvent), runs
// your kernel, and only then does the host wait, for the root stream alone.
void multiply_columns(DistributedMatrix& A, const float* x, float* y) {
  (void)A;
  (void)x;
  (void)y;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

std::vector<CublasHandle> create_cublas_handles(const DistributedMatrix& A) {
  // TODO(task 4): check that A is a row split (std::invalid_argument). For every worker: make its
  // device current (course::DeviceGuard), cublasCreate a handle (CUBLAS_CHECK), keep it with the
  // device in the vector, and bind it to the worker's stream with cublasSetStream. If anything
  // fails, destroy the handles made so far before you rethrow.
  (void)A;
  NOT_IMPLEMENTED("task 4");
}

void destroy_cublas_handles(std::vector<CublasHandle>& handles) {
  // TODO(task 4): cublasDestroy every handle with its device current, then empty the vector.
  (void)handles;
  NOT_IMPLEMENTED("task 4");
}

void multiply_rows_cublas(DistributedMatrix& A, const std::vector<CublasHandle>& handles, const float* x, float* y) {
  // TODO(task 4): check the arguments (std::invalid_argument). Then multiply_rows, with
  // cublasSgemv(handles[k].handle, ...) in place of launch_gemv while worker k's device is current.
  // cuBLAS reads matrices column-major: see the README for the transpose trick (CUBLAS_OP_T,
  // dimensions n and rows, leading dimension n). alpha = 1 and beta = 0 are host floats. For n == 0
  // cuBLAS leaves y untouched: write the zeros yourself (cudaMemsetAsync).
  (void)A;
  (void)handles;
  (void)x;
  (void)y;
  NOT_IMPLEMENTED("task 4");
}

// ---- Task 5 -------------------------------------------------------------------------------------

ManagedMatrix allocate_managed(std::span<const int> devices, std::size_t m, std::size_t n) {
  // TODO(task 5): check `devices` (std::invalid_argument). Fill m, n, devices, rows
  // (course::split_ranges), cudaMallocManaged W (m * n floats), x (n) and y (m), skipping empty ones
  // (they stay nullptr), and one course::Stream per worker (streams.reserve, then emplace_back). If
  // an allocation fails, free what you had before you rethrow.
  (void)devices;
  (void)m;
  (void)n;
  NOT_IMPLEMENTED("task 5");
}

void free_managed(ManagedMatrix& A) {
  // TODO(task 5): wait for the streams, destroy them (clear the vector), cudaFree W, x and y (those
  // that are not nullptr) and set them to nullptr; clear devices and rows.
  (void)A;
  NOT_IMPLEMENTED("task 5");
}

void advise_and_prefetch(ManagedMatrix& A) {
  // TODO(task 5): first the advice, for every block: x gets course::mem_advise(A.x, bytes,
  // cudaMemAdviseSetReadMostly, any device); worker k's rows of W and its rows of y (skip empty
  // ones) get cudaMemAdviseSetPreferredLocation and cudaMemAdviseSetAccessedBy for devices[k]
  // (course::mem_advise). Then the moves: for every worker k, with devices[k] current,
  // course::mem_prefetch_async x and its two blocks to devices[k] on streams[k]. Wait for the
  // streams at the end, not inside the loop.
  (void)A;
  NOT_IMPLEMENTED("task 5");
}

void multiply_managed(ManagedMatrix& A) {
  // TODO(task 5): for every worker k, with devices[k] current: launch_gemv on its rows (W from row
  // rows[k].begin, y from element rows[k].begin; W or y may be nullptr for an empty matrix) on
  // streams[k]. Then wait for every stream.
  (void)A;
  NOT_IMPLEMENTED("task 5");
}

}  // namespace lesson05
