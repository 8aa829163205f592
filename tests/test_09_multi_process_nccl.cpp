// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09 tests, task 2: one NCCL communicator over processes that mpirun started. Each graded
// case runs `mpirun -n N` on this program with a hidden case below, in which every rank calls the
// student's init_nccl_over_mpi and reports what it got; a rank that never joins is played by the
// course's code (it takes rank 0's id from the broadcast and then does nothing). Rank 0's failure to
// make the id is played by a stand-in for ncclGetUniqueId that fails, passed to every rank.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"
#include "multi_process.h"
#include "test_09_multi_process_support.h"

using namespace lesson09;
using namespace lesson09_tests;
using course::testing::case_seed;
using course::testing::require_gpus;

namespace {

constexpr const char* kAllReduceRankCase = "rank: join one NCCL communicator over MPI and all-reduce";
constexpr const char* kMissingRankCase = "rank: join while the last rank never calls init_nccl_over_mpi";
constexpr std::chrono::milliseconds kMissingRankTimeout{3000};
constexpr const char* kIdFailureRankCase = "rank: join while rank 0 cannot make the NCCL id";
constexpr ncclResult_t kIdFailure = ncclSystemError;  // what the stand-in for ncclGetUniqueId returns

}  // namespace

TEST_CASE(kAllReduceRankCase, "[.][rank]") {
  const MpiSession session;
  std::string result = "passed";
  try {
    CHECK_THROWS_AS(init_nccl_over_mpi(MPI_COMM_WORLD, session.device(), std::chrono::milliseconds(0)),
                    std::invalid_argument);
    int visible = 0;
    CUDA_CHECK(cudaGetDeviceCount(&visible));
    const int callers_device = (session.device() + 1) % visible;  // another GPU where there is one
    CUDA_CHECK(cudaSetDevice(callers_device));
    ncclComm_t comm = init_nccl_over_mpi(MPI_COMM_WORLD, session.device(), std::chrono::seconds(20));
    CHECK(course::testing::current_device() == callers_device);
    int nccl_rank = -1, nccl_size = -1, nccl_device = -1;
    NCCL_CHECK(ncclCommUserRank(comm, &nccl_rank));
    NCCL_CHECK(ncclCommCount(comm, &nccl_size));
    NCCL_CHECK(ncclCommCuDevice(comm, &nccl_device));
    CHECK(nccl_rank == session.rank());
    CHECK(nccl_size == session.size());
    CHECK(nccl_device == session.device());

    // An all-reduce on the new communicator: every rank's seeded floats, summed.
    const std::size_t count = (std::size_t{1} << 20) + 3;
    const course::Stream stream(session.device());
    const course::DeviceBuffer<float> buffer(session.device(), count);
    const std::vector<float> mine = course::random_floats(count, rank_seed(session.rank()));
    CUDA_CHECK(cudaSetDevice(session.device()));
    CUDA_CHECK(cudaMemcpy(buffer.data(), mine.data(), buffer.bytes(), cudaMemcpyHostToDevice));
    complete_nccl_call(comm, ncclAllReduce(buffer.data(), buffer.data(), count, ncclFloat, ncclSum, comm, stream),
                       "ncclAllReduce");
    stream.synchronize();
    std::vector<float> got(count);
    CUDA_CHECK(cudaMemcpy(got.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
    std::vector<double> expected(count, 0.0);
    for (int r = 0; r < session.size(); ++r) {
      const std::vector<float> theirs = course::random_floats(count, rank_seed(r));
      for (std::size_t i = 0; i < count; ++i) expected[i] += theirs[i];
    }
    // NCCL adds in float in an order of its own: a few roundings of values of size up to N.
    const course::Comparison comparison = course::compare_close(got.data(), expected.data(), count, 1e-5, 1e-5);
    INFO(comparison.describe());
    CHECK(comparison.ok());
    report(session, "hash", bits_hash(got));
    destroy_communicator(comm);
  } catch (const std::exception& error) {
    result = std::string("threw: ") + error.what();
  }
  report(session, "result", result);
  REQUIRE(result == "passed");
}

TEST_CASE("processes started by mpirun join one NCCL communicator over MPI and all-reduce on their own GPUs",
          "[09-multi-process][task:2][gpus:2][points:3]") {
  require_gpus(2);
  const MpiJob job = run_mpi_job(kAllReduceRankCase, 2, {{"COURSE_SEED", std::to_string(case_seed(0x0902))}},
                                 std::chrono::seconds(180));
  INFO(job.describe());
  REQUIRE(!job.timed_out);
  for (int r = 0; r < 2; ++r) CHECK(report_value(job.reports[r], "result") == "passed");
  CHECK(job.exit_code == 0);
  CHECK(report_value(job.reports[0], "hash") == report_value(job.reports[1], "hash"));  // NCCL: same bits
}

TEST_CASE(kMissingRankCase, "[.][rank]") {
  const MpiSession session;
  const bool missing = session.rank() == session.size() - 1;
  if (missing) {
    // Takes rank 0's id as every rank does, then never joins: the others must give up on it. A rank 0
    // that ends its call without broadcasting (a starter, a mistake) would leave this rank in
    // MPI_Bcast for good: a watcher ends this process as soon as rank 0 has reported.
    std::atomic<bool> received{false};
    std::thread watcher([&] {
      while (!received) {
        if (!report_value(read_rank_report(0), "result").empty() && !received) {
          report(session, "result", "rank 0 ended its call without broadcasting the id");
          std::_Exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
    IdMessage message;  // the contract's layout of rank 0's broadcast
    MPI_Bcast(&message, sizeof message, MPI_BYTE, 0, MPI_COMM_WORLD);
    received = true;
    watcher.join();
    report(session, "result", "passed");
  } else {
    const auto start = std::chrono::steady_clock::now();
    std::string message;
    try {
      ncclComm_t comm = init_nccl_over_mpi(MPI_COMM_WORLD, session.device(), kMissingRankTimeout);
      (void)ncclCommAbort(comm);
      message = "init_nccl_over_mpi returned a communicator although a rank never joined";
    } catch (const std::exception& error) {  // all of them: this rank must still reach the barrier below
      message = error.what();
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report(session, "message", message);
    report(session, "waited_s", std::to_string(waited));
    const double timeout = std::chrono::duration<double>(kMissingRankTimeout).count();
    const bool ok = message.find("timed out") != std::string::npos && waited >= 0.9 * timeout &&
                    waited <= timeout + 30;  // ncclCommAbort may take a few seconds
    report(session, "result", ok ? "passed" : "gave up wrongly");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("when a rank never joins the others give up after the timeout with a message that says so",
          "[09-multi-process][task:2][gpus:1][points:3]") {
  require_gpus(1);
  // Two processes on one GPU: only rank 0 ever calls NCCL, so they need only one GPU.
  const MpiJob job =
      run_mpi_job(kMissingRankCase, 2, {{"CUDA_VISIBLE_DEVICES", first_visible_gpu()}}, std::chrono::seconds(25));
  INFO(job.describe());
  REQUIRE(!job.timed_out);
  CHECK(report_value(job.reports[0], "message").find("timed out") != std::string::npos);
  CHECK(report_value(job.reports[0], "result") == "passed");
  CHECK(job.exit_code == 0);
}

TEST_CASE(kIdFailureRankCase, "[.][rank]") {
  const MpiSession session;
  std::atomic<int> calls{0};
  const MakeUniqueId fails = [&](ncclUniqueId*) {
    ++calls;
    return kIdFailure;
  };
  // A rank 0 that ends its call without broadcasting its failure (the old contract, a mistake)
  // leaves the others in MPI_Bcast for good: a watcher ends such a rank 5 s after rank 0 reported.
  std::atomic<bool> returned{false};
  std::thread watcher;
  if (session.rank() != 0)
    watcher = std::thread([&] {
      std::optional<std::chrono::steady_clock::time_point> rank0_done;
      while (!returned) {
        if (!rank0_done && !report_value(read_rank_report(0), "result").empty())
          rank0_done = std::chrono::steady_clock::now();
        if (rank0_done && std::chrono::steady_clock::now() - *rank0_done > std::chrono::seconds(5) && !returned) {
          report(session, "result",
                 "still inside init_nccl_over_mpi 5 s after rank 0's call had ended: rank 0 did not broadcast "
                 "that it could not make the id (broadcast an IdMessage whatever ncclGetUniqueId returned)");
          std::_Exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  std::string message = "init_nccl_over_mpi returned a communicator although rank 0 could not make the id";
  bool runtime_error = false;
  try {
    ncclComm_t comm = init_nccl_over_mpi(MPI_COMM_WORLD, session.device(), std::chrono::seconds(20), fails);
    (void)ncclCommAbort(comm);
  } catch (const std::runtime_error& error) {
    message = error.what();
    runtime_error = true;
  } catch (const std::exception& error) {  // all of them: this rank must still reach the barrier below
    message = std::string("threw another exception than std::runtime_error: ") + error.what();
  }
  returned = true;
  if (watcher.joinable()) watcher.join();
  const std::string nccl_error = ncclGetErrorString(kIdFailure);
  std::string result = "passed";
  if (!runtime_error)
    result = message;
  else if (message.find("rank 0") == std::string::npos || message.find(nccl_error) == std::string::npos)
    result = "the error does not name rank 0 and NCCL's \"" + nccl_error + "\"";
  else if (calls != (session.rank() == 0 ? 1 : 0))
    result = "the stand-in for ncclGetUniqueId was called " + std::to_string(calls.load()) + " time(s) on rank " +
             std::to_string(session.rank()) + " (only rank 0 makes the id, once)";
  report(session, "message", message);
  report(session, "result", result);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("when rank 0 cannot make the NCCL id every rank throws an error that says so instead of waiting",
          "[09-multi-process][task:2][gpus:1][points:2]") {
  require_gpus(1);
  // Three processes on one GPU: no rank may reach NCCL's init, so they need only one GPU.
  const MpiJob job =
      run_mpi_job(kIdFailureRankCase, 3, {{"CUDA_VISIBLE_DEVICES", first_visible_gpu()}}, std::chrono::seconds(60));
  INFO(job.describe());
  REQUIRE(!job.timed_out);
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << report_value(job.reports[r], "message"));
    CHECK(report_value(job.reports[r], "result") == "passed");
  }
  CHECK(job.exit_code == 0);
}
