// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04 tests. Inputs are small integers stored as floats wherever a sum can be checked
// exactly (every order of addition gives the same double), random floats in [0, 1) for the
// accuracy clause; every slot a result lands in is poisoned first, and every slice sits between
// poisoned floats, so a lost, doubled or out-of-range element shows up as a wrong sum or a NaN.
// Order is checked with a "gate" (a host function that holds a stream until the test opens it),
// never with timing; the only timed facts are ratios with wide margins.
#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "common/random.h"
#include "common/testing/devices.h"
#include "common/testing/gpu_test.h"
#include "common/testing/stream_gate.h"
#include "common/timer.h"
#include "split_reduction.h"

using namespace lesson04;
using course::testing::case_seed;
using course::testing::current_device;
using course::testing::require_gpus;
using course::testing::run_with_watchdog;
using course::testing::set_peer_access_by_runtime;
using course::testing::StreamGate;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kGuard = 64;  // poisoned floats before and after every slice (keeps 16-byte alignment)
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<std::size_t> kSplitSizes = {
    0, 1, 2, 3, 5, 1000, (std::size_t{1} << 20) + 7, 3 * (std::size_t{1} << 22) + 1};

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

// A buffer of `count` floats on `device` between kGuard poisoned floats, with values[first, first + count).
course::DeviceBuffer<float> guarded_copy(int device, const std::vector<float>& values, std::size_t first,
                                         std::size_t count, std::size_t misalign = 0) {
  course::DeviceBuffer<float> buffer(device, 2 * kGuard + misalign + count);
  poison(device, buffer.data(), buffer.bytes());
  course::testing::upload(buffer.data() + kGuard + misalign, device, std::span(values).subspan(first, count));
  return buffer;
}

// One slice per worker of `workspace`, placed as sum_resident expects, between poisoned floats.
struct Slices {
  std::vector<course::DeviceBuffer<float>> buffers;
  std::vector<const float*> pointers;
};

Slices place_slices(const SplitWorkspace& workspace, const std::vector<float>& values, std::size_t n) {
  Slices slices;
  const int workers = static_cast<int>(workspace.workers.size());
  for (int k = 0; k < workers; ++k) {
    const course::Range range = course::split_range(n, workers, k);
    slices.buffers.push_back(guarded_copy(workspace.workers[k].device, values, range.begin, range.size()));
    slices.pointers.push_back(slices.buffers.back().data() + kGuard);  // an empty slice points at poison
  }
  return slices;
}

void poison_results(SplitWorkspace& workspace) {
  for (Worker& w : workspace.workers) poison(w.device, w.sum.data(), w.sum.bytes());
  poison(workspace.workers[0].device, workspace.gathered.data(), workspace.gathered.bytes());
  poison(workspace.workers[0].device, workspace.total.data(), workspace.total.bytes());
  std::fill(workspace.host_partials.data(), workspace.host_partials.data() + workspace.host_partials.size(), kNaN);
}

// Every worker's sum slot holds its slice's sum; on_device also gathers them and their total.
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

void check_split(SplitWorkspace& workspace, const std::vector<float>& values, Combine combine) {
  const int caller = current_device();
  for (const std::size_t n : kSplitSizes) {
    const Slices slices = place_slices(workspace, values, n);
    poison_results(workspace);
    INFO(workspace.workers.size() << " workers, n = " << n << ", combine " << to_string(combine));
    CHECK(sum_resident(workspace, slices.pointers, n, combine) == exact_sum(values, 0, n));
    CHECK(current_device() == caller);
    check_slots(workspace, values, n, combine == Combine::on_device);
  }
}

std::vector<int> repeated(int device, int workers) {
  return std::vector<int>(static_cast<std::size_t>(workers), device);
}

constexpr auto kGateLimit = std::chrono::seconds(100);
constexpr const char* kGateHint =
    "the call waits for something that never comes while a stream is held: cudaDeviceSynchronize, a kernel used "
    "for the first time (its module is loaded lazily), or a cudaStreamWaitEvent on an event recorded after it";

}  // namespace

// ---- Task 1 ---------------------------------------------------------------------------------

