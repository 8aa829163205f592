// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 tests, task 5: the LL one-shot, one kernel per worker that pushes its data into its
// peers' inboxes with the call's number in the same word as every float. The same inputs,
// poisoning and reference as the other all-reduces (test_07_all_reduce_support.h), and the
// one-shot's bits. Its kernels order themselves through the numbers they push, so the races are
// made visible as the one-kernel's are (a late kernel, a graph replayed with new inputs, a kernel
// never launched), and two things only an inbox can show are read or written by the test itself:
// which half and slot every word lands in, with which number, and a line half arrived (one word of
// this call, one of an older one) that the kernel must not take. Every wait runs under the watchdog.
#include <cuda_runtime.h>

#include <bit>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
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
    "a kernel that waits for a line that never comes and never gives up (the wait must end after "
    "workspace.patience), or lines pushed where their reader does not look (slot k of half e % 2 of the "
    "peer's inbox)";

// The largest count the cases below give the LL one-shot (its default limit, kDefaultLlMaxCount).
constexpr std::size_t kLarge = 200003;

void ll(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count) {
  ll_one_shot_all_reduce(workspace, buffers, count);
}

// One worker's whole inbox, read back.
std::vector<LlLine> read_inbox(const Worker& worker) {
  std::vector<LlLine> lines(worker.ll_inbox.size());
  const course::DeviceGuard on_device(worker.device);
  CUDA_CHECK(cudaMemcpy(lines.data(), worker.ll_inbox.data(), worker.ll_inbox.bytes(), cudaMemcpyDeviceToHost));
  return lines;
}

constexpr unsigned long long kPoisonedWord = std::numeric_limits<unsigned long long>::max();

// What the test expects in line i of slot j of one half of a worker's inbox after call `call`:
// worker j's input, two floats a line, each with the call's number (0.0f in an odd count's padding word).
LlLine expected_line(const std::vector<float>& input, std::size_t i, unsigned long long call) {
  LlLine line{};
  line.word[0] = ll_word(std::bit_cast<std::uint32_t>(input[2 * i]), call);
  line.word[1] = ll_word(2 * i + 1 < input.size() ? std::bit_cast<std::uint32_t>(input[2 * i + 1]) : 0u, call);
  return line;
}

}  // namespace

// ---- Task 5 ---------------------------------------------------------------------------------

TEST_CASE("the LL one-shot's grid is one block for a few floats, at most kMaxBlocks, and grows with the count",
          "[07-all-reduce][task:5][gpus:1][points:1]") {
  require_gpus(1);
  AllReduceWorkspace two(repeated(0, 2), 1 << 20), eight(repeated(0, 8), 1 << 20);
  for (AllReduceWorkspace* workspace : {&two, &eight}) {
    int previous = 0;
    for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{64}, std::size_t{4099},
                                    std::size_t{1} << 16, std::size_t{1} << 18}) {
      const int blocks = ll_one_shot_blocks(*workspace, count);
      INFO(workspace->size() << " workers on GPU 0, count " << count << ": " << blocks << " blocks");
      CHECK(blocks >= 1);
      CHECK(blocks <= kMaxBlocks);
      CHECK(blocks >= previous);  // more floats never get fewer blocks
      CHECK(ll_one_shot_blocks(*workspace, count) == blocks);
      if (count <= 64) CHECK(blocks == 1);  // 32 lines: one block's threads cover them
      previous = blocks;
    }
  }
}

TEST_CASE("the LL one-shot matches a double-precision reference for 1 to 4 workers on one GPU and every count",
          "[07-all-reduce][task:5][gpus:1][points:3][concurrent]") {
  run_with_watchdog("the LL one-shot on 1 to 4 workers", kKernelLimit, kKernelHint, [] {
    check_matches_reference("LL one-shot", ll, 470, /*poison_scratch=*/true, (std::size_t{1} << 20) + 6);
  });
}

