// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05 tests. Every product is compared with a double-precision CPU reference within the
// worst-case error of float accumulation, and every output is poisoned first. Devices come as a
// list in which a device may repeat, so one GPU runs every split for 1 to 4 workers; what needs
// distinct GPUs (placement on device k, overlap) carries [gpus:2]. Where data lives is read back
// from the runtime (cudaPointerGetAttributes, cudaMemRangeGetAttribute); which device was current
// at each cuBLAS call of the code under test, from common/testing/cublas_calls.h.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/cublas_calls.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/owned.h"
#include "common/testing/workers.h"
#include "common/timer.h"
#include "matvec.h"

using namespace lesson05;
using namespace std::chrono_literals;
using namespace course::testing;

// ---- Inputs, references, checks ---------------------------------------------------------------

namespace {

struct Shape {
  std::size_t m, n;
};
// Edges for 1 to 4 workers: fewer rows or columns than workers, uneven splits, an empty side.
const std::vector<Shape> kSplitShapes = {{1, 1}, {3, 5}, {10, 3}, {37, 1024}, {257, 33}, {1000, 129}, {0, 6}, {5, 0}};

// y = W x with random W and x in [-1, 1), and what a correct float computation may return.
struct Problem {
  std::size_t m = 0, n = 0;
  std::vector<float> W, x;
  std::vector<double> y;      // the product in double precision
  std::vector<double> bound;  // the largest |y_float[i] - y[i]| a correct float computation can have
};

// The reference over the columns `cols` of W only (all of them: the product; a worker's: its partial y).
Problem with_reference(Problem p, course::Range cols) {
  // Summing n float products in any order (a loop, per-thread sums combined by shuffles, partial
  // ys of column blocks added across devices) is off by at most gamma(n + 1) * sum_j |W_ij x_j|,
  // gamma(k) = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms,
  // 3.1); rounding the result adds u |y_i|. We allow 1.1 (n + 2) u sum_j |W_ij x_j|: loose for
  // random data, yet a lost or doubled term is caught at the small shapes, where it is far larger.
  constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // u: float's relative rounding error
  p.y.assign(p.m, 0.0);
  p.bound.assign(p.m, 0.0);
  for (std::size_t i = 0; i < p.m; ++i) {
    double magnitude = 0;
    for (std::size_t j = cols.begin; j < cols.end; ++j) {
      const double term = static_cast<double>(p.W[i * p.n + j]) * p.x[j];
      p.y[i] += term;
      magnitude += std::fabs(term);
    }
    p.bound[i] = 1.1 * static_cast<double>(cols.size() + 2) * kUnitRoundoff * magnitude;
  }
  return p;
}

Problem make_problem(std::size_t m, std::size_t n, std::uint64_t salt) {
  const std::uint64_t seed = case_seed(salt);
  return with_reference({m, n, course::random_floats(m * n, seed), course::random_floats(n, seed + 1), {}, {}}, {0, n});
}

// Checks y (m values and the element after them, which must stay poisoned) against the reference,
// quietly: the count, the first mismatch, and per worker when `parts` gives each worker's rows.
void check_y(const Problem& p, const std::vector<float>& got, const std::string& what,
             const std::vector<course::Range>& parts = {}) {
  std::size_t wrong = 0, first = 0;
  std::vector<std::size_t> per_part(parts.size(), 0);
  for (std::size_t i = 0; i < p.m; ++i) {
    if (std::fabs(static_cast<double>(got[i]) - p.y[i]) <= p.bound[i]) continue;  // NaN (unwritten) fails
    if (wrong++ == 0) first = i;
    for (std::size_t k = 0; k < parts.size(); ++k) per_part[k] += parts[k].begin <= i && i < parts[k].end;
  }
  std::ostringstream detail;
  if (wrong > 0) {
    detail << "; first y[" << first << "] = " << got[first] << ", expected " << p.y[first] << " +- " << p.bound[first];
    if (!parts.empty()) detail << "; wrong elements per worker:";
    for (std::size_t count : per_part) detail << ' ' << count;
  }
  INFO(what << ", W " << p.m << " x " << p.n << ": " << wrong << " of " << p.m << " elements wrong" << detail.str());
  CHECK(wrong == 0);
  INFO(what << ", W " << p.m << " x " << p.n << ": the element after y[m - 1] was written");
  CHECK(std::isnan(got[p.m]));
}

// x and a poisoned y (m + 1 floats) on the root device, as multiply_* takes them.
struct RootVectors {
  int root;
  course::DeviceBuffer<float> x, y;
  RootVectors(int root_device, const Problem& p) : root(root_device), x(root_device, p.n), y(root_device, p.m + 1) {
    upload<float>(x.data(), root, p.x);
    const course::DeviceGuard on(root);
    course::poison_device(y.data(), y.bytes());
  }
  std::vector<float> result() const { return read_back(y.data(), root, y.size()); }
};

// k workers over the GPUs in turn, from the last one down: {0, 0, 0} on one GPU, {1, 0, 1} on two.
// Worker 0 is never on device 0 of several GPUs, so a device taken from the worker's index shows;
// the root is the last GPU, so on several GPUs x and y cross between devices.
std::vector<int> workers_on(int k, int gpus) {
  std::vector<int> devices;
  for (int w = 0; w < k; ++w) devices.push_back(gpus - 1 - w % gpus);
  return devices;
}

bool on_device(const void* pointer, int device) {
  return placement_of(pointer).is_device_memory_of(device);
}

constexpr auto kLimit = 60s;
const char* const kHint = "a kernel that never ends, or a wait for work never enqueued";
void within_limit(const std::string& what, const std::function<void()>& work) {
  run_with_watchdog(what, kLimit, kHint, work);
}
// Calls the student's function with the last GPU current, then checks that it is current again.
void from_last_device(int gpus, const std::string& what, const std::function<void()>& call) {
  call_keeps_device(gpus - 1, what, kLimit, kHint, call);
}
std::string describe(const std::vector<int>& devices) {
  return "devices " + show(devices);
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
      from_last_device(gpus, name, [&] { multiply(*A, io.x.data(), io.y.data()); });
      check_y(p, io.result(), name + " on " + describe(devices),
              by_rows ? course::split_ranges(p.m, k) : std::vector<course::Range>{});
    }
  }
}

