// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Not an attack: a second correct lesson-01 file, with the C++20 a student of a multi-GPU course
// writes and the allowlists once refused: global containers with contents (made before main()),
// <iomanip>, std::call_once, std::jthread, std::latch, std::barrier, std::counting_semaphore
// and std::atomic's wait and notify (libstdc++'s inlined futex system call),
// std::condition_variable_any, std::complex and std::popcount (libgcc's arithmetic and libm's
// complex functions), nested exceptions, std::optional, std::variant and std::unordered_map.
#include "passing.h"

#include <atomic>
#include <barrier>
#include <bit>
#include <chrono>
#include <complex>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <iomanip>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <semaphore>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

namespace {
std::vector<int> worker_counts = {2, 3};
const std::string separator = "---------------------------------------------";
std::map<int, std::string> names = {{0, "first"}, {1, "second"}};
std::unordered_map<std::string, int> index_of = {{"first", 0}, {"second", 1}};
std::once_flag announced;

// Every worker adds its share of `a` and `b` once all of them have started.
int sum_in_threads(int a, int b) {
  const int workers = worker_counts[0];
  std::atomic<int> sum{0};
  std::atomic<int> finished{0};
  std::latch started(workers);
  std::barrier step(workers);
  std::counting_semaphore<4> slots(workers);
  {
    std::vector<std::jthread> threads;
    for (int w = 0; w < workers; ++w) {
      threads.emplace_back([&, w](std::stop_token stop) {
        started.count_down();
        step.arrive_and_wait();
        slots.acquire();
        if (!stop.stop_requested()) sum.fetch_add(w == 0 ? a : b);
        slots.release();
        finished.fetch_add(1);
        finished.notify_all();
      });
    }
    started.wait();
    for (int seen = finished.load(); seen < workers; seen = finished.load()) finished.wait(seen);
  }
  return sum.load();
}

int checked(int value) {
  std::mutex lock;
  std::condition_variable_any changed;
  std::unique_lock guard(lock);
  changed.wait_for(guard, std::chrono::microseconds(1), [] { return true; });
  try {
    try {
      if (value == 123456789) throw std::runtime_error("unlucky number");
    } catch (...) {
      std::throw_with_nested(std::logic_error("while checking"));
    }
  } catch (const std::exception& outer) {
    std::rethrow_if_nested(outer);
  }
  return value;
}
}  // namespace

int add(int a, int b) {
  std::call_once(announced, [] { std::printf("%s\n", separator.c_str()); });
  const int sum = checked(sum_in_threads(a, b));
  volatile double x = a, y = b;
  const std::complex<double> z = std::complex<double>(x, 1.0) * std::complex<double>(y, -1.0);
  std::optional<std::variant<int, double>> last = std::variant<int, double>(std::abs(z));
  const double magnitude = std::visit([](auto value) { return static_cast<double>(value); }, *last);
  std::ostringstream text;
  text << std::left << std::setw(8) << names[index_of["first"]] << std::right << std::setw(6) << sum << " 0x"
       << std::hex << std::popcount(static_cast<unsigned long>(sum < 0 ? -sum : sum)) << std::dec << " |z| "
       << std::fixed << std::setprecision(3) << magnitude;
  std::printf("%s\n", text.str().c_str());
  return sum;
}
