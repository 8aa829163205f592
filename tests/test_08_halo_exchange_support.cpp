// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The helpers lesson 08's test files share (test_08_halo_exchange_support.h says what each does):
// the CPU reference of the whole grid, the block-by-block check against it, poisoning, the kernel
// warm-up, and watching a worker's progress while another one is held.
#include "test_08_halo_exchange_support.h"

#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "common/compare.h"
#include "common/random.h"
#include "common/testing/devices.h"

using namespace lesson08;

namespace lesson08_tests {

std::vector<Shape> shapes_for(std::size_t workers) {
  return {{workers + 2, 3}, {workers + 2, 37}, {2 * workers + 3, 19}, {5 * workers + 4, 66}, {41, 130}};
}

std::vector<float> random_grid(Shape shape, std::uint64_t seed) {
  return course::random_floats(shape.ny * shape.nx, seed, 0.0f, 1.0f);
}

std::vector<std::vector<float>> reference_states(const std::vector<float>& initial, Shape shape, int iterations) {
  const std::size_t nx = shape.nx;
  std::vector<std::vector<float>> states{initial};
  for (int t = 0; t < iterations; ++t) {
    const std::vector<float>& old = states.back();
    std::vector<float> now = old;  // the boundary stays
    for (std::size_t y = 1; y + 1 < shape.ny; ++y)
      for (std::size_t x = 1; x + 1 < nx; ++x) {
        const float up = old[(y - 1) * nx + x], down = old[(y + 1) * nx + x];
        const float left = old[y * nx + x - 1], right = old[y * nx + x + 1];
        now[y * nx + x] = 0.25f * ((up + down) + (left + right));  // the contract's order, in float
      }
    states.push_back(std::move(now));
  }
  return states;
}

std::vector<std::vector<float>> random_states(Shape shape, std::uint64_t salt, int iterations) {
  return reference_states(random_grid(shape, case_seed(salt)), shape, iterations);
}

double reference_residual(const std::vector<float>& before, const std::vector<float>& after, Shape shape) {
  double squares = 0;
  for (std::size_t y = 1; y + 1 < shape.ny; ++y)
    for (std::size_t x = 1; x + 1 < shape.nx; ++x) {
      const double change =
          static_cast<double>(after[y * shape.nx + x]) - static_cast<double>(before[y * shape.nx + x]);
      squares += change * change;
    }
  return std::sqrt(squares);
}

void check_state(const Decomposition& grid, const std::vector<float>& expected, const std::string& what) {
  const int workers = static_cast<int>(grid.workers.size());
  for (int k = 0; k < workers; ++k) {
    const Worker& w = grid.workers[k];
    const course::Range rows = block_rows(grid.ny, workers, k);
    INFO(what << ": worker " << k << " of " << workers << " on GPU " << w.device << ", grid rows [" << rows.begin
              << ", " << rows.end << ") of " << grid.ny << " x " << grid.nx);
    REQUIRE(w.rows == rows);
    const std::size_t local = (rows.size() + 2) * grid.nx;
    REQUIRE(w.current.size() == local);
    const std::vector<float> got = course::testing::read_back(w.current.data(), w.device, local);
    // Part 0 is the halo above, part 1 the rows, part 2 the halo below.
    const std::vector<course::Range> parts = {{0, grid.nx}, {grid.nx, local - grid.nx}, {local - grid.nx, local}};
    const course::Comparison c =
        course::compare_exact(got.data(), expected.data() + (rows.begin - 1) * grid.nx, local, parts);
    INFO("local rows 0 (halo above) to " << rows.size() + 1 << " (halo below), mismatches per part (halo above, rows, "
                                         << "halo below): " << c.describe());
    CHECK(c.ok());
  }
}

void poison_next(Decomposition& grid) {
  const int workers = static_cast<int>(grid.workers.size());
  const std::size_t nx = grid.nx;
  for (int k = 0; k < workers; ++k) {
    Worker& w = grid.workers[k];
    std::vector<float> next = course::testing::read_back(w.next.data(), w.device, w.next.size());
    const std::size_t last_local = w.rows.size() + 1;
    for (std::size_t r = 0; r <= last_local; ++r) {
      const bool grid_boundary = (r == 0 && k == 0) || (r == last_local && k == workers - 1);
      if (grid_boundary) continue;
      for (std::size_t x = 1; x + 1 < nx; ++x) next[r * nx + x] = std::numeric_limits<float>::quiet_NaN();
    }
    course::testing::upload(w.next.data(), w.device, std::span<const float>(next));
  }
}

void load_kernels(int device) {
  const Shape shape{12, 35};
  const std::vector<float> initial = random_grid(shape, 1);
  const std::vector<int> devices = {device, device};
  try {
    Decomposition grid = decompose(devices, shape.ny, shape.nx, initial);
    for (const auto& call :
         std::vector<std::function<void()>>{[&] { run_plain(grid, 2); }, [&] { run_overlapped(grid, 2); },
                                            [&] {
                                              (void)solve(grid, 2, {Schedule::plain, 1, 0});
                                            },
                                            [&] {
                                              (void)solve(grid, 2, {Schedule::overlapped, 1, 0});
                                            }}) {
      try {
        call();
      } catch (const std::exception&) {  // not implemented yet: the call under test says so
      }
    }
  } catch (const std::exception&) {
  }
}

Progress::Progress(const Decomposition& grid, std::size_t k, const float* buffer)
    : Progress(grid, k, buffer, grid.workers[k].rows) {}

Progress::Progress(const Decomposition& grid, std::size_t k, const float* buffer, course::Range grid_rows)
    : nx_(grid.nx),
      rows_(grid_rows),
      first_row_(buffer + (grid_rows.begin - (grid.workers[k].rows.begin - 1)) * grid.nx),
      peeker_(grid.workers[k].device, grid_rows.size() * grid.nx * sizeof(float)) {}

bool Progress::reached(const std::vector<float>& expected) {
  const std::vector<float> rows = peeker_.values(first_row_, rows_.size() * nx_);
  return std::memcmp(rows.data(), expected.data() + rows_.begin * nx_, rows.size() * sizeof(float)) == 0;
}

void hold_while(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                std::chrono::milliseconds hold_for) {
  (void)course::testing::run_with_stream_held(
      held, what, call, [] { return false; }, hold_for);
}

bool progresses_while_held(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                           const std::function<bool()>& progress, std::string& message) {
  const course::testing::HeldOutcome outcome = course::testing::run_with_stream_held(held, what, call, progress);
  message = outcome.describe("the held worker");
  return outcome.others_finished;
}

}  // namespace lesson08_tests
