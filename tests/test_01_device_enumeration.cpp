// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01 tests of tasks 1 and 2: counting the devices and describing each one. Every
// expectation is cross-checked against the CUDA runtime itself, never against constants, so they
// hold on any machine. The case with no GPU visible runs this program again as a child process
// with CUDA_VISIBLE_DEVICES=-1, to see what the student's code sees there; the child's body is the
// hidden case at the top. Tasks 3 and 4 are in test_01_device_enumeration_select.cpp.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "device_enumeration.h"
#include "test_01_device_enumeration_support.h"

using namespace lesson01;
using namespace lesson01_tests;
using course::testing::current_device;
using course::testing::require_gpus;

namespace {

// Allocates a quarter of `device`'s free memory (its free memory then differs from its total and
// from any other device's by at least that much) and returns the runtime's free bytes after it.
struct Squeeze {
  explicit Squeeze(int device) {
    course::DeviceGuard on(device);
    std::size_t total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
    buffer = course::DeviceBuffer<std::uint8_t>(device, free_after / 4);
    CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
  }
  course::DeviceBuffer<std::uint8_t> buffer;
  std::size_t free_after = 0;
};

// The student's figure is the runtime's, within half the squeeze: other processes may allocate
// meanwhile, but not a quarter of a GPU in a moment.
void check_free_memory(const DeviceInfo& info, const Squeeze& squeeze) {
  const double difference = static_cast<double>(info.free_memory) - static_cast<double>(squeeze.free_after);
  INFO("GPU " << info.ordinal << ": describe_device says " << info.free_memory << " bytes free, the runtime "
              << squeeze.free_after << " (of " << info.total_memory << ") with " << squeeze.buffer.bytes()
              << " bytes allocated by the test: cudaMemGetInfo with the described device current");
  CHECK(std::abs(difference) < 0.5 * static_cast<double>(squeeze.buffer.bytes()));
}

}  // namespace

// Not a graded case: the body of the child process started by the cases below and by the
// CUDA_VISIBLE_DEVICES case of test_01_device_enumeration_select.cpp.
TEST_CASE("child: report the visible devices", "[.child]") {
  std::ostringstream report;
  // Each function on its own, so that one that throws (or crashes) does not hide what the others do.
  try {
    const int count = count_devices();
    report << "count " << count << '\n';
    report << "last_error " << cudaGetErrorName(cudaGetLastError()) << '\n';
  } catch (const std::exception& e) {
    report << "threw " << e.what() << '\n';
  }
  course::testing::write_child_output(report.str());  // appended: a crash below leaves the count's report
  report.str("");
  try {
    const std::vector<int> selected = select_devices({});
    report << "selected " << selected.size() << '\n';
    for (int ordinal : selected) report << "device " << ordinal << ' ' << describe_device(ordinal).uuid << '\n';
  } catch (const std::exception& e) {
    report << "select_threw " << e.what() << '\n';
  }
  course::testing::write_child_output(report.str());
}

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("the device count matches the runtime's", "[01-device-enumeration][task:1][gpus:1][points:1]") {
  const int found = require_gpus(1);
  CHECK(count_devices() == found);
}

TEST_CASE("with no GPU visible the count is 0 and nothing throws",
          "[01-device-enumeration][task:1][gpus:0][points:2]") {
  // CUDA_VISIBLE_DEVICES=-1 hides every GPU, so this case runs on any machine, GPU or not.
  // With no usable device the runtime cannot initialise, and every later call reports that
  // again (a "sticky" initialisation error), so what cudaGetLastError says next is not checked.
  const ChildView view = run_child_with_visible_devices("-1", {});
  // The exception's own text first: a starter's failure then reads "NOT_IMPLEMENTED: task 1 ...".
  if (!view.threw.empty()) FAIL(view.threw << " (thrown by count_devices() with no GPU visible)");
  CHECK(view.count == 0);
}

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("each device is described as the runtime sees it", "[01-device-enumeration][task:2][gpus:1][points:2]") {
  const int count = require_gpus(1);
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    char bus_id[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, d));
    const DeviceInfo info = describe_device(d);
    INFO("device " << d);
    CHECK(info.ordinal == d);
    CHECK(info.name == prop.name);
    CHECK(info.major == prop.major);
    CHECK(info.minor == prop.minor);
    CHECK(info.total_memory == prop.totalGlobalMem);
    CHECK(info.multiprocessor_count == prop.multiProcessorCount);
    CHECK(info.pci_bus_id == bus_id);
    CHECK(info.uuid == runtime_uuid(d));
  }
}

TEST_CASE("free memory is what the device has free, not its total",
          "[01-device-enumeration][task:2][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int d = 0; d < count; ++d) {
    const Squeeze squeeze(d);
    CUDA_CHECK(cudaSetDevice(d));
    check_free_memory(describe_device(d), squeeze);
  }
}

TEST_CASE("free memory is read from the device it describes whatever device is current",
          "[01-device-enumeration][task:2][gpus:2][points:1]") {
  const int count = require_gpus(2);
  for (int d = 0; d < count; ++d) {
    const Squeeze squeeze(d);  // only device d has it: another device's free memory differs
    CUDA_CHECK(cudaSetDevice((d + 1) % count));
    check_free_memory(describe_device(d), squeeze);
  }
}

TEST_CASE("describing and selecting devices leave the caller's current device unchanged",
          "[01-device-enumeration][task:2][gpus:2][points:1]") {
  const int count = require_gpus(2);
  for (int current = 0; current < count; ++current) {
    for (int described = 0; described < count; ++described) {
      CUDA_CHECK(cudaSetDevice(current));
      (void)describe_device(described);
      const int after = current_device();
      INFO("device " << current << " was current; describe_device(" << described << ") left device " << after);
      CHECK(after == current);
    }
    CUDA_CHECK(cudaSetDevice(current));
    CHECK_THROWS_AS(describe_device(count), course::ApiError);
    (void)cudaGetLastError();
    INFO("device " << current << " was current; describe_device(" << count << "), which throws, left device "
                   << current_device());
    CHECK(current_device() == current);
    CUDA_CHECK(cudaSetDevice(current));
    (void)select_devices({});
    INFO("device " << current << " was current; select_devices({}) left device " << current_device());
    CHECK(current_device() == current);
  }
}

TEST_CASE("describing a device that does not exist throws course::ApiError",
          "[01-device-enumeration][task:2][gpus:1][points:1]") {
  // Only a missing ordinal throws: every real device is described (a describe_device that always
  // throws earns nothing here), the last one too, right next to the first that does not exist.
  const int count = require_gpus(1);
  for (int d = 0; d < count; ++d) {
    INFO("describe_device(" << d << ") of a device that exists");
    CHECK(describe_device(d).ordinal == d);
  }
  CHECK_THROWS_AS(describe_device(count), course::ApiError);
  CHECK_THROWS_AS(describe_device(-1), course::ApiError);
  (void)cudaGetLastError();
}
