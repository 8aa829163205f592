// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07: an all-reduce by hand. A ring (reduce-scatter, then all-gather) whose steps are
// ordered across workers by events alone, the cost model that says why a ring, a one-shot kernel
// that reads every peer's published copy at once, and a dispatcher that picks one by size from a
// measured crossover. Every call enqueues and returns, as NCCL's do.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 07-all-reduce --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "all_reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson07 {

namespace {

// What every all-reduce rejects before any CUDA call (the header's common clause).
[[maybe_unused]] void check_buffers(const AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                    std::size_t count, const char* function) {
  if (buffers.size() != workspace.workers.size())
    throw std::invalid_argument(std::string(function) + ": " + std::to_string(buffers.size()) + " buffers for " +
                                std::to_string(workspace.workers.size()) + " workers");
  if (count > 0)
    for (std::size_t k = 0; k < buffers.size(); ++k)
      if (buffers[k] == nullptr)
        throw std::invalid_argument(std::string(function) + ": buffer " + std::to_string(k) + " is nullptr");
}

// x mod m in [0, m), for a negative x too.
[[maybe_unused]] int wrap(int x, int m) {
  return ((x % m) + m) % m;
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

// Task 1: chunks of a multiple of 4 floats, so every chunk starts on a float4; one kernel for both
// kinds of step (16-byte loads, several in flight per thread, enough blocks to fill the GPU); the
// ring's steps ordered by one event per worker and step.
namespace {

constexpr int kThreads = 256;  // per block
constexpr int kUnroll = 4;     // float4s in flight per thread and iteration

__device__ float4 plus(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// dst = src (+ dst when kAdd) over [0, n); src and dst 16-byte aligned.
template <bool kAdd>
__global__ void __launch_bounds__(kThreads)
    ring_step_kernel(const float* __restrict__ src, float* __restrict__ dst, std::size_t n) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t vectors = n / 4;
  const float4* __restrict__ s = reinterpret_cast<const float4*>(src);
  float4* __restrict__ d = reinterpret_cast<float4*>(dst);
  std::size_t i = thread;
  for (; i + (kUnroll - 1) * stride < vectors; i += kUnroll * stride) {
    float4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = s[i + u * stride];  // every load issued before any store
    if (kAdd) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) x[u] = plus(d[i + u * stride], x[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) d[i + u * stride] = x[u];
  }
  for (; i < vectors; i += stride) d[i] = kAdd ? plus(d[i], s[i]) : s[i];
  const std::size_t tail = 4 * vectors + thread;  // the 0 to 3 floats after the last float4
  if (tail < n) dst[tail] = kAdd ? dst[tail] + src[tail] : src[tail];
}

// Enough blocks of kThreads to cover n floats as float4s, at most as many of `kernel`'s blocks as
// fit on the current device at once (more would run as a second, partly empty wave).
template <class Kernel>
int blocks_for(std::size_t n, Kernel kernel) {
  const std::size_t needed = std::max<std::size_t>(1, (n + 4 * kThreads - 1) / (4 * kThreads));
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (needed <= static_cast<std::size_t>(sms)) return static_cast<int>(needed);  // small: no occupancy query
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  return static_cast<int>(std::min(needed, static_cast<std::size_t>(sms) * std::max(1, per_sm)));
}

}  // namespace

course::Range ring_chunk(std::size_t count, int workers, int chunk) {
  if (workers < 1) throw std::invalid_argument("ring_chunk: workers must be at least 1");
  if (chunk < 0 || chunk >= workers) throw std::invalid_argument("ring_chunk: chunk outside [0, workers)");
  const std::size_t w = static_cast<std::size_t>(workers);
  const std::size_t per = ((count + w - 1) / w + 3) / 4 * 4;
  const std::size_t begin = std::min(static_cast<std::size_t>(chunk) * per, count);
  return {begin, std::min(begin + per, count)};
}

void enqueue_ring_step(const float* src, float* dst, std::size_t n, bool add, cudaStream_t stream) {
  if (n == 0) return;
  if (add)
    ring_step_kernel<true><<<blocks_for(n, ring_step_kernel<true>), kThreads, 0, stream>>>(src, dst, n);
  else
    ring_step_kernel<false><<<blocks_for(n, ring_step_kernel<false>), kThreads, 0, stream>>>(src, dst, n);
  CUDA_CHECK_LAUNCH();
}

void ring_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                     const RingStep& step) {
  check_buffers(workspace, buffers, count, "ring_all_reduce");
  const int w = workspace.size();
  if (w == 1 || count == 0) return;
  const course::DeviceGuard keep_callers_device(workspace.workers[0].device);
  for (Worker& worker : workspace.workers) {  // after what the caller enqueued before the call
    CUDA_CHECK(cudaSetDevice(worker.device));
    worker.entered.record(worker.stream);
  }
  const int steps = 2 * (w - 1);
  for (int s = 0; s < steps; ++s) {
    const bool reduce = s < w - 1;  // reduce-scatter first, then all-gather
    for (int k = 0; k < w; ++k) {
      const int left = wrap(k - 1, w);
      Worker& me = workspace.workers[k];
      const Worker& from = workspace.workers[left];
      const int chunk = reduce ? wrap(k - 1 - s, w) : wrap(k - (s - (w - 1)), w);
      const course::Range range = ring_chunk(count, w, chunk);
      CUDA_CHECK(cudaSetDevice(me.device));
      CUDA_CHECK(cudaStreamWaitEvent(me.stream, s == 0 ? from.entered.get() : from.step_done[s - 1].get(), 0));
      step(buffers[left] + range.begin, buffers[k] + range.begin, range.size(), reduce, me.stream);
      me.step_done[s].record(me.stream);
    }
  }
  for (int k = 0; k < w; ++k) {  // the right neighbour's last step is the last reader of buffer k
    Worker& me = workspace.workers[k];
    CUDA_CHECK(cudaSetDevice(me.device));
    CUDA_CHECK(cudaStreamWaitEvent(me.stream, workspace.workers[wrap(k + 1, w)].step_done[steps - 1], 0));
  }
}

// ---- Task 2 -------------------------------------------------------------------------------------

Cost ring_cost(double bytes, int workers) {
  // Task 2: each worker receives W-1 chunks of S/W bytes in each of the two halves, one step at a time.
  if (workers < 1) throw std::invalid_argument("ring_cost: workers must be at least 1");
  return {2.0 * (workers - 1) / workers * bytes, 2 * (workers - 1)};
}

Cost one_shot_cost(double bytes, int workers) {
  // Task 2: every worker reads every peer's whole buffer, all in one step.
  if (workers < 1) throw std::invalid_argument("one_shot_cost: workers must be at least 1");
  return {static_cast<double>(workers - 1) * bytes, workers > 1 ? 1 : 0};
}

double bus_bandwidth_gb_per_s(double bytes, double seconds, int workers) {
  // Task 2: algbw times the ring's factor 2 (W - 1) / W.
  if (workers < 1) throw std::invalid_argument("bus_bandwidth_gb_per_s: workers must be at least 1");
  if (!(seconds > 0)) throw std::invalid_argument("bus_bandwidth_gb_per_s: the time must be positive");
  return bytes / seconds / 1e9 * 2.0 * (workers - 1) / workers;
}

// ---- Task 3 -------------------------------------------------------------------------------------

// Task 3: one kernel whose every thread reads the same float4 of every source, issued before any
// add, and adds them in worker order; the handshake is two loops over the workers: publish
// everywhere first (after the previous call's readers are done), then read everywhere.
namespace {

__global__ void __launch_bounds__(kThreads)
    sum_of_peers_kernel(const PeerSources sources, float* __restrict__ out, std::size_t n) {
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t vectors = n / 4;
  for (std::size_t i = thread; i < vectors; i += stride) {
    float4 x[kMaxWorkers];
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j)
      if (j < sources.count) x[j] = reinterpret_cast<const float4*>(sources.data[j])[i];
    float4 sum = x[0];
#pragma unroll
    for (int j = 1; j < kMaxWorkers; ++j)
      if (j < sources.count) sum = plus(sum, x[j]);
    reinterpret_cast<float4*>(out)[i] = sum;
  }
  const std::size_t tail = 4 * vectors + thread;
  if (tail < n) {
    float sum = sources.data[0][tail];
    for (int j = 1; j < sources.count; ++j) sum += sources.data[j][tail];
    out[tail] = sum;
  }
}

}  // namespace

