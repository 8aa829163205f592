// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// One process per rank, the way MPI or Slurm would start them, done by the course so that a
// student's file never forks, execs or kills: launch_ranks() starts this same test program once
// per rank, each running only one hidden test case, in one process group that is killed as a
// whole when the time is up, and collects what each rank wrote. In the rank, rank_context() says
// who it is and share_unique_id() passes rank 0's ncclUniqueId to the others through a file in
// the job's own temporary folder (as a job on a cluster would through a shared file system).
#pragma once

#include <nccl.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace course::testing {

struct RankProcess {
  int rank = -1;
  int exit_code = -1;   // -1 when the process did not exit on its own (killed, or ended by a signal)
  bool killed = false;  // killed by the launcher at the time limit
  std::string output;   // what the rank wrote with write_child_output()
  std::string log;      // its stdout and stderr
};

struct RankLaunch {
  std::vector<RankProcess> ranks;  // one per rank started, in rank order
  bool timed_out = false;          // the limit passed and the group was killed
  std::chrono::milliseconds elapsed{0};
};

// Starts ranks 0 .. started-1 of a job of `nranks` (started <= nranks: the missing ranks never
// come), each as this test program running only the hidden case `case_name`, with `env` plus
// COURSE_RANK, COURSE_NRANKS, COURSE_RANK_DIR (a fresh folder the job shares) and
// COURSE_CHILD_OUTPUT (the rank's own output file); `rank_env` adds variables for single ranks.
// Waits until every rank has exited, or until `limit`, when it kills the whole process group.
// Every process is gone when it returns; the folder is removed. Throws std::invalid_argument for
// started < 1 or started > nranks, std::runtime_error when a process cannot be started.
RankLaunch launch_ranks(const std::string& case_name, int started, int nranks,
                        const std::map<std::string, std::string>& env, std::chrono::seconds limit,
                        const std::map<int, std::map<std::string, std::string>>& rank_env = {});

// In a rank: who it is, from the variables launch_ranks() set. Throws std::runtime_error when
// this process was not started by launch_ranks().
struct RankContext {
  int rank = 0;
  int nranks = 1;
  std::string dir;  // the job's shared folder
};
RankContext rank_context();

// In a rank: rank 0 makes the id (ncclGetUniqueId) and publishes it in the job's folder (written,
// then renamed, so no rank reads half a file); the others wait for it, at most `limit`. Throws
// std::runtime_error when it does not come in time.
ncclUniqueId share_unique_id(const RankContext& context, std::chrono::milliseconds limit);

// The id as 2 * NCCL_UNIQUE_ID_BYTES lower-case hex digits, and back. unique_id_from_hex throws
// std::invalid_argument for a string of another length or with a character that is not hex.
std::string unique_id_to_hex(const ncclUniqueId& id);
ncclUniqueId unique_id_from_hex(const std::string& hex);

}  // namespace course::testing
