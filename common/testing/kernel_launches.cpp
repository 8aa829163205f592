// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Every kernel launch of a program that uses WatchedLaunches, watched (launch_devices.h says why):
// the definitions below are the runtime's launch entry points. nvcc's <<<...>>> calls
// __cudaLaunchKernel (CUDA 13) or cudaLaunchKernel (CUDA 12); a launch by hand calls
// cudaLaunchKernel or cudaLaunchKernelExC; the _ptsz forms are the same with a per-thread default
// stream. Each notes the launch in the record of the WatchedLaunches alive, if any, then passes it
// on to libcudart's own definition.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "launch_devices.h"

namespace {

std::atomic<course::testing::LaunchDevices*> watched{nullptr};

void note(cudaStream_t stream) {
  course::testing::LaunchDevices* record = watched.load();
  if (record == nullptr) return;
  try {
    record->note("a kernel launch", stream);
  } catch (const std::exception&) {  // an invalid stream: the launch itself reports it
  }
}

// libcudart's definition of `name`: the next one after this program's.
template <class Function>
Function libcudart(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "kernel_launches: %s is not in libcudart\n", name);
    std::abort();
  }
  return reinterpret_cast<Function>(symbol);
}

using LaunchByHandle = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, std::size_t, cudaStream_t);
using LaunchByFunction = cudaError_t (*)(const void*, dim3, dim3, void**, std::size_t, cudaStream_t);
using LaunchByConfig = cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**);

}  // namespace

namespace course::testing {

WatchedLaunches::WatchedLaunches(LaunchDevices& record) {
  LaunchDevices* none = nullptr;
  if (!watched.compare_exchange_strong(none, &record))
    throw std::logic_error("WatchedLaunches: another one is alive; watch one call at a time");
}

WatchedLaunches::~WatchedLaunches() {
  watched = nullptr;
}

}  // namespace course::testing

extern "C" {

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, std::size_t shared,
                                         cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                              std::size_t shared, cudaStream_t stream);
cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void* function, dim3 grid, dim3 block, void** args,
                                            std::size_t shared, cudaStream_t stream);
cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* function, void** args);

cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, std::size_t shared,
                                         cudaStream_t stream) {
  static const auto launch = libcudart<LaunchByHandle>("__cudaLaunchKernel");
  note(stream);
  return launch(kernel, grid, block, args, shared, stream);
}

cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                              std::size_t shared, cudaStream_t stream) {
  static const auto launch = libcudart<LaunchByHandle>("__cudaLaunchKernel_ptsz");
  note(stream);
  return launch(kernel, grid, block, args, shared, stream);
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, std::size_t shared,
                                       cudaStream_t stream) {
  static const auto launch = libcudart<LaunchByFunction>("cudaLaunchKernel");
  note(stream);
  return launch(function, grid, block, args, shared, stream);
}

cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void* function, dim3 grid, dim3 block, void** args,
                                            std::size_t shared, cudaStream_t stream) {
  static const auto launch = libcudart<LaunchByFunction>("cudaLaunchKernel_ptsz");
  note(stream);
  return launch(function, grid, block, args, shared, stream);
}

cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function, void** args) {
  static const auto launch = libcudart<LaunchByConfig>("cudaLaunchKernelExC");
  if (config != nullptr) note(config->stream);
  return launch(config, function, args);
}

cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* function, void** args) {
  static const auto launch = libcudart<LaunchByConfig>("cudaLaunchKernelExC_ptsz");
  if (config != nullptr) note(config->stream);
  return launch(config, function, args);
}

}  // extern "C"
