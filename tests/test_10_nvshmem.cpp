// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10 tests, task 1: the symmetric heap. Each graded case runs `mpirun -n N` on this program with
// a hidden case below, in which every PE allocates symmetric floats, asks how it reaches each PE's copy,
// and writes seeded floats into another PE's copy (its own, on one PE) by pointer and by put, into
// poisoned memory; after a barrier on the stream, each PE checks its own copy bit for bit and that
// nothing was written past the count.
#include <cuda_runtime.h>
#include <nvshmem_host.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"
#include "device_initiated.h"
#include "test_10_nvshmem_support.h"

using namespace lesson10;
using namespace lesson10_tests;

namespace {

constexpr const char* kPutRankCase = "rank: every PE writes into the next PE's copy by pointer and by put";
constexpr std::size_t kCount = 100003;  // not a multiple of any block's share
constexpr std::size_t kTail = 64;       // poisoned floats past the count, never written

std::vector<float> data_of(int pe, std::uint64_t salt) {
  return course::random_floats(kCount, job_seed(salt * 64 + pe));
}

// One round: every PE writes its data into PE (pe + 1) % pes's copy along `path`, meets the others in a
// barrier, and checks what the previous PE wrote into its own copy. "" when right.
std::string one_round(const Session& session, const SymmetricFloats& buffer, PeerPath path, std::uint64_t salt,
                      int callers_device) {
  const course::DeviceGuard on_device(session.device);
  course::poison_device(buffer.data, buffer.count * sizeof(float));
  const course::Stream stream(session.device);
  course::DeviceBuffer<float> source(session.device, kCount);
  const std::vector<float> mine = data_of(session.pe, salt);
  CUDA_CHECK(cudaMemcpy(source.data(), mine.data(), source.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaDeviceSynchronize());
  nvshmem_barrier_all();  // every copy is poisoned before any PE writes
  const int target = (session.pe + 1) % session.pes;
  {
    const course::DeviceGuard callers(callers_device);
    enqueue_put(session, source.data(), buffer, target, kCount, path, stream);
    if (course::testing::current_device() != callers_device) return "enqueue_put changed the current device";
  }
  nvshmemx_barrier_all_on_stream(stream);
  stream.synchronize();
  std::vector<float> got(buffer.count);
  CUDA_CHECK(cudaMemcpy(got.data(), buffer.data, buffer.count * sizeof(float), cudaMemcpyDeviceToHost));
  const int source_pe = (session.pe + session.pes - 1) % session.pes;
  const std::vector<float> expected = data_of(source_pe, salt);
  const course::Comparison comparison = course::compare_exact(got.data(), expected.data(), kCount);
  const std::string how = path == PeerPath::load_store ? "by pointer" : "by put";
  if (!comparison.ok()) return "PE " + std::to_string(source_pe) + "'s data " + how + ": " + comparison.describe();
  for (std::size_t i = kCount; i < buffer.count; ++i)
    if (!course::is_poisoned(got[i])) return "element " + std::to_string(i) + ", past the count, was written " + how;
  return "";
}

}  // namespace

TEST_CASE(kPutRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    const int callers_device = rank.visible_devices() > 1 ? (session.device + 1) % rank.visible_devices() : 0;
    CHECK_THROWS_AS(allocate_symmetric(session, 0), std::invalid_argument);
    SymmetricFloats buffer;
    {
      const course::DeviceGuard callers(callers_device);
      buffer = allocate_symmetric(session, kCount + kTail);
      if (course::testing::current_device() != callers_device) return "allocate_symmetric changed the current device";
    }
    if (buffer.data == nullptr || buffer.count != kCount + kTail)
      return "allocate_symmetric gave no buffer of the count";
    cudaPointerAttributes attributes{};
    CUDA_CHECK(cudaPointerGetAttributes(&attributes, buffer.data));
    if (attributes.device != session.device) return "the symmetric buffer is not in the memory of the PE's device";
    CHECK_THROWS_AS(peer_path(session, buffer, -1), std::invalid_argument);
    CHECK_THROWS_AS(peer_path(session, buffer, session.pes), std::invalid_argument);
    if (peer_path(session, buffer, session.pe) != PeerPath::load_store)
      return "peer_path of the PE itself is not load_store (nvshmem_ptr gives its own address)";
    const int target = (session.pe + 1) % session.pes;
    const PeerPath expected = nvshmem_ptr(buffer.data, target) != nullptr ? PeerPath::load_store : PeerPath::put;
    if (peer_path(session, buffer, target) != expected) return "peer_path does not say what nvshmem_ptr says";
    const course::Stream stream(session.device);
    CHECK_THROWS_AS(enqueue_put(session, buffer.data, buffer, target, buffer.count + 1, PeerPath::put, stream),
                    std::invalid_argument);
    CHECK_THROWS_AS(enqueue_put(session, nullptr, buffer, target, 1, PeerPath::put, stream), std::invalid_argument);
    CHECK_THROWS_AS(enqueue_put(session, buffer.data, buffer, session.pes, 1, PeerPath::put, stream),
                    std::invalid_argument);
    enqueue_put(session, nullptr, buffer, target, 0, PeerPath::put, stream);  // count 0: nothing
    std::string wrong = one_round(session, buffer, PeerPath::put, 1, callers_device);
    if (wrong.empty() && expected == PeerPath::load_store)
      wrong = one_round(session, buffer, PeerPath::load_store, 2, callers_device);
    {
      const course::DeviceGuard callers(callers_device);
      free_symmetric(session, buffer);
      if (wrong.empty() && course::testing::current_device() != callers_device)
        return "free_symmetric changed the current device";
    }
    if (wrong.empty() && (buffer.data != nullptr || buffer.count != 0)) return "free_symmetric left the buffer set";
    free_symmetric(session, buffer);  // an empty one: nothing
    return wrong;
  });
}

TEST_CASE("one PE allocates on the symmetric heap and writes its own copy by pointer and by put",
          "[10-nvshmem][task:1][gpus:1][points:2]") {
  check_job(run_pes(kPutRankCase, 1, 0x1001, std::chrono::seconds(60)), 1);
}

TEST_CASE("two PEs on two GPUs write into each other's copies by pointer and by put and keep the caller's device",
          "[10-nvshmem][task:1][gpus:2][points:3]") {
  check_job(run_pes(kPutRankCase, 2, 0x1002, std::chrono::seconds(60)), 2);
}
