// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What more than one of lesson 08's test files needs: random grids, the CPU reference of the whole
// grid (the contract's operation order, so the comparison is exact), the check of every worker's
// block and halos against it, the poisoning of what a sweep must write, a warm-up that loads every
// kernel before a stream is held, and "how far did a worker get" while another one is held.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "common/testing/workers.h"
#include "jacobi.h"

namespace lesson08_tests {

using course::testing::case_seed;
using course::testing::current_device;
using course::testing::require_gpus;
using namespace std::chrono_literals;

struct Shape {
  std::size_t ny = 0;
  std::size_t nx = 0;
};

// Shapes for `workers` workers, edges included: one row per worker, the narrowest grid (nx = 3),
// interior rows not divisible by the worker count, and a few rows more than a tile.
std::vector<Shape> shapes_for(std::size_t workers);

// ny x nx random floats in [0, 1), boundary included, reproducible from `seed`.
std::vector<float> random_grid(Shape shape, std::uint64_t seed);

// The whole grid after 0, 1, ..., `iterations` sweeps on the CPU, in the contract's order:
// states[t] is the state after t sweeps.
std::vector<std::vector<float>> reference_states(const std::vector<float>& initial, Shape shape, int iterations);

// reference_states of a random grid of `shape` made from case_seed(salt): states[0] is the grid.
std::vector<std::vector<float>> random_states(Shape shape, std::uint64_t salt, int iterations);

// sqrt(sum over the interior of (after - before)^2), all in double.
double reference_residual(const std::vector<float>& before, const std::vector<float>& after, Shape shape);

// Every worker's rows are block_rows' and its `current` holds rows [rows.begin - 1, rows.end + 1)
// of `expected`, halos included, bit for bit (CHECKs; `what` says which call it was).
void check_state(const lesson08::Decomposition& grid, const std::vector<float>& expected, const std::string& what);

// NaN into everything a sweep and the sends must write in every worker's `next`: the interior
// points of its rows, and of its halo rows where they are not the grid's boundary row.
void poison_next(lesson08::Decomposition& grid);

// Runs run_plain, run_overlapped and solve (both schedules) once on a small grid of two workers
// on `device`, so that every kernel they use is loaded before a test holds a stream (a kernel's
// first launch may wait for the whole device). A NOT_IMPLEMENTED here is ignored: the call under
// test reports it.
void load_kernels(int device);

// While `held` is held: whether buffer `buffer` of worker `k` (a pointer taken before the call)
// comes to hold, in its rows (or in `grid_rows`, some of them), the state `expected` (the whole grid
// after some sweeps). Read through a Peeker made beforehand, so the reads never wait behind the call
// under test.
class Progress {
 public:
  Progress(const lesson08::Decomposition& grid, std::size_t k, const float* buffer);
  Progress(const lesson08::Decomposition& grid, std::size_t k, const float* buffer, course::Range grid_rows);
  bool reached(const std::vector<float>& expected);

 private:
  std::size_t nx_;
  course::Range rows_;
  const float* first_row_;  // where grid row rows_.begin lies in the buffer
  course::testing::Peeker peeker_;
};

// Holds `held` for `hold_for` while `call` runs (on a thread of its own, under the watchdog),
// then lets it finish: a worker that does not wait for the held one runs ahead on stale rows.
void hold_while(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                std::chrono::milliseconds hold_for = 300ms);

// Holds `held` while `call` runs, until `progress` says yes or 5 s have passed; true when it said
// yes. `what` names the call (for the watchdog); `message` gets what the watcher saw, in words.
bool progresses_while_held(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                           const std::function<bool()>& progress, std::string& message);

}  // namespace lesson08_tests
