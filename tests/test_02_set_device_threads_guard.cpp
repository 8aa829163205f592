// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 tests of tasks 3 and 4: one host thread per worker, and a device guard of one's own.
// As in test_02_set_device.cpp, a device may repeat in the list of workers, so the threads are
// started, joined and overlapped on one GPU with {0, 0, 0, 0}; only what needs distinct GPUs carries
// [gpus:2]. The checks shared with task 2 are in test_02_set_device_support.h. The guard's cases
// switch between real devices and read the current device back from the runtime.
#include <cuda_runtime.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/testing/gpu_test.h"
#include "common/testing/workers.h"
#include "kernels.cuh"
#include "set_device.h"
#include "test_02_set_device_support.h"

using namespace lesson02;
using namespace lesson02_tests;
using namespace std::chrono_literals;
using namespace course::testing;

namespace {

void check_scaling(Runner run, std::uint64_t salt) {
  const std::uint64_t seed = case_seed(salt);
  for (const Devices& devices : worker_lists(require_gpus(1))) {
    for (const std::size_t n : sizes_for(devices.size())) {
      INFO(n << " elements over the workers " << show(devices));
      const TestSlices t(n, devices, seed + n);
      run_from_last_device(run, devices, [&t](int k, int, cudaStream_t stream) {
        launch_scale(t.input[k].data, t.output[k].data, t.ranges[k].size(), kFactor, stream);
      });
      t.require_scaled(kFactor);
    }
  }
}

}  // namespace

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("an empty list of worker threads does nothing", "[02-set-device][task:3][gpus:0][points:1]") {
  int calls = 0;
  CHECK_NOTHROW(run_one_thread_per_device(Devices{}, [&](int, int, cudaStream_t) { ++calls; }));
  CHECK(calls == 0);
}

TEST_CASE("each worker runs on a thread of its own with a stream of its own",
          "[02-set-device][task:3][gpus:1][points:1]") {
  require_gpus(1);
  std::vector<Devices> lists = shared_gpu_lists();
  lists.push_back({});
  check_calls(run_one_thread_per_device, lists, /*one_thread_each=*/true);
}

TEST_CASE("each worker thread makes its own device current", "[02-set-device][task:3][gpus:2][points:2]") {
  // The caller is on the last GPU; a new thread starts on GPU 0 whatever its parent's device.
  check_calls(run_one_thread_per_device, distinct_gpu_lists(require_gpus(2)), /*one_thread_each=*/true);
}

TEST_CASE("run_one_thread_per_device returns only when every worker's work is done",
          "[02-set-device][task:3][gpus:1][points:1]") {
  check_returns_when_done(run_one_thread_per_device);
}

TEST_CASE("the lowest-numbered failing worker's exception reaches the caller after every worker has finished",
          "[02-set-device][task:3][gpus:1][points:2]") {
  require_gpus(1);
  // Workers 1 and 3 of four on GPU 0 fail, one at once and the other 20 ms later, both ways
  // round; workers 0 and 2 finish after 50 ms. Whichever fails first, worker 1's exception wins.
  for (const int first : {1, 3}) {
    INFO("worker " << first << " fails first");
    std::atomic<int> finished{0};
    std::string message = "nothing was thrown";
    run_with_watchdog("run_one_thread_per_device with failing workers", 60s,
                      "a worker was never joined: join every thread, also when one of them has thrown", [&] {
                        try {
                          run_one_thread_per_device(Devices{0, 0, 0, 0}, [&](int k, int, cudaStream_t) {
                            if (k % 2 == 0) {
                              std::this_thread::sleep_for(50ms);
                              ++finished;
                              return;
                            }
                            if (k != first) std::this_thread::sleep_for(20ms);
                            throw std::runtime_error("worker " + std::to_string(k) + " failed on purpose");
                          });
                        } catch (const std::runtime_error& e) {
                          message = e.what();
                        }
                      });
    CHECK(message == "worker 1 failed on purpose");
    INFO("the exception reached the caller before every worker had finished: join all the workers, then rethrow");
    CHECK(finished.load() == 2);
  }
}

TEST_CASE("a worker thread on a device that does not exist fails the call with course::ApiError",
          "[02-set-device][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  const Devices missing{0, count, 0};
  int ran_on_missing = 0;
  INFO("run_one_thread_per_device(" << show(missing) << ") on a machine with " << count
                                    << " GPU(s): worker 1's CUDA_CHECK(cudaSetDevice(" << count
                                    << ")) throws course::ApiError, which reaches the caller once all are joined");
  run_with_watchdog("run_one_thread_per_device with a device that does not exist", 60s,
                    "a worker was never joined: join every thread, also when one of them has thrown", [&] {
                      CHECK_THROWS_AS(run_one_thread_per_device(missing,
                                                                [&](int k, int, cudaStream_t) {
                                                                  if (k == 1) ++ran_on_missing;
                                                                }),
                                      course::ApiError);
                    });
  (void)cudaGetLastError();
  INFO("worker 1's work ran although its device does not exist: a failed cudaSetDevice must stop the worker");
  CHECK(ran_on_missing == 0);
}

