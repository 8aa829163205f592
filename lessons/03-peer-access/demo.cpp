// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03 demo: your functions on this machine, one task after the other. It prints the peer
// matrix, enables peer access twice (the second call must leave no error behind), copies 64 MB
// between two GPUs with peer access on, off and with the staged path forced, reporting the path
// each copy took, and lets a kernel on one GPU read the other's memory. A task not done yet
// prints its NOT_IMPLEMENTED line and the demo goes on with the next one.
// Run it as build/tests/demo-03.
// instructor-only
// build/tests/solution-demo-03 runs the reference solution.
// /instructor-only
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/programs.h"
#include "peer_access.h"

namespace {

// Copies `bytes` from GPU src to GPU dst with copy_between_devices and says how it went.
void demo_copy(const std::string& label, int src, int dst, std::size_t bytes, const lesson03::PeerAccessState& state,
               const lesson03::CopyOptions& options) {
  std::vector<std::uint8_t> pattern(bytes);
  for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<std::uint8_t>(i * 131 + 7);
  const course::DeviceBuffer<std::uint8_t> from(src, bytes), to(dst, bytes);
  CUDA_CHECK(cudaMemcpy(from.data(), pattern.data(), bytes, cudaMemcpyHostToDevice));
  {
    // cudaMemset works on the current device's memory: with peer access off, setting another
    // GPU's memory from here fails with cudaErrorInvalidValue.
    const course::DeviceGuard on_destination(dst);
    CUDA_CHECK(cudaMemset(to.data(), 0, bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  const auto begin = std::chrono::steady_clock::now();
  const lesson03::CopyPath path =
      lesson03::copy_between_devices(to.data(), dst, from.data(), src, bytes, state, options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  std::vector<std::uint8_t> back(bytes);
  CUDA_CHECK(cudaMemcpy(back.data(), to.data(), bytes, cudaMemcpyDeviceToHost));
  std::cout << "  " << std::left << std::setw(18) << label << std::right << "path " << std::setw(6)
            << lesson03::to_string(path) << std::fixed << std::setprecision(2) << std::setw(9) << ms << " ms"
            << std::setprecision(1) << std::setw(9) << bytes / (ms * 1e6) << " GB/s (first call, not a benchmark)  "
            << (back == pattern ? "bytes intact" : "BYTES DIFFER") << '\n';
}

}  // namespace

int main() {
  const int count = course::visible_gpu_count();
  std::cout << "Lesson 03 demo: peer access. " << count << " GPU" << (count == 1 ? "" : "s") << " visible.\n";
  if (count == 0) return 0;
  const int src = 0, dst = count > 1 ? 1 : 0;

  course::demo_section("Task 1: who can reach whom (rows: the device that reads and writes)",
                       [] { lesson03::print_peer_matrix(std::cout, lesson03::query_peer_matrix()); });

  lesson03::PeerAccessState on;
  course::demo_section("Task 2: enable peer access everywhere it is possible, twice", [&] {
    (void)lesson03::enable_peer_access_all();
    on = lesson03::enable_peer_access_all();
    int pairs = 0;
    for (const auto& row : on.enabled)
      for (bool enabled : row) pairs += enabled ? 1 : 0;
    std::cout << "  " << pairs << " of " << count * (count - 1) << " ordered pairs enabled; cudaGetLastError() after "
              << "the second call: " << cudaGetErrorName(cudaGetLastError()) << " (should be cudaSuccess)\n";
  });

  const std::size_t bytes = 64'000'000;
  course::demo_section("Task 3: copy 64 MB from GPU " + std::to_string(src) + " to GPU " + std::to_string(dst), [&] {
    demo_copy("peer access on", src, dst, bytes, on, {});
    lesson03::CopyOptions forced;
    forced.force_staged = true;
    demo_copy("staged, forced", src, dst, bytes, on, forced);
    const lesson03::PeerAccessState off = lesson03::disable_peer_access_all();
    try {
      demo_copy("peer access off", src, dst, bytes, off, {});
    } catch (...) {
      on = lesson03::enable_peer_access_all();  // task 4 below reads peer memory: turn it back on first
      throw;
    }
    on = lesson03::enable_peer_access_all();
  });

  course::demo_section(
      "Task 4: a kernel on GPU " + std::to_string(src) + " reads GPU " + std::to_string(dst) + "'s memory", [&] {
        if (!on.both_ways(src, dst)) {
          std::cout << "  peer access " << src << " <-> " << dst
                    << " is off: a kernel must not read the other's memory\n";
          return;
        }
        const std::size_t n = 1'000'003;
        std::vector<float> local(n), remote(n);
        for (std::size_t i = 0; i < n; ++i) {
          local[i] = static_cast<float>(i % 1000);
          remote[i] = static_cast<float>(2 * (i % 7));
        }
        const course::DeviceBuffer<float> local_d(src, n), out_d(src, n), remote_d(dst, n);
        CUDA_CHECK(cudaMemcpy(local_d.data(), local.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(remote_d.data(), remote.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        lesson03::add_peer_buffer(src, out_d.data(), local_d.data(), dst, remote_d.data(), n);
        std::vector<float> out(n);
        CUDA_CHECK(cudaMemcpy(out.data(), out_d.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += out[i] == local[i] + remote[i] ? 0 : 1;
        std::cout << "  out[i] = local[i] + remote[i] for " << n << " elements: " << wrong << " wrong\n";
      });

  course::demo_section("Task 5: one measurement (build/tests/bench-03 prints every pair)", [&] {
    const lesson03::Measurement m = lesson03::measure_one_way(src, dst, std::size_t{256} << 20);
    std::cout << "  GPU " << src << " -> GPU " << dst << ", 256 MiB, peer access on: " << std::fixed
              << std::setprecision(1) << m.gigabytes_per_second << " GB/s (median of " << m.repeats << ")\n";
  });
  return 0;
}
