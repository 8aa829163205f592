// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05 tests, tasks 1 to 3: the gemv kernel, then the row split and the column split for 1 to
// 4 workers. Every product is compared with a double-precision CPU reference within the worst-case
// error of float accumulation, and every output is poisoned first, the workers' buffers included.
// Devices come as a list in which a device may repeat, so one GPU runs every split for 1 to 4
// workers, and shows "at the same time" and "once every partial has arrived" with one worker's
// stream held back by a gate (common/testing/held_stream.h); what needs distinct GPUs (placement on
// device k, speed-up) carries [gpus:2]. Where data lives is read back from the runtime
// (cudaPointerGetAttributes). The shared helpers are in test_05_matvec_support.h; tasks 4 and 5 are
// in test_05_matvec_cublas.cpp and test_05_matvec_managed.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "common/timer.h"
#include "matvec.h"
#include "test_05_matvec_support.h"

using namespace lesson05;
using namespace lesson05_tests;
using namespace course::testing;
using namespace std::chrono_literals;

// ---- Inputs, references, checks ---------------------------------------------------------------

namespace {

bool on_device(const void* pointer, int device) {
  return placement_of(pointer).is_device_memory_of(device);
}

// launch_gemv on W and x that start `offset` floats into their buffers, on device 0.
void check_gemv(const Problem& p, std::size_t offset, const course::Stream& stream, const std::string& what) {
  const course::DeviceBuffer<float> W(0, p.W.size() + offset), x(0, p.n + offset);
  upload<float>(W.data() + offset, 0, p.W);
  upload<float>(x.data() + offset, 0, p.x);
  RootVectors out(0, p);
  within_limit("launch_gemv", [&] {
    launch_gemv(W.data() + offset, x.data() + offset, out.y.data(), p.m, p.n, stream);
    stream.synchronize();
  });
  check_y(p, out.result(), what);
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

TEST_CASE("an empty matrix is no work: nothing is launched", "[05-matvec][task:1][gpus:0][points:1]") {
  // No GPU needed: with m = 0 there is no CUDA call to make (a grid of 0 blocks is an error).
  CHECK_NOTHROW(launch_gemv(nullptr, nullptr, nullptr, 0, 0, nullptr));
  CHECK_NOTHROW(launch_gemv(nullptr, nullptr, nullptr, 0, 1000, nullptr));
}

TEST_CASE("the gemv kernel matches a double-precision reference for every shape",
          "[05-matvec][task:1][gpus:1][points:3]") {
  require_gpus(1);
  const std::vector<Shape> shapes = {{1, 1},      {1, 3},      {1, 4},      {1, 1000},    {1, (1u << 20) + 3},
                                     {1000, 1},   {65537, 1},  {5, 0},      {37, 33},     {64, 128},
                                     {129, 1023}, {300, 4099}, {7, 100003}, {2048, 2048}, {4099, 5}};
  const course::Stream stream(0);
  std::uint64_t salt = 100;
  for (const Shape shape : shapes) check_gemv(make_problem(shape.m, shape.n, ++salt), 0, stream, "launch_gemv");
}

TEST_CASE("the gemv kernel reads rows and x that do not start on a 16-byte boundary",
          "[05-matvec][task:1][gpus:1][points:1]") {
  require_gpus(1);
  // n % 4 == 0, but W and x start one float into their buffers: a float4 load there is misaligned.
  const course::Stream stream(0);
  for (const Shape shape : {Shape{33, 64}, Shape{5, 1024}})
    check_gemv(make_problem(shape.m, shape.n, 200 + shape.n), 1, stream, "launch_gemv on W + 1 and x + 1");
}

// ---- Tasks 2 and 3 ---------------------------------------------------------------------------------

namespace {

using Distribute = DistributedMatrix (*)(std::span<const int>, int, const float*, std::size_t, std::size_t);
using Multiply = void (*)(DistributedMatrix&, const float*, float*);

// distribute + multiply for 1 to 4 workers and every shape; checks y and the caller's device.
void check_split_products(Distribute distribute, Multiply multiply, const std::string& name, bool by_rows,
                          std::uint64_t salt) {
  const int gpus = require_gpus(1);
  for (int k = 1; k <= 4; ++k) {
    const std::vector<int> devices = workers_on(k, gpus);
    for (const Shape shape : kSplitShapes) {
      const Problem p = make_problem(shape.m, shape.n, ++salt);
      RootVectors io(gpus - 1, p);
      std::optional<DistributedMatrix> A;
      from_last_device(gpus, "distribute (" + name + ")",
                       [&] { A.emplace(distribute(devices, io.root, p.W.data(), p.m, p.n)); });
      poison_workers(*A);  // a worker's y left unwritten must not pass for zeros
      from_last_device(gpus, name, [&] { multiply(*A, io.x.data(), io.y.data()); });
      check_y(p, io.result(), name + " on " + describe(devices),
              by_rows ? course::split_ranges(p.m, k) : std::vector<course::Range>{});
    }
  }
}

// After distribute: every worker runs on its listed device, holds its block (read back and
// compared), and has buffers and a stream of that device. After multiply: its x holds its part
// of x, and its y its rows of the product or its partial y (zeros for a worker without columns);
// both, and A.partials, were poisoned before.
void check_workers(Distribute distribute, Multiply multiply, bool by_rows, const std::vector<int>& devices,
                   const Shape shape, std::uint64_t salt, int root = -1) {
  const Problem p = make_problem(shape.m, shape.n, salt);
  RootVectors io(root >= 0 ? root : course::testing::gpu_count() - 1, p);
  DistributedMatrix A = distribute(devices, io.root, p.W.data(), p.m, p.n);
  const auto K = static_cast<int>(devices.size());
  INFO(describe(devices) << ", W " << p.m << " x " << p.n << ", root " << io.root);
  REQUIRE(A.workers.size() == devices.size());
  CHECK((A.m == p.m && A.n == p.n && A.root == io.root));
  for (int k = 0; k < K; ++k) {
    Worker& w = A.workers[k];
    INFO("worker " << k);
    CHECK(w.device == devices[k]);
    const course::Range rows = by_rows ? course::split_range(p.m, K, k) : course::Range{0, p.m};
    const course::Range cols = by_rows ? course::Range{0, p.n} : course::split_range(p.n, K, k);
    CHECK(w.rows == rows);
    CHECK(w.cols == cols);
    REQUIRE(w.W.size() == rows.size() * cols.size());
    REQUIRE(w.x.size() == cols.size());
    REQUIRE(w.y.size() == (by_rows ? rows.size() : p.m));
    if (w.W.size() > 0) {
      CHECK(on_device(w.W.data(), devices[k]));
      CHECK(on_device(w.x.data(), devices[k]));
      std::vector<float> block;
      for (std::size_t i = rows.begin; i < rows.end; ++i)
        block.insert(block.end(), p.W.begin() + i * p.n + cols.begin, p.W.begin() + i * p.n + cols.end);
      CHECK(read_back(w.W.data(), w.device, w.W.size()) == block);
    }
    CHECK(stream_device(w.stream) == devices[k]);
  }
  poison_workers(A);
  within_limit("multiply", [&] { multiply(A, io.x.data(), io.y.data()); });
  const std::vector<float> y = io.result();
  check_y(p, y, "the product");
  for (int k = 0; k < K; ++k) {
    const Worker& w = A.workers[k];
    INFO("worker " << k << " on device " << w.device);
    const std::vector<float> part_of_x(p.x.begin() + w.cols.begin, p.x.begin() + w.cols.end);
    CHECK(read_back(w.x.data(), w.device, w.x.size()) == part_of_x);
    const std::vector<float> worker_y = read_back(w.y.data(), w.device, w.y.size());
    if (by_rows) {
      CHECK(worker_y == std::vector<float>(y.begin() + w.rows.begin, y.begin() + w.rows.end));
    } else {  // its partial y: the product of its columns alone
      Problem partial = with_reference(p, w.cols);
      partial.n = w.cols.size();
      std::vector<float> padded = worker_y;
      padded.push_back(NAN);
      check_y(partial, padded, "worker " + std::to_string(k) + "'s partial y");
    }
  }
  if (!by_rows) {
    CHECK(A.partials.size() == devices.size() * p.m);
    if (A.partials.size() > 0) CHECK(on_device(A.partials.data(), io.root));
    REQUIRE(A.root_stream.has_value());
    CHECK(stream_device(*A.root_stream) == io.root);
  }
}

void check_refused(Distribute distribute, Multiply multiply, Split other) {
  // No GPU needed: the arguments are checked before the first CUDA call.
  const std::vector<float> W(6, 1.0f);
  const std::vector<int> one_device{0};
  CHECK_THROWS_AS(distribute({}, 0, W.data(), 2, 3), std::invalid_argument);
  CHECK_THROWS_AS(distribute(one_device, 0, nullptr, 2, 3), std::invalid_argument);
  DistributedMatrix wrong_kind;
  wrong_kind.split = other;
  CHECK_THROWS_AS(multiply(wrong_kind, W.data(), nullptr), std::invalid_argument);
}

}  // namespace

TEST_CASE("a row split over no devices, of no matrix or of a column split is refused",
          "[05-matvec][task:2][gpus:0][points:1]") {
  check_refused(distribute_rows, multiply_rows, Split::columns);
}

TEST_CASE("the row split gives y for 1 to 4 workers, uneven splits included", "[05-matvec][task:2][gpus:1][points:3]") {
  check_split_products(distribute_rows, multiply_rows, "multiply_rows", true, 1000);
}

TEST_CASE("each row worker holds its rows on its device, its own copy of x and a stream of its device",
          "[05-matvec][task:2][gpus:1][points:2]") {
  const int gpus = require_gpus(1);
  for (int k = 1; k <= 4; ++k)
    for (const Shape shape : {Shape{10, 37}, Shape{3, 64}})
      check_workers(distribute_rows, multiply_rows, true, workers_on(k, gpus), shape, 1100 + 10 * k + shape.m);
}

TEST_CASE("row blocks land on the devices listed, in their order", "[05-matvec][task:2][gpus:2][points:1]") {
  require_gpus(2);
  for (const std::vector<int>& devices : {std::vector<int>{1, 0}, std::vector<int>{1, 1, 0}})
    check_workers(distribute_rows, multiply_rows, true, devices, Shape{41, 100}, 1200 + devices.size());
}

TEST_CASE("the row split's workers run at the same time: the others finish while one is held back",
          "[05-matvec][task:2][gpus:1][points:1][overlap]") {
  const ThreeWorkers three(1250);
  DistributedMatrix A = distribute_rows(three.devices, three.io.root, three.p.W.data(), three.p.m, three.p.n);
  check_row_split_while_held(three, A, "multiply_rows",
                             [&] { multiply_rows(A, three.io.x.data(), three.io.y.data()); });
}

TEST_CASE("multiply_rows returns only once every worker's rows of y have arrived whichever worker is held back",
          "[05-matvec][task:2][gpus:1][points:1]") {
  const ThreeWorkers three(1260);
  DistributedMatrix A = distribute_rows(three.devices, three.io.root, three.p.W.data(), three.p.m, three.p.n);
  check_row_split_waits_for_each_worker(three, A, "multiply_rows",
                                        [&] { multiply_rows(A, three.io.x.data(), three.io.y.data()); });
}

TEST_CASE("two GPUs do the row split in clearly less time than one", "[05-matvec][task:2][gpus:2][points:1][timing]") {
  require_gpus(2);
  set_peer_access_by_runtime(true);  // copies between the two go over the link where there is one
  // 1 GB: about 0.3 ms of reading on one H100, well above the fixed costs of launches and copies.
  const std::size_t m = 16384, n = 16384;
  std::vector<float> W(m * n);
  for (std::size_t i = 0; i < W.size(); ++i) W[i] = static_cast<float>(i % 13) * 0.125f - 0.75f;
  const Problem vectors = make_problem(0, n, 1300);
  Problem p = vectors;
  p.m = m;
  RootVectors io(0, p);
  const int one_gpu[] = {0};
  const int two_gpus[] = {0, 1};
  DistributedMatrix alone = distribute_rows(one_gpu, 0, W.data(), m, n);
  DistributedMatrix both = distribute_rows(two_gpus, 0, W.data(), m, n);
  within_limit("multiply_rows, timed", [&] {
    const double one = course::measure_host([&] { multiply_rows(alone, io.x.data(), io.y.data()); }, 2, 11).median_ms;
    const double two = course::measure_host([&] { multiply_rows(both, io.x.data(), io.y.data()); }, 2, 11).median_ms;
    INFO("W " << m << " x " << n << ": GPU 0 alone " << one << " ms, GPUs 0 and 1 " << two << " ms (" << two / one
              << " of one GPU's time; 0.5 is perfect overlap, 1.0 is one after the other)");
    CHECK(two < 0.8 * one);
  });
}

TEST_CASE("a column split over no devices, of no matrix or of a row split is refused",
          "[05-matvec][task:3][gpus:0][points:1]") {
  check_refused(distribute_columns, multiply_columns, Split::rows);
}

TEST_CASE("the column split sums the partial ys into y for 1 to 4 workers, uneven splits included",
          "[05-matvec][task:3][gpus:1][points:3]") {
  check_split_products(distribute_columns, multiply_columns, "multiply_columns", false, 2000);
}

TEST_CASE("each column worker holds all rows of its columns, its part of x and its partial y",
          "[05-matvec][task:3][gpus:1][points:2]") {
  const int gpus = require_gpus(1);
  for (int k = 1; k <= 4; ++k)
    for (const Shape shape : {Shape{10, 37}, Shape{6, 3}})
      check_workers(distribute_columns, multiply_columns, false, workers_on(k, gpus), shape, 2100 + 10 * k + shape.n);
}

namespace {

// A column split over three workers, multiplied once ungated (that loads every kernel it launches:
// common/testing/stream_gate.h), then with y, the workers' buffers and A.partials poisoned again:
// ready for a product with one worker held back, watched through `peek` on the root.
struct ColumnSplitToHold {
  Problem p;
  RootVectors io;
  DistributedMatrix A;
  std::vector<Problem> partial;  // partial[k]: worker k's partial y, the product of its columns alone
  Peeker peek;

  ColumnSplitToHold(int gpus, std::uint64_t salt)
      : p(make_problem(600, 3000, salt)),
        io(gpus - 1, p),
        A(distribute_columns(workers_on(3, gpus), io.root, p.W.data(), p.m, p.n)),
        peek(io.root, p.m * sizeof(float)) {
    REQUIRE(A.workers.size() == 3);
    REQUIRE(A.partials.size() == 3 * p.m);
    REQUIRE(A.root_stream.has_value());
    for (const Worker& w : A.workers) partial.push_back(with_reference(p, w.cols));
    within_limit("multiply_columns", [&] { multiply(); });
    io.poison_y();
    poison_workers(A);
  }
  void multiply() { multiply_columns(A, io.x.data(), io.y.data()); }
  // Whether worker k's partial y has arrived in its slot of A.partials.
  bool arrived(std::size_t k) {
    return rows_right(partial[k], peek.values(A.partials.data() + k * p.m, p.m), course::Range{0, p.m});
  }
  std::string devices() const {
    std::vector<int> list;
    for (const Worker& w : A.workers) list.push_back(w.device);
    return describe(list);
  }
};

}  // namespace

TEST_CASE("the column split's workers run at the same time: the others finish while one is held back",
          "[05-matvec][task:3][gpus:1][points:1][overlap]") {
  ColumnSplitToHold split(require_gpus(1), 2250);
  check_others_finish_while_held(
      split.A.workers[0].stream, "worker 0", "multiply_columns on " + split.devices(), [&] { split.multiply(); },
      [&] { return split.arrived(1) && split.arrived(2); });
  check_y(split.p, split.io.result(), "multiply_columns once worker 0 was let go");
}

TEST_CASE("the root sums the partial ys only once the last one has arrived, waiting on events",
          "[05-matvec][task:3][gpus:1][points:1][overlap]") {
  ColumnSplitToHold split(require_gpus(1), 2260);
  bool y_untouched = false, sum_enqueued = false;
  const HeldOutcome outcome = check_others_finish_while_held(
      split.A.workers[2].stream, "worker 2", "multiply_columns on " + split.devices(), [&] { split.multiply(); },
      [&] {
        if (!split.arrived(0) || !split.arrived(1)) return false;
        std::this_thread::sleep_for(50ms);  // time enough for a sum that does not wait for worker 2 to run
        const std::vector<float> y = split.peek.values(split.io.y.data(), split.p.m);
        y_untouched = std::all_of(y.begin(), y.end(), [](float v) { return course::is_poisoned(v); });
        const course::DeviceGuard on(split.io.root);
        sum_enqueued = cudaStreamQuery(*split.A.root_stream) == cudaErrorNotReady;
        return true;
      });
  if (outcome.others_finished) {  // then y and the root stream were looked at
    INFO("while worker 2's partial was held back, y "
         << (y_untouched ? "stayed poisoned"
                         : "was written: the sum ran before every partial had arrived (the root stream must "
                           "cudaStreamWaitEvent an event of every worker)"));
    CHECK(y_untouched);
    INFO("while worker 2's partial was held back, A.root_stream "
         << (sum_enqueued ? "held the waiting sum"
                          : "had no work: the sum was not yet enqueued, so the host waited for the workers first "
                            "(a synchronize per worker) where the root stream should wait on their events"));
    CHECK(sum_enqueued);
  }
  check_y(split.p, split.io.result(), "multiply_columns once worker 2 was let go");
}

TEST_CASE("multiply_columns returns only once every worker's partial y is summed whichever worker is held back",
          "[05-matvec][task:3][gpus:1][points:1]") {
  ColumnSplitToHold split(require_gpus(1), 2270);
  std::vector<cudaStream_t> streams;
  for (const Worker& w : split.A.workers) streams.push_back(w.stream);
  check_waits_for_each_worker(
      streams, "multiply_columns on " + split.devices(),
      [&] {
        split.io.poison_y();
        poison_workers(split.A);
      },
      [&] { split.multiply(); },
      [&] { check_y(split.p, split.io.result(), "multiply_columns once the held worker was let go"); });
}

TEST_CASE("the partial ys are summed on the root device, which need not hold a worker",
          "[05-matvec][task:3][gpus:2][points:1]") {
  require_gpus(2);
  check_workers(distribute_columns, multiply_columns, false, {1, 1}, Shape{41, 100}, 2200, 0);
  check_workers(distribute_columns, multiply_columns, false, {1, 0, 1}, Shape{41, 100}, 2201, 0);
  check_workers(distribute_columns, multiply_columns, false, {0, 0}, Shape{41, 100}, 2202, 1);
}
