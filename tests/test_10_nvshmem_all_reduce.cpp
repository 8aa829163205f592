// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10 tests, task 3: an all-reduce of one kernel per PE that pushes every float in a word with its
// call's number (LL). Every PE sums seeded inputs into poisoned outputs and checks them bit for bit
// against the same sum in PE order on the CPU, and a hash of its results lets the graded case check that
// every PE got the same bits. The kernels are ordered only by their words: a PE held back before its call,
// or before its sum (the kernel's delay_sum_ns hook), must be waited for, its inbox half never overwritten
// before it has read it, and an older call's words never taken for this call's. A PE whose words never
// come (the silent_to hook) must leave the kernel giving up within its patience.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
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

constexpr const char* kSumRankCase = "rank: device-initiated all-reduce of every size";
constexpr const char* kLateRankCase = "rank: device-initiated all-reduce with one PE held back";
constexpr const char* kSilentRankCase = "rank: device-initiated all-reduce whose words never come";
constexpr std::size_t kMaxCount = std::size_t{1} << 18;  // 1 MiB of floats
constexpr std::size_t kTail = 64;                        // poisoned floats after each output, which no call may write

std::vector<float> input_of(int pe, std::size_t count, std::uint64_t salt) {
  return course::random_floats(count, job_seed(salt * 64 + pe));
}

// One PE's input and (poisoned) output, and the check of the output against the sum in PE order.
struct Operands {
  Operands(const Session& session, std::size_t count, std::uint64_t salt)
      : count(count), salt(salt), input(session.device, count), output(session.device, count + kTail) {
    const course::DeviceGuard on_device(session.device);
    const std::vector<float> mine = input_of(session.pe, count, salt);
    if (count > 0) CUDA_CHECK(cudaMemcpy(input.data(), mine.data(), input.bytes(), cudaMemcpyHostToDevice));
    course::poison_device(output.data(), output.bytes());
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::string check(int pes, std::vector<float>& results) const {
    std::vector<float> got(count + kTail);
    CUDA_CHECK(cudaMemcpy(got.data(), output.data(), output.bytes(), cudaMemcpyDeviceToHost));
    std::vector<float> expected = input_of(0, count, salt);
    for (int p = 1; p < pes; ++p) {
      const std::vector<float> theirs = input_of(p, count, salt);
      for (std::size_t i = 0; i < count; ++i) expected[i] += theirs[i];
    }
    results.insert(results.end(), got.begin(), got.begin() + static_cast<std::ptrdiff_t>(count));
    const course::Comparison comparison = course::compare_exact(got.data(), expected.data(), count);
    if (!comparison.ok()) return "count " + std::to_string(count) + ": " + comparison.describe();
    for (std::size_t i = count; i < count + kTail; ++i)
      if (!course::is_poisoned(got[i]))
        return "count " + std::to_string(count) + ": output[" + std::to_string(i) + "] was written, past the count";
    return "";
  }
  std::size_t count;
  std::uint64_t salt;
  course::DeviceBuffer<float> input, output;
};

// Enqueues a host function that sleeps 300 ms: the stream holds everything after it that long.
void hold_stream(cudaStream_t stream) {
  CUDA_CHECK(cudaLaunchHostFunc(
      stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }, nullptr));
}

void check_same_bits(const MpiJob& job, int ranks) {
  INFO(job.describe());
  for (int r = 1; r < ranks; ++r) CHECK(report_value(job.reports[r], "hash") == report_value(job.reports[0], "hash"));
}

}  // namespace

TEST_CASE(kSumRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    const int callers_device = rank.visible_devices() > 1 ? (session.device + 1) % rank.visible_devices() : 0;
    CHECK_THROWS_AS(open_all_reduce(session, 0), std::invalid_argument);
    AllReduceWorkspace workspace;
    {
      const course::DeviceGuard callers(callers_device);
      workspace = open_all_reduce(session, kMaxCount);
      if (course::testing::current_device() != callers_device) return "open_all_reduce changed the current device";
    }
    if (workspace.blocks < 1 || workspace.blocks > kMaxBlocks) return "workspace.blocks is not in [1, kMaxBlocks]";
    const course::Stream stream(session.device);
    std::vector<float> results;
    std::string wrong;
    std::uint64_t salt = 0;
    // 8 B to 1 MiB, uneven counts, one block and many (the grid changes from call to call).
    for (const std::size_t count : {std::size_t{2}, std::size_t{1}, std::size_t{3}, std::size_t{4097},
                                    std::size_t{16384}, std::size_t{100003}, kMaxCount}) {
      const Operands operands(session, count, ++salt);
      {
        const course::DeviceGuard callers(callers_device);
        device_all_reduce(workspace, operands.input.data(), operands.output.data(), count, stream);
        if (course::testing::current_device() != callers_device) wrong = "device_all_reduce changed the current device";
      }
      stream.synchronize();
      if (const std::string found = operands.check(session.pes, results); wrong.empty()) wrong = found;
    }
    if (wrong.empty() && workspace.calls != salt) wrong = "workspace.calls does not count the calls";
    const Operands empty(session, 0, ++salt);
    device_all_reduce(workspace, nullptr, empty.output.data(), 0, stream);  // nothing at all
    stream.synchronize();
    if (const std::string found = empty.check(session.pes, results); wrong.empty() && !found.empty())
      wrong = "count 0 wrote its output";
    CHECK_THROWS_AS(device_all_reduce(workspace, empty.input.data(), empty.output.data(), kMaxCount + 1, stream),
                    std::invalid_argument);
    CHECK_THROWS_AS(device_all_reduce(workspace, nullptr, empty.output.data(), 1, stream), std::invalid_argument);
    report(session.pe, "hash", bits_hash(results));
    close_all_reduce(workspace);
    return wrong;
  });
}