TEST_CASE("the LL one-shot is one launch per worker with its arguments and nothing else on any stream",
          "[07-all-reduce][task:5][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 100003;
  AllReduceWorkspace workspace(repeated(0, 3), count);
  Buffers buffers(workspace, count, case_seed(480));
  struct Launch {
    LlOneShotArgs args;
    cudaStream_t stream;
  };
  std::vector<Launch> launches;
  const LlOneShotLaunch record = [&](const LlOneShotArgs& args, cudaStream_t stream) {
    launches.push_back({args, stream});
    enqueue_ll_one_shot(args, stream);
  };
  run_with_watchdog("a recorded LL one-shot", kKernelLimit, kKernelHint, [&] {
    ll_one_shot_all_reduce(workspace, buffers.pointers, count, record);
    wait_for_workers(workspace);
  });
  buffers.check("the LL one-shot through a recording launcher");
  REQUIRE(launches.size() == 3);
  const int blocks = ll_one_shot_blocks(workspace, count);
  for (int k = 0; k < 3; ++k) {
    const LlOneShotArgs& a = launches[k].args;
    INFO("launch " << k << " of one call on 3 workers: the launches go in worker order, each with its worker's "
                   << "buffer, stream, report, claim and count of calls, and the same count, grid, patience, lines "
                   << "and inboxes");
    CHECK(a.worker == k);
    CHECK(a.workers == 3);
    CHECK(a.buffer == buffers.pointers[k]);
    CHECK(a.count == count);
    CHECK(a.blocks == blocks);
    CHECK(a.patience_ns == workspace.patience.count());
    CHECK(a.give_up == &workspace.give_ups[k]);
    CHECK(a.give_up_claim == workspace.workers[k].give_up_claim.data());
    CHECK(a.calls == workspace.workers[k].ll_calls.data());
    CHECK(a.lines == ll_lines(workspace.ll_max_count));
    CHECK(launches[k].stream == workspace.workers[k].stream.get());
    for (int j = 0; j < 3; ++j) CHECK(a.inbox[j] == workspace.workers[j].ll_inbox.data());
  }
  launches.clear();
  ll_one_shot_all_reduce(workspace, buffers.pointers, 0, record);
  AllReduceWorkspace one(repeated(0, 1), count);
  const std::vector<float*> first = {buffers.pointers[0]};
  ll_one_shot_all_reduce(one, first, count, record);
  INFO("count 0 and one worker: nothing to do, so nothing launched");
  CHECK(launches.empty());
  // Captured, one call is a graph of exactly one kernel per worker: no copy, no memset, no host function.
  check_captured_as_one_kernel_per_worker(workspace,
                                          [&] { ll_one_shot_all_reduce(workspace, buffers.pointers, count); });
}

TEST_CASE("the LL one-shot gives the one-shot's bits, and the same from a graph replayed with new inputs",
          "[07-all-reduce][task:5][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 150001;
  AllReduceWorkspace workspace(repeated(0, 3), count);
  Buffers even(workspace, count, case_seed(490)), odd(workspace, count, case_seed(491));
  const std::vector<std::vector<float>> even_bits = one_shot_bits(workspace, even),
                                        odd_bits = one_shot_bits(workspace, odd);
  run_with_watchdog("the LL one-shot, plain and replayed from a graph", kKernelLimit, kKernelHint, [&] {
    ll_one_shot_all_reduce(workspace, even.pointers, count);
    wait_for_workers(workspace);
    for (int k = 0; k < 3; ++k) {
      INFO("worker " << k << ": the LL one-shot and the one-shot of the same inputs differ in "
                     << bits_differ(even.result(k), even_bits[k])
                     << " floats' bits (the sum in worker order, in float, from worker 0's float)");
      CHECK(bits_differ(even.result(k), even_bits[k]) == 0);
    }
    // Each replay copies the inputs in from `even`'s source copies and reduces; the last worker's copy
    // waits 30 ms first (a host function in the graph). Between replays the sources change, so a
    // replay that takes a line of an earlier call for this one reads an earlier replay's input.
    CapturedCalls graph(
        workspace,
        [&] {
          enqueue_delay(workspace.workers[2].stream, 30ms);
          for (int k = 0; k < 3; ++k) even.enqueue_input(k, workspace.workers[k].stream);
          ll_one_shot_all_reduce(workspace, even.pointers, count);
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
                                << " floats wrong (a call number fixed at capture, passed from the host, or never "
                                << "moved, is the same in every replay: the lines of an earlier replay already "
                                << "carry it)");
      }
    }
    CHECK(wrong_replays == 0);
  });
}

