// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04 benchmark: your reduction beside CUB's (cub::DeviceReduce::Sum) and beside the memory
// bandwidth it cannot beat; your split against one GPU over sizes from 4 KB to 4 GiB, with min,
// median and max and the crossover; the tutorial's case (30 million floats over three workers); and
// where the time of a small split goes: launches and waits, allocation, threads and managed-memory
// page migration inside the timed region, each measured on its own. Ends with PASS/FAIL lines for
// the reference solution's targets; targets that need more GPUs than this machine has print
// "not measured". GB = 10^9 bytes. Run: meson test -C build --benchmark --suite 04-split-reduction,
// or build/tests/bench-04.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cub/cub.cuh>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/timer.h"
#include "split_reduction.h"

namespace {

using lesson04::Spread;

constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kTutorialN = 30'000'000;  // the tutorial's case: 30 million floats (120 MB)
constexpr double kTargetOfCub = 0.95;
constexpr double kTargetSpeedup2 = 1.85, kTargetSpeedup4 = 3.6;  // resident split at 4 GiB, median
constexpr double kTargetSpread = 1.10;                           // median / min at and above the crossover

std::vector<std::string> g_verdicts;  // the PASS/FAIL lines, printed again at the end

void verdict(const std::string& what, bool measured, bool pass, const std::string& detail) {
  std::ostringstream line;
  line << "  " << std::left << std::setw(62) << what << ' ' << (measured ? (pass ? "PASS" : "FAIL") : "not measured")
       << "  " << detail;
  std::cout << line.str() << '\n';
  g_verdicts.push_back(line.str());
}

std::string fixed(double v, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << v;
  return out.str();
}

Spread spread_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const std::size_t m = samples.size();
  return Spread{samples.front(), m % 2 ? samples[m / 2] : 0.5 * (samples[m / 2 - 1] + samples[m / 2]), samples.back()};
}

// Host clock around `call` (which returns when its work is done): min, median, max in ms.
Spread time_host(const std::function<void()>& call, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> samples;
  for (int i = 0; i < repeats; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    call();
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
  }
  return spread_of(samples);
}

__global__ void empty_kernel() {}

course::DeviceBuffer<float> filled(int device, std::size_t n) {
  course::DeviceBuffer<float> buffer(device, n);
  const course::DeviceGuard on_device(device);
  CUDA_CHECK(cudaMemset(buffer.data(), 0x3C, buffer.bytes()));  // 0.0115 in every float
  CUDA_CHECK(cudaDeviceSynchronize());
  return buffer;
}

std::string size_name(std::size_t n) {
  const double bytes = 4.0 * static_cast<double>(n);
  if (bytes >= kGiB) return fixed(bytes / kGiB, 0) + " GiB";
  if (bytes >= (1 << 20)) return fixed(bytes / (1 << 20), bytes < 10 * (1 << 20) ? 1 : 0) + " MiB";
  return fixed(bytes / 1024, 0) + " KiB";
}

// ---- 1. the ceiling ----------------------------------------------------------------------------

double measured_copy_bandwidth(int device) {
  const std::size_t n = kGiB / 4;
  const course::DeviceBuffer<float> src = filled(device, n), dst(device, n);
  const course::Stream stream(device);
  const course::Timing t = course::measure(
      device, stream,
      [&] { CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, stream)); }, 3,
      20);
  return course::gigabytes_per_second(2.0 * static_cast<double>(src.bytes()), t.median_ms);  // read + write
}

// From the device attributes (0 where CUDA no longer reports them): two transfers per clock.
double datasheet_bandwidth(int device) {
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) clock_khz = 0;
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) bus_bits = 0;
  (void)cudaGetLastError();
  return 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
}

// ---- 2. one GPU: yours against CUB ------------------------------------------------------------

struct KernelFigures {
  double cub_ms = 0, own_ms = 0, cub_min_ms = 0, own_min_ms = 0;
};

KernelFigures own_vs_cub(std::size_t n) {
  const course::DeviceBuffer<float> data = filled(0, n);
  const course::Stream stream(0);
  const course::DeviceBuffer<float> cub_out(0, 1);
  std::size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, data.data(), cub_out.data(), static_cast<std::int64_t>(n),
                                    stream.get()));
  const course::DeviceBuffer<std::uint8_t> temp(0, std::max<std::size_t>(temp_bytes, 1));
  const course::DeviceBuffer<double> partials(0, lesson04::kMaxBlocks), sum(0, 1);
  const course::Timing cub = course::measure(
      0, stream,
      [&] {
        CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), temp_bytes, data.data(), cub_out.data(),
                                          static_cast<std::int64_t>(n), stream.get()));
      },
      3, 20);
  const course::Timing own = course::measure(
      0, stream, [&] { lesson04::enqueue_sum(data.data(), n, partials.data(), sum.data(), false, stream); }, 3, 20);
  return {cub.median_ms, own.median_ms, cub.min_ms, own.min_ms};
}

