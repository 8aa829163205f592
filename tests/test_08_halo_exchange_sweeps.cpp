// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 08 tests, tasks 2 and 3: the sweeps with their halo exchange, plain and overlapped. The
// result after k sweeps must equal the CPU reference of the whole grid bit for bit (the contract
// fixes the order of the float operations), for 1 to 4 workers on one GPU and every GPU count,
// one row per worker included, over several calls in a row, with everything a sweep must write
// poisoned first: a missing, stale, one-sided or off-by-one halo, or buffers not swapped, changes
// bits. Ordering is checked with a gate on one worker's stream (on one GPU too): a worker that
// does not wait for the held one's halo runs ahead on stale rows, and a call that waits on the
// host between iterations stops the workers far from the held one.
#include <cuda_runtime.h>

#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/testing/gpu_test.h"
#include "common/testing/launch_devices.h"
#include "common/testing/workers.h"
#include "jacobi.h"
#include "test_08_halo_exchange_support.h"

using namespace lesson08;
using namespace lesson08_tests;
using course::testing::Devices;
using course::testing::show;

namespace {

using Run = void (*)(Decomposition&, int);

// 3, 0, 1 and 3 sweeps in four calls, each checked against the reference, next poisoned before each.
void check_exact(const Devices& devices, Run run, const std::string& name, std::uint64_t salt) {
  for (const Shape shape : shapes_for(devices.size())) {
    const std::vector<float> initial = random_grid(shape, case_seed(salt + shape.ny * 1000 + shape.nx));
    const std::vector<std::vector<float>> states = reference_states(initial, shape, 7);
    Decomposition grid = decompose(devices, shape.ny, shape.nx, initial);
    int done = 0;
    for (const int iterations : {3, 0, 1, 3}) {
      poison_next(grid);
      const int caller = current_device();
      course::testing::LaunchDevices launches;
      {
        const course::testing::WatchedLaunches watch(launches);  // notes the current device at each launch
        run(grid, iterations);
      }
      done += iterations;
      INFO(show(devices) << ", grid " << shape.ny << " x " << shape.nx);
      CHECK(current_device() == caller);
      const std::string wrong_device = launches.take_first_mismatch();
      INFO(name << ": " << wrong_device
                << " (every worker sweeps with its device current; a launch into another device's stream is "
                << "documented to fail, yet CUDA 13.0 ran it on the stream's device, so only this note shows it)");
      CHECK(wrong_device.empty());
      check_state(grid, states[done],
                  name + "(grid, " + std::to_string(iterations) + "), " + std::to_string(done) + " sweeps in all");
    }
  }
}

// check_exact for 1 to 4 workers on one GPU, called from the last GPU; and -1 sweeps rejected.
void check_exact_on_one_gpu(Run run, const std::string& name, std::uint64_t salt) {
  const int count = require_gpus(1);
  CUDA_CHECK(cudaSetDevice(count - 1));  // the caller's device is not necessarily a worker's
  for (const Devices& devices : course::testing::shared_gpu_lists()) check_exact(devices, run, name, salt);
  const Shape shape{6, 6};
  Decomposition grid = decompose(Devices{0}, shape.ny, shape.nx, random_grid(shape, case_seed(salt + 1)));
  CHECK_THROWS_AS(run(grid, -1), std::invalid_argument);
}

// Every list of distinct GPUs, and {1, 1, 0} (neighbours on one GPU next to neighbours on two),
// called from the last GPU, which is not worker 0's: the call must give it back.
void check_exact_on_distinct_gpus(Run run, const std::string& name, std::uint64_t salt) {
  const int count = require_gpus(2);
  CUDA_CHECK(cudaSetDevice(count - 1));
  std::vector<Devices> lists = course::testing::distinct_gpu_lists(count);
  lists.push_back({1, 1, 0});
  for (const Devices& devices : lists) check_exact(devices, run, name, salt);
}

// Worker `held` of three on one GPU is held for a while during `run` of 5 sweeps: the result must
// still be exact. Each block has 5 rows, so the first and last rows are apart from the interior.
void check_waits(Run run, const std::string& name, bool hold_boundary_stream, std::uint64_t salt) {
  const Shape shape{17, 45};
  const std::vector<std::vector<float>> states = random_states(shape, salt, 5);
  const Devices devices = {0, 0, 0};
  load_kernels(0);
  Decomposition grid = decompose(devices, shape.ny, shape.nx, states[0]);
  poison_next(grid);
  const Worker& held = grid.workers[1];
  const std::string stream_name = hold_boundary_stream ? "boundary_stream" : "stream";
  hold_while(hold_boundary_stream ? held.boundary_stream.get() : held.stream.get(),
             name + " with worker 1's " + stream_name + " held", [&] { run(grid, 5); });
  INFO("worker 1's " << stream_name << " was held for 300 ms at the start of " << name
                     << "(grid, 5): a worker that does not wait for the held one's rows (an event it records after "
                     << "them, and a cudaStreamWaitEvent before the sweep that reads them) reads stale or poisoned "
                     << "rows meanwhile");
  check_state(grid, states[5], name + " with a worker held");
}

// Four workers on one GPU; worker 0's `held` stream is held during `run` of 6 sweeps. Worker
// `watched` must reach the state after `sweeps` sweeps meanwhile (in the buffer that holds it).
void check_progress(Run run, const std::string& name, bool hold_boundary_stream, std::size_t watched, int sweeps,
                    const std::string& why, std::uint64_t salt) {
  const Shape shape{4 * 5 + 2, 45};
  const std::vector<std::vector<float>> states = random_states(shape, salt, 6);
  const Devices devices = {0, 0, 0, 0};
  load_kernels(0);
  Decomposition grid = decompose(devices, shape.ny, shape.nx, states[0]);
  // After t sweeps the state is in the buffer that was `current` at the start when t is even.
  const Worker& w = grid.workers[watched];
  Progress progress(grid, watched, sweeps % 2 == 0 ? w.current.data() : w.next.data());
  const Worker& held = grid.workers[0];
  std::string seen;
  const bool reached = progresses_while_held(
      hold_boundary_stream ? held.boundary_stream.get() : held.stream.get(), name + " with worker 0 held",
      [&] { run(grid, 6); }, [&] { return progress.reached(states[static_cast<std::size_t>(sweeps)]); }, seen);
  INFO("while worker 0's " << (hold_boundary_stream ? "boundary_stream" : "stream") << " was held, worker " << watched
                           << " should have finished " << sweeps << " sweeps: " << why << " (the watcher: " << seen
                           << ")");
  CHECK(reached);
  check_state(grid, states[6], name + " after the held worker went on");
}

// Worker 1 of three on one GPU, each block 5 rows; each of its streams in `held_streams` (false:
// `stream`, true: `boundary_stream`) held in turn while `run` does `iterations` sweeps: the call must
// not return while a stream is held, for it waits for every stream of every worker, once, at the
// end. Then the state must be exact. With one sweep only worker 1 is held (the middle one: neither
// the first nor the last worker waits for it), so a call that waits for one worker only returns.
void check_returns_when_done(Run run, const std::string& name, std::vector<bool> held_streams, int iterations,
                             std::uint64_t salt) {
  const Shape shape{17, 45};
  const std::vector<std::vector<float>> states = random_states(shape, salt, iterations);
  const Devices devices = {0, 0, 0};
  load_kernels(0);
  for (const bool boundary : held_streams) {
    Decomposition grid = decompose(devices, shape.ny, shape.nx, states[0]);
    const Worker& held = grid.workers[1];
    const std::string stream_name = boundary ? "boundary_stream" : "stream";
    const bool returned = course::testing::returns_while_held(
        boundary ? held.boundary_stream.get() : held.stream.get(), name + " with worker 1's " + stream_name + " held",
        [&] { run(grid, iterations); }, 500ms);
    {
      INFO(name << "(grid, " << iterations << ") returned while worker 1's " << stream_name
                << " was held, with work of the call still waiting on it: wait for every worker's streams ("
                << (held_streams.size() > 1 ? "both of them" : "its `stream`")
                << "), once, after the last iteration, so that the work is done when the call returns");
      CHECK_FALSE(returned);
    }
    for (const Worker& w : grid.workers) {
      w.stream.synchronize();
      w.boundary_stream.synchronize();
    }
    check_state(grid, states[static_cast<std::size_t>(iterations)], name + " after the held stream went on");
  }
}

}  // namespace

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("the plain sweeps match a CPU reference of the whole grid bit for bit for 1 to 4 workers on one GPU",
          "[08-halo-exchange][task:2][gpus:1][points:5]") {
  check_exact_on_one_gpu(run_plain, "run_plain", 200);
}

