// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host unit tests of the exit-code mapping from Catch2 to Meson: "every case skipped" must be
// 77 (Meson's SKIP), and a failure count that happens to be 77 or 4 must still read as failed.
#include <catch2/catch_test_macros.hpp>

#include "common/testing/result_channel.h"

using course::testing::CaseCounts;
using course::testing::meson_exit_code;

TEST_CASE("the exit code for Meson comes from the counts of cases, whatever Catch2's version", "[host][exit-codes]") {
  CHECK(meson_exit_code(CaseCounts{3, 0, 0}) == 0);
  CHECK(meson_exit_code(CaseCounts{3, 0, 2}) == 0);   // some cases skipped for GPUs, the rest passed
  CHECK(meson_exit_code(CaseCounts{0, 0, 4}) == 77);  // every case skipped
  CHECK(meson_exit_code(CaseCounts{0, 0, 0}) == 2);   // no test case matched
  CHECK(meson_exit_code(CaseCounts{2, 1, 0}) == 1);
  CHECK(meson_exit_code(CaseCounts{0, 4, 3}) == 1);   // 4 failures are a failure, not "all skipped"
  CHECK(meson_exit_code(CaseCounts{0, 77, 0}) == 1);  // nor are 77
}