// ---- 3. the split against one GPU -------------------------------------------------------------

void print_table(const lesson04::CrossoverReport& r) {
  const int k = static_cast<int>(r.devices.size());
  std::cout << "      size  one worker: min / median / max (ms)   " << k
            << " workers: min / median / max (ms)   speed-up  efficiency\n";
  for (const lesson04::SizeTiming& row : r.rows) {
    const double speedup = row.one.median_ms / row.split.median_ms;
    std::cout << std::setw(10) << size_name(row.n) << std::fixed << std::setprecision(3) << std::setw(10)
              << row.one.min_ms << std::setw(10) << row.one.median_ms << std::setw(10) << row.one.max_ms << "      "
              << std::setw(10) << row.split.min_ms << std::setw(10) << row.split.median_ms << std::setw(10)
              << row.split.max_ms << "      " << std::setprecision(2) << std::setw(6) << speedup << "x" << std::setw(10)
              << std::setprecision(0) << 100 * speedup / k << "%\n";
  }
  std::cout << "  crossover (smallest size from which " << k << " workers stay faster): "
            << (r.crossover ? std::to_string(*r.crossover) + " floats (" + size_name(*r.crossover) + ")"
                            : std::string("none up to the largest size"))
            << '\n';
  const bool one_gpu = std::all_of(r.devices.begin(), r.devices.end(), [&](int d) { return d == r.devices.front(); });
  if (one_gpu && r.crossover)
    std::cout << "  (the workers share one GPU: that crossover is noise, speed-ups within a few % of 1.00x)\n";
}

const lesson04::SizeTiming* row_of(const lesson04::CrossoverReport& r, std::size_t n) {
  for (const auto& row : r.rows)
    if (row.n == n) return &row;
  return nullptr;
}

// ---- 4. where the time of a small split goes -------------------------------------------------

void where_the_time_goes(const std::vector<int>& tutorial_devices) {
  std::cout << "\n== 4. Where the time of a 30-million-float split goes (each cost measured on its own, GPU 0)\n";
  const course::Stream stream(0);
  const Spread launch = time_host(
      [&] {
        empty_kernel<<<1, 1, 0, stream>>>();
        CUDA_CHECK_LAUNCH();
        stream.synchronize();
      },
      100, 2000);
  std::cout << "  launch + wait of an empty kernel, per device:      median " << fixed(launch.median_ms * 1e3, 1)
            << " us, max " << fixed(launch.max_ms * 1e3, 1) << " us\n";

  const course::DeviceBuffer<float> data = filled(0, kTutorialN);
  const course::DeviceBuffer<double> partials(0, lesson04::kMaxBlocks), sum(0, 1);
  const course::Timing kernel = course::measure(
      0, stream, [&] { lesson04::enqueue_sum(data.data(), kTutorialN, partials.data(), sum.data(), false, stream); }, 5,
      50);
  std::cout << "  your reduction of 30M floats on the GPU (events):  median " << fixed(kernel.median_ms * 1e3, 1)
            << " us\n";
  const std::vector<int> zero = {0};
  lesson04::SplitWorkspace one(zero, 1);
  const std::vector<const float*> whole = {data.data()};
  const Spread call = time_host([&] { (void)lesson04::sum_resident(one, whole, kTutorialN); }, 5, 50);
  std::cout << "  sum_resident on one worker, as the caller sees it: median " << fixed(call.median_ms * 1e3, 1)
            << " us, max " << fixed(call.max_ms * 1e3, 1) << " us\n";

  const Spread alloc = time_host(
      [&] {
        const course::DeviceBuffer<float> b(0, kTutorialN / 3);
        const course::DeviceBuffer<double> p(0, lesson04::kMaxBlocks);
      },
      2, 20);
  std::cout << "  cudaMalloc + cudaFree of one worker's 40 MB slice:  median " << fixed(alloc.median_ms * 1e3, 1)
            << " us, max " << fixed(alloc.max_ms * 1e3, 1) << " us\n";
  const Spread thread = time_host(
      [&] {
        std::thread t([] { CUDA_CHECK(cudaSetDevice(0)); });
        t.join();
      },
      10, 200);
  std::cout << "  start + join a host thread that sets its device:   median " << fixed(thread.median_ms * 1e3, 1)
            << " us, max " << fixed(thread.max_ms * 1e3, 1) << " us\n";

  // Managed memory written by the host: the first GPU access migrates every page it touches.
  float* managed = nullptr;
  CUDA_CHECK(cudaMallocManaged(&managed, kTutorialN * sizeof(float)));
  std::vector<double> migrating, resident;
  for (int round = 0; round < 6; ++round) {
    std::fill(managed, managed + kTutorialN, 0.5f);  // the pages move to the host
    for (std::vector<double>* samples : {&migrating, &resident}) {
      const auto begin = std::chrono::steady_clock::now();
      lesson04::enqueue_sum(managed, kTutorialN, partials.data(), sum.data(), false, stream);
      stream.synchronize();
      samples->push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
    }
  }
  const Spread first = spread_of(migrating), second = spread_of(resident);
  std::cout << "  the same sum on managed memory the host just wrote: median " << fixed(first.median_ms, 3)
            << " ms (pages migrate), again right after: " << fixed(second.median_ms, 3) << " ms\n";

  // The tutorial's shape: every call starts a thread per worker, allocates, sums, copies back, frees.
  const int k = static_cast<int>(tutorial_devices.size());
  const Spread naive = time_host(
      [&] {
        std::vector<std::thread> threads;
        std::vector<double> partial(k);
        for (int w = 0; w < k; ++w)
          threads.emplace_back([&, w] {
            const course::Range r = course::split_range(kTutorialN, k, w);
            CUDA_CHECK(cudaSetDevice(tutorial_devices[w]));
            course::DeviceBuffer<double> p(tutorial_devices[w], lesson04::kMaxBlocks), s(tutorial_devices[w], 1);
            lesson04::enqueue_sum(managed + r.begin, r.size(), p.data(), s.data(), false, nullptr);
            CUDA_CHECK(cudaMemcpy(&partial[w], s.data(), sizeof(double), cudaMemcpyDeviceToHost));
          });
        for (auto& t : threads) t.join();
      },
      1, 30);
  CUDA_CHECK(cudaFree(managed));
  std::cout << "  tutorial-style split over " << k << " workers (threads, malloc, managed data in the timed region):\n"
            << "      min " << fixed(naive.min_ms, 3) << " ms, median " << fixed(naive.median_ms, 3) << " ms, max "
            << fixed(naive.max_ms, 3) << " ms: median / min = " << fixed(naive.median_ms / naive.min_ms, 1) << "x\n";
}

}  // namespace

