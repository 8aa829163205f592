// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 tests, task 4: the one-kernel (the one-shot as one kernel per worker). The same inputs, poisoning and
// reference as the other all-reduces (test_07_all_reduce_support.h), and the same bits as the
// one-shot. Its kernels order themselves through flags, so the races are made visible by
// making one worker's kernel late (a host-function sleep before it on its stream), by replaying
// a graph whose inputs change between replays, by holding back the flag that says a peer has
// finished reading, and by never launching one worker's kernel at all (the others must give up,
// not hang). Every wait runs under the watchdog: a kernel that never gives up fails its case.
#include <cuda_runtime.h>

#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "all_reduce.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/workers.h"
#include "test_07_all_reduce_support.h"

using namespace lesson07;
using namespace lesson07_tests;

namespace {

constexpr auto kKernelLimit = std::chrono::seconds(60);
constexpr const char* kKernelHint =
    "a kernel that waits for a flag that never comes and never gives up (the wait must end after "
    "workspace.patience), or a flag written where its reader does not look";

// One worker's Signals, read back.
Signals read_signals(const Worker& worker) {
  Signals signals{};
  const course::DeviceGuard on_device(worker.device);
  CUDA_CHECK(cudaMemcpy(&signals, worker.signals.data(), sizeof(Signals), cudaMemcpyDeviceToHost));
  return signals;
}

}  // namespace

// ---- Task 4 ---------------------------------------------------------------------------------

TEST_CASE("the one-kernel's grid is one block for a few floats, at most kMaxBlocks, and grows with the count",
          "[07-all-reduce][task:4][gpus:1][points:1]") {
  require_gpus(1);
  AllReduceWorkspace two(repeated(0, 2), 1 << 20), eight(repeated(0, 8), 1 << 20);
  for (AllReduceWorkspace* workspace : {&two, &eight}) {
    int previous = 0;
    for (const std::size_t count : {std::size_t{1}, std::size_t{4}, std::size_t{1000}, std::size_t{1} << 16,
                                    std::size_t{1} << 20, std::size_t{1} << 28}) {
      const int blocks = one_kernel_blocks(*workspace, count);
      INFO(workspace->size() << " workers on GPU 0, count " << count << ": " << blocks << " blocks");
      CHECK(blocks >= 1);
      CHECK(blocks <= kMaxBlocks);
      CHECK(blocks >= previous);  // more floats never get fewer blocks
      CHECK(one_kernel_blocks(*workspace, count) == blocks);
      if (count <= 4) CHECK(blocks == 1);  // a few floats: one block does it; more is flags for nothing
      previous = blocks;
    }
  }
}

TEST_CASE("the one-kernel matches a double-precision reference for 1 to 4 workers on one GPU and every count",
          "[07-all-reduce][task:4][gpus:1][points:3][concurrent]") {
  run_with_watchdog("the one-kernel on 1 to 4 workers", kKernelLimit, kKernelHint, [] {
    check_matches_reference(
        "one-kernel",
        [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n) { one_kernel_all_reduce(w, b, n); }, 370,
        /*poison_scratch=*/true);
  });
}

TEST_CASE("the one-kernel is one launch per worker with its arguments and nothing else on any stream",
          "[07-all-reduce][task:4][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 100003;
  AllReduceWorkspace workspace(repeated(0, 3), count);
  Buffers buffers(workspace, count, case_seed(380));
  struct Launch {
    OneKernelArgs args;
    cudaStream_t stream;
  };
  std::vector<Launch> launches;
  const OneKernelLaunch record = [&](const OneKernelArgs& args, cudaStream_t stream) {
    launches.push_back({args, stream});
    enqueue_one_kernel(args, stream);
  };
  run_with_watchdog("a recorded one-kernel", kKernelLimit, kKernelHint, [&] {
    one_kernel_all_reduce(workspace, buffers.pointers, count, record);
    wait_for_workers(workspace);
  });
  buffers.check("the one-kernel through a recording launcher");
  REQUIRE(launches.size() == 3);
  const int blocks = one_kernel_blocks(workspace, count);
  for (int k = 0; k < 3; ++k) {
    const OneKernelArgs& a = launches[k].args;
    INFO("launch " << k << " of one call on 3 workers: the launches go in worker order, each with its worker's "
                   << "buffer, stream and report, and the same count, grid, patience, scratches and signals");
    CHECK(a.worker == k);
    CHECK(a.workers == 3);
    CHECK(a.buffer == buffers.pointers[k]);
    CHECK(a.count == count);
    CHECK(a.blocks == blocks);
    CHECK(a.patience_ns == workspace.patience.count());
    CHECK(a.give_up == &workspace.give_ups[k]);
    CHECK(a.give_up_claim == workspace.workers[k].give_up_claim.data());
    CHECK(a.half == kernel_half(workspace.one_shot_max_count));
    CHECK(launches[k].stream == workspace.workers[k].stream.get());
    for (int j = 0; j < 3; ++j) {
      CHECK(a.scratch[j] == workspace.workers[j].kernel_scratch.data());
      CHECK(a.signals[j] == workspace.workers[j].signals.data());
    }
  }
  launches.clear();
  one_kernel_all_reduce(workspace, buffers.pointers, 0, record);
  AllReduceWorkspace one(repeated(0, 1), count);
  const std::vector<float*> first = {buffers.pointers[0]};
  one_kernel_all_reduce(one, first, count, record);
  INFO("count 0 and one worker: nothing to do, so nothing launched");
  CHECK(launches.empty());
  // Captured, one call is a graph of exactly one kernel per worker: no copy, no memset, no host function.
  check_captured_as_one_kernel_per_worker(workspace,
                                          [&] { one_kernel_all_reduce(workspace, buffers.pointers, count); });
}

