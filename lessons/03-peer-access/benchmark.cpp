// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 benchmark, in the style of CUDA's p2pBandwidthLatencyTest but built from your task 5
// functions: for every ordered pair of GPUs, bandwidth one way and both ways and the latency of a
// small copy, with peer access on and off, then your staged copy (through pinned host memory)
// serial against overlapped. Each table is printed beside the peak it should be compared with,
// and the reference solution's targets on the course's 4-GPU H200 host get PASS or BELOW.
// GB = 10^9 bytes everywhere. Run: meson test -C build --benchmark --suite 03-peer-access, or
// build/tests/bench-03 (yours), build/tests/solution-bench-03 (the reference).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "peer_access.h"

namespace {

using Matrix = std::vector<std::vector<double>>;

constexpr std::size_t kBytes = std::size_t{256} << 20;  // 256 MiB per copy
constexpr std::size_t kChunk = std::size_t{8} << 20;    // staged path: 8 MiB chunks
constexpr double kNvlinkPerDirection = 450;             // NVLink 4 (H100/H200), 18 links x 25 GB/s
constexpr double kPcieGen5PerDirection = 64;            // PCIe Gen5 x16, before protocol overhead
constexpr double kTargetOneWay = 380;                   // the reference solution on the 4-GPU H200 host
constexpr double kTargetBothWays = 760;
constexpr double kTargetOverlapRatio = 1.5;
const lesson03::MeasureOptions kFast{2, 20};  // copies over NVLink take a millisecond or less
const lesson03::MeasureOptions kSlow{1, 8};   // copies through the host take ten times longer

Matrix square(int n) {
  return Matrix(n, std::vector<double>(n, 0.0));
}

// values[i][j] for every ordered pair, or for the pairs i != j when `with_diagonal` is false.
Matrix for_each_pair(int n, bool with_diagonal, const std::function<double(int, int)>& measure) {
  Matrix values = square(n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (i != j || with_diagonal) values[i][j] = measure(i, j);
  return values;
}

void print_matrix(const std::string& title, const Matrix& values, bool with_diagonal, int precision = 1) {
  const int n = static_cast<int>(values.size());
  std::cout << '\n' << title << '\n' << "   D\\D";
  for (int j = 0; j < n; ++j) std::cout << std::setw(9) << j;
  std::cout << '\n';
  for (int i = 0; i < n; ++i) {
    std::cout << std::setw(6) << i;
    for (int j = 0; j < n; ++j) {
      if (i == j && !with_diagonal) {
        std::cout << std::setw(9) << "-";
      } else {
        std::cout << std::setw(9) << std::fixed << std::setprecision(precision) << values[i][j];
      }
    }
    std::cout << '\n';
  }
}

struct Spread {
  double min = 0, median = 0, max = 0;
  int worst_i = 0, worst_j = 0;
};

Spread between_gpus(const Matrix& values) {
  std::vector<double> all;
  Spread s;
  double worst = 0;
  bool first = true;
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < values.size(); ++j)
      if (i != j) {
        all.push_back(values[i][j]);
        if (first || values[i][j] < worst) {
          worst = values[i][j];
          s.worst_i = static_cast<int>(i);
          s.worst_j = static_cast<int>(j);
          first = false;
        }
      }
  if (all.empty()) return s;
  std::sort(all.begin(), all.end());
  s.min = all.front();
  s.max = all.back();
  s.median = all.size() % 2 ? all[all.size() / 2] : 0.5 * (all[all.size() / 2 - 1] + all[all.size() / 2]);
  return s;
}

void print_spread(const Matrix& values, double peak, const std::string& peak_name, const std::string& unit = "GB/s",
                  int precision = 1) {
  const Spread s = between_gpus(values);
  std::cout << "  between GPUs: min " << std::fixed << std::setprecision(precision) << s.min << ", median " << s.median
            << ", max " << s.max << ' ' << unit;
  if (peak > 0) std::cout << " = " << std::setprecision(0) << 100 * s.median / peak << "% (median) of " << peak_name;
  std::cout << '\n';
}

// PASS when every pair meets the target, BELOW with the worst pair otherwise.
void print_target(const std::string& what, const Matrix& values, double target, const std::string& unit) {
  const Spread s = between_gpus(values);
  int below = 0, pairs = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < values.size(); ++j)
      if (i != j) {
        ++pairs;
        below += values[i][j] < target ? 1 : 0;
      }
  std::ostringstream goal;
  goal << ">= " << std::fixed << std::setprecision(1) << target << unit;
  std::cout << "  " << std::left << std::setw(34) << what << std::setw(14) << goal.str() << std::right
            << (below == 0 ? "PASS" : "BELOW") << "  (" << pairs - below << " of " << pairs
            << " pairs meet it; worst GPU " << s.worst_i << " -> GPU " << s.worst_j << ": " << std::setprecision(2)
            << s.min << unit << ")\n";
}

}  // namespace

