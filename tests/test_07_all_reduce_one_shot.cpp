// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 tests, task 3: the one-shot all-reduce. The same inputs, poisoning and reference as
// the ring's (test_07_all_reduce.cpp); its scratch is poisoned too, so a copy read before it was
// published reads NaN. The handshake is checked with a worker held by a gate, the reuse of scratch
// by two calls back to back with one worker's sum delayed, on one GPU listed several times.
#include <cuda_runtime.h>

#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "all_reduce.h"
#include "common/check.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/workers.h"
#include "test_07_all_reduce_support.h"

using namespace lesson07;
using namespace lesson07_tests;

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("the sum of peers adds 1 to 8 sources in worker order for every length and touches nothing around it",
          "[07-all-reduce][task:3][gpus:1][points:1]") {
  require_gpus(1);
  const course::Stream stream(0);
  for (int sources_count = 1; sources_count <= kMaxWorkers; ++sources_count)
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{6},
                                std::size_t{1025}, (std::size_t{1} << 20) + 3}) {
      std::vector<std::vector<float>> values;
      std::vector<course::DeviceBuffer<float>> sources;
      PeerSources peers;
      peers.count = sources_count;
      for (int j = 0; j < sources_count; ++j) {
        values.push_back(course::random_floats(n, case_seed(300 + 16 * n + static_cast<std::size_t>(j))));
        // Element 0 is -0.0f in every source: their float sum is -0.0f, a sum that starts from 0.0f gives +0.0f.
        if (n > 0) values.back()[0] = -0.0f;
        sources.emplace_back(0, n + 2 * kGuard);
        course::poison_device(sources.back().data(), sources.back().bytes());
        course::testing::upload<float>(sources.back().data() + kGuard, 0, values.back());
        peers.data[j] = sources.back().data() + kGuard;
      }
      const course::DeviceBuffer<float> out(0, n + 2 * kGuard);
      course::poison_device(out.data(), out.bytes());
      enqueue_sum_of_peers(peers, out.data() + kGuard, n, stream);
      stream.synchronize();
      const std::vector<float> got = course::testing::read_back(out.data(), 0, out.size());
      std::size_t wrong = 0, touched = 0;
      for (std::size_t i = 0; i < n; ++i) {
        float expected = values[0][i];                                     // from the first source, not from 0.0f
        for (int j = 1; j < sources_count; ++j) expected += values[j][i];  // in float, in worker order
        wrong += std::bit_cast<std::uint32_t>(got[kGuard + i]) == std::bit_cast<std::uint32_t>(expected) ? 0 : 1;
      }
      for (std::size_t i = 0; i < kGuard; ++i)
        touched += (course::is_poisoned(got[i]) ? 0 : 1) + (course::is_poisoned(got[kGuard + n + i]) ? 0 : 1);
      INFO("enqueue_sum_of_peers of " << sources_count << " sources, n = " << n << ": " << wrong
                                      << " floats differ in their bits from the float sum in worker order that "
                                      << "starts from the first source (element 0: every source holds -0.0f, so "
                                      << "the sum is -0.0f; from 0.0f it would be +0.0f), " << touched
                                      << " poisoned floats around out written");
      CHECK(wrong == 0);
      CHECK(touched == 0);
    }
}

TEST_CASE("the one-shot all-reduce matches a double-precision reference for 1 to 4 workers on one GPU and every count",
          "[07-all-reduce][task:3][gpus:1][points:3]") {
  check_matches_reference(
      "one-shot", [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n) { one_shot_all_reduce(w, b, n); },
      310,
      /*poison_scratch=*/true);
}

TEST_CASE("every one-shot sum is one call of sum over every worker's scratch in worker order",
          "[07-all-reduce][task:3][gpus:1][points:1]") {
  require_gpus(1);
  for (int workers = 2; workers <= 5; ++workers) {
    AllReduceWorkspace workspace(repeated(0, workers), 5000);
    for (const std::size_t count : {std::size_t{1}, std::size_t{5}, std::size_t{4099}}) {
      Buffers buffers(workspace, count, case_seed(370 + count));
      struct SumCall {
        PeerSources sources;
        float* out = nullptr;
        std::size_t n = 0;
        cudaStream_t stream = nullptr;
      };
      std::vector<SumCall> calls;
      const PeerSum noted = [&](const PeerSources& sources, float* out, std::size_t n, cudaStream_t stream) {
        calls.push_back({sources, out, n, stream});
        enqueue_sum_of_peers(sources, out, n, stream);
      };
      one_shot_all_reduce(workspace, buffers.pointers, count, noted);
      wait_for_workers(workspace);
      const std::string what = "one_shot_all_reduce of " + std::to_string(count) + " floats over " +
                               std::to_string(workers) + " workers on GPU 0";
      INFO(what << ": " << calls.size() << " calls of sum; the contract makes one per worker");
      REQUIRE(calls.size() == static_cast<std::size_t>(workers));
      for (int k = 0; k < workers; ++k) {
        const Worker& me = workspace.workers[k];
        std::size_t mine = 0;
        for (const SumCall& call : calls) {
          if (call.stream != me.stream.get()) continue;
          ++mine;
          INFO(what << ": worker " << k << "'s sum must write its own buffer, " << count
                    << " floats, on its stream: out is " << (call.out == buffers.pointers[k] ? "" : "not ")
                    << "buffers[" << k << "], n = " << call.n);
          CHECK(call.out == buffers.pointers[k]);
          CHECK(call.n == count);
          INFO(what << ": worker " << k << "'s sum has " << call.sources.count << " sources; the contract's are the "
                    << workers << " scratches, its own included");
          REQUIRE(call.sources.count == workers);
          for (int j = 0; j < workers; ++j) {
            int scratch_of = -1;
            for (int i = 0; i < workers; ++i)
              if (call.sources.data[j] == workspace.workers[i].scratch.data()) scratch_of = i;
            INFO(what << ": worker " << k << "'s source " << j << " is "
                      << (scratch_of >= 0 ? "worker " + std::to_string(scratch_of) + "'s scratch"
                                          : std::string("no worker's scratch (a buffer read in place?)"))
                      << "; it must be worker " << j << "'s: the scratches in worker order, so that the float sum "
                      << "adds in the contract's order");
            CHECK(scratch_of == j);
          }
        }
        INFO(what << ": worker " << k << " made " << mine << " calls of sum on its stream; the contract makes one");
        CHECK(mine == 1);
      }
      buffers.check(what);
    }
  }
}

