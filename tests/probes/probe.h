// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What every probe shares: a check that stops the probe with the failing call, the header every
// probe prints first (the CUDA runtime and driver versions, the kernel module's version and each
// GPU's name and PCI bus id), and a median. Probes use nothing else of the course, so that each
// one builds with nvcc alone (tests/probes/run.sh).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CHECK(call)                                                                                       \
  do {                                                                                                    \
    const cudaError_t check_error = (call);                                                               \
    if (check_error != cudaSuccess) {                                                                     \
      std::printf("FAILED: %s at %s:%d: %s\n", #call, __FILE__, __LINE__, cudaGetErrorName(check_error)); \
      std::exit(1);                                                                                       \
    }                                                                                                     \
  } while (0)

namespace probe {

// The NVIDIA kernel module's version (the "driver 580" of the lessons), as the Linux driver reports it.
inline std::string kernel_module_version() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line, word;
  std::getline(file, line);
  const auto module = line.find("Module");
  std::istringstream words(module == std::string::npos ? line : line.substr(module));
  while (words >> word)
    if (word[0] >= '0' && word[0] <= '9' && word.find('.') != std::string::npos) return word;
  return "unknown";
}

// Prints the probe's name, the versions and one line per visible GPU; returns the GPU count (0
// without a driver or a GPU).
inline int print_header(const char* name) {
  int runtime = 0, driver = 0, count = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  std::printf("probe: %s\n", name);
  std::printf("CUDA runtime %d.%d, driver API %d.%d, kernel module %s\n", runtime / 1000, runtime % 1000 / 10,
              driver / 1000, driver % 1000 / 10, kernel_module_version().c_str());
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    std::printf("no GPU (%s)\n", cudaGetErrorName(error));
    return 0;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    char bus_id[32] = {};
    CHECK(cudaGetDeviceProperties(&prop, d));
    CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, d));
    std::printf("GPU %d: %s, %s\n", d, prop.name, bus_id);
  }
  return count;
}

// The name of what a call returned; an error is also cleared from the runtime's last-error slot.
inline const char* outcome(cudaError_t error) {
  (void)cudaGetLastError();
  return cudaGetErrorName(error);
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

}  // namespace probe
