// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01 demo: a deviceQuery-style table of this machine's GPUs, made by your own
// functions, then the devices a job asking for 1 GB free and compute capability 7.0 would get.
// Run it as build/tests/demo-01 (yours), and again with CUDA_VISIBLE_DEVICES=1,0 to watch the
// ordinals move.
// instructor-only
// build/tests/solution-demo-01 runs the reference solution.
// /instructor-only
#include <cstdlib>
#include <exception>
#include <iostream>

#include "device_enumeration.h"

int main() {
  try {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    std::cout << "CUDA_VISIBLE_DEVICES=" << (visible ? visible : "<unset>") << '\n';
    const int count = lesson01::count_devices();
    std::cout << count << " GPU" << (count == 1 ? "" : "s") << " visible\n\n";
    if (count == 0) return 0;

    std::vector<lesson01::DeviceInfo> devices;
    for (int d = 0; d < count; ++d) devices.push_back(lesson01::describe_device(d));
    lesson01::print_device_table(std::cout, devices);

    lesson01::SelectionCriteria job;
    job.min_free_memory = 1'000'000'000;
    job.min_major = 7;
    job.max_devices = 2;
    std::cout << "\nA job asking for at most 2 GPUs with 1 GB free and compute capability >= 7.0 gets:";
    for (int d : lesson01::select_devices(job)) std::cout << " GPU " << d;
    std::cout << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "demo-01: " << e.what() << '\n';
    return 1;
  }
}
