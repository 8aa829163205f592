// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 tests, task 6: the dispatcher and its measured limits. Which algorithm ran is seen
// in the scratches: the one-shot publishes every input into `scratch`, the one-kernel
// into `kernel_scratch`, the LL one-shot into its peers' `ll_inbox`, the ring touches none, so a
// poisoned scratch that stays poisoned says who did not run. The crossover rule is checked on
// made-up timing tables; the measurement on one GPU is checked for its shape, never its numbers.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <stdexcept>
#include <vector>

#include "all_reduce.h"
#include "common/check.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "test_07_all_reduce_support.h"

using namespace lesson07;
using namespace lesson07_tests;

namespace {

// How many floats of each worker's scratch[0, count) (or of its whole kernel_scratch, both halves)
// are no longer poisoned.
std::size_t scratch_written(const AllReduceWorkspace& workspace, std::size_t count, bool kernel_scratch = false) {
  std::size_t written = 0;
  for (const Worker& worker : workspace.workers)
    for (const float v : kernel_scratch ? course::testing::read_back(worker.kernel_scratch.data(), worker.device,
                                                                     worker.kernel_scratch.size())
                                        : course::testing::read_back(worker.scratch.data(), worker.device, count))
      written += course::is_poisoned(v) ? 0 : 1;
  return written;
}

}  // namespace

// ---- Task 6 ---------------------------------------------------------------------------------

TEST_CASE("the crossover is the smallest count from which the ring stays faster",
          "[07-all-reduce][task:6][gpus:0][points:1]") {
  const std::vector<AlgorithmTiming> ring_wins_late = {
      {8, 0.010, 0.030}, {1024, 0.012, 0.011}, {65536, 0.020, 0.025}, {1 << 20, 0.080, 0.050}, {1 << 24, 1.2, 0.6}};
  CHECK(crossover_from(ring_wins_late) == std::size_t{1} << 20);  // not 1024: the ring lost again at 65536
  const std::vector<AlgorithmTiming> ring_always = {{8, 0.03, 0.02}, {1024, 0.04, 0.03}};
  CHECK(crossover_from(ring_always) == 8);
  const std::vector<AlgorithmTiming> one_shot_always = {{8, 0.01, 0.02}, {1024, 0.02, 0.03}};
  CHECK(crossover_from(one_shot_always) == kRingNeverWins);
  const std::vector<AlgorithmTiming> tie_at_the_end = {{8, 0.03, 0.02}, {1024, 0.04, 0.04}};
  CHECK(crossover_from(tie_at_the_end) == kRingNeverWins);  // a tie is not faster
  CHECK_THROWS_AS(crossover_from({}), std::invalid_argument);
  // With the one-kernel measured, the ring must beat it too.
  const std::vector<AlgorithmTiming> kernel_wins_small = {
      {8, 0.030, 0.020, 0.005}, {1024, 0.040, 0.030, 0.035}, {65536, 0.060, 0.050, 0.055}};
  CHECK(crossover_from(kernel_wins_small) == 1024);  // not 8: the one-kernel beats the ring there
  const std::vector<AlgorithmTiming> kernel_always = {{8, 0.030, 0.020, 0.010}, {1024, 0.040, 0.030, 0.020}};
  CHECK(crossover_from(kernel_always) == kRingNeverWins);
  // With the LL one-shot measured where its inbox holds the count, the ring must beat it there too.
  const std::vector<AlgorithmTiming> ll_wins_small = {
      {8, 0.030, 0.020, 0.025, 0.004}, {1024, 0.040, 0.030, 0.035, 0.035}, {65536, 0.060, 0.050, 0.055, 0}};
  CHECK(crossover_from(ll_wins_small) == 1024);  // not 8: the LL one-shot beats the ring there
}

