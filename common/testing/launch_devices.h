// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Whether the code under test launched each kernel with its stream's device current. The CUDA
// Programming Guide says a kernel launch into a stream of another device than the current one
// fails; some drivers run it anyway, on the stream's device (CUDA 13.0 with driver 580 on two
// H100s, measured by the course), so a result alone cannot show a forgotten cudaSetDevice. A test
// records the current device at each launch itself, in one of two ways:
//  - where the contract takes the launch as a parameter (lesson 07's `step` and `sum`), the test's
//    own launcher calls LaunchDevices::note before it enqueues;
//  - elsewhere, a WatchedLaunches in scope notes every kernel launch of the program (<<<...>>>,
//    cudaLaunchKernel, cudaLaunchKernelExC): a program that makes one defines those entry points
//    itself (kernel_launches.cpp), notes each launch and passes it on to libcudart's own. The
//    definitions come into a program with WatchedLaunches (the linker takes that object only for a
//    program that uses it), as common/testing/cublas_calls.cpp does for cuBLAS.
#pragma once

#include <cuda_runtime.h>

#include <mutex>
#include <string>

namespace course::testing {

// The first launch, if any, that found another device current than its stream's.
class LaunchDevices {
 public:
  // Notes one launch of `what` ("a ring step", "a kernel launch") into `stream`. A default stream
  // (0, cudaStreamLegacy, cudaStreamPerThread) is the current device's own: nothing to note.
  void note(const std::string& what, cudaStream_t stream);
  // "" when every launch noted since the last call had its stream's device current; otherwise what
  // the first one that did not found, in words. Starts the record again.
  std::string take_first_mismatch();

 private:
  std::mutex mutex_;
  std::string first_;
};

// While one lives, every kernel launch of this program is noted in `record` (one at a time: a
// second WatchedLaunches while one lives throws std::logic_error).
class WatchedLaunches {
 public:
  explicit WatchedLaunches(LaunchDevices& record);
  ~WatchedLaunches();
  WatchedLaunches(const WatchedLaunches&) = delete;
  WatchedLaunches& operator=(const WatchedLaunches&) = delete;
};

}  // namespace course::testing
