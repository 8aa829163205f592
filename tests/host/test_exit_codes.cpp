// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host unit tests of the exit-code mapping from Catch2 to Meson: "every case skipped" must be
// 77 (Meson's SKIP), and a failure count that happens to be 77 or 4 must still read as failed.
#include <catch2/catch_test_macros.hpp>

#include "common/testing/gpu_test.h"

using course::testing::meson_exit_code;

TEST_CASE("Catch2's exit codes map to Meson's", "[host][exit-codes]") {
  CHECK(meson_exit_code(0) == 0);
  CHECK(meson_exit_code(4) == 77);  // all test cases skipped
  CHECK(meson_exit_code(2) == 2);   // no test case matched
  CHECK(meson_exit_code(1) == 1);
  CHECK(meson_exit_code(77) == 1);  // 77 failed assertions is a failure, not a skip
  CHECK(meson_exit_code(255) == 1);
}