int main() {
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    if (count < 1) {
      std::cout << "bench-04: needs 1 GPU, found 0\n";
      return 77;  // skipped
    }
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::cout << "Lesson 04 benchmark: a split reduction on " << count << " GPU" << (count == 1 ? "" : "s") << " ("
              << prop.name << ", " << prop.multiProcessorCount << " SMs). Every figure: after a warm-up; GB = 10^9 "
              << "bytes; min / median / max over the repeats.\n";

    std::cout << "\n== 1. The ceiling: GPU 0's memory bandwidth\n";
    const double datasheet = datasheet_bandwidth(0);
    const double copy = measured_copy_bandwidth(0);
    std::cout << "  from the device attributes (memory clock x bus width): "
              << (datasheet > 0 ? fixed(datasheet, 0) + " GB/s" : std::string("not reported by this CUDA")) << '\n'
              << "  measured: a 1 GiB device-to-device copy moves " << fixed(copy, 0)
              << " GB/s (reads + writes): the yardstick below\n";

    std::cout << "\n== 2. One GPU: your kernel against cub::DeviceReduce::Sum (CUDA events, median of 20)\n"
              << "      size     CUB ms   CUB GB/s    yours ms  yours GB/s   yours/CUB   yours/copy yardstick\n";
    std::vector<std::pair<std::size_t, double>> of_cub;
    for (const std::size_t n : {kTutorialN, kGiB / 16, kGiB / 4, kGiB}) {
      const KernelFigures f = own_vs_cub(n);
      const double bytes = 4.0 * static_cast<double>(n);
      const double cub_gbs = course::gigabytes_per_second(bytes, f.cub_ms);
      const double own_gbs = course::gigabytes_per_second(bytes, f.own_ms);
      of_cub.emplace_back(n, own_gbs / cub_gbs);
      std::cout << std::setw(10) << size_name(n) << std::fixed << std::setprecision(3) << std::setw(11) << f.cub_ms
                << std::setprecision(0) << std::setw(11) << cub_gbs << std::setprecision(3) << std::setw(12) << f.own_ms
                << std::setprecision(0) << std::setw(12) << own_gbs << std::setw(11) << 100 * own_gbs / cub_gbs << "%"
                << std::setw(14) << 100 * own_gbs / copy << "%\n";
    }

    std::vector<std::size_t> sizes;
    for (std::size_t n = 1 << 10; n <= kGiB; n *= 4) sizes.push_back(n);  // 4 KiB .. 4 GiB
    std::vector<lesson04::CrossoverReport> reports;
    std::cout << "\n== 3. The split against one worker (host clock per call of sum_resident, 20 repeats)\n";
    if (count < 2) {
      const std::vector<int> shared = {0, 0};
      std::cout << "  one GPU: two workers on GPU 0 share its memory bandwidth, so expect no speed-up\n";
      print_table(lesson04::measure_crossover(shared, sizes, {3, 20}));
    }
    for (int k = 2; k <= count; ++k) {  // every GPU count: 3 GPUs have a crossover too
      std::vector<int> devices;
      for (int d = 0; d < k; ++d) devices.push_back(d);
      std::cout << "  GPUs 0.." << k - 1 << ":\n";
      reports.push_back(lesson04::measure_crossover(devices, sizes, {3, 20}));
      print_table(reports.back());
    }

    const std::vector<int> tutorial_devices = count >= 3 ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 0, 0};
    std::cout << "\n== The tutorial's case: 30 million floats over 3 workers {" << tutorial_devices[0] << ", "
              << tutorial_devices[1] << ", " << tutorial_devices[2] << "}"
              << (count >= 3 ? "" : " (one GPU, so no speed-up)") << ", 200 repeats\n";
    const std::vector<std::size_t> tutorial_size = {kTutorialN};
    const lesson04::CrossoverReport tutorial = lesson04::measure_crossover(tutorial_devices, tutorial_size, {5, 200});
    const lesson04::SizeTiming& s = tutorial.rows.front();
    std::cout << "  one worker: min " << fixed(s.one.min_ms, 3) << " ms, median " << fixed(s.one.median_ms, 3)
              << " ms, max " << fixed(s.one.max_ms, 3) << " ms\n  3 workers:  min " << fixed(s.split.min_ms, 3)
              << " ms, median " << fixed(s.split.median_ms, 3) << " ms, max " << fixed(s.split.max_ms, 3)
              << " ms: " << fixed(s.one.median_ms / s.split.median_ms, 2) << "x one worker at the median, "
              << fixed(s.one.min_ms / s.split.min_ms, 2) << "x at the best\n";

    where_the_time_goes(tutorial_devices);

    std::cout << "\n== Targets for the reference solution (the course's H200 hosts)\n";
    for (const auto& [n, ratio] : of_cub)
      if (n == kGiB / 4 || n == kGiB)
        verdict("own kernel >= 95% of CUB's bandwidth at " + size_name(n), true, ratio >= kTargetOfCub,
                "(" + fixed(100 * ratio, 1) + "% of CUB)");
    for (const int k : {2, 4}) {
      const std::string what = "resident split at 4 GiB on " + std::to_string(k) +
                               " GPUs >= " + fixed(k == 2 ? kTargetSpeedup2 : kTargetSpeedup4, 2) +
                               "x one GPU (median)";
      const lesson04::CrossoverReport* r = nullptr;
      for (const auto& report : reports)
        if (static_cast<int>(report.devices.size()) == k) r = &report;
      const lesson04::SizeTiming* row = r ? row_of(*r, kGiB) : nullptr;
      if (row == nullptr) {
        verdict(what, false, false,
                "(needs " + std::to_string(k) + " distinct GPUs, found " + std::to_string(count) + ")");
      } else {
        const double speedup = row->one.median_ms / row->split.median_ms;
        verdict(what, true, speedup >= (k == 2 ? kTargetSpeedup2 : kTargetSpeedup4), "(" + fixed(speedup, 2) + "x)");
      }
    }
    if (reports.empty()) {
      verdict("median within 10% of the min at and above the crossover", false, false,
              "(needs 2 distinct GPUs, found " + std::to_string(count) + ")");
      verdict("crossover printed for every GPU count", false, false,
              "(needs 2 distinct GPUs, found " + std::to_string(count) + ")");
    }
    for (const auto& r : reports) {
      const std::string k = std::to_string(r.devices.size());
      double worst = 0;
      std::size_t worst_n = 0;
      for (const auto& row : r.rows)
        if (r.crossover && row.n >= *r.crossover)
          for (const Spread& sp : {row.one, row.split})
            if (sp.median_ms / sp.min_ms > worst) {
              worst = sp.median_ms / sp.min_ms;
              worst_n = row.n;
            }
      verdict("median within 10% of the min at and above the crossover, " + k + " GPUs", r.crossover.has_value(),
              worst <= kTargetSpread,
              r.crossover ? "(worst median/min " + fixed(worst, 3) + " at " + size_name(worst_n) + ")"
                          : "(no crossover: the split never stays faster)");
      verdict("crossover printed, " + k + " GPUs", true, r.crossover.has_value(),
              r.crossover ? "(" + size_name(*r.crossover) + ")" : "(none)");
    }
    std::cout << "\nSummary:\n";
    for (const auto& line : g_verdicts) std::cout << line << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench-04: " << e.what() << '\n';
    return 1;
  }
}
