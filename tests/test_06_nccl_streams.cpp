// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06 tests, tasks 2 and 3: which streams the calls wait for and enqueue on, shown on one GPU
// (one rank) as well as on many. A gate (common/testing/held_stream.h) holds one stream while the
// call runs on a thread of its own, and the test watches, through pinned memory on a stream of its
// own, what happened meanwhile: a call must return while a stream that is not one of its ranks' is
// held; a count of 0 must return while a rank's stream is held (it enqueues nothing, so it has
// nothing to wait for); and split_sum's partial sums must wait behind their rank's stream. A gate
// held before the call holds the collective, and with it every rank (NCCL's ranks wait for each
// other): to show that a call waits for EVERY rank's stream, not the first one's only, a second
// gate (common/testing/group_end_gate.h) holds one rank's stream from just after the call's group
// call, when every rank's collective is already enqueued and only the held rank is left.
#include <cuda_runtime.h>
#include <nccl.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"
#include "common/testing/group_end_gate.h"
#include "common/testing/held_stream.h"
#include "nccl_collectives.h"
#include "test_06_nccl_support.h"

using namespace lesson06;
using namespace lesson06_tests;
using course::testing::AfterGroupOutcome;
using course::testing::HeldOutcome;
using course::testing::returns_while_held;
using course::testing::returns_while_held_after_group;
using course::testing::run_with_stream_held;

namespace {

// Communicators for every GPU, 2^20 random floats a rank, and one all-reduce already made (its
// kernels loaded) before any gate closes.
struct WarmAllReduce {
  explicit WarmAllReduce(std::uint64_t salt) : devices(first_devices(require_gpus(1))), c(devices), data(devices, n) {
    const auto values = random_per_rank(c.size(), n, salt);
    for (int k = 0; k < c.size(); ++k) data.fill(k, values[k]);
    run_with_watchdog("all_reduce (before any gate)", kCallLimit, kGroupHint, [&] { call(); });
  }
  void call() { all_reduce(c.comms, c.stream_handles, data.const_pointers, data.pointers, n, ncclSum); }

  static constexpr std::size_t n = 1 << 20;
  std::vector<int> devices;
  Communicators c;
  RankBuffers data;
};

// Each rank's stream in turn held from the end of `call`'s group call on: `call` must not return
// while it is held. A call that waits for the first rank's stream only (or for a few) returns.
void check_waits_after_the_group_call(const Communicators& c, const std::string& name,
                                      const std::function<void()>& call) {
  run_with_watchdog(name + " (before any gate)", kCallLimit, kGroupHint, call);
  for (int held = 0; held < c.size(); ++held) {
    const AfterGroupOutcome outcome = returns_while_held_after_group(
        c.stream_handles[held], name + " with rank " + std::to_string(held) + "'s stream held after the group call",
        call, 300ms);
    INFO(name << ": rank " << held << " of " << c.size() << "'s stream was held from the end of the call's "
              << "ncclGroupEnd on, for 0.3 s");
    if (!outcome.group_ended) FAIL_CHECK("the call made no ncclGroupStart/ncclGroupEnd: put every rank's call in ONE");
    if (outcome.returned)
      FAIL_CHECK("the call returned meanwhile: rank "
                 << held << "'s part of the collective may still be running. "
                 << "NCCL's ranks need not finish together; wait for EACH rank's stream (cudaStreamSynchronize), "
                 << "not only the first one's");
  }
}

}  // namespace

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("all-reduce waits for every rank's stream before it returns", "[06-nccl][task:2][gpus:1][points:2]") {
  WarmAllReduce job(320);
  for (int held = 0; held < job.c.size(); ++held) {
    const bool returned = returns_while_held(
        job.c.stream_handles[held], "all_reduce behind a held stream", [&] { job.call(); }, 500ms);
    INFO("rank " << held
                 << "'s stream was held: all_reduce returned before it could have finished there. Wait for EACH "
                    "rank's stream (cudaStreamSynchronize)");
    CHECK_FALSE(returned);
  }
}

