// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08 benchmark: strong scaling of your Jacobi solver. The ceiling first (a device-to-device
// copy: a sweep reads and writes each point once, like a copy), then one GPU's sweep against it,
// then the same grid on 1, 2, 4, ... GPUs, plain and overlapped, with the time per sweep, the
// speed-up and the parallel efficiency against one GPU's plain time, on 20480 x 20480 floats and
// on 8192 x 8192 (where the exchange weighs more); four workers on one GPU against one; and what a
// residual after every sweep costs against one every 100. Each figure: the host clock around a
// call of N sweeps (N = 1000 unless --iterations says otherwise), after one untimed call; median
// and min over the repeats, divided by N. Ends with PASS/FAIL lines for the reference solution's
// targets; targets that need more GPUs than this machine has print "not measured". GB = 10^9
// bytes. Run: build/tests/bench-08 [--iterations N], or meson test -C build --benchmark --suite
// 08-halo-exchange.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/timer.h"
#include "jacobi.h"

namespace {

constexpr std::size_t kLarge = 20480, kSmall = 8192;
constexpr double kTargetOfCopy = 0.80;      // one GPU's sweep against a device-to-device copy
constexpr double kTargetSharedGpu = 1.10;   // {0, 0, 0, 0} against {0}, time per sweep
constexpr double kTargetEfficiency = 0.95;  // overlapped, 2 and 4 GPUs, 20480^2

using Run = void (*)(lesson08::Decomposition&, int);

struct PerSweep {
  double median_ms = 0;
  double min_ms = 0;
};

std::string fixed(double v, int precision) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << v;
  return out.str();
}

std::string list_of(const std::vector<int>& devices) {
  std::string text = "{";
  for (std::size_t k = 0; k < devices.size(); ++k) text += (k ? ", " : "") + std::to_string(devices[k]);
  return text + "}";
}

// A plate whose top edge is held at 1, everything else starting at 0.5: smooth values, no subnormals.
std::vector<float> plate(std::size_t side) {
  std::vector<float> values(side * side, 0.5f);
  std::fill(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(side), 1.0f);
  return values;
}

std::vector<int> first_gpus(int count) {
  std::vector<int> devices;
  for (int d = 0; d < count; ++d) devices.push_back(d);
  return devices;
}

// Time per sweep of `sweeps` (a call of `iterations` sweeps on a fresh decomposition), timed on the host.
PerSweep time_per_sweep(const std::vector<int>& devices, std::size_t side, const std::vector<float>& initial,
                        const std::function<void(lesson08::Decomposition&)>& sweeps, int iterations, int repeats) {
  lesson08::Decomposition grid = lesson08::decompose(devices, side, side, initial);
  const course::Timing t = course::measure_host([&] { sweeps(grid); }, 1, repeats);
  return {t.median_ms / iterations, t.min_ms / iterations};
}

PerSweep time_run(const std::vector<int>& devices, std::size_t side, const std::vector<float>& initial, Run run,
                  int iterations, int repeats) {
  return time_per_sweep(
      devices, side, initial, [&](lesson08::Decomposition& grid) { run(grid, iterations); }, iterations, repeats);
}

// GB/s of a device-to-device copy of `bytes` on `device`, reads + writes (CUDA events, median of 20).
double copy_bandwidth(int device, std::size_t bytes) {
  const course::DeviceBuffer<unsigned char> src(device, bytes), dst(device, bytes);
  const course::Stream stream(device);
  const course::Timing t = course::measure(
      device, stream,
      [&] { CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream)); }, 3, 20);
  return course::gigabytes_per_second(2.0 * static_cast<double>(bytes), t.median_ms);
}

std::vector<std::string> g_targets;

void target(const std::string& what, bool measured, bool pass, const std::string& detail) {
  std::ostringstream line;
  line << "  " << std::left << std::setw(72) << what << ' ' << (measured ? (pass ? "PASS" : "FAIL") : "not measured")
       << "  (" << detail << ")";
  g_targets.push_back(line.str());
}

