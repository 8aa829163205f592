// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The gate closed by a group call (group_end_gate.h): this program's own ncclGroupStart and
// ncclGroupEnd, which count each thread's group depth and pass every call on to libnccl's; the
// outermost ncclGroupEnd that succeeds closes the armed gate, if any, before it returns.
#include "group_end_gate.h"

#include <dlfcn.h>
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gpu_test.h"
#include "stream_gate.h"

namespace {

struct Armed {
  cudaStream_t stream = nullptr;
  std::unique_ptr<course::testing::StreamGate> gate;  // set by the group call that closes it
  bool opened = false;                                // open() came first: no group call closes it
};

std::mutex armed_mutex;
Armed* armed = nullptr;  // the live GroupEndGate's state, if any
thread_local int group_depth = 0;

// libnccl's definition of `name`: the next one after this program's.
template <class Function>
Function libnccl(const char* name) {
  void* symbol = dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "group_end_gate: %s is not in libnccl\n", name);
    std::abort();
  }
  return reinterpret_cast<Function>(symbol);
}

using GroupCall = ncclResult_t (*)();

}  // namespace

extern "C" {

ncclResult_t ncclGroupStart() {
  static const auto start = libnccl<GroupCall>("ncclGroupStart");
  const ncclResult_t result = start();
  if (result == ncclSuccess) ++group_depth;
  return result;
}

ncclResult_t ncclGroupEnd() {
  static const auto end = libnccl<GroupCall>("ncclGroupEnd");
  const ncclResult_t result = end();
  if (group_depth > 0) --group_depth;
  if ((result == ncclSuccess || result == ncclInProgress) && group_depth == 0) {
    const std::lock_guard<std::mutex> lock(armed_mutex);
    if (armed != nullptr && !armed->gate && !armed->opened) {
      try {
        armed->gate = std::make_unique<course::testing::StreamGate>(armed->stream);
      } catch (const std::exception& error) {  // the stream is not valid: the call's own wait says so
        std::fprintf(stderr, "group_end_gate: could not close the gate: %s\n", error.what());
      }
    }
  }
  return result;
}

}  // extern "C"

namespace course::testing {

GroupEndGate::GroupEndGate(cudaStream_t stream) {
  const std::lock_guard<std::mutex> lock(armed_mutex);
  if (armed != nullptr) throw std::logic_error("GroupEndGate: another one is alive; hold one stream at a time");
  armed = new Armed{stream, nullptr, false};
}

GroupEndGate::~GroupEndGate() {
  std::unique_ptr<Armed> mine;
  {
    const std::lock_guard<std::mutex> lock(armed_mutex);
    mine.reset(armed);
    armed = nullptr;
  }
  mine.reset();  // the StreamGate's destructor opens it and waits for its host function
}

bool GroupEndGate::closed() const {
  const std::lock_guard<std::mutex> lock(armed_mutex);
  return armed != nullptr && armed->gate != nullptr;
}

void GroupEndGate::open() {
  const std::lock_guard<std::mutex> lock(armed_mutex);
  if (armed == nullptr) return;
  armed->opened = true;
  if (armed->gate) armed->gate->open();
}

AfterGroupOutcome returns_while_held_after_group(cudaStream_t held, const std::string& what,
                                                 const std::function<void()>& call,
                                                 std::chrono::milliseconds patience) {
  using Clock = std::chrono::steady_clock;
  AfterGroupOutcome outcome;
  run_with_watchdog(what, std::chrono::seconds(100),
                    "the call waits for something that never comes while a rank's stream is held after its group call: "
                    "cudaDeviceSynchronize, or a wait on an event recorded after it",
                    [&] {
                      GroupEndGate gate(held);
                      std::atomic<bool> returned{false};
                      auto running = std::async(std::launch::async, [&] {
                        call();
                        returned = true;
                      });
                      const auto deadline = Clock::now() + patience;
                      while (!returned.load() && Clock::now() < deadline)
                        std::this_thread::sleep_for(std::chrono::milliseconds(2));
                      outcome.returned = returned.load();
                      outcome.group_ended = gate.closed();
                      gate.open();
                      running.get();
                    });
  return outcome;
}

}  // namespace course::testing
