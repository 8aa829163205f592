// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06 tests, tasks 1, 4 and 6: making communicators, and counting bandwidth. Task 1 makes one
// per device from one process (ncclCommInitAll); NCCL allows one rank per GPU, so these cases run
// for every count of distinct GPUs from 1 to the machine's, and on one GPU that is one rank. Task 4
// runs one process per GPU: the case starts this same program once per rank
// (common/testing/rank_launcher.h), each running the hidden case below, which calls the student's
// code for one rank and writes what it got. Inputs are small random integers stored as floats, so
// every sum is exact in float; every call into NCCL runs under the watchdog. Task 6's bandwidth
// figures are checked against nccl-tests' factors on made-up times (no GPU). The shared helpers are
// in test_06_nccl_support.h; task 2 is in test_06_nccl_all_reduce.cpp, task 3 in
// test_06_nccl_collectives.cpp, task 5 in test_06_nccl_timeouts.cpp.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/testing/gpu_test.h"
#include "common/testing/rank_launcher.h"
#include "nccl_collectives.h"
#include "test_06_nccl_support.h"

using namespace lesson06;
using namespace lesson06_tests;
using Catch::Matchers::WithinRel;

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("a communicator per device knows its rank the count and its device", "[06-nccl][task:1][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (int g = 1; g <= count; ++g) {
    const std::vector<int> devices = first_devices(g);
    CUDA_CHECK(cudaSetDevice(g - 1));
    std::vector<ncclComm_t> comms;
    run_with_watchdog("make_communicators", kCallLimit, "ncclCommInitAll waits for ranks that never come",
                      [&] { comms = make_communicators(devices); });
    CHECK(current_device() == g - 1);
    REQUIRE(comms.size() == devices.size());
    for (int k = 0; k < g; ++k) {
      INFO(g << " GPUs, communicator " << k);
      int ranks = -1, rank = -1, device = -1;
      NCCL_CHECK(ncclCommCount(comms[k], &ranks));
      NCCL_CHECK(ncclCommUserRank(comms[k], &rank));
      NCCL_CHECK(ncclCommCuDevice(comms[k], &device));
      CHECK(ranks == g);
      CHECK(rank == k);
      CHECK(device == devices[k]);
    }
    run_with_watchdog("destroy_communicators", kCallLimit, "ncclCommDestroy waits for work that never ends",
                      [&] { destroy_communicators(comms); });
    CHECK(comms.empty());
    std::vector<ncclComm_t> none = {nullptr};
    destroy_communicators(none);  // null entries are skipped
    CHECK(none.empty());
  }
}

TEST_CASE("rank k runs on the k-th listed device when the list is not in order",
          "[06-nccl][task:1][gpus:2][points:2]") {
  const int count = require_gpus(2);
  std::vector<int> devices = first_devices(count);
  std::reverse(devices.begin(), devices.end());
  const Communicators c(devices);
  for (int k = 0; k < c.size(); ++k) {
    int rank = -1, device = -1;
    NCCL_CHECK(ncclCommUserRank(c.comms[k], &rank));
    NCCL_CHECK(ncclCommCuDevice(c.comms[k], &device));
    INFO("communicator " << k << " of the list {last GPU, ..., GPU 0}");
    CHECK(rank == k);
    CHECK(device == devices[k]);
  }
}