TEST_CASE("all-reduce and split_sum wait for every rank's stream after the collective whichever rank ends last",
          "[06-nccl][task:2][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const std::vector<int> devices = first_devices(count);
  const Communicators c(devices);
  const std::size_t n = (std::size_t{1} << 18) + 3;
  RankBuffers data(devices, n);
  const auto values = random_per_rank(count, n, 630);
  for (int k = 0; k < count; ++k) data.fill(k, values[k]);
  check_waits_after_the_group_call(
      c, "all_reduce", [&] { all_reduce(c.comms, c.stream_handles, data.const_pointers, data.pointers, n, ncclSum); });

  const std::vector<float> slice_values = course::random_small_integers(n, case_seed(640));
  double exact = 0;
  for (const float v : slice_values) exact += v;
  SplitSumBuffers buffers(devices, slice_values);
  double got = 0;
  check_waits_after_the_group_call(c, "split_sum", [&] {
    buffers.poison_totals();
    got = split_sum(c.comms, c.stream_handles, buffers.slice_pointers, n, buffers.total_pointers);
  });
  CHECK(got == exact);
}

TEST_CASE(
    "broadcast reduce all-gather reduce-scatter and the column split wait for every rank's stream after the "
    "collective",
    "[06-nccl][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const std::vector<int> devices = first_devices(count);
  const Communicators c(devices);
  const std::size_t n = (std::size_t{1} << 16) + 3;  // per rank; the buffers hold count * n
  const std::size_t whole = static_cast<std::size_t>(count) * n;
  RankBuffers send(devices, whole), recv(devices, whole);
  const auto values = random_per_rank(count, whole, 650);
  for (int k = 0; k < count; ++k) send.fill(k, values[k]);
  const int root = count - 1;
  check_waits_after_the_group_call(
      c, "broadcast", [&] { broadcast(c.comms, c.stream_handles, send.const_pointers, recv.pointers, n, root); });
  check_waits_after_the_group_call(
      c, "reduce", [&] { reduce(c.comms, c.stream_handles, send.const_pointers, recv.pointers, n, root); });
  check_waits_after_the_group_call(
      c, "all_gather", [&] { all_gather(c.comms, c.stream_handles, send.const_pointers, recv.pointers, n); });
  check_waits_after_the_group_call(
      c, "reduce_scatter", [&] { reduce_scatter(c.comms, c.stream_handles, send.const_pointers, recv.pointers, n); });

  // The column split of a rows x cols matrix: rank k's block of A (rows x its columns) is the start
  // of its send buffer, which holds more than that.
  const std::size_t rows = 256, cols = 256 * static_cast<std::size_t>(count) + 1;
  const std::size_t per_rank = rows_per_rank(rows, count);
  RankBuffers x(devices, cols), partials(devices, count * per_rank), y(devices, per_rank);
  const auto x_values = random_per_rank(count, cols, 660);
  for (int k = 0; k < count; ++k) x.fill(k, x_values[k]);
  check_waits_after_the_group_call(c, "column_split_matvec", [&] {
    column_split_matvec(c.comms, c.stream_handles, send.const_pointers, x.const_pointers, partials.pointers, y.pointers,
                        rows, cols);
  });
}

TEST_CASE("a collective waits for its ranks' streams and for nothing else", "[06-nccl][task:2][gpus:1][points:1]") {
  // A stream of the test's own on each device in turn is held: the ranks' streams are free, so
  // all_reduce must finish and return. A cudaDeviceSynchronize (a wait for the whole device)
  // waits for the held stream and does not return until the gate opens.
  WarmAllReduce job(600);
  for (const int d : job.devices) {
    const course::Stream other(d);  // none of the ranks' streams
    const bool returned = returns_while_held(
        other, "all_reduce while another stream of GPU " + std::to_string(d) + " is held", [&] { job.call(); });
    INFO("a stream of GPU " << d << " that belongs to no rank was held for 5 s: all_reduce "
                            << (returned ? "returned meanwhile" : "did not return")
                            << ". Wait for each rank's stream (cudaStreamSynchronize), not for the whole device");
    CHECK(returned);
  }
}