TEST_CASE("the plain sweeps match the CPU reference on every GPU count with halos copied between GPUs",
          "[08-halo-exchange][task:2][gpus:2][points:2]") {
  check_exact_on_distinct_gpus(run_plain, "run_plain", 210);
}

TEST_CASE("a worker waits for its neighbours' halo rows before it sweeps again",
          "[08-halo-exchange][task:2][gpus:1][points:3][overlap]") {
  require_gpus(1);
  check_waits(run_plain, "run_plain", false, 220);
}

TEST_CASE("the plain sweeps are all enqueued before the call waits for any",
          "[08-halo-exchange][task:2][gpus:1][points:2][overlap]") {
  require_gpus(1);
  check_progress(run_plain, "run_plain", false, 3, 3,
                 "it is three workers away from the held one, so only the halos it needs for its fourth sweep come "
                 "(indirectly) from it; a host wait between iterations (a synchronize in the loop) stops it after "
                 "one, and a wait for a neighbour's `sent` enqueued after that neighbour recorded this iteration's "
                 "(waits and sweeps in one loop) chains the workers, so it does none",
                 230);
}

TEST_CASE("run_plain returns only once every worker's sweeps are done",
          "[08-halo-exchange][task:2][gpus:1][points:1][overlap]") {
  require_gpus(1);
  // One sweep: no other worker waits for worker 1's halos in it, so worker 1 is held alone and a
  // call that waits for the first or the last worker only returns (with more sweeps, its
  // neighbours wait for its halos, and so every worker is held).
  check_returns_when_done(run_plain, "run_plain", {false}, 1, 240);
}

