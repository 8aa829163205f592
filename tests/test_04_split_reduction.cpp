// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04 tests, task 1: the reduction on one GPU. Inputs are small integers stored as floats
// wherever a sum can be checked exactly (every order of addition gives the same double), random
// floats in [0, 1) and 2^30 copies of 0.1f (not an integer: every addition in float rounds) for
// the accuracy clause; every slot a result lands in is poisoned first, and the data sits between
// poisoned floats, so a lost, doubled or out-of-range element shows up as a wrong sum or a NaN.
// That enqueue_sum returns at once is checked with a "gate" (a host function that holds a stream
// until the test opens it; common/testing/held_stream.h), never with timing; the only timed fact
// is a ratio with a wide margin. Tasks 2 (the split) and 3-4 (from host memory, the crossover) are in
// test_04_split_reduction_split.cpp and test_04_split_reduction_host_crossover.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/timer.h"
#include "split_reduction.h"
#include "test_04_split_reduction_support.h"

using namespace lesson04;
using namespace lesson04_tests;

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("the sum is exact for every awkward length and every misaligned start",
          "[04-split-reduction][task:1][gpus:1][points:3]") {
  const int count = require_gpus(1);
  const std::vector<std::size_t> sizes = {
      0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 255, 1000, 4095, 4097, 65537, (1 << 20) + 3, 12345679};
  const std::vector<float> values = course::random_small_integers(sizes.back(), case_seed(100));
  for (int d = 0; d < count; ++d) {
    const int caller = count > 1 ? (d + 1) % count : 0;
    for (std::size_t misalign = 0; misalign < 4; ++misalign)
      for (const std::size_t n : sizes) {
        const course::DeviceBuffer<float> buffer = guarded_copy(d, values, 0, n, misalign);
        CUDA_CHECK(cudaSetDevice(caller));
        INFO("sum_on_device(" << d << ", data 16-byte aligned + " << misalign << " floats, n = " << n
                              << "); NaN means an element before or after the data was read");
        CHECK(sum_on_device(d, buffer.data() + kGuard + misalign, n) == exact_sum(values, 0, n));
        CHECK(current_device() == caller);
      }
  }
}

TEST_CASE("2^28 random floats in [0, 1) sum to within 1e-6 of a double-precision reference",
          "[04-split-reduction][task:1][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t n = std::size_t{1} << 28;
  // 1 GiB of floats, made in blocks of 2^22 on every core (one engine per block, seeded from the
  // case's seed and the block's index): one engine alone took most of this case's four seconds.
  const std::size_t block = std::size_t{1} << 22, blocks = n / block;
  const std::uint64_t seed = case_seed(110);
  std::vector<float> values(n);
  std::vector<double> block_sums(blocks, 0.0);
  {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
      threads.emplace_back([&] {
        for (std::size_t b; (b = next++) < blocks;) {
          const std::vector<float> part = course::random_floats(block, course::mix_seed(seed, b), 0.0f, 1.0f);
          std::copy(part.begin(), part.end(), values.begin() + static_cast<std::ptrdiff_t>(b * block));
          for (const float v : part) block_sums[b] += v;
        }
      });
    for (std::thread& t : threads) t.join();
  }
  double reference = 0;  // all positive, so this is also the sum of magnitudes the tolerance scales with
  for (const double partial : block_sums) reference += partial;
  const course::DeviceBuffer<float> data(0, n);
  course::testing::upload<float>(data.data(), 0, values);
  const double got = sum_on_device(0, data.data(), n);
  INFO("got " << got << ", double reference " << reference << ", relative error "
              << std::abs(got - reference) / reference
              << " (the contract allows 1e-6: add at most 16 floats in float, then carry the sum in double)");
  CHECK(std::abs(got - reference) <= 1e-6 * reference);
}