TEST_CASE("the sum is exact for every awkward length and every misaligned start",
          "[04-split-reduction][task:1][gpus:1][points:3]") {
  const int count = require_gpus(1);
  const std::vector<std::size_t> sizes = {
      0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 255, 1000, 4095, 4097, 65537, (1 << 20) + 3, 12345679};
  const std::vector<float> values = course::random_small_integers(sizes.back(), case_seed(100));
  for (int d = 0; d < count; ++d) {
    const int caller = count > 1 ? (d + 1) % count : 0;
    for (std::size_t misalign = 0; misalign < 4; ++misalign)
      for (const std::size_t n : sizes) {
        const course::DeviceBuffer<float> buffer = guarded_copy(d, values, 0, n, misalign);
        CUDA_CHECK(cudaSetDevice(caller));
        INFO("sum_on_device(" << d << ", data 16-byte aligned + " << misalign << " floats, n = " << n
                              << "); NaN means an element before or after the data was read");
        CHECK(sum_on_device(d, buffer.data() + kGuard + misalign, n) == exact_sum(values, 0, n));
        CHECK(current_device() == caller);
      }
  }
}

TEST_CASE("2^28 random floats in [0, 1) sum to within 1e-6 of a double-precision reference",
          "[04-split-reduction][task:1][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t n = std::size_t{1} << 28;
  const std::vector<float> values = course::random_floats(n, case_seed(110), 0.0f, 1.0f);
  double reference = 0;  // all positive, so this is also the sum of magnitudes the tolerance scales with
  for (const float v : values) reference += v;
  const course::DeviceBuffer<float> data(0, n);
  course::testing::upload<float>(data.data(), 0, values);
  const double got = sum_on_device(0, data.data(), n);
  INFO("got " << got << ", double reference " << reference << ", relative error "
              << std::abs(got - reference) / reference
              << " (the contract allows 1e-6: add at most 16 floats in float, then carry the sum in double)");
  CHECK(std::abs(got - reference) <= 1e-6 * reference);
}

TEST_CASE("enqueue_sum returns at once and then writes adds and writes 0 for n = 0 in stream order",
          "[04-split-reduction][task:1][gpus:1][points:1]") {
  require_gpus(1);
  const std::vector<float> values = course::random_small_integers(100003, case_seed(120));
  const course::DeviceBuffer<float> data = guarded_copy(0, values, 0, values.size());
  const float* first = data.data() + kGuard;
  const course::Stream stream(0);
  const course::DeviceBuffer<double> partials(0, kMaxBlocks), sum(0, 1);
  enqueue_sum(first, 1000, partials.data(), sum.data(), false, stream);  // loads the kernels: see kGateHint
  stream.synchronize();
  poison(0, sum.data(), sum.bytes());
  run_with_watchdog("enqueue_sum behind a held stream", kGateLimit, kGateHint, [&] {
    StreamGate gate(stream);
    auto call =
        std::async(std::launch::async, [&] { enqueue_sum(first, 100003, partials.data(), sum.data(), false, stream); });
    const bool returned = call.wait_for(10s) == std::future_status::ready;
    gate.open();
    call.get();
    INFO("enqueue_sum must enqueue and return: it waited for its stream");
    CHECK(returned);
  });
  stream.synchronize();
  CHECK(read_double(sum.data()) == exact_sum(values, 0, 100003));
  enqueue_sum(first + 3, 1000, partials.data(), sum.data(), true, stream);  // accumulate
  stream.synchronize();
  CHECK(read_double(sum.data()) == exact_sum(values, 0, 100003) + exact_sum(values, 3, 1003));
  enqueue_sum(first, 0, partials.data(), sum.data(), false, stream);  // n = 0 still writes 0
  stream.synchronize();
  CHECK(read_double(sum.data()) == 0.0);
  enqueue_sum(first, 5, partials.data(), sum.data(), false, stream);
  enqueue_sum(first, 0, partials.data(), sum.data(), true, stream);  // adds nothing
  stream.synchronize();
  CHECK(read_double(sum.data()) == exact_sum(values, 0, 5));
}

TEST_CASE("the reduction takes at most twice as long as copying its input on the same device",
          "[04-split-reduction][task:1][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t n = std::size_t{1} << 26;  // 256 MiB: far bigger than any cache
  const course::DeviceBuffer<float> src(0, n), dst(0, n);
  CUDA_CHECK(cudaMemset(src.data(), 0x3C, src.bytes()));
  const course::Stream stream(0);
  const course::DeviceBuffer<double> partials(0, kMaxBlocks), sum(0, 1);
  const course::Timing copy = course::measure(
      0, stream,
      [&] { CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice, stream)); }, 2,
      10);
  const course::Timing reduce = course::measure(
      0, stream, [&] { enqueue_sum(src.data(), n, partials.data(), sum.data(), false, stream); }, 2, 10);
  INFO("copy " << copy.median_ms << " ms (it reads and writes " << src.bytes() << " bytes), reduction "
               << reduce.median_ms << " ms (it only reads them): a fast reduction takes about half the copy's time. "
               << "Much slower: too few blocks, scalar loads, or an atomic per element");
  CHECK(reduce.median_ms <= 2 * copy.median_ms);
}

