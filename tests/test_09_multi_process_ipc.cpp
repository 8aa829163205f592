// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09 tests, task 3: a one-shot all-reduce across processes through CUDA IPC. Each graded
// case runs `mpirun -n N` on this program with a hidden case below, in which every rank opens the
// student's IpcAllReduce, sums seeded inputs into poisoned outputs, checks them bit for bit against
// the same sum in rank order on the CPU (float, the order the contract fixes), and reports a hash of
// its result so the graded case can check that every rank got the same bits. Two handshakes are
// checked by holding the middle one of three ranks' stream for 300 ms with a host function: before
// its call (the others must wait for its input) and before its sum (the others must not overwrite
// what it still reads).
#include <cuda_runtime.h>
#include <mpi.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstdlib>
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
#include "multi_process.h"
#include "test_09_multi_process_support.h"

using namespace lesson09;
using namespace lesson09_tests;
using course::testing::case_seed;
using course::testing::require_gpus;

namespace {

constexpr const char* kSumRankCase = "rank: one-shot all-reduce through CUDA IPC";
constexpr const char* kHandshakeRankCase = "rank: one-shot all-reduce with one rank held back";
constexpr std::size_t kMaxCount = std::size_t{1} << 20;
constexpr std::size_t kTail = 64;  // poisoned floats after each output, which no call may write

// Enqueues a host function that sleeps 300 ms: the stream holds everything after it that long.
void hold_stream(cudaStream_t stream) {
  CUDA_CHECK(cudaLaunchHostFunc(
      stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }, nullptr));
}

std::vector<float> inputs_of(int rank, std::size_t count, std::uint64_t salt) {
  return course::random_floats(count, course::mix_seed(rank_seed(rank), salt));
}

// What every rank must get: the inputs of ranks 0 .. size-1 added in that order, in float.
std::vector<float> sum_in_rank_order(int size, std::size_t count, std::uint64_t salt) {
  std::vector<float> total = inputs_of(0, count, salt);
  for (int r = 1; r < size; ++r) {
    const std::vector<float> theirs = inputs_of(r, count, salt);
    for (std::size_t i = 0; i < count; ++i) total[i] += theirs[i];
  }
  return total;
}

// One rank's input and output on its device: the input holds its seeded floats, the output
// (count + kTail floats) is poisoned.
struct Operands {
  Operands(int device, int rank, std::size_t count, std::uint64_t salt)
      : count(count), input(device, count), output(device, count + kTail) {
    const course::DeviceGuard on_device(device);
    const std::vector<float> mine = inputs_of(rank, count, salt);
    if (count > 0) CUDA_CHECK(cudaMemcpy(input.data(), mine.data(), input.bytes(), cudaMemcpyHostToDevice));
    course::poison_device(output.data(), output.bytes());
  }
  // The output checked against the sum in rank order, and its tail against the poison; "" when right.
  std::string check(int size, std::uint64_t salt) const {
    std::vector<float> got(count + kTail);
    CUDA_CHECK(cudaMemcpy(got.data(), output.data(), output.bytes(), cudaMemcpyDeviceToHost));
    const std::vector<float> expected = sum_in_rank_order(size, count, salt);
    const course::Comparison comparison = course::compare_exact(got.data(), expected.data(), count);
    if (!comparison.ok()) return "count " + std::to_string(count) + ": " + comparison.describe();
    for (std::size_t i = count; i < count + kTail; ++i)
      if (!course::is_poisoned(got[i]))
        return "count " + std::to_string(count) + ": output[" + std::to_string(i) + "] was written, past the count";
    return "";
  }
  std::vector<float> result() const {
    std::vector<float> got(count);
    if (count > 0) CUDA_CHECK(cudaMemcpy(got.data(), output.data(), count * sizeof(float), cudaMemcpyDeviceToHost));
    return got;
  }
  std::size_t count;
  course::DeviceBuffer<float> input, output;
};

void check_job(const MpiJob& job, int ranks) {
  INFO(job.describe());
  REQUIRE(!job.timed_out);
  for (int r = 0; r < ranks; ++r) CHECK(report_value(job.reports[r], "result") == "passed");
  CHECK(job.exit_code == 0);
  for (int r = 1; r < ranks; ++r) CHECK(report_value(job.reports[r], "hash") == report_value(job.reports[0], "hash"));
}

}  // namespace

