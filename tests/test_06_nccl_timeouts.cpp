// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06 tests, task 5: a rank that never hangs on a missing peer. Each case starts this same
// program once per rank (common/testing/rank_launcher.h), each running the hidden case below, which
// calls the student's rank_all_reduce_with_timeout for one rank and writes what it got: its sum, or
// its error and how long it waited. A peer that is never started, that dies after joining, or that
// joins and then stalls is played by the course's own code in that hidden case, not the student's.
// Times are checked against the timeout with wide margins (NCCL may notice a dead peer early).
#include <cuda_runtime.h>
#include <nccl.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/testing/gpu_test.h"
#include "common/testing/owned.h"
#include "common/testing/rank_launcher.h"
#include "nccl_collectives.h"
#include "test_06_nccl_support.h"

using namespace lesson06;
using namespace lesson06_tests;

// ---- Task 5 ---------------------------------------------------------------------------------

namespace {

constexpr const char* kTimeoutRankCase = "rank: all-reduce of this rank's numbers with a timeout";

// The file rank `rank` leaves in the job's folder once its call has ended, however it ended.
std::filesystem::path done_marker(const course::testing::RankContext& context, int rank) {
  return std::filesystem::path(context.dir) / ("rank-" + std::to_string(rank) + "-done");
}

// Polls every 10 ms, for at most `limit`, until rank 0 has left its marker or `stop()` is true.
template <class Stop>
void until_rank0_done(const course::testing::RankContext& context, std::chrono::milliseconds limit, Stop stop) {
  for (auto waited = 0ms; waited < limit && !stop() && !std::filesystem::exists(done_marker(context, 0));
       waited += 10ms)
    std::this_thread::sleep_for(10ms);
}

// The course's own code, not the student's: the peer of task 5's cases joins the communicator,
// then dies before the all-reduce, as a crashed process would, or stalls until rank 0 is done.
// The join does not block, so that the peer stops waiting as soon as rank 0 is done (a rank 0
// that never joins).
[[noreturn]] void play_peer(const course::testing::RankContext& context, const ncclUniqueId& id, bool dies) {
  CUDA_CHECK(cudaSetDevice(context.rank));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t state = ncclCommInitRankConfig(&comm, context.nranks, id, context.rank, &config);
  until_rank0_done(context, 60s,
                   [&] { return state != ncclInProgress || ncclCommGetAsyncError(comm, &state) != ncclSuccess; });
  if (state != ncclSuccess) {
    course::testing::write_child_output(std::string("never joined: ") + ncclGetErrorString(state) + "\n");
    std::_Exit(0);
  }
  course::testing::write_child_output(dies ? "died after joining\n" : "stalled after joining\n");
  if (!dies) until_rank0_done(context, 45s, [] { return false; });
  std::_Exit(0);
}

}  // namespace

TEST_CASE(kTimeoutRankCase, "[.][06-nccl-rank]") {
  const course::testing::RankContext context = course::testing::rank_context();
  const auto count = static_cast<std::size_t>(env_int("COURSE_RANK_COUNT", 1000));
  const auto seed = static_cast<std::uint64_t>(std::strtoull(env_text("COURSE_RANK_SEED", "1"), nullptr, 10));
  const std::chrono::milliseconds timeout(env_int("COURSE_RANK_TIMEOUT_MS", 5000));
  const ncclUniqueId id = course::testing::share_unique_id(context, 60s);
  const std::vector<float> input = rank_input(context.rank, count, seed);
  // COURSE_PEER (set only for rank 1): "dies" or "stalls" after joining.
  if (const std::string peer = env_text("COURSE_PEER", ""); !peer.empty()) play_peer(context, id, peer == "dies");
  // However this rank's call ends (a result, an exception), a stalled peer is told it may go.
  const course::testing::Owned<std::filesystem::path> done_file(
      done_marker(context, context.rank), [](std::filesystem::path& file) { std::ofstream(file) << "done\n"; });
  RankOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  run_with_watchdog(
      "rank_all_reduce_with_timeout", std::chrono::duration_cast<std::chrono::seconds>(timeout) + 30s,
      "a wait that never gives up: a blocking communicator (ncclConfig_t.blocking = 0 is missing) "
      "or a wait that does not poll ncclCommGetAsyncError against a deadline, or no ncclCommAbort",
      [&] { outcome = rank_all_reduce_with_timeout(context.rank, context.nranks, id, context.rank, input, timeout); });
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::string report = "elapsed_ms " + std::to_string(elapsed) + "\nok " + (outcome.ok ? "1" : "0") + "\n";
  if (outcome.ok)
    report += "sum" + joined(outcome.sum) + "\n";
  else
    report += "error " + (outcome.error.empty() ? std::string("<empty>") : outcome.error) + "\n";
  course::testing::write_child_output(report);
}

