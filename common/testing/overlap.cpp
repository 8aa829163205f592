// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Overlap as a ratio of host-clock medians (see overlap.h).
#include "overlap.h"

#include <sstream>

#include "../timer.h"

namespace course::testing {

namespace {
double median_ms(const std::function<void()>& run) {
  return course::measure_host(run, /*warmup=*/1, /*repeats=*/3).median_ms;
}
}  // namespace

std::string Overlap::describe() const {
  std::ostringstream out;
  out << workers << " workers: all together took " << together_ms << " ms, one at a time " << one_after_another_ms
      << " ms in total. Ratio " << ratio() << " (perfect overlap " << perfect()
      << ", one after another 1.0; it must stay below " << limit() << ")";
  return out.str();
}

Overlap measure_overlap(int workers, const std::function<void(int)>& run_alone, const std::function<void()>& run_all) {
  Overlap overlap;
  overlap.workers = workers;
  for (int k = 0; k < workers; ++k) overlap.one_after_another_ms += median_ms([&] { run_alone(k); });
  overlap.together_ms = median_ms(run_all);
  return overlap;
}

}  // namespace course::testing