TEST_CASE(
    "the LL one-shot's limit is the smallest count from which it stays no faster than the one-shot or the "
    "one-kernel",
    "[07-all-reduce][task:6][gpus:0][points:1]") {
  const std::vector<AlgorithmTiming> ll_wins_small = {{8, 0.030, 0.020, 0.010, 0.005},
                                                      {1024, 0.040, 0.030, 0.020, 0.025},
                                                      {65536, 0.060, 0.050, 0.055, 0.045},
                                                      {1 << 20, 0.2, 0.1, 0.2, 0}};
  CHECK(ll_one_shot_below_from(ll_wins_small) == std::size_t{1} << 20);  // it won again at 65536
  const std::vector<AlgorithmTiming> beaten_by_the_one_kernel = {{8, 0.03, 0.02, 0.004, 0.005},
                                                                 {1024, 0.04, 0.03, 0.02, 0.025}};
  CHECK(ll_one_shot_below_from(beaten_by_the_one_kernel) == 8);
  const std::vector<AlgorithmTiming> one_kernel_not_measured = {{8, 0.03, 0.02, 0, 0.005}, {1024, 0.04, 0.03, 0, 0.04}};
  CHECK(ll_one_shot_below_from(one_kernel_not_measured) == 1024);  // a tie with the one-shot is not faster
  const std::vector<AlgorithmTiming> ll_always = {{8, 0.03, 0.02, 0.01, 0.005}, {1024, 0.04, 0.03, 0.02, 0.01}};
  CHECK(ll_one_shot_below_from(ll_always) == kNeverFromHere);
  const std::vector<AlgorithmTiming> not_measured = {{8, 0.03, 0.02, 0.01}, {1024, 0.04, 0.03, 0.02}};
  CHECK(ll_one_shot_below_from(not_measured) == 8);  // never measured: never chosen
  CHECK_THROWS_AS(ll_one_shot_below_from({}), std::invalid_argument);
}

TEST_CASE("the one-kernel's limit is the smallest count from which it stays no faster than the one-shot",
          "[07-all-reduce][task:6][gpus:0][points:1]") {
  const std::vector<AlgorithmTiming> kernel_wins_small = {
      {8, 0.030, 0.020, 0.005}, {1024, 0.040, 0.030, 0.041}, {65536, 0.060, 0.050, 0.055}, {1 << 20, 0.2, 0.1, 0.2}};
  CHECK(one_kernel_below_from(kernel_wins_small) == std::size_t{1} << 20);  // it won again at 65536
  const std::vector<AlgorithmTiming> kernel_always = {{8, 0.03, 0.02, 0.01}, {1024, 0.04, 0.03, 0.02}};
  CHECK(one_kernel_below_from(kernel_always) == kNeverFromHere);
  const std::vector<AlgorithmTiming> kernel_never = {{8, 0.03, 0.02, 0.04}, {1024, 0.04, 0.03, 0.04}};
  CHECK(one_kernel_below_from(kernel_never) == 8);  // a tie is not faster
  const std::vector<AlgorithmTiming> not_measured = {{8, 0.03, 0.02}, {1024, 0.04, 0.03}};
  CHECK(one_kernel_below_from(not_measured) == 8);  // never measured: never chosen
  CHECK_THROWS_AS(one_kernel_below_from({}), std::invalid_argument);
}

TEST_CASE("the dispatcher runs the one-shot below the crossover and the ring from it on",
          "[07-all-reduce][task:6][gpus:1][points:2]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3), 4096);
  CHECK(workspace.crossover_count == kDefaultCrossoverCount);  // until task 6 measures one
  workspace.crossover_count = 1000;
  CHECK(choose_algorithm(workspace, 0) == Algorithm::one_shot);
  CHECK(choose_algorithm(workspace, 999) == Algorithm::one_shot);
  CHECK(choose_algorithm(workspace, 1000) == Algorithm::ring);
  CHECK(choose_algorithm(workspace, 4097) == Algorithm::ring);
  workspace.crossover_count = kRingNeverWins;
  CHECK(choose_algorithm(workspace, 4096) == Algorithm::one_shot);
  CHECK(choose_algorithm(workspace, 4097) == Algorithm::ring);  // the scratch holds 4096 floats
  workspace.crossover_count = 1000;
  for (const std::size_t count : {std::size_t{5}, std::size_t{999}, std::size_t{1000}, std::size_t{3001}}) {
    Buffers buffers(workspace, count, case_seed(400 + count));
    poison_scratch(workspace);
    all_reduce(workspace, buffers.pointers, count);
    wait_for_workers(workspace);
    buffers.check("all_reduce with the crossover at 1000, count " + std::to_string(count));
    const bool one_shot_ran = scratch_written(workspace, count) > 0;
    INFO("count " << count << " with the crossover at 1000: the "
                  << (one_shot_ran ? "one-shot ran (it published into the scratch)"
                                   : "ring ran (the scratch stayed poisoned)"));
    CHECK(one_shot_ran == (count < 1000));
  }
}