// ---- Task 2 ---------------------------------------------------------------------------------

TEST_CASE("the split sum is exact for 1 to 4 workers on one GPU and every uneven size",
          "[04-split-reduction][task:2][gpus:1][points:3]") {
  const int count = require_gpus(1);
  const std::vector<float> values = course::random_small_integers(kSplitSizes.back(), case_seed(200));
  CUDA_CHECK(cudaSetDevice(count - 1));  // the caller's device is not necessarily a worker's
  for (int workers = 1; workers <= 4; ++workers) {
    SplitWorkspace workspace(repeated(0, workers), 1024);
    check_split(workspace, values, Combine::on_host);
    check_split(workspace, values, Combine::on_device);
  }
}

TEST_CASE("every GPU count sums each slice on its own device with peer access off",
          "[04-split-reduction][task:2][gpus:2][points:3]") {
  const int count = require_gpus(2);
  // Off: a kernel that reads another GPU's slice through its unified address faults.
  set_peer_access_by_runtime(false);
  const std::vector<float> values = course::random_small_integers(kSplitSizes.back(), case_seed(210));
  std::vector<std::vector<int>> lists;
  for (int c = 1; c <= count; ++c) {
    lists.emplace_back();
    for (int d = 0; d < c; ++d) lists.back().push_back(d);
  }
  lists.emplace_back(lists.back().rbegin(), lists.back().rend());  // the last GPU first
  lists.push_back({1, 0, 1});                                      // a device twice, not first
  for (const auto& devices : lists) {
    SplitWorkspace workspace(devices, 1024);
    check_split(workspace, values, Combine::on_host);
    check_split(workspace, values, Combine::on_device);
  }
  for (int a = 0; a < count; ++a)
    for (int b = 0; b < count; ++b) {
      if (a == b || !course::testing::runtime_can_access(a, b)) continue;
      const cudaError_t again = course::testing::enable_again(a, b);  // cudaSuccess: it was still off
      (void)course::testing::disable_again(a, b);
      INFO("peer access GPU " << a << " -> GPU " << b << " was switched on by sum_resident");
      CHECK(again == cudaSuccess);
    }
}

TEST_CASE("every worker's reduction is launched before the call waits for any of them",
          "[04-split-reduction][task:2][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t n = 3000001;
  const std::vector<float> values = course::random_small_integers(n, case_seed(220));
  SplitWorkspace workspace(repeated(0, 3), 1024);
  const Slices slices = place_slices(workspace, values, n);
  for (const Combine combine : {Combine::on_host, Combine::on_device}) {
    (void)sum_resident(workspace, slices.pointers, n, combine);  // loads every kernel it uses, ungated
    poison_results(workspace);
    bool others_ran = false;
    double got = 0;
    run_with_watchdog("sum_resident with worker 0 held back", kGateLimit, kGateHint, [&] {
      StreamGate gate(workspace.workers[0].stream);  // worker 0 cannot start until the gate opens
      auto call = std::async(std::launch::async, [&] { return sum_resident(workspace, slices.pointers, n, combine); });
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      while (!others_ran && std::chrono::steady_clock::now() < deadline) {
        others_ran = true;
        for (int k = 1; k < 3; ++k) {
          const course::Range range = course::split_range(n, 3, k);
          others_ran =
              others_ran && read_double(workspace.workers[k].sum.data()) == exact_sum(values, range.begin, range.end);
        }
        if (!others_ran) std::this_thread::sleep_for(5ms);
      }
      gate.open();
      got = call.get();
    });
    INFO("combine " << to_string(combine) << ": while worker 0's stream was held, workers 1 and 2 "
                    << (others_ran ? "finished" : "never ran: the call waits for each worker inside the launch loop"));
    CHECK(others_ran);
    CHECK(got == exact_sum(values, 0, n));
  }
}

