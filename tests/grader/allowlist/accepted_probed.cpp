// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
// Correct C++ that the object checks once refused (issue 43: idioms probed on GCC 12 and 13), which
// test_grader.py (AllowlistObjectTests) must accept: a wait or wake of <latch>/<semaphore> (the
// futex syscall() libstdc++ inlines) in a function that also holds a switch's jump table or a call
// through a pointer; std::shared_timed_mutex's timed locks; unbuffered output; a demangled type name;
// wide-string conversions; <cinttypes>' strtoimax; <cfenv>'s rounding mode.
#include <cxxabi.h>

#include <cfenv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <latch>
#include <mutex>
#include <semaphore>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <typeinfo>

enum class Phase { alloc, copy, launch, sync, release, done, extra };

// A status line chosen by a switch (a jump table), then a count down on a latch.
void report(std::latch& all_done, Phase phase, int worker) {
  switch (phase) {
    case Phase::alloc: std::printf("worker %d: alloc\n", worker); break;
    case Phase::copy: std::printf("worker %d: copy\n", worker); break;
    case Phase::launch: std::printf("worker %d: launch\n", worker); break;
    case Phase::sync: std::printf("worker %d: sync\n", worker); break;
    case Phase::release: std::puts("release"); break;
    case Phase::done: std::fprintf(stderr, "done %d\n", worker); break;
    case Phase::extra: std::putchar('x'); break;
  }
  all_done.count_down();
}

// A wake, then a call through a pointer in tail position (a jmp *%reg).
void release_then(std::binary_semaphore& slot, const std::function<void(int)>& after, int worker) {
  slot.release();
  after(worker);
}

std::shared_timed_mutex table_lock;
int timed_locks() {
  int got = 0;
  if (table_lock.try_lock_for(std::chrono::milliseconds(1))) {
    table_lock.unlock();
    ++got;
  }
  if (table_lock.try_lock_shared_until(std::chrono::system_clock::now())) {
    table_lock.unlock_shared();
    ++got;
  }
  std::shared_lock<std::shared_timed_mutex> reading(table_lock, std::chrono::milliseconds(5));
  return got + (reading.owns_lock() ? 1 : 0);
}

void unbuffered() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::setbuf(stderr, nullptr);
}

std::string type_name(const std::exception& error) {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(error).name(), nullptr, nullptr, &status);
  std::string text = name != nullptr ? name : typeid(error).name();
  std::free(name);
  return text;
}

std::wstring wide(double value, const std::wstring& digits) {
  return std::to_wstring(value) + std::to_wstring(std::stoi(digits));
}

long long widest(const char* text) {
  return static_cast<long long>(std::strtoimax(text, nullptr, 10)) +
         static_cast<long long>(std::strtoumax(text, nullptr, 16));
}

int rounding() {
  const int was = std::fegetround();
  std::fesetround(FE_TONEAREST);
  return was;
}
