// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 tests. Where memory lives is read back from the runtime (cudaPointerGetAttributes),
// which device a thread's work ran on is recorded inside that thread, and overlap between GPUs
// is a ratio of host-clock times with wide margins, never an absolute time. The caller's
// current device is set to the LAST device where that makes a forgotten cudaSetDevice visible,
// and every case puts device 0 back when it ends, since the cases of one run share a thread.
#include <catch2/catch_test_macros.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
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
#include "common/testing/gpu_test.h"
#include "common/timer.h"
#include "kernels.cuh"
#include "set_device.h"

using namespace lesson02;
using namespace std::chrono_literals;
using course::testing::require_gpus;
using course::testing::current_device;
using course::testing::run_with_watchdog;

namespace {

// Sizes for k devices that always include the edges: 0, 1, fewer than k, not divisible by k, large.
std::vector<std::size_t> sizes_for(int k) {
  const auto devices = static_cast<std::size_t>(k);
  const std::set<std::size_t> sizes{0, 1, devices - 1, devices + 1, 4099 * devices + 1, (std::size_t{1} << 20) + 3};
  return {sizes.begin(), sizes.end()};
}

// ---- Task 1 helpers ----

// Owns what the student's allocate_slices returned, so that a failed check does not leak it:
// frees it with the student's free_slices, or by hand if that throws.
class StudentSlices {
 public:
  StudentSlices(std::size_t n, int device_count) : slices(allocate_slices(n, device_count)) {}
  StudentSlices(const StudentSlices&) = delete;
  StudentSlices& operator=(const StudentSlices&) = delete;
  ~StudentSlices() {
    if (slices.empty()) return;
    try {
      free_slices(slices);
    } catch (...) {
      for (const Slice& slice : slices) {
        (void)cudaSetDevice(slice.device);
        (void)cudaFree(slice.data);
      }
      (void)cudaGetLastError();
    }
  }
  std::vector<Slice> slices;
};

// What the runtime says about a pointer.
struct Placement {
  cudaError_t error = cudaSuccess;
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  int device = -1;
};

Placement placement_of(const void* pointer) {
  cudaPointerAttributes attributes{};
  Placement where;
  where.error = cudaPointerGetAttributes(&attributes, pointer);
  if (where.error != cudaSuccess) {
    (void)cudaGetLastError();
    return where;
  }
  where.type = attributes.type;
  where.device = attributes.device;
  return where;
}

const char* memory_type_name(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered: return "unregistered host memory";
    case cudaMemoryTypeHost: return "pinned host memory";
    case cudaMemoryTypeDevice: return "device memory";
    case cudaMemoryTypeManaged: return "managed memory";
  }
  return "unknown memory";
}

// ---- Task 2 and 3 helpers ----

// Input and output slices made by the test itself (so these tasks do not depend on task 1):
// random inputs, outputs poisoned with NaNs, slice d on device d.
struct TestSlices {
  std::vector<course::Range> ranges;
  std::vector<float> host_input;
  std::vector<course::DeviceBuffer<float>> input_buffers;
  std::vector<course::DeviceBuffer<float>> output_buffers;
  std::vector<Slice> input;
  std::vector<Slice> output;
};

TestSlices make_test_slices(std::size_t n, int device_count, std::uint64_t seed) {
  TestSlices t;
  t.ranges = course::split_ranges(n, device_count);
  t.host_input = course::random_floats(n, seed, -4.0f, 4.0f);
  t.input_buffers.reserve(device_count);
  t.output_buffers.reserve(device_count);
  for (int d = 0; d < device_count; ++d) {
    const course::Range range = t.ranges[d];
    t.input_buffers.emplace_back(d, range.size());
    t.output_buffers.emplace_back(d, range.size());
    if (!range.empty()) {
      course::DeviceGuard on(d);
      CUDA_CHECK(cudaMemcpy(t.input_buffers[d].data(), t.host_input.data() + range.begin, t.input_buffers[d].bytes(),
                            cudaMemcpyHostToDevice));
      course::poison_device(t.output_buffers[d].data(), t.output_buffers[d].bytes());
    }
    t.input.push_back(Slice{d, t.input_buffers[d].data(), range});
    t.output.push_back(Slice{d, t.output_buffers[d].data(), range});
  }
  return t;
}

