// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05 tests, task 4: one cuBLAS handle per worker. The row split is made by the test, so that
// these cases do not need task 2; which device was current at each cuBLAS call of the code under
// test (cublasCreate, cublasSgemv, cublasDestroy) comes from common/testing/cublas_calls.h. Every
// product is compared with the double-precision reference of test_05_matvec_support.h, for 1 to 4
// workers on one GPU, with every worker's buffers poisoned first; the workers run at the same time
// (one held back, the others finish); what needs distinct GPUs carries [gpus:2].
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/partition.h"
#include "common/testing/cublas_calls.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/owned.h"
#include "matvec.h"
#include "test_05_matvec_support.h"

using namespace lesson05;
using namespace lesson05_tests;
using namespace course::testing;

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
  poison_workers(A);  // a worker's y left unwritten (n = 0) must not pass for zeros
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

TEST_CASE("the cuBLAS row split's workers run at the same time: the others finish while one is held back",
          "[05-matvec][task:4][gpus:1][points:1][overlap]") {
  const ThreeWorkers three(3250);
  DistributedMatrix A = test_row_split(three.devices, three.io.root, three.p);
  const StudentHandles made(create_cublas_handles(A), destroy_handles);
  REQUIRE(made.value.size() == three.devices.size());
  check_row_split_while_held(three, A, "multiply_rows_cublas",
                             [&] { multiply_rows_cublas(A, made.value, three.io.x.data(), three.io.y.data()); });
}

TEST_CASE("multiply_rows_cublas returns only once every worker's rows of y have arrived whichever worker is held back",
          "[05-matvec][task:4][gpus:1][points:1]") {
  const ThreeWorkers three(3260);
  DistributedMatrix A = test_row_split(three.devices, three.io.root, three.p);
  const StudentHandles made(create_cublas_handles(A), destroy_handles);
  REQUIRE(made.value.size() == three.devices.size());
  check_row_split_waits_for_each_worker(three, A, "multiply_rows_cublas", [&] {
    multiply_rows_cublas(A, made.value, three.io.x.data(), three.io.y.data());
  });
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
