// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Given (not yours to write): the local work that tasks 2 and 3 hand to NCCL. A plain sum of a
// slice in double (simpler than lesson 04's, and fast enough that the benchmark's comparison of a
// host combine with an all-reduce measures the combine and not the kernel) and the partial product
// of lesson 05's column split. Both only enqueue; the caller decides when to wait.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/check.h"
#include "nccl_collectives.h"

namespace lesson06 {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 1024;  // enough to keep an H200's 132 SMs streaming memory

// Each thread adds a grid-strided share in double, a tree in shared memory adds the block's, and
// one atomicAdd per block adds that to *sum (zeroed before the launch). The order of the atomics
// varies, so the last bits of a sum of arbitrary floats may too; sums of small integers are exact.
__global__ void add_block_sums(const float* data, std::size_t n, double* sum) {
  __shared__ double shared[kThreads];
  double mine = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    mine += data[i];
  shared[threadIdx.x] = mine;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, shared[0]);
}

// One thread per row (padding rows get 0); the sum in double, stored as float.
__global__ void partial_rows(const float* a, const float* x, std::size_t rows, std::size_t cols, float* partial,
                             std::size_t padded_rows) {
  const std::size_t row = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= padded_rows) return;
  double sum = 0;
  if (row < rows)
    for (std::size_t j = 0; j < cols; ++j) sum += static_cast<double>(a[row * cols + j]) * x[j];
  partial[row] = static_cast<float>(sum);
}

// The contract says "on `stream` (of the current device)". CUDA 13 accepted a launch into another
// GPU's stream without an error on the course's 2-GPU test host, so nothing else would tell you
// that a rank's device was not made current; older runtimes fail the launch
// (cudaErrorInvalidResourceHandle) and the CUDA guide still says it fails. Code that relies on
// either behaviour is wrong: make rank k's device current before its launches.
void require_stream_of_current_device(cudaStream_t stream, const char* what) {
  int owner = -1, current = -1;
  CUDA_CHECK(cudaStreamGetDevice(stream, &owner));
  CUDA_CHECK(cudaGetDevice(&current));
  if (owner != current)
    throw std::logic_error(std::string(what) + ": the stream belongs to GPU " + std::to_string(owner) + " but GPU " +
                           std::to_string(current) + " is current; call cudaSetDevice(" + std::to_string(owner) +
                           ") before launching work on that rank's stream");
}

}  // namespace

void enqueue_partial_sum(const float* data, std::size_t n, double* sum, cudaStream_t stream) {
  require_stream_of_current_device(stream, "enqueue_partial_sum");
  CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, stream));
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks));
  add_block_sums<<<blocks, kThreads, 0, stream>>>(data, n, sum);
  CUDA_CHECK_LAUNCH();
}

void enqueue_partial_matvec(const float* a, const float* x, std::size_t rows, std::size_t cols, float* partial,
                            std::size_t padded_rows, cudaStream_t stream) {
  require_stream_of_current_device(stream, "enqueue_partial_matvec");
  if (padded_rows == 0) return;
  const auto blocks = static_cast<unsigned>((padded_rows + kThreads - 1) / kThreads);
  partial_rows<<<blocks, kThreads, 0, stream>>>(a, x, rows, cols, partial, padded_rows);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lesson06
