// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// NCCL's LL ("low latency") word, as lessons 07 and 10 push it: one float's bits in the low 4 bytes and,
// in the high 4, the low 32 bits of the number of the call that wrote it. A word is written and read whole
// (one aligned 8-byte store, one 8-byte load), so its float is there exactly when its number is: the
// reader needs no separate flag and the writer no fence between data and flag. (On the hardware an aligned
// 8-byte store arrives whole, which NCCL's LL relies on too; neither the CUDA programming guide nor the PTX
// memory model promises it for a plain store.) A word of call c is never mistaken for one of the 2^32 - 1
// calls before it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace course {

// The word that carries the float whose bits are `value_bits` in call number `call`.
__host__ __device__ constexpr std::uint64_t ll_word(std::uint32_t value_bits, std::uint64_t call) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(call)) << 32) | value_bits;
}

// True when `word` was written by call number `call`.
__host__ __device__ constexpr bool ll_word_of_call(std::uint64_t word, std::uint64_t call) {
  return static_cast<std::uint32_t>(word >> 32) == static_cast<std::uint32_t>(call);
}

}  // namespace course
