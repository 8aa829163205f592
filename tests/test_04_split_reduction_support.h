// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What more than one of lesson 04's test files needs: exact reference sums of small integers,
// buffers placed between poisoned floats, results poisoned before a call and checked slot by
// slot after it, the watch of the workers' sum slots while one worker's stream is held by a gate
// (common/testing/held_stream.h), and the watchdog's limit and hint for calls that may hang. Each
// file's own helpers stay in its anonymous namespace.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "common/testing/workers.h"
#include "split_reduction.h"

namespace lesson04_tests {

// The course's test helpers every file of these tests uses, named once here.
using course::testing::case_seed;
using course::testing::current_device;
using course::testing::HeldOutcome;
using course::testing::Peeker;
using course::testing::repeated;
using course::testing::require_gpus;
using course::testing::run_with_stream_held;
using course::testing::run_with_watchdog;
using namespace std::chrono_literals;

inline constexpr std::size_t kGuard = 64;  // poisoned floats before and after every slice (keeps 16-byte alignment)

// The sum of values[begin, end) in double; small integers: exact in double in any order.
double exact_sum(const std::vector<float>& values, std::size_t begin, std::size_t end);

// One double read back from device memory.
double read_double(const double* device_ptr);

// Poisons `bytes` bytes at `ptr`, with `device` current.
void poison(int device, void* ptr, std::size_t bytes);

// A buffer of `count` floats on `device` between kGuard poisoned floats, with values[first, first + count).
course::DeviceBuffer<float> guarded_copy(int device, const std::vector<float>& values, std::size_t first,
                                         std::size_t count, std::size_t misalign = 0);

// Poisons everything the code under test writes in `workspace`: each worker's sum slot, its
// partials scratch and its two chunk buffers, the gathered partials, the total, the host partials
// and the host total.
void poison_results(lesson04::SplitWorkspace& workspace);

// Every worker's sum slot holds its slice's sum; on_device also gathers them and their total.
void check_slots(const lesson04::SplitWorkspace& workspace, const std::vector<float>& values, std::size_t n,
                 bool on_device);

// The watch of run_with_stream_held for a split sum of values[0, n) with worker `held` held back:
// whether every other worker's sum slot holds its slice's sum, read through Peekers (pinned
// memory, a stream of their own) made here, before the gate closes.
std::function<bool()> others_hold_their_sums(const lesson04::SplitWorkspace& workspace,
                                             const std::vector<float>& values, std::size_t n, int held);

// Each worker of `workspace` held in turn (its `stream`, held_stream.h) while `call` (named `what`)
// sums values[0, n): the call must not return while the worker is held, whichever it is, and must
// return the exact sum. Runs `call` once ungated first and poisons the results before each run. A
// call that waits for the first or the last worker's stream only returns meanwhile.
void check_waits_for_every_worker(lesson04::SplitWorkspace& workspace, const std::string& what,
                                  const std::function<double()>& call, double exact);

// outcome.describe(held_worker), and, when the other workers were not seen to finish, where the
// code under test puts what it copies to the host (pinned memory of the workspace).
std::string held_message(const HeldOutcome& outcome, const std::string& held_worker);

inline constexpr auto kGateLimit = std::chrono::seconds(100);
inline constexpr const char* kGateHint =
    "the call waits for something that never comes while a stream is held: cudaDeviceSynchronize, a kernel used "
    "for the first time (its module is loaded lazily), or a cudaStreamWaitEvent on an event recorded after it";

}  // namespace lesson04_tests
