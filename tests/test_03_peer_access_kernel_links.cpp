// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 tests, tasks 4 and 5: a kernel on one device adding a buffer that lives on another
// (checked element by element, and with too little memory left for a copy), then the link
// measurements. Timing facts are ratios with wide margins against the test's own reference
// measurement, asserted only on links where the hardware makes them true, never absolute times.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/timer.h"
#include "peer_access.h"
#include "test_03_peer_access_support.h"

using namespace lesson03;
using namespace lesson03_tests;
using namespace course::testing;

// ---- Task 4 ---------------------------------------------------------------------------------

namespace {

const std::vector<std::size_t> kKernelSizes = {0, 1, 1000, (std::size_t{1} << 20) + 3};
constexpr const char* kAddHint = "the kernel or its stream never finished: is the launch on a stream of device a?";

// Runs add_peer_buffer on device a with `remote` on device b and checks every element.
void check_add(int a, int b, std::uint64_t seed) {
  const std::size_t largest = *std::max_element(kKernelSizes.begin(), kKernelSizes.end());
  const std::vector<float> local = course::random_small_integers(largest, seed);
  const std::vector<float> remote = course::random_small_integers(largest, seed + 1);
  std::vector<float> expected(largest);
  for (std::size_t i = 0; i < largest; ++i) expected[i] = local[i] + remote[i];  // exact: small integers

  const course::DeviceBuffer<float> local_a(a, largest), out_a(a, largest);
  const course::DeviceBuffer<float> remote_b(b, largest);
  upload<float>(local_a.data(), a, local);
  upload<float>(remote_b.data(), b, remote);
  for (std::size_t n : kKernelSizes) {
    {
      course::DeviceGuard on_a(a);
      course::poison_device(out_a.data(), out_a.bytes());
    }
    const int caller_device = b;  // the caller's current device is not a: the function must switch
    CUDA_CHECK(cudaSetDevice(caller_device));
    add_peer_buffer(a, out_a.data(), local_a.data(), b, remote_b.data(), n);
    INFO("add_peer_buffer on GPU " << a << " reading GPU " << b << ", n = " << n);
    CHECK(current_device() == caller_device);
    const std::vector<float> got = read_back(out_a.data(), a, largest);
    const course::Comparison sum = course::compare_exact(got.data(), expected.data(), n);
    INFO("out[0, n): " << sum.describe());
    CHECK(sum.ok());
    const auto written_after_n = std::count_if(got.begin() + static_cast<std::ptrdiff_t>(n), got.end(),
                                               [](float v) { return !course::is_poisoned(v); });
    INFO(written_after_n << " elements at or after n were written (they must stay poisoned)");
    CHECK(written_after_n == 0);
  }
}

// Peer access from a to b and nothing else: what add_peer_buffer(a, ..., b, ...) needs. Device b
// (or any device but a) cannot reach a's memory, so a kernel launched anywhere but on a faults
// on its first read of `local` (an illegal address; the grader reruns the case alone, so the
// broken CUDA context costs this case only) instead of passing by luck.
void enable_only_a_to_b(int a, int b) {
  (void)set_peer_access_by_runtime(false);
  const cudaError_t was = enable_again(a, b);
  INFO("enabling peer access GPU " << a << " -> GPU " << b << " answered " << cudaGetErrorName(was));
  REQUIRE(was == cudaSuccess);
}

}  // namespace

TEST_CASE("a kernel adds a buffer of its own device", "[03-peer-access][task:4][gpus:1][points:1]") {
  const int count = require_gpus(1);
  run_with_watchdog("add_peer_buffer on each GPU", kCopyLimit, kAddHint, [&] {
    for (int d = 0; d < count; ++d) check_add(d, d, case_seed(600 + d));
  });
  CUDA_CHECK(cudaSetDevice(0));
}

