// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 05 benchmark: y = W x at the size of the well-known tutorial (W of 10000 x 300000 floats,
// 12 GB), scaled down with a note where it does not fit. Side by side in one run: cuBLAS sgemv on
// one GPU (the ceiling), your kernel, the row split and the column split with your kernel and with
// cuBLAS on 1 to all GPUs (distinct GPUs for the scaling figures; several workers on GPU 0 are
// shown apart, labelled), managed memory with and without advice, and a shape where the column
// split wins and one where it loses. Every figure is host-timed (the call returns when y is done)
// after a warm-up: min, median and max of 20 runs; GB = 10^9 bytes. It ends with PASS/FAIL lines
// for the reference solution's targets; those that need more GPUs than found say so.
// Run: meson test -C build --benchmark --suite 05-matvec, or build/tests/bench-05.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "matvec.h"

namespace {

constexpr std::size_t kSeedRows = 10000, kSeedCols = 300000;  // 12 GB of floats
constexpr double kManagedCapBytes = 3e9;                      // managed memory: a few GB at most
constexpr int kWarmup = 3, kRepeats = 20;

struct Stats {
  double min = 0, median = 0, max = 0;  // ms
};

Stats time_host(const std::function<void()>& work) {
  for (int i = 0; i < kWarmup; ++i) work();
  std::vector<double> ms;
  for (int i = 0; i < kRepeats; ++i) {
    const auto begin = std::chrono::steady_clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), 0.5 * (ms[(ms.size() - 1) / 2] + ms[ms.size() / 2]), ms.back()};
}

double seconds_of(const std::function<void()>& work) {
  const auto begin = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

// Random floats in [-1, 1) on every core: 12 GB take a minute on one.
void fill_random(float* data, std::size_t count, std::uint64_t seed) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      for (std::size_t i = count * t / threads; i < count * (t + 1) / threads; ++i) {
        std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);  // splitmix64
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        data[i] = static_cast<float>((z ^ (z >> 31)) >> 40) * (2.0f / 16777216.0f) - 1.0f;
      }
    });
  }
  for (std::thread& t : pool) t.join();
}

double host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (meminfo >> key >> kb)
    if (key == "MemAvailable:") return kb * 1024;
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double free_bytes(int device) {
  const course::DeviceGuard on(device);
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<double>(free);
}