TEST_CASE("the total waits for the last worker's partial", "[04-split-reduction][task:2][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t n = 3000001;
  const std::vector<float> values = course::random_small_integers(n, case_seed(230));
  SplitWorkspace workspace(repeated(0, 3), 1024);
  const Slices slices = place_slices(workspace, values, n);
  for (const Combine combine : {Combine::on_host, Combine::on_device}) {
    (void)sum_resident(workspace, slices.pointers, n, combine);  // loads every kernel it uses, ungated
    poison_results(workspace);
    bool returned_early = false;
    double got = 0;
    run_with_watchdog("sum_resident with the last worker held back", kGateLimit, kGateHint, [&] {
      StreamGate gate(workspace.workers[2].stream);
      auto call = std::async(std::launch::async, [&] { return sum_resident(workspace, slices.pointers, n, combine); });
      returned_early = call.wait_for(300ms) == std::future_status::ready;
      gate.open();
      got = call.get();
    });
    INFO("combine " << to_string(combine) << ": the call "
                    << (returned_early ? "returned while worker 2's reduction was held back: a partial was read before "
                                         "its reduction ran (a copy on another stream, or a missing event wait)"
                                       : "waited for worker 2"));
    CHECK_FALSE(returned_early);
    CHECK(got == exact_sum(values, 0, n));
  }
}

TEST_CASE("a second call never reuses a partial of the first", "[04-split-reduction][task:2][gpus:1][points:1]") {
  require_gpus(1);
  const std::vector<float> values = course::random_small_integers(1 << 20, case_seed(240));
  SplitWorkspace workspace(repeated(0, 4), 1024);
  for (const Combine combine : {Combine::on_host, Combine::on_device})
    for (const std::size_t n : {std::size_t{1} << 20, std::size_t{2}, std::size_t{0}}) {  // no poison in between
      const Slices slices = place_slices(workspace, values, n);
      INFO("combine " << to_string(combine) << ", n = " << n << " over 4 workers, right after a larger sum");
      CHECK(sum_resident(workspace, slices.pointers, n, combine) == exact_sum(values, 0, n));
    }
}

TEST_CASE("slice lists that do not fit the workers are rejected", "[04-split-reduction][task:2][gpus:1][points:1]") {
  require_gpus(1);
  SplitWorkspace workspace(repeated(0, 3), 16);
  const course::DeviceBuffer<float> data(0, 16);
  const std::vector<const float*> two = {data.data(), data.data()};
  const std::vector<const float*> with_null = {data.data(), nullptr, data.data()};
  const std::vector<const float*> empty_null = {data.data(), data.data(), nullptr};
  CHECK_THROWS_AS(sum_resident(workspace, two, 10), std::invalid_argument);
  CHECK_THROWS_AS(sum_resident(workspace, with_null, 10), std::invalid_argument);
  CHECK(sum_resident(workspace, empty_null, 0) == 0.0);  // an empty slice may be nullptr
}

