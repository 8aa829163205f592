// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Placement calls for managed (unified) memory that read the same on every toolkit the course
// supports. CUDA 13 changed cudaMemAdvise and cudaMemPrefetchAsync to take a cudaMemLocation (a
// device, the host, a host NUMA node) instead of an int device; CUDA 12 keeps the int in the
// plain names and calls the new forms cudaMemAdvise_v2 and cudaMemPrefetchAsync_v2. These wrappers
// take a device ordinal (or cudaCpuDeviceId for host memory) and call whichever the toolkit has.
// They return the runtime's error code: wrap them in CUDA_CHECK like any runtime call.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace course {

// The cudaMemLocation of a device ordinal, or of host memory for cudaCpuDeviceId.
inline cudaMemLocation memory_location(int device) {
  cudaMemLocation where{};
  where.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  where.id = device == cudaCpuDeviceId ? 0 : device;
  return where;
}

// cudaMemAdvise(ptr, bytes, advice, location of `device`). For cudaMemAdviseSetReadMostly the
// device is ignored.
inline cudaError_t mem_advise(const void* ptr, std::size_t bytes, cudaMemoryAdvise advice, int device) {
#if CUDART_VERSION >= 13000
  return cudaMemAdvise(ptr, bytes, advice, memory_location(device));
#else
  return cudaMemAdvise_v2(ptr, bytes, advice, memory_location(device));
#endif
}

// cudaMemPrefetchAsync(ptr, bytes, location of `device`, 0, stream): enqueues the migration of
// the range's pages to `device` on `stream`.
inline cudaError_t mem_prefetch_async(const void* ptr, std::size_t bytes, int device, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  return cudaMemPrefetchAsync(ptr, bytes, memory_location(device), 0, stream);
#else
  return cudaMemPrefetchAsync_v2(ptr, bytes, memory_location(device), 0, stream);
#endif
}

}  // namespace course
