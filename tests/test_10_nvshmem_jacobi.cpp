// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10 tests, task 2: lesson 08's Jacobi as one kernel per PE that puts its boundary rows into the
// neighbours' halos with a signal. Every PE sweeps a seeded grid in one or two calls and checks its rows
// AND both halos bit for bit against the CPU's sweeps of the whole grid (the same formula, the same
// order of additions: the same bits as lesson 08). A PE held back 300 ms must be waited for; a PE that
// never sweeps must leave its neighbour's kernel giving up with a report, not hanging.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"
#include "device_initiated.h"
#include "test_10_nvshmem_support.h"

using namespace lesson10;
using namespace lesson10_tests;

namespace {

constexpr const char* kSweepRankCase = "rank: device-initiated Jacobi on grids of every shape";
constexpr const char* kLateRankCase = "rank: device-initiated Jacobi with one PE held back";
constexpr const char* kMissingRankCase = "rank: device-initiated Jacobi with one PE that never sweeps";

// `iterations` sweeps of the whole grid on the CPU, in the contract's order of additions.
void sweep_on_cpu(std::vector<float>& grid, std::size_t ny, std::size_t nx, int iterations) {
  std::vector<float> next = grid;
  for (int it = 0; it < iterations; ++it) {
    for (std::size_t y = 1; y + 1 < ny; ++y)
      for (std::size_t x = 1; x + 1 < nx; ++x)
        next[y * nx + x] =
            0.25f * ((grid[(y - 1) * nx + x] + grid[(y + 1) * nx + x]) + (grid[y * nx + x - 1] + grid[y * nx + x + 1]));
    grid.swap(next);
  }
}

// This PE's rows and both halos in block.current against the CPU's grid; "" when the same bits. Read
// with the PE's device current (the symmetric heap is mapped for it), whatever the caller's is.
std::string check_block(const Session& session, const JacobiBlock& block, const std::vector<float>& expected,
                        const std::string& what) {
  const course::DeviceGuard on_device(session.device);
  const std::size_t floats = (block.rows.size() + 2) * block.nx;
  std::vector<float> got(floats);
  CUDA_CHECK(cudaMemcpy(got.data(), block.current.data, floats * sizeof(float), cudaMemcpyDeviceToHost));
  const course::Comparison comparison =
      course::compare_exact(got.data(), expected.data() + (block.rows.begin - 1) * block.nx, floats);
  if (comparison.ok()) return "";
  return what + ", grid rows [" + std::to_string(block.rows.begin - 1) + ", " + std::to_string(block.rows.end + 1) +
         ") with both halos (local index = local row * nx + column): " + comparison.describe();
}

std::vector<float> seeded_grid(std::size_t ny, std::size_t nx, std::uint64_t salt) {
  return course::random_floats(ny * nx, job_seed(salt));  // the same grid on every PE
}

// Enqueues a host function that sleeps 300 ms: the stream holds everything after it that long.
void hold_stream(cudaStream_t stream) {
  CUDA_CHECK(cudaLaunchHostFunc(
      stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }, nullptr));
}

}  // namespace

TEST_CASE(kSweepRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    const int callers_device = rank.visible_devices() > 1 ? (session.device + 1) % rank.visible_devices() : 0;
    const std::vector<float> small = seeded_grid(3, 3, 1);
    CHECK_THROWS_AS(decompose(session, 2, 3, std::vector<float>(6, 1.0f)), std::invalid_argument);
    CHECK_THROWS_AS(decompose(session, 3, 2, std::vector<float>(6, 1.0f)), std::invalid_argument);
    CHECK_THROWS_AS(decompose(session, 3, 3, std::vector<float>(8, 1.0f)), std::invalid_argument);
    CHECK_THROWS_AS(decompose(session, session.pes + 1, 3, seeded_grid(session.pes + 1, 3, 2)), std::invalid_argument);
    struct Shape {
      std::size_t ny, nx;
      int first, second;  // sweeps in the first call, then in the second
    };
    const Shape shapes[] = {{3, 3, 1, 0},     {session.pes + 2u, 5, 3, 2}, {7, 130, 4, 5},
                            {67, 131, 20, 0}, {513, 257, 13, 6},           {1026, 1024, 7, 8}};
    std::uint64_t salt = 10;
    for (const Shape& shape : shapes) {
      if (shape.ny - 2 < static_cast<std::size_t>(session.pes)) continue;
      std::vector<float> grid = seeded_grid(shape.ny, shape.nx, ++salt);
      JacobiBlock block;
      {
        const course::DeviceGuard callers(callers_device);
        block = decompose(session, shape.ny, shape.nx, grid);
        if (course::testing::current_device() != callers_device) return "decompose changed the current device";
      }
      const std::string what = std::to_string(shape.ny) + " x " + std::to_string(shape.nx);
      if (block.rows != block_rows(shape.ny, session.pes, session.pe))
        return what + ": the block's rows are not block_rows";
      if (block.max_rows != block_rows(shape.ny, session.pes, 0).size())
        return what + ": max_rows is not the most rows";
      std::string wrong = check_block(session, block, grid, what + " after decompose");
      CHECK_THROWS_AS(run_device_initiated(session, block, -1), std::invalid_argument);
      for (const int iterations : {shape.first, shape.second}) {
        if (!wrong.empty()) break;
        {
          const course::DeviceGuard callers(callers_device);
          run_device_initiated(session, block, iterations);
          if (course::testing::current_device() != callers_device)
            wrong = "run_device_initiated changed the current device";
        }
        sweep_on_cpu(grid, shape.ny, shape.nx, iterations);
        if (wrong.empty())
          wrong = check_block(session, block, grid, what + " after " + std::to_string(iterations) + " more sweeps");
      }
      if (wrong.empty() && block.sweeps != static_cast<std::uint64_t>(shape.first + shape.second))
        wrong = what + ": block.sweeps is " + std::to_string(block.sweeps) + " after " +
                std::to_string(shape.first + shape.second) + " sweeps";
      close_block(session, block);
      if (!wrong.empty()) return wrong;
    }
    return "";
  });
}

