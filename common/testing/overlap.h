// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Whether several workers ran at the same time, as a ratio of host-clock times with a wide
// margin, never an absolute time: the time of all workers together over the sum of the times of
// each alone. Perfect overlap of k workers gives 1/k, one after another 1.0; the limit sits
// halfway between them, so neither a busy host nor a slow launch moves a verdict across it.
#pragma once

#include <functional>
#include <string>

namespace course::testing {

struct Overlap {
  int workers = 0;
  double together_ms = 0;
  double one_after_another_ms = 0;  // the sum of each worker's time alone
  double ratio() const { return together_ms / one_after_another_ms; }
  double perfect() const { return 1.0 / workers; }
  double limit() const { return 0.5 * (1.0 + perfect()); }
  bool overlapped() const { return ratio() < limit(); }
  std::string describe() const;  // the figures, the ratio and what it is compared with
};

// `run_alone(k)` makes only worker k busy, `run_all()` every worker; each returns when its GPU
// work is done. Host-clock medians of 3 runs after a warm-up.
Overlap measure_overlap(int workers, const std::function<void(int)>& run_alone, const std::function<void()>& run_all);

}  // namespace course::testing
