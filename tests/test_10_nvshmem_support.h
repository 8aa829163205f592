// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10's test helpers. As in lesson 09, a graded case starts its ranks the way a student would,
// with mpirun (`mpirun -n N <this test program> "<hidden rank case>"`), in a process group that is
// killed when its time is up; each rank starts NVSHMEM (the given start_nvshmem), calls the student's
// functions, checks what it got and writes a short report to the job's folder. The graded case then
// checks every rank's report and the job's exit status. Every job runs with NVLink multicast off
// (NVSHMEM_DISABLE_NVLS=1, NCCL_NVLS_ENABLE=0), no network transport (NVSHMEM_REMOTE_TRANSPORT=none:
// one node), and a symmetric heap of 1 GiB.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/testing/mpi_job.h"
#include "device_initiated.h"

namespace lesson10_tests {

// ---- in the graded case ---------------------------------------------------------------------------

using course::testing::bits_hash;
using course::testing::MpiJob;  // common/testing/mpi_job.h: the job, its reports, its description
using course::testing::report_value;

// The variables every lesson-10 job runs with (above), `env` over them.
std::map<std::string, std::string> nvshmem_environment(const std::map<std::string, std::string>& env);

// course::testing::run_mpi_job with nvshmem_environment(env) and lesson 10's guess of what a job that did
// not end waited for.
MpiJob run_mpi_job(const std::string& rank_case, int ranks, const std::map<std::string, std::string>& env,
                   std::chrono::seconds limit);

// A job of `ranks` PEs, one per GPU: SKIPs when the machine has fewer GPUs (NVSHMEM wants one PE per
// GPU: README, "One GPU or two"); with one rank, the first GPU this process sees.
MpiJob run_pes(const std::string& rank_case, int ranks, std::uint64_t salt, std::chrono::seconds limit,
               const std::map<std::string, std::string>& env = {});

// Checks that the job ended in time, that every rank reported result=passed and that mpirun exited 0.
void check_job(const MpiJob& job, int ranks);

// ---- in a rank ---------------------------------------------------------------------------------

// MPI and NVSHMEM for the life of a hidden rank case: MPI_Init, then start_nvshmem on the device of the
// rank's local rank (device 0 when one is visible); stop_nvshmem and MPI_Finalize at the end. The rank
// dies with mpirun (PR_SET_PDEATHSIG).
class NvshmemRank {
 public:
  NvshmemRank();
  ~NvshmemRank();
  NvshmemRank(const NvshmemRank&) = delete;
  NvshmemRank& operator=(const NvshmemRank&) = delete;
  const lesson10::Session& session() const { return session_; }
  int visible_devices() const { return visible_; }

 private:
  lesson10::Session session_;
  int visible_ = 0;
};

// Appends "key=value\n" to rank `rank`'s report in the job's folder.
void report(int rank, const std::string& key, const std::string& value);

// Runs `body` in a rank, reporting result=passed, or what went wrong (a returned text, or an exception).
// `body` returns "" when everything was right.
void run_rank(int rank, const std::function<std::string()>& body);

// The seed the graded case passed (COURSE_SEED), mixed with `salt`.
std::uint64_t job_seed(std::uint64_t salt);

}  // namespace lesson10_tests
