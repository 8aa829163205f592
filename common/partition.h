// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Splitting n elements over k parts (GPUs, threads) as evenly as possible: part sizes differ
// by at most one, the first n % k parts get the extra element, and the parts tile [0, n) in
// order. n = 0 and n < k are ordinary inputs: some parts are then empty, never negative.
#pragma once

#include <cstddef>
#include <vector>

namespace course {

struct Range {
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the last element
  std::size_t size() const noexcept { return end - begin; }
  bool empty() const noexcept { return begin == end; }
  bool operator==(const Range& other) const noexcept { return begin == other.begin && end == other.end; }
};

// Part `index` of `parts` (0 <= index < parts, parts >= 1; otherwise std::invalid_argument).
Range split_range(std::size_t n, int parts, int index);

// All `parts` ranges, in order.
std::vector<Range> split_ranges(std::size_t n, int parts);

}  // namespace course
