// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The multi-process test jobs of lessons 09 and 10. A graded case starts its ranks the way a student
// would, with mpirun (`mpirun -n N <this test program> "<hidden rank case>"`), in a process group that
// is killed when its time is up; each rank runs one hidden case, which writes a short report ("key=value"
// lines) into the job's folder (COURSE_MPI_DIR); the graded case then reads every rank's report, the
// job's exit status and mpirun's output.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace course::testing {

struct MpiJob {
  bool started = false;              // mpirun was found and started
  bool timed_out = false;            // the limit passed and the job was killed
  int exit_code = -1;                // mpirun's, when it exited on its own
  std::vector<std::string> reports;  // rank r's report (empty when it wrote none), r = 0 .. n-1
  std::string log;                   // mpirun's output: every rank's stdout and stderr, tagged
  std::chrono::milliseconds elapsed{0};
  std::string stuck;  // what a job that did not end in time may have waited for (the lesson's guess)
  // The job in words, for a failure message: how it ended, every rank's report, the end of its log.
  std::string describe() const;
};

// Runs `mpirun -n <ranks> <this program> "<rank_case>"` on this machine only (over shared memory:
// Open MPI's ob1 with the self and vader transports, no network; more ranks than cores allowed, no
// binding, as root too), with `env` added to the environment of every rank (COURSE_MPI_DIR, the job's
// folder, is set here); waits until it ends or `limit` passes, then kills its whole process group.
// `stuck` goes into the job's description. SKIPs the case when no mpirun was found. Nothing is left
// running when it returns.
MpiJob run_mpi_job(const std::string& rank_case, int ranks, const std::map<std::string, std::string>& env,
                   std::chrono::seconds limit, const std::string& stuck);

// The value of `key` in a report of "key=value" lines ("" when absent).
std::string report_value(const std::string& report, const std::string& key);

// In a rank: appends `text` to rank `rank`'s report in the job's folder, or reads it back. Throw
// std::runtime_error when COURSE_MPI_DIR is not set (not started by run_mpi_job).
void write_rank_report(int rank, const std::string& text);
std::string read_rank_report(int rank);

// An FNV-1a hash of the bytes of `values`, in hex: equal on two ranks only for the same bits.
std::string bits_hash(const std::vector<float>& values);

}  // namespace course::testing