// After distribute: every worker runs on its listed device, holds its block (read back and
// compared), and has buffers and a stream of that device. After multiply: its x holds its part
// of x (it was poisoned before), and its y its rows of the product or its partial y.
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
    const course::DeviceGuard on(w.device);
    course::poison_device(w.x.data(), w.x.bytes());
  }
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

TEST_CASE("the row split runs its workers at the same time", "[05-matvec][task:2][gpus:2][points:1]") {
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

TEST_CASE("the partial ys are summed on the root device, which need not hold a worker",
          "[05-matvec][task:3][gpus:2][points:1]") {
  require_gpus(2);
  check_workers(distribute_columns, multiply_columns, false, {1, 1}, Shape{41, 100}, 2200, 0);
  check_workers(distribute_columns, multiply_columns, false, {1, 0, 1}, Shape{41, 100}, 2201, 0);
  check_workers(distribute_columns, multiply_columns, false, {0, 0}, Shape{41, 100}, 2202, 1);
}

// ---- Task 4 -------------------------------------------------------------------------------------

namespace {

// A row split made by the test, as distribute_rows makes it, so that task 4 does not need task 2.
DistributedMatrix test_row_split(const std::vector<int>& devices, int root, const Problem& p) {
  DistributedMatrix A;
  A.m = p.m;
  A.n = p.n;
  A.root = root;
  const auto K = static_cast<int>(devices.size());
  for (int k = 0; k < K; ++k) {
    const int d = devices[k];
    const course::Range rows = course::split_range(p.m, K, k);
    Worker w{d,
             rows,
             course::Range{0, p.n},
             course::DeviceBuffer<float>(d, rows.size() * p.n),
             course::DeviceBuffer<float>(d, p.n),
             course::DeviceBuffer<float>(d, rows.size()),
             course::Stream(d)};
    upload<float>(w.W.data(), d, std::span(p.W).subspan(rows.begin * p.n, w.W.size()));
    A.workers.push_back(std::move(w));
  }
  return A;
}

// The student's handles, destroyed with the student's destroy_cublas_handles when the case ends.
using StudentHandles = Owned<std::vector<CublasHandle>>;
void destroy_handles(std::vector<CublasHandle>& handles) {
  if (!handles.empty()) destroy_cublas_handles(handles);
}

// Each handle was made by cublasCreate with its worker's device current, and every cublasSgemv
// with it ran while that device was current.
void check_handle_devices(const DistributedMatrix& A, const std::vector<CublasHandle>& handles) {
  for (std::size_t k = 0; k < handles.size() && k < A.workers.size(); ++k) {
    const CublasHandleRecord record = cublas_record_of(handles[k].handle);
    INFO("worker " << k << " on device " << A.workers[k].device << ": its handle was made with device "
                   << record.created_on << " current (-1: not by cublasCreate), and " << record.gemv_on_other_device
                   << " of its " << record.gemv_calls << " cublasSgemv calls had another device current");
    CHECK(record.created_on == A.workers[k].device);
    CHECK(handles[k].device == A.workers[k].device);
    CHECK(record.gemv_on_other_device == 0);
  }
}

}  // namespace

TEST_CASE("cuBLAS handles for a column split, or too few of them, are refused",
          "[05-matvec][task:4][gpus:0][points:1]") {
  // No GPU needed: the arguments are checked before the first CUDA call.
  DistributedMatrix by_columns;
  by_columns.split = Split::columns;
  CHECK_THROWS_AS(create_cublas_handles(by_columns), std::invalid_argument);
  DistributedMatrix no_workers;  // a row split of an empty matrix, with no worker: needs no handle
  const std::vector<CublasHandle> one_handle(1);
  float y = 0;
  CHECK_THROWS_AS(multiply_rows_cublas(no_workers, one_handle, &y, &y), std::invalid_argument);
  CHECK_THROWS_AS(multiply_rows_cublas(by_columns, {}, &y, &y), std::invalid_argument);
}

TEST_CASE("every worker gets its own cuBLAS handle, made on its device, bound to its stream and destroyed there",
          "[05-matvec][task:4][gpus:1][points:2]") {
  const int gpus = require_gpus(1);
  for (int k = 1; k <= 4; ++k) {
    const std::vector<int> devices = workers_on(k, gpus);
    const Problem p = make_problem(37, 64, 3000 + k);
    RootVectors io(gpus - 1, p);
    DistributedMatrix A = test_row_split(devices, io.root, p);
    std::optional<StudentHandles> made;
    from_last_device(gpus, "create_cublas_handles", [&] { made.emplace(create_cublas_handles(A), destroy_handles); });
    std::vector<CublasHandle>& handles = made->value;
    INFO(describe(devices));
    REQUIRE(handles.size() == devices.size());
    std::set<cublasHandle_t> distinct;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      distinct.insert(handles[i].handle);
      cudaStream_t bound = nullptr;
      CUBLAS_CHECK(cublasGetStream(handles[i].handle, &bound));
      INFO("handle " << i << " is bound to " << (bound == nullptr ? "the default stream" : "another stream")
                     << " instead of its worker's stream");
      CHECK(bound == A.workers[i].stream.get());
    }
    INFO(distinct.size() << " distinct handles for " << k << " workers");
    CHECK(distinct.size() == devices.size());
    from_last_device(gpus, "multiply_rows_cublas", [&] { multiply_rows_cublas(A, handles, io.x.data(), io.y.data()); });
    check_y(p, io.result(), "multiply_rows_cublas");
    check_handle_devices(A, handles);
    const std::vector<CublasHandle> kept = handles;
    from_last_device(gpus, "destroy_cublas_handles", [&] { destroy_cublas_handles(handles); });
    CHECK(handles.empty());
    for (const CublasHandle& h : kept) {
      const CublasHandleRecord record = cublas_record_of(h.handle);
      INFO("a handle made with device " << record.created_on << " current was destroyed " << record.destroyed
                                        << " times, the last with device " << record.destroyed_on << " current");
      CHECK(record.destroyed == 1);
      CHECK(record.destroyed_on == record.created_on);
    }
  }
}

