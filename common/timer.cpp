// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Event timing, and the median/minimum summary every benchmark prints.
#include "timer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace course {

float EventTimer::elapsed_ms() const {
  stop_.synchronize();
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}

Timing summarize(std::vector<double> samples_ms) {
  Timing t;
  t.repeats = static_cast<int>(samples_ms.size());
  if (samples_ms.empty()) return t;
  std::sort(samples_ms.begin(), samples_ms.end());
  const std::size_t n = samples_ms.size();
  t.median_ms = n % 2 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  t.min_ms = samples_ms.front();
  return t;
}

Timing measure(int device, cudaStream_t stream, const std::function<void()>& work, int warmup, int repeats) {
  DeviceGuard guard(device);
  for (int i = 0; i < warmup; ++i) work();
  EventTimer timer(device);
  std::vector<double> samples;
  samples.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    timer.start(stream);
    work();
    timer.stop(stream);
    samples.push_back(timer.elapsed_ms());
  }
  return summarize(std::move(samples));
}

Timing measure_host(const std::function<void()>& work, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> samples;
  samples.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    work();
    const auto end = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::milli>(end - begin).count());
  }
  return summarize(std::move(samples));
}

double seconds_per_call(const std::function<void()>& enqueue, const std::function<void()>& wait, int warmup,
                        int iterations) {
  for (int i = 0; i < warmup; ++i) enqueue();
  wait();
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) enqueue();
  wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() / iterations;
}

std::string size_label(std::size_t bytes) {
  constexpr std::size_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  char text[32];
  if (bytes >= kGiB)
    std::snprintf(text, sizeof text, "%zu GiB", bytes / kGiB);
  else if (bytes >= kMiB)
    std::snprintf(text, sizeof text, "%zu MiB", bytes / kMiB);
  else if (bytes >= kKiB)
    std::snprintf(text, sizeof text, "%zu KiB", bytes / kKiB);
  else
    std::snprintf(text, sizeof text, "%zu B", bytes);
  return text;
}

}  // namespace course