TEST_CASE("two GPUs sum a large array in clearly less time than one",
          "[04-split-reduction][task:2][gpus:2][points:2]") {
  require_gpus(2);
  const std::size_t n = std::size_t{1} << 29;  // 2 GiB: each GPU reads for about a third of a millisecond or more
  const std::vector<int> one_device = {0}, two_devices = {0, 1};
  SplitWorkspace one(one_device, 1), two(two_devices, 1);
  const course::DeviceBuffer<float> whole(0, n), half0(0, n / 2), half1(1, n - n / 2);
  CUDA_CHECK(cudaMemset(whole.data(), 0x3C, whole.bytes()));
  CUDA_CHECK(cudaMemset(half0.data(), 0x3C, half0.bytes()));
  {
    const course::DeviceGuard on_1(1);
    CUDA_CHECK(cudaMemset(half1.data(), 0x3C, half1.bytes()));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<const float*> whole_slice = {whole.data()}, halves = {half0.data(), half1.data()};
  const course::Timing t1 = course::measure_host([&] { (void)sum_resident(one, whole_slice, n); }, 2, 10);
  const course::Timing t2 = course::measure_host([&] { (void)sum_resident(two, halves, n); }, 2, 10);
  INFO("one GPU " << t1.median_ms << " ms, two GPUs " << t2.median_ms
                  << " ms (median of 10): ideally half; about the same means they took turns");
  CHECK(t2.median_ms < 0.75 * t1.median_ms);
}

// ---- Task 3 ---------------------------------------------------------------------------------

namespace {

course::PinnedBuffer<float> pinned_copy(const std::vector<float>& values) {
  course::PinnedBuffer<float> pinned(values.size());
  std::copy(values.begin(), values.end(), pinned.data());
  return pinned;
}

// enqueue_sum with a host function that sleeps for `delay` before or after it, on the same stream:
// a chunk's reduction that starts late, or that takes `delay` longer.
ChunkReduce slow_reduce(std::chrono::microseconds delay, bool sleep_first) {
  return [delay, sleep_first](const float* chunk, std::size_t n, double* partials, double* sum, bool accumulate,
                              cudaStream_t stream) {
    // The closure lives in the std::function the caller holds until every chunk is done.
    void* pause = const_cast<std::chrono::microseconds*>(&delay);
    const cudaHostFn_t sleep = [](void* p) {
      std::this_thread::sleep_for(*static_cast<std::chrono::microseconds*>(p));
    };
    if (sleep_first) CUDA_CHECK(cudaLaunchHostFunc(stream, sleep, pause));
    enqueue_sum(chunk, n, partials, sum, accumulate, stream);
    if (!sleep_first) CUDA_CHECK(cudaLaunchHostFunc(stream, sleep, pause));
  };
}

}  // namespace

TEST_CASE("the sum of pinned host data is exact for 1 to 4 workers every uneven size and short chunks",
          "[04-split-reduction][task:3][gpus:1][points:3]") {
  require_gpus(1);
  const std::vector<std::size_t> sizes = {0, 1, 999, 1000, 1001, 8003, 123457};
  const std::vector<float> values = course::random_small_integers(3 * (std::size_t{1} << 22) + 5, case_seed(300));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace one(repeated(0, 1), 1000);
  CHECK_THROWS_AS(sum_from_host(one, nullptr, 10), std::invalid_argument);
  for (int workers = 1; workers <= 4; ++workers) {
    SplitWorkspace workspace(repeated(0, workers), 1000);
    for (const std::size_t n : sizes) {
      poison_results(workspace);
      INFO(workers << " workers, chunks of 1000 floats, n = " << n);
      CHECK(sum_from_host(workspace, host.data(), n) == exact_sum(values, 0, n));
      check_slots(workspace, values, n, false);
    }
  }
  SplitWorkspace workspace(repeated(0, 2), kDefaultChunkElements);  // full chunks and a tail
  INFO("2 workers, default chunks, n = " << values.size());
  CHECK(sum_from_host(workspace, host.data(), values.size()) == exact_sum(values, 0, values.size()));
}

TEST_CASE("a chunk buffer is refilled only after its chunk has been reduced",
          "[04-split-reduction][task:3][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t chunk = 4096, n = 2 * 16 * chunk + 77;  // 17 chunks per worker
  const std::vector<float> values = course::random_small_integers(n, case_seed(310));
  const course::PinnedBuffer<float> host = pinned_copy(values);
  SplitWorkspace workspace(repeated(0, 2), chunk);
  poison_results(workspace);
  double got = 0;
  run_with_watchdog("sum_from_host with slow reductions", kGateLimit, kGateHint,
                    [&] { got = sum_from_host(workspace, host.data(), n, slow_reduce(2ms, true)); });
  INFO(
      "each chunk's reduction starts 2 ms late; a wrong sum means a buffer was overwritten by chunk c+2 "
      "before chunk c was reduced");
  CHECK(got == exact_sum(values, 0, n));
}

TEST_CASE("the copy of the next chunk runs while this chunk is reduced",
          "[04-split-reduction][task:3][gpus:1][points:2]") {
  require_gpus(1);
  const std::size_t chunk = std::size_t{16} << 20, chunks = 8, n = chunks * chunk;  // 64 MiB chunks
  const course::PinnedBuffer<float> host = pinned_copy(std::vector<float>(n, 1.0f));
  const std::vector<int> device = {0};
  SplitWorkspace workspace(device, chunk);
  const course::Timing copy = course::measure(
      0, workspace.workers[0].copy_stream,
      [&] {
        CUDA_CHECK(cudaMemcpyAsync(workspace.workers[0].chunks[0].data(), host.data(), chunk * sizeof(float),
                                   cudaMemcpyHostToDevice, workspace.workers[0].copy_stream));
      },
      1, 5);
  // A reduction as long as a chunk's copy: then overlap can make the whole nearly twice as fast.
  const ChunkReduce reduce = slow_reduce(std::chrono::microseconds(static_cast<long>(copy.median_ms * 1000)), false);
  double serial_sum = 0, overlapped_sum = 0;
  course::Timing serial, overlapped;
  run_with_watchdog("sum_from_host and sum_from_host_serial", kGateLimit, kGateHint, [&] {
    serial = course::measure_host([&] { serial_sum = sum_from_host_serial(workspace, host.data(), n, reduce); }, 1, 3);
    overlapped = course::measure_host([&] { overlapped_sum = sum_from_host(workspace, host.data(), n, reduce); }, 1, 3);
  });
  INFO(chunks << " chunks of " << chunk * sizeof(float) << " bytes, each copy " << copy.median_ms
              << " ms and each reduction made as long: serial " << serial.median_ms << " ms, yours "
              << overlapped.median_ms << " ms (ideally " << (chunks + 1) << " / " << 2 * chunks << " of serial)");
  CHECK(overlapped_sum == static_cast<double>(n));
  CHECK(serial_sum == static_cast<double>(n));
  CHECK(serial.median_ms > 1.3 * overlapped.median_ms);
}

// ---- Task 4 ---------------------------------------------------------------------------------

namespace {

SizeTiming row(std::size_t n, double one_median, double split_median) {
  SizeTiming r;
  r.n = n;
  r.one = {one_median, one_median, one_median};
  r.split = {split_median, split_median, split_median};
  return r;
}

}  // namespace

TEST_CASE("the crossover is the smallest size from which the split stays faster",
          "[04-split-reduction][task:4][gpus:0][points:2]") {
  CHECK_FALSE(crossover_size({}).has_value());
  CHECK_FALSE(crossover_size({row(1000, 1.0, 2.0), row(2000, 1.0, 1.5)}).has_value());
  CHECK(crossover_size({row(1000, 1.0, 0.5), row(2000, 2.0, 1.0)}) == std::optional<std::size_t>(1000));
  // Faster at 2000, slower at 3000, faster again from 4000 on: the crossover is 4000.
  CHECK(crossover_size({row(1000, 1.0, 2.0), row(2000, 1.0, 0.9), row(3000, 1.0, 1.1), row(4000, 2.0, 1.5),
                        row(5000, 4.0, 2.0)}) == std::optional<std::size_t>(4000));
  CHECK_FALSE(crossover_size({row(1000, 1.0, 0.5), row(2000, 1.0, 1.0)}).has_value());  // a tie is not faster
}

TEST_CASE("measuring requests that make no sense are rejected before any GPU work",
          "[04-split-reduction][task:4][gpus:0][points:1]") {
  const std::vector<int> none, two = {0, 0};
  const std::vector<std::size_t> sizes = {1000, 2000}, empty, unsorted = {2000, 1000}, with_zero = {0, 1000};
  CHECK_THROWS_AS(measure_crossover(none, sizes), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, empty), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, unsorted), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, with_zero), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, sizes, MeasureOptions{1, 0}), std::invalid_argument);
  CHECK_THROWS_AS(measure_crossover(two, sizes, MeasureOptions{-1, 5}), std::invalid_argument);
}

