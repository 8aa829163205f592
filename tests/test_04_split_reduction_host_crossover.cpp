// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04 tests, tasks 3 and 4: sum_from_host over pinned host memory in chunks, exact for
// every uneven size, with reductions slowed down on purpose (a host function on the stream) so
// that a buffer refilled too early shows as a wrong sum and copies that do not overlap the
// reductions show as a ratio with a wide margin; with one worker's reductions, or its copies,
// held by a gate (common/testing/held_stream.h) so that workers that take turns, a total taken
// before every worker's partial, or a chunk reduced before it arrived, show on one GPU; then the
// crossover, from made-up timing rows without a GPU and from a real measurement's table, and the
// measurement held against the test's own timing of the same call.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/workers.h"
#include "common/timer.h"
#include "split_reduction.h"
#include "test_04_split_reduction_support.h"

using namespace lesson04;
using namespace lesson04_tests;

// ---- Task 3 ---------------------------------------------------------------------------------

namespace {

course::PinnedBuffer<float> pinned_copy(const std::vector<float>& values) {
  course::PinnedBuffer<float> pinned(values.size());
  std::copy(values.begin(), values.end(), pinned.data());
  return pinned;
}

// enqueue_sum with a host function that sleeps for `delay` before or after it, on the same stream:
// a chunk's reduction that starts late, or that takes `delay` longer.
ChunkReduce slow_reduce(std::chrono::microseconds delay, bool sleep_first) {
  return [delay, sleep_first](const float* chunk, std::size_t n, double* partials, double* sum, bool accumulate,
                              cudaStream_t stream) {
    // The closure lives in the std::function the caller holds until every chunk is done.
    void* pause = const_cast<std::chrono::microseconds*>(&delay);
    const cudaHostFn_t sleep = [](void* p) {
      std::this_thread::sleep_for(*static_cast<std::chrono::microseconds*>(p));
    };
    if (sleep_first) CUDA_CHECK(cudaLaunchHostFunc(stream, sleep, pause));
    enqueue_sum(chunk, n, partials, sum, accumulate, stream);
    if (!sleep_first) CUDA_CHECK(cudaLaunchHostFunc(stream, sleep, pause));
  };
}

}  // namespace

TEST_CASE("the sum of pinned host data is exact for 1 to 4 workers every uneven size and short chunks",
          "[04-split-reduction][task:3][gpus:1][points:3]") {
  require_gpus(1);
  const std::vector<std::size_t> sizes = {0, 1, 999, 1000, 1001, 8003, 123457};
  const std::vector<float> values = course::random_small_integers(3 * (std::size_t{1} << 22) + 5, case_seed(300));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace one(repeated(0, 1), 1000);
  CHECK_THROWS_AS(sum_from_host(one, nullptr, 10), std::invalid_argument);
  for (int workers = 1; workers <= 4; ++workers) {
    SplitWorkspace workspace(repeated(0, workers), 1000);
    for (const std::size_t n : sizes) {
      poison_results(workspace);
      INFO(workers << " workers, chunks of 1000 floats, n = " << n);
      CHECK(sum_from_host(workspace, host.data(), n) == exact_sum(values, 0, n));
      check_slots(workspace, values, n, false);
    }
  }
  SplitWorkspace workspace(repeated(0, 2), kDefaultChunkElements);  // full chunks and a tail
  INFO("2 workers, default chunks, n = " << values.size());
  CHECK(sum_from_host(workspace, host.data(), values.size()) == exact_sum(values, 0, values.size()));
}

TEST_CASE("on distinct GPUs each worker streams its range on its own device and the caller keeps its device",
          "[04-split-reduction][task:3][gpus:2][points:1]") {
  const int count = require_gpus(2);
  course::testing::set_peer_access_by_runtime(false);  // a kernel that reads another GPU's chunk buffer faults
  const std::vector<std::size_t> sizes = {1, 8003, 123457};
  const std::vector<float> values = course::random_small_integers(sizes.back(), case_seed(320));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  for (const std::vector<int>& devices : course::testing::distinct_gpu_lists(count)) {
    SplitWorkspace workspace(devices, 1000);
    for (const std::size_t n : sizes) {
      poison_results(workspace);
      CUDA_CHECK(cudaSetDevice(count - 1));  // the last worker of {count-1, 0, count-1, 0} is on GPU 0
      INFO("workers " << course::testing::show(devices) << ", chunks of 1000 floats, n = " << n
                      << ", the caller on GPU " << count - 1);
      CHECK(sum_from_host(workspace, host.data(), n) == exact_sum(values, 0, n));
      CHECK(current_device() == count - 1);
      check_slots(workspace, values, n, false);
    }
  }
}

