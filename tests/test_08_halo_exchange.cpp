// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08 tests, task 1: the decomposition. The row ranges are checked for every worker count
// (interior rows not divisible by it, one row per worker, more workers than rows); the blocks, with
// both halos, in both buffers, against a random grid (interior and boundary alike), for 1 to 4
// workers on one GPU; where they live and the peer access between neighbours on distinct GPUs;
// and the requests that cannot be split, rejected before any CUDA call. Tasks 2 and 3 (the sweeps)
// are in test_08_halo_exchange_sweeps.cpp, task 4 (the residual) in test_08_halo_exchange_residual.cpp.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "common/compare.h"
#include "common/partition.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/workers.h"
#include "jacobi.h"
#include "test_08_halo_exchange_support.h"

using namespace lesson08;
using namespace lesson08_tests;
using course::testing::Devices;
using course::testing::show;

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("block rows split the interior rows evenly for every worker count including one row per worker",
          "[08-halo-exchange][task:1][gpus:0][points:2]") {
  for (const std::size_t ny : {3, 4, 5, 6, 7, 10, 11, 12, 101, 1000, 1001, 20480})
    for (int workers = 1; workers <= 9; ++workers) {
      std::size_t next_row = 1;
      for (int k = 0; k < workers; ++k) {
        const course::Range rows = block_rows(ny, workers, k);
        const std::size_t interior = ny - 2;
        const std::size_t expected_size = interior / workers + (static_cast<std::size_t>(k) < interior % workers);
        INFO("ny = " << ny << ", worker " << k << " of " << workers << ": got rows [" << rows.begin << ", " << rows.end
                     << "), expected " << expected_size << " rows from row " << next_row
                     << " (the blocks tile rows 1 to ny - 2 in order; the first (ny - 2) % workers get one more)");
        CHECK(rows.begin == next_row);
        CHECK(rows.size() == expected_size);
        next_row = rows.end;
      }
      INFO("ny = " << ny << ", " << workers << " workers: the last block must end at row ny - 1 = " << ny - 1);
      CHECK(next_row == ny - 1);
    }
  CHECK_THROWS_AS(block_rows(2, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(block_rows(0, 1, 0), std::invalid_argument);
  CHECK_THROWS_AS(block_rows(10, 0, 0), std::invalid_argument);
  CHECK_THROWS_AS(block_rows(10, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(block_rows(10, 3, -1), std::invalid_argument);
}

TEST_CASE("decompose gives every worker its rows and both halos in both buffers for 1 to 4 workers on one GPU",
          "[08-halo-exchange][task:1][gpus:1][points:3]") {
  const int count = require_gpus(1);
  CUDA_CHECK(cudaSetDevice(count - 1));  // the caller's device is not necessarily a worker's
  for (const Devices& devices : course::testing::shared_gpu_lists())
    for (const Shape shape : shapes_for(devices.size())) {
      const std::vector<float> initial = random_grid(shape, case_seed(100 + shape.ny * 1000 + shape.nx));
      const Decomposition grid = decompose(devices, shape.ny, shape.nx, initial);
      INFO(show(devices) << ", grid " << shape.ny << " x " << shape.nx);
      CHECK(current_device() == count - 1);
      CHECK(grid.ny == shape.ny);
      CHECK(grid.nx == shape.nx);
      REQUIRE(grid.workers.size() == devices.size());
      CHECK(grid.host_residuals.size() == 2 * devices.size());
      for (std::size_t k = 0; k < devices.size(); ++k) {
        const Worker& w = grid.workers[k];
        INFO("worker " << k);
        CHECK(w.device == devices[k]);
        REQUIRE(w.next.size() == (w.rows.size() + 2) * shape.nx);
        const std::vector<float> next = course::testing::read_back(w.next.data(), w.device, w.next.size());
        const course::Comparison c =
            course::compare_exact(next.data(), initial.data() + (w.rows.begin - 1) * shape.nx, next.size());
        INFO(
            "next (it must hold the boundary columns and outer halos too, which sweeps never write): " << c.describe());
        CHECK(c.ok());
      }
      check_state(grid, initial, "decompose");
    }
}

TEST_CASE("grids and device lists that cannot be split are rejected before any CUDA call",
          "[08-halo-exchange][task:1][gpus:0][points:1]") {
  const std::vector<float> grid_10x5(50, 0.5f);
  const Devices none, one = {0}, three = {0, 0, 0};
  CHECK_THROWS_AS(decompose(none, 10, 5, grid_10x5), std::invalid_argument);
  CHECK_THROWS_AS(decompose(one, 2, 25, grid_10x5), std::invalid_argument);                // ny < 3
  CHECK_THROWS_AS(decompose(one, 25, 2, grid_10x5), std::invalid_argument);                // nx < 3
  CHECK_THROWS_AS(decompose(one, 10, 4, grid_10x5), std::invalid_argument);                // 50 values, not 40
  CHECK_THROWS_AS(decompose(three, 4, 5, std::vector<float>(20)), std::invalid_argument);  // 2 rows, 3 workers
}

TEST_CASE("each block lives on its worker's device with peer access on between neighbouring GPUs",
          "[08-halo-exchange][task:1][gpus:2][points:2]") {
  const int count = require_gpus(2);
  std::vector<Devices> lists = course::testing::distinct_gpu_lists(count);
  lists.push_back({1, 1, 0});  // two neighbours share GPU 1: no peer access to itself
  const Shape shape{23, 40};
  const std::vector<float> initial = random_grid(shape, case_seed(110));
  for (const Devices& devices : lists) {
    INFO(show(devices));
    course::testing::set_peer_access_by_runtime(false);
    CUDA_CHECK(cudaSetDevice(count - 1));
    const Decomposition grid = decompose(devices, shape.ny, shape.nx, initial);
    CHECK(current_device() == count - 1);
    REQUIRE(grid.workers.size() == devices.size());
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const course::testing::Placement current = course::testing::placement_of(grid.workers[k].current.data());
      const course::testing::Placement next = course::testing::placement_of(grid.workers[k].next.data());
      INFO("worker " << k << " (GPU " << devices[k] << "): current is " << current.describe() << ", next is "
                     << next.describe());
      CHECK(current.is_device_memory_of(devices[k]));
      CHECK(next.is_device_memory_of(devices[k]));
    }
    check_state(grid, initial, "decompose");
    for (std::size_t k = 0; k + 1 < devices.size(); ++k) {
      const int a = devices[k], b = devices[k + 1];
      if (a == b || !course::testing::runtime_can_access(a, b) || !course::testing::runtime_can_access(b, a)) continue;
      INFO("neighbours " << k << " and " << k + 1 << ": peer access GPU " << a << " <-> GPU " << b
                         << " must be on after decompose (the halo copies then go straight over the link)");
      CHECK(course::testing::enable_again(a, b) == cudaErrorPeerAccessAlreadyEnabled);
      CHECK(course::testing::enable_again(b, a) == cudaErrorPeerAccessAlreadyEnabled);
    }
  }
}