TEST_CASE("the timing table has a row per size with min <= median <= max and the crossover it implies",
          "[04-split-reduction][task:4][gpus:1][points:2]") {
  const int count = require_gpus(1);
  const std::vector<int> devices = {0, 0};
  const std::vector<std::size_t> sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26};
  const MeasureOptions options{1, 5, Combine::on_host};
  CUDA_CHECK(cudaSetDevice(count - 1));
  const CrossoverReport report = measure_crossover(devices, sizes, options);
  CHECK(current_device() == count - 1);
  CHECK(report.devices == devices);
  CHECK(report.repeats == options.repeats);
  REQUIRE(report.rows.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const SizeTiming& r = report.rows[i];
    INFO("row " << i << ": n = " << r.n << ", one " << r.one.min_ms << " / " << r.one.median_ms << " / " << r.one.max_ms
                << " ms, split " << r.split.min_ms << " / " << r.split.median_ms << " / " << r.split.max_ms
                << " ms (min / median / max)");
    CHECK(r.n == sizes[i]);
    CHECK(0 < r.one.min_ms);
    CHECK(r.one.min_ms <= r.one.median_ms);
    CHECK(r.one.median_ms <= r.one.max_ms);
    CHECK(0 < r.split.min_ms);
    CHECK(r.split.min_ms <= r.split.median_ms);
    CHECK(r.split.median_ms <= r.split.max_ms);
  }
  CHECK(report.crossover == crossover_size(report.rows));
  INFO("one worker: " << report.rows.front().one.median_ms << " ms for 2^10 floats, "
                      << report.rows.back().one.median_ms << " ms for 2^26: the times must come from the calls");
  CHECK(report.rows.back().one.median_ms > report.rows.front().one.median_ms);
}
