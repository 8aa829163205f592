// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 demo: spreads a buffer over the workers (one per GPU; four sharing GPU 0 on a one-GPU
// machine) with your allocate_slices and scales it with your scale_slices, then times the spin
// kernel (20 ms per worker) on one worker at a time and on all of them together, from one thread
// (run_on_all_devices) and from one thread per worker
// (run_one_thread_per_device). Run it as build/tests/demo-02, and with CUDA_VISIBLE_DEVICES=0,1
// to use two GPUs.
// instructor-only
// build/tests/solution-demo-02 runs the reference solution.
// /instructor-only
#include <cuda_runtime.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <span>
#include <vector>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/programs.h"
#include "common/timer.h"
#include "kernels.cuh"
#include "set_device.h"

namespace {

constexpr double kSpinMs = 20.0;

using Runner = void (*)(std::span<const int>, const lesson02::DeviceWork&);

double median_ms(const std::function<void()>& run) {
  return course::measure_host(run, /*warmup=*/1, /*repeats=*/5).median_ms;
}

const char* reading(int gpus, double speedup) {
  if (speedup >= 0.8 * gpus) return "the workers ran at the same time";
  if (speedup < 1.2) return "the workers ran one after another: is there a synchronize inside the launch loop?";
  return "the workers overlapped only in part";
}

// For the first k workers, k = 1 .. devices.size(): the time with the spin kernel on all k together,
// beside the sum of their times alone (what running them one after another would cost).
void time_overlap(const char* model, Runner run, const std::vector<int>& devices) {
  const int workers = static_cast<int>(devices.size());
  std::vector<double> alone_ms(workers);
  for (int k = 0; k < workers; ++k) {
    alone_ms[k] = median_ms([&] {
      run(devices, [k](int worker, int, cudaStream_t stream) {
        if (worker == k) lesson02::launch_spin(kSpinMs, stream);
      });
    });
  }
  std::cout << model << '\n';
  double one_after_another_ms = 0;
  for (int k = 1; k <= workers; ++k) {
    one_after_another_ms += alone_ms[k - 1];
    const std::span<const int> first_k(devices.data(), k);
    const double together_ms =
        median_ms([&] { run(first_k, [](int, int, cudaStream_t stream) { lesson02::launch_spin(kSpinMs, stream); }); });
    const double speedup = one_after_another_ms / together_ms;
    if (k == 1)
      std::printf("  1 worker:  %6.1f ms  (nothing to overlap)\n", together_ms);
    else
      std::printf("  %d workers: %6.1f ms vs %6.1f ms if run one after another: %.2fx  (%s)\n", k, together_ms,
                  one_after_another_ms, speedup, reading(k, speedup));
  }
}

// Scales a buffer spread over the workers and checks every element on the host.
void scale_a_spread_buffer(const std::vector<int>& devices) {
  constexpr std::size_t n = 10'000'003;  // not divisible by 2, 3, 4 or 8
  constexpr float kFactor = 2.0f;
  std::vector<lesson02::Slice> input = lesson02::allocate_slices(n, devices);
  std::vector<lesson02::Slice> output = lesson02::allocate_slices(n, devices);
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) - 500.0f;
  for (std::size_t k = 0; k < input.size(); ++k) {
    const lesson02::Slice& slice = input[k];
    if (slice.range.empty()) {
      std::printf("  slice %zu: empty\n", k);
      continue;
    }
    cudaPointerAttributes where{};
    CUDA_CHECK(cudaPointerGetAttributes(&where, slice.data));  // where the memory really is
    std::printf("  slice %zu: elements [%zu, %zu) in the memory of GPU %d\n", k, slice.range.begin, slice.range.end,
                where.device);
    course::DeviceGuard on(slice.device);
    CUDA_CHECK(cudaMemcpy(slice.data, host.data() + slice.range.begin, slice.range.size() * sizeof(float),
                          cudaMemcpyHostToDevice));
  }
  lesson02::scale_slices(input, output, kFactor);
  std::vector<float> result(n);
  for (const lesson02::Slice& slice : output) {
    if (slice.range.empty()) continue;
    course::DeviceGuard on(slice.device);
    CUDA_CHECK(cudaMemcpy(result.data() + slice.range.begin, slice.data, slice.range.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
  }
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += result[i] != kFactor * host[i];
  lesson02::free_slices(input);
  lesson02::free_slices(output);
  if (wrong == 0)
    std::printf("  scale_slices: all %zu elements are %.0f x their input\n\n", n, kFactor);
  else
    std::printf("  scale_slices: %zu of %zu elements are wrong\n\n", wrong, n);
}

}  // namespace

int main() {
  try {
    const int count = course::visible_gpu_count();
    std::cout << count << " GPU" << (count == 1 ? "" : "s") << " visible\n";
    if (count == 0) return 0;

    // One worker per GPU; with one GPU, four workers share it (the split and the overlap still show).
    std::vector<int> devices;
    for (int d = 0; d < count; ++d) devices.push_back(d);
    if (count == 1) devices = {0, 0, 0, 0};
    std::cout << "\nA buffer of 10000003 floats over " << devices.size() << " workers:\n";
    scale_a_spread_buffer(devices);

    std::cout << "The spin kernel keeps each worker busy for " << kSpinMs << " ms; host-clock medians of 5 runs:\n";
    time_overlap("One thread, all devices (run_on_all_devices):", lesson02::run_on_all_devices, devices);
    time_overlap("One thread per device (run_one_thread_per_device):", lesson02::run_one_thread_per_device, devices);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "demo-02: " << e.what() << '\n';
    return 1;
  }
}
