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

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <map>
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

namespace {

// The chunk worker k's step t covers, by the contract's rule (the test's own arithmetic, not the
// ring_chunk under test): reduce-scatter step t = s takes chunk (k - 1 - s) mod W, all-gather step
// t = W - 1 + s takes chunk (k - s) mod W.
course::Range chunk_of_step(std::size_t count, int workers, int k, int t) {
  const int s = t < workers - 1 ? t : t - (workers - 1);
  const int chunk = ((t < workers - 1 ? k - 1 - s : k - s) % workers + workers) % workers;
  const std::size_t w = static_cast<std::size_t>(workers);
  const std::size_t per = ((count + w - 1) / w + 3) / 4 * 4;
  const std::size_t begin = std::min(static_cast<std::size_t>(chunk) * per, count);
  return {begin, std::min(begin + per, count)};
}

// The last step t of worker k whose chunk holds floats; -1 when none does.
int last_step_with_floats(std::size_t count, int workers, int k) {
  int last = -1;
  for (int t = 0; t < 2 * (workers - 1); ++t)
    if (!chunk_of_step(count, workers, k, t).empty()) last = t;
  return last;
}

// A ring step that makes worker `late`'s step `late_step` (counted in the calls of step on that
// worker's stream) run 100 ms late: it enqueues a host-function sleep on the stream first.
class LateStep {
 public:
  LateStep(const AllReduceWorkspace& workspace, int late, int late_step)
      : stream_(workspace.workers[late].stream.get()), late_(late), late_step_(late_step) {}
  RingStep step() {
    return [this](const float* src, float* dst, std::size_t n, bool add, cudaStream_t stream) {
      if (stream == stream_ && calls_++ == late_step_) {
        enqueue_delay(stream, kLate);
        delayed_ = true;
      }
      enqueue_ring_step(src, dst, n, add, stream);
    };
  }
  bool delayed() const { return delayed_; }
  std::string why_not() const {
    return "worker " + std::to_string(late_) + " made " + std::to_string(calls_) + " calls of step, so its step " +
           std::to_string(late_step_) + " never came: every step is one call of step, an empty chunk included " +
           "(size 0, with its wait and its event)";
  }

 private:
  cudaStream_t stream_;
  int late_, late_step_;
  int calls_ = 0;
  bool delayed_ = false;
};

// Every call of step, as it came.
struct StepCall {
  const float* src = nullptr;
  float* dst = nullptr;
  std::size_t n = 0;
  bool add = false;
};

// "buffer j + i" for a pointer into one of the buffers, or what else it is.
std::string where(const float* p, const Buffers& buffers) {
  for (std::size_t j = 0; j < buffers.pointers.size(); ++j)
    if (p >= buffers.pointers[j] && p <= buffers.pointers[j] + buffers.count)
      return "buffers[" + std::to_string(j) + "] + " + std::to_string(p - buffers.pointers[j]);
  return "a pointer into no buffer";
}

std::string show_step(const float* src, const float* dst, std::size_t n, bool add, const Buffers& buffers) {
  return "step(" + where(src, buffers) + ", " + where(dst, buffers) + ", " + std::to_string(n) + ", " +
         (add ? "add" : "copy") + ")";
}

}  // namespace

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

TEST_CASE("every ring step is one call of step with its worker's chunk, empty chunks included",
          "[07-all-reduce][task:1][gpus:1][points:1]") {
  require_gpus(1);
  for (int workers = 1; workers <= 5; ++workers) {
    AllReduceWorkspace workspace(repeated(0, workers), 16);
    const std::size_t w = static_cast<std::size_t>(workers);
    const int steps = 2 * (workers - 1);
    for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{5}, 4 * w + 3, 4099 * w + 1}) {
      Buffers buffers(workspace, count, case_seed(170 + count));
      std::map<cudaStream_t, std::vector<StepCall>> calls;
      const RingStep noted = [&](const float* src, float* dst, std::size_t n, bool add, cudaStream_t stream) {
        calls[stream].push_back({src, dst, n, add});
        enqueue_ring_step(src, dst, n, add, stream);
      };
      ring_all_reduce(workspace, buffers.pointers, count, noted);
      wait_for_workers(workspace);
      const std::string what = "ring_all_reduce of " + std::to_string(count) + " floats over " +
                               std::to_string(workers) + " workers on GPU 0";
      std::size_t on_worker_streams = 0;
      for (int k = 0; k < workers; ++k) {
        const std::vector<StepCall>& got = calls[workspace.workers[k].stream.get()];
        on_worker_streams += got.size();
        INFO(what << ": worker " << k << " made " << got.size() << " calls of step on its stream; the contract makes "
                  << steps << ", one per step t = 0 .. 2 (W - 1) - 1, an empty chunk included (size 0, with its "
                  << "wait and its event)");
        CHECK(got.size() == static_cast<std::size_t>(steps));
        const int left = (k - 1 + workers) % workers;
        for (int t = 0; t < steps && t < static_cast<int>(got.size()); ++t) {
          const course::Range chunk = chunk_of_step(count, workers, k, t);
          const bool add = t < workers - 1;
          const StepCall& call = got[static_cast<std::size_t>(t)];
          // An empty chunk's pointers point at nothing: only its size and kind are checked.
          const bool right = call.n == chunk.size() && call.add == add &&
                             (chunk.empty() || (call.src == buffers.pointers[left] + chunk.begin &&
                                                call.dst == buffers.pointers[k] + chunk.begin));
          if (right) continue;
          INFO("worker " << k << "'s step " << t << " (the " << t + 1 << "th call on its stream) was "
                         << show_step(call.src, call.dst, call.n, call.add, buffers) << "; the contract's is "
                         << show_step(buffers.pointers[left] + chunk.begin, buffers.pointers[k] + chunk.begin,
                                      chunk.size(), add, buffers)
                         << " (its left neighbour's chunk into its own, the steps in order)");
          CHECK(right);
          break;  // the first wrong step of each worker
        }
      }
      INFO(what << ": every step goes on its worker's stream; " << on_worker_streams << " of the calls did");
      std::size_t all = 0;
      for (const auto& [stream, list] : calls) all += list.size();
      CHECK(all == on_worker_streams);
      buffers.check(what);
    }
  }
}