TEST_CASE("add_peer_buffer returns only once its kernel has finished", "[03-peer-access][task:4][gpus:1][points:1]") {
  // 2^27 floats a buffer: the kernel reads 1 GiB and writes 512 MiB, at least as long as the device
  // takes to copy 512 MiB (timed here with events, the yardstick). A call that waits for its kernel
  // lasts at least that long on the host; one that launches and returns takes microseconds. The
  // margin is wide (a third of the copy), so only a call that does not wait can fail. (Reading the
  // last elements the moment the call returns does not work: with a grid-stride loop they belong
  // to the first blocks, which are done long before the kernel is.)
  require_gpus(1);
  constexpr std::size_t n = std::size_t{1} << 27;
  const course::DeviceBuffer<float> local(0, n), remote(0, n), out(0, n);
  fill_device(local.data(), 0, n, 1.5f);
  fill_device(remote.data(), 0, n, 2.25f);  // 1.5 + 2.25 = 3.75, exact in float
  const course::Stream stream(0);
  const double copy_ms = course::measure(0, stream.get(), [&] {
                           CUDA_CHECK(cudaMemcpyAsync(out.data(), local.data(), n * sizeof(float),
                                                      cudaMemcpyDeviceToDevice, stream.get()));
                         }).median_ms;
  double call_ms = 0;
  run_with_watchdog("add_peer_buffer on GPU 0", kCopyLimit, kAddHint, [&] {
    add_peer_buffer(0, out.data(), local.data(), 0, remote.data(), n);  // warm-up: the module loads
    {
      const course::DeviceGuard on(0);
      course::poison_device(out.data(), out.bytes());  // synchronizes the device
    }
    const auto start = std::chrono::steady_clock::now();
    add_peer_buffer(0, out.data(), local.data(), 0, remote.data(), n);
    call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  });
  {
    const course::DeviceGuard on(0);
    CUDA_CHECK(cudaDeviceSynchronize());  // a kernel still running must not outlive its buffers
  }
  INFO("add_peer_buffer of 2^27 floats returned after " << call_ms << " ms; the device copies 512 MiB in " << copy_ms
                                                        << " ms, and the kernel moves three times that: "
                                                        << "wait for the kernel's stream before returning");
  CHECK(call_ms >= copy_ms / 3);
  std::vector<float> sums(n);
  CUDA_CHECK(cudaMemcpy(sums.data(), out.data(), out.bytes(), cudaMemcpyDeviceToHost));
  CHECK(std::count(sums.begin(), sums.end(), 3.75f) == static_cast<std::ptrdiff_t>(n));
}

TEST_CASE("a kernel on one device adds a buffer that lives on another device",
          "[03-peer-access][task:4][gpus:2][points:3]") {
  const int count = require_gpus(2);
  const auto pairs = pairs_with_peer_access(count);
  if (pairs.empty()) SKIP(kNoPeerPair);
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b)
      if (a != b && !(runtime_can_access(a, b) && runtime_can_access(b, a)))
        WARN("pair GPU " << a << " -> GPU " << b << " not checked: cudaDeviceCanAccessPeer says no");
  // Only a -> b is on for each pair: a kernel launched on the caller's device (b, in check_add)
  // instead of a reads unmapped memory and ends the CUDA context, as it would on a machine where
  // b cannot reach a at all.
  run_with_watchdog("add_peer_buffer across GPUs", kCopyLimit, kAddHint, [&] {
    for (const auto& [a, b] : pairs) {
      enable_only_a_to_b(a, b);
      INFO("peer access is on from GPU " << a << " to GPU " << b << " only: a kernel on any other device than " << a
                                         << " cannot read a's buffers (an illegal memory access)");
      check_add(a, b, case_seed(700 + static_cast<std::uint64_t>(a * count + b)));
    }
  });
  (void)set_peer_access_by_runtime(true);
  CUDA_CHECK(cudaSetDevice(0));
}

TEST_CASE("the kernel reads the peer's buffer where it lives without a copy on its own device",
          "[03-peer-access][task:4][gpus:2][points:1]") {
  // Device a keeps less free memory than the remote buffer's size: code that first copies the
  // remote buffer to a (cudaMalloc + cudaMemcpyPeer) cannot, a kernel that reads it in place can.
  const int count = require_gpus(2);
  const auto pairs = pairs_with_peer_access(count);
  if (pairs.empty()) SKIP(kNoPeerPair);
  const auto [a, b] = pairs.front();
  enable_only_a_to_b(a, b);                         // all the kernel on a needs
  constexpr std::size_t n = std::size_t{64} << 20;  // 256 MiB of floats
  const std::uint64_t seed = case_seed(750);
  const std::vector<float> local = course::random_small_integers(n, seed),
                           remote = course::random_small_integers(n, seed + 1);
  const course::DeviceBuffer<float> local_a(a, n), out_a(a, n), remote_b(b, n);
  upload<float>(local_a.data(), a, local);
  upload<float>(remote_b.data(), b, remote);
  std::size_t free_a = 0, total_a = 0;
  {
    course::DeviceGuard on_a(a);
    course::poison_device(out_a.data(), out_a.bytes());
    CUDA_CHECK(cudaMemGetInfo(&free_a, &total_a));
  }
  const std::size_t headroom = n * sizeof(float) / 2;  // room for a stream and a kernel, not for the copy
  REQUIRE(free_a > headroom);
  const course::DeviceBuffer<std::uint8_t> filler(a, free_a - headroom);
  INFO("GPU " << a << " has about " << headroom / 1e6 << " MB free; the remote buffer on GPU " << b << " is "
              << n * sizeof(float) / 1e6 << " MB: read it through its address, do not copy it first");
  run_with_watchdog("add_peer_buffer with little memory left", kCopyLimit, kAddHint,
                    [&] { REQUIRE_NOTHROW(add_peer_buffer(a, out_a.data(), local_a.data(), b, remote_b.data(), n)); });
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = local[i] + remote[i];  // exact: small integers
  const std::vector<float> got = read_back(out_a.data(), a, n);
  const course::Comparison sum = course::compare_exact(got.data(), expected.data(), n);
  INFO(sum.describe());
  CHECK(sum.ok());
}

