// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Device facts for the tests: pointer placement, peer access on and off, children under a mask.
#include "devices.h"

#include <cuda.h>  // types of the driver entry point below; the driver library itself is not linked

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <sstream>

#include "../buffers.h"
#include "../check.h"
#include "../device_guard.h"
#include "../timer.h"

namespace course::testing {

std::string Placement::describe() const {
  if (error != cudaSuccess) return std::string("an error from cudaPointerGetAttributes: ") + cudaGetErrorName(error);
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered host memory (or no allocation at all)";
    case cudaMemoryTypeHost:
      return "pinned host memory";
    case cudaMemoryTypeDevice:
      return "device memory of GPU " + std::to_string(device);
    case cudaMemoryTypeManaged:
      return "managed memory";
  }
  return "memory of an unknown type";
}

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

int stream_device(cudaStream_t stream) {
  int device = -1;
  CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

void fill_device(float* device_ptr, int device, std::size_t n, float value) {
  if (n == 0) return;
  const std::vector<float> seed(std::min<std::size_t>(n, std::size_t{1} << 20), value);
  upload<float>(device_ptr, device, seed);
  const DeviceGuard on(device);
  for (std::size_t filled = seed.size(); filled < n; filled *= 2) {
    const std::size_t count = std::min(filled, n - filled);
    CUDA_CHECK(cudaMemcpy(device_ptr + filled, device_ptr, count * sizeof(float), cudaMemcpyDeviceToDevice));
  }
  // A device-to-device cudaMemcpy may return before its copy ends, and non-blocking streams do not
  // wait for the legacy stream it ran on: wait here, so the fill is done when this returns.
  CUDA_CHECK(cudaDeviceSynchronize());
}

void call_keeps_device(int device, const std::string& what, std::chrono::seconds limit, const std::string& hint,
                       const std::function<void()>& call) {
  CUDA_CHECK(cudaSetDevice(device));
  run_with_watchdog(what, limit, hint, call);
  INFO(what << " left device " << current_device() << " current; the caller had device " << device);
  CHECK(current_device() == device);
}

bool runtime_can_access(int device, int peer) {
  int can_access = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, device, peer));
  return can_access != 0;
}

std::vector<std::pair<int, int>> pairs_with_peer_access(int count) {
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b)
      if (a != b && runtime_can_access(a, b) && runtime_can_access(b, a)) pairs.emplace_back(a, b);
  return pairs;
}

std::vector<std::vector<bool>> set_peer_access_by_runtime(bool on) {
  const int count = gpu_count();
  std::vector<std::vector<bool>> enabled(count, std::vector<bool>(count, false));
  for (int device = 0; device < count; ++device) {
    DeviceGuard guard(device);
    for (int peer = 0; peer < count; ++peer) {
      if (peer == device || !runtime_can_access(device, peer)) continue;
      const cudaError_t error = on ? cudaDeviceEnablePeerAccess(peer, 0) : cudaDeviceDisablePeerAccess(peer);
      (void)cudaGetLastError();
      if (error != cudaErrorPeerAccessAlreadyEnabled && error != cudaErrorPeerAccessNotEnabled) CUDA_CHECK(error);
      enabled[device][peer] = on;
    }
  }
  return enabled;
}

cudaError_t enable_again(int device, int peer) {
  DeviceGuard guard(device);
  const cudaError_t error = cudaDeviceEnablePeerAccess(peer, 0);
  (void)cudaGetLastError();
  return error;
}

cudaError_t disable_again(int device, int peer) {
  DeviceGuard guard(device);
  const cudaError_t error = cudaDeviceDisablePeerAccess(peer);
  (void)cudaGetLastError();
  return error;
}

double reference_one_way(int src_device, int dst_device, std::size_t bytes) {
  const DeviceBuffer<std::uint8_t> src(src_device, bytes);
  const DeviceBuffer<std::uint8_t> dst(dst_device, bytes);
  const Stream stream(src_device);
  const Timing timing = measure(
      src_device, stream,
      [&] { CUDA_CHECK(cudaMemcpyPeerAsync(dst.data(), dst_device, src.data(), src_device, bytes, stream)); }, 2, 10);
  return gigabytes_per_second(static_cast<double>(bytes), timing.median_ms);
}

void require_fast_link(int a, int b, std::size_t bytes) {
  if (!runtime_can_access(a, b) || !runtime_can_access(b, a))
    SKIP("needs 2 GPUs with peer access between them; GPU " << a << " and GPU " << b
                                                            << " cannot access each other's memory");
  (void)set_peer_access_by_runtime(true);
  const double gbps = reference_one_way(a, b, bytes);
  if (gbps < kFastLinkGigabytesPerSecond)
    SKIP("needs 2 GPUs joined by an NVLink-class link (faster than "
         << kFastLinkGigabytesPerSecond << " GB/s, more than PCIe carries); GPU " << a << " -> GPU " << b << " runs at "
         << gbps << " GB/s");
}

namespace {

// Whether this process holds the primary context of `device`: asked through the driver's
// entry point (cuDevicePrimaryCtxGetState), since the runtime has no such question. When the
// driver cannot be asked, the answer is "yes", the cautious one.
bool holds_context(int device) {
  void* get_state = nullptr;
  void* get_device = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &get_state, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess ||
      cudaGetDriverEntryPointByVersion("cuDeviceGet", &get_device, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  CUdevice handle = 0;
  if (reinterpret_cast<CUresult (*)(CUdevice*, int)>(get_device)(&handle, device) != CUDA_SUCCESS) return true;
  unsigned int flags = 0;
  int active = 1;
  if (reinterpret_cast<CUresult (*)(CUdevice, unsigned int*, int*)>(get_state)(handle, &flags, &active) != CUDA_SUCCESS)
    return true;
  return active != 0;
}

}  // namespace

std::string run_child_under_device_mask(const std::string& case_name, const std::string& mask,
                                        const std::vector<int>& parent_ordinals) {
  for (const int device : parent_ordinals) {
    int mode = cudaComputeModeDefault;
    CUDA_CHECK(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device));
    if (mode == cudaComputeModeProhibited)
      SKIP("GPU " << device << " is in PROHIBITED compute mode: no process may use it");
    if (mode == cudaComputeModeExclusiveProcess && holds_context(device))
      SKIP("GPU " << device
                  << " is in EXCLUSIVE_PROCESS compute mode and this test program already holds it, so a "
                     "child process cannot use it; run this case alone (the grader does), or in DEFAULT compute mode");
  }
  const ChildResult child = run_child_case(case_name, {{"CUDA_VISIBLE_DEVICES", mask}});
  INFO("child process with CUDA_VISIBLE_DEVICES=" << mask << " exited with " << child.exit_code << "; its log:\n"
                                                  << child.log);
  REQUIRE(!child.output.empty());
  return child.output;
}

}  // namespace course::testing