TEST_CASE("two LL one-shot calls back to back with one worker's first kernel late both give the sum",
          "[07-all-reduce][task:5][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = kLarge;
  for (const int late : {2, 0}) {
    AllReduceWorkspace workspace(repeated(0, 3), count);
    Buffers first(workspace, count, case_seed(500 + late)), second(workspace, count, case_seed(502 + late));
    const std::vector<std::vector<float>> first_bits = one_shot_bits(workspace, first);
    const std::vector<std::vector<float>> second_bits = one_shot_bits(workspace, second);
    ll_one_shot_all_reduce(workspace, first.pointers, count);  // loads the kernel, ungated
    wait_for_workers(workspace);
    first.reset();
    second.reset();
    poison_scratch(workspace);  // every inbox word NaN with the number 0xFFFFFFFF: a float without its number reads NaN
    bool delayed = false;
    const LlOneShotLaunch late_once = [&](const LlOneShotArgs& args, cudaStream_t stream) {
      if (!delayed && args.worker == late) {
        enqueue_delay(stream, kLate);
        delayed = true;
      }
      enqueue_ll_one_shot(args, stream);
    };
    run_with_watchdog("two LL one-shot calls, one worker late in the first", kKernelLimit, kKernelHint, [&] {
      ll_one_shot_all_reduce(workspace, first.pointers, count, late_once);
      ll_one_shot_all_reduce(workspace, second.pointers, count);  // right away: the same inboxes and counts
      wait_for_workers(workspace);
    });
    REQUIRE(delayed);
    for (int k = 0; k < 3; ++k) {
      INFO("worker " << late << " late in the first of two calls; worker " << k << ": "
                     << bits_differ(first.result(k), first_bits[k]) << " floats of the first call and "
                     << bits_differ(second.result(k), second_bits[k])
                     << " of the second differ from the one-shot's bits (a call number that reached a reader "
                     << "before its float, a line of one call overwritten by the next before it was read, or a "
                     << "line of one call taken for another)");
      CHECK(bits_differ(first.result(k), first_bits[k]) == 0);
      CHECK(bits_differ(second.result(k), second_bits[k]) == 0);
    }
  }
}

TEST_CASE("each LL one-shot call pushes into half e % 2 of every peer's inbox, every word its float and the call",
          "[07-all-reduce][task:5][gpus:1][points:1][concurrent]") {
  require_gpus(1);
  const std::size_t count = 4099;  // odd: the last line's second word is padding
  const int w = 3;
  AllReduceWorkspace workspace(repeated(0, w), count, count);
  Buffers buffers(workspace, count, case_seed(510));
  const std::size_t lines = ll_lines(count);
  poison_scratch(workspace);
  run_with_watchdog("two LL one-shot calls whose inboxes are read back", kKernelLimit, kKernelHint, [&] {
    for (unsigned long long call = 1; call <= 2; ++call) {
      buffers.reset();
      ll_one_shot_all_reduce(workspace, buffers.pointers, count);
      wait_for_workers(workspace);
      buffers.check("LL one-shot call " + std::to_string(call));
      for (int k = 0; k < w; ++k) {
        const std::vector<LlLine> inbox = read_inbox(workspace.workers[k]);
        REQUIRE(inbox.size() == 2 * w * lines);
        for (int half = 0; half < 2; ++half) {
          for (int j = 0; j < w; ++j) {
            // Call 1 writes half 1 and call 2 half 0; a half not written yet stays poisoned, and so
            // does a worker's own slot (nobody pushes to itself).
            const bool written = j != k && (half == 1 || call == 2);
            const unsigned long long by = half == 1 ? 1 : 2;
            std::size_t wrong = 0, first_wrong = lines;
            for (std::size_t i = 0; i < lines; ++i) {
              const LlLine& got = inbox[(static_cast<std::size_t>(half) * w + j) * lines + i];
              const LlLine want =
                  written ? expected_line(buffers.inputs[j], i, by) : LlLine{{kPoisonedWord, kPoisonedWord}};
              const bool same = got.word[0] == want.word[0] && got.word[1] == want.word[1];
              if (!same && first_wrong == lines) first_wrong = i;
              wrong += same ? 0 : 1;
            }
            INFO("after call " << call << ", worker " << k << "'s inbox, half " << half << ", slot " << j << ": "
                               << wrong << " of " << lines << " lines differ from "
                               << (written ? "worker " + std::to_string(j) + "'s input with call number " +
                                                 std::to_string(by) + " in both words"
                                           : std::string("the poison (nothing may write there yet)"))
                               << (wrong ? ", the first at line " + std::to_string(first_wrong) : std::string()));
            CHECK(wrong == 0);
          }
        }
      }
    }
  });
}