void enqueue_sum_of_peers(const PeerSources& sources, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  sum_of_peers_kernel<<<blocks_for(n, sum_of_peers_kernel), kThreads, 0, stream>>>(sources, out, n);
  CUDA_CHECK_LAUNCH();
}

void one_shot_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                         const PeerSum& sum) {
  check_buffers(workspace, buffers, count, "one_shot_all_reduce");
  if (count > workspace.one_shot_max_count)
    throw std::invalid_argument("one_shot_all_reduce: " + std::to_string(count) + " floats, the scratch holds " +
                                std::to_string(workspace.one_shot_max_count));
  const int w = workspace.size();
  if (w == 1 || count == 0) return;  // one buffer is its own sum
  const course::DeviceGuard keep_callers_device(workspace.workers[0].device);
  PeerSources sources;
  sources.count = w;
  for (int j = 0; j < w; ++j) sources.data[j] = workspace.workers[j].scratch.data();
  for (int k = 0; k < w; ++k) {  // publish: scratch k is free once every peer read it last time
    Worker& me = workspace.workers[k];
    CUDA_CHECK(cudaSetDevice(me.device));
    for (int j = 0; j < w; ++j)
      if (j != k) CUDA_CHECK(cudaStreamWaitEvent(me.stream, workspace.workers[j].read_done, 0));
    CUDA_CHECK(
        cudaMemcpyAsync(me.scratch.data(), buffers[k], count * sizeof(float), cudaMemcpyDeviceToDevice, me.stream));
    me.published.record(me.stream);
  }
  for (int k = 0; k < w; ++k) {  // read: every copy of this call is published
    Worker& me = workspace.workers[k];
    CUDA_CHECK(cudaSetDevice(me.device));
    for (int j = 0; j < w; ++j)
      if (j != k) CUDA_CHECK(cudaStreamWaitEvent(me.stream, workspace.workers[j].published, 0));
    sum(sources, buffers[k], count, me.stream);
    me.read_done.record(me.stream);
  }
}