std::vector<float> gather_output(const TestSlices& t) {
  std::vector<float> all(t.host_input.size());
  for (std::size_t d = 0; d < t.ranges.size(); ++d) {
    if (t.ranges[d].empty()) continue;
    course::DeviceGuard on(static_cast<int>(d));
    CUDA_CHECK(cudaMemcpy(all.data() + t.ranges[d].begin, t.output_buffers[d].data(), t.output_buffers[d].bytes(),
                          cudaMemcpyDeviceToHost));
  }
  return all;
}

// One float multiplication, rounded to nearest on both sides (IEEE 754): the GPU's product is
// bit for bit the CPU's, so the results are compared exactly.
constexpr float kFactor = -1.75f;

std::vector<float> scaled_reference(const std::vector<float>& input) {
  std::vector<float> expected(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) expected[i] = kFactor * input[i];
  return expected;
}

// Every output element is kFactor times its input (compared per GPU), and the caller's device
// is still `caller_device` after `call`.
void require_scaled_output(const TestSlices& t, int caller_device, const char* call) {
  const std::vector<float> got = gather_output(t);
  const std::vector<float> expected = scaled_reference(t.host_input);
  const course::Comparison comparison = course::compare_exact(got.data(), expected.data(), got.size(), t.ranges);
  INFO(comparison.describe());
  REQUIRE(comparison.ok());
  INFO("the caller had device " << caller_device << " current before " << call);
  REQUIRE(current_device() == caller_device);
}

// What a DeviceWork callback saw, recorded in the thread that called it.
struct Call {
  int device = -1;              // the argument
  int current = -1;             // cudaGetDevice() inside the callback
  bool created_stream = false;  // not the default stream (0, cudaStreamLegacy, cudaStreamPerThread)
  int stream_device = -1;       // cudaStreamGetDevice(stream)
  std::thread::id thread;
};

Call record_call(int device, cudaStream_t stream) {
  Call call;
  call.device = device;
  call.thread = std::this_thread::get_id();
  if (cudaGetDevice(&call.current) != cudaSuccess) {
    call.current = -1;
    (void)cudaGetLastError();
  }
  call.created_stream = stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread;
  if (call.created_stream && cudaStreamGetDevice(stream, &call.stream_device) != cudaSuccess) {
    call.stream_device = -1;
    (void)cudaGetLastError();
  }
  return call;
}

using Runner = void (*)(int, const DeviceWork&);

// Each device's share of the overlap test: one spin kernel, long enough that launch and
// synchronization overheads (tens of microseconds) do not matter.
constexpr double kSpinMs = 25.0;
// Perfect overlap on k devices gives a ratio of 1/k (0.5 for 2), one device after another 1.0.
constexpr double kOverlapLimit = 0.6;

double median_host_ms(const std::function<void()>& run) {
  return course::measure_host(run, /*warmup=*/1, /*repeats=*/3).median_ms;
}

// Times `run` with the spin kernel on all of the first k devices, for k = 2 .. count, and compares
// each with the sum of single-device runs (the spin on one device only) of the same function.
void check_devices_overlap(Runner run, const std::string& what, const std::string& serial_hint) {
  const int count = require_gpus(2);
  std::vector<double> alone_ms(count), together_ms(count + 1);
  run_with_watchdog(what + " with the spin kernel", 90s,
                    "a stream synchronize or a join never returned: is every stream waited on once, and every thread "
                    "joined once?",
                    [&] {
                      for (int d = 0; d < count; ++d) {
                        alone_ms[d] = median_host_ms([&] {
                          run(count, [d](int device, cudaStream_t stream) {
                            if (device == d) launch_spin(kSpinMs, stream);
                          });
                        });
                      }
                      for (int k = 2; k <= count; ++k)
                        together_ms[k] = median_host_ms(
                            [&] { run(k, [](int, cudaStream_t stream) { launch_spin(kSpinMs, stream); }); });
                    });
  double one_after_another_ms = alone_ms[0];
  for (int k = 2; k <= count; ++k) {
    one_after_another_ms += alone_ms[k - 1];
    const double ratio = together_ms[k] / one_after_another_ms;
    INFO(k << " GPUs, " << kSpinMs << " ms of spin kernel each: all together took " << together_ms[k]
           << " ms; one at a time they take " << one_after_another_ms << " ms in total. Ratio " << ratio
           << " (perfect overlap " << 1.0 / k << ", one after another 1.0; it must stay below " << kOverlapLimit
           << ")");
    INFO((ratio > 0.85 ? serial_hint
                       : std::string("the devices overlapped only in part: does something wait on the GPU "
                                     "between two devices' launches?")));
    CHECK(ratio < kOverlapLimit);
  }
}