TEST_CASE("the one-kernel gives the one-shot's bits, and the same from a graph replayed with new inputs",
          "[07-all-reduce][task:4][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 250001;
  AllReduceWorkspace workspace(repeated(0, 3), count);
  Buffers even(workspace, count, case_seed(390)), odd(workspace, count, case_seed(391));
  const std::vector<std::vector<float>> even_bits = one_shot_bits(workspace, even),
                                        odd_bits = one_shot_bits(workspace, odd);
  run_with_watchdog("the one-kernel, plain and replayed from a graph", kKernelLimit, kKernelHint, [&] {
    one_kernel_all_reduce(workspace, even.pointers, count);
    wait_for_workers(workspace);
    for (int k = 0; k < 3; ++k) {
      INFO("worker " << k << ": the one-kernel and the one-shot of the same inputs differ in "
                     << bits_differ(even.result(k), even_bits[k])
                     << " floats' bits (the sum in worker order, in float, from the first scratch)");
      CHECK(bits_differ(even.result(k), even_bits[k]) == 0);
    }
    // Each replay copies the inputs in from `even`'s source copies and reduces; the last worker's copy
    // waits 30 ms first (a host function in the graph). Between replays the sources change, so a
    // replay that does not wait for this replay's flags reads the previous replay's inputs.
    CapturedCalls graph(
        workspace,
        [&] {
          enqueue_delay(workspace.workers[2].stream, 30ms);
          for (int k = 0; k < 3; ++k) even.enqueue_input(k, workspace.workers[k].stream);
          one_kernel_all_reduce(workspace, even.pointers, count);
        },
        1);
    std::size_t wrong_replays = 0;
    for (int replay = 0; replay < 12; ++replay) {
      const bool odd_inputs = replay % 2 == 1;
      load_sources(odd_inputs ? odd : even, even);
      graph.launch();
      wait_for_workers(workspace);
      std::size_t differ = 0;
      for (int k = 0; k < 3; ++k) differ += bits_differ(even.result(k), (odd_inputs ? odd_bits : even_bits)[k]);
      if (differ > 0) {
        ++wrong_replays;
        UNSCOPED_INFO("replay " << replay << ": " << differ
                                << " floats wrong (a call number fixed at capture, passed from the host, is the "
                                << "same in every replay: the flags of the previous replay already say 'arrived')");
      }
    }
    CHECK(wrong_replays == 0);
  });
}