// ---- Task 4 -------------------------------------------------------------------------------------

Algorithm choose_algorithm(const AllReduceWorkspace& workspace, std::size_t count) {
  // Task 4: below the crossover, and where the scratch holds it, the one-shot.
  return count < workspace.crossover_count && count <= workspace.one_shot_max_count ? Algorithm::one_shot
                                                                                    : Algorithm::ring;
}

void all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count) {
  // Task 4: run what choose_algorithm picks.
  if (choose_algorithm(workspace, count) == Algorithm::one_shot)
    one_shot_all_reduce(workspace, buffers, count);
  else
    ring_all_reduce(workspace, buffers, count);
}

std::size_t crossover_from(const std::vector<AlgorithmTiming>& rows) {
  // Task 4: walk back from the largest count while the ring stays faster.
  if (rows.empty()) throw std::invalid_argument("crossover_from: no rows");
  std::size_t crossover = kRingNeverWins;
  for (std::size_t i = rows.size(); i-- > 0;) {
    if (!(rows[i].ring_ms < rows[i].one_shot_ms)) break;
    crossover = rows[i].count;
  }
  return crossover;
}

// Task 4: both algorithms at every count, calls back to back and one wait, as nccl-tests times.
std::vector<AlgorithmTiming> measure_crossover(AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                               std::span<const std::size_t> counts, int warmup, int repeats) {
  if (counts.empty()) throw std::invalid_argument("measure_crossover: no counts");
  if (repeats < 1 || warmup < 0) throw std::invalid_argument("measure_crossover: repeats >= 1 and warmup >= 0");
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] == 0 || counts[i] > workspace.one_shot_max_count || (i > 0 && counts[i] <= counts[i - 1]))
      throw std::invalid_argument("measure_crossover: counts must be strictly ascending, in [1, one_shot_max_count]");
  check_buffers(workspace, buffers, counts.back(), "measure_crossover");
  const auto wait = [&] {
    for (const Worker& worker : workspace.workers) worker.stream.synchronize();
  };
  const auto ms_per_call = [&](const auto& call) {
    for (int i = 0; i < warmup; ++i) call();
    wait();
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i) call();
    wait();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count() / repeats;
  };
  std::vector<AlgorithmTiming> rows;
  for (const std::size_t count : counts) {
    AlgorithmTiming row;
    row.count = count;
    row.one_shot_ms = ms_per_call([&] { one_shot_all_reduce(workspace, buffers, count); });
    row.ring_ms = ms_per_call([&] { ring_all_reduce(workspace, buffers, count); });
    rows.push_back(row);
  }
  workspace.crossover_count = crossover_from(rows);
  return rows;
}

}  // namespace lesson07
