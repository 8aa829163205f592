// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 tests. The devices are a list of workers in which a device may repeat, so one GPU
// runs the split, the streams, the uneven tail and the joining with {0, 0, 0}; only what needs
// distinct GPUs carries [gpus:2]. Where memory lives is read back from the runtime, which device
// a worker ran on is recorded inside the worker, "done" is a host function enqueued after the
// work, and overlap is a ratio of host-clock times with a wide margin. The caller's device is the
// LAST device, where that makes a forgotten cudaSetDevice visible.
#include <cuda_runtime.h>

#include <atomic>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/overlap.h"
#include "common/testing/owned.h"
#include "common/testing/workers.h"
#include "kernels.cuh"
#include "set_device.h"

using namespace lesson02;
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

// Input and output slices made by the test itself (tasks 2 and 3 do not depend on task 1):
// random inputs, outputs poisoned with NaNs, slice k on devices[k].
struct TestSlices {
  std::vector<course::Range> ranges;
  std::vector<float> host_input;
  std::vector<course::DeviceBuffer<float>> buffers;  // input k at 2k, output k at 2k + 1
  std::vector<Slice> input, output;

  TestSlices(std::size_t n, const Devices& devices, std::uint64_t seed)
      : ranges(course::split_ranges(n, static_cast<int>(devices.size()))),
        host_input(course::random_floats(n, seed, -4.0f, 4.0f)) {
    for (std::size_t k = 0; k < devices.size(); ++k) {
      buffers.emplace_back(devices[k], ranges[k].size());
      buffers.emplace_back(devices[k], ranges[k].size());
      upload(buffers[2 * k].data(), devices[k],
             std::span<const float>(host_input).subspan(ranges[k].begin, ranges[k].size()));
      const course::DeviceGuard on(devices[k]);
      if (!ranges[k].empty()) course::poison_device(buffers[2 * k + 1].data(), buffers[2 * k + 1].bytes());
    }
    for (std::size_t k = 0; k < devices.size(); ++k) {
      input.push_back(Slice{devices[k], buffers[2 * k].data(), ranges[k]});
      output.push_back(Slice{devices[k], buffers[2 * k + 1].data(), ranges[k]});
    }
  }

  // Every output element is kFactor times its input: one float product, rounded the same way on
  // GPU and CPU (IEEE 754), so compared exactly; mismatches counted per worker.
  void require_scaled(float factor) const {
    std::vector<float> got, expected(host_input.size());
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = factor * host_input[i];
    for (std::size_t k = 0; k < output.size(); ++k) {
      const std::vector<float> part = read_back(output[k].data, output[k].device, ranges[k].size());
      got.insert(got.end(), part.begin(), part.end());
    }
    const course::Comparison comparison = course::compare_exact(got.data(), expected.data(), got.size(), ranges);
    INFO(comparison.describe());
    REQUIRE(comparison.ok());
  }
};

constexpr float kFactor = -1.75f;
using Runner = void (*)(std::span<const int>, const DeviceWork&);

// Runs `run` under the watchdog from the last device; the caller's device must be kept.
void run_from_last_device(Runner run, const Devices& devices, const DeviceWork& work) {
  call_keeps_device(gpu_count() - 1, "the workers " + show(devices), 60s,
                    "a stream synchronize or a join never returned", [&] { run(devices, work); });
}

// What a DeviceWork callback saw, recorded in the thread that called it.
struct Call {
  int worker = -1, device = -1, current = -1, stream_device = -1;
  cudaStream_t stream = nullptr;
  std::thread::id thread;
  bool met_all = true;  // one thread each: every worker was inside its work at the same time
};