TEST_CASE("a chunk buffer is refilled only after its chunk has been reduced",
          "[04-split-reduction][task:3][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t chunk = 4096, n = 2 * 16 * chunk + 77;  // 17 chunks per worker
  const std::vector<float> values = course::random_small_integers(n, case_seed(310));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace workspace(repeated(0, 2), chunk);
  poison_results(workspace);
  double got = 0;
  run_with_watchdog("sum_from_host with slow reductions", kGateLimit, kGateHint,
                    [&] { got = sum_from_host(workspace, host.data(), n, slow_reduce(2ms, true)); });
  INFO(
      "each chunk's reduction starts 2 ms late; a wrong sum means a buffer was overwritten by chunk c+2 "
      "before chunk c was reduced");
  CHECK(got == exact_sum(values, 0, n));
}

TEST_CASE("every worker streams its range from host memory at the same time as the others",
          "[04-split-reduction][task:3][gpus:1][points:2][overlap]") {
  require_gpus(1);
  const std::size_t chunk = 4096, n = 3 * 5 * chunk + 11;  // 5 chunks and a bit per worker
  const std::vector<float> values = course::random_small_integers(n, case_seed(330));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace workspace(repeated(0, 3), chunk);
  (void)sum_from_host(workspace, host.data(), n);  // loads every kernel it uses, ungated
  poison_results(workspace);
  double got = 0;
  const HeldOutcome outcome = run_with_stream_held(
      workspace.workers[0].stream, "sum_from_host with worker 0's reductions held back",
      [&] { got = sum_from_host(workspace, host.data(), n); }, others_hold_their_sums(workspace, values, n, 0));
  INFO(held_message(outcome, "worker 0's reduction stream"));
  CHECK(outcome.others_finished);
  CHECK(got == exact_sum(values, 0, n));
}

TEST_CASE("sum_from_host waits for every worker's partial whichever worker is held back",
          "[04-split-reduction][task:3][gpus:1][points:1]") {
  require_gpus(1);
  const std::size_t chunk = 4096, n = 3 * 5 * chunk + 11;
  const std::vector<float> values = course::random_small_integers(n, case_seed(335));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace workspace(repeated(0, 3), chunk);
  check_waits_for_every_worker(
      workspace, "sum_from_host", [&] { return sum_from_host(workspace, host.data(), n); }, exact_sum(values, 0, n));
}

TEST_CASE("a chunk is reduced only after its copy has arrived", "[04-split-reduction][task:3][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t chunk = 4096, n = 5 * chunk + 3;
  const std::vector<float> values = course::random_small_integers(n, case_seed(340));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace workspace(repeated(0, 1), chunk);
  (void)sum_from_host(workspace, host.data(), n);  // loads every kernel it uses, ungated
  poison_results(workspace);                       // the chunk buffers too: a chunk read too early is NaN
  const Worker& w = workspace.workers[0];
  Peeker peeker(w.device, sizeof(double));
  double got = 0;
  // The watch: has a reduction written the worker's sum slot while no copy could run?
  const HeldOutcome outcome = run_with_stream_held(
      w.copy_stream, "sum_from_host with its copies held back", [&] { got = sum_from_host(workspace, host.data(), n); },
      [&] { return !course::is_poisoned(peeker.value(w.sum.data())); }, 500ms);
  INFO("while the worker's copy_stream was held for half a second, "
       << (outcome.others_finished ? "a reduction wrote its sum slot: it read a chunk buffer before the chunk's copy "
                                     "arrived (stream waits for chunk_copied, recorded on copy_stream after the copy)"
                                   : "nothing was reduced")
       << "; the total was " << got << ", the exact sum " << exact_sum(values, 0, n));
  CHECK_FALSE(outcome.others_finished);
  CHECK(got == exact_sum(values, 0, n));
}