TEST_CASE("the one-shot call returns at once and reads no peer's copy before it is published",
          "[07-all-reduce][task:3][gpus:1][points:2][overlap]") {
  require_gpus(1);
  check_behind_held_workers(
      "one_shot_all_reduce",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n) { one_shot_all_reduce(w, b, n); },
      case_seed(330));
}

TEST_CASE("a second one-shot call never overwrites a copy that a peer is still reading",
          "[07-all-reduce][task:3][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t count = 1000003;
  for (int workers = 2; workers <= 4; ++workers) {
    AllReduceWorkspace workspace(repeated(0, workers));
    Buffers first(workspace, count, case_seed(340)), second(workspace, count, case_seed(341));
    one_shot_all_reduce(workspace, first.pointers, count);  // loads every kernel it uses
    wait_for_workers(workspace);
    first.reset();
    bool delayed = false;
    const PeerSum slow_worker_1 = [&](const PeerSources& sources, float* out, std::size_t n, cudaStream_t stream) {
      if (!delayed && stream == workspace.workers[1].stream.get()) {  // worker 1's sum, first call only
        enqueue_delay(stream, kLate);
        delayed = true;
      }
      enqueue_sum_of_peers(sources, out, n, stream);
    };
    run_with_watchdog("two one-shot calls, worker 1's first sum delayed", kGateLimit, kGateHint, [&] {
      one_shot_all_reduce(workspace, first.pointers, count, slow_worker_1);
      one_shot_all_reduce(workspace, second.pointers, count);  // right away: its copies reuse the scratch
      wait_for_workers(workspace);
    });
    REQUIRE(delayed);
    first.check(std::to_string(workers) +
                " workers, the first of two calls, worker 1's sum delayed (a wrong sum: a peer published the second "
                "call's copy into its scratch while worker 1 was still reading the first)");
    second.check(std::to_string(workers) + " workers, the second of two calls");
  }
}

TEST_CASE("on distinct GPUs the one-shot matches NCCL's all-reduce of the same data and keeps the caller's device",
          "[07-all-reduce][task:3][gpus:2][points:2]") {
  check_on_distinct_gpus(
      "one-shot",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n, LaunchDevices& launches) {
        one_shot_all_reduce(w, b, n, launches.sum());
      },
      std::size_t{1} << 21, case_seed(350));
}

TEST_CASE("one-shot calls larger than the scratch or whose buffers do not fit are rejected before any GPU work",
          "[07-all-reduce][task:3][gpus:1][points:1]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3), 100);
  Buffers buffers(workspace, 101, case_seed(360));
  const std::vector<float*> two = {buffers.pointers[0], buffers.pointers[1]};
  const std::vector<float*> with_null = {buffers.pointers[0], nullptr, buffers.pointers[2]};
  CHECK_THROWS_AS(one_shot_all_reduce(workspace, buffers.pointers, 101), std::invalid_argument);
  CHECK_THROWS_AS(one_shot_all_reduce(workspace, two, 100), std::invalid_argument);
  CHECK_THROWS_AS(one_shot_all_reduce(workspace, with_null, 100), std::invalid_argument);
  {
    INFO(
        "count 0 or one worker is nothing to do, but only after the checks: a list that does not fit the workers "
        "is rejected all the same");
    CHECK_THROWS_AS(one_shot_all_reduce(workspace, two, 0), std::invalid_argument);
    AllReduceWorkspace one(repeated(0, 1), 100);
    CHECK_THROWS_AS(one_shot_all_reduce(one, two, 100), std::invalid_argument);
  }
  one_shot_all_reduce(workspace, with_null, 0);  // nothing to do: a nullptr is fine
  wait_for_workers(workspace);
  for (int k = 0; k < 3; ++k) {
    INFO("buffer " << k << " after five rejected calls and one of count 0: it must still hold its input");
    CHECK(buffers.result(k) == buffers.inputs[k]);
  }
}
