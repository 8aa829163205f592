// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What lesson 06's test files share: the watchdog's limit and hint, the communicators and per-rank
// buffers of the one-process cases, the quiet comparison of a result with what it should be, and
// what the one-process-per-GPU cases use to give each rank its input and check what every rank wrote.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/testing/gpu_test.h"
#include "common/testing/rank_launcher.h"

namespace lesson06_tests {

// The course's test helpers every file of these tests uses, named once here.
using course::testing::case_seed;
using course::testing::current_device;
using course::testing::require_gpus;
using course::testing::run_with_watchdog;
using namespace std::chrono_literals;

constexpr auto kCallLimit = std::chrono::seconds(60);
constexpr const char* kGroupHint =
    "a collective over several ranks from one thread waits for ranks the thread has not reached yet: every "
    "rank's call must sit inside ONE ncclGroupStart()/ncclGroupEnd() (the missing group call); or the call "
    "waits on a stream that never finishes";
// The element counts the collectives are tried with: one, a few, a thousand, and 2^18 + 3.
extern const std::vector<std::size_t> kCounts;

// {0, 1, ..., count - 1}
std::vector<int> first_devices(int count);

// The student's communicators, destroyed by the test itself (never by code under test) when the
// test program ends, all sets at once (common/testing/communicators_at_exit.h says why).
struct Communicators {
  explicit Communicators(std::span<const int> devices);
  ~Communicators();
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  int size() const { return static_cast<int>(comms.size()); }

  std::vector<ncclComm_t> comms;
  std::vector<course::Stream> streams;
  std::vector<cudaStream_t> stream_handles;
};

// One buffer per rank on its device, filled with `values[k]` or poisoned.
struct RankBuffers {
  std::vector<course::DeviceBuffer<float>> buffers;
  std::vector<float*> pointers;
  std::vector<const float*> const_pointers;

  RankBuffers(std::span<const int> devices, std::size_t count);
  void fill(std::size_t k, const std::vector<float>& values, std::size_t offset = 0);
  std::vector<float> read(std::size_t k) const;
};

// split_sum's inputs: rank k's slice (course::split_range of `values`) on devices[k], and its
// total, one poisoned double on devices[k].
struct SplitSumBuffers {
  SplitSumBuffers(std::span<const int> devices, std::span<const float> values);
  void poison_totals();

  std::vector<int> devices;
  std::vector<course::DeviceBuffer<float>> slices;
  std::vector<const float*> slice_pointers;
  std::vector<course::DeviceBuffer<double>> totals;
  std::vector<double*> total_pointers;
};

// Small random integers for each of `ranks` ranks, rank r's from the case's seed for `salt` + r.
std::vector<std::vector<float>> random_per_rank(int ranks, std::size_t count, std::uint64_t salt);

// CHECKs that `got`, from `offset`, agrees with `expected`; a failure names the first mismatch.
void check_agrees(const std::vector<float>& got, const std::vector<float>& expected, std::size_t offset = 0,
                  double tolerance = 0);

// ---- The ranks of tasks 4 and 5 (each a process of its own) -----------------------------------

// The environment variable `name` as a number, or as text; `fallback` where it is not set.
int env_int(const char* name, int fallback);
const char* env_text(const char* name, const char* fallback);

// Rank `rank`'s input to the job's all-reduce: small random integers from the job's seed.
std::vector<float> rank_input(int rank, std::size_t count, std::uint64_t seed);

// " v0 v1 ...": the values as a rank writes them (small integers, exactly).
std::string joined(const std::vector<float>& values);

// The value after "key " on its own line of a rank's output, "" when there is none.
std::string field(const std::string& output, const std::string& key);

// The environment that tells every rank of a job its count and seed.
std::map<std::string, std::string> job_env(std::size_t count, std::uint64_t seed);

// The end of a log (its last `max_chars` characters), for a failure message.
std::string last_lines(const std::string& log, std::size_t max_chars = 3000);

// One job of jobs_at_once: its launch and the seed its ranks' inputs came from.
struct Job {
  course::testing::RankLaunch launch;
  std::uint64_t seed = 0;
};

// Runs `launch(g, seed)` for g = 1 .. count at once, each on a thread of its own, with seed
// case_seed(salt + g) (made first, on the caller's thread: case_seed talks to Catch2, which other
// threads must not), and returns the jobs in order of g. The jobs of one case are independent
// (each its own id, folder and processes), so they need not wait for each other; most of each
// one's time is its processes' start-up and NCCL's, which overlap.
std::vector<Job> jobs_at_once(int count, std::uint64_t salt,
                              const std::function<course::testing::RankLaunch(int g, std::uint64_t seed)>& launch);

// Every rank of `launch` exited 0 and wrote "sum" equal to the sum of every rank's input.
void check_sums(const course::testing::RankLaunch& launch, int nranks, std::size_t count, std::uint64_t seed,
                const char* sum_key);

}  // namespace lesson06_tests
