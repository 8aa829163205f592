// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 tests. Every fact about the machine is cross-checked against the CUDA runtime, never
// against constants. Peer access is switched on and off here through the runtime directly, not
// through the student's task 2, so that each task is graded on its own. Copies use random bytes
// into poisoned destinations with a guard zone after the end; timing facts are ratios with wide
// margins, asserted only on links where the hardware makes them true, never absolute times.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/copies.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/timer.h"
#include "peer_access.h"

using namespace lesson03;
using namespace course::testing;

namespace {

using Pair = std::pair<int, int>;

// Skip reasons start "needs N GPUs" like every skip for missing hardware, so graders read them as such.
constexpr const char* kNoPeerPair =
    "needs 2 GPUs with peer access between them; cudaDeviceCanAccessPeer is 0 for every pair here";

// Peer access on or off through the runtime (not the student's task 2), as the record task 3 takes.
PeerAccessState peer_access_by_runtime(bool on) {
  return PeerAccessState{set_peer_access_by_runtime(on)};
}

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

void check_record_shape(const PeerAccessState& state, int count, const char* which) {
  INFO(which << " returned a record of " << state.enabled.size() << " rows for " << count << " GPUs");
  REQUIRE(state.enabled.size() == static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    INFO("row " << d);
    REQUIRE(state.enabled[d].size() == static_cast<std::size_t>(count));
    CHECK_FALSE(state.enabled[d][d]);
  }
}

// ---- copying ----

constexpr std::size_t kSmallChunk = 4096;  // many chunks from small sizes
const std::vector<std::size_t> kSmallChunkSizes = {
    0, 1, kSmallChunk - 1, kSmallChunk, kSmallChunk + 1, 2 * kSmallChunk, 5 * kSmallChunk + 77};
const std::size_t kDefaultChunk = CopyOptions{}.chunk_bytes;
const std::vector<std::size_t> kDefaultChunkSizes = {2 * kDefaultChunk + 12345};  // two full chunks and a tail

// copy_between_devices for each size (check_copies), called from a device other
// than the source where the machine has one, so a copy that leaves the source current shows.
void check_copies(int src_device, int dst_device, const PeerAccessState& state, const CopyOptions& options,
                  const std::vector<std::size_t>& sizes, CopyPath expected_path, std::uint64_t seed) {
  CopySet set;
  set.src_device = src_device;
  set.dst_device = dst_device;
  set.sizes = sizes;
  set.seed = seed;
  set.expected_answer = to_string(expected_path);
  set.caller_device = src_device == gpu_count() - 1 ? 0 : gpu_count() - 1;
  set.what = "chunks of " + std::to_string(options.chunk_bytes) + (options.force_staged ? ", staged path forced" : "") +
             (options.staging ? ", caller's staging buffer" : ", no staging buffer given");
  course::testing::check_copies(set, [&](void* dst, const void* src, std::size_t bytes) {
    return std::string(to_string(copy_between_devices(dst, dst_device, src, src_device, bytes, state, options)));
  });
}

// Both size lists: many short chunks (through `staging` where given), then full-size chunks.
void check_copies_both_chunkings(int src, int dst, const PeerAccessState& state, bool force_staged,
                                 course::PinnedBuffer<std::uint8_t>* staging, CopyPath path, std::uint64_t salt) {
  CopyOptions small;
  small.force_staged = force_staged;
  small.chunk_bytes = kSmallChunk;
  small.staging = staging;
  check_copies(src, dst, state, small, kSmallChunkSizes, path, case_seed(salt));
  CopyOptions large;
  large.force_staged = force_staged;
  check_copies(src, dst, state, large, kDefaultChunkSizes, path, case_seed(salt + 1000));
}

constexpr auto kCopyLimit = std::chrono::seconds(120);
constexpr const char* kCopyHint =
    "a host loop (cudaEventQuery, cudaStreamQuery) waits for work that was never enqueued, or for a stream "
    "of the other device; wait with cudaStreamWaitEvent and synchronize the destination's stream once at the end";

// ---- measuring ----

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

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("the peer matrix has a row and a column per device and nothing on its diagonal",
          "[03-peer-access][task:1][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const PeerMatrix matrix = query_peer_matrix();
  CHECK(matrix.device_count == count);
  REQUIRE(matrix.links.size() == static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) {
    INFO("row " << d);
    REQUIRE(matrix.links[d].size() == static_cast<std::size_t>(count));
    const PeerLink& self = matrix.links[d][d];
    CHECK_FALSE(self.can_access);
    CHECK_FALSE(self.access_supported);
    CHECK_FALSE(self.native_atomics);
    CHECK(self.performance_rank == 0);
  }
}

TEST_CASE("every entry of the peer matrix matches what the runtime says",
          "[03-peer-access][task:1][gpus:2][points:2]") {
  const int count = require_gpus(2);
  const PeerMatrix matrix = query_peer_matrix();
  REQUIRE(matrix.links.size() == static_cast<std::size_t>(count));
  for (int from = 0; from < count; ++from) {
    REQUIRE(matrix.links[from].size() == static_cast<std::size_t>(count));
    for (int to = 0; to < count; ++to) {
      if (from == to) continue;
      int rank = 0, access = 0, atomics = 0;
      CUDA_CHECK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, from, to));
      CUDA_CHECK(cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, from, to));
      CUDA_CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, from, to));
      const PeerLink& link = matrix.links[from][to];
      INFO("link GPU " << from << " -> GPU " << to);
      CHECK(link.can_access == runtime_can_access(from, to));
      CHECK(link.performance_rank == rank);
      CHECK(link.access_supported == (access != 0));
      CHECK(link.native_atomics == (atomics != 0));
    }
  }
}