void check_scaling(Runner run, const std::string& what, std::uint64_t salt) {
  const int count = require_gpus(1);
  const std::uint64_t seed = course::testing::case_seed(salt);
  for (int k = 1; k <= count; ++k) {
    for (const std::size_t n : sizes_for(k)) {
      INFO(n << " elements over " << k << " GPU(s)");
      TestSlices t = make_test_slices(n, k, seed + n);
      CUDA_CHECK(cudaSetDevice(count - 1));
      run_with_watchdog(what, 60s, "a stream synchronize or a join never returned", [&] {
        run(k, [&t](int d, cudaStream_t stream) {
          launch_scale(t.input[d].data, t.output[d].data, t.ranges[d].size(), kFactor, stream);
        });
      });
      require_scaled_output(t, count - 1, "the call");
    }
  }
}

}  // namespace

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("the slices tile the buffer in balanced ranges one per device", "[02-set-device][task:1][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int k = 1; k <= count; ++k) {
    for (const std::size_t n : sizes_for(k)) {
      INFO(n << " elements over " << k << " GPU(s)");
      StudentSlices owned(n, k);
      const std::vector<Slice>& slices = owned.slices;
      REQUIRE(slices.size() == static_cast<std::size_t>(k));
      for (int d = 0; d < k; ++d) {
        const Slice& slice = slices[d];
        const course::Range expected = course::split_range(n, k, d);
        INFO("slice " << d << " has device " << slice.device << ", range [" << slice.range.begin << ", "
                      << slice.range.end << "); expected device " << d << ", range [" << expected.begin << ", "
                      << expected.end << ") as course::split_range gives it");
        REQUIRE(slice.device == d);
        REQUIRE(slice.range.begin == expected.begin);
        REQUIRE(slice.range.end == expected.end);
        if (expected.empty()) {
          INFO("an empty slice allocates nothing: its data stays nullptr");
          REQUIRE(slice.data == nullptr);
          continue;
        }
        REQUIRE(slice.data != nullptr);
        const Placement where = placement_of(slice.data);
        INFO("cudaPointerGetAttributes: " << cudaGetErrorName(where.error) << ", " << memory_type_name(where.type)
                                          << " of device " << where.device);
        REQUIRE(where.error == cudaSuccess);
        REQUIRE(where.type == cudaMemoryTypeDevice);
        REQUIRE(where.device == d);
      }
    }
  }
}

TEST_CASE("each slice is allocated on its own device whatever device the caller has current", "[02-set-device][task:1][gpus:2][points:2]") {
  const int count = require_gpus(2);
  // The last device current first: code that forgets cudaSetDevice puts every slice there, and code
  // that leaves device 0 current afterwards is caught. Then device 0, for code that leaves the last one.
  for (const int caller : {count - 1, 0}) {
    for (int k = 1; k <= count; ++k) {
      for (const std::size_t n : sizes_for(k)) {
        INFO(n << " elements over " << k << " GPU(s); device " << caller << " was current before the call");
        CUDA_CHECK(cudaSetDevice(caller));
        StudentSlices owned(n, k);
        const int after_allocate = current_device();
        {
          INFO("allocate_slices left device " << after_allocate
                                              << " current: make the caller's device current again before returning");
          REQUIRE(after_allocate == caller);
        }
        REQUIRE(owned.slices.size() == static_cast<std::size_t>(k));
        for (int d = 0; d < k; ++d) {
          const Slice& slice = owned.slices[d];
          if (slice.data == nullptr) continue;
          const Placement where = placement_of(slice.data);
          INFO("slice " << d << " is " << memory_type_name(where.type) << " of device " << where.device
                        << ". cudaMalloc allocates on the current device: make device " << d
                        << " current (cudaSetDevice) before allocating slice " << d);
          REQUIRE(where.type == cudaMemoryTypeDevice);
          REQUIRE(where.device == d);
        }
        free_slices(owned.slices);
        const int after_free = current_device();
        INFO("free_slices left device " << after_free
                                        << " current: make the caller's device current again before returning");
        REQUIRE(after_free == caller);
      }
    }
  }
}

