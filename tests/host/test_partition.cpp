// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host unit tests of common/partition: the balanced split every lesson uses to give each GPU
// its share, at the edges (n = 0, n < k, n not divisible by k, one part, many parts).
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <stdexcept>

#include "common/partition.h"

using course::Range;
using course::split_range;
using course::split_ranges;

TEST_CASE("split ranges tile [0, n) in order with sizes differing by at most one", "[host][partition]") {
  const std::size_t n = GENERATE(0u, 1u, 2u, 3u, 7u, 8u, 1000u, 1001u, 1'000'003u);
  const int parts = GENERATE(1, 2, 3, 4, 7, 8, 16);
  const auto ranges = split_ranges(n, parts);
  INFO("n = " << n << ", parts = " << parts);
  REQUIRE(ranges.size() == static_cast<std::size_t>(parts));
  std::size_t next = 0, smallest = n, largest = 0;
  for (const Range& r : ranges) {
    CHECK(r.begin == next);
    CHECK(r.end >= r.begin);
    next = r.end;
    smallest = std::min(smallest, r.size());
    largest = std::max(largest, r.size());
  }
  CHECK(next == n);
  CHECK(largest - smallest <= 1);
}

TEST_CASE("the first n % k parts take the extra element", "[host][partition]") {
  CHECK(split_range(10, 4, 0) == Range{0, 3});
  CHECK(split_range(10, 4, 1) == Range{3, 6});
  CHECK(split_range(10, 4, 2) == Range{6, 8});
  CHECK(split_range(10, 4, 3) == Range{8, 10});
}

TEST_CASE("fewer elements than parts leaves the last parts empty", "[host][partition]") {
  const auto ranges = split_ranges(2, 4);
  CHECK(ranges[0] == Range{0, 1});
  CHECK(ranges[1] == Range{1, 2});
  CHECK(ranges[2].empty());
  CHECK(ranges[3].empty());
  for (const Range& r : split_ranges(0, 3)) CHECK(r.empty());
}

TEST_CASE("a part count below one or an index outside the parts is rejected", "[host][partition]") {
  CHECK_THROWS_AS(split_ranges(10, 0), std::invalid_argument);
  CHECK_THROWS_AS(split_range(10, -1, 0), std::invalid_argument);
  CHECK_THROWS_AS(split_range(10, 4, 4), std::invalid_argument);
  CHECK_THROWS_AS(split_range(10, 4, -1), std::invalid_argument);
}
