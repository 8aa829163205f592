// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08: a Jacobi solver split into blocks of rows, one per worker, each with a halo row above
// and below that the neighbours refresh after every sweep. First the split, then sweeps with the
// halos sent by peer copies and ordered by events (no host wait per iteration), then the same with
// the sends hidden behind the interior's sweep, then a residual checked every k sweeps.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 08-halo-exchange --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "jacobi.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cub/block/block_reduce.cuh>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson08 {

// ---- Task 1 -------------------------------------------------------------------------------------

course::Range block_rows(std::size_t ny, int workers, int k) {
  // TODO(task 1): worker k's interior rows: course::split_range of the ny - 2 interior rows, moved down one row.
  (void)ny;
  (void)workers;
  (void)k;
  NOT_IMPLEMENTED("task 1");
}

// TODO(task 1): one worker per device entry, its block and halos in both buffers, peer access between neighbours.
Decomposition decompose(std::span<const int> devices, std::size_t ny, std::size_t nx, std::span<const float> initial) {
  (void)devices;
  (void)ny;
  (void)nx;
  (void)initial;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

// TODO(task 2): your sweep kernel, the sends and the event waits between neighbours; helpers go here.
void run_plain(Decomposition& grid, int iterations) {
  (void)grid;
  (void)iterations;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

// TODO(task 3): the first and last rows on the boundary stream, sent at once; the interior meanwhile.
void run_overlapped(Decomposition& grid, int iterations) {
  (void)grid;
  (void)iterations;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

SolveReport solve(Decomposition& grid, int max_iterations, const SolveOptions& options) {
  // TODO(task 4): rounds of check_every sweeps, the last one with the residual; one host wait per round.
  (void)grid;
  (void)max_iterations;
  (void)options;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson08