TEST_CASE("freeing the slices gives every device its memory back", "[02-set-device][task:1][gpus:1][points:1]") {
  const int count = require_gpus(1);
  constexpr std::size_t kFloatsPerDevice = std::size_t{64} << 20;  // 256 MiB on each device
  constexpr double kSliceMiB = kFloatsPerDevice * sizeof(float) / double(1 << 20);
  const auto free_mib = [count] {
    std::vector<double> mib(count);
    for (int d = 0; d < count; ++d) {
      course::DeviceGuard on(d);
      std::size_t free_bytes = 0, total_bytes = 0;
      CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      mib[d] = free_bytes / double(1 << 20);
    }
    return mib;
  };
  CUDA_CHECK(cudaSetDevice(count - 1));
  const std::vector<double> before = free_mib();
  StudentSlices owned(kFloatsPerDevice * count, count);
  const std::vector<double> allocated = free_mib();
  for (int d = 0; d < count; ++d) {
    INFO("device " << d << ": allocate_slices took " << before[d] - allocated[d] << " MiB; its slice is " << kSliceMiB
                   << " MiB");
    CHECK(before[d] - allocated[d] >= 0.9 * kSliceMiB);
  }
  free_slices(owned.slices);
  CHECK(owned.slices.empty());
  {
    INFO("device " << count - 1 << " was current before free_slices");
    CHECK(current_device() == count - 1);
  }
  const std::vector<double> after = free_mib();
  for (int d = 0; d < count; ++d) {
    // Other processes may allocate meanwhile; 64 MiB is a quarter of the slice.
    INFO("device " << d << " still misses " << before[d] - after[d] << " MiB after free_slices: cudaFree each slice");
    CHECK(after[d] >= before[d] - 64.0);
  }
}

TEST_CASE("a device count the machine does not have is an error", "[02-set-device][task:1][gpus:0][points:1]") {
  // Runs on any machine: with no GPU, allocating on device 0 already fails.
  const int count = course::testing::gpu_count();
  // Device 0 current: a loop that switches devices and then throws without restoring leaves
  // the last device it reached (count - 1) current instead.
  if (count > 0) CUDA_CHECK(cudaSetDevice(0));
  CHECK_THROWS_AS(allocate_slices(16, 0), std::invalid_argument);
  CHECK_THROWS_AS(allocate_slices(16, -1), std::invalid_argument);
  {
    INFO("allocate_slices(16, " << count + 1 << ") on a machine with " << count
                                << " GPU(s) must throw course::ApiError (CUDA_CHECK(cudaSetDevice(...)) does)");
    CHECK_THROWS_AS(allocate_slices(16, count + 1), course::ApiError);
  }
  (void)cudaGetLastError();
  if (count > 0) {
    INFO("device 0 was current before the failed call: restore the caller's device also when a call throws");
    CHECK(current_device() == 0);
  }
}

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("the launch callback runs once per device with that device current and a stream of its own",
          "[02-set-device][task:2][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int k = 0; k <= count; ++k) {
    INFO("run_on_all_devices(" << k << ", ...) with device " << count - 1 << " current before the call");
    CUDA_CHECK(cudaSetDevice(count - 1));
    std::vector<Call> calls;
    run_with_watchdog("run_on_all_devices", 60s, "a stream synchronize never returned", [&] {
      run_on_all_devices(k, [&calls](int device, cudaStream_t stream) { calls.push_back(record_call(device, stream)); });
    });
    REQUIRE(calls.size() == static_cast<std::size_t>(k));
    for (int d = 0; d < k; ++d) {
      const Call& call = calls[d];
      INFO("call " << d << ": work(" << call.device << ", stream) with device " << call.current
                   << " current, a stream of device " << call.stream_device);
      CHECK(call.device == d);
      {
        INFO("work(d, stream) must be called with device d current: cudaSetDevice(d) first");
        CHECK(call.current == d);
      }
      {
        INFO("each device needs a stream of its own, made while that device is current "
             "(cudaStreamCreateWithFlags), not the default stream");
        CHECK(call.created_stream);
        CHECK(call.stream_device == d);
      }
    }
    INFO("the caller's current device must be the same after the call as before it");
    CHECK(current_device() == count - 1);
  }
}

