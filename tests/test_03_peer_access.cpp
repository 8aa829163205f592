// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 tests, tasks 1 and 2: the peer matrix against what the CUDA runtime says (never
// against constants) and against a made-up matrix for the printed layout; then the peer-access
// record and the state enable/disable leave behind, read back from the runtime itself. Tasks 3
// (copies) and 4-5 (a kernel reading a peer's memory, the link measurements) are in
// test_03_peer_access_copies.cpp and test_03_peer_access_kernel_links.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "peer_access.h"
#include "test_03_peer_access_support.h"

using namespace lesson03;
using namespace lesson03_tests;
using namespace course::testing;

namespace {

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