TEST_CASE("one PE's all-reduce kernel pushes to itself and gives its input back bit for bit",
          "[10-nvshmem][task:3][gpus:1][points:2]") {
  check_job(run_pes(kSumRankCase, 1, 0x1007, std::chrono::seconds(60)), 1);
}

TEST_CASE("two PEs all-reduce inside one kernel each with the same bits in PE order and keep the caller's device",
          "[10-nvshmem][task:3][gpus:2][points:3]") {
  const MpiJob job = run_pes(kSumRankCase, 2, 0x1008, std::chrono::seconds(60));
  check_job(job, 2);
  check_same_bits(job, 2);
}

TEST_CASE(kLateRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    AllReduceWorkspace workspace = open_all_reduce(session, kMaxCount);
    const course::Stream stream(session.device);
    const bool held = session.pe == session.pes - 1;
    // Call 2: the held PE's stream sleeps before its kernel (the others must wait for its words, not sum
    // the zeros of a half never written). Call 3, of 8192 floats: its kernel sleeps before its sum, while
    // the others' call 4 writes the other half, never the one it reads. Call 5: the held PE's stream
    // sleeps again, and the half the others read holds the words of calls 1 and 3, which they must not
    // take for call 5's.
    const std::size_t counts[] = {kMaxCount, kMaxCount, 8192, kMaxCount, kMaxCount};
    std::vector<Operands> calls;
    for (std::uint64_t salt = 1; salt <= 5; ++salt) calls.emplace_back(session, counts[salt - 1], salt);
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const AllReduceLaunch launch = [&](const AllReduceArgs& args, cudaStream_t s) {
        AllReduceArgs changed = args;
        if (held && (k == 1 || k == 4)) hold_stream(s);
        if (held && k == 2) changed.delay_sum_ns = 300'000'000;
        enqueue_all_reduce_kernel(changed, s);
      };
      device_all_reduce(workspace, calls[k].input.data(), calls[k].output.data(), counts[k], stream, launch);
    }
    stream.synchronize();
    std::vector<float> results;
    std::string wrong;
    for (std::size_t k = 0; k < calls.size() && wrong.empty(); ++k)
      if (const std::string found = calls[k].check(session.pes, results); !found.empty())
        wrong = "call " + std::to_string(k + 1) + ", " + found;
    report(session.pe, "hash", bits_hash(results));
    close_all_reduce(workspace);
    return wrong;
  });
}

TEST_CASE("a PE held back is waited for, its inbox half never overwritten and no old word taken",
          "[10-nvshmem][task:3][gpus:2][points:3]") {
  const MpiJob job = run_pes(kLateRankCase, 2, 0x1009, std::chrono::seconds(60));
  check_job(job, 2);
  check_same_bits(job, 2);
}

TEST_CASE(kSilentRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    AllReduceWorkspace workspace = open_all_reduce(session, 4096);
    workspace.patience_ns = 200'000'000;  // 0.2 s
    const course::Stream stream(session.device);
    const Operands operands(session, 4096, 1);
    const AllReduceLaunch silent = [&](const AllReduceArgs& args, cudaStream_t s) {
      AllReduceArgs changed = args;
      changed.silent_to = session.pe;  // no word of this call comes to this PE, not even its own
      enqueue_all_reduce_kernel(changed, s);
    };
    device_all_reduce(workspace, operands.input.data(), operands.output.data(), 4096, stream);
    const auto start = std::chrono::steady_clock::now();
    device_all_reduce(workspace, operands.input.data(), operands.output.data(), 4096, stream, silent);
    stream.synchronize();  // returns only because the kernel gave up
    const auto waited = std::chrono::steady_clock::now() - start;
    std::string wrong;
    const std::string text = gave_up(*workspace.give_up);
    if (text.empty())
      wrong = "call 2 ended without a report, although no word of it came (did it wait for the words of call 2?)";
    else if (workspace.give_up->call != 2)
      wrong = "the report names call " + std::to_string(workspace.give_up->call) + ", not call 2: " + text;
    else if (workspace.give_up->peer != session.pe)
      wrong = "the report names PE " + std::to_string(workspace.give_up->peer) + ", not PE " +
              std::to_string(session.pe) + ", whose words never came: " + text;
    else if (waited > std::chrono::seconds(20))
      wrong = "the kernel gave up only after " +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
              " ms, with a patience of 200 ms";
    if (wrong.empty()) {
      try {
        device_all_reduce(workspace, operands.input.data(), operands.output.data(), 4096, stream);
        wrong = "a call after a kernel that gave up did not throw";
      } catch (const std::runtime_error&) {
      }
    }
    close_all_reduce(workspace);
    return wrong;
  });
}

TEST_CASE("a PE whose words never come leaves the kernel giving up within its patience with a report",
          "[10-nvshmem][task:3][gpus:1][points:2]") {
  check_job(run_pes(kSilentRankCase, 1, 0x100a, std::chrono::seconds(60)), 1);
}