TEST_CASE("the peer matrix prints like nvidia-smi topo -m with one row per accessing device",
          "[03-peer-access][task:1][gpus:0][points:1]") {
  // Made up and deliberately one-sided, so that rows and columns cannot be swapped unnoticed:
  // GPU0 reaches GPU1 and GPU2, GPU1 reaches only GPU0, GPU2 reaches nobody: its link to GPU0 has
  // attributes but cannot be enabled, and '-' follows can_access alone.
  PeerMatrix matrix;
  matrix.device_count = 3;
  matrix.links.assign(3, std::vector<PeerLink>(3));
  matrix.links[0][1] = PeerLink{true, 0, true, true};
  matrix.links[0][2] = PeerLink{true, 2, true, false};
  matrix.links[1][0] = PeerLink{true, 1, true, true};
  matrix.links[2][0] = PeerLink{false, 3, true, true};
  std::ostringstream out;
  print_peer_matrix(out, matrix);
  const auto lines = nonempty_lines(out.str());
  INFO("printed:\n" << out.str());
  REQUIRE(lines.size() >= 4);
  CHECK(words_of(lines[0]) == std::vector<std::string>{"GPU0", "GPU1", "GPU2"});
  CHECK(words_of(lines[1]) == std::vector<std::string>{"GPU0", "X", "P2P/r0/A", "P2P/r2"});
  CHECK(words_of(lines[2]) == std::vector<std::string>{"GPU1", "P2P/r1/A", "X", "-"});
  CHECK(words_of(lines[3]) == std::vector<std::string>{"GPU2", "-", "-", "X"});
}

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("the peer-access record has a row and a column per device and nothing on its diagonal",
          "[03-peer-access][task:2][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const PeerAccessState enabled = enable_peer_access_all();
  check_record_shape(enabled, count, "enable_peer_access_all()");
  for (int device = 0; device < count; ++device)
    for (int peer = 0; peer < count; ++peer)
      if (device != peer) {
        INFO("record of GPU " << device << " -> GPU " << peer);
        CHECK(enabled.enabled[device][peer] == runtime_can_access(device, peer));
      }
  const PeerAccessState disabled = disable_peer_access_all();
  check_record_shape(disabled, count, "disable_peer_access_all()");
  for (const auto& row : disabled.enabled) CHECK(std::none_of(row.begin(), row.end(), [](bool on) { return on; }));
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("peer access is enabled in both directions for every pair that supports it",
          "[03-peer-access][task:2][gpus:2][points:2]") {
  const int count = require_gpus(2);
  const auto pairs = pairs_with_peer_access(count);
  if (pairs.empty()) SKIP(kNoPeerPair);
  set_peer_access_by_runtime(false);
  (void)enable_peer_access_all();
  for (const auto& [device, peer] : pairs) {
    const cudaError_t again = enable_again(device, peer);
    INFO("after enable_peer_access_all(), enabling GPU " << device << " -> GPU " << peer << " again returned "
                                                         << cudaGetErrorName(again)
                                                         << " (cudaSuccess means it was still off)");
    CHECK(again == cudaErrorPeerAccessAlreadyEnabled);
  }
}

TEST_CASE("enabling peer access twice leaves no error behind", "[03-peer-access][task:2][gpus:2][points:2]") {
  const int count = require_gpus(2);
  if (pairs_with_peer_access(count).empty()) SKIP(kNoPeerPair);
  set_peer_access_by_runtime(false);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  (void)enable_peer_access_all();
  REQUIRE_NOTHROW(enable_peer_access_all());  // the second call finds every pair already enabled
  const cudaError_t left_behind = cudaGetLastError();
  INFO("cudaGetLastError() after the second call: " << cudaGetErrorName(left_behind)
                                                    << "; the \"already enabled\" answer must be cleared, or the next "
                                                       "unrelated check reports it");
  CHECK(left_behind == cudaSuccess);
}

TEST_CASE("disabling peer access turns off every pair and leaves no error behind",
          "[03-peer-access][task:2][gpus:2][points:1]") {
  const int count = require_gpus(2);
  const auto pairs = pairs_with_peer_access(count);
  if (pairs.empty()) SKIP(kNoPeerPair);
  set_peer_access_by_runtime(true);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  (void)disable_peer_access_all();
  REQUIRE_NOTHROW(disable_peer_access_all());  // the second call finds every pair already off
  const cudaError_t left_behind = cudaGetLastError();
  INFO("cudaGetLastError() after the second call: " << cudaGetErrorName(left_behind));
  CHECK(left_behind == cudaSuccess);
  for (const auto& [device, peer] : pairs) {
    const cudaError_t again = disable_again(device, peer);
    INFO("after disable_peer_access_all(), disabling GPU " << device << " -> GPU " << peer << " again returned "
                                                           << cudaGetErrorName(again));
    CHECK(again == cudaErrorPeerAccessNotEnabled);
  }
}

TEST_CASE("enabling and disabling peer access leave the caller's current device unchanged",
          "[03-peer-access][task:2][gpus:2][points:1]") {
  const int count = require_gpus(2);
  for (int current = 0; current < count; ++current) {
    INFO("device " << current << " was current");
    CUDA_CHECK(cudaSetDevice(current));
    (void)enable_peer_access_all();
    CHECK(current_device() == current);
    (void)disable_peer_access_all();
    CHECK(current_device() == current);
  }
}

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("copy options that cannot work are rejected before any copy starts",
          "[03-peer-access][task:3][gpus:0][points:1]") {
  // Runs without a GPU: the options are checked before the first CUDA call.
  const PeerAccessState none;
  CopyOptions zero_chunk;
  zero_chunk.chunk_bytes = 0;
  CHECK_THROWS_AS(copy_between_devices(nullptr, 1, nullptr, 0, 16, none, zero_chunk), std::invalid_argument);
  course::PinnedBuffer<std::uint8_t> too_small;  // empty: holds 0 bytes, not two chunks
  CopyOptions small_staging;
  small_staging.chunk_bytes = 4096;
  small_staging.staging = &too_small;
  CHECK_THROWS_AS(copy_between_devices(nullptr, 1, nullptr, 0, 16, none, small_staging), std::invalid_argument);
}

TEST_CASE("the path follows the peer-access record and not what the hardware could do",
          "[03-peer-access][task:3][gpus:0][points:1]") {
  // Copies of 0 bytes make no CUDA call, so this runs without a GPU: only the decision is checked.
  PeerAccessState both_on;
  both_on.enabled = {{false, true}, {true, false}};
  PeerAccessState one_way;
  one_way.enabled = {{false, true}, {false, false}};  // GPU0 -> GPU1 only
  const PeerAccessState none;
  CopyOptions forced;
  forced.force_staged = true;
  const auto path = [](int dst, int src, const PeerAccessState& state, const CopyOptions& options) {
    return std::string(to_string(copy_between_devices(nullptr, dst, nullptr, src, 0, state, options)));
  };
  CHECK(path(1, 0, both_on, {}) == "direct");
  CHECK(path(0, 1, both_on, {}) == "direct");
  CHECK(path(1, 0, one_way, {}) == "staged");  // a direct copy needs both directions on
  CHECK(path(1, 0, none, {}) == "staged");     // peer access off: the silent fallback, made visible
  CHECK(path(0, 0, none, {}) == "direct");     // a device to itself needs no peer access
  CHECK(path(1, 0, both_on, forced) == "staged");
  CHECK(path(0, 0, none, forced) == "staged");
}

TEST_CASE("a copy from a device to itself is direct and arrives intact", "[03-peer-access][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const PeerAccessState none;
  run_with_watchdog("copy_between_devices within one device", kCopyLimit, kCopyHint, [&] {
    for (int d = 0; d < count; ++d) check_copies_both_chunkings(d, d, none, false, nullptr, CopyPath::direct, 300 + d);
  });
}

TEST_CASE("a forced staged copy arrives intact for every ordered pair including a device to itself",
          "[03-peer-access][task:3][gpus:1][points:2]") {
  const int count = require_gpus(1);
  const PeerAccessState state = peer_access_by_runtime(true);  // forced: staged even where direct works
  course::PinnedBuffer<std::uint8_t> staging(2 * kSmallChunk);
  run_with_watchdog("the staged copy_between_devices", kCopyLimit, kCopyHint, [&] {
    for (int src = 0; src < count; ++src)
      for (int dst = 0; dst < count; ++dst)  // short chunks through the caller's staging memory, long through its own
        check_copies_both_chunkings(src, dst, state, true, &staging, CopyPath::staged,
                                    320 + static_cast<std::uint64_t>(src * count + dst));
  });
}

TEST_CASE("a staged copy goes through the caller's pinned memory with two chunks in flight",
          "[03-peer-access][task:3][gpus:1][points:2]") {
  // After a staged copy of six chunks (the last one short) through the caller's staging memory,
  // that memory must hold the last two chunks, each whole and apart: the copy went through the
  // host, and two chunks were in flight (one slot each). A single cudaMemcpyPeerAsync leaves it
  // poisoned; one slot for every chunk leaves only the last chunk whole.
  const int count = require_gpus(1);
  constexpr std::size_t kBytes = 5 * kSmallChunk + 77;
  const std::vector<std::uint8_t> input = course::random_bytes(kBytes, case_seed(330));
  course::PinnedBuffer<std::uint8_t> staging(2 * kSmallChunk);
  const std::vector<std::pair<int, int>> pairs =
      count > 1 ? std::vector<std::pair<int, int>>{{0, 0}, {0, 1}} : std::vector<std::pair<int, int>>{{0, 0}};
  for (const auto& [src, dst] : pairs) {
    INFO("a forced staged copy of " << kBytes << " bytes in chunks of " << kSmallChunk << ", GPU " << src << " to GPU "
                                    << dst);
    const course::DeviceBuffer<std::uint8_t> from(src, kBytes), to(dst, kBytes);
    upload<std::uint8_t>(from.data(), src, input);
    std::fill(staging.data(), staging.data() + staging.size(), course::kPoisonByte);
    CopyOptions options;
    options.force_staged = true;
    options.chunk_bytes = kSmallChunk;
    options.staging = &staging;
    run_with_watchdog("the staged copy_between_devices", kCopyLimit, kCopyHint, [&] {
      (void)copy_between_devices(to.data(), dst, from.data(), src, kBytes, PeerAccessState{}, options);
    });
    const auto find = [&](std::size_t begin, std::size_t end) {
      return std::search(staging.data(), staging.data() + staging.size(), input.begin() + begin, input.begin() + end) -
             staging.data();
    };
    const std::ptrdiff_t last = find(5 * kSmallChunk, kBytes), before_last = find(4 * kSmallChunk, 5 * kSmallChunk);
    const auto nowhere = static_cast<std::ptrdiff_t>(staging.size());
    INFO("in the staging memory, the last chunk starts at byte "
         << (last == nowhere ? -1 : last) << " and the one before it at byte "
         << (before_last == nowhere ? -1 : before_last)
         << " (-1: not there, whole). Stage every chunk through options.staging, alternating its two halves");
    CHECK(last != nowhere);
    CHECK(before_last != nowhere);
    CHECK((last >= before_last + static_cast<std::ptrdiff_t>(kSmallChunk) || before_last >= last + 77));
  }
}

TEST_CASE("with peer access on copies between devices are direct and arrive intact",
          "[03-peer-access][task:3][gpus:2][points:2]") {
  const int count = require_gpus(2);
  const auto pairs = pairs_with_peer_access(count);
  if (pairs.empty()) SKIP(kNoPeerPair);
  const PeerAccessState state = peer_access_by_runtime(true);
  run_with_watchdog("the direct copy_between_devices", kCopyLimit, kCopyHint, [&] {
    for (const auto& [src, dst] : pairs)
      check_copies_both_chunkings(src, dst, state, false, nullptr, CopyPath::direct,
                                  400 + static_cast<std::uint64_t>(src * count + dst));
  });
}

TEST_CASE("with peer access off copies between devices are staged and arrive intact",
          "[03-peer-access][task:3][gpus:2][points:2]") {
  const int count = require_gpus(2);
  // Off everywhere: cudaMemcpyPeer would still "work" here, silently through the host; the reported
  // path must say so.
  const PeerAccessState state = peer_access_by_runtime(false);
  run_with_watchdog("the staged copy_between_devices", kCopyLimit, kCopyHint, [&] {
    for (int src = 0; src < count; ++src)
      for (int dst = 0; dst < count; ++dst)
        if (src != dst)
          check_copies_both_chunkings(src, dst, state, false, nullptr, CopyPath::staged,
                                      500 + static_cast<std::uint64_t>(src * count + dst));
  });
}

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
    const auto written_after_n =
        std::count_if(got.begin() + static_cast<std::ptrdiff_t>(n), got.end(), [](float v) { return !std::isnan(v); });
    INFO(written_after_n << " elements at or after n were written (they must stay poisoned)");
    CHECK(written_after_n == 0);
  }
}

}  // namespace