// One grid's scaling table; returns the medians per sweep: [G] -> {plain, overlapped}.
struct Row {
  int gpus = 0;
  PerSweep plain, overlapped;
};

std::vector<Row> scaling(std::size_t side, int count, int iterations, int repeats) {
  const std::vector<float> initial = plate(side);
  std::vector<int> counts;
  for (int g = 1; g <= count; g *= 2) counts.push_back(g);
  if (counts.back() != count) counts.push_back(count);
  std::cout << "\n== Strong scaling at " << side << " x " << side << " (" << fixed(side * side * 4 / 1e9, 2)
            << " GB per buffer), " << iterations << " sweeps per call, median (min) of " << repeats << " calls\n"
            << "  GPUs   plain ms/sweep   speed-up  efficiency   overlapped ms/sweep   speed-up  efficiency\n";
  std::vector<Row> rows;
  for (const int g : counts) {
    const std::vector<int> devices = first_gpus(g);
    Row row{g, time_run(devices, side, initial, lesson08::run_plain, iterations, repeats),
            time_run(devices, side, initial, lesson08::run_overlapped, iterations, repeats)};
    rows.push_back(row);
    const double one = rows.front().plain.median_ms;
    const auto cells = [&](const PerSweep& p) {
      return fixed(p.median_ms, 4) + " (" + fixed(p.min_ms, 4) + ")   " + fixed(one / p.median_ms, 2) + "x     " +
             fixed(100 * one / (g * p.median_ms), 1) + "%";
    };
    std::cout << "  " << std::setw(4) << g << "   " << cells(row.plain) << "      " << cells(row.overlapped) << '\n';
  }
  std::cout << "  (speed-up and efficiency against one GPU's plain time, " << fixed(rows.front().plain.median_ms, 4)
            << " ms per sweep)\n";
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else {
      std::cerr << "usage: bench-08 [--iterations N]   (N sweeps per timed call, default 1000)\n";
      return 2;
    }
  }
  if (iterations < 1) {
    std::cerr << "bench-08: --iterations must be at least 1\n";
    return 2;
  }
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    if (count < 1) {
      std::cout << "bench-08: needs 1 GPU, found 0\n";
      return 77;  // skipped
    }
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::cout << "Lesson 08 benchmark: Jacobi with halo exchange on " << count << " GPU" << (count == 1 ? "" : "s")
              << " (" << prop.name << "), " << iterations << " sweeps per timed call"
              << (iterations < 1000 ? " (fewer than the targets' 1000: --iterations)" : "") << ". GB = 10^9 bytes.\n";

    const double grid_bytes = static_cast<double>(kLarge * kLarge * sizeof(float));
    std::cout << "\n== 1. The ceiling: a device-to-device copy of one " << kLarge << "^2 grid on GPU 0\n";
    const double copy = copy_bandwidth(0, kLarge * kLarge * sizeof(float));
    std::cout << "  " << fixed(copy, 0) << " GB/s (reads + writes): a sweep moves the same bytes, once a point's "
              << "neighbours come from cache\n";

    std::cout << "\n== 2. Strong scaling\n";
    const std::vector<Row> large = scaling(kLarge, count, iterations, 3);
    const std::vector<Row> small = scaling(kSmall, count, iterations, 5);
    const double sweep_gbs = course::gigabytes_per_second(2.0 * grid_bytes, large.front().plain.median_ms);
    std::cout << "\n  one GPU's plain sweep at " << kLarge << "^2: " << fixed(sweep_gbs, 0) << " GB/s, "
              << fixed(100 * sweep_gbs / copy, 1) << "% of the copy\n";

    std::cout << "\n== 3. Four workers on GPU 0 against one, at " << kLarge << "^2 (the decomposition's own cost)\n";
    const std::vector<float> large_plate = plate(kLarge);
    const std::vector<int> shared = {0, 0, 0, 0};
    const PerSweep shared_plain = time_run(shared, kLarge, large_plate, lesson08::run_plain, iterations, 3);
    const PerSweep shared_overlapped = time_run(shared, kLarge, large_plate, lesson08::run_overlapped, iterations, 3);
    const double one_worker = large.front().plain.median_ms;
    std::cout << "  {0}: " << fixed(one_worker, 4) << " ms/sweep; {0, 0, 0, 0}: plain "
              << fixed(shared_plain.median_ms, 4) << " (" << fixed(shared_plain.median_ms / one_worker, 3)
              << "x), overlapped " << fixed(shared_overlapped.median_ms, 4) << " ("
              << fixed(shared_overlapped.median_ms / one_worker, 3) << "x)\n";

    std::cout << "\n== 4. What a residual after every sweep costs (overlapped, solve with check_every 1 and 100)\n";
    for (const std::size_t side : {kLarge, kSmall}) {
      const std::vector<float> initial = side == kLarge ? large_plate : plate(side);
      for (const std::vector<int>& devices : {first_gpus(1), first_gpus(count)}) {
        if (devices.size() > 1 && count == 1) continue;
        PerSweep per[2];
        const int every[2] = {1, 100};
        for (int c = 0; c < 2; ++c)
          per[c] = time_per_sweep(
              devices, side, initial,
              [&](lesson08::Decomposition& grid) {
                (void)lesson08::solve(grid, iterations, {lesson08::Schedule::overlapped, every[c], 0});
              },
              iterations, 3);
        std::cout << "  " << side << "^2 on " << std::left << std::setw(12) << list_of(devices) << std::right
                  << " every sweep " << fixed(per[0].median_ms, 4)
                  << " ms/sweep, every 100: " << fixed(per[1].median_ms, 4) << " ms/sweep: checking every sweep costs "
                  << fixed(100 * (per[0].median_ms / per[1].median_ms - 1), 1) << "%\n";
      }
    }

    std::cout << "\n== Targets for the reference solution\n";
    target("one GPU's sweep at 20480^2 >= 80% of a device-to-device copy's bandwidth", true,
           sweep_gbs >= kTargetOfCopy * copy, fixed(100 * sweep_gbs / copy, 1) + "% of the copy");
    target("{0, 0, 0, 0} at 20480^2 <= 1.1x one worker's time per sweep (plain)", true,
           shared_plain.median_ms <= kTargetSharedGpu * one_worker,
           fixed(shared_plain.median_ms / one_worker, 3) + "x");
    for (const int g : {2, 4}) {
      const auto row = std::find_if(large.begin(), large.end(), [&](const Row& r) { return r.gpus == g; });
      const bool measured = row != large.end();
      const double efficiency = measured ? one_worker / (g * row->overlapped.median_ms) : 0;
      target("overlapped on " + std::to_string(g) + " GPUs at 20480^2 >= 95% parallel efficiency", measured,
             efficiency >= kTargetEfficiency,
             measured ? fixed(100 * efficiency, 1) + "%"
                      : "needs " + std::to_string(g) + " GPUs, found " + std::to_string(count));
    }
    const auto two = std::find_if(small.begin(), small.end(), [](const Row& r) { return r.gpus == 2; });
    const bool measured = two != small.end();
    target("overlapped faster than plain on 2 GPUs at 8192^2", measured,
           measured && two->overlapped.median_ms < two->plain.median_ms,
           measured ? fixed(two->plain.median_ms / two->overlapped.median_ms, 3) + "x the plain speed"
                    : "needs 2 GPUs, found " + std::to_string(count));
    for (const std::string& line : g_targets) std::cout << line << '\n';
    return 0;
  } catch (const std::exception& error) {
    std::cout << "bench-08 stopped: " << error.what() << '\n';
    return 1;
  }
}
