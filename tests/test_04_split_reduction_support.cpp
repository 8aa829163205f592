// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The helpers lesson 04's test files share (test_04_split_reduction_support.h says what each
// does): reference sums, guarded and poisoned buffers, and the slot-by-slot check of a split sum.
#include "test_04_split_reduction_support.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/devices.h"

using namespace lesson04;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

namespace lesson04_tests {

double exact_sum(const std::vector<float>& values, std::size_t begin, std::size_t end) {
  double sum = 0;  // small integers: exact in double in any order
  for (std::size_t i = begin; i < end; ++i) sum += values[i];
  return sum;
}

double read_double(const double* device_ptr) {
  double value = 0;
  CUDA_CHECK(cudaMemcpy(&value, device_ptr, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

void poison(int device, void* ptr, std::size_t bytes) {
  const course::DeviceGuard on_device(device);
  course::poison_device(ptr, bytes);
}

course::DeviceBuffer<float> guarded_copy(int device, const std::vector<float>& values, std::size_t first,
                                         std::size_t count, std::size_t misalign) {
  course::DeviceBuffer<float> buffer(device, 2 * kGuard + misalign + count);
  poison(device, buffer.data(), buffer.bytes());
  course::testing::upload(buffer.data() + kGuard + misalign, device, std::span(values).subspan(first, count));
  return buffer;
}

void poison_results(SplitWorkspace& workspace) {
  for (Worker& w : workspace.workers) {
    poison(w.device, w.sum.data(), w.sum.bytes());
    poison(w.device, w.partials.data(), w.partials.bytes());
    for (const course::DeviceBuffer<float>& chunk : w.chunks) poison(w.device, chunk.data(), chunk.bytes());
  }
  poison(workspace.workers[0].device, workspace.gathered.data(), workspace.gathered.bytes());
  poison(workspace.workers[0].device, workspace.total.data(), workspace.total.bytes());
  std::fill(workspace.host_partials.data(), workspace.host_partials.data() + workspace.host_partials.size(), kNaN);
  workspace.host_total[0] = kNaN;
}

void check_slots(const SplitWorkspace& workspace, const std::vector<float>& values, std::size_t n, bool on_device) {
  const int workers = static_cast<int>(workspace.workers.size());
  for (int k = 0; k < workers; ++k) {
    const course::Range range = course::split_range(n, workers, k);
    const double partial = exact_sum(values, range.begin, range.end);
    INFO("worker " << k << " on GPU " << workspace.workers[k].device << ", elements [" << range.begin << ", "
                   << range.end << ")");
    CHECK(read_double(workspace.workers[k].sum.data()) == partial);
    if (on_device) CHECK(read_double(workspace.gathered.data() + k) == partial);
  }
  if (on_device) CHECK(read_double(workspace.total.data()) == exact_sum(values, 0, n));
}

std::function<bool()> others_hold_their_sums(const SplitWorkspace& workspace, const std::vector<float>& values,
                                             std::size_t n, int held) {
  struct Watched {
    std::shared_ptr<Peeker> peeker;
    const double* slot;
    double sum;
  };
  std::vector<Watched> watched;
  const int workers = static_cast<int>(workspace.workers.size());
  for (int k = 0; k < workers; ++k) {
    if (k == held) continue;
    const Worker& w = workspace.workers[k];
    const course::Range range = course::split_range(n, workers, k);
    watched.push_back(
        {std::make_shared<Peeker>(w.device, sizeof(double)), w.sum.data(), exact_sum(values, range.begin, range.end)});
  }
  return [watched] {
    for (const Watched& w : watched)
      if (w.peeker->value(w.slot) != w.sum) return false;
    return true;
  };
}

void check_waits_for_every_worker(SplitWorkspace& workspace, const std::string& what,
                                  const std::function<double()>& call, double exact) {
  run_with_watchdog(what + " (before any gate)", kGateLimit, kGateHint, [&] { (void)call(); });
  for (std::size_t held = 0; held < workspace.workers.size(); ++held) {
    poison_results(workspace);
    double got = 0;
    const bool returned = course::testing::returns_while_held(
        workspace.workers[held].stream, what + " with worker " + std::to_string(held) + "'s stream held",
        [&] { got = call(); }, 300ms);
    INFO(what << ": worker " << held << " of " << workspace.workers.size()
              << "'s stream was held for 0.3 s, and the call "
              << (returned ? "returned meanwhile: a partial was read before its reduction ran (a copy on another "
                             "stream, a missing event wait, or a wait for the first or the last worker only: the "
                             "workers need not finish in the order they started; wait for EACH of them)"
                           : "waited for it"));
    CHECK_FALSE(returned);
    CHECK(got == exact);
  }
}

std::string held_message(const HeldOutcome& outcome, const std::string& held_worker) {
  std::string message = outcome.describe(held_worker);
  if (!outcome.others_finished)
    message +=
        ". Copies to the host go into pinned memory, enqueued on a stream and waited for once at the end: worker k's "
        "partial into workspace.host_partials[k], the on_device total into workspace.host_total[0]";
  return message;
}

}  // namespace lesson04_tests