TEST_CASE("scaling every slice matches the CPU reference for every GPU count", "[02-set-device][task:2][gpus:1][points:2]") {
  const int count = require_gpus(1);
  const std::uint64_t seed = course::testing::case_seed(201);
  for (int k = 1; k <= count; ++k) {
    for (const std::size_t n : sizes_for(k)) {
      INFO(n << " elements over " << k << " GPU(s)");
      TestSlices t = make_test_slices(n, k, seed + n);
      CUDA_CHECK(cudaSetDevice(count - 1));
      run_with_watchdog("scale_slices", 60s, "a stream synchronize never returned",
                        [&] { scale_slices(t.input, t.output, kFactor); });
      require_scaled_output(t, count - 1, "scale_slices");
    }
  }
}

TEST_CASE("all devices run at the same time instead of one after another", "[02-set-device][task:2][gpus:2][points:2]") {
  check_devices_overlap(run_on_all_devices, "run_on_all_devices",
                        "the devices ran one after another: is there a synchronize inside the launch loop? Launch on "
                        "every device first, then wait on each stream in a second loop.");
}

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("each worker thread makes its own device current", "[02-set-device][task:3][gpus:2][points:2]") {
  const int count = require_gpus(2);
  // The parent's device is the last one. A worker does not inherit it: it starts on device 0.
  CUDA_CHECK(cudaSetDevice(count - 1));
  const std::thread::id parent = std::this_thread::get_id();
  std::mutex mutex;
  std::vector<Call> calls;
  run_with_watchdog("run_one_thread_per_device", 60s, "a worker was never joined, or a stream never finished", [&] {
    run_one_thread_per_device(count, [&](int device, cudaStream_t stream) {
      const Call call = record_call(device, stream);
      std::lock_guard<std::mutex> lock(mutex);
      calls.push_back(call);
    });
  });
  REQUIRE(calls.size() == static_cast<std::size_t>(count));
  std::sort(calls.begin(), calls.end(), [](const Call& a, const Call& b) { return a.device < b.device; });
  std::set<std::thread::id> threads;
  for (int d = 0; d < count; ++d) {
    const Call& call = calls[d];
    INFO("the worker for device " << d << " found device " << call.current << " current");
    REQUIRE(call.device == d);
    {
      INFO("work(" << d << ", stream) ran on the calling thread: start one std::thread per device");
      CHECK(call.thread != parent);
    }
    threads.insert(call.thread);
    {
      INFO("a new host thread starts on device 0, not on its parent's device (device " << count - 1
           << " here): each worker must call cudaSetDevice(" << d << ") itself, before anything else");
      CHECK(call.current == d);
    }
    {
      INFO("the stream given to worker " << d << " belongs to device " << call.stream_device
                                          << ": create it after cudaSetDevice, in the worker");
      CHECK(call.created_stream);
      CHECK(call.stream_device == d);
    }
  }
  {
    INFO("the work ran on " << threads.size() << " distinct thread(s) for " << count << " devices: one thread per device");
    CHECK(threads.size() == static_cast<std::size_t>(count));
  }
  INFO("the caller's current device must be the same after the call as before it");
  CHECK(current_device() == count - 1);
}

TEST_CASE("an exception in a worker reaches the caller after every worker has finished",
          "[02-set-device][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int k = 1; k <= count; ++k) {
    INFO(k << " worker(s): the worker for device 0 throws at once, the others finish after 50 ms");
    std::atomic<int> finished{0};
    bool caught = false;
    std::string message;
    run_with_watchdog("run_one_thread_per_device with a worker that throws", 60s,
                      "a worker was never joined: join every thread, also when one of them has thrown", [&] {
                        try {
                          run_one_thread_per_device(k, [&finished](int device, cudaStream_t) {
                            if (device == 0) throw std::runtime_error("worker 0 failed on purpose");
                            std::this_thread::sleep_for(50ms);
                            ++finished;
                          });
                        } catch (const std::runtime_error& e) {
                          caught = true;
                          message = e.what();
                        }
                      });
    {
      INFO("the worker's exception was lost: catch it in the worker (std::current_exception), keep it in a "
           "std::exception_ptr and rethrow it in the caller (std::rethrow_exception) after joining");
      REQUIRE(caught);
    }
    CHECK(message == "worker 0 failed on purpose");
    INFO("the exception reached the caller before every worker had finished: join all the workers, then rethrow");
    CHECK(finished.load() == k - 1);
  }
}

