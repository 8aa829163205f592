// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06 tests, task 3: the other collectives (broadcast, reduce, all-gather, reduce-scatter),
// and a column split of A x finished by a reduce-scatter. Inputs are small random integers stored as
// floats, so every sum is exact in float whatever order NCCL adds in; results land in poisoned
// memory (NaN bytes), so an element that is not written shows, and a rank that must not be written
// is checked to be still poisoned. Every call into NCCL runs under the watchdog; the cases run for
// every count of distinct GPUs from 1 to the machine's (one rank per GPU).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/gpu_test.h"
#include "nccl_collectives.h"
#include "test_06_nccl_support.h"

using namespace lesson06;
using namespace lesson06_tests;

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("broadcast from every root reaches every rank in place and out of place",
          "[06-nccl][task:3][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (int g = 1; g <= count; ++g) {
    const std::vector<int> devices = first_devices(g);
    const Communicators c(devices);
    for (const std::size_t n : kCounts)
      for (int root = 0; root < g; ++root)
        for (const bool in_place : {false, true}) {
          const std::vector<float> values = course::random_small_integers(n, case_seed(400 + n + root));
          RankBuffers send(devices, n), recv(devices, n);
          send.fill(root, values);
          if (in_place) recv.fill(root, values);
          std::vector<const float*> sources(g, nullptr);  // only the root's is read
          sources[root] = in_place ? recv.const_pointers[root] : send.const_pointers[root];
          run_with_watchdog("broadcast", kCallLimit, kGroupHint,
                            [&] { broadcast(c.comms, c.stream_handles, sources, recv.pointers, n, root); });
          for (int k = 0; k < g; ++k) {
            INFO(g << " GPUs, " << n << " floats, root " << root << ", rank " << k
                   << (in_place ? ", in place" : ", out of place"));
            check_agrees(recv.read(k), values);
          }
        }
  }
}

TEST_CASE("reduce to every root sums onto the root and leaves the other ranks alone",
          "[06-nccl][task:3][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (int g = 1; g <= count; ++g) {
    const std::vector<int> devices = first_devices(g);
    const Communicators c(devices);
    for (const std::size_t n : kCounts)
      for (int root = 0; root < g; ++root)
        for (const bool in_place : {false, true}) {
          const auto values = random_per_rank(g, n, 420 + n + root);
          std::vector<float> expected(n, 0.0f);
          RankBuffers send(devices, n), recv(devices, n);
          for (int k = 0; k < g; ++k) {
            send.fill(k, values[k]);
            for (std::size_t i = 0; i < n; ++i) expected[i] += values[k][i];
          }
          std::vector<const float*> sources = send.const_pointers;
          if (in_place) {  // the root adds into its own buffer: send[root] == recv[root]
            recv.fill(root, values[root]);
            sources[root] = recv.const_pointers[root];
          }
          run_with_watchdog("reduce", kCallLimit, kGroupHint,
                            [&] { reduce(c.comms, c.stream_handles, sources, recv.pointers, n, root); });
          INFO(g << " GPUs, " << n << " floats, root " << root << (in_place ? ", in place" : ", out of place"));
          check_agrees(recv.read(root), expected);
          for (int k = 0; k < g; ++k)
            if (k != root) {
              const std::vector<float> untouched = recv.read(k);
              INFO("rank " << k << " is not the root: its recv buffer is not written");
              CHECK(std::all_of(untouched.begin(), untouched.end(), course::is_poisoned<float>));
            }
        }
  }
}

TEST_CASE("all-gather puts rank r's block at r times count on every rank in place too",
          "[06-nccl][task:3][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (int g = 1; g <= count; ++g) {
    const std::vector<int> devices = first_devices(g);
    const Communicators c(devices);
    for (const std::size_t n : kCounts)
      for (const bool in_place : {false, true}) {
        const auto values = random_per_rank(g, n, 440 + n);
        RankBuffers send(devices, n), recv(devices, g * n);
        std::vector<const float*> sources;
        for (int k = 0; k < g; ++k) {
          send.fill(k, values[k]);
          if (in_place) recv.fill(k, values[k], k * n);
          sources.push_back(in_place ? recv.pointers[k] + k * n : send.const_pointers[k]);
        }
        run_with_watchdog("all_gather", kCallLimit, kGroupHint,
                          [&] { all_gather(c.comms, c.stream_handles, sources, recv.pointers, n); });
        for (int k = 0; k < g; ++k) {
          const std::vector<float> got = recv.read(k);
          for (int r = 0; r < g; ++r) {
            INFO(g << " GPUs, " << n << " floats per rank, rank " << k << ", block of rank " << r
                   << (in_place ? ", in place" : ", out of place"));
            check_agrees(got, values[r], r * n);
          }
        }
      }
  }
}

