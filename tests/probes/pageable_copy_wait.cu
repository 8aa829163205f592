// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Probe: while one thread waits inside a copy into pageable memory (its stream is busy, so the
// copy returns only when the stream reaches it), do other threads' copies wait too (lesson 04,
// task 2, and split_reduction.h)? The API synchronization page documents the first half only;
// the second is what the course saw in its tests. Here a "holder" thread starts a 400 ms kernel
// on its stream and then waits, either in cudaStreamSynchronize or in a 4-byte copy into
// pageable memory on that stream; 50 ms later a "watcher" (the main thread, its own idle stream)
// makes one 4-byte copy and waits for its own stream. The watcher's time says whether its copy
// waited for the holder's stream: a few microseconds if not, about 350 ms if it did.
#include <atomic>
#include <chrono>
#include <thread>

#include "probe.h"

namespace {

constexpr double kHoldMs = 400;
constexpr double kWatchAfterMs = 50;

__device__ unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void spin(unsigned long long duration_ns) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < duration_ns) {
  }
}

enum class Wait { synchronize, pageable_copy };
enum class Copy { to_pageable, to_pinned, from_pageable };

const char* to_string(Wait wait) {
  return wait == Wait::synchronize ? "cudaStreamSynchronize" : "a copy into pageable memory";
}
const char* to_string(Copy copy) {
  switch (copy) {
    case Copy::to_pageable:
      return "device -> pageable";
    case Copy::to_pinned:
      return "device -> pinned";
    case Copy::from_pageable:
      return "pageable -> device";
  }
  return "?";
}

struct Gpu {
  cudaStream_t stream;
  int* memory;
};

Gpu make_gpu(int device) {
  CHECK(cudaSetDevice(device));
  Gpu gpu{};
  CHECK(cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&gpu.memory, 16));
  CHECK(cudaMemset(gpu.memory, 0, 16));
  spin<<<1, 1, 0, gpu.stream>>>(1000);  // loads the kernel before anything is timed
  CHECK(cudaStreamSynchronize(gpu.stream));
  CHECK(cudaDeviceSynchronize());
  return gpu;
}

// The watcher's copy on its own stream, then a wait for that stream.
void watcher_copy(int device, const Gpu& gpu, Copy copy, int* pageable, int* pinned) {
  CHECK(cudaSetDevice(device));
  if (copy == Copy::to_pageable) CHECK(cudaMemcpyAsync(pageable, gpu.memory, 4, cudaMemcpyDeviceToHost, gpu.stream));
  if (copy == Copy::to_pinned) CHECK(cudaMemcpyAsync(pinned, gpu.memory, 4, cudaMemcpyDeviceToHost, gpu.stream));
  if (copy == Copy::from_pageable) CHECK(cudaMemcpyAsync(gpu.memory, pageable, 4, cudaMemcpyHostToDevice, gpu.stream));
  CHECK(cudaStreamSynchronize(gpu.stream));
}

}  // namespace

int main() {
  const int count = probe::print_header("pageable_copy_wait");
  if (count < 1) {
    std::printf("needs 1 GPU, found 0: nothing measured\n");
    return 0;
  }
  const int watcher_devices = count >= 2 ? 2 : 1;
  std::vector<Gpu> holder{make_gpu(0)};
  std::vector<Gpu> watcher;
  for (int d = 0; d < watcher_devices; ++d) watcher.push_back(make_gpu(d));
  static int holder_pageable[4], watcher_pageable[4];
  int* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, 16));
  for (int d = 0; d < watcher_devices; ++d)  // first use of each kind of copy, untimed
    for (const Copy copy : {Copy::to_pageable, Copy::to_pinned, Copy::from_pageable})
      watcher_copy(d, watcher[d], copy, watcher_pageable, pinned);

  std::printf("holder: GPU 0, a %.0f ms kernel, then waits; watcher: %.0f ms later, another thread's copy of 4 bytes\n",
              kHoldMs, kWatchAfterMs);
  for (int d = 0; d < watcher_devices; ++d) {
    for (const Wait wait : {Wait::synchronize, Wait::pageable_copy}) {
      for (const Copy copy : {Copy::to_pageable, Copy::to_pinned, Copy::from_pageable}) {
        std::atomic<bool> waiting{false};
        double holder_ms = 0;
        std::thread holding([&] {
          CHECK(cudaSetDevice(0));
          const auto start = std::chrono::steady_clock::now();
          spin<<<1, 1, 0, holder[0].stream>>>(static_cast<unsigned long long>(kHoldMs * 1e6));
          CHECK(cudaGetLastError());
          waiting = true;
          if (wait == Wait::synchronize) CHECK(cudaStreamSynchronize(holder[0].stream));
          if (wait == Wait::pageable_copy)
            CHECK(cudaMemcpyAsync(holder_pageable, holder[0].memory, 4, cudaMemcpyDeviceToHost, holder[0].stream));
          holder_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        });
        while (!waiting) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kWatchAfterMs));
        const auto start = std::chrono::steady_clock::now();
        watcher_copy(d, watcher[d], copy, watcher_pageable, pinned);
        const double watcher_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        holding.join();
        CHECK(cudaSetDevice(0));
        CHECK(cudaStreamSynchronize(holder[0].stream));
        std::printf("holder waits in %s; watcher on GPU %d, %s: %.3f ms (holder returned after %.0f ms)\n",
                    to_string(wait), d, to_string(copy), watcher_ms, holder_ms);
      }
    }
  }
  CHECK(cudaFreeHost(pinned));
  return 0;
}