TEST_CASE("2^30 copies of 0.1f sum to within 1e-6 of n times 0.1f", "[04-split-reduction][task:1][gpus:1][points:2]") {
  require_gpus(1);
  // 0.1f is no small integer: a float running sum rounds at every addition, and with one value
  // everywhere the roundings do not cancel. 2^30 floats give each thread of a full grid hundreds
  // of groups of 16, enough for a float accumulator kept across them to break the bound.
  const std::size_t n = std::size_t{1} << 30;  // 4 GiB
  const std::size_t needed = n * sizeof(float) + (std::size_t{256} << 20);
  std::size_t free_bytes = 0, total_bytes = 0;
  {
    const course::DeviceGuard on_0(0);
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  }
  if (free_bytes < needed)
    SKIP("needs " << (needed >> 20) << " MiB of free memory on GPU 0 for 2^30 floats, found " << (free_bytes >> 20)
                  << " MiB");
  const course::DeviceBuffer<float> data(0, n);
  course::testing::fill_device(data.data(), 0, n, 0.1f);
  // Every element is the same positive float: the exact sum, and the sum of magnitudes, is n times it.
  const double exact = static_cast<double>(n) * static_cast<double>(0.1f);
  const double got = sum_on_device(0, data.data(), n);
  INFO("got " << got << ", exact " << exact << ", relative error " << std::abs(got - exact) / exact
              << " (the contract allows 1e-6: add at most 16 floats in float, then carry every running sum in "
                 "double, a thread's sum across the iterations of its loop too)");
  CHECK(std::abs(got - exact) <= 1e-6 * exact);
}

TEST_CASE("enqueue_sum returns at once then writes or adds its sum in stream order and n = 0 writes 0",
          "[04-split-reduction][task:1][gpus:1][points:1]") {
  require_gpus(1);
  const std::vector<float> values = course::random_small_integers(100003, case_seed(120));
  const course::DeviceBuffer<float> data = guarded_copy(0, values, 0, values.size());
  const float* first = data.data() + kGuard;
  const course::Stream stream(0);
  const course::DeviceBuffer<double> partials(0, kMaxBlocks), sum(0, 1);
  enqueue_sum(first, 1000, partials.data(), sum.data(), false, stream);  // loads the kernels: see kGateHint
  stream.synchronize();
  poison(0, sum.data(), sum.bytes());
  poison(0, partials.data(), partials.bytes());
  std::atomic<bool> returned{false};
  const HeldOutcome outcome = run_with_stream_held(
      stream, "enqueue_sum behind a held stream",
      [&] {
        enqueue_sum(first, 100003, partials.data(), sum.data(), false, stream);
        returned = true;
      },
      [&] { return returned.load(); }, 10s);
  INFO("enqueue_sum must enqueue and return: " << (outcome.call_returned_early
                                                       ? "it returned while its stream was held"
                                                       : "it waited for its stream, held for 10 s"));
  CHECK(outcome.call_returned_early);
  stream.synchronize();
  CHECK(read_double(sum.data()) == exact_sum(values, 0, 100003));
  enqueue_sum(first + 3, 1000, partials.data(), sum.data(), true, stream);  // accumulate
  stream.synchronize();
  CHECK(read_double(sum.data()) == exact_sum(values, 0, 100003) + exact_sum(values, 3, 1003));
  enqueue_sum(first, 0, partials.data(), sum.data(), false, stream);  // n = 0 still writes 0
  stream.synchronize();
  CHECK(read_double(sum.data()) == 0.0);
  enqueue_sum(first, 5, partials.data(), sum.data(), false, stream);
  enqueue_sum(first, 0, partials.data(), sum.data(), true, stream);  // adds nothing
  stream.synchronize();
  CHECK(read_double(sum.data()) == exact_sum(values, 0, 5));
}

TEST_CASE("the reduction takes at most twice as long as copying its input on the same device",
          "[04-split-reduction][task:1][gpus:1][points:2][timing]") {
  require_gpus(1);
  const std::size_t n = std::size_t{1} << 26;  // 256 MiB: far bigger than any cache
  const course::DeviceBuffer<float> src(0, n), dst(0, n);
  CUDA_CHECK(cudaMemset(src.data(), 0x3C, src.bytes()));
  const course::Stream stream(0);
  const course::DeviceBuffer<double> partials(0, kMaxBlocks), sum(0, 1);
  const course::Timing copy = course::measure(
      0, stream,
      [&] { CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, stream)); }, 2,
      10);
  const course::Timing reduce = course::measure(
      0, stream, [&] { enqueue_sum(src.data(), n, partials.data(), sum.data(), false, stream); }, 2, 10);
  INFO("copy " << copy.median_ms << " ms (it reads and writes " << src.bytes() << " bytes), reduction "
               << reduce.median_ms << " ms (it only reads them): a fast reduction takes about half the copy's time. "
               << "Much slower: too few blocks, scalar loads, or an atomic per element");
  CHECK(reduce.median_ms <= 2 * copy.median_ms);
}
