// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08 tests, task 4: solve with a residual every k sweeps. The residuals are compared with a
// double-precision reference of the whole grid, the state after the call with the CPU reference bit
// for bit, the stop at the tolerance with the reference's own residuals, for both schedules and 1 to
// 4 workers on one GPU; and, with one worker's stream held, that a round's sweeps are all enqueued
// before the host waits for its residual, and that the residual waits for that worker's share.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/testing/gpu_test.h"
#include "common/testing/workers.h"
#include "jacobi.h"
#include "test_08_halo_exchange_support.h"

using namespace lesson08;
using namespace lesson08_tests;
using Catch::Matchers::WithinRel;
using course::testing::Devices;
using course::testing::show;

namespace {

// A double sum of at most a few thousand positive terms, in any order, is within 10^4 * 2^-53
// (about 10^-12) of the exact sum; the square root halves that. 1e-9 leaves room for the GPU's
// fused multiply-adds and any order of the partial sums.
constexpr double kResidualTolerance = 1e-9;

const char* name_of(Schedule schedule) {
  return schedule == Schedule::plain ? "plain" : "overlapped";
}

// Runs solve on a fresh decomposition and checks its report and state against the reference.
void check_solve(const Devices& devices, Shape shape, int max_iterations, const SolveOptions& options,
                 const std::vector<std::vector<float>>& states, int expected_iterations,
                 const std::vector<double>& expected_residuals) {
  const std::vector<float>& initial = states[0];
  Decomposition grid = decompose(devices, shape.ny, shape.nx, initial);
  poison_next(grid);
  // Pinned memory is not zeroed: solve writes every slot it adds, each round (NaN shows one it did not).
  std::fill(grid.host_residuals.data(), grid.host_residuals.data() + grid.host_residuals.size(),
            std::numeric_limits<double>::quiet_NaN());
  const SolveReport report = solve(grid, max_iterations, options);
  INFO(show(devices) << ", grid " << shape.ny << " x " << shape.nx << ", schedule " << name_of(options.schedule)
                     << ", solve(grid, " << max_iterations << ", check_every " << options.check_every << ", tolerance "
                     << options.tolerance << ")");
  CHECK(report.iterations == expected_iterations);
  REQUIRE(report.residuals.size() == expected_residuals.size());
  for (std::size_t i = 0; i < expected_residuals.size(); ++i) {
    INFO("check " << i << ", after sweep " << (i + 1) * options.check_every);
    CHECK_THAT(report.residuals[i], WithinRel(expected_residuals[i], kResidualTolerance));
  }
  check_state(grid, states[static_cast<std::size_t>(expected_iterations)], "solve");
}

}  // namespace

// ---- Task 4 ---------------------------------------------------------------------------------

TEST_CASE("the residual every k sweeps matches a double-precision reference and solve stops at the tolerance",
          "[08-halo-exchange][task:4][gpus:1][points:4]") {
  require_gpus(1);
  const Shape shape{4 * 4 + 3, 41};
  const std::vector<std::vector<float>> states = random_states(shape, 400, 10);
  std::vector<double> r(11, 0.0);  // r[t]: the residual of sweep t
  for (std::size_t t = 1; t <= 10; ++t) r[t] = reference_residual(states[t - 1], states[t], shape);
  for (const Devices& devices : course::testing::shared_gpu_lists())
    for (const Schedule schedule : {Schedule::plain, Schedule::overlapped}) {
      check_solve(devices, shape, 10, {schedule, 3, 0}, states, 10, {r[3], r[6], r[9]});  // no check after the 10th
      check_solve(devices, shape, 4, {schedule, 1, 0}, states, 4, {r[1], r[2], r[3], r[4]});
      check_solve(devices, shape, 2, {schedule, 5, 0}, states, 2, {});  // a short round: no check
      // The residual falls from sweep to sweep: a tolerance just above r[6] stops after the check at 6.
      check_solve(devices, shape, 10, {schedule, 3, r[6] * (1 + 1e-6)}, states, 6, {r[3], r[6]});
    }
}

TEST_CASE("the residual counts every interior point once for blocks of one or two rows in both schedules",
          "[08-halo-exchange][task:4][gpus:1][points:1]") {
  require_gpus(1);
  for (const Devices& devices : course::testing::shared_gpu_lists()) {
    const std::size_t w = devices.size();
    // One row per worker (its first row is its last: one band, not two), two rows per worker (no interior
    // rows: the second share is 0), and one row of one interior column.
    for (const Shape shape : {Shape{w + 2, 37}, Shape{2 * w + 2, 19}, Shape{w + 2, 3}}) {
      const std::vector<std::vector<float>> states = random_states(shape, 430 + 100 * shape.ny + shape.nx, 3);
      std::vector<double> r(4, 0.0);
      for (std::size_t t = 1; t <= 3; ++t) r[t] = reference_residual(states[t - 1], states[t], shape);
      for (const Schedule schedule : {Schedule::plain, Schedule::overlapped}) {
        INFO("blocks of " << (shape.ny - 2) / w << " row(s): each interior point's change counts once (a block of "
                          << "one row swept as two bands counts it twice), and every residual slot the host adds "
                          << "is written before each check (a worker without interior rows writes 0 in its "
                          << "second slot; NaN: a slot nobody wrote)");
        // Tolerance 0 stops at an exact 0: one interior point (one worker, one column) is settled
        // after its first sweep (its neighbours are all boundary), so its second residual is 0.
        std::size_t stop = 3;
        for (std::size_t t = 1; t <= 3 && stop == 3; ++t)
          if (r[t] <= 0) stop = t;
        check_solve(devices, shape, 3, {schedule, 1, 0}, states, static_cast<int>(stop),
                    std::vector<double>(r.begin() + 1, r.begin() + 1 + static_cast<std::ptrdiff_t>(stop)));
      }
    }
  }
}

