// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 demo: your all-reduce on every GPU this machine has, or on three workers of GPU 0
// where it has one. Each worker k holds k + 1 in every element, so every worker should end with
// 1 + 2 + ... + W everywhere; the ring, the one-shot, the one-kernel, the LL one-shot and the dispatcher each show
// what they left, and a short table times them against each other. A task not done yet stops its
// own section.
// Run it with: ./build/tests/demo-07
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "all_reduce.h"
#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/programs.h"

using namespace lesson07;

namespace {

struct Demo {
  std::vector<course::DeviceBuffer<float>> memory;
  std::vector<float*> pointers;
};

Demo make_buffers(const AllReduceWorkspace& workspace, std::size_t count) {
  Demo demo;
  for (int k = 0; k < workspace.size(); ++k) {
    demo.memory.emplace_back(workspace.workers[k].device, count);
    demo.pointers.push_back(demo.memory.back().data());
  }
  return demo;
}

void fill(const AllReduceWorkspace& workspace, Demo& demo, std::size_t count) {
  for (int k = 0; k < workspace.size(); ++k) {
    const std::vector<float> values(count, static_cast<float>(k + 1));
    const course::DeviceGuard on_device(workspace.workers[k].device);
    CUDA_CHECK(cudaMemcpy(demo.pointers[k], values.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
}

void show(const AllReduceWorkspace& workspace, const Demo& demo, std::size_t count) {
  const int w = workspace.size();
  const float expected = static_cast<float>(w * (w + 1) / 2);
  synchronize(workspace);  // every worker; a one-kernel that gave up throws here, with why
  for (int k = 0; k < w; ++k) {
    std::vector<float> values(count);
    const course::DeviceGuard on_device(workspace.workers[k].device);
    CUDA_CHECK(cudaMemcpy(values.data(), demo.pointers[k], count * sizeof(float), cudaMemcpyDeviceToHost));
    std::size_t wrong = 0;
    for (const float v : values) wrong += v == expected ? 0 : 1;
    std::printf("  worker %d (GPU %d): first %g, last %g, %zu of %zu wrong (expected %g everywhere)\n", k,
                workspace.workers[k].device, values.front(), values.back(), wrong, count, expected);
  }
}

}  // namespace

int main() {
  const int gpus = course::visible_gpu_count();
  if (gpus == 0) {
    std::printf("Lesson 07 demo: no GPU visible; nothing to show.\n");
    return 0;
  }
  std::vector<int> devices;
  for (int d = 0; d < gpus; ++d) devices.push_back(d);
  if (gpus == 1) devices = {0, 0, 0};
  const std::size_t count = 1000003;  // not divisible by the worker count nor by 4
  std::printf("Lesson 07 demo: %zu workers on GPU%s", devices.size(), gpus == 1 ? " 0" : "s");
  for (const int d : devices) std::printf(" %d", d);
  std::printf(", %zu floats each; worker k holds k + 1.\n\n", count);
  AllReduceWorkspace workspace(devices);
  Demo demo = make_buffers(workspace, count);
  course::demo_section("ring_all_reduce (task 1)", [&] {
    for (int c = 0; c < workspace.size(); ++c) {
      const course::Range r = ring_chunk(count, workspace.size(), c);
      std::printf("  chunk %d: [%zu, %zu)\n", c, r.begin, r.end);
    }
    fill(workspace, demo, count);
    ring_all_reduce(workspace, demo.pointers, count);
    show(workspace, demo, count);
  });
  course::demo_section("what it costs (task 2)", [&] {
    const double bytes = static_cast<double>(count * sizeof(float));
    const Cost ring = ring_cost(bytes, workspace.size()), one_shot = one_shot_cost(bytes, workspace.size());
    std::printf("  ring:     %.0f bytes in per worker, %d steps one after another\n", ring.bytes_per_worker,
                ring.dependent_steps);
    std::printf("  one-shot: %.0f bytes in per worker, %d step\n", one_shot.bytes_per_worker, one_shot.dependent_steps);
  });
  course::demo_section("one_shot_all_reduce (task 3)", [&] {
    fill(workspace, demo, count);
    one_shot_all_reduce(workspace, demo.pointers, count);
    show(workspace, demo, count);
  });
  course::demo_section("one_kernel_all_reduce (task 4)", [&] {
    std::printf("  %d blocks per worker for %zu floats, %d for 2\n", one_kernel_blocks(workspace, count), count,
                one_kernel_blocks(workspace, 2));
    fill(workspace, demo, count);
    one_kernel_all_reduce(workspace, demo.pointers, count);
    show(workspace, demo, count);
  });
  course::demo_section("ll_one_shot_all_reduce (task 5)", [&] {
    const std::size_t small = std::min(count, workspace.ll_max_count);  // what its inbox holds
    std::printf("  %d blocks per worker for %zu floats, %d for 2\n", ll_one_shot_blocks(workspace, small), small,
                ll_one_shot_blocks(workspace, 2));
    fill(workspace, demo, small);
    ll_one_shot_all_reduce(workspace, demo.pointers, small);
    show(workspace, demo, small);
  });
  course::demo_section("measure_crossover and all_reduce (task 6)", [&] {
    const std::vector<std::size_t> counts = {2, 256, 4096, 65536, 262144, count};  // ascending
    const std::vector<AlgorithmTiming> rows = measure_crossover(workspace, demo.pointers, counts);
    std::printf("  %10s %14s %14s %16s %17s\n", "floats", "one-shot (us)", "ring (us)", "one-kernel (us)",
                "LL one-shot (us)");
    for (const AlgorithmTiming& row : rows)
      std::printf("  %10zu %14.1f %14.1f %16.1f %17.1f\n", row.count, row.one_shot_ms * 1e3, row.ring_ms * 1e3,
                  row.one_kernel_ms * 1e3, row.ll_one_shot_ms * 1e3);
    if (workspace.crossover_count == kRingNeverWins)
      std::printf("  crossover: the ring never won here\n");
    else
      std::printf("  crossover: the ring from %zu floats on\n", workspace.crossover_count);
    if (workspace.one_kernel_below == kNeverFromHere)
      std::printf("  the one-kernel is faster than the one-shot at every count measured\n");
    else
      std::printf("  the one-kernel below %zu floats\n", workspace.one_kernel_below);
    if (workspace.ll_one_shot_below == kNeverFromHere)
      std::printf("  the LL one-shot is the fastest one-step algorithm at every count it takes\n");
    else
      std::printf("  the LL one-shot below %zu floats\n", workspace.ll_one_shot_below);
    fill(workspace, demo, count);
    std::printf("  all_reduce of %zu floats runs the %s\n", count, to_string(choose_algorithm(workspace, count)));
    all_reduce(workspace, demo.pointers, count);
    show(workspace, demo, count);
  });
  return 0;
}