TEST_CASE("worker threads that share a GPU run at the same time instead of one after another",
          "[02-set-device][task:3][gpus:1][points:1][overlap]") {
  require_gpus(1);
  const std::string hint =
      "the workers ran one after another: is each thread joined right after it is started? Start every "
      "worker first, then join them all.";
  check_others_finish_while_one_is_held(run_one_thread_per_device, {0, 0, 0, 0}, hint);
  check_overlap(run_one_thread_per_device, {0, 0, 0, 0}, hint);
}

TEST_CASE("worker threads scale their slices correctly for every list of workers",
          "[02-set-device][task:3][gpus:1][points:1]") {
  check_scaling(run_one_thread_per_device, 301);
}
// ---- Task 4 ---------------------------------------------------------------------------------

TEST_CASE("a guard makes its device current and restores the previous one when its scope ends",
          "[02-set-device][task:4][gpus:2][points:1]") {
  // One guard, one restore: the contract deletes the copies, so two guards never restore twice.
  STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<ScopedDevice>);
  STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<ScopedDevice>);
  const int count = require_gpus(2);
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      INFO("GPU " << from << " current, then a ScopedDevice(" << to << "); previous() must be GPU " << from);
      CUDA_CHECK(cudaSetDevice(from));
      {
        ScopedDevice guard(to);
        CHECK(current_device() == to);
        CHECK(guard.previous() == from);
      }
      INFO("when the guard's scope ended, GPU " << from << " should have been current again");
      CHECK(current_device() == from);
    }
  }
}

TEST_CASE("a guard restores the previous device when an exception leaves its scope",
          "[02-set-device][task:4][gpus:2][points:1]") {
  const int count = require_gpus(2);
  for (const auto& [from, to] : {std::pair{0, count - 1}, std::pair{count - 1, 0}}) {
    INFO("GPU " << from << " current, then a ScopedDevice(" << to << ") whose scope an exception leaves: "
                << "the destructor runs while the exception unwinds the scope, restore the device there");
    CUDA_CHECK(cudaSetDevice(from));
    CHECK_THROWS_AS(
        [&] {
          ScopedDevice guard(to);
          throw std::runtime_error("leaving by an exception");
        }(),
        std::runtime_error);
    CHECK(current_device() == from);
    // The same with a failing CUDA call inside the scope: CUDA_CHECK throws course::ApiError.
    CHECK_THROWS_AS(
        [&] {
          ScopedDevice guard(to);
          CUDA_CHECK(cudaSetDevice(count));
        }(),
        course::ApiError);
    (void)cudaGetLastError();
    CHECK(current_device() == from);
  }
}

TEST_CASE("nested guards restore devices in reverse order", "[02-set-device][task:4][gpus:2][points:1]") {
  const int count = require_gpus(2);
  const int outer = count - 1, inner = count > 2 ? 1 : 0;
  CUDA_CHECK(cudaSetDevice(0));
  {
    ScopedDevice a(outer);
    {
      ScopedDevice b(inner);
      CHECK(b.previous() == outer);
      {
        ScopedDevice c(outer);
        CHECK(c.previous() == inner);
      }
      INFO("after the innermost guard (to GPU " << outer << ") ended");
      CHECK(current_device() == inner);
    }
    INFO("after the middle guard (to GPU " << inner << ") ended");
    CHECK(current_device() == outer);
  }
  INFO("after the outer guard (to GPU " << outer << ") ended; GPU 0 was current before it");
  CHECK(current_device() == 0);
}

TEST_CASE("a guard to the device that is already current keeps it current",
          "[02-set-device][task:4][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int d = 0; d < count; ++d) {
    INFO("GPU " << d << " current, then a ScopedDevice(" << d << ")");
    CUDA_CHECK(cudaSetDevice(d));
    {
      ScopedDevice guard(d);
      CHECK(current_device() == d);
      CHECK(guard.previous() == d);
    }
    CHECK(current_device() == d);
  }
}

TEST_CASE("a guard to a device that does not exist throws course::ApiError and changes nothing",
          "[02-set-device][task:4][gpus:1][points:1]") {
  // Not run without a GPU: there even cudaGetDevice fails, so any guard would throw.
  const int count = require_gpus(1);
  CUDA_CHECK(cudaSetDevice(count - 1));
  CHECK_THROWS_AS(ScopedDevice{count}, course::ApiError);
  CHECK_THROWS_AS(ScopedDevice{-1}, course::ApiError);
  (void)cudaGetLastError();
  INFO("GPU " << count - 1 << " was current before the failed guard");
  CHECK(current_device() == count - 1);
}
