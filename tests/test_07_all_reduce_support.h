// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What more than one of lesson 07's test files needs: the buffers of one all-reduce (seeded random
// inputs, each worker's buffer between poisoned guard floats, a double-precision reference sum),
// the check of every worker's result against that reference and against each other, a step or
// sum launcher that delays one worker (to make a race visible), and the watchdog's limit and hint
// for calls made while a stream is held. Each file's own helpers stay in its anonymous namespace.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "all_reduce.h"
#include "common/buffers.h"
#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "common/testing/launch_devices.h"
#include "common/testing/workers.h"

namespace lesson07_tests {

// The course's test helpers every file of these tests uses, named once here.
using course::testing::case_seed;
using course::testing::current_device;
using course::testing::repeated;
using course::testing::require_gpus;
using course::testing::returns_while_held;
using course::testing::run_with_watchdog;
using namespace std::chrono_literals;

inline constexpr std::size_t kGuard = 64;  // poisoned floats before and after every buffer (keeps 16-byte alignment)

// The tolerance of one element of a sum of W floats in [-1, 1): each of the W - 1 float additions
// rounds by at most 2^-24 of a partial sum, which is at most W in magnitude, and the ring adds in
// another order than the reference; W * W * 2^-24 bounds it (1e-6 for 4 workers).
double tolerance(int workers);

// Counts for `workers` workers, edges included: 0, 1, fewer than W, not divisible by W nor by 4 W, large.
std::vector<std::size_t> counts_for(int workers);

// The buffers of one all-reduce of `count` floats over the workers of a workspace: worker k's
// input (random in [-1, 1), seeded) lives in `memory[k]` between kGuard poisoned floats, and a
// copy of it in `sources[k]` for the tests that put it back on a worker's stream.
struct Buffers {
  Buffers(const lesson07::AllReduceWorkspace& workspace, std::size_t count, std::uint64_t seed);

  std::size_t count;
  std::vector<int> devices;
  std::vector<std::vector<float>> inputs;
  std::vector<double> reference;  // the sum of the inputs, element by element, in double
  std::vector<course::DeviceBuffer<float>> memory, sources;
  std::vector<float*> pointers;  // memory[k] + kGuard: what the all-reduce gets

