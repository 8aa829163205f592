// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09's test helpers. A graded case starts its ranks the way a student would, with mpirun
// (`mpirun -n N <this test program> "<hidden rank case>"`), in a process group that is killed when
// its time is up; each rank runs one hidden case, which initializes MPI, calls the student's
// functions, checks what it got and writes a short report to the job's folder. The graded case then
// checks every rank's report, the job's exit status, and that every rank got the same bits.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/testing/mpi_job.h"
#include "multi_process.h"

namespace lesson09_tests {

// ---- in the graded case ---------------------------------------------------------------------------

using course::testing::bits_hash;
using course::testing::MpiJob;  // common/testing/mpi_job.h: the job, its reports, its description
using course::testing::read_rank_report;
using course::testing::report_value;
using course::testing::write_rank_report;

// course::testing::run_mpi_job with lesson 09's guess of what a job that did not end waited for.
MpiJob run_mpi_job(const std::string& rank_case, int ranks, const std::map<std::string, std::string>& env,
                   std::chrono::seconds limit);

// CUDA_VISIBLE_DEVICES for a job on one GPU: the first this process sees, whatever mask it was given.
std::string first_visible_gpu();

// ---- in a rank ---------------------------------------------------------------------------------

// MPI for the life of a hidden rank case: MPI_Init in the constructor, MPI_Finalize in the
// destructor; the rank dies with mpirun (PR_SET_PDEATHSIG) so a killed job leaves no rank behind.
// MPI_Finalize waits for the other ranks: a rank case catches every exception of the student's code
// and reports it, so that no rank leaves the others waiting in a collective.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  // The course's own choice of GPU (so a test of task 2 or 3 does not depend on task 1): device 0
  // when one is visible, the local rank when more are.
  int device() const { return device_; }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, device_ = 0;
};

// Appends "key=value\n" to this rank's report in the job's folder.
void report(const MpiSession& session, const std::string& key, const std::string& value);

// The seed the graded case passed (COURSE_SEED), mixed with the rank.
std::uint64_t rank_seed(int rank);

}  // namespace lesson09_tests
