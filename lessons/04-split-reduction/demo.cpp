// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04 demo: your functions on this machine, one task after the other, on the tutorial's case
// (30 million floats in [0, 1)): one GPU's sum against a double-precision reference, the same sum
// split over three workers (three GPUs where there are three, else three workers on GPU 0) with
// both combines, from pinned host memory serial and overlapped, and a short 1-worker-vs-split
// timing table. A task not done yet prints its NOT_IMPLEMENTED line and the demo goes on.
// Run it as build/tests/demo-04.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/partition.h"
#include "common/programs.h"
#include "split_reduction.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
}

void report(const std::string& label, double got, double reference, double ms) {
  std::cout << "  " << std::left << std::setw(34) << label << std::right << std::fixed << std::setprecision(3)
            << std::setw(16) << got << "  relative error " << std::scientific << std::setprecision(1)
            << std::abs(got - reference) / reference << std::fixed << std::setprecision(3) << std::setw(10) << ms
            << " ms (one call, not a benchmark)\n";
}

}  // namespace

int main() {
  const int count = course::visible_gpu_count();
  std::cout << "Lesson 04 demo: a split reduction. " << count << " GPU" << (count == 1 ? "" : "s") << " visible.\n";
  if (count == 0) return 0;

  const std::size_t n = 30'000'000;  // the tutorial's case
  std::vector<float> values(n);
  std::mt19937_64 engine(2026);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  double reference = 0;
  for (float& v : values) reference += (v = uniform(engine));
  std::cout << "Input: " << n << " random floats in [0, 1); double-precision reference sum " << std::fixed
            << std::setprecision(3) << reference << '\n';

  std::vector<int> devices;
  for (int k = 0; k < 3; ++k) devices.push_back(count >= 3 ? k : 0);
  std::cout << "Workers: {" << devices[0] << ", " << devices[1] << ", " << devices[2] << "}"
            << (count >= 3 ? " (three GPUs)" : " (three workers on GPU 0: the split without the speed-up)") << '\n';

  course::demo_section("Task 1: the sum on GPU 0 with your kernel", [&] {
    const course::DeviceBuffer<float> data(0, n);
    CUDA_CHECK(cudaMemcpy(data.data(), values.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    (void)lesson04::sum_on_device(0, data.data(), n);  // warm-up: loads the kernels
    const auto begin = std::chrono::steady_clock::now();
    const double got = lesson04::sum_on_device(0, data.data(), n);
    report("sum_on_device(0, ...)", got, reference, ms_since(begin));
  });

  course::demo_section("Task 2: one slice per worker, launched everywhere, then combined", [&] {
    lesson04::SplitWorkspace workspace(devices);
    std::vector<course::DeviceBuffer<float>> buffers;
    std::vector<const float*> slices;
    for (int k = 0; k < 3; ++k) {
      const course::Range range = course::split_range(n, 3, k);
      buffers.emplace_back(devices[k], range.size());
      CUDA_CHECK(cudaMemcpy(buffers.back().data(), values.data() + range.begin, range.size() * sizeof(float),
                            cudaMemcpyHostToDevice));
      slices.push_back(buffers.back().data());
      std::cout << "  worker " << k << ": GPU " << devices[k] << ", elements [" << range.begin << ", " << range.end
                << ")\n";
    }
    for (const lesson04::Combine combine : {lesson04::Combine::on_host, lesson04::Combine::on_device}) {
      (void)lesson04::sum_resident(workspace, slices, n, combine);
      const auto begin = std::chrono::steady_clock::now();
      const double got = lesson04::sum_resident(workspace, slices, n, combine);
      report(std::string("sum_resident, ") + lesson04::to_string(combine), got, reference, ms_since(begin));
    }
  });

  course::demo_section("Task 3: from pinned host memory, chunks of 16 MiB", [&] {
    course::PinnedBuffer<float> host(n);
    std::copy(values.begin(), values.end(), host.data());
    lesson04::SplitWorkspace workspace(devices);
    for (const bool overlapped : {false, true}) {
      const auto run = [&] {
        return overlapped ? lesson04::sum_from_host(workspace, host.data(), n)
                          : lesson04::sum_from_host_serial(workspace, host.data(), n);
      };
      (void)run();
      const auto begin = std::chrono::steady_clock::now();
      const double got = run();
      report(overlapped ? "sum_from_host (yours, overlapped)" : "sum_from_host_serial (given)", got, reference,
             ms_since(begin));
    }
  });

  course::demo_section("Task 4: one worker against the split (build/tests/bench-04 measures much more)", [&] {
    const std::vector<std::size_t> sizes = {1 << 12, 1 << 16, 1 << 20, 1 << 24, n};
    const lesson04::CrossoverReport r = lesson04::measure_crossover(devices, sizes, {3, 20});
    std::cout << "         n   one: min / median / max ms      split: min / median / max ms   speed-up\n";
    for (const lesson04::SizeTiming& row : r.rows)
      std::cout << std::setw(10) << row.n << std::fixed << std::setprecision(3) << std::setw(9) << row.one.min_ms
                << std::setw(9) << row.one.median_ms << std::setw(9) << row.one.max_ms << "   " << std::setw(9)
                << row.split.min_ms << std::setw(9) << row.split.median_ms << std::setw(9) << row.split.max_ms
                << std::setprecision(2) << std::setw(9) << row.one.median_ms / row.split.median_ms << "x\n";
    std::cout << "  crossover: "
              << (r.crossover ? std::to_string(*r.crossover) + " floats" : std::string("none in this table")) << '\n';
  });
  return 0;
}