// Peer access between every pair of distinct devices that allows it (a device never with itself).
void enable_peer_access(int count) {
  for (int a = 0; a < count; ++a) {
    const course::DeviceGuard on(a);
    for (int b = 0; b < count; ++b) {
      int can = 0;
      if (a == b || cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) continue;
      const cudaError_t error = cudaDeviceEnablePeerAccess(b, 0);
      if (error != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(error);
      (void)cudaGetLastError();
    }
  }
}

std::string list(const std::vector<int>& devices) {
  std::ostringstream s;
  s << '{';
  for (std::size_t k = 0; k < devices.size(); ++k) s << (k ? "," : "") << devices[k];
  s << '}';
  return s.str();
}

std::vector<int> first_gpus(int g) {
  std::vector<int> devices(static_cast<std::size_t>(g));
  std::iota(devices.begin(), devices.end(), 0);
  return devices;
}

void print_header() {
  std::cout << "  " << std::left << std::setw(44) << "what" << std::setw(12) << "workers" << std::right << std::setw(10)
            << "min ms" << std::setw(10) << "median" << std::setw(10) << "max" << std::setw(10) << "GB/s"
            << std::setw(10) << "speed-up" << '\n';
}

// One line: the times, the bandwidth of reading W once (median), the speed-up over `baseline` ms.
void print_row(const std::string& what, const std::string& workers, const Stats& s, double bytes, double baseline = 0) {
  std::cout << "  " << std::left << std::setw(44) << what << std::setw(12) << workers << std::right << std::fixed
            << std::setprecision(3) << std::setw(10) << s.min << std::setw(10) << s.median << std::setw(10) << s.max
            << std::setprecision(0) << std::setw(10) << bytes / (s.median * 1e6);
  if (baseline > 0) std::cout << std::setprecision(2) << std::setw(9) << baseline / s.median << 'x';
  std::cout << std::defaultfloat << '\n';
}

std::vector<std::string> targets;

void target(const std::string& what, const std::string& goal, bool measured, bool pass, const std::string& detail) {
  std::ostringstream line;
  line << "  " << std::left << std::setw(52) << what << std::setw(14) << goal
       << (measured ? (pass ? "PASS" : "FAIL") : "not measured") << "  (" << detail << ")";
  targets.push_back(line.str());
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// x and y on the root device, for the split products.
struct Vectors {
  course::DeviceBuffer<float> x, y;
  Vectors(int root, std::size_t m, std::size_t n) : x(root, n), y(root, m) {
    std::vector<float> values(n);
    fill_random(values.data(), n, 77);
    const course::DeviceGuard on(root);
    CUDA_CHECK(cudaMemcpy(x.data(), values.data(), x.bytes(), cudaMemcpyHostToDevice));
  }
};

struct SplitTimes {
  Stats own, cublas;
  bool has_cublas = false;
};

SplitTimes time_row_split(const std::vector<int>& devices, const float* W, std::size_t m, std::size_t n,
                          bool with_cublas) {
  Vectors v(0, m, n);
  lesson05::DistributedMatrix A = lesson05::distribute_rows(devices, 0, W, m, n);
  SplitTimes t;
  t.own = time_host([&] { lesson05::multiply_rows(A, v.x.data(), v.y.data()); });
  if (with_cublas) {
    std::vector<lesson05::CublasHandle> handles = lesson05::create_cublas_handles(A);
    t.cublas = time_host([&] { lesson05::multiply_rows_cublas(A, handles, v.x.data(), v.y.data()); });
    t.has_cublas = true;
    lesson05::destroy_cublas_handles(handles);
  }
  return t;
}

Stats time_column_split(const std::vector<int>& devices, const float* W, std::size_t m, std::size_t n) {
  Vectors v(0, m, n);
  lesson05::DistributedMatrix A = lesson05::distribute_columns(devices, 0, W, m, n);
  return time_host([&] { lesson05::multiply_columns(A, v.x.data(), v.y.data()); });
}

}  // namespace

int main() {
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      std::cout << "bench-05: needs a GPU, found none\n";
      return 77;
    }
    enable_peer_access(count);
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::cout << "Lesson 05 benchmark: y = W x on " << count << " GPU" << (count > 1 ? "s" : "")
              << " (GPU 0: " << prop.name << ")\nEvery figure: host-timed, " << kWarmup
              << " warm-up runs, then min, median and max of " << kRepeats
              << " runs; GB/s = bytes of W / median, GB = 10^9 bytes.\n";

    // ---- Size: the seed's 12 GB, or what fits -------------------------------------------------
    std::size_t m = kSeedRows;
    const std::size_t n = kSeedCols;
    double device_free = free_bytes(0);
    for (int d = 1; d < count; ++d) device_free = std::min(device_free, free_bytes(d));
    const double fits = std::min(0.8 * device_free, 0.5 * host_available_bytes());
    if (static_cast<double>(m * n * sizeof(float)) > fits) {
      m = std::max<std::size_t>(64, static_cast<std::size_t>(fits / (n * sizeof(float))) / 64 * 64);
      std::cout << "NOTE: the seed's W (" << kSeedRows << " x " << kSeedCols << ", "
                << fixed(kSeedRows * kSeedCols * 4 / 1e9, 1) << " GB) does not fit (" << fixed(device_free / 1e9, 1)
                << " GB free on the smallest GPU, " << fixed(host_available_bytes() / 1e9, 1)
                << " GB of host memory available): using " << m << " x " << n << " instead.\n";
    }
    const double W_bytes = static_cast<double>(m * n * sizeof(float));
    std::cout << "W: " << m << " x " << n << " floats, " << fixed(W_bytes / 1e9, 2) << " GB\n";

    std::unique_ptr<course::PinnedBuffer<float>> pinned;
    std::vector<float> pageable;
    float* W = nullptr;
    try {
      pinned = std::make_unique<course::PinnedBuffer<float>>(m * n);  // uploads at full PCIe speed
      W = pinned->data();
    } catch (const std::exception&) {
      (void)cudaGetLastError();
      pageable.resize(m * n);
      W = pageable.data();
      std::cout << "NOTE: W could not be pinned; uploads go through pageable memory (slower set-up only)\n";
    }
    fill_random(W, m * n, 1);

    // ---- One GPU: cuBLAS (the ceiling) and your kernel -------------------------------------------
    std::cout << "\nOne GPU (GPU 0), W in its memory:\n";
    print_header();
    Stats ceiling, own;
    {
      const course::DeviceBuffer<float> W0(0, m * n);
      const course::DeviceGuard on(0);
      CUDA_CHECK(cudaMemcpy(W0.data(), W, W0.bytes(), cudaMemcpyHostToDevice));
      const Vectors v(0, m, n);
      const course::Stream stream(0);
      cublasHandle_t handle = nullptr;
      CUBLAS_CHECK(cublasCreate(&handle));
      CUBLAS_CHECK(cublasSetStream(handle, stream));
      const float one = 1.0f, zero = 0.0f;
      ceiling = time_host([&] {
        CUBLAS_CHECK(cublasSgemv(handle, CUBLAS_OP_T, static_cast<int>(n), static_cast<int>(m), &one, W0.data(),
                                 static_cast<int>(n), v.x.data(), 1, &zero, v.y.data(), 1));
        stream.synchronize();
      });
      CUBLAS_CHECK(cublasDestroy(handle));
      print_row("cuBLAS sgemv (the ceiling)", "{0}", ceiling, W_bytes);
      own = time_host([&] {
        lesson05::launch_gemv(W0.data(), v.x.data(), v.y.data(), m, n, stream);
        stream.synchronize();
      });
      print_row("your kernel (launch_gemv)", "{0}", own, W_bytes);
    }
    const double own_fraction = ceiling.median / own.median;
    target("your kernel vs cuBLAS sgemv, one GPU, medians", ">= 90%", true, own_fraction >= 0.9,
           fixed(100 * own_fraction, 1) + "% of cuBLAS");

    // ---- Splits over 1 to all distinct GPUs -------------------------------------------------------
    std::cout << "\nSplit over distinct GPUs (x on GPU 0 is copied to every worker, y gathered on GPU 0);\n"
                 "speed-up: over the same method on GPU 0 alone:\n";
    print_header();
    std::vector<SplitTimes> rows_on(static_cast<std::size_t>(count) + 1);
    std::vector<Stats> columns_on(static_cast<std::size_t>(count) + 1);
    for (int g = 1; g <= count; ++g) {
      const std::vector<int> devices = first_gpus(g);
      rows_on[g] = time_row_split(devices, W, m, n, true);
      columns_on[g] = time_column_split(devices, W, m, n);
    }
    for (int g = 1; g <= count; ++g)
      print_row("row split, your kernel", list(first_gpus(g)), rows_on[g].own, W_bytes, rows_on[1].own.median);
    for (int g = 1; g <= count; ++g)
      print_row("row split, cuBLAS", list(first_gpus(g)), rows_on[g].cublas, W_bytes, rows_on[1].cublas.median);
    for (int g = 1; g <= count; ++g)
      print_row("column split, your kernel", list(first_gpus(g)), columns_on[g], W_bytes, columns_on[1].median);
    for (const int g : {2, 4}) {
      const std::string goal = g == 2 ? ">= 1.90x" : ">= 3.70x";
      const std::string what = "cuBLAS row split, " + std::to_string(g) + " GPUs vs 1, medians";
      if (count < g) {
        target(what, goal, false, false,
               "needs " + std::to_string(g) + " distinct GPUs, found " + std::to_string(count));
        target("  ... its median within 10% of its minimum", "<= 1.10x", false, false,
               "needs " + std::to_string(g) + " distinct GPUs, found " + std::to_string(count));
        continue;
      }
      const double speedup = rows_on[1].cublas.median / rows_on[g].cublas.median;
      target(what, goal, true, speedup >= (g == 2 ? 1.9 : 3.7), fixed(speedup, 2) + "x");
      const double spread = rows_on[g].cublas.median / rows_on[g].cublas.min;
      target("  ... its median within 10% of its minimum", "<= 1.10x", true, spread <= 1.1,
             "median / min = " + fixed(spread, 3));
    }

    // ---- Several workers on GPU 0: correctness of the split, not a speed-up -------------------------
    std::cout << "\nSeveral workers on GPU 0 (repeated device: one GPU's bandwidth shared; not a scaling figure):\n";
    print_header();
    for (const int k : {2, 4}) {
      const std::vector<int> devices(static_cast<std::size_t>(k), 0);
      const SplitTimes r = time_row_split(devices, W, m, n, true);
      print_row("row split, your kernel (repeated device)", list(devices), r.own, W_bytes, rows_on[1].own.median);
      print_row("row split, cuBLAS (repeated device)", list(devices), r.cublas, W_bytes, rows_on[1].cublas.median);
      print_row("column split, your kernel (repeated device)", list(devices), time_column_split(devices, W, m, n),
                W_bytes, columns_on[1].median);
    }

    // ---- Column split against row split: what moves between GPUs ---------------------------------------
    const std::vector<int> all = count > 1 ? first_gpus(count) : std::vector<int>{0, 0, 0, 0};
    const std::string label = count > 1 ? "" : " (repeated device)";
    std::cout << "\nColumn split vs row split on " << list(all) << label
              << ": the row split sends all of x to every worker and gathers m floats; the column split\n"
                 "sends each worker its part of x and gathers a partial y of m floats from every worker:\n";
    print_header();
    struct Shape {
      std::size_t m, n;
      const char* name;
    };
    bool wide_wins = false, tall_loses = false;
    std::string wide_detail, tall_detail;
    for (const Shape s : {Shape{32, std::size_t{1} << 23, "wide"}, Shape{std::size_t{1} << 22, 64, "tall"}}) {
      course::PinnedBuffer<float> Ws(s.m * s.n);  // pinned: the column split's strided copy runs at DMA speed
      fill_random(Ws.data(), Ws.size(), 3);
      const double bytes = static_cast<double>(Ws.bytes());
      const Stats r = time_row_split(all, Ws.data(), s.m, s.n, false).own;
      const Stats c = time_column_split(all, Ws.data(), s.m, s.n);
      const std::string shape = std::string(s.name) + " W " + std::to_string(s.m) + " x " + std::to_string(s.n);
      print_row(shape + ", row split", list(all), r, bytes);
      print_row(shape + ", column split", list(all), c, bytes, r.median);
      const std::string detail = shape + ": column " + fixed(c.median, 3) + " ms, row " + fixed(r.median, 3) + " ms";
      if (s.m < s.n) {
        wide_wins = c.median < r.median;
        wide_detail = detail;
      } else {
        tall_loses = c.median > r.median;
        tall_detail = detail;
      }
    }
    target("a shape where the column split beats the row split", "shown", true, wide_wins, wide_detail);
    target("a shape where the column split loses", "shown", true, tall_loses, tall_detail);

    // ---- Managed memory ---------------------------------------------------------------------------------
    const std::vector<int> managed_devices = first_gpus(count);
    for (const int d : managed_devices) {
      int concurrent = 0;
      CUDA_CHECK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, d));
      if (concurrent) continue;
      target("managed with advice + prefetch vs explicit, medians", "<= 1.10x", false, false,
             "GPU " + std::to_string(d) + " has no concurrent managed access");
      std::cout << "\nTargets for the reference solution (the course's H200 hosts), as measured here:\n";
      for (const std::string& line : targets) std::cout << line << '\n';
      return 0;
    }
    const double managed_cap = std::min({kManagedCapBytes, 0.5 * device_free, W_bytes});
    const std::size_t mu = std::max<std::size_t>(1, static_cast<std::size_t>(managed_cap / (n * sizeof(float))));
    const double mu_bytes = static_cast<double>(mu * n * sizeof(float));
    std::cout
        << "\nManaged memory on " << list(managed_devices) << ", W " << mu << " x " << n << " ("
        << fixed(mu_bytes / 1e9, 2) << " GB: kept at a few GB and under half of the free memory, since\n"
        << "over-subscribed managed memory can stall a GPU); the first run after the host wrote W is shown apart:\n";
    print_header();
    const Stats explicit_rows = time_row_split(managed_devices, W, mu, n, false).own;
    print_row("explicit cudaMalloc, row split", list(managed_devices), explicit_rows, mu_bytes);
    Stats advised;
    for (const bool advice : {false, true}) {
      lesson05::ManagedMatrix A = lesson05::allocate_managed(managed_devices, mu, n);
      std::copy(W, W + mu * n, A.W);  // written by the host: the pages start in host memory
      std::fill(A.x, A.x + n, 0.5f);
      double placing = 0;
      if (advice) placing = seconds_of([&] { lesson05::advise_and_prefetch(A); });
      const double first = seconds_of([&] { lesson05::multiply_managed(A); });
      const Stats s = time_host([&] { lesson05::multiply_managed(A); });
      const std::string what = advice ? "managed, advised + prefetched" : "managed, no advice";
      std::cout << "  " << what << ": "
                << (advice ? "advise_and_prefetch took " + fixed(placing * 1e3, 1) + " ms, " : "") << "first run "
                << fixed(first * 1e3, 1) << " ms\n";
      print_row(what, list(managed_devices), s, mu_bytes, explicit_rows.median);
      if (advice) advised = s;
      lesson05::free_managed(A);
    }
    const double managed_ratio = advised.median / explicit_rows.median;
    target("managed with advice + prefetch vs explicit, medians", "<= 1.10x", true, managed_ratio <= 1.1,
           fixed(managed_ratio, 3) + "x the explicit time");

    std::cout << "\nTargets for the reference solution (the course's H200 hosts), as measured here:\n";
    for (const std::string& line : targets) std::cout << line << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench-05: " << e.what() << '\n';
    return 1;
  }
}
