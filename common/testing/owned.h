// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What the code under test allocated, released by the code under test's own release function when
// the test's scope ends, also when a REQUIRE ended the case halfway. A destructor must not throw,
// so a release that throws is swallowed and the CUDA error it may have left behind is cleared: the
// test checks the release function itself where that is the point, not here.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <utility>

namespace course::testing {

template <class T>
class Owned {
 public:
  Owned(T owned, std::function<void(T&)> release) : value(std::move(owned)), release_(std::move(release)) {}
  ~Owned() {
    try {
      if (release_) release_(value);
    } catch (...) {
      (void)cudaGetLastError();
    }
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  T value;

 private:
  std::function<void(T&)> release_;
};

}  // namespace course::testing