  // Synchronously: every buffer poisoned, guards included, then the inputs copied in.
  void reset();
  // Poisons buffer k, guards included, synchronously (not while a stream is held: it waits for the device).
  void poison(int k);
  // Enqueues the copy of worker k's input into its buffer on `stream` and returns (behind a gate it waits).
  void enqueue_input(int k, cudaStream_t stream);
  // Every worker's buffer holds the reference within tolerance(W), every worker the same bits, and
  // every guard float is still poisoned. `what` says which call, for the messages. Worker `skip`
  // (if any) is left out.
  void check(const std::string& what, int skip = -1) const;
  // Worker k's buffer, guards left out.
  std::vector<float> result(int k) const;
};

// Every worker's result, read back.
std::vector<std::vector<float>> results(const Buffers& buffers);

// How many floats of `got` differ in their bits from `expected`.
std::size_t bits_differ(const std::vector<float>& got, const std::vector<float>& expected);

// The one-shot's result for `buffers`' inputs (task 3's: the bits the one-kernel and the LL
// one-shot must give); `buffers` reset to the inputs after.
std::vector<std::vector<float>> one_shot_bits(lesson07::AllReduceWorkspace& workspace, Buffers& buffers);

// Copies worker k's input of `from` into `to`'s source copy (the memory a captured call reads its input from).
void load_sources(const Buffers& from, Buffers& to);

// NCCL's in-place all-reduce of the same inputs, one rank per worker (their devices must be
// distinct): each rank's sum, read back. The communicators for a list are made once per test program.
std::vector<std::vector<float>> nccl_sums(const Buffers& buffers);

// Waits for every worker's stream (lesson07::synchronize: a one-kernel or LL one-shot that gave up throws).
void wait_for_workers(const lesson07::AllReduceWorkspace& workspace);

// Captures `call` (one all-reduce on `workspace`'s streams, forked from and joined to worker 0's) and
// checks the graph holds exactly one kernel per worker and nothing else: no copy, no memset, no host
// function, no event record (the one-kernel's and the LL one-shot's "one launch and nothing else").
void check_captured_as_one_kernel_per_worker(lesson07::AllReduceWorkspace& workspace,
                                             const std::function<void()>& call);

// Poisons every worker's scratch, kernel scratch and LL inbox, synchronously (a poisoned LL word
// carries the call number 0xFFFFFFFF: never a call's).
void poison_scratch(const lesson07::AllReduceWorkspace& workspace);

// A host function that sleeps `delay` on `stream`: everything after it on that stream waits.
void enqueue_delay(cudaStream_t stream, std::chrono::milliseconds delay);

// How late the cases make one worker's step, sum or kernel: a wrong order shows within
// microseconds (the other workers' work on one GPU takes well under a millisecond), so 100 ms is a
// margin of a hundred times and more, and the ordering cases with dozens of late steps stay short.
inline constexpr auto kLate = std::chrono::milliseconds(100);

// One of the all-reduces under test (ring_all_reduce or one_shot_all_reduce with its default launcher).
using AllReduceCall =
    std::function<void(lesson07::AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count)>;

// 1 to 4 workers on GPU 0 and every count up to `largest` (the caller on the last GPU): the call
// leaves the caller's device current and every worker ends with the double-precision reference.
// The seed of each count is case_seed(salt + count); with poison_scratch, every worker's scratch is
// poisoned before each call (a copy the call does not make then reads NaN, not an earlier count's
// input). The workspace's LL one-shot takes `largest` floats (kDefaultLlMaxCount when not given).
void check_matches_reference(const std::string& name, const AllReduceCall& call, std::uint64_t salt,
                             bool poison_scratch, std::size_t largest = SIZE_MAX);

// 2 to 4 workers on GPU 0, `count` floats, with the first and then the last worker held: the call
// made once ungated (it loads its kernels), then again with the held worker's input enqueued behind
// a gate on its stream (its buffer and every scratch poisoned before): the call must return while
// the gate is closed, and every worker must end with the sum once it opens. `name` names the call
// in the messages.
void check_behind_held_workers(const std::string& name, const AllReduceCall& call, std::uint64_t seed,
                               std::size_t count = 1000003);

// A ring step and a one-shot sum that note, before they enqueue, whether the stream's own device is
// current (common/testing/launch_devices.h says why the test records it itself): the contract
// launches every kernel with its worker's device current.
class LaunchDevices : public course::testing::LaunchDevices {
 public:
  lesson07::RingStep step();
  lesson07::PeerSum sum();
  lesson07::OneKernelLaunch kernel();
  lesson07::LlOneShotLaunch ll_one_shot();
};

// An all-reduce under test that launches through a LaunchDevices' step or sum.
using CheckedCall = std::function<void(lesson07::AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                       std::size_t count, LaunchDevices& launches)>;

// On every list of distinct GPUs (all of them, the last and GPU 0 twice each, {1, 0}) and every
// count up to one_shot_max_count: the call, from the last GPU, leaves it current, launches every step or sum with its
// worker's device current and gives the reference; where each GPU appears once, the result also
// matches NCCL's all-reduce of the same inputs within twice the tolerance.
void check_on_distinct_gpus(const std::string& name, const CheckedCall& call, std::size_t one_shot_max_count,
                            std::uint64_t seed);

inline constexpr auto kGateLimit = std::chrono::seconds(100);
inline constexpr const char* kGateHint =
    "the call waits for something that never comes while a stream is held: cudaDeviceSynchronize, a "
    "cudaStreamSynchronize or cudaEventSynchronize inside the call, a kernel used for the first time (its module is "
    "loaded lazily), or a cudaStreamWaitEvent on an event recorded after it";

}  // namespace lesson07_tests
