// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The held-stream pattern (held_stream.h): a gate on one stream, the call on a thread, a watcher
// on another, and a patience after which the gate opens whatever the watcher saw.
#include "held_stream.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "../check.h"
#include "../device_guard.h"
#include "gpu_test.h"
#include "stream_gate.h"

namespace course::testing {

Peeker::Peeker(int device, std::size_t max_bytes) : device_(device), stream_(device), staging_(max_bytes) {}

void Peeker::read(void* host, const void* device_ptr, std::size_t bytes) {
  if (bytes > staging_.size()) throw std::invalid_argument("Peeker::read: more bytes than the Peeker was made for");
  const DeviceGuard on(device_);
  CUDA_CHECK(cudaMemcpyAsync(staging_.data(), device_ptr, bytes, cudaMemcpyDeviceToHost, stream_));
  stream_.synchronize();
  std::memcpy(host, staging_.data(), bytes);
}

std::string HeldOutcome::describe(const std::string& held_worker) const {
  std::ostringstream out;
  if (watcher_stalled)
    out << "while " << held_worker << " was held, the test could not even read device memory: a CUDA call of "
        << "yours waited for the held stream and held up every other thread. The usual cause is a cudaMemcpy or "
        << "cudaMemcpyAsync into pageable memory (a local variable, a std::vector): it is synchronous, it waits "
        << "for its stream, and other threads' copies wait behind it. Copy into pinned memory (the lesson's "
        << "contract says where), on the worker's stream, and wait once at the end";
  else if (others_finished)
    out << "while " << held_worker << " was held, the other workers finished";
  else
    out << "while " << held_worker << " was held, the other workers did not finish: the call waits for each "
        << "worker before it starts the next (a synchronize, a blocking copy or a host wait inside the loop)";
  if (call_returned_early) out << "; the call returned while " << held_worker << " was still held";
  return out.str();
}

HeldOutcome run_with_stream_held(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                                 const std::function<bool()>& others_finished, std::chrono::milliseconds patience) {
  using Clock = std::chrono::steady_clock;
  HeldOutcome outcome;
  run_with_watchdog(
      what, std::chrono::seconds(100),
      "the call waits for something that never comes while a stream is held: cudaDeviceSynchronize, a kernel used "
      "for the first time (its module is loaded lazily), or a cudaStreamWaitEvent on an event recorded after it",
      [&] {
        StreamGate gate(held);
        auto running = std::async(std::launch::async, call);
        std::atomic<bool> stop{false}, yes{false};
        std::atomic<Clock::rep> in_read_since{0};  // 0: not inside a read of the watch
        std::exception_ptr watch_error;
        std::thread watcher([&] {
          try {
            while (!stop.load()) {
              in_read_since = Clock::now().time_since_epoch().count();
              const bool finished = others_finished();
              in_read_since = 0;
              if (finished) {
                yes = true;
                return;
              }
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
          } catch (...) {
            in_read_since = 0;
            watch_error = std::current_exception();
          }
        });
        const auto deadline = Clock::now() + patience;
        while (!yes.load() && !watch_error && Clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        outcome.others_finished = yes.load();
        const Clock::rep since = in_read_since.load();
        outcome.watcher_stalled = !outcome.others_finished && since != 0 &&
                                  Clock::now() - Clock::time_point(Clock::duration(since)) >
                                      std::min<Clock::duration>(patience / 2, std::chrono::seconds(1));
        outcome.call_returned_early = running.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        gate.open();
        stop = true;
        watcher.join();
        running.get();
        if (watch_error) std::rethrow_exception(watch_error);
      });
  return outcome;
}

bool returns_while_held(cudaStream_t held, const std::string& what, const std::function<void()>& call,
                        std::chrono::milliseconds patience) {
  std::atomic<bool> returned{false};
  const HeldOutcome outcome = run_with_stream_held(
      held, what,
      [&] {
        call();
        returned = true;
      },
      [&] { return returned.load(); }, patience);
  return outcome.others_finished;
}

}  // namespace course::testing
