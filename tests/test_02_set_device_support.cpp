// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 test helpers (declared and described in test_02_set_device_support.h): the test's own
// slices and the checks of how a way of running the workers calls, finishes and overlaps them.
#include "test_02_set_device_support.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/held_stream.h"
#include "common/testing/overlap.h"
#include "common/testing/workers.h"
#include "kernels.cuh"
#include "set_device.h"

using namespace lesson02;
using namespace std::chrono_literals;
using namespace course::testing;

namespace lesson02_tests {
namespace {

// What a DeviceWork callback saw, recorded in the thread that called it.
struct Call {
  int worker = -1, device = -1, current = -1, stream_device = -1;
  cudaStream_t stream = nullptr;
  std::thread::id thread;
  bool met_all = true;  // one thread each: every worker was inside its work at the same time
};

}  // namespace

TestSlices::TestSlices(std::size_t n, const Devices& devices, std::uint64_t seed)
    : ranges(course::split_ranges(n, static_cast<int>(devices.size()))),
      host_input(course::random_floats(n, seed, -4.0f, 4.0f)) {
  for (std::size_t k = 0; k < devices.size(); ++k) {
    buffers.emplace_back(devices[k], ranges[k].size());
    buffers.emplace_back(devices[k], ranges[k].size());
    upload(buffers[2 * k].data(), devices[k],
           std::span<const float>(host_input).subspan(ranges[k].begin, ranges[k].size()));
    const course::DeviceGuard on(devices[k]);
    if (!ranges[k].empty()) course::poison_device(buffers[2 * k + 1].data(), buffers[2 * k + 1].bytes());
  }
  for (std::size_t k = 0; k < devices.size(); ++k) {
    input.push_back(Slice{devices[k], buffers[2 * k].data(), ranges[k]});
    output.push_back(Slice{devices[k], buffers[2 * k + 1].data(), ranges[k]});
  }
}

void TestSlices::require_scaled(float factor) const {
  std::vector<float> got, expected(host_input.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = factor * host_input[i];
  for (std::size_t k = 0; k < output.size(); ++k) {
    const std::vector<float> part = read_back(output[k].data, output[k].device, ranges[k].size());
    got.insert(got.end(), part.begin(), part.end());
  }
  const course::Comparison comparison = course::compare_exact(got.data(), expected.data(), got.size(), ranges);
  INFO(comparison.describe());
  REQUIRE(comparison.ok());
}

void run_from_last_device(Runner run, const Devices& devices, const DeviceWork& work) {
  call_keeps_device(gpu_count() - 1, "the workers " + show(devices), 60s,
                    "a stream synchronize or a join never returned", [&] { run(devices, work); });
}

void check_calls(Runner run, const std::vector<Devices>& lists, bool one_thread_each) {
  for (const Devices& devices : lists) {
    INFO("workers " << show(devices));
    std::mutex mutex;
    std::condition_variable arrived;
    std::vector<Call> calls;
    run_from_last_device(run, devices, [&](int worker, int device, cudaStream_t stream) {
      Call call{worker, device, -1, -1, stream, std::this_thread::get_id()};
      CUDA_CHECK(cudaGetDevice(&call.current));
      if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread)
        CUDA_CHECK(cudaStreamGetDevice(stream, &call.stream_device));
      std::unique_lock<std::mutex> lock(mutex);
      const std::size_t mine = calls.size();
      calls.push_back(call);
      arrived.notify_all();
      if (one_thread_each)
        calls[mine].met_all = arrived.wait_for(lock, 5s, [&] { return calls.size() == devices.size(); });
    });
    REQUIRE(calls.size() == devices.size());
    std::set<cudaStream_t> streams;
    std::set<std::thread::id> threads;
    for (const Call& call : calls) {
      REQUIRE(call.worker >= 0);
      REQUIRE(call.worker < static_cast<int>(devices.size()));
      const int expected = devices[call.worker];
      INFO("work(" << call.worker << ", " << call.device << ", stream) found GPU " << call.current
                   << " current and a stream of GPU " << call.stream_device << "; worker " << call.worker
                   << "'s device is " << expected);
      CHECK(call.device == expected);
      CHECK(call.current == expected);
      CHECK(call.stream_device == expected);  // -1: a default stream, which a worker must not get
      streams.insert(call.stream);
      threads.insert(call.thread);
      if (one_thread_each) {
        CHECK(call.thread != std::this_thread::get_id());
        INFO("worker " << call.worker << " waited 5 s for the others to start: start every worker before joining any");
        CHECK(call.met_all);
      }
    }
    INFO("each worker needs a stream of its own, also when workers share a device: "
         << streams.size() << " distinct stream(s) for " << devices.size() << " workers");
    CHECK(streams.size() == devices.size());
    INFO(threads.size() << " distinct thread(s) ran the work");
    if (one_thread_each) CHECK(threads.size() == devices.size());
  }
}

void check_returns_when_done(Runner run) {
  for (const Devices& devices : worker_lists(require_gpus(1))) {
    DoneCounter counter;
    run_from_last_device(run, devices, [&](int, int, cudaStream_t stream) {
      launch_spin(25.0, stream);
      counter.enqueue(stream);
    });
    const int done = counter.done();
    INFO("workers " << show(devices) << ": " << done
                    << " had finished when the call returned; wait for every worker's stream before returning");
    CHECK(done == static_cast<int>(devices.size()));
  }

  // Each of three workers on one GPU held in turn (its work waits for an event recorded behind a
  // gate): whichever it is, the call must not return while it is held. The spins above end nearly
  // together, so a call that waits for the first or the last worker's stream only may pass them.
  const Devices devices = repeated(0, 3);
  const TestSlices t(3 * 1000 + 1, devices, case_seed(203));
  const auto scale = [&t](int k, cudaStream_t stream) {
    launch_scale(t.input[k].data, t.output[k].data, t.ranges[k].size(), kFactor, stream);
  };
  run_from_last_device(run, devices, [&](int k, int, cudaStream_t stream) { scale(k, stream); });  // ungated first
  const course::Stream gate_stream(0);
  const course::Event released(0, cudaEventDisableTiming);
  for (int held = 0; held < static_cast<int>(devices.size()); ++held) {
    for (const Slice& out : t.output) {
      const course::DeviceGuard on(out.device);
      course::poison_device(out.data, out.range.size() * sizeof(float));
    }
    const bool returned = returns_while_held(
        gate_stream, "the workers " + show(devices) + " with worker " + std::to_string(held) + " held",
        [&] {
          run(devices, [&](int k, int, cudaStream_t stream) {
            if (k == held) {  // behind the gate: this worker's stream waits until the test opens it
              released.record(gate_stream);
              CUDA_CHECK(cudaStreamWaitEvent(stream, released, 0));
            }
            scale(k, stream);
          });
        },
        300ms);
    INFO("workers " << show(devices) << ": worker " << held << "'s work was held back for 0.3 s and the call "
                    << (returned ? "returned meanwhile: wait for EACH worker's stream, not the first or the last one's "
                                   "only (workers need not finish in the order they started)"
                                 : "waited for it"));
    CHECK_FALSE(returned);
    t.require_scaled(kFactor);
  }
}

void check_overlap(Runner run, const Devices& devices, const std::string& serial_hint) {
  Overlap overlap;
  run_with_watchdog("the workers " + show(devices) + " with the spin kernel", 90s,
                    "a stream synchronize or a join never returned", [&] {
                      overlap = measure_overlap(
                          static_cast<int>(devices.size()),
                          [&](int only) {
                            run(devices, [only](int k, int, cudaStream_t s) {
                              if (k == only) launch_spin(25.0, s);
                            });
                          },
                          [&] { run(devices, [](int, int, cudaStream_t s) { launch_spin(25.0, s); }); });
                    });
  INFO("workers " << show(devices) << ", 25 ms of spin kernel each. " << overlap.describe());
  INFO((overlap.ratio() > 0.85 ? serial_hint : std::string("the workers overlapped only in part")));
  CHECK(overlap.overlapped());
}

void check_others_finish_while_one_is_held(Runner run, const Devices& devices, const std::string& serial_hint) {
  const int device = devices.at(0);
  REQUIRE(std::all_of(devices.begin(), devices.end(), [&](int d) { return d == device; }));
  const std::size_t per_worker = 1 << 16;
  const TestSlices t(per_worker * devices.size(), devices, case_seed(202));
  const auto scale = [&t](int k, cudaStream_t stream) {
    launch_scale(t.input[k].data, t.output[k].data, t.ranges[k].size(), kFactor, stream);
  };
  // Once ungated first: the scale kernel's module is loaded at its first launch, which may wait
  // for the whole device (stream_gate.h). Then the outputs are poisoned again.
  run_from_last_device(run, devices, [&](int k, int, cudaStream_t stream) { scale(k, stream); });
  for (const Slice& out : t.output) {
    const course::DeviceGuard on(out.device);
    course::poison_device(out.data, out.range.size() * sizeof(float));
  }

  // Made before the gate closes: the test's stream, the event worker 0 waits for, the Peeker.
  const course::Stream gate_stream(device);
  const course::Event released(device, cudaEventDisableTiming);
  Peeker peeker(device, per_worker * sizeof(float));
  const auto others_scaled = [&] {
    for (std::size_t k = 1; k < devices.size(); ++k) {
      const std::vector<float> got = peeker.values(t.output[k].data, t.ranges[k].size());
      for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != kFactor * t.host_input[t.ranges[k].begin + i]) return false;
    }
    return true;
  };
  const HeldOutcome outcome = run_with_stream_held(
      gate_stream, "the workers " + show(devices) + " with worker 0 held",
      [&] {
        run(devices, [&](int k, int, cudaStream_t stream) {
          if (k == 0) {  // behind the gate: worker 0's stream waits until the test opens it
            released.record(gate_stream);
            CUDA_CHECK(cudaStreamWaitEvent(stream, released, 0));
          }
          scale(k, stream);
        });
      },
      others_scaled);
  INFO("workers " << show(devices) << ": " << outcome.describe("worker 0"));
  INFO((outcome.others_finished || outcome.watcher_stalled ? std::string() : serial_hint));
  CHECK(outcome.others_finished);
  INFO("the call returns only when every worker's work is done, worker 0's included");
  CHECK_FALSE(outcome.call_returned_early);
  t.require_scaled(kFactor);
}

}  // namespace lesson02_tests
