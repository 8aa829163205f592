// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02's provided kernels (given to you: do not edit). This header is plain host C++, so
// the test program, which the host compiler builds, includes it too. Each launcher enqueues its
// kernel on `stream`, which must be a stream of the current device: the CUDA Programming Guide
// says a launch into another device's stream fails (one driver runs it on the stream's device
// instead: README, "Everything belongs to a device"). Both return at once; the kernel runs later.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace lesson02 {

// out[i] = factor * in[i] for every i < n. `in` and `out` must be memory of the current device,
// the stream's.
// n == 0 launches nothing.
void launch_scale(const float* in, float* out, std::size_t n, float factor, cudaStream_t stream);

// Keeps the GPU busy for `milliseconds` of wall-clock time (it reads the GPU's nanosecond
// clock, %globaltimer, in a loop), whatever the data and the GPU's clock speed. It makes
// timing about one thing only: whether several devices worked at the same time.
void launch_spin(double milliseconds, cudaStream_t stream);

}  // namespace lesson02
