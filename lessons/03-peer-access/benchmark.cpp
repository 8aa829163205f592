// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 benchmark, in the style of CUDA's p2pBandwidthLatencyTest but built from your task 5
// functions: for every ordered pair of GPUs, bandwidth one way and both ways and the latency of a
// small copy, with peer access on and off, then your staged copy (through pinned host memory)
// serial against overlapped. Each table is printed beside the ceiling of the link it measured
// where this machine says what that link is: the PCIe links of the GPUs (read from Linux's sysfs)
// for everything that goes through the host; for peer copies none, since the runtime does not say
// whether a peer link is NVLink or PCIe, nor how wide (nvidia-smi topo -m and nvidia-smi nvlink -s
// do). On the course's 4-GPU H200 host, the reference solution's targets get PASS or BELOW.
// GB = 10^9 bytes everywhere. Run: meson test -C build --benchmark --suite 03-peer-access, or
// build/tests/bench-03 (yours).
// instructor-only
// build/tests/solution-bench-03 runs it on the reference solution (and is what Meson's benchmark
// runs in the full course).
// /instructor-only
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
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
constexpr double kTargetOneWay = 380;                   // the reference solution on the 4-GPU H200 host
constexpr double kTargetBothWays = 760;
constexpr double kTargetOverlapRatio = 1.5;
const lesson03::MeasureOptions kFast{2, 20};  // copies over NVLink take a millisecond or less
const lesson03::MeasureOptions kSlow{1, 8};   // copies through the host take ten times longer

// A GPU's PCIe link as its two ends advertise it in sysfs: the lower of the GPU's and its upstream
// port's maximum speed and width (an idle GPU lowers its current speed, so the maximum is read).
// Per direction, after the line code (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s on), before
// packet overhead. Unknown (0) where sysfs does not say: another OS, a container without /sys.
struct PcieLink {
  double gigatransfers = 0;  // GT/s per lane
  int width = 0;             // lanes
  double gigabytes_per_second() const {
    return gigatransfers * width * (gigatransfers <= 5 ? 8.0 / 10 : 128.0 / 130) / 8;
  }
  std::string name() const {
    std::ostringstream out;
    out << "PCIe " << std::setprecision(3) << gigatransfers << " GT/s x" << width << " ~" << std::fixed
        << std::setprecision(1) << gigabytes_per_second() << " GB/s";
    return out.str();
  }
};

double read_number(const std::string& path) {
  std::ifstream in(path);
  double value = 0;
  return in >> value ? value : 0;
}

PcieLink pcie_link(int device) {
  char bus_id[32] = {};
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess ||
      std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) {
    (void)cudaGetLastError();
    return {};
  }
  char name[32];
  std::snprintf(name, sizeof name, "%04x:%02x:%02x.%x", domain, bus, slot, function);
  const std::string gpu = std::string("/sys/bus/pci/devices/") + name;
  PcieLink link{read_number(gpu + "/max_link_speed"), static_cast<int>(read_number(gpu + "/max_link_width"))};
  const double port_speed = read_number(gpu + "/../max_link_speed");  // the upstream port, where sysfs has it
  const int port_width = static_cast<int>(read_number(gpu + "/../max_link_width"));
  if (port_speed > 0) link.gigatransfers = std::min(link.gigatransfers, port_speed);
  if (port_width > 0) link.width = std::min(link.width, port_width);
  return link.gigatransfers > 0 && link.width > 0 ? link : PcieLink{};
}

// The slowest GPU's link: a copy through the host crosses two of them.
PcieLink slowest_pcie_link(int count) {
  PcieLink slowest;
  for (int d = 0; d < count; ++d) {
    const PcieLink link = pcie_link(d);
    if (link.gigabytes_per_second() == 0) return {};
    if (d == 0 || link.gigabytes_per_second() < slowest.gigabytes_per_second()) slowest = link;
  }
  return slowest;
}

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