// ---- Task 5 ---------------------------------------------------------------------------------

namespace {

using Pair = std::pair<int, int>;

constexpr std::size_t kLargeCopy = std::size_t{256} << 20;  // 256 MiB: long enough for the link's full speed

void check_consistent(const Measurement& m, double bytes_per_operation, int repeats, const char* what) {
  INFO(what << ": median " << m.median_ms << " ms, min " << m.min_ms << " ms over " << m.repeats << " repeats, "
            << m.gigabytes_per_second << " GB/s for " << bytes_per_operation << " bytes");
  CHECK(m.repeats == repeats);
  CHECK(m.median_ms > 0);
  CHECK(m.min_ms > 0);
  CHECK(m.min_ms <= m.median_ms);
  // GB = 10^9 bytes, from the median: GiB (2^30) would be 7% off.
  CHECK_THAT(m.gigabytes_per_second,
             Catch::Matchers::WithinRel(course::gigabytes_per_second(bytes_per_operation, m.median_ms), 1e-6));
}

constexpr auto kMeasureLimit = std::chrono::seconds(300);
constexpr const char* kMeasureHint =
    "the timed work waits on the host for something that is never enqueued; in measure_both_ways, record each "
    "event before the other stream waits for it (fork, then join)";

}  // namespace

TEST_CASE("bandwidth figures count a GB as 10^9 bytes and report the median of the repeats",
          "[03-peer-access][task:5][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const MeasureOptions options{1, 5};
  const std::size_t bytes = std::size_t{64} << 20;
  run_with_watchdog("the task 5 measurements on GPU 0", kMeasureLimit, kMeasureHint, [&] {
    const Measurement one_way = measure_one_way(0, 0, bytes, options);
    check_consistent(one_way, static_cast<double>(bytes), options.repeats, "measure_one_way(0, 0)");
    check_consistent(measure_both_ways(0, 0, bytes, options), 2.0 * static_cast<double>(bytes), options.repeats,
                     "measure_both_ways(0, 0): one operation moves 2 * bytes");
    check_consistent(measure_staged(0, 0, bytes, true, std::size_t{4} << 20, options), static_cast<double>(bytes),
                     options.repeats, "measure_staged(0, 0, overlapped)");
    check_consistent(measure_staged(0, 0, bytes, false, std::size_t{4} << 20, options), static_cast<double>(bytes),
                     options.repeats, "measure_staged(0, 0, serial)");
    const Measurement latency = measure_latency(0, 0, options);
    check_consistent(latency, static_cast<double>(kLatencyBytes), options.repeats, "measure_latency(0, 0), per copy");
    INFO("a " << kLatencyBytes << "-byte copy took " << latency.median_ms * 1e3 << " us, a " << bytes << "-byte one "
              << one_way.median_ms * 1e3 << " us");
    CHECK(latency.median_ms < one_way.median_ms);
  });
  if (count < 2) return;  // leaving another device current shows only where there is one
  run_with_watchdog("the task 5 measurements on GPU 1, called with GPU 0 current", kMeasureLimit, kMeasureHint, [&] {
    const std::size_t small = std::size_t{4} << 20;
    const std::vector<std::pair<std::string, std::function<void()>>> calls = {
        {"measure_one_way(1, 1)", [&] { (void)measure_one_way(1, 1, small, options); }},
        {"measure_both_ways(1, 1)", [&] { (void)measure_both_ways(1, 1, small, options); }},
        {"measure_staged(1, 1, overlapped)", [&] { (void)measure_staged(1, 1, small, true, small / 4, options); }},
        {"measure_staged(1, 1, serial)", [&] { (void)measure_staged(1, 1, small, false, small / 4, options); }},
        {"measure_latency(1, 1)", [&] { (void)measure_latency(1, 1, options); }}};
    for (const auto& [what, call] : calls) {
      CUDA_CHECK(cudaSetDevice(0));
      call();
      INFO(what << " was called with GPU 0 current and must leave it current");
      CHECK(current_device() == 0);
    }
  });
}