TEST_CASE("the LL one-shot takes a line only once both its words carry this call's number",
          "[07-all-reduce][task:5][gpus:1][points:1][concurrent]") {
  require_gpus(1);
  const std::size_t count = 4099;
  AllReduceWorkspace workspace(repeated(0, 2), count, count);
  Buffers buffers(workspace, count, case_seed(520));
  const std::vector<std::vector<float>> bits = one_shot_bits(workspace, buffers);
  const std::size_t lines = ll_lines(count);
  run_with_watchdog("an LL one-shot whose inbox holds half-arrived lines", kKernelLimit, kKernelHint, [&] {
    for (int call = 1; call <= 2; ++call) {
      buffers.reset();
      ll_one_shot_all_reduce(workspace, buffers.pointers, count);
      wait_for_workers(workspace);
    }
    buffers.reset();
    // Call 3 reads slot 1 of half 1 of worker 0's inbox. Before it, the test makes every line there half
    // arrived, as a 16-byte store that reaches its reader as two 8-byte halves leaves it: one word what
    // worker 1 will push in call 3 (its float and "call 3"), the other a NaN of call 1 (the even lines
    // the first word, the odd lines the second). Worker 1's kernel comes 100 ms late and then writes the
    // same lines whole. A word that says "call 3" holds call 3's float, as in any real run (so a reader
    // that meets the real store between its two loads still reads right); a line taken on one word's
    // number alone brings the other word's NaN into the sum.
    const unsigned int nan = 0x7FC00000u;
    std::vector<LlLine> torn(lines);
    for (std::size_t i = 0; i < lines; ++i) {
      const int arrived = i % 2 == 0 ? 0 : 1;
      torn[i].word[arrived] = expected_line(buffers.inputs[1], i, 3).word[arrived];
      torn[i].word[1 - arrived] = ll_word(nan, 1);
    }
    {
      const course::DeviceGuard on_device(0);
      CUDA_CHECK(cudaMemcpy(workspace.workers[0].ll_inbox.data() + (1 * 2 + 1) * lines, torn.data(),
                            lines * sizeof(LlLine), cudaMemcpyHostToDevice));
    }
    bool delayed = false;
    const LlOneShotLaunch worker_1_late = [&](const LlOneShotArgs& args, cudaStream_t stream) {
      if (args.worker == 1) {
        enqueue_delay(stream, kLate);
        delayed = true;
      }
      enqueue_ll_one_shot(args, stream);
    };
    ll_one_shot_all_reduce(workspace, buffers.pointers, count, worker_1_late);
    wait_for_workers(workspace);
    REQUIRE(delayed);
  });
  for (int k = 0; k < 2; ++k) {
    INFO("call 3, worker 1 late, worker 0's lines from it half arrived before: worker "
         << k << " differs from the one-shot's bits in " << bits_differ(buffers.result(k), bits[k])
         << " floats (NaN: a line taken when only one of its words carried this call's number)");
    CHECK(bits_differ(buffers.result(k), bits[k]) == 0);
  }
}

