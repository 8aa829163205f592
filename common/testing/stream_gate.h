// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A gate that holds a stream: a host function enqueued on it waits until the test opens the gate,
// so every later piece of work of that stream waits too. With it a test decides the order in
// which workers finish (worker 0 last, say) and sees whether the code under test waits for the
// right one. A case runs the code under test once before it closes a gate: with lazy module
// loading (the default since CUDA 12.2) a kernel's first launch loads its module, which may wait
// for the whole device, held stream included, and would never finish.
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <mutex>

namespace course::testing {

// Holds every later piece of work of one stream until open() (or the end of the scope).
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream);
  ~StreamGate();  // opens the gate and waits (up to 60 s) until the host function is done with it
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void open();

 private:
  static void CUDART_CB hold(void* self);
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  bool passed_ = false;
};

}  // namespace course::testing
