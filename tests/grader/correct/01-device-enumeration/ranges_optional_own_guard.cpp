// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Correct-but-different lesson 01 file (tests/grader/correct/README.md): must earn full marks.
// Idioms: a device guard of the student's own (RAII, restores on every way out), std::optional for
// the count, select_devices with std::views::iota and std::views::filter, structured bindings,
// std::pair comparison of (major, minor).
#include <cuda_runtime.h>

#include <cstdio>
#include <iomanip>
#include <optional>
#include <ranges>
#include <utility>

#include "common/check.h"
#include "common/not_implemented.h"
#include "device_enumeration.h"

namespace lesson01 {

namespace {

// Makes a device current for a scope and gives the caller's back, also when an exception leaves.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    CUDA_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() { (void)cudaSetDevice(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

// The count, or nothing when the machine has no driver or no visible GPU.
std::optional<int> visible_devices() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  CUDA_CHECK(error);
  return count;
}

}  // namespace

int count_devices() {
  // Task 1: no driver and no device are answers ("0 GPUs"), not failures.
  return visible_devices().value_or(0);
}

DeviceInfo describe_device(int ordinal) {
  // Task 2: properties need no current device, but cudaMemGetInfo reports on the current one.
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.total_memory = prop.totalGlobalMem;
  info.multiprocessor_count = prop.multiProcessorCount;

  char bus_id[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal));
  info.pci_bus_id = bus_id;

  char uuid[64] = {};
  const auto* b = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  info.uuid = uuid;

  const CurrentDevice on_device(ordinal);  // restores the caller's device on every way out
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  info.free_memory = free_bytes;
  return info;
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  // Task 3: ordinals in ascending order; the lowest ones win when there are too many.
  const auto meets = [&criteria](int d) {
    const DeviceInfo info = describe_device(d);
    const auto [major, minor] = std::pair{info.major, info.minor};
    return std::pair{major, minor} >= std::pair{criteria.min_major, criteria.min_minor} &&
           info.free_memory >= criteria.min_free_memory;
  };
  std::vector<int> selected;
  if (criteria.max_devices <= 0) return selected;
  for (const int d : std::views::iota(0, count_devices()) | std::views::filter(meets)) {
    selected.push_back(d);
    if (static_cast<int>(selected.size()) == criteria.max_devices) break;
  }
  return selected;
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  // Task 4: fixed-width columns; GB = 10^9 bytes, as memory datasheets count.
  out << std::left << std::setw(4) << "GPU" << std::setw(26) << "name" << std::setw(5) << "cc" << std::right
      << std::setw(10) << "total GB" << std::setw(10) << "free GB" << std::setw(6) << "SMs"
      << "  " << std::left << std::setw(14) << "PCI bus id"
      << "UUID\n";
  for (const DeviceInfo& d : devices) {
    out << std::left << std::setw(4) << d.ordinal << std::setw(26) << d.name << std::setw(5)
        << (std::to_string(d.major) + "." + std::to_string(d.minor)) << std::right << std::fixed << std::setprecision(1)
        << std::setw(10) << d.total_memory / 1e9 << std::setw(10) << d.free_memory / 1e9 << std::setw(6)
        << d.multiprocessor_count << "  " << std::left << std::setw(14) << d.pci_bus_id << d.uuid << '\n';
  }
}

}  // namespace lesson01
