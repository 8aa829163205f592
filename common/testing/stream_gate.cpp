// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The stream gate (stream_gate.h): a host function that blocks its stream on a condition variable.
#include "stream_gate.h"

#include <chrono>

#include "../check.h"

namespace course::testing {

StreamGate::StreamGate(cudaStream_t stream) {
  CUDA_CHECK(cudaLaunchHostFunc(stream, &StreamGate::hold, this));
}

StreamGate::~StreamGate() {
  open();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::chrono::seconds(60), [&] { return passed_; });  // the host function must be done with us
}

void StreamGate::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  open_ = true;
  changed_.notify_all();
}

void CUDART_CB StreamGate::hold(void* self) {
  auto* gate = static_cast<StreamGate*>(self);
  std::unique_lock<std::mutex> lock(gate->mutex_);
  gate->changed_.wait(lock, [&] { return gate->open_; });
  gate->passed_ = true;
  gate->changed_.notify_all();
}

}  // namespace course::testing
