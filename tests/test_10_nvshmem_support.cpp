// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10's test helpers: mpirun started and timed from a graded case; MPI, NVSHMEM and a report in a rank.
#include "test_10_nvshmem_support.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/programs.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"

namespace lesson10_tests {

std::string MpiJob::describe() const {
  std::ostringstream out;
  if (!started) return "mpirun was not started";
  if (timed_out)
    out << "the job did not end within " << elapsed.count() / 1000.0
        << " s and was killed (a PE waits for a signal that never comes, and its kernel does not give up?)";
  else
    out << "mpirun exited with " << exit_code << " after " << elapsed.count() / 1000.0 << " s";
  for (std::size_t r = 0; r < reports.size(); ++r)
    out << "\nrank " << r << " reported: " << (reports[r].empty() ? "nothing\n" : reports[r]);
  constexpr std::size_t kShown = 3000;
  out << "\nthe end of mpirun's output:\n" << (log.size() > kShown ? "..." + log.substr(log.size() - kShown) : log);
  return out.str();
}

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
#ifdef COURSE_MPIRUN
  const std::string mpirun_path = COURSE_MPIRUN;
#else
  const std::string mpirun_path;
#endif
  if (mpirun_path.empty() || access(mpirun_path.c_str(), X_OK) != 0)
    SKIP("needs mpirun (Open MPI: apt-get install openmpi-bin libopenmpi-dev), found none");
  char dir_template[] = "/tmp/course-nvshmem-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) throw std::runtime_error("run_mpi_job: cannot create a temporary folder");
  const std::filesystem::path dir(dir_template);
  const std::string log_path = (dir / "mpirun.log").string();

  // Everything the child needs is made before fork (only async-signal-safe calls after it).
  std::map<std::string, std::string> variables = course::testing::rank_environment(nvshmem_environment(env));
  variables["COURSE_MPI_DIR"] = dir.string();
  variables["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
  variables["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  variables["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";  // no process_vm_readv in a sandbox
  std::vector<std::string> arguments = {
      mpirun_path, "-n",  std::to_string(ranks), "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1",
      "--mca",     "btl", "self,vader",          "--tag-output"};
  for (const std::string& word : {course::this_program(), rank_case, std::string("--reporter"), std::string("compact"),
                                  std::string("--colour-mode"), std::string("none")})
    arguments.push_back(word);
  const course::ExecImage mpirun(std::move(arguments), variables);

  MpiJob job;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("run_mpi_job: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    (void)setpgid(0, 0);
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log_fd >= 0) {
      (void)dup2(log_fd, STDOUT_FILENO);
      (void)dup2(log_fd, STDERR_FILENO);
    }
    mpirun.exec();
  }
  (void)setpgid(pid, pid);
  job.started = true;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) job.exit_code = WEXITSTATUS(status);
      break;
    }
    if (std::chrono::steady_clock::now() > start + limit) {
      job.timed_out = true;
      (void)kill(pid, SIGTERM);  // mpirun first (it ends the ranks it started), then what is left of its group
      for (int tries = 0; tries < 100 && waitpid(pid, &status, WNOHANG) == 0; ++tries)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (void)kill(-pid, SIGKILL);
      (void)waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (void)kill(-pid, SIGKILL);
  job.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  for (int r = 0; r < ranks; ++r)
    job.reports.push_back(course::read_file(dir / ("rank-" + std::to_string(r) + ".out")));
  job.log = course::read_file(log_path);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return job;
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

std::string report_value(const std::string& report, const std::string& key) {
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  return "";
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
  const char* dir = std::getenv("COURSE_MPI_DIR");
  if (dir == nullptr) throw std::runtime_error("report: COURSE_MPI_DIR is not set (not started by run_mpi_job)");
  std::ofstream(std::string(dir) + "/rank-" + std::to_string(rank) + ".out", std::ios::app)
      << key << "=" << value << "\n";
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

std::string bits_hash(const std::vector<float>& values) {
  std::uint64_t hash = 1469598103934665603ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace lesson10_tests
