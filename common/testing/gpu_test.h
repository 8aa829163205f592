// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What every lesson's tests share: GPU counting that never throws, skips with a reason,
// the run's seed, a watchdog for calls that can hang, and running this test program again
// as a child process with another environment (CUDA_VISIBLE_DEVICES, say). The main that
// links this (main.cpp) also makes device 0 current again after every test case, so a case
// that switches devices never changes where the next one starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace course::testing {

// The number of GPUs this process can use; 0 when there is no driver or no device.
int gpu_count();

// A table of the machine's GPUs, printed once (to stderr) at the start of every test program.
// Its format is defined here, and only here; the grader reads its first line
// (tests/grader/catch2_runner.py), so a change to that line changes the grader's pattern with it:
//     GPUs visible: <count> (CUDA_VISIBLE_DEVICES=<value or <unset>>), driver API <M.m>, runtime <M.m>
//       GPU <ordinal>: <name>, cc <major.minor>, <total GB> GB, <SMs> SMs, <PCI bus id>
std::string gpu_inventory();

// The calling thread's current device (CUDA_CHECK on cudaGetDevice).
int current_device();

// The lines of `text` that hold more than white space, in order (for checking printed tables).
std::vector<std::string> nonempty_lines(const std::string& text);

// SKIPs the current test case, with "needs N GPUs, found M", unless N GPUs are visible.
// Returns the count found (at least `needed`).
int require_gpus(int needed);

// The run's seed (Catch2's --rng-seed) mixed with a case-specific salt; the seed goes into
// the failure report, so `--rng-seed <seed>` reproduces the inputs.
std::uint64_t case_seed(std::uint64_t salt);

// Runs `work` on this thread; if it has not returned after `limit`, prints
//     WATCHDOG: <what> did not finish within N s[ (the grader shortened ...)]. Probably: <hint>
// to stderr and ends the process (exit code 70), because a thread stuck in a CUDA or NCCL
// wait cannot be cancelled. The grader reads that line and reports it as the case's failure.
// COURSE_WATCHDOG_CAP_MS (a count of milliseconds > 0), where set, shortens every limit to at most
// that: once a case of a lesson has hung in a process of its own, the grader runs the lesson's other
// cases alone with a cap derived from the reference's time for each, so that a further hang ends in
// seconds, as a failure with the watchdog's message, instead of costing a whole time-out.
void run_with_watchdog(const std::string& what, std::chrono::seconds limit, const std::string& hint,
                       const std::function<void()>& work);

constexpr int kWatchdogExitCode = 70;

// The environment a rank of a multi-process job starts with (launch_ranks, lesson 09's mpirun
// jobs): this process's, CUDA_DEVICE_MAX_CONNECTIONS at the driver's default of 8, then `env` over
// it. The test main raises that variable to 32 for the cases that hold one stream and watch
// others, and a child inherits it; a rank has one or two streams, and 32 queues cost a second more
// of each rank's CUDA start (a two-rank job of lesson 06's rank case: 4.0 s at 32, 2.1 s at 8, on
// two H200s). Defined in rank_launcher.cpp: it needs no test framework.
std::map<std::string, std::string> rank_environment(const std::map<std::string, std::string>& env);

// Runs this same test program again with `env` added to its environment and only the test
// case named `case_name` selected (hidden cases, tagged [.], are made for this). Returns the
// child's output file contents: the child writes to the path in $COURSE_CHILD_OUTPUT.
struct ChildResult {
  int exit_code = -1;
  std::string output;  // what the child wrote to $COURSE_CHILD_OUTPUT
  std::string log;     // the child's stdout and stderr
};
ChildResult run_child_case(const std::string& case_name, const std::map<std::string, std::string>& env,
                           std::chrono::seconds limit = std::chrono::seconds(60));

// In a child case (or a rank launch_ranks() started): appends `text` to the file named by
// $COURSE_CHILD_OUTPUT. Defined in rank_launcher.cpp, part of common_lib: a benchmark's ranks use it too.
void write_child_output(const std::string& text);

}  // namespace course::testing
