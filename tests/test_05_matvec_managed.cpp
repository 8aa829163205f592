// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05 tests, task 5: the product over managed memory, with and without placement advice.
// Products are compared with the double-precision reference of test_05_matvec_support.h; where each
// worker's block of rows belongs (preferred location, last prefetch, accessed-by) and whether x is
// read-mostly are asked of the driver (cudaMemRangeGetAttribute); the workers run at the same time
// (one held back, the others finish). The cases skip on GPUs without concurrent managed access;
// placement on distinct devices carries [gpus:2].
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/check.h"
#include "common/partition.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/owned.h"
#include "matvec.h"
#include "test_05_matvec_support.h"

using namespace lesson05;
using namespace lesson05_tests;
using namespace course::testing;

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

TEST_CASE("the managed product's workers run at the same time: the others finish while one is held back",
          "[05-matvec][task:5][gpus:1][points:1][overlap]") {
  const int gpus = require_gpus(1);
  const std::vector<int> devices = workers_on(3, gpus);  // {0, 0, 0} on one GPU
  require_managed_access(devices);
  const Problem p = make_problem(3000, 1000, 4250);
  StudentManaged made(allocate_managed(devices, p.m, p.n), free_managed);
  ManagedMatrix& A = made.value;
  REQUIRE((A.W != nullptr && A.x != nullptr && A.y != nullptr && A.streams.size() == devices.size()));
  std::copy(p.W.begin(), p.W.end(), A.W);
  std::copy(p.x.begin(), p.x.end(), A.x);
  const auto multiply = [&] { multiply_managed(A); };
  within_limit("multiply_managed", multiply);  // ungated first: loads its kernel and moves the pages over
  std::fill(A.y, A.y + p.m, NAN);
  check_rows_while_held(p, 3, A.streams[0], A.y, devices[0], "multiply_managed on " + describe(devices), multiply);
  check_y(p, managed_y(A), "multiply_managed once worker 0 was let go", course::split_ranges(p.m, 3));
}

TEST_CASE("multiply_managed returns only once every worker's rows of y are written whichever worker is held back",
          "[05-matvec][task:5][gpus:1][points:1]") {
  const int gpus = require_gpus(1);
  const std::vector<int> devices = workers_on(3, gpus);  // {0, 0, 0} on one GPU
  require_managed_access(devices);
  const Problem p = make_problem(3000, 1000, 4260);
  StudentManaged made(allocate_managed(devices, p.m, p.n), free_managed);
  ManagedMatrix& A = made.value;
  REQUIRE((A.W != nullptr && A.x != nullptr && A.y != nullptr && A.streams.size() == devices.size()));
  std::copy(p.W.begin(), p.W.end(), A.W);
  std::copy(p.x.begin(), p.x.end(), A.x);
  std::vector<cudaStream_t> streams;
  for (const course::Stream& stream : A.streams) streams.push_back(stream);
  check_waits_for_each_worker(
      streams, "multiply_managed on " + describe(devices), [&] { std::fill(A.y, A.y + p.m, NAN); },
      [&] { multiply_managed(A); },
      [&] {
        check_y(p, managed_y(A), "multiply_managed once the held worker was let go", course::split_ranges(p.m, 3));
      });
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