TEST_CASE("solve requests that make no sense are rejected", "[08-halo-exchange][task:4][gpus:1][points:1]") {
  require_gpus(1);
  const Shape shape{6, 6};
  Decomposition grid = decompose(Devices{0}, shape.ny, shape.nx, random_grid(shape, case_seed(410)));
  CHECK_THROWS_AS(solve(grid, -1, {Schedule::plain, 1, 0}), std::invalid_argument);
  CHECK_THROWS_AS(solve(grid, 10, {Schedule::plain, 0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(solve(grid, 10, {Schedule::overlapped, 1, -1}), std::invalid_argument);
  const SolveReport none = solve(grid, 0, {Schedule::plain, 1, 0});
  CHECK(none.iterations == 0);
  CHECK(none.residuals.empty());
}

TEST_CASE("the residual is checked every k sweeps without a host wait in between",
          "[08-halo-exchange][task:4][gpus:1][points:2][overlap]") {
  require_gpus(1);
  const Shape shape{4 * 5 + 2, 45};
  const std::vector<std::vector<float>> states = random_states(shape, 420, 8);
  const Devices devices = {0, 0, 0, 0};
  load_kernels(0);
  for (const Schedule schedule : {Schedule::plain, Schedule::overlapped}) {
    Decomposition grid = decompose(devices, shape.ny, shape.nx, states[0]);
    const Worker& held = grid.workers[0];
    Progress progress(grid, 3, grid.workers[3].next.data());  // the state after 3 sweeps is in `next`
    std::string seen;
    SolveReport report;
    const bool reached = progresses_while_held(
        schedule == Schedule::plain ? held.stream.get() : held.boundary_stream.get(), "solve with worker 0 held",
        [&] {
          report = solve(grid, 8, {schedule, 4, 0});
        },
        [&] { return progress.reached(states[3]); }, seen);
    INFO("schedule " << name_of(schedule) << ", a residual every 4 sweeps: while worker 0 was held, worker 3 (three "
                     << "workers away) should have finished 3 sweeps; a host wait after every sweep (a residual "
                     << "read every iteration) stops it after one (the watcher: " << seen << ")");
    CHECK(reached);
    CHECK(report.iterations == 8);
    CHECK(report.residuals.size() == 2);
    check_state(grid, states[8], "solve after the held worker went on");
  }
}

TEST_CASE("each residual adds every worker's share whichever worker is held back",
          "[08-halo-exchange][task:4][gpus:1][points:1]") {
  require_gpus(1);
  const Shape shape{3 * 5 + 2, 45};
  const std::vector<std::vector<float>> states = random_states(shape, 440, 1);
  const double r1 = reference_residual(states[0], states[1], shape);
  const Devices devices = {0, 0, 0};
  load_kernels(0);
  for (const Schedule schedule : {Schedule::plain, Schedule::overlapped})
    for (std::size_t k = 0; k < devices.size(); ++k) {
      Decomposition grid = decompose(devices, shape.ny, shape.nx, states[0]);
      const Worker& held = grid.workers[k];
      // One sweep with its check: no other worker waits for the held stream in it (its halos are for
      // the next sweep), so only worker k's share of the residual is late.
      const std::string stream_name = schedule == Schedule::plain ? "stream" : "boundary_stream";
      SolveReport report;
      const bool returned = course::testing::returns_while_held(
          schedule == Schedule::plain ? held.stream.get() : held.boundary_stream.get(),
          "solve with worker " + std::to_string(k) + "'s " + stream_name + " held",
          [&] {
            report = solve(grid, 1, {schedule, 1, 0});
          },
          300ms);
      INFO("schedule " << name_of(schedule) << ", solve(grid, 1, check_every 1) with worker " << k << "'s "
                       << stream_name << " held for 0.3 s: the residual is the sum of EVERY worker's shares, so the "
                       << "host waits for every worker's streams before it adds them, not the first or the last "
                       << "worker's only (workers need not finish in order), and the call returns only once all is "
                       << "done");
      CHECK_FALSE(returned);
      REQUIRE(report.residuals.size() == 1);
      CHECK_THAT(report.residuals[0], WithinRel(r1, kResidualTolerance));
      check_state(grid, states[1], "solve after the held worker went on");
    }
}