TEST_CASE("two one-kernel calls back to back with one worker's first kernel late both give the sum",
          "[07-all-reduce][task:4][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 1 << 22;
  for (const int late : {2, 0}) {
    AllReduceWorkspace workspace(repeated(0, 3), count);
    Buffers first(workspace, count, case_seed(400 + late)), second(workspace, count, case_seed(402 + late));
    const std::vector<std::vector<float>> first_bits = one_shot_bits(workspace, first);
    const std::vector<std::vector<float>> second_bits = one_shot_bits(workspace, second);
    one_kernel_all_reduce(workspace, first.pointers, count);  // loads the kernel, ungated
    wait_for_workers(workspace);
    first.reset();
    second.reset();
    poison_scratch(workspace);  // a scratch read before it is published reads NaN, not the warm-up's copy
    bool delayed = false;
    const OneKernelLaunch late_once = [&](const OneKernelArgs& args, cudaStream_t stream) {
      if (!delayed && args.worker == late) {
        enqueue_delay(stream, kLate);
        delayed = true;
      }
      enqueue_one_kernel(args, stream);
    };
    run_with_watchdog("two one-kernel calls, one worker late in the first", kKernelLimit, kKernelHint, [&] {
      one_kernel_all_reduce(workspace, first.pointers, count, late_once);
      one_kernel_all_reduce(workspace, second.pointers, count);  // right away: the same scratches and flags
      wait_for_workers(workspace);
    });
    REQUIRE(delayed);
    for (int k = 0; k < 3; ++k) {
      INFO("worker " << late << " late in the first of two calls; worker " << k << ": "
                     << bits_differ(first.result(k), first_bits[k]) << " floats of the first call and "
                     << bits_differ(second.result(k), second_bits[k])
                     << " of the second differ from the one-shot's bits (a flag read before its data, a "
                     << "scratch overwritten while a peer still read it, or a flag of one call taken for another)");
      CHECK(bits_differ(first.result(k), first_bits[k]) == 0);
      CHECK(bits_differ(second.result(k), second_bits[k]) == 0);
    }
  }
}

TEST_CASE("the one-kernel publishes into a half of scratch only once every peer has finished reading it",
          "[07-all-reduce][task:4][gpus:1][points:1][concurrent]") {
  require_gpus(1);
  const std::size_t count = 4099;
  AllReduceWorkspace workspace(repeated(0, 2), count);
  Buffers buffers(workspace, count, case_seed(410));
  run_with_watchdog("a one-kernel whose peer has not said it finished reading", kKernelLimit, kKernelHint, [&] {
    for (int call = 1; call <= 2; ++call) {
      buffers.reset();
      one_kernel_all_reduce(workspace, buffers.pointers, count);
      wait_for_workers(workspace);
    }
    const Signals after_two = read_signals(workspace.workers[0]);
    INFO("after two calls of 2 workers: worker 0's count of calls is "
         << after_two.calls << " and worker 1's finished flag in worker 0's memory says " << after_two.finished[1]
         << " (both must be 2)");
    REQUIRE(after_two.calls == 2);
    REQUIRE(after_two.finished[1] == 2);
    buffers.reset();
    // Worker 1 "still reads" what worker 0 published in call 1: its finished flag goes back to 0. Call 3
    // publishes into the same half (3 % 2 = 1) as call 1, so worker 0 must not copy into it until the
    // flag says at least 1 again.
    const unsigned long long not_yet = 0, done = 2;
    auto* finished_1 = &workspace.workers[0].signals.data()->finished[1];
    CUDA_CHECK(cudaMemcpy(finished_1, &not_yet, sizeof(not_yet), cudaMemcpyHostToDevice));
    {
      const course::DeviceGuard on_device(0);
      course::poison_device(workspace.workers[0].kernel_scratch.data(), workspace.workers[0].kernel_scratch.bytes());
    }
    one_kernel_all_reduce(workspace, buffers.pointers, count);
    std::this_thread::sleep_for(200ms);
    const course::Stream side(0);
    const course::DeviceBuffer<float> seen(0, workspace.workers[0].kernel_scratch.size());
    CUDA_CHECK(cudaMemcpyAsync(seen.data(), workspace.workers[0].kernel_scratch.data(), seen.bytes(),
                               cudaMemcpyDeviceToDevice, side));
    side.synchronize();
    std::size_t written = 0;
    for (const float v : course::testing::read_back(seen.data(), 0, seen.size()))
      written += course::is_poisoned(v) ? 0 : 1;
    CUDA_CHECK(cudaMemcpyAsync(finished_1, &done, sizeof(done), cudaMemcpyHostToDevice, side));
    side.synchronize();
    wait_for_workers(workspace);
    INFO("200 ms into the third call, with worker 1's finished flag held at 0, worker 0 had written "
         << written
         << " floats into its kernel scratch (it must wait until the flag says 1: call 1's readers are done)");
    CHECK(written == 0);
    buffers.check("the third call, once the flag said 2 again");
  });
}

