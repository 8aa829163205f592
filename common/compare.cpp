// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// One loop shape for every comparison: count, remember the first, attribute to a part.
#include "compare.h"

#include <cmath>
#include <sstream>

namespace course {
namespace {

template <class Got, class Expected, class Equal>
Comparison compare_with(const Got* got, const Expected* expected, std::size_t n, const std::vector<Range>& parts,
                        Equal equal) {
  Comparison c;
  c.checked = n;
  c.mismatches_per_part.assign(parts.size(), 0);
  std::size_t part = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (equal(got[i], expected[i])) continue;
    if (c.mismatches++ == 0) {
      c.first_index = i;
      c.first_value = static_cast<double>(got[i]);
      c.first_expected = static_cast<double>(expected[i]);
    }
    while (part < parts.size() && i >= parts[part].end) ++part;
    if (part < parts.size() && i >= parts[part].begin) ++c.mismatches_per_part[part];
  }
  return c;
}

}  // namespace

std::string Comparison::describe() const {
  std::ostringstream out;
  if (ok()) {
    out << "all " << checked << " elements match";
    return out.str();
  }
  out << mismatches << " of " << checked << " elements differ; first at [" << first_index << "]: got " << first_value
      << ", expected " << first_expected;
  if (!mismatches_per_part.empty()) {
    out << "; mismatches per part (GPU):";
    for (std::size_t m : mismatches_per_part) out << ' ' << m;
  }
  return out.str();
}

Comparison compare_exact(const std::uint8_t* got, const std::uint8_t* expected, std::size_t n,
                         const std::vector<Range>& parts) {
  return compare_with(got, expected, n, parts, [](std::uint8_t a, std::uint8_t b) { return a == b; });
}

Comparison compare_exact(const float* got, const float* expected, std::size_t n, const std::vector<Range>& parts) {
  return compare_with(got, expected, n, parts, [](float a, float b) { return a == b; });
}

Comparison compare_close(const float* got, const double* expected, std::size_t n, double rel_tol, double abs_tol,
                         const std::vector<Range>& parts) {
  return compare_with(got, expected, n, parts, [=](float a, double b) {
    if (!std::isfinite(a)) return false;
    return std::fabs(static_cast<double>(a) - b) <= abs_tol + rel_tol * std::fabs(b);
  });
}

}  // namespace course
