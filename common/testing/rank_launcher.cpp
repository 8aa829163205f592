// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The course's process launcher for one-process-per-GPU lessons: fork and exec of this test
// program per rank, one process group, one deadline for all, and nothing left running after.
#include "rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "../check.h"
#include "../programs.h"
#include "gpu_test.h"  // write_child_output and rank_environment, defined here: they need no test framework

namespace course::testing {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::map<std::string, std::string> rank_environment(const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> ranks{{"CUDA_DEVICE_MAX_CONNECTIONS", "8"}};
  for (const auto& [name, value] : env) ranks[name] = value;
  return course::process_environment(ranks);
}

void write_child_output(const std::string& text) {
  const char* path = std::getenv("COURSE_CHILD_OUTPUT");
  if (path == nullptr) throw std::runtime_error("write_child_output: not running as a child case");
  std::ofstream(path, std::ios::app) << text;
}

RankLaunch launch_ranks(const std::string& case_name, int started, int nranks,
                        const std::map<std::string, std::string>& env, std::chrono::seconds limit,
                        const std::map<int, std::map<std::string, std::string>>& rank_env) {
  if (started < 1 || started > nranks)
    throw std::invalid_argument("launch_ranks: cannot start " + std::to_string(started) + " ranks of " +
                                std::to_string(nranks));
  const std::string self = course::this_program();
  char dir_template[] = "/tmp/course-ranks-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) throw std::runtime_error("launch_ranks: cannot create a temporary folder");
  const std::filesystem::path dir(dir_template);

  RankLaunch launch;
  std::vector<pid_t> pids;
  pid_t group = 0;  // the first rank's pid: every rank joins its process group
  const auto start = std::chrono::steady_clock::now();
  auto kill_group = [&] {
    if (group > 0) (void)kill(-group, SIGKILL);
    for (const pid_t pid : pids) (void)kill(pid, SIGKILL);  // in case one never reached the group
  };

  for (int rank = 0; rank < started; ++rank) {
    const std::string out = (dir / ("rank-" + std::to_string(rank) + ".out")).string();
    const std::string log = (dir / ("rank-" + std::to_string(rank) + ".log")).string();
    // Everything the child needs is made before fork: between fork and exec a threaded program
    // may call only async-signal-safe functions (no malloc, no setenv).
    std::map<std::string, std::string> variables = rank_environment(env);
    if (const auto extra = rank_env.find(rank); extra != rank_env.end())
      for (const auto& [name, value] : extra->second) variables[name] = value;
    variables["COURSE_RANK"] = std::to_string(rank);
    variables["COURSE_NRANKS"] = std::to_string(nranks);
    variables["COURSE_RANK_DIR"] = dir.string();
    variables["COURSE_CHILD_OUTPUT"] = out;
    const course::ExecImage child({self, case_name, "--reporter", "compact"}, variables);

    const pid_t pid = fork();
    if (pid < 0) {
      kill_group();
      for (const pid_t p : pids) (void)waitpid(p, nullptr, 0);
      std::filesystem::remove_all(dir);
      throw std::runtime_error(std::string("launch_ranks: fork failed: ") + std::strerror(errno));
    }
    if (pid == 0) {
      (void)setpgid(0, group);
      (void)prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher's thread dies: so do the ranks
      const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log_fd >= 0) {
        (void)dup2(log_fd, STDOUT_FILENO);
        (void)dup2(log_fd, STDERR_FILENO);
      }
      child.exec();
    }
    if (group == 0) group = pid;
    (void)setpgid(pid, group);  // also from here: whichever runs first, the child is in the group
    pids.push_back(pid);
    launch.ranks.push_back(RankProcess{.rank = rank, .exit_code = -1, .killed = false, .output = {}, .log = {}});
  }

  const auto deadline = start + limit;
  std::vector<bool> done(pids.size(), false);
  std::size_t remaining = pids.size();
  while (remaining > 0) {
    for (std::size_t k = 0; k < pids.size(); ++k) {
      if (done[k]) continue;
      int status = 0;
      const pid_t r = waitpid(pids[k], &status, WNOHANG);
      if (r == pids[k] || (r < 0 && errno == ECHILD)) {
        done[k] = true;
        --remaining;
        if (r == pids[k] && WIFEXITED(status)) launch.ranks[k].exit_code = WEXITSTATUS(status);
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      launch.timed_out = true;
      kill_group();
      for (std::size_t k = 0; k < pids.size(); ++k) {
        if (done[k]) continue;
        (void)waitpid(pids[k], nullptr, 0);
        launch.ranks[k].killed = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  launch.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  for (std::size_t k = 0; k < pids.size(); ++k) {
    launch.ranks[k].output = course::read_file(dir / ("rank-" + std::to_string(k) + ".out"));
    launch.ranks[k].log = course::read_file(dir / ("rank-" + std::to_string(k) + ".log"));
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return launch;
}

RankContext rank_context() {
  const char* rank = std::getenv("COURSE_RANK");
  const char* nranks = std::getenv("COURSE_NRANKS");
  const char* dir = std::getenv("COURSE_RANK_DIR");
  if (rank == nullptr || nranks == nullptr || dir == nullptr)
    throw std::runtime_error("rank_context: this process was not started by launch_ranks()");
  return RankContext{.rank = std::atoi(rank), .nranks = std::atoi(nranks), .dir = dir};
}

ncclUniqueId share_unique_id(const RankContext& context, std::chrono::milliseconds limit) {
  const std::filesystem::path path = std::filesystem::path(context.dir) / "nccl-unique-id";
  if (context.rank == 0) {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::filesystem::path partial = path.string() + ".partial";
    {
      std::ofstream out(partial);
      out << unique_id_to_hex(id) << '\n';
      if (!out) throw std::runtime_error("share_unique_id: cannot write " + partial.string());
    }
    std::filesystem::rename(partial, path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("share_unique_id: rank " + std::to_string(context.rank) + " waited " +
                               std::to_string(limit.count()) + " ms for rank 0's id in " + path.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string hex = course::read_file(path);
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
  return unique_id_from_hex(hex);
}

std::string unique_id_to_hex(const ncclUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * NCCL_UNIQUE_ID_BYTES);
  for (const char c : id.internal) {
    const auto byte = static_cast<unsigned char>(c);
    hex += digits[byte >> 4];
    hex += digits[byte & 0xF];
  }
  return hex;
}

ncclUniqueId unique_id_from_hex(const std::string& hex) {
  if (hex.size() != 2 * NCCL_UNIQUE_ID_BYTES)
    throw std::invalid_argument("unique_id_from_hex: " + std::to_string(hex.size()) + " characters, expected " +
                                std::to_string(2 * NCCL_UNIQUE_ID_BYTES));
  ncclUniqueId id;
  for (std::size_t i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
    const int high = hex_value(hex[2 * i]);
    const int low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0)
      throw std::invalid_argument("unique_id_from_hex: '" + hex.substr(2 * i, 2) + "' at " + std::to_string(2 * i) +
                                  " is not hex");
    id.internal[i] = static_cast<char>(high * 16 + low);
  }
  return id;
}

}  // namespace course::testing
