// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 tests of tasks 1 and 2: the slices of a buffer, one per worker, and one thread that
// drives every worker. The devices are a list of workers in which a device may repeat, so one GPU
// runs the split, the streams, the uneven tail and the joining with {0, 0, 0}; only what needs
// distinct GPUs carries [gpus:2]. Where memory lives is read back from the runtime, which device
// a worker ran on is recorded inside the worker, "done" is a host function enqueued after the
// work, and overlap is a ratio of host-clock times with a wide margin. The caller's device is the
// LAST device, where that makes a forgotten cudaSetDevice visible. The checks tasks 2 and 3 share
// are in test_02_set_device_support.h; tasks 3 and 4 in test_02_set_device_threads_guard.cpp.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/partition.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/owned.h"
#include "common/testing/workers.h"
#include "set_device.h"
#include "test_02_set_device_support.h"

using namespace lesson02;
using namespace lesson02_tests;
using namespace std::chrono_literals;
using namespace course::testing;

namespace {

// Owns what allocate_slices returned, so a failed check does not leak it; never throws.
void free_quietly(std::vector<Slice>& slices) {
  int caller = 0;
  (void)cudaGetDevice(&caller);
  for (const Slice& slice : slices) {
    (void)cudaSetDevice(slice.device);
    (void)cudaFree(slice.data);
  }
  (void)cudaSetDevice(caller);
  (void)cudaGetLastError();
}
struct StudentSlices : Owned<std::vector<Slice>> {
  StudentSlices(std::size_t n, const Devices& devices) : Owned(allocate_slices(n, devices), free_quietly) {}
  std::vector<Slice>& slices = value;
};

}  // namespace

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("the slices split the buffer in balanced ranges in the memory of each worker's device",
          "[02-set-device][task:1][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (const Devices& devices : worker_lists(count)) {
    for (const std::size_t n : sizes_for(devices.size())) {
      INFO(n << " elements over the workers " << show(devices) << ", GPU " << count - 1 << " current");
      CUDA_CHECK(cudaSetDevice(count - 1));
      const StudentSlices owned(n, devices);
      CHECK(current_device() == count - 1);
      REQUIRE(owned.slices.size() == devices.size());
      for (std::size_t k = 0; k < devices.size(); ++k) {
        const Slice& slice = owned.slices[k];
        const course::Range expected = course::split_range(n, static_cast<int>(devices.size()), static_cast<int>(k));
        INFO("slice " << k << ": device " << slice.device << ", range [" << slice.range.begin << ", " << slice.range.end
                      << "); expected device " << devices[k] << ", range [" << expected.begin << ", " << expected.end
                      << ") as course::split_range gives it (the first n % k slices get one more element)");
        REQUIRE(slice.device == devices[k]);
        REQUIRE(slice.range == expected);
        if (expected.empty()) {
          INFO("an empty slice allocates nothing: its data stays nullptr");
          REQUIRE(slice.data == nullptr);
          continue;
        }
        const Placement where = placement_of(slice.data);
        INFO("slice " << k << " is " << where.describe() << ": make its device current before cudaMalloc");
        REQUIRE(where.is_device_memory_of(devices[k]));
      }
    }
  }
}

TEST_CASE("each slice is allocated on its own device whatever device the caller has current",
          "[02-set-device][task:1][gpus:2][points:2]") {
  const int count = require_gpus(2);
  for (const int caller : {count - 1, 0}) {
    for (const Devices& devices : distinct_gpu_lists(count)) {
      INFO("the workers " << show(devices) << ", GPU " << caller << " current before the call");
      CUDA_CHECK(cudaSetDevice(caller));
      StudentSlices owned(4099 * devices.size() + 1, devices);
      CHECK(current_device() == caller);
      REQUIRE(owned.slices.size() == devices.size());
      for (std::size_t k = 0; k < devices.size(); ++k) {
        const Placement where = placement_of(owned.slices[k].data);
        INFO("slice " << k << " is " << where.describe() << ". cudaMalloc allocates on the current device: make GPU "
                      << devices[k] << " current (cudaSetDevice) before allocating slice " << k);
        REQUIRE(where.is_device_memory_of(devices[k]));
      }
      free_slices(owned.slices);
      INFO("free_slices must give the caller its device back");
      CHECK(current_device() == caller);
    }
  }
}

