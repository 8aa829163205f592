// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Seeded random inputs and poisoned outputs. Tests never use zeros as input (an untouched
// buffer of zeros looks like a correct result) and fill every output with a poison value
// before the call, so an element the code forgot to write is caught.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace course {

// Floats uniform in [lo, hi), reproducible from `seed`.
std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// Small integers stored as floats, uniform in [lo, hi]: their sums are exact in float as long
// as the total stays below 2^24, so a reduction can be compared for equality, in any order.
std::vector<float> random_small_integers(std::size_t n, std::uint64_t seed, int lo = -8, int hi = 8);

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed);

// The byte every poisoned buffer is filled with: 0xFF makes every float a NaN and every
// integer -1, values that no correct result in this course has.
constexpr unsigned char kPoisonByte = 0xFF;

// Fills `bytes` bytes of device memory at `device_ptr` with kPoisonByte (synchronously).
void poison_device(void* device_ptr, std::size_t bytes);

// Whether `value` still holds the poison (every byte kPoisonByte): nothing wrote it.
template <class T>
bool is_poisoned(const T& value) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
  return std::all_of(bytes, bytes + sizeof(T), [](unsigned char b) { return b == kPoisonByte; });
}

// Mixes a case-specific salt into a run's seed, so cases do not share inputs.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt);

}  // namespace course
