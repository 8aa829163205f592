// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04 tests, task 2: sum_resident over slices that already sit on the workers' devices.
// Every slice sits between poisoned floats and every result slot is poisoned before the call, for
// 1 to 4 workers on one GPU, every GPU count, and sizes that do not split evenly. Order (launch
// every worker before waiting, the total after every partial whichever worker is held) is checked
// with a "gate" (a host function that holds a stream until the test opens it) and a watch that
// reads device memory through pinned memory on a stream of its own (common/testing/held_stream.h),
// never with timing; the only timed fact is a ratio with a wide margin.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/timer.h"
#include "split_reduction.h"
#include "test_04_split_reduction_support.h"

using namespace lesson04;
using namespace lesson04_tests;
using course::testing::set_peer_access_by_runtime;

namespace {

const std::vector<std::size_t> kSplitSizes = {
    0, 1, 2, 3, 5, 1000, (std::size_t{1} << 20) + 7, 3 * (std::size_t{1} << 22) + 1};

// One slice per worker of `workspace`, placed as sum_resident expects, between poisoned floats.
struct Slices {
  std::vector<course::DeviceBuffer<float>> buffers;
  std::vector<const float*> pointers;
};

Slices place_slices(const SplitWorkspace& workspace, const std::vector<float>& values, std::size_t n) {
  Slices slices;
  const int workers = static_cast<int>(workspace.workers.size());
  for (int k = 0; k < workers; ++k) {
    const course::Range range = course::split_range(n, workers, k);
    slices.buffers.push_back(guarded_copy(workspace.workers[k].device, values, range.begin, range.size()));
    slices.pointers.push_back(slices.buffers.back().data() + kGuard);  // an empty slice points at poison
  }
  return slices;
}

void check_split(SplitWorkspace& workspace, const std::vector<float>& values, Combine combine) {
  const int caller = current_device();
  for (const std::size_t n : kSplitSizes) {
    const Slices slices = place_slices(workspace, values, n);
    poison_results(workspace);
    INFO(workspace.workers.size() << " workers, n = " << n << ", combine " << to_string(combine));
    CHECK(sum_resident(workspace, slices.pointers, n, combine) == exact_sum(values, 0, n));
    CHECK(current_device() == caller);
    check_slots(workspace, values, n, combine == Combine::on_device);
  }
}

}  // namespace

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("the split sum is exact for 1 to 4 workers on one GPU and every uneven size",
          "[04-split-reduction][task:2][gpus:1][points:3]") {
  const int count = require_gpus(1);
  const std::vector<float> values = course::random_small_integers(kSplitSizes.back(), case_seed(200));
  CUDA_CHECK(cudaSetDevice(count - 1));  // the caller's device is not necessarily a worker's
  for (int workers = 1; workers <= 4; ++workers) {
    SplitWorkspace workspace(repeated(0, workers), 1024);
    check_split(workspace, values, Combine::on_host);
    check_split(workspace, values, Combine::on_device);
  }
}

TEST_CASE("every GPU count sums each slice on its own device with peer access off",
          "[04-split-reduction][task:2][gpus:2][points:3]") {
  const int count = require_gpus(2);
  // Off: a kernel that reads another GPU's slice through its unified address faults.
  set_peer_access_by_runtime(false);
  const std::vector<float> values = course::random_small_integers(kSplitSizes.back(), case_seed(210));
  std::vector<std::vector<int>> lists;
  for (int c = 1; c <= count; ++c) {
    lists.emplace_back();
    for (int d = 0; d < c; ++d) lists.back().push_back(d);
  }
  lists.emplace_back(lists.back().rbegin(), lists.back().rend());  // the last GPU first
  lists.push_back({1, 0, 1});                                      // a device twice, not first
  for (const auto& devices : lists) {
    SplitWorkspace workspace(devices, 1024);
    check_split(workspace, values, Combine::on_host);
    check_split(workspace, values, Combine::on_device);
  }
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b) {
      if (a == b || !course::testing::runtime_can_access(a, b)) continue;
      const cudaError_t again = course::testing::enable_again(a, b);  // cudaSuccess: it was still off
      (void)course::testing::disable_again(a, b);
      INFO("peer access GPU " << a << " -> GPU " << b << " was switched on by sum_resident");
      CHECK(again == cudaSuccess);
    }
}