TEST_CASE("a worker whose kernel never runs makes the others give up within the patience and say why",
          "[07-all-reduce][task:4][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 5000;
  for (const int missing : {1, 0}) {
    AllReduceWorkspace workspace(repeated(0, 3), count);
    workspace.patience = 200ms;
    Buffers buffers(workspace, count, case_seed(420 + missing));
    const OneKernelLaunch skip_one = [&](const OneKernelArgs& args, cudaStream_t stream) {
      if (args.worker != missing) enqueue_one_kernel(args, stream);
    };
    std::string error;
    const auto start = std::chrono::steady_clock::now();
    run_with_watchdog("a one-kernel with one worker's kernel never launched", std::chrono::seconds(30), kKernelHint,
                      [&] {
                        one_kernel_all_reduce(workspace, buffers.pointers, count, skip_one);
                        try {
                          wait_for_workers(workspace);
                        } catch (const std::runtime_error& e) {
                          error = e.what();
                        }
                      });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("worker " << missing << " of 3 never launched, patience 200 ms: the wait ended after " << seconds
                   << " s with: " << (error.empty() ? "no error" : error));
    CHECK(!error.empty());
    CHECK(seconds < 10);
    for (int k = 0; k < 3; ++k) {
      if (k == missing) continue;
      const GiveUp report = workspace.give_ups[k];
      INFO("worker " << k << "'s report: call " << report.call << ", peer " << report.peer << ", waiting for "
                     << report.waiting_for << " (expected: call 1, peer " << missing << ", 0 = its arrival)");
      CHECK(report.call == 1);
      CHECK(report.peer == missing);
      CHECK(report.waiting_for == 0);
      INFO("worker " << k << " gave up: its buffer must still hold its input");
      CHECK(buffers.result(k) == buffers.inputs[k]);
    }
    bool launched = false;
    const OneKernelLaunch note = [&](const OneKernelArgs&, cudaStream_t) { launched = true; };
    INFO("the call after a give-up throws std::runtime_error before it launches anything");
    CHECK_THROWS_AS(one_kernel_all_reduce(workspace, buffers.pointers, count, note), std::runtime_error);
    CHECK(!launched);
  }
}

TEST_CASE("the one-kernel returns at once and waits on the GPU for a held worker",
          "[07-all-reduce][task:4][gpus:1][points:1][overlap][concurrent]") {
  require_gpus(1);
  check_behind_held_workers(
      "one-kernel",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n) { one_kernel_all_reduce(w, b, n); },
      case_seed(430));
}

TEST_CASE("on distinct GPUs the one-kernel matches NCCL's all-reduce of the same data and keeps the caller's device",
          "[07-all-reduce][task:4][gpus:2][points:2][concurrent]") {
  check_on_distinct_gpus(
      "one-kernel",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n, LaunchDevices& launches) {
        one_kernel_all_reduce(w, b, n, launches.kernel());
      },
      std::size_t{1} << 21, case_seed(440));
}

TEST_CASE("one-kernel calls larger than the scratch or whose buffers do not fit are rejected before any GPU work",
          "[07-all-reduce][task:4][gpus:1][points:1]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3), 100);
  Buffers buffers(workspace, 101, case_seed(450));
  const std::vector<float*> two = {buffers.pointers[0], buffers.pointers[1]};
  const std::vector<float*> with_null = {buffers.pointers[0], nullptr, buffers.pointers[2]};
  bool launched = false;
  const OneKernelLaunch note = [&](const OneKernelArgs& args, cudaStream_t stream) {
    launched = true;
    enqueue_one_kernel(args, stream);
  };
  CHECK_THROWS_AS(one_kernel_all_reduce(workspace, buffers.pointers, 101, note), std::invalid_argument);
  CHECK_THROWS_AS(one_kernel_all_reduce(workspace, two, 100, note), std::invalid_argument);
  CHECK_THROWS_AS(one_kernel_all_reduce(workspace, with_null, 100, note), std::invalid_argument);
  {
    INFO("count 0 or one worker is nothing to do, but only after the checks");
    CHECK_THROWS_AS(one_kernel_all_reduce(workspace, two, 0, note), std::invalid_argument);
    AllReduceWorkspace one(repeated(0, 1), 100);
    CHECK_THROWS_AS(one_kernel_all_reduce(one, two, 100, note), std::invalid_argument);
  }
  one_kernel_all_reduce(workspace, with_null, 0, note);  // nothing to do: a nullptr is fine
  wait_for_workers(workspace);
  CHECK(!launched);
  for (int k = 0; k < 3; ++k) {
    INFO("buffer " << k << " after five rejected calls and one of count 0: it must still hold its input");
    CHECK(buffers.result(k) == buffers.inputs[k]);
  }
}