TEST_CASE("with every rank present the non-blocking rank returns the sum", "[06-nccl][task:5][gpus:1][points:2]") {
  const int count = require_gpus(1);
  const std::size_t n = 4099;
  const std::vector<Job> jobs = jobs_at_once(count, 520, [&](int g, std::uint64_t seed) {
    auto env = job_env(n, seed);
    env["COURSE_RANK_TIMEOUT_MS"] = "60000";
    return course::testing::launch_ranks(kTimeoutRankCase, g, g, env, 100s);
  });
  for (int g = 1; g <= count; ++g) {
    const auto& launch = jobs[g - 1].launch;
    const std::uint64_t seed = jobs[g - 1].seed;
    INFO(g << " processes, one per GPU");
    for (const auto& rank : launch.ranks) {
      INFO("rank " << rank.rank << " wrote:\n" << rank.output << "\nits log:\n" << last_lines(rank.log));
      REQUIRE(field(rank.output, "ok") == "1");
    }
    check_sums(launch, g, n, seed, "sum");
  }
}

namespace {

// The rank that is started waits for one that is not (or dies): it must give up, not hang.
// A peer that never joins cannot make NCCL report anything: the rank must wait about its timeout.
// A peer that dies may be noticed earlier (a closed connection): then any time up to the timeout.
void check_gives_up(const course::testing::RankLaunch& launch, int survivor, long timeout_ms, bool may_end_early) {
  const auto& rank = launch.ranks[survivor];
  INFO("rank " << survivor << " (exit code " << rank.exit_code << (rank.killed ? ", killed at the time limit" : "")
               << ") wrote:\n"
               << rank.output << "\nits log:\n"
               << last_lines(rank.log));
  REQUIRE(rank.exit_code == 0);
  CHECK(field(rank.output, "ok") == "0");
  const std::string error = field(rank.output, "error");
  INFO("the error must say what went wrong");
  CHECK(!error.empty());
  CHECK(error != "<empty>");
  const long elapsed = std::atol(field(rank.output, "elapsed_ms").c_str());
  INFO("gave up after " << elapsed << " ms with a timeout of " << timeout_ms
                        << " ms: much earlier means an ncclInProgress taken for an error; much later, a wait that "
                           "does not look at the deadline");
  if (!may_end_early) CHECK(elapsed >= timeout_ms * 8 / 10);
  CHECK(elapsed <= timeout_ms + 15000);  // ncclCommAbort may take a few seconds to stop NCCL's threads
}

// Rank 0 against a peer (rank 1) that joins and then dies or stalls: rank 0 gives up and says
// why, and the peer did what the case says it did.
void check_against_peer(bool stalls, std::uint64_t salt) {
  require_gpus(2);
  const long timeout_ms = 5000;
  auto env = job_env(1 << 20, case_seed(salt));
  env["COURSE_RANK_TIMEOUT_MS"] = std::to_string(timeout_ms);
  // NCCL connects the ranks' channels during the first collective unless told to at init. For the
  // stalled peer they are made at init (both ranks are there), so the all-reduce is enqueued at
  // once and only the wait for the stream is left to the deadline.
  if (stalls) env["NCCL_RUNTIME_CONNECT"] = "0";
  const auto launch = course::testing::launch_ranks(kTimeoutRankCase, 2, 2, env, 90s,
                                                    {{1, {{"COURSE_PEER", stalls ? "stalls" : "dies"}}}});
  check_gives_up(launch, 0, timeout_ms, /*may_end_early=*/!stalls);  // NCCL may see a death and report it early
  INFO("rank 1 wrote: " << launch.ranks[1].output);
  CHECK(launch.ranks[1].output.find(stalls ? "stalled after joining" : "died after joining") != std::string::npos);
}

}  // namespace

TEST_CASE("a rank whose peer never joins gives up within its timeout and says why",
          "[06-nccl][task:5][gpus:1][points:3]") {
  require_gpus(1);
  const long timeout_ms = 2000;  // no peer to wait for here: nothing needs more time than the deadline itself
  auto env = job_env(1000, case_seed(540));
  env["COURSE_RANK_TIMEOUT_MS"] = std::to_string(timeout_ms);
  // Two ranks asked for, one started: rank 0 makes the id and waits for rank 1, who never comes.
  const auto launch = course::testing::launch_ranks(kTimeoutRankCase, 1, 2, env, 90s);
  check_gives_up(launch, 0, timeout_ms, false);
}

TEST_CASE("a rank whose peer dies after joining gives up within its timeout and says why",
          "[06-nccl][task:5][gpus:2][points:2][timing]") {
  check_against_peer(/*stalls=*/false, 550);
}

// Rank 1 joins the communicator and never calls the all-reduce, as a process stuck elsewhere
// would: nothing fails, so only rank 0's own deadline ends its wait.
TEST_CASE("a rank whose peer joins and then stalls gives up at its deadline and says why",
          "[06-nccl][task:5][gpus:2][points:2][timing]") {
  check_against_peer(/*stalls=*/true, 560);
}

TEST_CASE("a timeout that is not positive and a rank outside the job are rejected before any NCCL call",
          "[06-nccl][task:5][gpus:0][points:1]") {
  const ncclUniqueId id{};
  const std::vector<float> input = {1.0f};
  CHECK_THROWS_AS(rank_all_reduce_with_timeout(0, 1, id, 0, input, 0ms), std::invalid_argument);
  CHECK_THROWS_AS(rank_all_reduce_with_timeout(0, 1, id, 0, input, -5ms), std::invalid_argument);
  CHECK_THROWS_AS(rank_all_reduce_with_timeout(1, 1, id, 0, input, 1000ms), std::invalid_argument);
  CHECK_THROWS_AS(rank_all_reduce_with_timeout(-1, 2, id, 0, input, 1000ms), std::invalid_argument);
}