TEST_CASE("the cuBLAS row split gives y for 1 to 4 workers, uneven splits included",
          "[05-matvec][task:4][gpus:1][points:2]") {
  const int gpus = require_gpus(1);
  std::uint64_t salt = 3100;
  for (int k = 1; k <= 4; ++k) {
    const std::vector<int> devices = workers_on(k, gpus);
    for (const Shape shape : kSplitShapes) {
      const Problem p = make_problem(shape.m, shape.n, ++salt);
      RootVectors io(gpus - 1, p);
      DistributedMatrix A = test_row_split(devices, io.root, p);
      const StudentHandles made(create_cublas_handles(A), destroy_handles);
      from_last_device(gpus, "multiply_rows_cublas",
                       [&] { multiply_rows_cublas(A, made.value, io.x.data(), io.y.data()); });
      check_y(p, io.result(), "multiply_rows_cublas on " + describe(devices), course::split_ranges(p.m, k));
    }
  }
}

TEST_CASE("cuBLAS handles are made on each worker's device whatever device the caller has current",
          "[05-matvec][task:4][gpus:2][points:1]") {
  require_gpus(2);
  for (const std::vector<int>& devices : {std::vector<int>{1, 0}, std::vector<int>{0, 1, 1}}) {
    for (int caller = 0; caller < 2; ++caller) {
      const Problem p = make_problem(41, 100, 3200 + 10 * devices.size() + caller);
      RootVectors io(0, p);
      DistributedMatrix A = test_row_split(devices, io.root, p);
      CUDA_CHECK(cudaSetDevice(caller));
      const StudentHandles made(create_cublas_handles(A), destroy_handles);
      within_limit("multiply_rows_cublas", [&] { multiply_rows_cublas(A, made.value, io.x.data(), io.y.data()); });
      INFO(describe(devices) << ", device " << caller << " current when the handles were made");
      check_handle_devices(A, made.value);
      check_y(p, io.result(), "multiply_rows_cublas");
    }
  }
}

