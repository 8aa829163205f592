// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 tests, task 3: copy_between_devices. The options and the choice of path are checked
// without a GPU; then copies of random bytes into poisoned destinations with a guard zone after
// the end, for every ordered pair, direct and staged, and a look into the caller's staging memory
// to prove a staged copy went through the host with two chunks in flight. Peer access is switched
// on and off here through the runtime directly, not through the student's task 2, so that each
// task is graded on its own.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/copies.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "peer_access.h"
#include "test_03_peer_access_support.h"

using namespace lesson03;
using namespace lesson03_tests;
using namespace course::testing;

namespace {

// Peer access on or off through the runtime (not the student's task 2), as the record task 3 takes.
PeerAccessState peer_access_by_runtime(bool on) {
  return PeerAccessState{set_peer_access_by_runtime(on)};
}

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

}  // namespace

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

TEST_CASE("a copy returns only once its bytes have arrived", "[03-peer-access][task:3][gpus:1][points:1]") {
  // Copies long enough to take a while (a direct one of 1 GiB within GPU 0, about a millisecond; a
  // staged one of 256 MiB through the host, about ten), and a look at the destination's last bytes
  // the moment the call returns, through pinned memory on a stream of the test's own (a Peeker,
  // which waits for nothing else): a copy that is enqueued but not waited for leaves them poisoned.
  require_gpus(1);
  constexpr unsigned char kByte = 0x5A;
  constexpr std::size_t kTail = 64;
  course::testing::Peeker peek(0, kTail);
  course::PinnedBuffer<std::uint8_t> staging(2 * CopyOptions{}.chunk_bytes);
  CopyOptions staged;
  staged.force_staged = true;
  staged.staging = &staging;  // the caller's: no pinned allocation of the copy's own to free (and wait for)
  const PeerAccessState none;
  for (const auto& [bytes, options, path] : {std::tuple{std::size_t{1} << 30, CopyOptions{}, "direct"},
                                             std::tuple{std::size_t{256} << 20, staged, "staged"}}) {
    INFO("a " << path << " copy of " << bytes << " bytes from GPU 0 to GPU 0");
    const course::DeviceBuffer<std::uint8_t> src(0, bytes), dst(0, bytes);
    {
      const course::DeviceGuard on(0);
      CUDA_CHECK(cudaMemset(src.data(), kByte, bytes));
      course::poison_device(dst.data(), dst.bytes());  // synchronizes the device, the memset included
    }
    std::vector<std::uint8_t> tail;
    run_with_watchdog("copy_between_devices", kCopyLimit, kCopyHint, [&] {
      (void)copy_between_devices(dst.data(), 0, src.data(), 0, bytes, none, options);
      tail = peek.values(dst.data() + bytes - kTail, kTail);
    });
    const auto arrived = std::count(tail.begin(), tail.end(), kByte);
    INFO(arrived << " of the last " << kTail << " bytes had arrived when the call returned: wait for the copy's "
                 << "stream (the destination's, for a staged copy) before returning");
    CHECK(arrived == static_cast<std::ptrdiff_t>(kTail));
    const course::DeviceGuard on(0);
    CUDA_CHECK(cudaDeviceSynchronize());  // a copy still running must not outlive its buffers
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
