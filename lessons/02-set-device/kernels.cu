// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02's provided kernels: a grid-stride `scale` (real work whose result the tests can
// check) and a one-thread `spin` that waits on the GPU's global nanosecond timer, so that one
// launch lasts the same wall-clock time on every GPU, however fast its clock runs.
#include "kernels.cuh"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/check.h"

namespace lesson02 {
namespace {

__global__ void scale_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, float factor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = factor * in[i];
}

// %globaltimer counts nanoseconds of wall-clock time (PTX ISA, "Special registers"); unlike
// clock64() it does not depend on the SM clock, which changes with load and temperature.
__device__ unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void spin_kernel(unsigned long long duration_ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < duration_ns) {
  }
}

}  // namespace

void launch_scale(const float* in, float* out, std::size_t n, float factor, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kMaxBlocks = 4096;  // enough to fill any GPU; the loop covers the rest
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
  scale_kernel<<<blocks, kThreads, 0, stream>>>(in, out, n, factor);
  CUDA_CHECK_LAUNCH();
}

void launch_spin(double milliseconds, cudaStream_t stream) {
  if (!(milliseconds >= 0.0 && milliseconds <= 60'000.0))
    throw std::invalid_argument("launch_spin: milliseconds must be in [0, 60000], got " + std::to_string(milliseconds));
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(milliseconds * 1e6));
  CUDA_CHECK_LAUNCH();
}

}  // namespace lesson02