// Each worker's work is called once, with its own device current and a stream of its own on it.
// With one_thread_each, on a thread of its own: each worker then waits (up to 5 s) until every
// worker is inside its work, so all threads and streams are alive at once (a finished thread's id
// and a destroyed stream's handle may be reused, so only live ones are compared), and workers run
// one after another never all arrive.
void check_calls(Runner run, const std::vector<Devices>& lists, bool one_thread_each) {
  for (const Devices& devices : lists) {
    INFO("workers " << show(devices));
    std::mutex mutex;
    std::condition_variable arrived;
    std::vector<Call> calls;
    run_from_last_device(run, devices, [&](int worker, int device, cudaStream_t stream) {
      Call call{worker, device, -1, -1, stream, std::this_thread::get_id()};
      CUDA_CHECK(cudaGetDevice(&call.current));
      if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread)
        CUDA_CHECK(cudaStreamGetDevice(stream, &call.stream_device));
      std::unique_lock<std::mutex> lock(mutex);
      const std::size_t mine = calls.size();
      calls.push_back(call);
      arrived.notify_all();
      if (one_thread_each)
        calls[mine].met_all = arrived.wait_for(lock, 5s, [&] { return calls.size() == devices.size(); });
    });
    REQUIRE(calls.size() == devices.size());
    std::set<cudaStream_t> streams;
    std::set<std::thread::id> threads;
    for (const Call& call : calls) {
      REQUIRE(call.worker >= 0);
      REQUIRE(call.worker < static_cast<int>(devices.size()));
      const int expected = devices[call.worker];
      INFO("work(" << call.worker << ", " << call.device << ", stream) found GPU " << call.current
                   << " current and a stream of GPU " << call.stream_device << "; worker " << call.worker
                   << "'s device is " << expected);
      CHECK(call.device == expected);
      CHECK(call.current == expected);
      CHECK(call.stream_device == expected);  // -1: a default stream, which a worker must not get
      streams.insert(call.stream);
      threads.insert(call.thread);
      if (one_thread_each) {
        CHECK(call.thread != std::this_thread::get_id());
        INFO("worker " << call.worker << " waited 5 s for the others to start: start every worker before joining any");
        CHECK(call.met_all);
      }
    }
    INFO("each worker needs a stream of its own, also when workers share a device: "
         << streams.size() << " distinct stream(s) for " << devices.size() << " workers");
    CHECK(streams.size() == devices.size());
    INFO(threads.size() << " distinct thread(s) ran the work");
    if (one_thread_each) CHECK(threads.size() == devices.size());
  }
}

// The call returns only when every worker's work is done: a host function enqueued after a
// 25 ms spin kernel counts the workers whose work has finished.
void check_returns_when_done(Runner run) {
  for (const Devices& devices : worker_lists(require_gpus(1))) {
    DoneCounter counter;
    run_from_last_device(run, devices, [&](int, int, cudaStream_t stream) {
      launch_spin(25.0, stream);
      counter.enqueue(stream);
    });
    const int done = counter.done();
    INFO("workers " << show(devices) << ": " << done
                    << " had finished when the call returned; wait for every worker's stream before returning");
    CHECK(done == static_cast<int>(devices.size()));
  }
}

// A 25 ms spin kernel on every worker together against each worker alone (see overlap.h).
void check_overlap(Runner run, const Devices& devices, const std::string& serial_hint) {
  Overlap overlap;
  run_with_watchdog("the workers " + show(devices) + " with the spin kernel", 90s,
                    "a stream synchronize or a join never returned", [&] {
                      overlap = measure_overlap(
                          static_cast<int>(devices.size()),
                          [&](int only) {
                            run(devices, [only](int k, int, cudaStream_t s) {
                              if (k == only) launch_spin(25.0, s);
                            });
                          },
                          [&] { run(devices, [](int, int, cudaStream_t s) { launch_spin(25.0, s); }); });
                    });
  INFO("workers " << show(devices) << ", 25 ms of spin kernel each. " << overlap.describe());
  INFO((overlap.ratio() > 0.85 ? serial_hint : std::string("the workers overlapped only in part")));
  CHECK(overlap.overlapped());
}

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
          "[02-set-device][task:2][gpus:1][points:1]") {
  require_gpus(1);
  check_overlap(run_on_all_devices, {0, 0, 0, 0},
                "the workers ran one after another: is there a synchronize inside the launch loop? Launch for every "
                "worker first, then wait on each stream in a second loop.");
}

TEST_CASE("workers on distinct GPUs run at the same time instead of one after another",
          "[02-set-device][task:2][gpus:2][points:1]") {
  check_overlap(run_on_all_devices, all_gpus(require_gpus(2)),
                "the GPUs ran one after another: is there a synchronize inside the launch loop?");
}

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

TEST_CASE("worker threads that share a GPU run at the same time instead of one after another",
          "[02-set-device][task:3][gpus:1][points:1]") {
  require_gpus(1);
  check_overlap(run_one_thread_per_device, {0, 0, 0, 0},
                "the workers ran one after another: is each thread joined right after it is started? Start every "
                "worker first, then join them all.");
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
