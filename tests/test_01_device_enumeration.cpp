// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01 tests. Every expectation is cross-checked against the CUDA runtime itself, never
// against constants, so they hold on any machine. Two cases run this program again as a child
// process with another CUDA_VISIBLE_DEVICES, to see what the student's code sees there.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/workers.h"
#include "device_enumeration.h"

using namespace lesson01;
using course::testing::current_device;
using course::testing::nonempty_lines;
using course::testing::require_gpus;

namespace {

// The UUID as nvidia-smi prints it, formatted here independently of the student's code.
std::string runtime_uuid(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::ostringstream out;
  out << "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out << '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
    out << hex;
  }
  return out.str();
}

// What the child case reports, one fact per line: "count N", "last_error NAME", "device ORDINAL UUID",
// or "threw MESSAGE".
struct ChildView {
  int count = -1;
  std::string last_error;
  std::vector<std::string> uuids;
  std::string threw;
};

ChildView parse_child(const std::string& text) {
  ChildView view;
  std::istringstream in(text);
  std::string key;
  while (in >> key) {
    if (key == "count") {
      in >> view.count;
    } else if (key == "last_error") {
      in >> view.last_error;
    } else if (key == "device") {
      int ordinal = 0;
      std::string uuid;
      in >> ordinal >> uuid;
      view.uuids.push_back(uuid);
    } else if (key == "threw") {
      std::getline(in, view.threw);
    }
  }
  return view;
}

// `parent_ordinals`: this process's ordinals of the GPUs the mask shows (see devices.h).
ChildView run_child_with_visible_devices(const std::string& visible, const std::vector<int>& parent_ordinals) {
  return parse_child(
      course::testing::run_child_under_device_mask("child: report the visible devices", visible, parent_ordinals));
}

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

// Not a graded case: the body of the child process started by the cases below.
TEST_CASE("child: report the visible devices", "[.child]") {
  std::ostringstream report;
  try {
    const int count = count_devices();
    report << "count " << count << '\n';
    report << "last_error " << cudaGetErrorName(cudaGetLastError()) << '\n';
    if (count > 0) {
      for (int ordinal : select_devices({}))
        report << "device " << ordinal << ' ' << describe_device(ordinal).uuid << '\n';
    }
  } catch (const std::exception& e) {
    report << "threw " << e.what() << '\n';
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
  INFO("the student's code threw: " << view.threw);
  REQUIRE(view.threw.empty());
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

TEST_CASE("describing a device leaves the caller's current device unchanged",
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
  }
}

TEST_CASE("describing a device that does not exist throws course::ApiError",
          "[01-device-enumeration][task:2][gpus:0][points:1]") {
  const int count = course::testing::gpu_count();
  CHECK_THROWS_AS(describe_device(count), course::ApiError);
  CHECK_THROWS_AS(describe_device(-1), course::ApiError);
  (void)cudaGetLastError();
}

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("with no criteria every device is selected in ordinal order",
          "[01-device-enumeration][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  CHECK(select_devices({}) == course::testing::all_gpus(count));
}

TEST_CASE("the selection keeps at most max_devices devices", "[01-device-enumeration][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  for (int k = 0; k <= count + 1; ++k) {
    SelectionCriteria criteria;
    criteria.max_devices = k;
    INFO("max_devices = " << k << " on " << count << " GPUs");
    CHECK(select_devices(criteria) == course::testing::all_gpus(std::min(k, count)));
  }
}

TEST_CASE("the compute capability threshold compares major then minor",
          "[01-device-enumeration][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  std::vector<cudaDeviceProp> props(count);
  for (int d = 0; d < count; ++d) CUDA_CHECK(cudaGetDeviceProperties(&props[d], d));
  const auto expected_for = [&](int major, int minor) {
    std::vector<int> keep;
    for (int d = 0; d < count; ++d)
      if (props[d].major > major || (props[d].major == major && props[d].minor >= minor)) keep.push_back(d);
    return keep;
  };
  // Device 0's own capability (inclusive), one minor above it, the next major, and an older major
  // with a larger minor (9.0 meets 8.9: a field-by-field comparison says it does not).
  const int major0 = props[0].major, minor0 = props[0].minor;
  for (const auto& [major, minor] : std::vector<std::pair<int, int>>{
           {major0, minor0}, {major0, minor0 + 1}, {major0 + 1, 0}, {major0 - 1, minor0 + 1}, {major0 - 1, 9}}) {
    SelectionCriteria criteria;
    criteria.min_major = major;
    criteria.min_minor = minor;
    INFO("minimum compute capability " << major << '.' << minor << "; device 0 has " << props[0].major << '.'
                                       << props[0].minor);
    CHECK(select_devices(criteria) == expected_for(major, minor));
  }
}