TEST_CASE("one PE sweeps lesson 08's grid inside one kernel with the same bits as the CPU",
          "[10-nvshmem][task:2][gpus:1][points:3]") {
  check_job(run_pes(kSweepRankCase, 1, 0x1003, std::chrono::seconds(90)), 1);
}

TEST_CASE("two PEs put their boundary rows into each other's halos with a signal and match the CPU bit for bit",
          "[10-nvshmem][task:2][gpus:2][points:3]") {
  check_job(run_pes(kSweepRankCase, 2, 0x1004, std::chrono::seconds(90)), 2);
}

TEST_CASE(kLateRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    const std::size_t ny = 2050, nx = 2048;
    std::vector<float> grid = seeded_grid(ny, nx, 20);
    JacobiBlock block = decompose(session, ny, nx, grid);
    std::string wrong;
    // The last PE is held before each call: the others' kernels must wait for its rows, every sweep.
    for (int call = 0; call < 3 && wrong.empty(); ++call) {
      if (session.pe == session.pes - 1) hold_stream(block.stream);
      run_device_initiated(session, block, 5 + call);
      sweep_on_cpu(grid, ny, nx, 5 + call);
      wrong =
          check_block(session, block, grid, "call " + std::to_string(call + 1) + " with the last PE held back 300 ms");
    }
    close_block(session, block);
    return wrong;
  });
}

TEST_CASE("a PE held back 300 ms is waited for and the halos still match the CPU bit for bit",
          "[10-nvshmem][task:2][gpus:2][points:2]") {
  check_job(run_pes(kLateRankCase, 2, 0x1005, std::chrono::seconds(90)), 2);
}

TEST_CASE(kMissingRankCase, "[.][rank]") {
  const NvshmemRank rank;
  const Session& session = rank.session();
  run_rank(session.pe, [&]() -> std::string {
    const std::size_t ny = 258, nx = 256;
    const std::vector<float> grid = seeded_grid(ny, nx, 30);
    JacobiBlock block = decompose(session, ny, nx, grid);
    block.patience_ns = 200'000'000;  // 0.2 s
    std::string wrong;
    if (session.pe == 0) {
      const auto start = std::chrono::steady_clock::now();
      try {
        run_device_initiated(session, block, 10);
        wrong = "run_device_initiated returned although PE 1 never swept: its kernel did not wait for PE 1's rows";
      } catch (const std::runtime_error& error) {
        const std::string text = error.what();
        if (text.find("PE 1") == std::string::npos || gave_up(*block.give_up).empty())
          wrong = "the kernel gave up, but its report does not name PE 1: " + text;
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      if (wrong.empty() && waited > std::chrono::seconds(20))
        wrong = "the kernel gave up only after " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
                " ms, with a patience of 200 ms";
      if (wrong.empty()) {
        try {
          run_device_initiated(session, block, 1);
          wrong = "a call after a kernel that gave up did not throw";
        } catch (const std::runtime_error&) {
        }
      }
    }
    close_block(session, block);  // PE 1 never swept: it only frees, after the barrier
    return wrong;
  });
}

TEST_CASE("a PE that never sweeps leaves its neighbour's kernel giving up with a report instead of hanging",
          "[10-nvshmem][task:2][gpus:2][points:2]") {
  check_job(run_pes(kMissingRankCase, 2, 0x1006, std::chrono::seconds(60)), 2);
}