TEST_CASE("the one-way bandwidth agrees with a reference measurement of the same copy",
          "[03-peer-access][task:5][gpus:1][points:1]") {
  const int count = require_gpus(1);
  (void)set_peer_access_by_runtime(true);  // where the hardware allows; the agreement must hold either way
  const std::size_t bytes = std::size_t{64} << 20;
  const std::vector<Pair> pairs = count > 1 ? std::vector<Pair>{{0, 0}, {0, 1}, {1, 0}} : std::vector<Pair>{{0, 0}};
  run_with_watchdog("measure_one_way", kMeasureLimit, kMeasureHint, [&] {
    for (const auto& [src, dst] : pairs) {
      const double reference = reference_one_way(src, dst, bytes);
      const int caller = src == count - 1 ? 0 : count - 1;  // not the source, where there is another GPU
      CUDA_CHECK(cudaSetDevice(caller));
      const Measurement m = measure_one_way(src, dst, bytes);
      INFO("GPU " << src << " -> GPU " << dst << ": measure_one_way says " << m.gigabytes_per_second
                  << " GB/s, the test's own measurement " << reference << " GB/s; GPU " << caller
                  << " was current before the call");
      CHECK(current_device() == caller);
      CHECK(m.gigabytes_per_second > 0.5 * reference);
      CHECK(m.gigabytes_per_second < 2.0 * reference);
    }
  });
}

TEST_CASE("with peer access off the same copy runs more than 3x slower through the host",
          "[03-peer-access][task:5][gpus:2][points:1]") {
  require_gpus(2);
  require_fast_link(0, 1, kLargeCopy);
  run_with_watchdog("measure_one_way with peer access on and off", kMeasureLimit, kMeasureHint, [&] {
    set_peer_access_by_runtime(true);
    const Measurement on = measure_one_way(0, 1, kLargeCopy);
    set_peer_access_by_runtime(false);
    const Measurement off = measure_one_way(0, 1, kLargeCopy);
    set_peer_access_by_runtime(true);
    INFO("GPU 0 -> GPU 1, " << kLargeCopy << " bytes: " << on.gigabytes_per_second << " GB/s with peer access on, "
                            << off.gigabytes_per_second << " GB/s with it off");
    CHECK(on.gigabytes_per_second > 3 * off.gigabytes_per_second);
  });
}

TEST_CASE("both directions at once move more than 1.3x the bytes of one direction",
          "[03-peer-access][task:5][gpus:2][points:1]") {
  require_gpus(2);
  require_fast_link(0, 1, kLargeCopy);
  run_with_watchdog("measure_both_ways between GPU 0 and GPU 1", kMeasureLimit, kMeasureHint, [&] {
    const Measurement one = measure_one_way(0, 1, kLargeCopy);
    const Measurement both = measure_both_ways(0, 1, kLargeCopy);
    INFO("one way " << one.gigabytes_per_second << " GB/s, both ways " << both.gigabytes_per_second
                    << " GB/s in total; links are full duplex, so both ways should approach twice one way");
    CHECK(both.gigabytes_per_second > 1.3 * one.gigabytes_per_second);
  });
}

TEST_CASE("the overlapped staged copy beats the serial one by more than 1.2x",
          "[03-peer-access][task:5][gpus:1][points:1]") {
  // Device to host and host to device use the two directions of PCIe and two copy engines, also
  // when source and destination are one GPU: overlapped, they run at once.
  const int count = require_gpus(1);
  const int src = 0, dst = count - 1;
  const std::size_t chunk = CopyOptions{}.chunk_bytes;
  run_with_watchdog("measure_staged", kMeasureLimit, kCopyHint, [&] {
    const Measurement serial = measure_staged(src, dst, kLargeCopy, false, chunk);
    const Measurement overlapped = measure_staged(src, dst, kLargeCopy, true, chunk);
    INFO("GPU " << src << " -> GPU " << dst << " through pinned host memory, " << kLargeCopy << " bytes in chunks of "
                << chunk << ": serial " << serial.gigabytes_per_second << " GB/s, overlapped "
                << overlapped.gigabytes_per_second << " GB/s (ideally close to 2x: the two halves run at once)");
    CHECK(overlapped.gigabytes_per_second > 1.2 * serial.gigabytes_per_second);
  });
}
