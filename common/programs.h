// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What the course's programs share: counting the GPUs without failing on a machine that has none
// (demos, benchmarks and the tests' skips), and running a demo in sections, so that a task not
// done yet (NOT_IMPLEMENTED) or a CUDA error stops its own section only and the reader still
// sees the rest.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace course {

// The number of GPUs this process can use; 0 when there is no driver or no device, and then no
// CUDA error is left behind for a later call to report.
int visible_gpu_count();

// Prints "== title", runs `body`, and on an exception prints "  stopped: <what>" and clears the
// CUDA error state, so that the next section starts clean.
void demo_section(const std::string& title, const std::function<void()>& body);

// This process's environment, name -> value, with `over` laid over it (what lesson 09's place_rank
// takes; what a copy of this program that a test starts begins from).
std::map<std::string, std::string> process_environment(const std::map<std::string, std::string>& over = {});

// What a program that starts copies of itself needs: a whole file's text ("" when it cannot be
// read), and this program's path (from /proc/self/exe; throws std::runtime_error without it).
std::string read_file(const std::filesystem::path& path);
std::string this_program();

// A program to start with execve, its arguments and environment made before fork: between fork
// and exec a threaded program (NCCL's threads, a watchdog's) may call only async-signal-safe
// functions, not malloc or setenv (a lock another thread held at the fork stays held in the
// child forever), so the child calls exec() and nothing that allocates. arguments[0] is the path.
class ExecImage {
 public:
  ExecImage(std::vector<std::string> arguments, const std::map<std::string, std::string>& environment);
  ExecImage(const ExecImage&) = delete;  // argv and envp point into this object's own strings
  ExecImage& operator=(const ExecImage&) = delete;
  // execve(arguments[0], ...); where it fails, _exit(127). Async-signal-safe.
  [[noreturn]] void exec() const;

 private:
  std::vector<std::string> arguments_, entries_;
  std::vector<char*> argv_, envp_;
};

}  // namespace course
