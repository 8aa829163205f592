// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host-side tests of common/timer: the size labels the benchmarks print and the back-to-back
// timing loop (with host work standing in for the GPU's), which need no GPU.
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <thread>

#include "common/timer.h"

TEST_CASE("sizes print in whole binary units", "[host][timer]") {
  CHECK(course::size_label(8) == "8 B");
  CHECK(course::size_label(1023) == "1023 B");
  CHECK(course::size_label(1024) == "1 KiB");
  CHECK(course::size_label(64 * 1024) == "64 KiB");
  CHECK(course::size_label(std::size_t{256} << 20) == "256 MiB");
  CHECK(course::size_label(std::size_t{1} << 30) == "1 GiB");
}

TEST_CASE("time per call counts the timed calls and one wait, not the warm-up", "[host][timer]") {
  int calls = 0, waits = 0;
  const double seconds = course::seconds_per_call(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      },
      [&] { ++waits; }, 3, 5);
  CHECK(calls == 8);
  CHECK(waits == 2);
  CHECK(seconds >= 0.002);
  CHECK(seconds < 0.1);
}
