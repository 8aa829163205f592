// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Probe: why cudaMemGetInfo's free memory is below its total (lesson 01), and what making a CUDA
// context costs (lesson 02, "Why a small multi-GPU job can be slower than one GPU"). For each
// GPU: nvidia-smi's total, reserved and used memory before this process has a context there, the
// time this process takes to make its (primary) context, nvidia-smi's used memory after that,
// cudaMemGetInfo's total and free, and how much free memory one more context (made with the
// driver API) takes away as cudaMemGetInfo sees it. cudaMemGetInfo cannot run before the
// program's first context exists, so its free memory never includes what that context holds.
// nvidia-smi's figures are in MiB (2^20 bytes), the runtime's are printed in MiB too.
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "probe.h"

namespace {

struct SmiMemory {
  bool known = false;
  double total = 0, reserved = -1, used = 0, free = 0;  // MiB; reserved -1 where nvidia-smi lacks the field
};

// nvidia-smi's memory figures for the GPU at `bus_id` (as cudaDeviceGetPCIBusId writes it).
SmiMemory nvidia_smi_memory(const char* bus_id) {
  unsigned want_domain = 0, want_bus = 0, want_device = 0, want_function = 0;
  std::sscanf(bus_id, "%x:%x:%x.%x", &want_domain, &want_bus, &want_device, &want_function);
  for (const bool with_reserved : {true, false}) {
    const std::string command = std::string("nvidia-smi --query-gpu=pci.bus_id,memory.total,") +
                                (with_reserved ? "memory.reserved," : "") +
                                "memory.used,memory.free --format=csv,noheader,nounits 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    if (!pipe) return {};
    char line[512];
    while (std::fgets(line, sizeof line, pipe.get())) {
      unsigned domain = 0, bus = 0, device = 0, function = 0;
      SmiMemory m;
      const int fields = with_reserved ? std::sscanf(line, "%x:%x:%x.%x, %lf, %lf, %lf, %lf", &domain, &bus, &device,
                                                     &function, &m.total, &m.reserved, &m.used, &m.free)
                                       : std::sscanf(line, "%x:%x:%x.%x, %lf, %lf, %lf", &domain, &bus, &device,
                                                     &function, &m.total, &m.used, &m.free);
      if (fields != (with_reserved ? 8 : 7)) continue;
      if (domain == want_domain && bus == want_bus && device == want_device && function == want_function) {
        m.known = true;
        return m;
      }
    }
  }
  return {};
}

double mib(std::size_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

void print_smi(const char* when, const SmiMemory& m) {
  if (!m.known) {
    std::printf("  nvidia-smi %s: not available\n", when);
    return;
  }
  std::printf("  nvidia-smi %s: total %.0f MiB, reserved %s MiB, used %.0f MiB, free %.0f MiB\n", when, m.total,
              m.reserved < 0 ? "(no such field)" : std::to_string(static_cast<long>(m.reserved)).c_str(), m.used,
              m.free);
}

// cudaMemGetInfo's free memory as seen from a second context on `device`, made and destroyed with
// the driver API (0 when that fails). The driver's functions are looked up through the runtime,
// in their CUDA 12.0 form, so the probe needs no -lcuda and builds with CUDA 12 and 13 alike.
std::size_t free_in_second_context(int ordinal) {
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using CtxCreate = CUresult (*)(CUcontext*, unsigned int, CUdevice);
  using MemGetInfo = CUresult (*)(std::size_t*, std::size_t*);
  using CtxDestroy = CUresult (*)(CUcontext);
  void *device_get = nullptr, *ctx_create = nullptr, *mem_get_info = nullptr, *ctx_destroy = nullptr;
  for (const auto& [name, pointer] :
       {std::pair{"cuDeviceGet", &device_get}, std::pair{"cuCtxCreate", &ctx_create},
        std::pair{"cuMemGetInfo", &mem_get_info}, std::pair{"cuCtxDestroy", &ctx_destroy}})
    if (cudaGetDriverEntryPointByVersion(name, pointer, 12000, cudaEnableDefault, nullptr) != cudaSuccess ||
        *pointer == nullptr) {
      (void)cudaGetLastError();
      return 0;
    }
  CUdevice device;
  CUcontext context;
  if (reinterpret_cast<DeviceGet>(device_get)(&device, ordinal) != CUDA_SUCCESS) return 0;
  if (reinterpret_cast<CtxCreate>(ctx_create)(&context, 0, device) != CUDA_SUCCESS) return 0;
  std::size_t free = 0, total = 0;
  const CUresult asked = reinterpret_cast<MemGetInfo>(mem_get_info)(&free, &total);  // the new context is current
  (void)reinterpret_cast<CtxDestroy>(ctx_destroy)(context);
  return asked == CUDA_SUCCESS ? free : 0;
}

}  // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  int count = 0;
  (void)cudaGetDeviceCount(&count);  // the runtime's and the driver's start-up; no context yet
  const double init_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  count = probe::print_header("context_memory");
  if (count < 1) {
    std::printf("needs 1 GPU, found 0: nothing measured\n");
    return 0;
  }
  std::printf("first runtime call (cudaGetDeviceCount, no context yet): %.1f ms\n", init_ms);
  for (int d = 0; d < count && d < 2; ++d) {
    char bus_id[32] = {};
    CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, d));
    std::printf("GPU %d (%s)\n", d, bus_id);
    const SmiMemory before = nvidia_smi_memory(bus_id);
    print_smi("before this process has a context on it", before);

    const auto made = std::chrono::steady_clock::now();
    CHECK(cudaSetDevice(d));
    CHECK(cudaFree(nullptr));  // the context exists once this returns
    const double context_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - made).count();
    std::size_t free = 0, total = 0;
    CHECK(cudaMemGetInfo(&free, &total));
    const SmiMemory after = nvidia_smi_memory(bus_id);
    print_smi("after it made its context", after);
    std::printf("  making the context (cudaSetDevice + cudaFree(nullptr)): %.1f ms\n", context_ms);
    std::printf("  cudaMemGetInfo: total %.0f MiB, free %.0f MiB, total - free %.0f MiB\n", mib(total), mib(free),
                mib(total - free));
    if (before.known && after.known)
      std::printf("  nvidia-smi used, after - before: %.0f MiB; nvidia-smi total - runtime total: %.0f MiB\n",
                  after.used - before.used, before.total - mib(total));

    const std::size_t second_free = free_in_second_context(d);
    CHECK(cudaSetDevice(d));
    if (second_free > 0)
      std::printf("  one more context takes %.0f MiB of cudaMemGetInfo's free memory\n", mib(free) - mib(second_free));
    else
      std::printf("  one more context: not measured (the driver API calls were not available)\n");
  }
  if (count > 2) std::printf("(GPUs 2 and up not measured)\n");
  return 0;
}