// ---- Task 5 -------------------------------------------------------------------------------------

namespace {

void require_managed_access(const std::vector<int>& devices) {
  for (const int d : devices) {
    int concurrent = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, d));
    if (!concurrent)
      SKIP("needs GPUs with concurrent managed access (Linux, Pascal or newer); GPU " << d << " has none");
  }
}

// The student's managed matrix, freed with the student's free_managed when the case ends.
using StudentManaged = Owned<ManagedMatrix>;

int range_attribute(cudaMemRangeAttribute attribute, const void* pointer, std::size_t bytes) {
  int value = -100;
  CUDA_CHECK(cudaMemRangeGetAttribute(&value, sizeof value, attribute, pointer, bytes));
  return value;
}

std::vector<float> managed_y(const ManagedMatrix& A) {
  std::vector<float> y(A.y, A.y + A.m);
  y.push_back(NAN);  // check_y's "after the end" element: managed y has no room to poison one
  return y;
}

// Advises and prefetches a matrix over `devices`, then asks the driver where each block belongs.
void check_placement(const std::vector<int>& devices, int gpus) {
  // Rows of 2 MiB: every block starts and ends on a page boundary (pages are 2 MiB at most), so no
  // page is shared by two workers and each block can be asked about as a whole.
  const std::size_t n = std::size_t{1} << 19, m = 2 * devices.size() + 1;
  StudentManaged made(allocate_managed(devices, m, n), free_managed);
  ManagedMatrix& A = made.value;
  REQUIRE((A.W != nullptr && A.x != nullptr && A.y != nullptr && A.rows.size() == devices.size()));
  std::fill(A.W, A.W + m * n, 0.5f);  // first touched by the host: the pages start in host memory
  std::fill(A.x, A.x + n, 0.25f);
  from_last_device(gpus, "advise_and_prefetch", [&] { advise_and_prefetch(A); });
  INFO(describe(devices));
  for (std::size_t k = 0; k < devices.size(); ++k) {
    const float* block = A.W + A.rows[k].begin * n;
    const std::size_t bytes = A.rows[k].size() * n * sizeof(float);
    const int preferred = range_attribute(cudaMemRangeAttributePreferredLocation, block, bytes);
    const int prefetched = range_attribute(cudaMemRangeAttributeLastPrefetchLocation, block, bytes);
    std::vector<int> accessed_by(static_cast<std::size_t>(gpus), cudaInvalidDeviceId);
    CUDA_CHECK(cudaMemRangeGetAttribute(accessed_by.data(), accessed_by.size() * sizeof(int),
                                        cudaMemRangeAttributeAccessedBy, block, bytes));
    std::ostringstream per_row;  // the same questions about each 2 MiB row of the block
    for (std::size_t i = A.rows[k].begin; i < A.rows[k].end; ++i)
      per_row << ' ' << range_attribute(cudaMemRangeAttributePreferredLocation, A.W + i * n, n * sizeof(float)) << '/'
              << range_attribute(cudaMemRangeAttributeLastPrefetchLocation, A.W + i * n, n * sizeof(float));
    INFO("worker " << k << " on device " << devices[k] << ": its rows of W prefer device " << preferred
                   << " and were last prefetched to " << prefetched << " (" << cudaInvalidDeviceId
                   << ": none, or not the same for all its pages; " << cudaCpuDeviceId
                   << ": the host); row by row, preferred/prefetched:" << per_row.str());
    CHECK(preferred == devices[k]);
    CHECK(prefetched == devices[k]);
    CHECK(std::find(accessed_by.begin(), accessed_by.end(), devices[k]) != accessed_by.end());
  }
  INFO("x is read by every worker: it should be read-mostly");
  CHECK(range_attribute(cudaMemRangeAttributeReadMostly, A.x, n * sizeof(float)) == 1);
}

}  // namespace

