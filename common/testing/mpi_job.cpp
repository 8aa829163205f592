// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The multi-process test jobs of lessons 09 and 10: mpirun started and timed from a graded case, and
// the reports its ranks write.
#include "common/testing/mpi_job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/programs.h"
#include "common/testing/gpu_test.h"

namespace course::testing {

std::string MpiJob::describe() const {
  std::ostringstream out;
  if (!started) return "mpirun was not started";
  if (timed_out)
    out << "the job did not end within " << elapsed.count() / 1000.0 << " s and was killed (" << stuck << ")";
  else
    out << "mpirun exited with " << exit_code << " after " << elapsed.count() / 1000.0 << " s";
  for (std::size_t r = 0; r < reports.size(); ++r)
    out << "\nrank " << r << " reported: " << (reports[r].empty() ? "nothing\n" : reports[r]);
  constexpr std::size_t kShown = 3000;
  out << "\nthe end of mpirun's output:\n" << (log.size() > kShown ? "..." + log.substr(log.size() - kShown) : log);
  return out.str();
}

namespace {

// The mpirun the course was configured with ("" when Meson found none): common/meson.build.
std::string mpirun_path() {
#ifdef COURSE_MPIRUN
  return COURSE_MPIRUN;
#else
  return "";
#endif
}

}  // namespace

MpiJob run_mpi_job(const std::string& rank_case, int ranks, const std::map<std::string, std::string>& env,
                   std::chrono::seconds limit, const std::string& stuck) {
  const std::string mpirun = mpirun_path();
  if (mpirun.empty() || access(mpirun.c_str(), X_OK) != 0)
    SKIP("needs mpirun (Open MPI: apt-get install openmpi-bin libopenmpi-dev), found none");
  char dir_template[] = "/tmp/course-mpi-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) throw std::runtime_error("run_mpi_job: cannot create a temporary folder");
  const std::filesystem::path dir(dir_template);
  const std::string log_path = (dir / "mpirun.log").string();

  // Everything the child needs is made before fork (only async-signal-safe calls after it).
  std::map<std::string, std::string> variables = rank_environment(env);
  variables["COURSE_MPI_DIR"] = dir.string();
  variables["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
  variables["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  variables["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";  // no process_vm_readv in a sandbox
  std::vector<std::string> arguments = {
      mpirun,  "-n",  std::to_string(ranks), "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1",
      "--mca", "btl", "self,vader",          "--tag-output"};
  for (const std::string& word : {course::this_program(), rank_case, std::string("--reporter"), std::string("compact"),
                                  std::string("--colour-mode"), std::string("none")})
    arguments.push_back(word);
  const course::ExecImage image(std::move(arguments), variables);

  MpiJob job;
  job.stuck = stuck;
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
    image.exec();
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
      // mpirun first (it ends the ranks it started), then whatever is left of its group.
      (void)kill(pid, SIGTERM);
      for (int tries = 0; tries < 100 && waitpid(pid, &status, WNOHANG) == 0; ++tries)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (void)kill(-pid, SIGKILL);
      (void)waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (void)kill(-pid, SIGKILL);  // a rank that outlived mpirun (each also dies with its parent)
  job.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  for (int r = 0; r < ranks; ++r)
    job.reports.push_back(course::read_file(dir / ("rank-" + std::to_string(r) + ".out")));
  job.log = course::read_file(log_path);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return job;
}

std::string report_value(const std::string& report, const std::string& key) {
  std::istringstream lines(report);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

namespace {

std::string rank_report_path(int rank, const char* caller) {
  const char* dir = std::getenv("COURSE_MPI_DIR");
  if (dir == nullptr)
    throw std::runtime_error(std::string(caller) + ": COURSE_MPI_DIR is not set (not started by run_mpi_job)");
  return std::string(dir) + "/rank-" + std::to_string(rank) + ".out";
}

}  // namespace

void write_rank_report(int rank, const std::string& text) {
  std::ofstream(rank_report_path(rank, "write_rank_report"), std::ios::app) << text;
}

std::string read_rank_report(int rank) {
  return course::read_file(rank_report_path(rank, "read_rank_report"));
}

std::string bits_hash(const std::vector<float>& values) {
  std::uint64_t hash = 1469598103934665603ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace course::testing
