// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// "At the same time" and "once ... has arrived", shown on one GPU: one worker's stream is held by
// a gate (stream_gate.h) while the call under test runs on another thread, and the test watches
// device memory to see what the other workers did meanwhile. Two traps are handled here, once:
//  - The watching must not wait behind the call under test. A cudaMemcpy into pageable memory
//    (a local double) is synchronous: it waits for its stream, and while it waits, other threads'
//    pageable copies wait too. So the test reads through a Peeker: pinned memory and a
//    non-blocking stream of its own, made before the gate closes.
//  - The watching must not hang the test. It runs on a thread of its own; if a read has not come
//    back within the patience, the gate opens, the outcome says the watcher was stalled, and the
//    case fails with that reason instead of waiting for the watchdog.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "../buffers.h"

namespace course::testing {

// Reads device memory of one device without ever touching pageable memory or a default stream.
// Make it before the gate closes (it allocates pinned memory and a stream, calls that may wait).
class Peeker {
 public:
  Peeker(int device, std::size_t max_bytes);
  // Copies `bytes` (at most max_bytes) from `device_ptr`, memory `device` can read, into `host`.
  void read(void* host, const void* device_ptr, std::size_t bytes);
  template <class T>
  T value(const T* device_ptr) {
    T v{};
    read(&v, device_ptr, sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> values(const T* device_ptr, std::size_t count) {
    std::vector<T> v(count);
    if (count > 0) read(v.data(), device_ptr, count * sizeof(T));
    return v;
  }

 private:
  int device_;
  course::Stream stream_;
  course::PinnedBuffer<unsigned char> staging_;
};

// What the test saw while one worker's stream was held.
struct HeldOutcome {
  bool others_finished = false;      // the watch said yes while the gate was closed
  bool watcher_stalled = false;      // a read of the watch did not come back within the patience
  bool call_returned_early = false;  // the call under test returned while the gate was closed
  std::string describe(const std::string& held_worker) const;  // what happened, in words
};

// Closes a gate on `held`, starts `call` on a thread of its own, and polls `others_finished` (on a
// third thread, every few ms) until it says yes or `patience` has passed; then opens the gate and
// waits for `call` (an exception it throws goes on to the caller). All of it runs under the
// watchdog (`what` names it in the message). Run the call once, ungated, before this: a kernel's
// first launch may wait for the whole device (stream_gate.h).
HeldOutcome run_with_stream_held(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                                 const std::function<bool()>& others_finished,
                                 std::chrono::milliseconds patience = std::chrono::seconds(5));

// Whether `call`, started while `held` is held, returned before the gate opened, within `patience`:
// what a call that only enqueues its work ("returns at once", as NCCL's do) must do. The same
// held-stream run as above, watching the call itself.
bool returns_while_held(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                        std::chrono::milliseconds patience = std::chrono::seconds(5));

}  // namespace course::testing