// The spread between GPUs, beside `peak` where it is known (> 0), otherwise beside `no_peak`.
void print_spread(const Matrix& values, double peak, const std::string& peak_name, const std::string& unit = "GB/s",
                  int precision = 1, const std::string& no_peak = "") {
  const Spread s = between_gpus(values);
  std::cout << "  between GPUs: min " << std::fixed << std::setprecision(precision) << s.min << ", median " << s.median
            << ", max " << s.max << ' ' << unit;
  if (peak > 0) {
    std::cout << " = " << std::setprecision(0) << 100 * s.median / peak << "% (median) of " << peak_name;
  } else if (!no_peak.empty()) {
    std::cout << "; " << no_peak;
  }
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
              << "The diagonal is a copy within one GPU: it reads and writes its own memory (HBM).\n";
    const PcieLink pcie_link = slowest_pcie_link(count);
    const double pcie = pcie_link.gigabytes_per_second();  // per direction; 0: unknown
    if (pcie > 0)
      std::cout << "Through the host, the ceiling is the slowest GPU's PCIe link as sysfs advertises it: "
                << pcie_link.name() << " per direction.\n";
    else
      std::cout << "The GPUs' PCIe links are not readable from sysfs here: no ceiling is printed for copies "
                   "through the host.\n";
    std::cout << "Peer copies get no ceiling: the runtime does not say whether a peer link is NVLink or PCIe, nor "
                 "how wide (nvidia-smi topo -m and nvidia-smi nvlink -s do).\n\n";
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

    const std::string per_direction = pcie_link.name() + " per direction";
    const std::string both_directions = "twice " + pcie_link.name() + ", both directions";
    // A peer figure above what PCIe carries can only have come over a faster fabric.
    const auto peer_reading = [&](const Matrix& values, double pcie_ceiling) {
      if (pcie_ceiling > 0 && between_gpus(values).median > 1.1 * pcie_ceiling)
        return std::string("no ceiling known; faster than PCIe here can carry: an NVLink-class link");
      return std::string("no ceiling known (see nvidia-smi topo -m)");
    };

    print_matrix("Unidirectional bandwidth, P2P on (cudaMemcpyPeerAsync), GB/s", one_way_on, true);
    print_spread(one_way_on, 0, "", "GB/s", 1, peer_reading(one_way_on, pcie));
    print_matrix("Bidirectional bandwidth, P2P on (both directions at once, total), GB/s", both_ways_on, true);
    print_spread(both_ways_on, 0, "", "GB/s", 1, peer_reading(both_ways_on, 2 * pcie));
    print_matrix("Unidirectional bandwidth, P2P off (the driver stages through host memory), GB/s", one_way_off, false);
    print_spread(one_way_off, pcie, per_direction);
    print_matrix("Bidirectional bandwidth, P2P off, GB/s", both_ways_off, false);
    print_spread(both_ways_off, 2 * pcie, both_directions);
    print_matrix("Latency of a " + std::to_string(lesson03::kLatencyBytes) + "-byte copy, P2P on, us", latency_on, true,
                 2);
    print_spread(latency_on, 0, "", "us", 2);
    print_matrix("Latency of a " + std::to_string(lesson03::kLatencyBytes) + "-byte copy, P2P off, us", latency_off,
                 false, 2);
    print_spread(latency_off, 0, "", "us", 2);
    print_matrix("Staged copy through pinned host memory (yours), serial: one buffer, D2H then H2D, GB/s",
                 staged_serial, false);
    print_spread(staged_serial, pcie, per_direction);
    print_matrix("Staged copy, overlapped: two buffers, chunk k+1's D2H during chunk k's H2D, GB/s", staged_overlapped,
                 false);
    print_spread(staged_overlapped, pcie, per_direction);
    print_matrix("Staged copy, overlapped / serial", overlap_ratio, false, 2);
    print_spread(overlap_ratio, 0, "", "x", 2);

    bool all_peer = true;
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < count; ++j)
        if (i != j && !links.links[i][j].can_access) all_peer = false;
    bool all_h200 = count == 4;
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, d) != cudaSuccess || std::string(prop.name).find("H200") == std::string::npos)
        all_h200 = false;
    }
    if (!all_h200) {
      std::cout << "\n(The targets of the reference solution are for the course's 4-GPU H200 host; this machine is "
                   "another, so they are not compared.)\n";
      return 0;
    }
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