TEST_CASE("every worker's reduction is launched before the call waits for any of them",
          "[04-split-reduction][task:2][gpus:1][points:2][overlap]") {
  require_gpus(1);
  const std::size_t n = 3000001;
  const std::vector<float> values = course::random_small_integers(n, case_seed(220));
  SplitWorkspace workspace(repeated(0, 3), 1024);
  const Slices slices = place_slices(workspace, values, n);
  for (const Combine combine : {Combine::on_host, Combine::on_device}) {
    (void)sum_resident(workspace, slices.pointers, n, combine);  // loads every kernel it uses, ungated
    poison_results(workspace);
    double got = 0;
    const HeldOutcome outcome = run_with_stream_held(
        workspace.workers[0].stream, "sum_resident with worker 0 held back",
        [&] { got = sum_resident(workspace, slices.pointers, n, combine); },
        others_hold_their_sums(workspace, values, n, 0));
    INFO("combine " << to_string(combine) << ": " << held_message(outcome, "worker 0's stream"));
    CHECK(outcome.others_finished);
    CHECK(got == exact_sum(values, 0, n));
  }
}

TEST_CASE("the total waits for every worker's partial whichever worker is held back",
          "[04-split-reduction][task:2][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t n = 3000001;
  const std::vector<float> values = course::random_small_integers(n, case_seed(230));
  SplitWorkspace workspace(repeated(0, 3), 1024);
  const Slices slices = place_slices(workspace, values, n);
  for (const Combine combine : {Combine::on_host, Combine::on_device})
    check_waits_for_every_worker(
        workspace, std::string("sum_resident, combine ") + to_string(combine),
        [&] { return sum_resident(workspace, slices.pointers, n, combine); }, exact_sum(values, 0, n));
}

TEST_CASE("a second call never reuses a partial of the first", "[04-split-reduction][task:2][gpus:1][points:1]") {
  require_gpus(1);
  const std::vector<float> values = course::random_small_integers(1 << 20, case_seed(240));
  SplitWorkspace workspace(repeated(0, 4), 1024);
  for (const Combine combine : {Combine::on_host, Combine::on_device})
    for (const std::size_t n : {std::size_t{1} << 20, std::size_t{2}, std::size_t{0}}) {  // no poison in between
      const Slices slices = place_slices(workspace, values, n);
      INFO("combine " << to_string(combine) << ", n = " << n << " over 4 workers, right after a larger sum");
      CHECK(sum_resident(workspace, slices.pointers, n, combine) == exact_sum(values, 0, n));
    }
}

TEST_CASE("slice lists that do not fit the workers are rejected", "[04-split-reduction][task:2][gpus:1][points:1]") {
  require_gpus(1);
  SplitWorkspace workspace(repeated(0, 3), 16);
  const course::DeviceBuffer<float> data(0, 16);
  const std::vector<const float*> two = {data.data(), data.data()};
  const std::vector<const float*> with_null = {data.data(), nullptr, data.data()};
  const std::vector<const float*> empty_null = {data.data(), data.data(), nullptr};
  CHECK_THROWS_AS(sum_resident(workspace, two, 10), std::invalid_argument);
  CHECK_THROWS_AS(sum_resident(workspace, with_null, 10), std::invalid_argument);
  poison_results(workspace);  // n = 0 still writes 0 to every worker's slot: a fresh one may read as 0
  CHECK(sum_resident(workspace, empty_null, 0) == 0.0);  // an empty slice may be nullptr
}

TEST_CASE("two GPUs sum a large array in clearly less time than one",
          "[04-split-reduction][task:2][gpus:2][points:2][timing]") {
  require_gpus(2);
  const std::size_t n = std::size_t{1} << 29;  // 2 GiB: each GPU reads for about a third of a millisecond or more
  const std::vector<int> one_device = {0}, two_devices = {0, 1};
  SplitWorkspace one(one_device, 1), two(two_devices, 1);
  const course::DeviceBuffer<float> whole(0, n), half0(0, n / 2), half1(1, n - n / 2);
  CUDA_CHECK(cudaMemset(whole.data(), 0x3C, whole.bytes()));
  CUDA_CHECK(cudaMemset(half0.data(), 0x3C, half0.bytes()));
  {
    const course::DeviceGuard on_1(1);
    CUDA_CHECK(cudaMemset(half1.data(), 0x3C, half1.bytes()));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<const float*> whole_slice = {whole.data()}, halves = {half0.data(), half1.data()};
  const course::Timing t1 = course::measure_host([&] { (void)sum_resident(one, whole_slice, n); }, 2, 10);
  const course::Timing t2 = course::measure_host([&] { (void)sum_resident(two, halves, n); }, 2, 10);
  INFO("one GPU " << t1.median_ms << " ms, two GPUs " << t2.median_ms
                  << " ms (median of 10): ideally half; about the same means they took turns");
  CHECK(t2.median_ms < 0.75 * t1.median_ms);
}