int main() {
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    if (count < 2) {
      std::cout << "bench-03: needs 2 GPUs, found " << count << '\n';
      return 77;  // skipped
    }
    std::cout << "Lesson 03 benchmark: peer-to-peer bandwidth and latency between " << count << " GPUs\n"
              << "Every figure: median over repeats after a warm-up; GB = 10^9 bytes; copies of " << kBytes
              << " bytes (256 MiB).\n"
              << "Compared against: NVLink 4 (H100/H200) " << kNvlinkPerDirection << " GB/s per direction, "
              << 2 * kNvlinkPerDirection << " GB/s both ways; PCIe Gen5 x16 ~" << kPcieGen5PerDirection
              << " GB/s per direction, ~" << 2 * kPcieGen5PerDirection << " GB/s both ways.\n"
              << "The diagonal is a copy within one GPU: it reads and writes its own memory (HBM).\n\n";
    const lesson03::PeerMatrix links = lesson03::query_peer_matrix();
    lesson03::print_peer_matrix(std::cout, links);

    (void)lesson03::enable_peer_access_all();
    const Matrix one_way_on = for_each_pair(
        count, true, [](int i, int j) { return lesson03::measure_one_way(i, j, kBytes, kFast).gigabytes_per_second; });
    const Matrix both_ways_on = for_each_pair(count, true, [](int i, int j) {
      return lesson03::measure_both_ways(i, j, kBytes, kFast).gigabytes_per_second;
    });
    const Matrix latency_on =
        for_each_pair(count, true, [](int i, int j) { return lesson03::measure_latency(i, j, kFast).median_ms * 1e3; });

    (void)lesson03::disable_peer_access_all();
    const Matrix one_way_off = for_each_pair(
        count, false, [](int i, int j) { return lesson03::measure_one_way(i, j, kBytes, kSlow).gigabytes_per_second; });
    const Matrix both_ways_off = for_each_pair(count, false, [](int i, int j) {
      return lesson03::measure_both_ways(i, j, kBytes, kSlow).gigabytes_per_second;
    });
    const Matrix latency_off = for_each_pair(
        count, false, [](int i, int j) { return lesson03::measure_latency(i, j, kSlow).median_ms * 1e3; });
    const Matrix staged_serial = for_each_pair(count, false, [](int i, int j) {
      return lesson03::measure_staged(i, j, kBytes, false, kChunk, kSlow).gigabytes_per_second;
    });
    const Matrix staged_overlapped = for_each_pair(count, false, [](int i, int j) {
      return lesson03::measure_staged(i, j, kBytes, true, kChunk, kSlow).gigabytes_per_second;
    });
    Matrix overlap_ratio = square(count);
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < count; ++j)
        if (i != j && staged_serial[i][j] > 0) overlap_ratio[i][j] = staged_overlapped[i][j] / staged_serial[i][j];

    const std::string nvlink = "NVLink 4's " + std::to_string(static_cast<int>(kNvlinkPerDirection)) + " GB/s";
    const std::string nvlink2 = "NVLink 4's " + std::to_string(static_cast<int>(2 * kNvlinkPerDirection)) + " GB/s";
    const std::string pcie = "PCIe Gen5 x16's ~" + std::to_string(static_cast<int>(kPcieGen5PerDirection)) + " GB/s";
    const std::string pcie2 =
        "PCIe Gen5 x16's ~" + std::to_string(static_cast<int>(2 * kPcieGen5PerDirection)) + " GB/s";

    print_matrix("Unidirectional bandwidth, P2P on (cudaMemcpyPeerAsync), GB/s", one_way_on, true);
    print_spread(one_way_on, kNvlinkPerDirection, nvlink + " per direction");
    print_matrix("Bidirectional bandwidth, P2P on (both directions at once, total), GB/s", both_ways_on, true);
    print_spread(both_ways_on, 2 * kNvlinkPerDirection, nvlink2 + " both ways");
    print_matrix("Unidirectional bandwidth, P2P off (the driver stages through host memory), GB/s", one_way_off, false);
    print_spread(one_way_off, kPcieGen5PerDirection, pcie + " per direction");
    print_matrix("Bidirectional bandwidth, P2P off, GB/s", both_ways_off, false);
    print_spread(both_ways_off, 2 * kPcieGen5PerDirection, pcie2 + " both ways");
    print_matrix("Latency of a " + std::to_string(lesson03::kLatencyBytes) + "-byte copy, P2P on, us", latency_on, true,
                 2);
    print_spread(latency_on, 0, "", "us", 2);
    print_matrix("Latency of a " + std::to_string(lesson03::kLatencyBytes) + "-byte copy, P2P off, us", latency_off,
                 false, 2);
    print_spread(latency_off, 0, "", "us", 2);
    print_matrix("Staged copy through pinned host memory (yours), serial: one buffer, D2H then H2D, GB/s",
                 staged_serial, false);
    print_spread(staged_serial, kPcieGen5PerDirection, pcie + " per direction");
    print_matrix("Staged copy, overlapped: two buffers, chunk k+1's D2H during chunk k's H2D, GB/s", staged_overlapped,
                 false);
    print_spread(staged_overlapped, kPcieGen5PerDirection, pcie + " per direction");
    print_matrix("Staged copy, overlapped / serial", overlap_ratio, false, 2);
    print_spread(overlap_ratio, 0, "", "x", 2);

    bool all_peer = true;
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < count; ++j)
        if (i != j && !links.links[i][j].can_access) all_peer = false;
    std::cout << "\nTargets for the reference solution on the 4-GPU H200 host (NVLink between every pair):\n";
    if (!all_peer) std::cout << "  (some pairs here have no peer access: their P2P-on figures went through the host)\n";
    print_target("direct copy, one way", one_way_on, kTargetOneWay, " GB/s");
    print_target("direct copy, both ways", both_ways_on, kTargetBothWays, " GB/s");
    print_target("staged copy, overlapped / serial", overlap_ratio, kTargetOverlapRatio, "x");
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench-03: " << e.what() << '\n';
    return 1;
  }
}
