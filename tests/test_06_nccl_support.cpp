// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06's shared test helpers (declared, with what each does, in test_06_nccl_support.h): the
// communicators and buffers of the one-process cases, the quiet comparison, and the ranks' inputs,
// outputs and sums.
#include "test_06_nccl_support.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdlib>
#include <future>
#include <sstream>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/communicators_at_exit.h"
#include "common/testing/gpu_test.h"
#include "nccl_collectives.h"

using namespace lesson06;

namespace lesson06_tests {

namespace {

// First mismatch of `got` against `expected` from `offset`, as a sentence; "" when they agree.
std::string first_difference(const std::vector<float>& got, const std::vector<float>& expected, std::size_t offset = 0,
                             double tolerance = 0) {
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const float g = got[offset + i];
    if (!(std::abs(static_cast<double>(g) - expected[i]) <= tolerance * std::max(1.0, std::abs(double(expected[i]))))) {
      if (wrong++ == 0) first = i;
    }
  }
  if (wrong == 0) return "";
  std::ostringstream out;
  out << wrong << " of " << expected.size() << " elements differ; first at [" << first << "]: got "
      << got[offset + first] << ", expected " << expected[first] << " (NaN: never written)";
  return out.str();
}

std::vector<float> parse_floats(const std::string& text) {
  std::istringstream in(text);
  std::vector<float> values;
  for (float v; in >> v;) values.push_back(v);
  return values;
}

}  // namespace

const std::vector<std::size_t> kCounts = {1, 3, 1000, (std::size_t{1} << 18) + 3};

std::vector<int> first_devices(int count) {
  std::vector<int> devices;
  for (int d = 0; d < count; ++d) devices.push_back(d);
  return devices;
}

Communicators::Communicators(std::span<const int> devices) {
  run_with_watchdog("make_communicators", kCallLimit, "ncclCommInitAll waits for ranks that never come",
                    [&] { comms = make_communicators(devices); });
  REQUIRE(comms.size() == devices.size());
  for (const int d : devices) streams.emplace_back(d);
  for (const course::Stream& s : streams) stream_handles.push_back(s.get());
}

Communicators::~Communicators() {
  course::testing::destroy_at_exit(std::move(comms));
}

SplitSumBuffers::SplitSumBuffers(std::span<const int> list, std::span<const float> values)
    : devices(list.begin(), list.end()) {
  const int ranks = static_cast<int>(devices.size());
  for (int k = 0; k < ranks; ++k) {
    const course::Range range = course::split_range(values.size(), ranks, k);
    slices.emplace_back(devices[k], range.size());
    if (range.size() > 0)
      CUDA_CHECK(cudaMemcpy(slices.back().data(), values.data() + range.begin, range.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
    slice_pointers.push_back(slices.back().data());
    totals.emplace_back(devices[k], 1);
    total_pointers.push_back(totals.back().data());
  }
  poison_totals();
}

void SplitSumBuffers::poison_totals() {
  for (std::size_t k = 0; k < devices.size(); ++k) {
    const course::DeviceGuard on_device(devices[k]);
    course::poison_device(totals[k].data(), totals[k].bytes());
  }
}

RankBuffers::RankBuffers(std::span<const int> devices, std::size_t count) {
  for (const int d : devices) {
    buffers.emplace_back(d, count);
    const course::DeviceGuard on_device(d);
    course::poison_device(buffers.back().data(), buffers.back().bytes());
  }
  for (auto& b : buffers) {
    pointers.push_back(b.data());
    const_pointers.push_back(b.data());
  }
}

void RankBuffers::fill(std::size_t k, const std::vector<float>& values, std::size_t offset) {
  CUDA_CHECK(
      cudaMemcpy(buffers[k].data() + offset, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
}

std::vector<float> RankBuffers::read(std::size_t k) const {
  std::vector<float> out(buffers[k].size());
  if (!out.empty()) CUDA_CHECK(cudaMemcpy(out.data(), buffers[k].data(), buffers[k].bytes(), cudaMemcpyDeviceToHost));
  return out;
}

std::vector<std::vector<float>> random_per_rank(int ranks, std::size_t count, std::uint64_t salt) {
  std::vector<std::vector<float>> values;
  for (int r = 0; r < ranks; ++r) values.push_back(course::random_small_integers(count, case_seed(salt + r)));
  return values;
}

void check_agrees(const std::vector<float>& got, const std::vector<float>& expected, std::size_t offset,
                  double tolerance) {
  const std::string difference = first_difference(got, expected, offset, tolerance);
  INFO(difference);
  CHECK(difference.empty());
}

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

const char* env_text(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

std::vector<float> rank_input(int rank, std::size_t count, std::uint64_t seed) {
  return course::random_small_integers(count, course::mix_seed(seed, 600 + static_cast<std::uint64_t>(rank)));
}

std::string joined(const std::vector<float>& values) {
  std::ostringstream out;
  for (const float v : values) out << ' ' << v;  // small integers: printed exactly
  return out.str();
}

std::string field(const std::string& output, const std::string& key) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

std::map<std::string, std::string> job_env(std::size_t count, std::uint64_t seed) {
  return {{"COURSE_RANK_COUNT", std::to_string(count)}, {"COURSE_RANK_SEED", std::to_string(seed)}};
}

std::string last_lines(const std::string& log, std::size_t max_chars) {
  return log.size() <= max_chars ? log : "..." + log.substr(log.size() - max_chars);
}

std::vector<Job> jobs_at_once(int count, std::uint64_t salt,
                              const std::function<course::testing::RankLaunch(int g, std::uint64_t seed)>& launch) {
  std::vector<std::uint64_t> seeds;
  for (int g = 1; g <= count; ++g) seeds.push_back(case_seed(salt + static_cast<std::uint64_t>(g)));
  std::vector<std::future<course::testing::RankLaunch>> running;
  for (int g = 1; g <= count; ++g) running.push_back(std::async(std::launch::async, launch, g, seeds[g - 1]));
  std::vector<Job> jobs;
  for (int g = 1; g <= count; ++g) jobs.push_back(Job{.launch = running[g - 1].get(), .seed = seeds[g - 1]});
  return jobs;
}

void check_sums(const course::testing::RankLaunch& launch, int nranks, std::size_t count, std::uint64_t seed,
                const char* sum_key) {
  std::vector<float> expected(count, 0.0f);
  for (int r = 0; r < nranks; ++r) {
    const std::vector<float> input = rank_input(r, count, seed);
    for (std::size_t i = 0; i < count; ++i) expected[i] += input[i];
  }
  for (const auto& rank : launch.ranks) {
    INFO("rank " << rank.rank << " of " << nranks << " (exit code " << rank.exit_code
                 << (rank.killed ? ", killed at the time limit" : "") << "); its output:\n"
                 << rank.output << "\nits log:\n"
                 << last_lines(rank.log));
    REQUIRE(rank.exit_code == 0);
    const std::vector<float> got = parse_floats(field(rank.output, sum_key));
    REQUIRE(got.size() == count);
    check_agrees(got, expected);
  }
}

}  // namespace lesson06_tests