TEST_CASE("the copy of the next chunk runs while this chunk is reduced",
          "[04-split-reduction][task:3][gpus:1][points:2][timing]") {
  require_gpus(1);
  const std::size_t chunk = std::size_t{16} << 20, chunks = 8, n = chunks * chunk;  // 64 MiB chunks
  const course::PinnedBuffer<float> host = pinned_copy(std::vector<float>(n, 1.0f));
  const std::vector<int> device = {0};
  SplitWorkspace workspace(device, chunk);
  const course::Timing copy = course::measure(
      0, workspace.workers[0].copy_stream,
      [&] {
        CUDA_CHECK(cudaMemcpyAsync(workspace.workers[0].chunks[0].data(), host.data(), chunk * sizeof(float),
                                   cudaMemcpyHostToDevice, workspace.workers[0].copy_stream));
      },
      1, 5);
  // A reduction as long as a chunk's copy: then overlap can make the whole nearly twice as fast.
  const ChunkReduce reduce = slow_reduce(std::chrono::microseconds(static_cast<long>(copy.median_ms * 1000)), false);
  double serial_sum = 0, overlapped_sum = 0;
  course::Timing serial, overlapped;
  run_with_watchdog("sum_from_host and sum_from_host_serial", kGateLimit, kGateHint, [&] {
    serial = course::measure_host([&] { serial_sum = sum_from_host_serial(workspace, host.data(), n, reduce); }, 1, 3);
    overlapped = course::measure_host([&] { overlapped_sum = sum_from_host(workspace, host.data(), n, reduce); }, 1, 3);
  });
  INFO(chunks << " chunks of " << chunk * sizeof(float) << " bytes, each copy " << copy.median_ms
              << " ms and each reduction made as long: serial " << serial.median_ms << " ms, yours "
              << overlapped.median_ms << " ms (ideally " << (chunks + 1) << " / " << 2 * chunks << " of serial)");
  CHECK(overlapped_sum == static_cast<double>(n));
  CHECK(serial_sum == static_cast<double>(n));
  CHECK(serial.median_ms > 1.3 * overlapped.median_ms);
}

// ---- Task 4 ---------------------------------------------------------------------------------

namespace {

SizeTiming row(std::size_t n, double one_median, double split_median) {
  SizeTiming r;
  r.n = n;
  r.one = {one_median, one_median, one_median};
  r.split = {split_median, split_median, split_median};
  return r;
}

}  // namespace

TEST_CASE("the crossover is the smallest size from which the split stays faster",
          "[04-split-reduction][task:4][gpus:0][points:2]") {
  CHECK_FALSE(crossover_size({}).has_value());
  CHECK_FALSE(crossover_size({row(1000, 1.0, 2.0), row(2000, 1.0, 1.5)}).has_value());
  CHECK(crossover_size({row(1000, 1.0, 0.5), row(2000, 2.0, 1.0)}) == std::optional<std::size_t>(1000));
  // Faster at 2000, slower at 3000, faster again from 4000 on: the crossover is 4000.
  CHECK(crossover_size({row(1000, 1.0, 2.0), row(2000, 1.0, 0.9), row(3000, 1.0, 1.1), row(4000, 2.0, 1.5),
                        row(5000, 4.0, 2.0)}) == std::optional<std::size_t>(4000));
  CHECK_FALSE(crossover_size({row(1000, 1.0, 0.5), row(2000, 1.0, 1.0)}).has_value());  // a tie is not faster
}

TEST_CASE("measuring requests that make no sense are rejected before any GPU work",
          "[04-split-reduction][task:4][gpus:0][points:1]") {
  const std::vector<int> none, two = {0, 0};
  const std::vector<std::size_t> sizes = {1000, 2000}, empty, unsorted = {2000, 1000}, with_zero = {0, 1000};
  CHECK_THROWS_AS(measure_crossover(none, sizes), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, empty), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, unsorted), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, with_zero), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, sizes, MeasureOptions{1, 0}), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, sizes, MeasureOptions{-1, 5}), std::invalid_argument);
}

