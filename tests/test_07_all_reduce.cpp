// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 tests, tasks 1 and 2: the ring all-reduce and its cost. Inputs are random floats in
// [-1, 1), seeded; every buffer sits between poisoned floats; results are compared with a
// double-precision reference within W^2 x 2^-24 (the ring adds in another order) and with each
// other bit for bit. Order across workers is checked by holding one worker's stream with a gate
// (a host function that blocks it until the test opens it) or delaying one worker's step, on one
// GPU listed several times, never by timing. The one-shot (task 3) and the dispatcher (task 4)
// are in test_07_all_reduce_one_shot.cpp and test_07_all_reduce_dispatch.cpp.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "all_reduce.h"
#include "common/check.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/workers.h"
#include "test_07_all_reduce_support.h"

using namespace lesson07;
using namespace lesson07_tests;

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("ring chunks tile the buffer in order from 16-byte boundaries with the short ones last",
          "[07-all-reduce][task:1][gpus:0][points:1]") {
  CHECK(ring_chunk(10, 4, 0) == course::Range{0, 4});  // ceil(10 / 4) = 3, rounded up to 4
  CHECK(ring_chunk(10, 4, 2) == course::Range{8, 10});
  CHECK(ring_chunk(10, 4, 3) == course::Range{10, 10});
  CHECK(ring_chunk(100, 3, 2) == course::Range{72, 100});  // 34 rounded up to 36
  CHECK(ring_chunk(5, 4, 1) == course::Range{4, 5});
  CHECK(ring_chunk(0, 3, 1) == course::Range{0, 0});
  for (int workers = 1; workers <= kMaxWorkers; ++workers)
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{7},
                                    std::size_t{9}, std::size_t{31}, std::size_t{33}, std::size_t{1000003},
                                    std::size_t{4099} * static_cast<std::size_t>(workers) + 1}) {
      const std::size_t w = static_cast<std::size_t>(workers);
      const std::size_t per = ((count + w - 1) / w + 3) / 4 * 4;
      std::size_t next = 0;
      for (int c = 0; c < workers; ++c) {
        const course::Range r = ring_chunk(count, workers, c);
        INFO("ring_chunk(" << count << ", " << workers << ", " << c << ") = [" << r.begin << ", " << r.end
                           << "): chunks follow each other, start on a multiple of 4 floats and hold " << per
                           << " floats until the end of the buffer cuts them");
        CHECK(r.begin == next);
        CHECK((r.begin % 4 == 0 || r.empty()));
        CHECK(r.size() == std::min(per, count - r.begin));
        next = r.end;
      }
      CHECK(next == count);
    }
  CHECK_THROWS_AS(ring_chunk(10, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(ring_chunk(10, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(ring_chunk(10, 3, -1), std::invalid_argument);
}

TEST_CASE("a ring step adds or copies every length and touches nothing around it",
          "[07-all-reduce][task:1][gpus:1][points:1]") {
  require_gpus(1);
  const course::Stream stream(0);
  for (const bool add : {true, false})
    for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4},
                                std::size_t{5}, std::size_t{7}, std::size_t{1023}, std::size_t{1025}, std::size_t{4097},
                                (std::size_t{1} << 20) + 3, 3 * (std::size_t{1} << 22) + 1}) {
      const std::vector<float> src_values = course::random_floats(n, case_seed(110 + n));
      const std::vector<float> dst_values = course::random_floats(n, case_seed(111 + n));
      const course::DeviceBuffer<float> src(0, n + 2 * kGuard), dst(0, n + 2 * kGuard);
      course::poison_device(src.data(), src.bytes());
      course::poison_device(dst.data(), dst.bytes());
      course::testing::upload<float>(src.data() + kGuard, 0, src_values);
      course::testing::upload<float>(dst.data() + kGuard, 0, dst_values);
      enqueue_ring_step(src.data() + kGuard, dst.data() + kGuard, n, add, stream);
      stream.synchronize();
      const std::vector<float> got = course::testing::read_back(dst.data(), 0, dst.size());
      std::size_t wrong = 0, first_wrong = n, touched = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float expected = add ? dst_values[i] + src_values[i] : src_values[i];
        if (!(got[kGuard + i] == expected)) {
          ++wrong;
          first_wrong = std::min(first_wrong, i);
        }
      }
      for (std::size_t i = 0; i < kGuard; ++i)
        touched += (course::is_poisoned(got[i]) ? 0 : 1) + (course::is_poisoned(got[kGuard + n + i]) ? 0 : 1);
      INFO("enqueue_ring_step(" << (add ? "add" : "copy") << ", n = " << n << "): " << wrong
                                << " floats wrong (first at " << first_wrong << "), " << touched
                                << " poisoned floats around dst written");
      CHECK(wrong == 0);
      CHECK(touched == 0);
    }
}

TEST_CASE("the ring all-reduce matches a double-precision reference for 1 to 4 workers on one GPU and every count",
          "[07-all-reduce][task:1][gpus:1][points:3]") {
  check_matches_reference(
      "ring", [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n) { ring_all_reduce(w, b, n); }, 120,
      /*poison_scratch=*/false);
}

TEST_CASE("the ring call returns at once and no step reads a chunk before its left neighbour wrote it",
          "[07-all-reduce][task:1][gpus:1][points:3][overlap]") {
  require_gpus(1);
  check_behind_held_workers(
      "ring_all_reduce",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n) { ring_all_reduce(w, b, n); },
      case_seed(130));
}

