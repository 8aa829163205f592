// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Given: the one-shot's sum, lesson 07's kernel. Every thread adds element i of every source in
// rank order, starting from the first (so -0.0f + -0.0f stays -0.0f), reading each source where
// it lives: another process's buffer opened through CUDA IPC, on this GPU or a peer.
#include <cuda_runtime.h>

#include <algorithm>

#include "common/check.h"
#include "multi_process.h"

namespace lesson09 {

namespace {

constexpr int kThreads = 256;

__global__ void sum_of_peers_kernel(PeerSources sources, float* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float total = sources.data[0][i];
#pragma unroll
    for (int j = 1; j < kMaxRanks; ++j)
      if (j < sources.count) total += sources.data[j][i];
    out[i] = total;
  }
}

}  // namespace

void enqueue_sum_of_peers(const PeerSources& sources, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(std::min<std::size_t>(wanted, 4096));
  sum_of_peers_kernel<<<blocks, kThreads, 0, stream>>>(sources, out, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace lesson09