TEST_CASE("a count of 0 enqueues nothing and returns while the ranks' streams are held",
          "[06-nccl][task:3][gpus:1][points:1]") {
  // Buffers may be nullptr when the count is 0. Each rank's stream is held in turn: a call that
  // enqueues nothing has nothing to wait for, so it returns at once.
  const int count = require_gpus(1);
  const std::vector<int> devices = first_devices(count);
  const Communicators c(devices);
  const std::vector<const float*> no_send(count, nullptr);
  const std::vector<float*> no_recv(count, nullptr);
  const auto every_call = [&] {
    all_reduce(c.comms, c.stream_handles, no_send, no_recv, 0, ncclSum);
    broadcast(c.comms, c.stream_handles, no_send, no_recv, 0, count - 1);
    reduce(c.comms, c.stream_handles, no_send, no_recv, 0, 0);
    all_gather(c.comms, c.stream_handles, no_send, no_recv, 0);
    reduce_scatter(c.comms, c.stream_handles, no_send, no_recv, 0);
    column_split_matvec(c.comms, c.stream_handles, no_send, no_send, no_recv, no_recv, 0, 5);
  };
  run_with_watchdog("the collectives with a count of 0 (before any gate)", kCallLimit, kGroupHint, every_call);
  for (int held = 0; held < count; ++held) {
    const bool returned = returns_while_held(
        c.stream_handles[held], "the collectives with a count of 0 while rank " + std::to_string(held) + " is held",
        every_call);
    INFO("rank " << held << "'s stream was held for 5 s: all_reduce, broadcast, reduce, all_gather, reduce_scatter "
                 << "with count 0 and column_split_matvec with rows 0 "
                 << (returned ? "returned meanwhile" : "had not all returned")
                 << ". A count of 0 enqueues nothing and waits for nothing: return before the group call");
    CHECK(returned);
  }
}

TEST_CASE("split_sum's partial sums run on their rank's stream", "[06-nccl][task:2][gpus:1][points:1]") {
  // Rank k's stream is held and the test looks at totals[k] through pinned memory on a stream of
  // its own: while the gate is closed it must stay poisoned, since rank k's partial sum waits
  // behind the gate on streams[k]. Written meanwhile: the sum ran on another stream, which nothing
  // orders before the all-reduce on streams[k].
  const int count = require_gpus(1);
  const std::vector<int> devices = first_devices(count);
  const Communicators c(devices);
  const std::size_t n = (std::size_t{1} << 20) + 5;
  const std::vector<float> values = course::random_small_integers(n, case_seed(610));
  double exact = 0;
  for (const float v : values) exact += v;
  SplitSumBuffers buffers(devices, values);
  double got = 0;
  run_with_watchdog("split_sum (before any gate)", kCallLimit, kGroupHint, [&] {
    got = split_sum(c.comms, c.stream_handles, buffers.slice_pointers, n, buffers.total_pointers);
  });
  CHECK(got == exact);
  for (int held = 0; held < count; ++held) {
    buffers.poison_totals();
    course::testing::Peeker peek(devices[held], sizeof(double));
    const HeldOutcome outcome = run_with_stream_held(
        c.stream_handles[held], "split_sum while rank " + std::to_string(held) + "'s stream is held",
        [&] { got = split_sum(c.comms, c.stream_handles, buffers.slice_pointers, n, buffers.total_pointers); },
        [&] { return !course::is_poisoned(peek.value(buffers.total_pointers[held])); }, 500ms);
    INFO("rank " << held << "'s stream was held for 0.5 s"
                 << (outcome.watcher_stalled ? "; " + outcome.describe("rank " + std::to_string(held)) : "")
                 << ". totals[" << held << "] "
                 << (outcome.others_finished ? "was written meanwhile" : "stayed poisoned")
                 << ": enqueue_partial_sum belongs on streams[k], the stream the all-reduce then runs on");
    CHECK_FALSE(outcome.others_finished);
    CHECK_FALSE(outcome.watcher_stalled);
    CHECK(got == exact);
  }
}