TEST_CASE("managed memory over no devices is refused", "[05-matvec][task:5][gpus:0][points:1]") {
  CHECK_THROWS_AS(allocate_managed({}, 4, 4), std::invalid_argument);
}

TEST_CASE("the managed product gives y for 1 to 4 workers, with and without placement advice",
          "[05-matvec][task:5][gpus:1][points:2]") {
  const int gpus = require_gpus(1);
  std::uint64_t salt = 4000;
  for (int k = 1; k <= 4; ++k) {
    const std::vector<int> devices = workers_on(k, gpus);
    require_managed_access(devices);
    for (const Shape shape : {Shape{1, 1}, Shape{10, 7}, Shape{37, 1024}, Shape{257, 33}, Shape{5, 0}, Shape{0, 3}}) {
      const Problem p = make_problem(shape.m, shape.n, ++salt);
      std::optional<StudentManaged> made;
      from_last_device(gpus, "allocate_managed",
                       [&] { made.emplace(allocate_managed(devices, p.m, p.n), free_managed); });
      ManagedMatrix& A = made->value;
      INFO(describe(devices) << ", W " << p.m << " x " << p.n);
      CHECK((A.m == p.m && A.n == p.n && A.devices == devices));
      CHECK(A.rows == course::split_ranges(p.m, k));
      REQUIRE(A.streams.size() == devices.size());
      for (int w = 0; w < k; ++w) CHECK(stream_device(A.streams[w]) == devices[w]);
      REQUIRE(((A.W != nullptr) == (p.m * p.n > 0) && (A.x != nullptr) == (p.n > 0) && (A.y != nullptr) == (p.m > 0)));
      for (const float* pointer : {A.W, A.x, A.y})
        if (pointer != nullptr) CHECK(placement_of(pointer).type == cudaMemoryTypeManaged);
      std::copy(p.W.begin(), p.W.end(), A.W);
      std::copy(p.x.begin(), p.x.end(), A.x);
      std::fill(A.y, A.y + p.m, NAN);
      from_last_device(gpus, "multiply_managed", [&] { multiply_managed(A); });
      check_y(p, managed_y(A), "multiply_managed without advice");
      std::fill(A.y, A.y + p.m, NAN);
      from_last_device(gpus, "advise_and_prefetch", [&] { advise_and_prefetch(A); });
      from_last_device(gpus, "multiply_managed", [&] { multiply_managed(A); });
      check_y(p, managed_y(A), "multiply_managed after advise_and_prefetch");
      from_last_device(gpus, "free_managed", [&] { free_managed(A); });
      CHECK((A.W == nullptr && A.x == nullptr && A.y == nullptr));
      CHECK((A.devices.empty() && A.rows.empty() && A.streams.empty()));
    }
  }
}

TEST_CASE("each managed block of rows is advised to and prefetched onto its worker's device",
          "[05-matvec][task:5][gpus:1][points:2]") {
  const int gpus = require_gpus(1);
  for (int k = 1; k <= 3; ++k) {
    const std::vector<int> devices = workers_on(k, gpus);
    require_managed_access(devices);
    check_placement(devices, gpus);
  }
}

TEST_CASE("managed blocks are placed on the devices listed, in their order", "[05-matvec][task:5][gpus:2][points:1]") {
  const int gpus = require_gpus(2);
  for (const std::vector<int>& devices : {std::vector<int>{1, 0}, std::vector<int>{1, 1, 0}}) {
    require_managed_access(devices);
    check_placement(devices, gpus);
  }
}
