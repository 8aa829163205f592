// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 06 demo: your functions on this machine, one task after the other: a communicator per
// visible GPU (what each one says about itself), an all-reduce and a broadcast of small numbers
// you can check by eye, lesson 04's sum as one all-reduce, and task 6's bandwidth figures for a
// rough timing of your all-reduce of 512 MiB (the benchmark is where the real numbers are). The one-process-per-GPU
// tasks run under the test program (they need the course's launcher). A task not done yet prints its NOT_IMPLEMENTED
// line and the demo goes on. Run it as build/tests/demo-06.
#include <cuda_runtime.h>
#include <nccl.h>

#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/programs.h"
#include "common/timer.h"
#include "nccl_collectives.h"

namespace {

std::vector<float> read(const course::DeviceBuffer<float>& buffer) {
  std::vector<float> out(buffer.size());
  CUDA_CHECK(cudaMemcpy(out.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

void print(const std::string& label, const std::vector<float>& values) {
  std::cout << "  " << std::left << std::setw(22) << label << std::right;
  for (const float v : values) std::cout << std::setw(6) << v;
  std::cout << '\n';
}

// Task 6 on your all_reduce in place, one call at a time: 2 untimed calls first (the first one
// connects the ranks and loads NCCL's kernels), then the median of 5 by the host clock.
void time_all_reduce(const std::vector<ncclComm_t>& comms, const std::vector<cudaStream_t>& handles) {
  const int ranks = static_cast<int>(comms.size());
  const std::size_t elements = std::size_t{128} << 20;  // 512 MiB of floats a rank
  const std::size_t bytes = elements * sizeof(float);
  std::vector<course::DeviceBuffer<float>> buffers;
  std::vector<float*> pointers;
  std::vector<const float*> const_pointers;
  for (int k = 0; k < ranks; ++k) {
    buffers.emplace_back(k, elements);
    const course::DeviceGuard on(k);
    CUDA_CHECK(cudaMemset(buffers.back().data(), 0, bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    pointers.push_back(buffers.back().data());
    const_pointers.push_back(buffers.back().data());
  }
  const course::Timing timing = course::measure_host(
      [&] { lesson06::all_reduce(comms, handles, const_pointers, pointers, elements, ncclSum); }, 2, 5);
  const double seconds = timing.median_ms * 1e-3;
  std::cout << std::fixed << std::setprecision(2) << "  median of " << timing.repeats
            << " calls after 2 untimed ones: " << timing.median_ms << " ms\n"
            << std::setprecision(1) << "  algbw " << lesson06::algbw_gb_per_s(bytes, seconds)
            << " GB/s (size / time), busbw "
            << lesson06::busbw_gb_per_s(lesson06::Collective::all_reduce, bytes, seconds, ranks)
            << " GB/s (algbw x 2(n-1)/n: the figure to hold against a link's speed"
            << (ranks == 1 ? "; one rank sends nothing, so 0" : "") << ")\n"
            << "  A rough look through your all_reduce (a launch and a wait per call). The benchmark\n"
            << "  (build/tests/bench-06) measures every size the way nccl-tests does: quote its numbers.\n";
}

}  // namespace

int main() {
  const int count = course::visible_gpu_count();
  int nccl_version = 0;
  (void)ncclGetVersion(&nccl_version);
  std::cout << "Lesson 06 demo: NCCL " << nccl_version / 10000 << '.' << (nccl_version / 100) % 100 << '.'
            << nccl_version % 100 << ", " << count << " GPU" << (count == 1 ? "" : "s")
            << " visible (one rank per GPU).\n";
  if (count == 0) return 0;

  std::vector<int> devices;
  for (int d = 0; d < count; ++d) devices.push_back(d);
  std::vector<ncclComm_t> comms;
  std::vector<course::Stream> streams;
  std::vector<cudaStream_t> handles;
  for (const int d : devices) streams.emplace_back(d);
  for (const auto& s : streams) handles.push_back(s.get());

  course::demo_section("Task 1: a communicator per GPU", [&] {
    comms = lesson06::make_communicators(devices);
    for (std::size_t k = 0; k < comms.size(); ++k) {
      int ranks = 0, rank = 0, device = 0;
      NCCL_CHECK(ncclCommCount(comms[k], &ranks));
      NCCL_CHECK(ncclCommUserRank(comms[k], &rank));
      NCCL_CHECK(ncclCommCuDevice(comms[k], &device));
      std::cout << "  communicator " << k << ": rank " << rank << " of " << ranks << " on GPU " << device << '\n';
    }
  });
  if (comms.size() != devices.size()) return 0;

  const std::size_t n = 8;
  std::vector<course::DeviceBuffer<float>> buffers;
  std::vector<float*> pointers;
  std::vector<const float*> const_pointers;
  for (int k = 0; k < count; ++k) {
    std::vector<float> mine(n);
    for (std::size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(10 * k + i);
    buffers.emplace_back(k, n);
    CUDA_CHECK(cudaMemcpy(buffers.back().data(), mine.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    pointers.push_back(buffers.back().data());
    const_pointers.push_back(buffers.back().data());
    print("rank " + std::to_string(k) + " holds", mine);
  }

  course::demo_section("Task 2: all-reduce (sum) in place", [&] {
    lesson06::all_reduce(comms, handles, const_pointers, pointers, n, ncclSum);
    for (int k = 0; k < count; ++k) print("rank " + std::to_string(k) + " now holds", read(buffers[k]));
  });

  course::demo_section("Task 2: lesson 04's sum of 0, 1, ..., 999999 as one all-reduce", [&] {
    const std::size_t total = 1'000'000;
    std::vector<course::DeviceBuffer<float>> slices;
    std::vector<const float*> slice_pointers;
    std::vector<course::DeviceBuffer<double>> totals;
    std::vector<double*> total_pointers;
    for (int k = 0; k < count; ++k) {
      const course::Range range = course::split_range(total, count, k);
      std::vector<float> part(range.size());
      for (std::size_t i = 0; i < part.size(); ++i) part[i] = static_cast<float>(range.begin + i);
      slices.emplace_back(k, part.size());
      if (!part.empty())
        CUDA_CHECK(cudaMemcpy(slices.back().data(), part.data(), part.size() * sizeof(float), cudaMemcpyHostToDevice));
      slice_pointers.push_back(slices.back().data());
      totals.emplace_back(k, 1);
      total_pointers.push_back(totals.back().data());
    }
    const double sum = lesson06::split_sum(comms, handles, slice_pointers, total, total_pointers);
    std::cout << "  " << std::fixed << std::setprecision(0) << sum << " (expected 499999500000)\n";
  });

  course::demo_section("Task 3: broadcast from the last rank", [&] {
    lesson06::broadcast(comms, handles, const_pointers, pointers, n, count - 1);
    for (int k = 0; k < count; ++k) print("rank " + std::to_string(k) + " now holds", read(buffers[k]));
  });

  course::demo_section("Task 6: an all-reduce of 512 MiB on " + std::to_string(count) + " rank" +
                           (count == 1 ? "" : "s") + ", timed roughly",
                       [&] { time_all_reduce(comms, handles); });

  for (ncclComm_t comm : comms) (void)ncclCommDestroy(comm);
  std::cout << "\nTasks 4 and 5 (one process per GPU) run under the tests: meson test -C build --suite 06-nccl\n";
  return 0;
}