TEST_CASE("a kernel adds a buffer of its own device", "[03-peer-access][task:4][gpus:1][points:1]") {
  const int count = require_gpus(1);
  run_with_watchdog("add_peer_buffer on each GPU", kCopyLimit, kAddHint, [&] {
    for (int d = 0; d < count; ++d) check_add(d, d, case_seed(600 + d));
  });
  CUDA_CHECK(cudaSetDevice(0));
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
  // On before any kernel runs: a kernel that reads unmapped peer memory would end the CUDA context.
  set_peer_access_by_runtime(true);
  run_with_watchdog("add_peer_buffer across GPUs", kCopyLimit, kAddHint, [&] {
    for (const auto& [a, b] : pairs) check_add(a, b, case_seed(700 + static_cast<std::uint64_t>(a * count + b)));
  });
  CUDA_CHECK(cudaSetDevice(0));
}

TEST_CASE("the kernel reads the peer's buffer where it lives without a copy on its own device",
          "[03-peer-access][task:4][gpus:2][points:1]") {
  // Device a keeps less free memory than the remote buffer's size: code that first copies the
  // remote buffer to a (cudaMalloc + cudaMemcpyPeer) cannot, a kernel that reads it in place can.
  const int count = require_gpus(2);
  const auto pairs = pairs_with_peer_access(count);
  if (pairs.empty()) SKIP(kNoPeerPair);
  (void)set_peer_access_by_runtime(true);
  const auto [a, b] = pairs.front();
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

TEST_CASE("bandwidth figures count a GB as 10^9 bytes and report the median of the repeats",
          "[03-peer-access][task:5][gpus:1][points:1]") {
  require_gpus(1);
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
