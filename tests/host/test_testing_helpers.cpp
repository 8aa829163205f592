// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host tests of the test helpers that need no GPU: the overlap verdict (a ratio against a limit
// halfway between perfect overlap and one after another), the worker lists every lesson from 02
// on runs, the sizes with their edges, and what Owned releases. A helper that judged wrongly would
// grade wrongly.
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/overlap.h"
#include "common/testing/owned.h"
#include "common/testing/workers.h"

using namespace course::testing;
using namespace std::chrono_literals;

TEST_CASE("the overlap limit sits halfway between perfect overlap and one after another", "[host][testing]") {
  Overlap two{2, 10.0, 20.0};
  CHECK(two.perfect() == 0.5);
  CHECK(two.limit() == 0.75);
  CHECK(two.overlapped());  // ratio 0.5
  Overlap four{4, 20.0, 40.0};
  CHECK(four.limit() == 0.625);
  CHECK(four.overlapped());  // ratio 0.5: two at a time still counts as overlap
  Overlap serial{4, 39.0, 40.0};
  CHECK_FALSE(serial.overlapped());
  CHECK(serial.describe().find("must stay below 0.625") != std::string::npos);
}

TEST_CASE("measured overlap tells work that ran together from work that took turns", "[host][testing]") {
  const auto busy = [] { std::this_thread::sleep_for(10ms); };
  // Four workers: alone each takes 10 ms; together either 10 ms (overlapped) or 40 ms (in turns).
  const Overlap together = measure_overlap(
      4, [&](int) { busy(); }, busy);
  INFO(together.describe());
  CHECK(together.overlapped());
  const Overlap in_turns = measure_overlap(
      4, [&](int) { busy(); },
      [&] {
        for (int k = 0; k < 4; ++k) busy();
      });
  INFO(in_turns.describe());
  CHECK_FALSE(in_turns.overlapped());
}

TEST_CASE("the worker lists share GPU 0 everywhere and add distinct GPUs where there are any", "[host][testing]") {
  CHECK(worker_lists(1) == std::vector<Devices>{{0}, {0, 0}, {0, 0, 0}, {0, 0, 0, 0}});
  CHECK(distinct_gpu_lists(1).empty());
  CHECK(distinct_gpu_lists(3) == std::vector<Devices>{{0, 1, 2}, {2, 0, 2, 0}});
  CHECK(worker_lists(2).size() == 6);
  CHECK(show(Devices{2, 0, 2}) == "{2, 0, 2}");
  CHECK(show(Devices{}) == "{}");
}

TEST_CASE("the sizes for k workers include 0, 1, fewer than k and a remainder", "[host][testing]") {
  const std::vector<std::size_t> sizes = sizes_for(3);
  CHECK(sizes == std::vector<std::size_t>{0, 1, 2, 4, 4099 * 3 + 1, (std::size_t{1} << 20) + 3});
  for (const std::size_t n : sizes) CHECK((n < 3 || n % 3 != 0));  // never an even split: the tail matters
}

TEST_CASE("an owned value is released once when its scope ends, and a throwing release is swallowed",
          "[host][testing]") {
  std::vector<std::string> released;
  {
    Owned<std::string> owned("slices", [&](std::string& value) { released.push_back(value); });
    CHECK(owned.value == "slices");
    owned.value = "changed";  // the release sees the value as the test left it
  }
  CHECK(released == std::vector<std::string>{"changed"});
  CHECK_NOTHROW([&] { Owned<int> throwing(1, [](int&) { throw std::runtime_error("release failed"); }); }());
}
