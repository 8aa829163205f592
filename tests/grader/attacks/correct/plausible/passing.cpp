// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Not an attack: a correct lesson-01 file written the way students write, with what the
// allowlists must accept (a refused correct file is as wrong as an attack that scores): the
// <iostream> set-up, a global std::map and a static std::atomic array, printf and
// fprintf(stderr) for debugging, std::thread with an exception passed back, a function-local
// static, a lambda, string streams, chrono, sorting and a shared_ptr.
#include "passing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {
std::atomic<int> calls[8];
std::map<int, std::string> seen;
std::mutex seen_lock;

int checked_sum(int a, int b) {
  static int first_call = 0;  // a function-local static, made when first used
  ++first_call;
  std::exception_ptr error;
  int sum = 0;
  std::thread worker([&] {
    try {
      if (a == 123456789) throw std::runtime_error("unlucky number");
      sum = a + b;
    } catch (...) {
      error = std::current_exception();
    }
  });
  worker.join();
  if (error) std::rethrow_exception(error);
  return sum;
}
}  // namespace

int add(int a, int b) {
  const auto start = std::chrono::steady_clock::now();
  calls[0].fetch_add(1);
  const int sum = checked_sum(a, b);
  {
    std::lock_guard<std::mutex> guard(seen_lock);
    seen[sum] = std::to_string(a) + " + " + std::to_string(b);
  }
  std::vector<int> parts{b, a};
  std::sort(parts.begin(), parts.end(), [](int x, int y) { return x < y; });
  auto shared = std::make_shared<int>(parts[0] + parts[1]);
  std::ostringstream text;
  text << "add(" << a << ", " << b << ") = " << *shared;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s\n", text.str().c_str());
  std::fprintf(stderr, "debug: %d calls, %.3f ms\n", calls[0].load(), ms);
  std::cout << seen.size() << " sums seen" << std::endl;
  return *shared;
}
