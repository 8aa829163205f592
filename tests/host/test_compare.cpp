// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host unit tests of common/compare and common/random: comparisons report the first mismatch,
// the count and the part it fell in; NaN never matches; seeded inputs are reproducible.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/compare.h"
#include "common/random.h"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("an exact comparison reports the first mismatch and the count per part", "[host][compare]") {
  const std::vector<float> expected{1, 2, 3, 4, 5, 6};
  std::vector<float> got = expected;
  got[4] = 50;
  got[5] = std::numeric_limits<float>::quiet_NaN();
  const auto c = course::compare_exact(got.data(), expected.data(), got.size(), course::split_ranges(6, 2));
  CHECK_FALSE(c.ok());
  CHECK(c.mismatches == 2);
  CHECK(c.first_index == 4);
  CHECK(c.first_value == 50);
  CHECK(c.first_expected == 5);
  CHECK(c.mismatches_per_part == std::vector<std::size_t>{0, 2});
  CHECK_THAT(c.describe(), ContainsSubstring("2 of 6 elements differ; first at [4]: got 50, expected 5"));
  CHECK_THAT(c.describe(), ContainsSubstring("per part (GPU): 0 2"));
}

TEST_CASE("equal buffers compare equal", "[host][compare]") {
  const auto bytes = course::random_bytes(1001, 7);
  const auto c = course::compare_exact(bytes.data(), bytes.data(), bytes.size());
  CHECK(c.ok());
  CHECK(c.describe() == "all 1001 elements match");
}

TEST_CASE("a tolerant comparison applies relative and absolute tolerance and rejects NaN", "[host][compare]") {
  const std::vector<double> expected{1000.0, 0.0, 1.0};
  const std::vector<float> inside{1000.5f, 1e-7f, 1.0f};
  CHECK(course::compare_close(inside.data(), expected.data(), 3, 1e-3, 1e-6).ok());
  const std::vector<float> outside{1002.0f, 1e-7f, std::numeric_limits<float>::quiet_NaN()};
  const auto c = course::compare_close(outside.data(), expected.data(), 3, 1e-3, 1e-6);
  CHECK(c.mismatches == 2);
  CHECK(c.first_index == 0);
}

TEST_CASE("seeded random inputs are reproducible, varied and never all zero", "[host][random]") {
  const auto a = course::random_floats(1000, 42), b = course::random_floats(1000, 42);
  const auto c = course::random_floats(1000, 43);
  CHECK(a == b);
  CHECK(a != c);
  int zeros = 0;
  for (float v : a) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
    zeros += v == 0.0f;
  }
  CHECK(zeros < 5);
  const auto ints = course::random_small_integers(1000, 1, -8, 8);
  for (float v : ints) CHECK(v == std::floor(v));
  CHECK(course::random_bytes(33, 5) == course::random_bytes(33, 5));
  CHECK(course::mix_seed(1, 1) != course::mix_seed(1, 2));
}

TEST_CASE("a value is poisoned only while every one of its bytes is the poison byte", "[host][random]") {
  float poisoned = 0;
  std::memset(&poisoned, course::kPoisonByte, sizeof poisoned);
  CHECK(course::is_poisoned(poisoned));
  CHECK(std::isnan(poisoned));
  CHECK_FALSE(course::is_poisoned(std::numeric_limits<float>::quiet_NaN()));  // a NaN someone wrote
  CHECK_FALSE(course::is_poisoned(0.0f));
  CHECK(course::is_poisoned(-1));  // an int of 0xFF bytes
  CHECK_FALSE(course::is_poisoned(1.0));
}