TEST_CASE("each buffer goes back to its worker's stream only after its right neighbour's last read",
          "[07-all-reduce][task:1][gpus:1][points:1]") {
  require_gpus(1);
  for (int workers = 2; workers <= 4; ++workers) {
    AllReduceWorkspace workspace(repeated(0, workers), 16);
    // One float: the last chunks are empty, and a worker's last step may be one of them.
    for (const std::size_t count : {std::size_t{1}, std::size_t{1000003}}) {
      Buffers buffers(workspace, count, case_seed(140 + count));
      ring_all_reduce(workspace, buffers.pointers, count);  // loads every kernel it uses
      wait_for_workers(workspace);
      for (int k = 0; k < workers; ++k) {
        // Buffer k is read by its right neighbour: make that neighbour's last read of it late.
        const int right = (k + 1) % workers;
        const int last_read = last_step_with_floats(count, workers, right);
        if (last_read < 0) continue;
        buffers.reset();
        LateStep late(workspace, right, last_read);
        const std::string what = std::to_string(workers) + " workers, " + std::to_string(count) + " floats, worker " +
                                 std::to_string(right) + "'s step " + std::to_string(last_read) +
                                 " (its last read of buffer " + std::to_string(k) + ") 100 ms late";
        run_with_watchdog("ring_all_reduce with " + what, kGateLimit, kGateHint, [&] {
          ring_all_reduce(workspace, buffers.pointers, count, late.step());
          // The caller reuses buffer k right after the call, in the order of worker k's stream.
          CUDA_CHECK(cudaMemsetAsync(buffers.pointers[k], 0xFF, count * sizeof(float), workspace.workers[k].stream));
          wait_for_workers(workspace);
        });
        if (!late.delayed()) {
          INFO(what << ": " << late.why_not());
          REQUIRE(late.delayed());
        }
        buffers.check(what + ", buffer " + std::to_string(k) + " overwritten on worker " + std::to_string(k) +
                          "'s stream after the call (NaN: worker " + std::to_string(right) + " read buffer " +
                          std::to_string(k) +
                          " after the call had handed it back; at the end, each worker's "
                          "stream must wait for the event its right neighbour recorded after its last step, and "
                          "that step must record it even when its chunk is empty)",
                      k);
      }
    }
  }
}

TEST_CASE("every ring step waits for its left neighbour's step of this call whichever step is late",
          "[07-all-reduce][task:1][gpus:1][points:1]") {
  require_gpus(1);
  for (int workers = 2; workers <= 4; ++workers) {
    const std::size_t count = 4099 * static_cast<std::size_t>(workers) + 1;  // every chunk holds floats
    AllReduceWorkspace workspace(repeated(0, workers), 16);
    Buffers buffers(workspace, count, case_seed(180 + workers));
    ring_all_reduce(workspace, buffers.pointers, count);  // loads every kernel; every event recorded once
    wait_for_workers(workspace);
    const int late_worker = workers - 1;  // worker 0's left neighbour
    for (int t = 0; t < 2 * (workers - 1); ++t) {
      buffers.reset();
      LateStep late(workspace, late_worker, t);
      const std::string what = std::to_string(workers) + " workers, worker " + std::to_string(late_worker) +
                               "'s step " + std::to_string(t) + " 100 ms late";
      run_with_watchdog("ring_all_reduce with " + what, kGateLimit, kGateHint, [&] {
        ring_all_reduce(workspace, buffers.pointers, count, late.step());
        wait_for_workers(workspace);
      });
      if (!late.delayed()) {
        INFO(what << ": " << late.why_not());
        REQUIRE(late.delayed());
      }
      buffers.check(what +
                    " (a wrong sum: worker 0 read the chunk of that step before it was written; its next "
                    "step must wait for the event worker " +
                    std::to_string(late_worker) +
                    " recorded after it in this call: enqueue the steps step by step, for t and then for k, so "
                    "that each event a step waits for is already recorded when the wait is enqueued)");
    }
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
  {
    INFO(
        "count 0 or one worker is nothing to do, but only after the buffer checks: a list that does not fit the "
        "workers is rejected all the same");
    CHECK_THROWS_AS(ring_all_reduce(workspace, two, 0), std::invalid_argument);
    AllReduceWorkspace one(repeated(0, 1), 16);
    CHECK_THROWS_AS(ring_all_reduce(one, two, 100), std::invalid_argument);
  }
  ring_all_reduce(workspace, with_null, 0);  // nothing to do: a nullptr is fine
  wait_for_workers(workspace);
  for (int k = 0; k < 3; ++k) {
    INFO("buffer " << k << " after four rejected calls and one of count 0: it must still hold its input");
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
