// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A fixed generator (std::mt19937_64) with explicit seeds, so a failing input can be rebuilt.
#include "random.h"

#include <cuda_runtime.h>

#include <random>

#include "check.h"

namespace course {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo, float hi) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (auto& v : values) v = dist(engine);
  return values;
}

std::vector<float> random_small_integers(std::size_t n, std::uint64_t seed, int lo, int hi) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> values(n);
  for (auto& v : values) v = static_cast<float>(dist(engine));
  return values;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::vector<std::uint8_t> values(n);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word = engine();
    for (int b = 0; b < 8; ++b) values[i + b] = static_cast<std::uint8_t>(word >> (8 * b));
  }
  for (std::uint64_t word = engine(); i < n; ++i, word >>= 8) values[i] = static_cast<std::uint8_t>(word);
  return values;
}

void poison_device(void* device_ptr, std::size_t bytes) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemset(device_ptr, kPoisonByte, bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt) {
  // splitmix64 finaliser over the pair: nearby salts give unrelated streams.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace course
