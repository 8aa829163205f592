// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10's test helpers: mpirun started and timed from a graded case; MPI, NVSHMEM and a report in a rank.
#include "test_10_nvshmem_support.h"

#include <cuda_runtime.h>
#include <signal.h>
#include <sys/prctl.h>

#include <catch2/catch_test_macros.hpp>
#include <cstdlib>

#include "common/random.h"
#include "common/testing/gpu_test.h"

namespace lesson10_tests {

std::map<std::string, std::string> nvshmem_environment(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> variables = {
      {"NVSHMEM_DISABLE_NVLS", "1"},             // no NVLink multicast, anywhere in the course
      {"NCCL_NVLS_ENABLE", "0"},                 // nor in an NCCL that NVSHMEM may load
      {"NVSHMEM_REMOTE_TRANSPORT", "none"},      // one node: peers over NVLink or PCIe only, no InfiniBand
      {"NVSHMEM_SYMMETRIC_SIZE", "1073741824"},  // 1 GiB of symmetric heap per PE
      // No NVSHMEM_BOOTSTRAP: start_nvshmem asks for the unique-id bootstrap itself (nvshmemx_init_attr's
      // flag), as the demo does, which ran on two H100s where the tests' jobs with NVSHMEM_BOOTSTRAP=UID hung.
      {"NVSHMEM_DEBUG", "WARN"},  // NVSHMEM's own warnings reach mpirun's log, which a failed case shows
  };
  for (const auto& [name, value] : env) variables[name] = value;
  return variables;
}

MpiJob run_mpi_job(const std::string& rank_case, int ranks, const std::map<std::string, std::string>& env,
                   std::chrono::seconds limit) {
  return course::testing::run_mpi_job(rank_case, ranks, nvshmem_environment(env), limit,
                                      "a PE waits for a signal that never comes, and its kernel does not give up?");
}

MpiJob run_pes(const std::string& rank_case, int ranks, std::uint64_t salt, std::chrono::seconds limit,
               const std::map<std::string, std::string>& env) {
  course::testing::require_gpus(ranks);
  std::map<std::string, std::string> variables = env;
  variables["COURSE_SEED"] = std::to_string(course::testing::case_seed(salt));
  if (ranks == 1) {  // the first GPU this process sees, whatever mask it was given
    const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
    const std::string text = mask == nullptr || *mask == '\0' ? "0" : std::string(mask);
    variables["CUDA_VISIBLE_DEVICES"] = text.substr(0, text.find(','));
  }
  return run_mpi_job(rank_case, ranks, variables, limit);
}

void check_job(const MpiJob& job, int ranks) {
  INFO(job.describe());
  REQUIRE(!job.timed_out);
  for (int r = 0; r < ranks; ++r) CHECK(report_value(job.reports[r], "result") == "passed");
  CHECK(job.exit_code == 0);
}

NvshmemRank::NvshmemRank() {
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);  // mpirun killed: this rank goes too
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int rank = 0, local_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm node;  // the ranks of this node: this rank's place among them is its local rank
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  if (cudaGetDeviceCount(&visible_) != cudaSuccess) visible_ = 0;
  session_ = lesson10::start_nvshmem(MPI_COMM_WORLD, visible_ > 1 ? local_rank % visible_ : 0);
}

NvshmemRank::~NvshmemRank() {
  lesson10::stop_nvshmem(session_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void report(int rank, const std::string& key, const std::string& value) {
  course::testing::write_rank_report(rank, key + "=" + value + "\n");
}

void run_rank(int rank, const std::function<std::string()>& body) {
  std::string result;
  try {
    result = body();
  } catch (const std::exception& error) {
    result = std::string("threw: ") + error.what();
  }
  report(rank, "result", result.empty() ? "passed" : result);
  REQUIRE(result.empty());
}

std::uint64_t job_seed(std::uint64_t salt) {
  const char* seed = std::getenv("COURSE_SEED");
  return course::mix_seed(seed == nullptr ? 1 : std::strtoull(seed, nullptr, 10), salt);
}

}  // namespace lesson10_tests
