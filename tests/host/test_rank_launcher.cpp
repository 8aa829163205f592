// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host tests of the process launcher (common/testing/rank_launcher.h): ranks started as this
// program's hidden cases report who they are, a job past its time limit is killed as a whole and
// fast, and the ncclUniqueId survives its trip through hex. No GPU needed.
#include <catch2/catch_test_macros.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/testing/gpu_test.h"
#include "common/testing/rank_launcher.h"

using namespace std::chrono_literals;
using course::testing::launch_ranks;

TEST_CASE("launcher helper: report the rank", "[.][launcher-helper]") {
  const course::testing::RankContext context = course::testing::rank_context();
  const char* extra = std::getenv("COURSE_TEST_EXTRA");
  course::testing::write_child_output("rank " + std::to_string(context.rank) + " of " + std::to_string(context.nranks) +
                                      " extra " + (extra ? extra : "-") + "\n");
}

TEST_CASE("launcher helper: never finish", "[.][launcher-helper]") {
  course::testing::write_child_output("started\n");
  std::this_thread::sleep_for(600s);
}

TEST_CASE("the launcher starts one process per rank and collects what each wrote", "[host][launcher]") {
  const auto launch = launch_ranks("launcher helper: report the rank", 3, 4, {{"COURSE_TEST_EXTRA", "all"}}, 60s,
                                   {{1, {{"COURSE_TEST_EXTRA", "one"}}}});
  CHECK_FALSE(launch.timed_out);
  REQUIRE(launch.ranks.size() == 3);
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << " log:\n" << launch.ranks[r].log);
    CHECK(launch.ranks[r].rank == r);
    CHECK(launch.ranks[r].exit_code == 0);
    CHECK_FALSE(launch.ranks[r].killed);
    CHECK(launch.ranks[r].output == "rank " + std::to_string(r) + " of 4 extra " + (r == 1 ? "one" : "all") + "\n");
  }
}

TEST_CASE("a job past its time limit is killed as a whole", "[host][launcher]") {
  const auto start = std::chrono::steady_clock::now();
  const auto launch = launch_ranks("launcher helper: never finish", 2, 2, {}, 2s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(launch.timed_out);
  CHECK(elapsed < 30s);  // the limit is 2 s; kill and reap take far less than the margin
  REQUIRE(launch.ranks.size() == 2);
  for (const auto& rank : launch.ranks) {
    CHECK(rank.killed);
    CHECK(rank.exit_code == -1);
    CHECK(rank.output == "started\n");
  }
}

TEST_CASE("the launcher refuses to start more ranks than the job has or none", "[host][launcher]") {
  CHECK_THROWS_AS(launch_ranks("launcher helper: report the rank", 3, 2, {}, 5s), std::invalid_argument);
  CHECK_THROWS_AS(launch_ranks("launcher helper: report the rank", 0, 2, {}, 5s), std::invalid_argument);
}

TEST_CASE("an ncclUniqueId survives its trip through hex and bad hex is refused", "[host][launcher]") {
  ncclUniqueId id;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id.internal[i] = static_cast<char>((i * 37 + 11) & 0xFF);
  const std::string hex = course::testing::unique_id_to_hex(id);
  CHECK(hex.size() == 2 * NCCL_UNIQUE_ID_BYTES);
  CHECK(hex.substr(0, 4) == "0b30");
  const ncclUniqueId back = course::testing::unique_id_from_hex(hex);
  CHECK(std::string(back.internal, NCCL_UNIQUE_ID_BYTES) == std::string(id.internal, NCCL_UNIQUE_ID_BYTES));
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(std::string(course::testing::unique_id_from_hex(upper).internal, NCCL_UNIQUE_ID_BYTES) ==
        std::string(id.internal, NCCL_UNIQUE_ID_BYTES));
  CHECK_THROWS_AS(course::testing::unique_id_from_hex(hex.substr(1)), std::invalid_argument);
  std::string bad = hex;
  bad[10] = 'g';
  CHECK_THROWS_AS(course::testing::unique_id_from_hex(bad), std::invalid_argument);
}

TEST_CASE("rank_context refuses to run outside a launched job", "[host][launcher]") {
  if (std::getenv("COURSE_RANK") != nullptr) SKIP("running inside a job");
  CHECK_THROWS_AS(course::testing::rank_context(), std::runtime_error);
}