TEST_CASE("freeing the slices frees every allocation, empties the list and keeps the caller's device",
          "[02-set-device][task:1][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (const Devices& devices : worker_lists(count)) {
    INFO("the workers " << show(devices) << ", GPU " << count - 1 << " current");
    CUDA_CHECK(cudaSetDevice(count - 1));
    StudentSlices owned(4099 * devices.size() + 1, devices);
    std::vector<const void*> pointers;
    for (const Slice& slice : owned.slices) pointers.push_back(slice.data);
    free_slices(owned.slices);
    CHECK(owned.slices.empty());
    CHECK(current_device() == count - 1);
    // Read from the runtime, so other processes on the GPU do not matter: a freed pointer is no
    // allocation any more (and nothing was allocated since, so its address is not reused).
    for (std::size_t k = 0; k < pointers.size(); ++k) {
      const Placement where = placement_of(pointers[k]);
      INFO("after free_slices, slice " << k << "'s pointer is still " << where.describe() << ": cudaFree it");
      CHECK_FALSE(where.type == cudaMemoryTypeDevice);
    }
  }
}

TEST_CASE("a failed allocation frees what it had allocated and keeps the caller's device",
          "[02-set-device][task:1][gpus:1][points:1]") {
  const int count = require_gpus(1);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Two slices of a tenth of GPU 0's free memory each, then a device that does not exist: a leak
  // of 20% of the free memory, far above what other processes change in a moment (the tolerance:
  // half a slice).
  const std::size_t slice_floats = free_bytes / 10 / sizeof(float);
  const double slice_bytes = static_cast<double>(slice_floats * sizeof(float));
  CUDA_CHECK(cudaSetDevice(count - 1));
  CHECK_THROWS_AS(allocate_slices(3 * slice_floats, Devices{0, 0, count}), course::ApiError);
  (void)cudaGetLastError();
  CHECK(current_device() == count - 1);
  std::size_t free_after = 0;
  CUDA_CHECK(cudaSetDevice(0));
  CUDA_CHECK(cudaMemGetInfo(&free_after, &total_bytes));
  const double missing = static_cast<double>(free_bytes) - static_cast<double>(free_after);
  INFO("GPU 0 misses " << missing / 1e6 << " MB after the failed call; each slice was " << slice_bytes / 1e6
                       << " MB: when a call throws halfway, free the slices it had allocated");
  CHECK(missing < 0.5 * slice_bytes);
}

TEST_CASE("an empty device list or a device the machine does not have is an error",
          "[02-set-device][task:1][gpus:0][points:1]") {
  // Runs on any machine: with no GPU, allocating on device 0 already fails.
  const int count = gpu_count();
  if (count > 0) CUDA_CHECK(cudaSetDevice(0));
  CHECK_THROWS_AS(allocate_slices(16, Devices{}), std::invalid_argument);
  INFO("allocate_slices(16, {0, " << count << "}) on a machine with " << count
                                  << " GPU(s) must throw course::ApiError (CUDA_CHECK(cudaSetDevice(...)) does)");
  CHECK_THROWS_AS(allocate_slices(16, Devices{0, count}), course::ApiError);
  CHECK_THROWS_AS(allocate_slices(16, Devices{-1}), course::ApiError);
  (void)cudaGetLastError();
  if (count > 0) CHECK(current_device() == 0);
}

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("an empty list of workers does nothing and makes no CUDA call", "[02-set-device][task:2][gpus:0][points:1]") {
  // Runs on any machine: with no GPU, any CUDA call would fail.
  int calls = 0;
  CHECK_NOTHROW(run_on_all_devices(Devices{}, [&](int, int, cudaStream_t) { ++calls; }));
  CHECK_NOTHROW(scale_slices(std::vector<Slice>{}, std::vector<Slice>{}, 2.0f));
  std::vector<Slice> none;
  CHECK_NOTHROW(free_slices(none));
  CHECK(calls == 0);
}

