// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08 demo: your functions on this machine, one task after the other, on a plate of
// 2050 x 2050 points whose top edge is held at 1 and the other edges at 0 (heat flows in from the
// top). The grid is split over four workers (four GPUs where there are four, else as many GPUs as
// there are, used in turn; one GPU: {0, 0, 0, 0}); each task's result is compared, bit for bit,
// with one worker's result of the same sweeps. A task not done yet prints its NOT_IMPLEMENTED line
// and the demo goes on. Run it as build/tests/demo-08.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/programs.h"
#include "jacobi.h"

namespace {

constexpr std::size_t kSide = 2050;

// The whole grid, gathered from every worker's rows (the boundary rows from the outer halos).
std::vector<float> gather(const lesson08::Decomposition& grid) {
  std::vector<float> all(grid.ny * grid.nx);
  for (const lesson08::Worker& w : grid.workers) {
    const std::size_t first = w.rows.begin - 1, count = w.rows.size() + 2;
    CUDA_CHECK(
        cudaMemcpy(all.data() + first * grid.nx, w.current.data(), count * grid.nx * sizeof(float), cudaMemcpyDefault));
  }
  return all;
}

std::vector<float> hot_top_plate() {
  std::vector<float> plate(kSide * kSide, 0.0f);
  for (std::size_t x = 0; x < kSide; ++x) plate[x] = 1.0f;
  return plate;
}

double ms_since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
}

void compare(const std::string& label, const std::vector<float>& got, const std::vector<float>& one_worker, double ms) {
  std::size_t differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &one_worker[i], sizeof(float)) != 0;
  std::cout << "  " << std::left << std::setw(44) << label << std::right << std::fixed << std::setprecision(2)
            << std::setw(9) << ms << " ms   "
            << (differ == 0 ? "bit for bit equal to one worker" : std::to_string(differ) + " points differ")
            << "   centre " << std::setprecision(6) << got[(kSide / 2) * kSide + kSide / 2] << '\n';
}

}  // namespace

int main() {
  const int count = course::visible_gpu_count();
  std::cout << "Lesson 08 demo: Jacobi with halo exchange. " << count << " GPU" << (count == 1 ? "" : "s")
            << " visible.\n";
  if (count == 0) return 0;
  std::vector<int> devices;
  for (int k = 0; k < 4; ++k) devices.push_back(k % count);
  std::cout << "Workers: {" << devices[0] << ", " << devices[1] << ", " << devices[2] << ", " << devices[3] << "}; "
            << kSide << " x " << kSide << " points, the top edge at 1, the others at 0.\n";
  const std::vector<float> plate = hot_top_plate();
  const std::vector<int> one = {0};
  constexpr int kSweeps = 500;
  std::vector<float> reference;

  course::demo_section("Task 1: the blocks of rows", [&] {
    const lesson08::Decomposition grid = lesson08::decompose(devices, kSide, kSide, plate);
    for (std::size_t k = 0; k < grid.workers.size(); ++k)
      std::cout << "  worker " << k << ": GPU " << grid.workers[k].device << ", rows [" << grid.workers[k].rows.begin
                << ", " << grid.workers[k].rows.end << ") and a halo row above and below\n";
  });

  course::demo_section("Task 2: " + std::to_string(kSweeps) + " plain sweeps, halos exchanged after each", [&] {
    lesson08::Decomposition single = lesson08::decompose(one, kSide, kSide, plate);
    auto begin = std::chrono::steady_clock::now();
    lesson08::run_plain(single, kSweeps);
    const double single_ms = ms_since(begin);
    reference = gather(single);
    compare("one worker, run_plain (the yardstick)", reference, reference, single_ms);
    lesson08::Decomposition split = lesson08::decompose(devices, kSide, kSide, plate);
    begin = std::chrono::steady_clock::now();
    lesson08::run_plain(split, kSweeps);
    compare("four workers, run_plain", gather(split), reference, ms_since(begin));
  });

  course::demo_section("Task 3: the same with the halo exchange behind the interior", [&] {
    lesson08::Decomposition split = lesson08::decompose(devices, kSide, kSide, plate);
    const auto begin = std::chrono::steady_clock::now();
    lesson08::run_overlapped(split, kSweeps);
    if (reference.empty()) throw std::runtime_error("task 2's one-worker result is missing: nothing to compare with");
    compare("four workers, run_overlapped", gather(split), reference, ms_since(begin));
  });

  course::demo_section("Task 4: towards the steady state, a residual every 1000 sweeps", [&] {
    lesson08::Decomposition split = lesson08::decompose(devices, kSide, kSide, plate);
    const auto begin = std::chrono::steady_clock::now();
    const lesson08::SolveReport report = lesson08::solve(split, 10000, {lesson08::Schedule::overlapped, 1000, 1e-3});
    const double ms = ms_since(begin);
    for (std::size_t i = 0; i < report.residuals.size(); ++i)
      std::cout << "  after " << std::setw(5) << (i + 1) * 1000 << " sweeps: residual " << std::scientific
                << std::setprecision(3) << report.residuals[i] << std::fixed << '\n';
    std::cout << "  " << report.iterations << " sweeps in " << std::setprecision(1) << ms << " ms; the centre is at "
              << std::setprecision(6) << gather(split)[(kSide / 2) * kSide + kSide / 2]
              << ", still far from the steady state's 0.25: a Jacobi sweep moves heat one row, so crossing\n"
              << "  N rows takes about N^2 sweeps (multigrid or conjugate gradients need far fewer)\n";
  });
  return 0;
}