TEST_CASE("the free-memory threshold filters devices", "[01-device-enumeration][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  SelectionCriteria some;
  some.min_free_memory = 1;
  CHECK(select_devices(some) == course::testing::all_gpus(count));
  SelectionCriteria impossible;
  impossible.min_free_memory = describe_device(0).total_memory + 1;  // more than any device can have free
  for (int d = 1; d < count; ++d)
    impossible.min_free_memory = std::max(impossible.min_free_memory, describe_device(d).total_memory + 1);
  CHECK(select_devices(impossible).empty());
}

TEST_CASE("the runtime ordinals follow CUDA_VISIBLE_DEVICES", "[01-device-enumeration][task:3][gpus:2][points:2]") {
  require_gpus(2);
  // UUIDs name physical GPUs whatever this process's own CUDA_VISIBLE_DEVICES is.
  const std::string first = runtime_uuid(0), second = runtime_uuid(1);

  const ChildView reversed = run_child_with_visible_devices(second + "," + first, {1, 0});
  INFO("the student's code threw: " << reversed.threw);
  REQUIRE(reversed.threw.empty());
  CHECK(reversed.count == 2);
  CHECK(reversed.uuids == std::vector<std::string>{second, first});

  const ChildView only_second = run_child_with_visible_devices(second, {1});
  CHECK(only_second.count == 1);
  CHECK(only_second.uuids == std::vector<std::string>{second});
}

// ---- Task 4 ---------------------------------------------------------------------------------

TEST_CASE("the device table shows every field of made-up devices",
          "[01-device-enumeration][task:4][gpus:0][points:1]") {
  DeviceInfo a{0,   "Imaginary GPU A",  9,
               0,   141'000'000'000ull, 1'500'000'000ull,
               132, "0000:19:00.0",     "GPU-00112233-4455-6677-8899-aabbccddeeff"};
  DeviceInfo b{1,  "Imaginary GPU B", 12,
               1,  24'000'000'000ull, 23'950'000'000ull,
               48, "0000:3b:00.0",    "GPU-ffeeddcc-bbaa-9988-7766-554433221100"};
  std::ostringstream out;
  print_device_table(out, {a, b});
  const auto lines = nonempty_lines(out.str());
  INFO("the table:\n" << out.str());
  REQUIRE(lines.size() == 3);
  for (const auto& [line, expected] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {lines[1], {"Imaginary GPU A", "9.0", "141.0", "1.5", "132", "0000:19:00.0", a.uuid}},
           {lines[2], {"Imaginary GPU B", "12.1", "24.0", "24.0", "48", "0000:3b:00.0", b.uuid}}}) {
    for (const std::string& field : expected) {
      INFO("looking for \"" << field << "\" in: " << line);
      CHECK(line.find(field) != std::string::npos);
    }
  }
}

TEST_CASE("the device table has one line per real device", "[01-device-enumeration][task:4][gpus:1][points:1]") {
  const int count = require_gpus(1);
  std::vector<DeviceInfo> devices;
  for (int d = 0; d < count; ++d) devices.push_back(describe_device(d));
  std::ostringstream out;
  print_device_table(out, devices);
  const auto lines = nonempty_lines(out.str());
  INFO("the table:\n" << out.str());
  REQUIRE(lines.size() == static_cast<std::size_t>(count) + 1);
  for (int d = 0; d < count; ++d) {
    CHECK(lines[d + 1].find(devices[d].pci_bus_id) != std::string::npos);
    CHECK(lines[d + 1].find(devices[d].name) != std::string::npos);
  }
}