// ---- Task 3 ---------------------------------------------------------------------------------

TEST_CASE("the overlapped sweeps match the CPU reference bit for bit for 1 to 4 workers on one GPU",
          "[08-halo-exchange][task:3][gpus:1][points:5]") {
  check_exact_on_one_gpu(run_overlapped, "run_overlapped", 300);
}

TEST_CASE("the overlapped sweeps match the CPU reference on every GPU count with halos copied between GPUs",
          "[08-halo-exchange][task:3][gpus:2][points:2]") {
  check_exact_on_distinct_gpus(run_overlapped, "run_overlapped", 310);
}

TEST_CASE("the boundary rows wait for the interior and the halos and the interior waits for the boundary rows",
          "[08-halo-exchange][task:3][gpus:1][points:3][overlap]") {
  require_gpus(1);
  check_waits(run_overlapped, "run_overlapped", false, 320);
  check_waits(run_overlapped, "run_overlapped", true, 321);
}

TEST_CASE("the overlapped sweeps are all enqueued before the call waits for any",
          "[08-halo-exchange][task:3][gpus:1][points:2][overlap]") {
  require_gpus(1);
  check_progress(run_overlapped, "run_overlapped", true, 3, 3,
                 "it is three workers away from the held one; a host wait between iterations stops it after one", 330);
}

TEST_CASE("the boundary rows are swept and sent while the same worker's interior is held back",
          "[08-halo-exchange][task:3][gpus:1][points:2][overlap]") {
  require_gpus(1);
  check_progress(run_overlapped, "run_overlapped", false, 1, 2,
                 "worker 0's first and last rows, and their sends, belong on its boundary_stream, which was not held, "
                 "so its neighbour gets the halo of the first sweep and can do its second; with the boundary rows or "
                 "their sends on `stream`, or a wait for the interior before the sends, it stops after one",
                 340);
}

TEST_CASE("the interior is swept while the same worker's boundary rows are held back",
          "[08-halo-exchange][task:3][gpus:1][points:2][overlap]") {
  require_gpus(1);
  const Shape shape{3 * 5 + 2, 45};
  const std::vector<std::vector<float>> states = random_states(shape, 350, 4);
  const Devices devices = {0, 0, 0};
  load_kernels(0);
  for (const std::size_t k : {std::size_t{0}, std::size_t{1}}) {  // the first worker, and one in the middle
    Decomposition grid = decompose(devices, shape.ny, shape.nx, states[0]);
    const Worker& w = grid.workers[k];
    // Rows 2 .. R-1 of its block, which its interior sweep writes into `next` in the first sweep.
    Progress interior(grid, k, w.next.data(), course::Range{w.rows.begin + 1, w.rows.end - 1});
    std::string seen;
    const bool reached = progresses_while_held(
        w.boundary_stream.get(), "run_overlapped with worker " + std::to_string(k) + "'s boundary_stream held",
        [&] { run_overlapped(grid, 4); }, [&] { return interior.reached(states[1]); }, seen);
    {
      INFO("while worker " << k << "'s boundary_stream was held (its first and last rows and their sends), its "
                           << "interior rows should have been swept once on its `stream`: the interior of a sweep "
                           << "waits only for the worker's own `sent` of the sweep before. A wait enqueued after this "
                           << "sweep's `sent` is recorded waits for this sweep's boundary rows instead: the result "
                           << "stays exact, but nothing overlaps (the watcher: " << seen << ")");
      CHECK(reached);
    }
    check_state(grid, states[4], "run_overlapped after the held boundary_stream went on");
  }
}

TEST_CASE("run_overlapped returns only once both streams of every worker are done",
          "[08-halo-exchange][task:3][gpus:1][points:1][overlap]") {
  require_gpus(1);
  // One sweep: neither of worker 1's streams waits for the other in it, so each is held alone.
  check_returns_when_done(run_overlapped, "run_overlapped", {false, true}, 1, 360);
}
