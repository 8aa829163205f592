// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09's test helpers: mpirun started and timed from a graded case, MPI and a report in a rank.
#include "test_09_multi_process_support.h"

#include <cuda_runtime.h>
#include <signal.h>
#include <sys/prctl.h>

#include <catch2/catch_test_macros.hpp>
#include <cstdlib>

#include "common/check.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"

namespace lesson09_tests {

MpiJob run_mpi_job(const std::string& rank_case, int ranks, const std::map<std::string, std::string>& env,
                   std::chrono::seconds limit) {
  return course::testing::run_mpi_job(rank_case, ranks, env, limit, "a rank waits for one that never comes?");
}

std::string first_visible_gpu() {
  const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
  if (mask == nullptr || *mask == '\0') return "0";
  const std::string text(mask);
  return text.substr(0, text.find(','));
}

MpiSession::MpiSession() {
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);  // mpirun killed: this rank goes too
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;  // the ranks of this node: this rank's place among them is its local rank
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_free(&node);
  int visible = 0;
  if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
  device_ = visible > 1 ? local_rank_ % visible : 0;
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void report(const MpiSession& session, const std::string& key, const std::string& value) {
  write_rank_report(session.rank(), key + "=" + value + "\n");
}

std::uint64_t rank_seed(int rank) {
  const char* seed = std::getenv("COURSE_SEED");
  return course::mix_seed(seed == nullptr ? 1 : std::strtoull(seed, nullptr, 10), static_cast<std::uint64_t>(rank));
}

}  // namespace lesson09_tests