TEST_CASE("each worker's work runs once with its device current and a stream of its own",
          "[02-set-device][task:2][gpus:1][points:1]") {
  require_gpus(1);
  std::vector<Devices> lists = shared_gpu_lists();
  lists.push_back({});  // no workers: nothing is called
  check_calls(run_on_all_devices, lists, /*one_thread_each=*/false);
}

TEST_CASE("one thread switches to each worker's device and gives the caller its device back",
          "[02-set-device][task:2][gpus:2][points:1]") {
  check_calls(run_on_all_devices, distinct_gpu_lists(require_gpus(2)), /*one_thread_each=*/false);
}

TEST_CASE("run_on_all_devices returns only when every worker's work is done",
          "[02-set-device][task:2][gpus:1][points:1]") {
  check_returns_when_done(run_on_all_devices);
}

TEST_CASE("run_on_all_devices throws when a device does not exist and when a worker's work throws",
          "[02-set-device][task:2][gpus:1][points:1]") {
  // The caller's device must come back also when the call fails (visible with 2 GPUs).
  const int count = require_gpus(1);
  const Devices missing{0, count};
  INFO("run_on_all_devices(" << show(missing) << ") on a machine with " << count
                             << " GPU(s): CUDA_CHECK(cudaSetDevice(devices[k])) throws course::ApiError for worker 1");
  call_keeps_device(
      count - 1, "run_on_all_devices with a device that does not exist", 60s, "a stream synchronize never returned",
      [&] { CHECK_THROWS_AS(run_on_all_devices(missing, [](int, int, cudaStream_t) {}), course::ApiError); });
  (void)cudaGetLastError();
  call_keeps_device(count - 1, "run_on_all_devices with a failing worker", 60s, "a stream synchronize never returned",
                    [&] {
                      CHECK_THROWS_AS(run_on_all_devices(Devices{0, 0, 0},
                                                         [](int k, int, cudaStream_t) {
                                                           if (k == 1) throw std::runtime_error("worker 1 failed");
                                                         }),
                                      std::runtime_error);
                    });
}

TEST_CASE("scaling the slices matches the CPU reference for every list of workers",
          "[02-set-device][task:2][gpus:1][points:2]") {
  const std::uint64_t seed = case_seed(201);
  for (const Devices& devices : worker_lists(require_gpus(1))) {
    for (const std::size_t n : sizes_for(devices.size())) {
      INFO(n << " elements over the workers " << show(devices));
      const TestSlices t(n, devices, seed + n);
      call_keeps_device(gpu_count() - 1, "scale_slices", 60s, "a stream synchronize never returned",
                        [&] { scale_slices(t.input, t.output, kFactor); });
      t.require_scaled(kFactor);
    }
  }
  const TestSlices t(10, {0, 0}, seed);
  CHECK_THROWS_AS(scale_slices(t.input, std::span<const Slice>(t.output).first(1), kFactor), std::invalid_argument);
}

TEST_CASE("workers that share a GPU run at the same time instead of one after another",
          "[02-set-device][task:2][gpus:1][points:1][overlap]") {
  require_gpus(1);
  const std::string hint =
      "the workers ran one after another: is there a synchronize inside the launch loop? Launch for every "
      "worker first, then wait on each stream in a second loop.";
  check_others_finish_while_one_is_held(run_on_all_devices, {0, 0, 0, 0}, hint);
  check_overlap(run_on_all_devices, {0, 0, 0, 0}, hint);
}

TEST_CASE("workers on distinct GPUs run at the same time instead of one after another",
          "[02-set-device][task:2][gpus:2][points:1][timing]") {
  check_overlap(run_on_all_devices, all_gpus(require_gpus(2)),
                "the GPUs ran one after another: is there a synchronize inside the launch loop?");
}