TEST_CASE("each buffer goes back to its worker's stream only after its right neighbour's last read",
          "[07-all-reduce][task:1][gpus:1][points:1]") {
  require_gpus(1);
  const std::size_t count = 1000003;
  for (int workers = 2; workers <= 3; ++workers) {
    AllReduceWorkspace workspace(repeated(0, workers));
    Buffers buffers(workspace, count, case_seed(140));
    ring_all_reduce(workspace, buffers.pointers, count);  // loads every kernel it uses
    wait_for_workers(workspace);
    buffers.reset();
    bool delayed = false;
    const RingStep slow_worker_1 = [&](const float* src, float* dst, std::size_t n, bool add, cudaStream_t stream) {
      if (!add && !delayed && stream == workspace.workers[1].stream.get()) {  // worker 1's first all-gather step
        enqueue_delay(stream, 300ms);
        delayed = true;
      }
      enqueue_ring_step(src, dst, n, add, stream);
    };
    run_with_watchdog("ring_all_reduce with worker 1's all-gather delayed", kGateLimit, kGateHint, [&] {
      ring_all_reduce(workspace, buffers.pointers, count, slow_worker_1);
      // The caller reuses buffer 0 right after the call, in the order of worker 0's stream.
      CUDA_CHECK(cudaMemsetAsync(buffers.pointers[0], 0xFF, count * sizeof(float), workspace.workers[0].stream));
      wait_for_workers(workspace);
    });
    REQUIRE(delayed);
    buffers.check(std::to_string(workers) +
                      " workers, worker 1 delayed before its all-gather, buffer 0 overwritten on worker 0's stream "
                      "after the call (NaN: worker 1 read buffer 0 after the call had handed it back; worker 0's "
                      "stream must wait for its right neighbour's last step)",
                  0);
  }
}

TEST_CASE("on distinct GPUs the ring matches NCCL's all-reduce of the same data and keeps the caller's device",
          "[07-all-reduce][task:1][gpus:2][points:2]") {
  check_on_distinct_gpus(
      "ring",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n, LaunchDevices& launches) {
        ring_all_reduce(w, b, n, launches.step());
      },
      kDefaultOneShotMaxCount, case_seed(150));
}

TEST_CASE("ring calls whose buffers do not fit the workers are rejected before any GPU work",
          "[07-all-reduce][task:1][gpus:1][points:1]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3));
  Buffers buffers(workspace, 100, case_seed(160));
  const std::vector<float*> two = {buffers.pointers[0], buffers.pointers[1]};
  const std::vector<float*> with_null = {buffers.pointers[0], nullptr, buffers.pointers[2]};
  CHECK_THROWS_AS(ring_all_reduce(workspace, two, 100), std::invalid_argument);
  CHECK_THROWS_AS(ring_all_reduce(workspace, with_null, 100), std::invalid_argument);
  ring_all_reduce(workspace, with_null, 0);  // nothing to do: a nullptr is fine
  wait_for_workers(workspace);
  for (int k = 0; k < 3; ++k) {
    INFO("buffer " << k << " after two rejected calls and one of count 0: it must still hold its input");
    CHECK(buffers.result(k) == buffers.inputs[k]);
  }
}

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE(
    "the ring moves 2 (W - 1) / W of a buffer per worker in 2 (W - 1) steps and the one-shot W - 1 buffers in one",
    "[07-all-reduce][task:2][gpus:0][points:1]") {
  for (int workers = 1; workers <= kMaxWorkers; ++workers) {
    const double bytes = 1 << 20;
    const Cost ring = ring_cost(bytes, workers), one_shot = one_shot_cost(bytes, workers);
    INFO(workers << " workers, 1 MiB each");
    CHECK(ring.bytes_per_worker == 2.0 * (workers - 1) / workers * bytes);
    CHECK(ring.dependent_steps == 2 * (workers - 1));
    CHECK(one_shot.bytes_per_worker == (workers - 1) * bytes);
    CHECK(one_shot.dependent_steps == (workers > 1 ? 1 : 0));
  }
  CHECK_THROWS_AS(ring_cost(8, 0), std::invalid_argument);
  CHECK_THROWS_AS(one_shot_cost(8, 0), std::invalid_argument);
}

TEST_CASE("bus bandwidth is algbw times 2 (W - 1) / W as nccl-tests counts it",
          "[07-all-reduce][task:2][gpus:0][points:1]") {
  CHECK(std::abs(bus_bandwidth_gb_per_s(1e9, 1.0, 2) - 1.0) < 1e-12);  // GB = 10^9 bytes
  CHECK(std::abs(bus_bandwidth_gb_per_s(512.0 * (1 << 20), 2e-3, 4) - 512.0 * (1 << 20) / 2e-3 / 1e9 * 1.5) < 1e-9);
  CHECK(bus_bandwidth_gb_per_s(1e9, 1.0, 1) == 0.0);
  CHECK(std::abs(bus_bandwidth_gb_per_s(3e9, 0.5, 8) - 6.0 * 14 / 8) < 1e-12);
  CHECK_THROWS_AS(bus_bandwidth_gb_per_s(1e9, 0.0, 2), std::invalid_argument);
  CHECK_THROWS_AS(bus_bandwidth_gb_per_s(1e9, -1.0, 2), std::invalid_argument);
  CHECK_THROWS_AS(bus_bandwidth_gb_per_s(1e9, 1.0, 0), std::invalid_argument);
}