TEST_CASE("reduce-scatter leaves block k of the sum on rank k in place too", "[06-nccl][task:3][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (int g = 1; g <= count; ++g) {
    const std::vector<int> devices = first_devices(g);
    const Communicators c(devices);
    for (const std::size_t n : kCounts)
      for (const bool in_place : {false, true}) {
        const auto values = random_per_rank(g, g * n, 460 + n);
        std::vector<float> sum(g * n, 0.0f);
        RankBuffers send(devices, g * n), recv(devices, n);
        for (int k = 0; k < g; ++k) {
          send.fill(k, values[k]);
          for (std::size_t i = 0; i < g * n; ++i) sum[i] += values[k][i];
        }
        std::vector<float*> targets;
        for (int k = 0; k < g; ++k) targets.push_back(in_place ? send.pointers[k] + k * n : recv.pointers[k]);
        run_with_watchdog("reduce_scatter", kCallLimit, kGroupHint,
                          [&] { reduce_scatter(c.comms, c.stream_handles, send.const_pointers, targets, n); });
        for (int k = 0; k < g; ++k) {
          INFO(g << " GPUs, " << n << " floats per rank, rank " << k << (in_place ? ", in place" : ", out of place"));
          const std::vector<float> block(sum.begin() + k * n, sum.begin() + (k + 1) * n);
          check_agrees(in_place ? send.read(k) : recv.read(k), block, in_place ? k * n : 0);
        }
      }
  }
}

TEST_CASE("the column split finished by a reduce-scatter gives y = A x for uneven shapes",
          "[06-nccl][task:3][gpus:1][points:2]") {
  const int count = require_gpus(1);
  const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{1, 1}, {5, 3}, {7, 1000}, {1000, 7}, {257, 129}};
  for (int g = 1; g <= count; ++g) {
    const std::vector<int> devices = first_devices(g);
    const Communicators c(devices);
    for (const auto& [rows, cols] : shapes) {
      // Products of integers in [-8, 8] summed over at most 1000 columns stay below 2^24: exact.
      const std::vector<float> a = course::random_small_integers(rows * cols, case_seed(480 + rows));
      const std::vector<float> x = course::random_small_integers(cols, case_seed(490 + cols));
      std::vector<float> y(rows, 0.0f);
      for (std::size_t i = 0; i < rows; ++i) {
        double s = 0;
        for (std::size_t j = 0; j < cols; ++j) s += static_cast<double>(a[i * cols + j]) * x[j];
        y[i] = static_cast<float>(s);
      }
      const std::size_t per_rank = rows_per_rank(rows, g);
      std::vector<course::DeviceBuffer<float>> a_blocks, x_blocks;
      std::vector<const float*> a_pointers, x_pointers;
      for (int k = 0; k < g; ++k) {
        const course::Range columns = course::split_range(cols, g, k);
        std::vector<float> block(rows * columns.size());
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < columns.size(); ++j)
            block[i * columns.size() + j] = a[i * cols + columns.begin + j];
        a_blocks.emplace_back(devices[k], block.size());
        x_blocks.emplace_back(devices[k], columns.size());
        if (!block.empty())
          CUDA_CHECK(
              cudaMemcpy(a_blocks.back().data(), block.data(), block.size() * sizeof(float), cudaMemcpyHostToDevice));
        if (columns.size() > 0)
          CUDA_CHECK(cudaMemcpy(x_blocks.back().data(), x.data() + columns.begin, columns.size() * sizeof(float),
                                cudaMemcpyHostToDevice));
        a_pointers.push_back(a_blocks.back().data());
        x_pointers.push_back(x_blocks.back().data());
      }
      RankBuffers partials(devices, g * per_rank), y_blocks(devices, per_rank);
      run_with_watchdog("column_split_matvec", kCallLimit, kGroupHint, [&] {
        column_split_matvec(c.comms, c.stream_handles, a_pointers, x_pointers, partials.pointers, y_blocks.pointers,
                            rows, cols);
      });
      for (int k = 0; k < g; ++k) {
        const std::vector<float> got = y_blocks.read(k);
        std::vector<float> expected(per_rank, 0.0f);  // rows past the end are padding: 0
        for (std::size_t i = 0; i < per_rank; ++i)
          if (k * per_rank + i < rows) expected[i] = y[k * per_rank + i];
        INFO(g << " GPUs, A is " << rows << " x " << cols << ", rank " << k << " holds rows [" << k * per_rank << ", "
               << (k + 1) * per_rank << ")");
        check_agrees(got, expected);
      }
    }
  }
}