TEST_CASE("the dispatcher runs the one-kernel below its limit, the one-shot up to the crossover, the ring after",
          "[07-all-reduce][task:6][gpus:1][points:1][concurrent]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3), 4096);
  CHECK(workspace.one_kernel_below == 0);  // until task 6 measures one: never the one-kernel
  workspace.crossover_count = 1000;
  workspace.one_kernel_below = 100;
  CHECK(choose_algorithm(workspace, 0) == Algorithm::one_kernel);
  CHECK(choose_algorithm(workspace, 99) == Algorithm::one_kernel);
  CHECK(choose_algorithm(workspace, 100) == Algorithm::one_shot);
  CHECK(choose_algorithm(workspace, 1000) == Algorithm::ring);
  workspace.one_kernel_below = kNeverFromHere;
  CHECK(choose_algorithm(workspace, 999) == Algorithm::one_kernel);
  CHECK(choose_algorithm(workspace, 1000) == Algorithm::ring);  // the ring's crossover comes first
  CHECK(choose_algorithm(workspace, 4097) == Algorithm::ring);  // the scratch holds 4096 floats
  workspace.one_kernel_below = 100;
  for (const std::size_t count : {std::size_t{5}, std::size_t{99}, std::size_t{100}, std::size_t{1000}}) {
    Buffers buffers(workspace, count, case_seed(405 + count));
    poison_scratch(workspace);
    all_reduce(workspace, buffers.pointers, count);
    wait_for_workers(workspace);
    buffers.check("all_reduce with the one-kernel below 100 and the ring from 1000, count " + std::to_string(count));
    const bool kernel_ran = scratch_written(workspace, count, true) > 0,
               events_ran = scratch_written(workspace, count) > 0;
    INFO("count " << count << ", one-kernel below 100, ring from 1000: the one-kernel "
                  << (kernel_ran ? "ran" : "did not run") << ", the one-shot " << (events_ran ? "ran" : "did not run"));
    CHECK(kernel_ran == (count < 100));
    CHECK(events_ran == (count >= 100 && count < 1000));
  }
}