TEST_CASE(kSumRankCase, "[.][rank]") {
  const MpiSession session;
  std::string result = "passed";
  try {
    CHECK_THROWS_AS(open_ipc_all_reduce(MPI_COMM_WORLD, session.device(), 0), std::invalid_argument);
    int visible = 0;
    CUDA_CHECK(cudaGetDeviceCount(&visible));
    const int callers_device = (session.device() + 1) % visible;
    CUDA_CHECK(cudaSetDevice(callers_device));
    IpcAllReduce ipc = open_ipc_all_reduce(MPI_COMM_WORLD, session.device(), kMaxCount);
    if (course::testing::current_device() != callers_device) result = "open_ipc_all_reduce changed the current device";
    CHECK(ipc.rank == session.rank());
    CHECK(ipc.size == session.size());
    CHECK(ipc.buffers.size() == static_cast<std::size_t>(session.size()));
    const course::Stream stream(session.device());
    std::vector<float> all_results;
    std::uint64_t salt = 0;
    for (const std::size_t count :
         {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{1000}, std::size_t{65537}, kMaxCount}) {
      const Operands operands(session.device(), session.rank(), count, ++salt);
      ipc_all_reduce(ipc, operands.input.data(), operands.output.data(), count, stream);
      if (course::testing::current_device() != callers_device) result = "ipc_all_reduce changed the current device";
      stream.synchronize();
      if (const std::string wrong = operands.check(session.size(), salt); !wrong.empty() && result == "passed")
        result = wrong;
      const std::vector<float> got = operands.result();
      all_results.insert(all_results.end(), got.begin(), got.end());
    }
    // count = 0 writes nothing; above max_count is refused on every rank before anything happens.
    const Operands empty(session.device(), session.rank(), 0, ++salt);
    ipc_all_reduce(ipc, nullptr, empty.output.data(), 0, stream);
    stream.synchronize();
    if (const std::string wrong = empty.check(session.size(), salt); !wrong.empty() && result == "passed")
      result = "count 0 wrote its output";
    CHECK_THROWS_AS(ipc_all_reduce(ipc, empty.input.data(), empty.output.data(), kMaxCount + 1, stream),
                    std::invalid_argument);
    report(session, "hash", bits_hash(all_results));
    close_ipc_all_reduce(ipc);
    CHECK(ipc.published == nullptr);
    CHECK(ipc.buffers.empty());
    CHECK(ipc.peer_published_ready.empty());
    CHECK(ipc.peer_read_done.empty());
  } catch (const std::exception& error) {
    result = std::string("threw: ") + error.what();
  }
  report(session, "result", result);
  REQUIRE(result == "passed");
}

TEST_CASE("three processes on one GPU sum each other's buffers through CUDA IPC in rank order with the same bits",
          "[09-multi-process][task:3][gpus:1][points:3]") {
  require_gpus(1);
  check_job(
      run_mpi_job(kSumRankCase, 3,
                  {{"COURSE_SEED", std::to_string(case_seed(0x0903))}, {"CUDA_VISIBLE_DEVICES", first_visible_gpu()}},
                  std::chrono::seconds(120)),
      3);
}

TEST_CASE("two processes on two GPUs sum each other's buffers through CUDA IPC and keep the caller's device",
          "[09-multi-process][task:3][gpus:2][points:2]") {
  require_gpus(2);
  check_job(
      run_mpi_job(kSumRankCase, 2, {{"COURSE_SEED", std::to_string(case_seed(0x0904))}}, std::chrono::seconds(120)), 2);
}

TEST_CASE(kHandshakeRankCase, "[.][rank]") {
  const MpiSession session;
  std::string result = "passed";
  try {
    IpcAllReduce ipc = open_ipc_all_reduce(MPI_COMM_WORLD, session.device(), kMaxCount);
    const course::Stream stream(session.device());
    // The middle rank of three: a rank that waits for one peer only (rank 0, its ring neighbour, the
    // first or the last) misses it on one side or the other.
    const bool held = session.rank() == session.size() / 2;
    const std::size_t count = kMaxCount;
    std::vector<float> all_results;
    // Call 1 fills every published buffer; call 2 runs with the held rank's stream held before the
    // call (the others must wait for its input, not read call 1's); call 3 holds it before its sum
    // (the others' call 4 must not overwrite what it has not read yet).
    const Operands first(session.device(), session.rank(), count, 1),
        second(session.device(), session.rank(), count, 2), third(session.device(), session.rank(), count, 3),
        fourth(session.device(), session.rank(), count, 4);
    ipc_all_reduce(ipc, first.input.data(), first.output.data(), count, stream);
    stream.synchronize();
    MPI_Barrier(MPI_COMM_WORLD);
    if (held) hold_stream(stream);
    ipc_all_reduce(ipc, second.input.data(), second.output.data(), count, stream);
    bool once = held;
    const PeerSum held_sum = [&](const PeerSources& sources, float* out, std::size_t n, cudaStream_t s) {
      if (once) hold_stream(s);
      once = false;
      enqueue_sum_of_peers(sources, out, n, s);
    };
    ipc_all_reduce(ipc, third.input.data(), third.output.data(), count, stream, held_sum);
    ipc_all_reduce(ipc, fourth.input.data(), fourth.output.data(), count, stream);
    stream.synchronize();
    std::uint64_t salt = 0;
    for (const Operands* operands : {&first, &second, &third, &fourth}) {
      ++salt;
      if (const std::string wrong = operands->check(session.size(), salt); !wrong.empty() && result == "passed")
        result = "call " + std::to_string(salt) + ", " + wrong;
      const std::vector<float> got = operands->result();
      all_results.insert(all_results.end(), got.begin(), got.end());
    }
    report(session, "hash", bits_hash(all_results));
    close_ipc_all_reduce(ipc);
  } catch (const std::exception& error) {
    result = std::string("threw: ") + error.what();
  }
  report(session, "result", result);
  REQUIRE(result == "passed");
}

TEST_CASE("a rank held back before its call or before its sum is waited for and never overwritten",
          "[09-multi-process][task:3][gpus:1][points:3]") {
  require_gpus(1);
  check_job(
      run_mpi_job(kHandshakeRankCase, 3,
                  {{"COURSE_SEED", std::to_string(case_seed(0x0905))}, {"CUDA_VISIBLE_DEVICES", first_visible_gpu()}},
                  std::chrono::seconds(120)),
      3);
}
