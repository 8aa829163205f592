// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05's shared test helpers (declared, with what each does, in test_05_matvec_support.h):
// the reference and its error bound, the check of y, the watchdog around the student's calls, the
// poisoning of the workers' buffers and the product run with one worker held back.
#include "test_05_matvec_support.h"

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <sstream>
#include <string>

#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "common/testing/workers.h"

using namespace std::chrono_literals;
using namespace course::testing;

namespace lesson05_tests {

namespace {

constexpr auto kLimit = 60s;
const char* const kHint = "a kernel that never ends, or a wait for work never enqueued";

}  // namespace

const std::vector<Shape> kSplitShapes = {{1, 1}, {3, 5}, {10, 3}, {37, 1024}, {257, 33}, {1000, 129}, {0, 6}, {5, 0}};

Problem with_reference(Problem p, course::Range cols) {
  // Summing n float products in any order (a loop, per-thread sums combined by shuffles, partial
  // ys of column blocks added across devices) is off by at most gamma(n + 1) * sum_j |W_ij x_j|,
  // gamma(k) = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms,
  // 3.1); rounding the result adds u |y_i|. We allow 1.1 (n + 2) u sum_j |W_ij x_j|: loose for
  // random data, yet a lost or doubled term is caught at the small shapes, where it is far larger.
  constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // u: float's relative rounding error
  p.y.assign(p.m, 0.0);
  p.bound.assign(p.m, 0.0);
  for (std::size_t i = 0; i < p.m; ++i) {
    double magnitude = 0;
    for (std::size_t j = cols.begin; j < cols.end; ++j) {
      const double term = static_cast<double>(p.W[i * p.n + j]) * p.x[j];
      p.y[i] += term;
      magnitude += std::fabs(term);
    }
    p.bound[i] = 1.1 * static_cast<double>(cols.size() + 2) * kUnitRoundoff * magnitude;
  }
  return p;
}

Problem make_problem(std::size_t m, std::size_t n, std::uint64_t salt) {
  const std::uint64_t seed = case_seed(salt);
  return with_reference({m, n, course::random_floats(m * n, seed), course::random_floats(n, seed + 1), {}, {}}, {0, n});
}

void check_y(const Problem& p, const std::vector<float>& got, const std::string& what,
             const std::vector<course::Range>& parts) {
  std::size_t wrong = 0, first = 0;
  std::vector<std::size_t> per_part(parts.size(), 0);
  for (std::size_t i = 0; i < p.m; ++i) {
    if (std::fabs(static_cast<double>(got[i]) - p.y[i]) <= p.bound[i]) continue;  // NaN (unwritten) fails
    if (wrong++ == 0) first = i;
    for (std::size_t k = 0; k < parts.size(); ++k) per_part[k] += parts[k].begin <= i && i < parts[k].end;
  }
  std::ostringstream detail;
  if (wrong > 0) {
    detail << "; first y[" << first << "] = " << got[first] << ", expected " << p.y[first] << " +- " << p.bound[first];
    if (!parts.empty()) detail << "; wrong elements per worker:";
    for (std::size_t count : per_part) detail << ' ' << count;
  }
  INFO(what << ", W " << p.m << " x " << p.n << ": " << wrong << " of " << p.m << " elements wrong" << detail.str());
  CHECK(wrong == 0);
  INFO(what << ", W " << p.m << " x " << p.n << ": the element after y[m - 1] was written");
  CHECK(std::isnan(got[p.m]));
}

bool rows_right(const Problem& p, const std::vector<float>& got, course::Range rows) {
  for (std::size_t i = rows.begin; i < rows.end; ++i)
    if (!(std::fabs(static_cast<double>(got[i]) - p.y[i]) <= p.bound[i])) return false;
  return true;
}

RootVectors::RootVectors(int root_device, const Problem& p)
    : root(root_device), x(root_device, p.n), y(root_device, p.m + 1) {
  upload<float>(x.data(), root, p.x);
  poison_y();
}

void RootVectors::poison_y() const {
  const course::DeviceGuard on(root);
  course::poison_device(y.data(), y.bytes());
}

std::vector<float> RootVectors::result() const {
  return read_back(y.data(), root, y.size());
}

void poison_workers(const lesson05::DistributedMatrix& A) {
  for (const lesson05::Worker& w : A.workers) {
    const course::DeviceGuard on(w.device);
    course::poison_device(w.x.data(), w.x.bytes());
    course::poison_device(w.y.data(), w.y.bytes());
  }
  if (A.partials.size() == 0) return;
  const course::DeviceGuard on(A.root);
  course::poison_device(A.partials.data(), A.partials.bytes());
}

HeldOutcome check_others_finish_while_held(cudaStream_t held, const std::string& held_worker, const std::string& what,
                                           const std::function<void()>& call,
                                           const std::function<bool()>& others_done) {
  const HeldOutcome outcome =
      run_with_stream_held(held, what + " with " + held_worker + " held back", call, others_done);
  INFO(what << ": " << outcome.describe(held_worker));
  CHECK(outcome.others_finished);
  INFO(what << " returned while " << held_worker << "'s stream was held: it must return only when y is complete, "
            << "so " << held_worker << "'s work belongs on that stream and the call waits for it");
  CHECK_FALSE(outcome.call_returned_early);
  return outcome;
}

void check_rows_while_held(const Problem& p, int workers, cudaStream_t held, const float* y, int device,
                           const std::string& what, const std::function<void()>& call) {
  const std::vector<course::Range> parts = course::split_ranges(p.m, workers);
  Peeker peek(device, p.m * sizeof(float));  // made before the gate closes
  check_others_finish_while_held(held, "worker 0", what, call, [&] {
    const std::vector<float> got = peek.values(y, p.m);
    for (int k = 1; k < workers; ++k)
      if (!rows_right(p, got, parts[k])) return false;
    return true;
  });
}

void check_waits_for_each_worker(const std::vector<cudaStream_t>& held, const std::string& what,
                                 const std::function<void()>& poison, const std::function<void()>& call,
                                 const std::function<void()>& check) {
  within_limit(what, call);  // ungated first: loads every kernel it launches
  for (std::size_t k = 0; k < held.size(); ++k) {
    poison();
    const bool returned =
        returns_while_held(held[k], what + " with worker " + std::to_string(k) + "'s stream held", call, 300ms);
    INFO(what << ": worker " << k << " of " << held.size() << "'s stream was held for 0.3 s and the call "
              << (returned ? "returned meanwhile: y is complete only once EVERY worker is done, so wait for each "
                             "worker's stream, not the first or the last one's only (streams are not ordered with "
                             "each other)"
                           : "waited for it"));
    CHECK_FALSE(returned);
    check();
  }
}

ThreeWorkers::ThreeWorkers(std::uint64_t salt)
    : gpus(require_gpus(1)), devices(workers_on(3, gpus)), p(make_problem(3000, 1000, salt)), io(gpus - 1, p) {}

void check_row_split_while_held(const ThreeWorkers& three, const lesson05::DistributedMatrix& A,
                                const std::string& name, const std::function<void()>& multiply) {
  within_limit(name, multiply);  // ungated first: loads every kernel it launches
  three.io.poison_y();
  poison_workers(A);
  const auto K = static_cast<int>(A.workers.size());
  check_rows_while_held(three.p, K, A.workers.at(0).stream, three.io.y.data(), three.io.root,
                        name + " on " + describe(three.devices), multiply);
  check_y(three.p, three.io.result(), name + " once worker 0 was let go", course::split_ranges(three.p.m, K));
}

void check_row_split_waits_for_each_worker(const ThreeWorkers& three, const lesson05::DistributedMatrix& A,
                                           const std::string& name, const std::function<void()>& multiply) {
  std::vector<cudaStream_t> streams;
  for (const lesson05::Worker& w : A.workers) streams.push_back(w.stream);
  const auto K = static_cast<int>(A.workers.size());
  check_waits_for_each_worker(
      streams, name + " on " + describe(three.devices),
      [&] {
        three.io.poison_y();
        poison_workers(A);
      },
      multiply,
      [&] {
        check_y(three.p, three.io.result(), name + " once the held worker was let go",
                course::split_ranges(three.p.m, K));
      });
}

std::vector<int> workers_on(int k, int gpus) {
  std::vector<int> devices;
  for (int w = 0; w < k; ++w) devices.push_back(gpus - 1 - w % gpus);
  return devices;
}

void within_limit(const std::string& what, const std::function<void()>& work) {
  run_with_watchdog(what, kLimit, kHint, work);
}

void from_last_device(int gpus, const std::string& what, const std::function<void()>& call) {
  call_keeps_device(gpus - 1, what, kLimit, kHint, call);
}

std::string describe(const std::vector<int>& devices) {
  return "devices " + show(devices);
}

}  // namespace lesson05_tests
