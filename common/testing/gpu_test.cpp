// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Test support shared by every lesson: skips, seeds, watchdog, child processes, exit codes.
#include "gpu_test.h"

#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_get_random_seed.hpp>
#include <catch2/catch_test_macros.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../check.h"
#include "../programs.h"
#include "../random.h"

namespace course::testing {

int gpu_count() {
  return course::visible_gpu_count();
}

std::string gpu_inventory() {
  std::ostringstream out;
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  const int count = gpu_count();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  out << "GPUs visible: " << count << " (CUDA_VISIBLE_DEVICES=" << (visible ? visible : "<unset>") << "), driver API "
      << driver / 1000 << '.' << (driver % 1000) / 10 << ", runtime " << runtime / 1000 << '.' << (runtime % 1000) / 10
      << '\n';
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    char bus[32] = {};
    (void)cudaDeviceGetPCIBusId(bus, sizeof bus, d);
    out << "  GPU " << d << ": " << prop.name << ", cc " << prop.major << '.' << prop.minor << ", " << std::fixed
        << std::setprecision(1) << prop.totalGlobalMem / 1e9 << " GB, " << prop.multiProcessorCount << " SMs, " << bus
        << '\n';
  }
  return out.str();
}

int current_device() {
  int device = -1;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

std::vector<std::string> nonempty_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
  return lines;
}

int require_gpus(int needed) {
  const int found = gpu_count();
  if (found < needed) SKIP("needs " << needed << " GPU" << (needed == 1 ? "" : "s") << ", found " << found);
  return found;
}

std::uint64_t case_seed(std::uint64_t salt) {
  const std::uint64_t seed = Catch::getSeed();
  UNSCOPED_INFO("random inputs from --rng-seed " << seed << " (salt " << salt << ")");
  return mix_seed(seed, salt);
}

namespace {

// The grader's cap on every watchdog of this process (COURSE_WATCHDOG_CAP_MS); none where it is
// unset or not a count of milliseconds > 0.
std::optional<std::chrono::milliseconds> watchdog_cap() {
  const char* text = std::getenv("COURSE_WATCHDOG_CAP_MS");
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const long long ms = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

}  // namespace

void run_with_watchdog(const std::string& what, std::chrono::seconds limit, const std::string& hint,
                       const std::function<void()>& work) {
  std::chrono::milliseconds wait = limit;
  std::string shortened;
  if (const auto cap = watchdog_cap(); cap && *cap < wait) {
    wait = *cap;
    shortened = " (the grader shortened this limit from " + std::to_string(limit.count()) +
                " s: another case of this lesson had already hung in a process of its own)";
  }
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mutex);
    if (!finished_cv.wait_for(lock, wait, [&] { return finished; })) {
      std::fprintf(stderr, "\nWATCHDOG: %s did not finish within %.3g s%s. Probably: %s\n", what.c_str(),
                   static_cast<double>(wait.count()) / 1000.0, shortened.c_str(), hint.c_str());
      std::fflush(stderr);
      std::fflush(stdout);
      std::_Exit(kWatchdogExitCode);
    }
  });
  auto stop_watchdog = [&] {
    {
      std::lock_guard<std::mutex> lock(mutex);
      finished = true;
    }
    finished_cv.notify_one();
    watchdog.join();
  };
  try {
    work();
  } catch (...) {
    stop_watchdog();
    throw;
  }
  stop_watchdog();
}

ChildResult run_child_case(const std::string& case_name, const std::map<std::string, std::string>& env,
                           std::chrono::seconds limit) {
  const std::string self = course::this_program();
  char out_template[] = "/tmp/course-child-XXXXXX";
  const int out_fd = mkstemp(out_template);
  char log_template[] = "/tmp/course-child-log-XXXXXX";
  const int log_fd = mkstemp(log_template);
  if (out_fd < 0 || log_fd < 0) throw std::runtime_error("run_child_case: cannot create temporary files");
  close(out_fd);

  std::map<std::string, std::string> variables = course::process_environment(env);
  variables["COURSE_CHILD_OUTPUT"] = out_template;
  const course::ExecImage child({self, case_name, "--reporter", "compact"}, variables);  // made before fork

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("run_child_case: fork failed");
  if (pid == 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    child.exec();
  }
  close(log_fd);

  ChildResult result;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.output = course::read_file(out_template);
  result.log = course::read_file(log_template);
  std::remove(out_template);
  std::remove(log_template);
  return result;
}

}  // namespace course::testing
