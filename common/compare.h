// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Quiet, specific comparisons: instead of printing whole buffers, a Comparison reports how
// many elements differ, the first one (index, value, expected) and, given the split used,
// how many mismatches fall in each part, which usually points at the GPU that went wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "partition.h"

namespace course {

struct Comparison {
  std::size_t checked = 0;
  std::size_t mismatches = 0;
  std::size_t first_index = 0;
  double first_value = 0;
  double first_expected = 0;
  std::vector<std::size_t> mismatches_per_part;  // filled when parts were given

  bool ok() const noexcept { return mismatches == 0; }
  // "3 of 1000 elements differ; first at [17]: got nan, expected 0.25; per part: 0 3"
  std::string describe() const;
};

// Element-wise equality. Bytes and integers; NaN never equals anything.
Comparison compare_exact(const std::uint8_t* got, const std::uint8_t* expected, std::size_t n,
                         const std::vector<Range>& parts = {});
Comparison compare_exact(const float* got, const float* expected, std::size_t n, const std::vector<Range>& parts = {});

// |got - expected| <= abs_tol + rel_tol * |expected| for every element; the expected values
// come from a double-precision reference. NaN and infinity in `got` always mismatch.
Comparison compare_close(const float* got, const double* expected, std::size_t n, double rel_tol, double abs_tol,
                         const std::vector<Range>& parts = {});

}  // namespace course
