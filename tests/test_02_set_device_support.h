// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 02 test helpers that the cases of tasks 2 and 3 share (test_02_set_device.cpp and
// test_02_set_device_threads_guard.cpp): slices made by the test itself, and the checks that a way
// of running the workers (run_on_all_devices, run_one_thread_per_device) calls each worker's work
// as the contract says, returns only when the work is done and lets the workers overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/partition.h"
#include "common/testing/workers.h"
#include "set_device.h"

namespace lesson02_tests {

using course::testing::Devices;
using lesson02::DeviceWork;
using lesson02::Slice;

// Input and output slices made by the test itself (tasks 2 and 3 do not depend on task 1):
// random inputs, outputs poisoned with NaNs, slice k on devices[k].
struct TestSlices {
  std::vector<course::Range> ranges;
  std::vector<float> host_input;
  std::vector<course::DeviceBuffer<float>> buffers;  // input k at 2k, output k at 2k + 1
  std::vector<Slice> input, output;

  TestSlices(std::size_t n, const Devices& devices, std::uint64_t seed);

  // Every output element is kFactor times its input: one float product, rounded the same way on
  // GPU and CPU (IEEE 754), so compared exactly; mismatches counted per worker.
  void require_scaled(float factor) const;
};

constexpr float kFactor = -1.75f;
using Runner = void (*)(std::span<const int>, const DeviceWork&);

// Runs `run` under the watchdog from the last device; the caller's device must be kept.
void run_from_last_device(Runner run, const Devices& devices, const DeviceWork& work);

// Each worker's work is called once, with its own device current and a stream of its own on it.
// With one_thread_each, on a thread of its own: each worker then waits (up to 5 s) until every
// worker is inside its work, so all threads and streams are alive at once (a finished thread's id
// and a destroyed stream's handle may be reused, so only live ones are compared), and workers run
// one after another never all arrive.
void check_calls(Runner run, const std::vector<Devices>& lists, bool one_thread_each);

// The call returns only when every worker's work is done: a host function enqueued after a
// 25 ms spin kernel counts the workers whose work has finished; then each of three workers on one
// GPU is held back in turn (held_stream.h), and the call must not return while it is held.
void check_returns_when_done(Runner run);

// A 25 ms spin kernel on every worker together against each worker alone (see overlap.h).
void check_overlap(Runner run, const Devices& devices, const std::string& serial_hint);

// "At the same time", shown on one GPU with a worker held back: worker 0's work waits for an event
// recorded behind a gate on a stream of the test's own (held_stream.h), and every worker scales its
// slice. While worker 0 is held, the other workers' slices must be scaled and the call must not
// return; a call that waits for each worker before it starts the next never gets past worker 0.
// Every worker of `devices` on one GPU (the test reads all slices through one Peeker).
void check_others_finish_while_one_is_held(Runner run, const Devices& devices, const std::string& serial_hint);

}  // namespace lesson02_tests
