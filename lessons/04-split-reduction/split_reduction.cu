// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04: a split reduction. One sum of many floats, first as fast as one GPU allows (a kernel
// of your own that reads memory at full speed), then split over several workers that all run
// before anyone waits, then fed from pinned host memory with copies overlapping the reductions,
// then timed honestly against one GPU to find where splitting starts to pay.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 04-split-reduction --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "split_reduction.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson04 {

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): your two kernels here, then enqueue them in enqueue_sum (README, task 1 and its hints).
void enqueue_sum(const float* data, std::size_t n, double* partials, double* sum, bool accumulate,
                 cudaStream_t stream) {
  (void)data;
  (void)n;
  (void)partials;
  (void)sum;
  (void)accumulate;
  (void)stream;
  NOT_IMPLEMENTED("task 1");
}

double sum_on_device(int device, const float* data, std::size_t n) {
  // TODO(task 1): sum `n` floats on `device` with enqueue_sum and return the total.
  (void)device;
  (void)data;
  (void)n;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

// TODO(task 2): launch every worker's reduction before waiting for any, then combine.
double sum_resident(SplitWorkspace& workspace, std::span<const float* const> slices, std::size_t n, Combine combine) {
  (void)workspace;
  (void)slices;
  (void)n;
  (void)combine;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

double sum_from_host(SplitWorkspace& workspace, const float* host, std::size_t n, const ChunkReduce& reduce) {
  // TODO(task 3): stream each worker's range through its two chunk buffers, copies overlapping sums.
  (void)workspace;
  (void)host;
  (void)n;
  (void)reduce;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

std::optional<std::size_t> crossover_size(const std::vector<SizeTiming>& rows) {
  // TODO(task 4): the smallest size from which the split stays faster (the header says exactly).
  (void)rows;
  NOT_IMPLEMENTED("task 4");
}

// TODO(task 4): time sum_resident for one worker and for all, per size; helpers go here.
CrossoverReport measure_crossover(std::span<const int> devices, std::span<const std::size_t> sizes,
                                  const MeasureOptions& options) {
  (void)devices;
  (void)sizes;
  (void)options;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson04