TEST_CASE("the timing table has a row per size with min <= median <= max and the crossover it implies",
          "[04-split-reduction][task:4][gpus:1][points:2]") {
  const int count = require_gpus(1);
  const std::vector<int> devices = {0, 0};
  const std::vector<std::size_t> sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26};
  const MeasureOptions options{1, 5, Combine::on_host};
  CUDA_CHECK(cudaSetDevice(count - 1));
  const CrossoverReport report = measure_crossover(devices, sizes, options);
  CHECK(current_device() == count - 1);
  CHECK(report.devices == devices);
  CHECK(report.repeats == options.repeats);
  REQUIRE(report.rows.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const SizeTiming& r = report.rows[i];
    INFO("row " << i << ": n = " << r.n << ", one " << r.one.min_ms << " / " << r.one.median_ms << " / " << r.one.max_ms
                << " ms, split " << r.split.min_ms << " / " << r.split.median_ms << " / " << r.split.max_ms
                << " ms (min / median / max)");
    CHECK(r.n == sizes[i]);
    CHECK(0 < r.one.min_ms);
    CHECK(r.one.min_ms <= r.one.median_ms);
    CHECK(r.one.median_ms <= r.one.max_ms);
    CHECK(0 < r.split.min_ms);
    CHECK(r.split.min_ms <= r.split.median_ms);
    CHECK(r.split.median_ms <= r.split.max_ms);
  }
  CHECK(report.crossover == crossover_size(report.rows));
  INFO("one worker: " << report.rows.front().one.median_ms << " ms for 2^10 floats, "
                      << report.rows.back().one.median_ms << " ms for 2^26: the times must come from the calls");
  CHECK(report.rows.back().one.median_ms > report.rows.front().one.median_ms);
}

TEST_CASE("with one worker on both sides both columns time only the call as the test's own timing does",
          "[04-split-reduction][task:4][gpus:1][points:2][timing]") {
  require_gpus(1);
  // The same device as the one worker and as the split: both columns time the same call, and so
  // does the test, on a workspace and data made beforehand. A workspace or data made inside the
  // timed call (hundreds of microseconds of allocation) multiplies a column; a wrong unit divides
  // or multiplies it by 1000. Ratios with a wide margin, never absolute times.
  constexpr double kMargin = 3;
  const std::vector<int> device = {0};
  const std::vector<std::size_t> sizes = {1 << 10, 1 << 16, 1 << 20};
  SplitWorkspace workspace(device, 1);
  const course::DeviceBuffer<float> data(0, sizes.back());
  course::testing::fill_device(data.data(), 0, sizes.back(), 1.0f);
  const std::vector<const float*> slice = {data.data()};
  std::vector<course::Timing> own;
  for (const std::size_t n : sizes)
    own.push_back(course::measure_host([&] { (void)sum_resident(workspace, slice, n); }, 3, 21));
  const CrossoverReport report = measure_crossover(device, sizes, MeasureOptions{3, 21, Combine::on_host});
  REQUIRE(report.rows.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const SizeTiming& r = report.rows[i];
    INFO("n = " << r.n << ": median of 21 calls, one worker " << r.one.median_ms << " ms, split " << r.split.median_ms
                << " ms, the test's own timing of the same call " << own[i].median_ms << " ms. Each must be within "
                << kMargin
                << "x of the others: allocate the workspaces and the data, and fill the data, before any timing; "
                   "time one call of sum_resident with the host clock, in milliseconds");
    CHECK(r.one.median_ms <= kMargin * own[i].median_ms);
    CHECK(r.split.median_ms <= kMargin * own[i].median_ms);
    CHECK(r.one.median_ms >= own[i].median_ms / kMargin);
    CHECK(r.split.median_ms >= own[i].median_ms / kMargin);
    CHECK(std::max(r.one.median_ms, r.split.median_ms) <= kMargin * std::min(r.one.median_ms, r.split.median_ms));
  }
}
