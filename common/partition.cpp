// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The balanced split: base = n / k elements each, and one more for the first n % k parts.
#include "partition.h"

#include <stdexcept>
#include <string>

namespace course {

namespace {

void require_parts(int parts) {
  if (parts < 1) throw std::invalid_argument("split_range: parts must be at least 1, got " + std::to_string(parts));
}

}  // namespace

Range split_range(std::size_t n, int parts, int index) {
  require_parts(parts);
  if (index < 0 || index >= parts)
    throw std::invalid_argument("split_range: index " + std::to_string(index) + " is outside [0, " +
                                std::to_string(parts) + ")");
  const std::size_t k = static_cast<std::size_t>(parts);
  const std::size_t i = static_cast<std::size_t>(index);
  const std::size_t base = n / k;
  const std::size_t extra = n % k;
  const std::size_t begin = i * base + (i < extra ? i : extra);
  return Range{begin, begin + base + (i < extra ? 1 : 0)};
}

std::vector<Range> split_ranges(std::size_t n, int parts) {
  require_parts(parts);
  std::vector<Range> ranges;
  ranges.reserve(static_cast<std::size_t>(parts));
  for (int i = 0; i < parts; ++i) ranges.push_back(split_range(n, parts, i));
  return ranges;
}

}  // namespace course