TEST_CASE("device lists NCCL cannot serve are rejected before any NCCL call", "[06-nccl][task:1][gpus:0][points:1]") {
  CHECK_THROWS_AS(make_communicators(std::vector<int>{}), std::invalid_argument);
  CHECK_THROWS_AS(make_communicators(std::vector<int>{0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(make_communicators(std::vector<int>{1, 0, 1}), std::invalid_argument);
}

TEST_CASE("a device NCCL refuses makes make_communicators throw an ApiError", "[06-nccl][task:1][gpus:1][points:1]") {
  // A device number one past the last: ncclCommInitAll answers ncclInvalidArgument before it makes
  // anything. The contract asks for course::ApiError (NCCL_CHECK throws it), not for a list of null
  // communicators that fail later, far from the cause.
  const int count = require_gpus(1);
  for (const std::vector<int>& devices : {std::vector<int>{count}, std::vector<int>{0, count}}) {
    INFO(devices.size() << " devices listed, the last one GPU " << count << ", on a machine with GPUs 0 to "
                        << count - 1);
    CHECK_THROWS_AS(make_communicators(devices), course::ApiError);
  }
}

// ---- Task 4 ---------------------------------------------------------------------------------

namespace {

constexpr const char* kRankCase = "rank: all-reduce of this rank's numbers";

}  // namespace

TEST_CASE(kRankCase, "[.][06-nccl-rank]") {
  const course::testing::RankContext context = course::testing::rank_context();
  const auto count = static_cast<std::size_t>(env_int("COURSE_RANK_COUNT", 1000));
  const auto seed = static_cast<std::uint64_t>(std::strtoull(env_text("COURSE_RANK_SEED", "1"), nullptr, 10));
  const ncclUniqueId id = course::testing::share_unique_id(context, 60s);
  const std::vector<float> input = rank_input(context.rank, count, seed);
  std::vector<float> sum;
  run_with_watchdog("rank_all_reduce", kCallLimit,
                    "a rank whose communicator never forms: every rank must join with the same id and nranks, "
                    "each on its own device",
                    [&] { sum = rank_all_reduce(context.rank, context.nranks, id, context.rank, input); });
  course::testing::write_child_output("sum" + joined(sum) + "\n");
}

TEST_CASE("one process per GPU joins with rank 0's id and every rank gets the sum",
          "[06-nccl][task:4][gpus:1][points:3]") {
  const int count = require_gpus(1);
  const std::size_t n = 100003;
  const std::vector<Job> jobs = jobs_at_once(count, 500, [&](int g, std::uint64_t seed) {
    return course::testing::launch_ranks(kRankCase, g, g, job_env(n, seed), 90s);
  });
  for (int g = 1; g <= count; ++g) {
    const auto& launch = jobs[g - 1].launch;
    INFO(g << " processes, one per GPU" << (launch.timed_out ? "; the job was killed at its time limit" : ""));
    check_sums(launch, g, n, jobs[g - 1].seed, "sum");
  }
}

TEST_CASE("a rank outside the job is rejected before any NCCL call", "[06-nccl][task:4][gpus:0][points:1]") {
  const ncclUniqueId id{};
  const std::vector<float> input = {1.0f};
  CHECK_THROWS_AS(rank_all_reduce(-1, 2, id, 0, input), std::invalid_argument);
  CHECK_THROWS_AS(rank_all_reduce(2, 2, id, 0, input), std::invalid_argument);
  CHECK_THROWS_AS(rank_all_reduce(0, 0, id, 0, input), std::invalid_argument);
}

// ---- Task 6 ---------------------------------------------------------------------------------

TEST_CASE("bus bandwidth uses nccl-tests' factors for every collective and rank count",
          "[06-nccl][task:6][gpus:0][points:2]") {
  // The contract fixes the factors, not how they are computed: 2 * (n - 1) / n and 2 * (1 - 1.0 / n)
  // differ in the last bit for n = 3 and 7. A relative 1e-12 (thousands of units in the last place
  // of a double; 0 stays exactly 0) accepts any way of writing them and no other factor: a wrong
  // formula is off by far more ((n - 1) / n against n / (n + 1) at n = 16 is 0.4% away).
  constexpr double kRel = 1e-12;
  for (int n = 1; n <= 16; ++n) {
    INFO(n << " ranks");
    const double d = n;
    CHECK_THAT(bus_factor(Collective::all_reduce, n), WithinRel(2 * (d - 1) / d, kRel));
    CHECK_THAT(bus_factor(Collective::all_gather, n), WithinRel((d - 1) / d, kRel));
    CHECK_THAT(bus_factor(Collective::reduce_scatter, n), WithinRel((d - 1) / d, kRel));
    CHECK_THAT(bus_factor(Collective::broadcast, n), WithinRel(1.0, kRel));
    CHECK_THAT(bus_factor(Collective::reduce, n), WithinRel(1.0, kRel));
  }
  // bytes / seconds / 1e9 and bytes / (seconds * 1e9) may differ in the last bit: the same tolerance.
  CHECK_THAT(algbw_gb_per_s(1'000'000'000, 0.5), WithinRel(2.0, kRel));  // GB = 10^9 bytes, not 2^30
  CHECK(algbw_gb_per_s(0, 1.0) == 0.0);
  CHECK_THAT(algbw_gb_per_s(std::size_t{1} << 30, 1e-3), WithinRel(1073.741824, kRel));
  // 512 MiB all-reduced on 4 ranks in 2.5 ms: algbw 214.7 GB/s, busbw 1.5 times that.
  const std::size_t bytes = std::size_t{512} << 20;
  const double algbw = algbw_gb_per_s(bytes, 2.5e-3);
  CHECK(std::abs(busbw_gb_per_s(Collective::all_reduce, bytes, 2.5e-3, 4) - 1.5 * algbw) <= 1e-12 * algbw);
  CHECK(std::abs(busbw_gb_per_s(Collective::all_gather, bytes, 2.5e-3, 4) - 0.75 * algbw) <= 1e-12 * algbw);
  CHECK_THAT(busbw_gb_per_s(Collective::broadcast, bytes, 2.5e-3, 4), WithinRel(algbw, kRel));
  CHECK(busbw_gb_per_s(Collective::all_reduce, bytes, 2.5e-3, 1) == 0.0);  // one rank moves nothing: exactly 0
}

TEST_CASE("bandwidth of a time that is not positive or of fewer than one rank is rejected",
          "[06-nccl][task:6][gpus:0][points:1]") {
  CHECK_THROWS_AS(algbw_gb_per_s(8, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(algbw_gb_per_s(8, -1.0), std::invalid_argument);
  CHECK_THROWS_AS(algbw_gb_per_s(8, std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK_THROWS_AS(algbw_gb_per_s(8, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  CHECK_THROWS_AS(bus_factor(Collective::all_reduce, 0), std::invalid_argument);
  CHECK_THROWS_AS(busbw_gb_per_s(Collective::broadcast, 8, 1.0, 0), std::invalid_argument);
}
