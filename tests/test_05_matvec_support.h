// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What lesson 05's test files share: the shapes, a problem with its double-precision reference and
// the bound a correct float computation stays within, the quiet check of y, x and y on the root
// device, the lists of workers, the calls under the watchdog that also check the caller's device,
// the poisoning of every buffer a product writes, and a product run with one worker held back.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/partition.h"
#include "common/testing/held_stream.h"
#include "matvec.h"

namespace lesson05_tests {

struct Shape {
  std::size_t m, n;
};
// Edges for 1 to 4 workers: fewer rows or columns than workers, uneven splits, an empty side.
extern const std::vector<Shape> kSplitShapes;

// y = W x with random W and x in [-1, 1), and what a correct float computation may return.
struct Problem {
  std::size_t m = 0, n = 0;
  std::vector<float> W, x;
  std::vector<double> y;      // the product in double precision
  std::vector<double> bound;  // the largest |y_float[i] - y[i]| a correct float computation can have
};

// The reference over the columns `cols` of W only (all of them: the product; a worker's: its partial y).
Problem with_reference(Problem p, course::Range cols);

// y = W x with W and x drawn from the case's seed and `salt`, with its reference.
Problem make_problem(std::size_t m, std::size_t n, std::uint64_t salt);

// Checks y (m values and the element after them, which must stay poisoned) against the reference,
// quietly: the count, the first mismatch, and per worker when `parts` gives each worker's rows.
void check_y(const Problem& p, const std::vector<float>& got, const std::string& what,
             const std::vector<course::Range>& parts = {});

// Whether got[i] is within its bound for every i in `rows` (a NaN, an unwritten element, is not).
bool rows_right(const Problem& p, const std::vector<float>& got, course::Range rows);

// x and a poisoned y (m + 1 floats) on the root device, as multiply_* takes them.
struct RootVectors {
  int root;
  course::DeviceBuffer<float> x, y;
  RootVectors(int root_device, const Problem& p);
  void poison_y() const;  // all m + 1 floats of y, again
  std::vector<float> result() const;
};

// Poisons what a product must write besides y, so that nothing left unwritten passes for zeros (a
// fresh cudaMalloc often reads as zeros): every worker's x and y, and A.partials.
void poison_workers(const lesson05::DistributedMatrix& A);

// "At the same time", on one GPU: `call` (named `what`) runs while a gate holds `held`, the stream
// of `held_worker` ("worker 0"), and `others_done` is watched (common/testing/held_stream.h). The
// other workers must finish meanwhile, and the call must not return before the gate opens: the
// held worker's work is part of the result. Run `call` once ungated before this: a kernel's first
// launch may wait for the whole device, held stream included. Returns what was seen.
course::testing::HeldOutcome check_others_finish_while_held(cudaStream_t held, const std::string& held_worker,
                                                            const std::string& what, const std::function<void()>& call,
                                                            const std::function<bool()>& others_done);

// The same for a product split by rows over `workers` workers (course::split_ranges(p.m, workers)),
// y at `y` in memory `device` can read: worker 0 is held, and every other worker's rows of y must be
// right meanwhile. The caller checks all of y afterwards.
void check_rows_while_held(const Problem& p, int workers, cudaStream_t held, const float* y, int device,
                           const std::string& what, const std::function<void()>& call);

// "Returns when y is complete", whichever worker ends last: each of `held` (one stream per worker)
// is held in turn for 0.3 s while `call` (named `what`) runs, and the call must not return
// meanwhile; `poison` runs before each run and `check` after it. `call` runs once ungated first. A
// call that waits for the first or the last worker only returns while another one is held.
void check_waits_for_each_worker(const std::vector<cudaStream_t>& held, const std::string& what,
                                 const std::function<void()>& poison, const std::function<void()>& call,
                                 const std::function<void()>& check);

// A problem for three workers held back one at a time: workers_on(3, GPUs) ({0, 0, 0} on one GPU),
// W of 3000 x 1000 from `salt`, x and y on the last GPU. Skips without a GPU.
struct ThreeWorkers {
  int gpus;
  std::vector<int> devices;
  Problem p;
  RootVectors io;
  explicit ThreeWorkers(std::uint64_t salt);
};

// All of it for a row split A of `three`: `multiply` (named `name`) runs once ungated, y and the
// workers' buffers are poisoned again, it runs with worker 0 held, and then y is checked.
void check_row_split_while_held(const ThreeWorkers& three, const lesson05::DistributedMatrix& A,
                                const std::string& name, const std::function<void()>& multiply);

// check_waits_for_each_worker for a row split A of `three`: y and the workers' buffers poisoned
// before each run, y checked after it.
void check_row_split_waits_for_each_worker(const ThreeWorkers& three, const lesson05::DistributedMatrix& A,
                                           const std::string& name, const std::function<void()>& multiply);

// k workers over the GPUs in turn, from the last one down: {0, 0, 0} on one GPU, {1, 0, 1} on two.
// Worker 0 is never on device 0 of several GPUs, so a device taken from the worker's index shows;
// the root is the last GPU, so on several GPUs x and y cross between devices.
std::vector<int> workers_on(int k, int gpus);

// Runs `work` under the watchdog (60 s).
void within_limit(const std::string& what, const std::function<void()>& work);
// Calls the student's function with the last GPU current, then checks that it is current again.
void from_last_device(int gpus, const std::string& what, const std::function<void()>& call);
// "devices {0, 0, 1}"
std::string describe(const std::vector<int>& devices);

}  // namespace lesson05_tests