TEST_CASE("the worker threads run at the same time instead of one after another",
          "[02-set-device][task:3][gpus:2][points:1]") {
  check_devices_overlap(run_one_thread_per_device, "run_one_thread_per_device",
                        "the workers ran one after another: is each thread joined right after it is started? Start "
                        "every worker first, then join them all.");
}

TEST_CASE("worker threads scale their slices correctly for every GPU count", "[02-set-device][task:3][gpus:1][points:1]") {
  check_scaling(run_one_thread_per_device, "run_one_thread_per_device", 301);
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
      INFO("device " << from << " current, then a ScopedDevice(" << to << ")");
      CUDA_CHECK(cudaSetDevice(from));
      {
        ScopedDevice guard(to);
        CHECK(current_device() == to);
        INFO("previous() must be the device that was current before the guard switched");
        CHECK(guard.previous() == from);
      }
      INFO("when the guard's scope ended, device " << from << " should have been current again");
      CHECK(current_device() == from);
    }
  }
}

TEST_CASE("a guard restores the previous device when an exception leaves its scope",
          "[02-set-device][task:4][gpus:2][points:1]") {
  const int count = require_gpus(2);
  for (const auto& [from, to] : {std::pair{0, count - 1}, std::pair{count - 1, 0}}) {
    INFO("device " << from << " current, then a ScopedDevice(" << to << ") whose scope an exception leaves");
    CUDA_CHECK(cudaSetDevice(from));
    bool thrown = false;
    try {
      ScopedDevice guard(to);
      throw std::runtime_error("leaving the scope by an exception");
    } catch (const std::runtime_error&) {
      thrown = true;
    }
    REQUIRE(thrown);
    CHECK(current_device() == from);

    // The same with a failing CUDA call inside the scope: CUDA_CHECK throws course::ApiError.
    thrown = false;
    try {
      ScopedDevice guard(to);
      CUDA_CHECK(cudaSetDevice(count));  // no such device
    } catch (const course::ApiError&) {
      thrown = true;
    }
    (void)cudaGetLastError();
    REQUIRE(thrown);
    INFO("the destructor runs while an exception unwinds the scope: restore the device there");
    CHECK(current_device() == from);
  }
}

TEST_CASE("nested guards restore devices in reverse order", "[02-set-device][task:4][gpus:2][points:1]") {
  const int count = require_gpus(2);
  const int outer = count - 1;
  const int inner = count > 2 ? 1 : 0;
  CUDA_CHECK(cudaSetDevice(0));
  {
    ScopedDevice a(outer);
    CHECK(current_device() == outer);
    {
      ScopedDevice b(inner);
      CHECK(current_device() == inner);
      CHECK(b.previous() == outer);
      {
        ScopedDevice c(outer);
        CHECK(current_device() == outer);
        CHECK(c.previous() == inner);
      }
      INFO("after the innermost guard (to device " << outer << ") ended");
      CHECK(current_device() == inner);
    }
    INFO("after the middle guard (to device " << inner << ") ended");
    CHECK(current_device() == outer);
  }
  INFO("after the outer guard (to device " << outer << ") ended; device 0 was current before it");
  CHECK(current_device() == 0);
}

TEST_CASE("a guard to the device that is already current keeps it current", "[02-set-device][task:4][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int d = 0; d < count; ++d) {
    INFO("device " << d << " current, then a ScopedDevice(" << d << ")");
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
          "[02-set-device][task:4][gpus:0][points:1]") {
  // Runs on any machine: with no GPU, every device is one that does not exist.
  const int count = course::testing::gpu_count();
  if (count > 0) CUDA_CHECK(cudaSetDevice(count - 1));
  CHECK_THROWS_AS(ScopedDevice{count}, course::ApiError);
  CHECK_THROWS_AS(ScopedDevice{-1}, course::ApiError);
  (void)cudaGetLastError();
  if (count > 0) {
    INFO("device " << count - 1 << " was current before the failed guard");
    CHECK(current_device() == count - 1);
  }
}
