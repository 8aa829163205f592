// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01 tests of tasks 3 and 4: selecting the devices for a job and printing the device table.
// The selections are cross-checked against the CUDA runtime's own properties, so they hold on any
// machine; one case runs this program again as a child process under a reordering
// CUDA_VISIBLE_DEVICES (the child's body is in test_01_device_enumeration.cpp). The table is
// checked on made-up devices first, then on the real ones.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/testing/gpu_test.h"
#include "common/testing/workers.h"
#include "device_enumeration.h"
#include "test_01_device_enumeration_support.h"

using namespace lesson01;
using namespace lesson01_tests;
using course::testing::nonempty_lines;
using course::testing::require_gpus;

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

TEST_CASE("with no GPU visible the selection is empty and nothing throws",
          "[01-device-enumeration][task:3][gpus:0][points:1]") {
  // The child process of the count's case (CUDA_VISIBLE_DEVICES=-1): select_devices must reach the
  // same answer as count_devices, "no GPU", not an exception from a call that needs one.
  const ChildView view = run_child_with_visible_devices("-1", {});
  if (!view.select_threw.empty())
    FAIL(view.select_threw << " (thrown by select_devices({}) with no GPU visible: count the devices as "
                              "count_devices() does, where \"no device\" is the answer 0)");
  CHECK(view.selected == 0);
}

TEST_CASE("the selection follows a CUDA_VISIBLE_DEVICES mask that shows one GPU or none",
          "[01-device-enumeration][task:3][gpus:1][points:1]") {
  const int count = require_gpus(1);
  // UUIDs name physical GPUs whatever this process's own CUDA_VISIBLE_DEVICES is.
  const std::string first = runtime_uuid(0);

  {
    const ChildView only_first = run_child_with_visible_devices(first, {0});
    INFO("child process with CUDA_VISIBLE_DEVICES=" << first << " (GPU 0 of this process, by UUID)");
    INFO("the student's code threw: " << only_first.threw << only_first.select_threw);
    REQUIRE(only_first.threw.empty());
    REQUIRE(only_first.select_threw.empty());
    CHECK(only_first.count == 1);
    CHECK(only_first.uuids == std::vector<std::string>{first});
  }

  // A UUID no GPU has (GPU 0's with every hex digit d replaced by 15 - d). CUDA shows the GPUs
  // listed before the first entry that names none, so none here, while nvidia-smi (NVML) still
  // lists every GPU of the machine. (An ordinal would name a GPU hidden by this process's own mask.)
  std::string none = first;
  for (std::size_t i = 4; i < none.size(); ++i)
    if (none[i] != '-') none[i] = "fedcba9876543210"[std::stoi(std::string(1, none[i]), nullptr, 16)];
  for (int d = 0; d < count; ++d) REQUIRE(none != runtime_uuid(d));
  {
    const ChildView nothing = run_child_with_visible_devices(none, {});
    INFO("child process with CUDA_VISIBLE_DEVICES=" << none << ", a UUID no GPU has: no GPU visible");
    INFO("the student's code threw: " << nothing.threw << nothing.select_threw);
    REQUIRE(nothing.threw.empty());
    REQUIRE(nothing.select_threw.empty());
    CHECK(nothing.count == 0);
    CHECK(nothing.selected == 0);
  }
}

TEST_CASE("the runtime ordinals follow the order of CUDA_VISIBLE_DEVICES",
          "[01-device-enumeration][task:3][gpus:2][points:1]") {
  require_gpus(2);
  const std::string first = runtime_uuid(0), second = runtime_uuid(1);

  const ChildView reversed = run_child_with_visible_devices(second + "," + first, {1, 0});
  INFO("the student's code threw: " << reversed.threw << reversed.select_threw);
  REQUIRE(reversed.threw.empty());
  REQUIRE(reversed.select_threw.empty());
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