TEST_CASE("the dispatcher runs the LL one-shot below its limit where its inbox holds the count, then the others",
          "[07-all-reduce][task:6][gpus:1][points:1][concurrent]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3), 4096, 64);  // the LL one-shot takes 64 floats
  CHECK(workspace.ll_one_shot_below == 0);                 // until task 6 measures one: never the LL one-shot
  workspace.crossover_count = 1000;
  workspace.one_kernel_below = 500;
  workspace.ll_one_shot_below = 50;
  CHECK(choose_algorithm(workspace, 0) == Algorithm::ll_one_shot);
  CHECK(choose_algorithm(workspace, 49) == Algorithm::ll_one_shot);
  CHECK(choose_algorithm(workspace, 50) == Algorithm::one_kernel);
  CHECK(choose_algorithm(workspace, 500) == Algorithm::one_shot);
  CHECK(choose_algorithm(workspace, 1000) == Algorithm::ring);
  workspace.ll_one_shot_below = kNeverFromHere;
  CHECK(choose_algorithm(workspace, 64) == Algorithm::ll_one_shot);
  CHECK(choose_algorithm(workspace, 65) == Algorithm::one_kernel);  // the inbox holds 64 floats
  CHECK(choose_algorithm(workspace, 1000) == Algorithm::ring);      // the ring's crossover comes first
  workspace.ll_one_shot_below = 50;
  for (const std::size_t count : {std::size_t{5}, std::size_t{49}, std::size_t{50}, std::size_t{700}}) {
    Buffers buffers(workspace, count, case_seed(415 + count));
    poison_scratch(workspace);
    all_reduce(workspace, buffers.pointers, count);
    wait_for_workers(workspace);
    buffers.check("all_reduce with the LL one-shot below 50, the one-kernel below 500, count " + std::to_string(count));
    std::size_t inbox_written = 0;
    for (const Worker& worker : workspace.workers) {
      std::vector<LlLine> inbox(worker.ll_inbox.size());
      const course::DeviceGuard on_device(worker.device);
      CUDA_CHECK(cudaMemcpy(inbox.data(), worker.ll_inbox.data(), worker.ll_inbox.bytes(), cudaMemcpyDeviceToHost));
      for (const LlLine& line : inbox) inbox_written += course::is_poisoned(line) ? 0 : 1;
    }
    const bool ll_ran = inbox_written > 0, kernel_ran = scratch_written(workspace, count, true) > 0;
    INFO("count " << count << ", LL one-shot below 50, one-kernel below 500: the LL one-shot "
                  << (ll_ran ? "ran" : "did not run") << " (its inboxes), the one-kernel "
                  << (kernel_ran ? "ran" : "did not run"));
    CHECK(ll_ran == (count < 50));
    CHECK(kernel_ran == (count >= 50 && count < 500));
  }
}

TEST_CASE(
    "measuring the crossover times the four algorithms at every count and keeps the three limits in the "
    "workspace",
    "[07-all-reduce][task:6][gpus:1][points:1][concurrent]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 2), std::size_t{1} << 20);
  Buffers buffers(workspace, std::size_t{1} << 20, case_seed(410));
  const std::vector<std::size_t> counts = {256, 65536, std::size_t{1} << 20};
  const std::vector<AlgorithmTiming> rows = measure_crossover(workspace, buffers.pointers, counts, 1, 5);
  REQUIRE(rows.size() == counts.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i << ": count " << rows[i].count << ", one-shot " << rows[i].one_shot_ms << " ms, ring "
                << rows[i].ring_ms << " ms");
    CHECK(rows[i].count == counts[i]);
    CHECK(rows[i].one_shot_ms > 0);
    CHECK(rows[i].ring_ms > 0);
    CHECK(rows[i].one_kernel_ms > 0);
    INFO("the LL one-shot is timed where its inbox holds the count ("
         << workspace.ll_max_count << " floats): " << rows[i].ll_one_shot_ms << " ms");
    CHECK((rows[i].ll_one_shot_ms > 0) == (rows[i].count <= workspace.ll_max_count));
  }
  CHECK(workspace.crossover_count == crossover_from(rows));
  CHECK(workspace.one_kernel_below == one_kernel_below_from(rows));
  CHECK(workspace.ll_one_shot_below == ll_one_shot_below_from(rows));
  workspace.crossover_count = 12345;
  workspace.one_kernel_below = 54321;
  workspace.ll_one_shot_below = 11111;
  const std::vector<std::size_t> none, descending = {4096, 256}, with_zero = {0, 256},
                                       too_large = {256, (std::size_t{1} << 20) + 1};
  CHECK_THROWS_AS(measure_crossover(workspace, buffers.pointers, none), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(workspace, buffers.pointers, descending), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(workspace, buffers.pointers, with_zero), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(workspace, buffers.pointers, too_large), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(workspace, buffers.pointers, counts, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(workspace, buffers.pointers, counts, -1, 5), std::invalid_argument);
  CHECK(workspace.crossover_count == 12345);  // a rejected request changes nothing
  CHECK(workspace.one_kernel_below == 54321);
  CHECK(workspace.ll_one_shot_below == 11111);
}