TEST_CASE("a worker whose LL one-shot kernel never runs makes the others give up within the patience and say why",
          "[07-all-reduce][task:5][gpus:1][points:2][concurrent]") {
  require_gpus(1);
  const std::size_t count = 5000;
  for (const int missing : {1, 0}) {
    AllReduceWorkspace workspace(repeated(0, 3), count);
    workspace.patience = 200ms;
    Buffers buffers(workspace, count, case_seed(530 + missing));
    const LlOneShotLaunch skip_one = [&](const LlOneShotArgs& args, cudaStream_t stream) {
      if (args.worker != missing) enqueue_ll_one_shot(args, stream);
    };
    std::string error;
    const auto start = std::chrono::steady_clock::now();
    run_with_watchdog("an LL one-shot with one worker's kernel never launched", std::chrono::seconds(30), kKernelHint,
                      [&] {
                        ll_one_shot_all_reduce(workspace, buffers.pointers, count, skip_one);
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
                     << report.waiting_for << " (expected: call 1, peer " << missing << ", 0 = its data)");
      CHECK(report.call == 1);
      CHECK(report.peer == missing);
      CHECK(report.waiting_for == 0);
      INFO("worker " << k << " gave up: no line of the missing worker came, so its buffer must still hold its input");
      CHECK(buffers.result(k) == buffers.inputs[k]);
    }
    bool launched = false;
    const LlOneShotLaunch note = [&](const LlOneShotArgs&, cudaStream_t) { launched = true; };
    INFO("the call after a give-up throws std::runtime_error before it launches anything");
    CHECK_THROWS_AS(ll_one_shot_all_reduce(workspace, buffers.pointers, count, note), std::runtime_error);
    CHECK(!launched);
  }
}

TEST_CASE("the LL one-shot returns at once and waits on the GPU for a held worker",
          "[07-all-reduce][task:5][gpus:1][points:1][overlap][concurrent]") {
  require_gpus(1);
  check_behind_held_workers("LL one-shot", ll, case_seed(540), kLarge);
}

TEST_CASE("on distinct GPUs the LL one-shot matches NCCL's all-reduce of the same data and keeps the caller's device",
          "[07-all-reduce][task:5][gpus:2][points:2][concurrent]") {
  check_on_distinct_gpus(
      "LL one-shot",
      [](AllReduceWorkspace& w, std::span<float* const> b, std::size_t n, LaunchDevices& launches) {
        ll_one_shot_all_reduce(w, b, n, launches.ll_one_shot());
      },
      kDefaultLlMaxCount, case_seed(550));
}

TEST_CASE("LL one-shot calls larger than the inbox or whose buffers do not fit are rejected before any GPU work",
          "[07-all-reduce][task:5][gpus:1][points:1]") {
  require_gpus(1);
  AllReduceWorkspace workspace(repeated(0, 3), 200, 100);  // the one-shot takes 200 floats, the LL one-shot 100
  Buffers buffers(workspace, 101, case_seed(560));
  const std::vector<float*> two = {buffers.pointers[0], buffers.pointers[1]};
  const std::vector<float*> with_null = {buffers.pointers[0], nullptr, buffers.pointers[2]};
  bool launched = false;
  const LlOneShotLaunch note = [&](const LlOneShotArgs& args, cudaStream_t stream) {
    launched = true;
    enqueue_ll_one_shot(args, stream);
  };
  CHECK(workspace.ll_max_count == 100);
  CHECK_THROWS_AS(ll_one_shot_all_reduce(workspace, buffers.pointers, 101, note), std::invalid_argument);
  CHECK_THROWS_AS(ll_one_shot_all_reduce(workspace, two, 100, note), std::invalid_argument);
  CHECK_THROWS_AS(ll_one_shot_all_reduce(workspace, with_null, 100, note), std::invalid_argument);
  {
    INFO("count 0 or one worker is nothing to do, but only after the checks");
    CHECK_THROWS_AS(ll_one_shot_all_reduce(workspace, two, 0, note), std::invalid_argument);
    AllReduceWorkspace one(repeated(0, 1), 100);
    CHECK_THROWS_AS(ll_one_shot_all_reduce(one, two, 100, note), std::invalid_argument);
  }
  ll_one_shot_all_reduce(workspace, with_null, 0, note);  // nothing to do: a nullptr is fine
  wait_for_workers(workspace);
  CHECK(!launched);
  for (int k = 0; k < 3; ++k) {
    INFO("buffer " << k << " after five rejected calls and one of count 0: it must still hold its input");
    CHECK(buffers.result(k) == buffers.inputs[k]);
  }
}
