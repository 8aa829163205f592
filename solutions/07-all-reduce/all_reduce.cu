// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07: an all-reduce by hand. A ring (reduce-scatter, then all-gather) whose steps are
// ordered across workers by events alone, the cost model that says why a ring, the one-shot (a
// kernel per worker reads every peer's published copy at once, ordered by events), the one-kernel
// (the same in one kernel per worker that orders itself through flags in its peers' memory), the
// LL one-shot (one kernel per worker that pushes its data into its peers' memory with the call's
// number in the same 8-byte word as every float), and a dispatcher that picks one by size from
// measured times. Every call enqueues and returns, as NCCL's do.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 07-all-reduce --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "all_reduce.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cuda/atomic>
#include <cuda/std/chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"
#include "common/timer.h"

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

// Task 4: one kernel per worker. Block b of every worker handles the same slice of the buffer, so
// block b only ever waits for the blocks b of its peers: its flags are its own, and no block waits
// for another block of its own grid. Flags hold call numbers (epochs), never reset; the call
// number lives on the GPU, so a graph replay counts its calls like plain calls do. Two halves of
// scratch, one per call parity: the "finished reading" a call waits for was sent two calls ago.
namespace {

using SystemFlag = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

// What one_kernel's launch needs to know of a GPU, learned once per device (the queries cost more
// than a small call's whole host budget).
struct DeviceFacts {
  int resident_blocks = 0;    // one_kernel's blocks resident at once on the whole GPU
  bool early_launch = false;  // programmatic dependent launch (compute capability 9.0 and later)
};
DeviceFacts device_facts(int device);

// Waits until *flag >= call; false when `patience_ns` passed first. An acquire at system scope:
// what the peer wrote before its release of this flag is visible after it. It spins for the first
// 20 us (a peer's flag crosses NVLink in about one), then sleeps a little between looks.
__device__ bool wait_for_flag(unsigned long long* flag, unsigned long long call, long long patience_ns) {
  SystemFlag observed(*flag);
  if (observed.load(cuda::memory_order_acquire) >= call) return true;
  const auto start = cuda::std::chrono::system_clock::now();  // the GPU's global timer
  while (observed.load(cuda::memory_order_acquire) < call) {
    const auto waited = cuda::std::chrono::system_clock::now() - start;
    if (waited > cuda::std::chrono::nanoseconds(patience_ns)) return false;
    if (waited > cuda::std::chrono::microseconds(20)) __nanosleep(200);
  }
  return true;
}

// The report of a block that gave up, written by exactly one block of the worker: the first to
// claim it (0 -> 1, never back). Shared by the one-kernel and the LL one-shot.
__device__ void report_give_up(GiveUp* report, unsigned int* claim, unsigned long long call, int peer, int block,
                               int waiting_for) {
  unsigned int free = 0;
  if (!cuda::atomic_ref<unsigned int, cuda::thread_scope_device>(*claim).compare_exchange_strong(
          free, 1u, cuda::memory_order_relaxed))
    return;  // another block's report stands
  volatile GiveUp* live = report;
  live->peer = peer;
  live->block = block;
  live->waiting_for = waiting_for;
  __threadfence_system();  // the fields before the call number that says they are there
  live->call = call;
}

__global__ void __launch_bounds__(kThreads) one_kernel(const OneKernelArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched early (programmatic dependent launch, on GPUs that have it): this grid may be resident
  // before the kernel ahead of it on the stream has ended. Nothing is read before that one is done.
  cudaGridDependencySynchronize();
#endif
  const int k = a.worker, b = static_cast<int>(blockIdx.x), peer = static_cast<int>(threadIdx.x);
  Signals* mine = a.signals[k];
  const unsigned long long call = mine->calls + 1;    // this stream's previous kernel moved it, and ended
  const bool waiter = peer < a.workers && peer != k;  // thread j speaks with worker j
  __shared__ int gave_up;
  if (threadIdx.x == 0) gave_up = 0;
  __syncthreads();
  // 1. My half of scratch is free once every peer finished reading it, in call - 2.
  if (waiter && !wait_for_flag(&mine->finished[peer], call < 2 ? 0 : call - 2, a.patience_ns)) {
    report_give_up(a.give_up, a.give_up_claim, call, peer, b, 1);
    gave_up = 1;
  }
  __syncthreads();
  if (gave_up) return;
  // 2. Publish my slice (the same slice boundaries on every worker: same count, same grid).
  const std::size_t per = ((a.count + a.blocks - 1) / a.blocks + 3) / 4 * 4;
  const std::size_t begin = min(static_cast<std::size_t>(b) * per, a.count), end = min(begin + per, a.count);
  const std::size_t vectors = (end - begin) / 4;  // begin is a multiple of 4: 16-byte aligned
  const std::size_t half = (call % 2) * a.half;   // where this call's half starts in every scratch
  float* mine_scratch = a.scratch[k] + half;
  for (std::size_t i = threadIdx.x; i < vectors; i += blockDim.x)
    reinterpret_cast<float4*>(mine_scratch + begin)[i] = reinterpret_cast<const float4*>(a.buffer + begin)[i];
  for (std::size_t i = begin + 4 * vectors + threadIdx.x; i < end; i += blockDim.x) mine_scratch[i] = a.buffer[i];
  __syncthreads();
  // 3. Tell every peer, in its memory; the release orders the whole block's copy (ordered before
  // it by the barrier) before the flag, for a reader anywhere in the system.
  if (waiter) SystemFlag(a.signals[peer]->arrived[b][k]).store(call, cuda::memory_order_release);
  // 4. Wait for every peer's block b.
  if (waiter && !wait_for_flag(&mine->arrived[b][peer], call, a.patience_ns)) {
    report_give_up(a.give_up, a.give_up_claim, call, peer, b, 0);
    gave_up = 1;
  }
  __syncthreads();
  if (gave_up) return;
  // 5. The sum of the slice, in worker order, from the first scratch.
  for (std::size_t i = threadIdx.x; i < vectors; i += blockDim.x) {
    float4 x[kMaxWorkers];
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j)
      if (j < a.workers) x[j] = reinterpret_cast<const float4*>(a.scratch[j] + half + begin)[i];
    float4 sum = x[0];
#pragma unroll
    for (int j = 1; j < kMaxWorkers; ++j)
      if (j < a.workers) sum = plus(sum, x[j]);
    reinterpret_cast<float4*>(a.buffer + begin)[i] = sum;
  }
  for (std::size_t i = begin + 4 * vectors + threadIdx.x; i < end; i += blockDim.x) {
    float sum = a.scratch[0][half + i];
    for (int j = 1; j < a.workers; ++j) sum += a.scratch[j][half + i];
    a.buffer[i] = sum;
  }
  __syncthreads();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();  // the next call's kernel may be scheduled now (it waits for this one)
#endif
  // 6. The last block of this worker to finish reading tells every peer that its scratch is free.
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned int, cuda::thread_scope_device> done(mine->blocks_done);
    if (done.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1) {
      done.store(0, cuda::memory_order_relaxed);
      mine->calls = call;
      for (int j = 0; j < a.workers; ++j)
        if (j != k) SystemFlag(a.signals[j]->finished[k]).store(call, cuda::memory_order_release);
    }
  }
}

DeviceFacts device_facts(int device) {
  static std::array<std::atomic<int>, 64> known{};  // resident blocks x 2 + early launch; 0: not asked yet
  const bool cached = device >= 0 && device < static_cast<int>(known.size());
  if (cached && known[device].load() > 0) return {known[device].load() / 2, known[device].load() % 2 == 1};
  const course::DeviceGuard on_device(device);
  int sms = 0, per_sm = 0, major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, one_kernel, kThreads, 0));
  const DeviceFacts facts{sms * per_sm, major >= 9};
  if (cached) known[device].store(2 * facts.resident_blocks + (facts.early_launch ? 1 : 0));
  return facts;
}

// `needed` blocks, at most kMaxBlocks and at most what every GPU holds resident at once, shared by the
// workers on it (resident_blocks(device): one block's share of a GPU for this kernel); at least 1.
template <typename ResidentBlocks>
int blocks_all_resident(const AllReduceWorkspace& workspace, std::size_t needed, ResidentBlocks resident_blocks) {
  int limit = kMaxBlocks;
  for (const Worker& worker : workspace.workers) {  // each GPU's resident blocks, shared by its workers
    const int sharing = static_cast<int>(std::count_if(workspace.workers.begin(), workspace.workers.end(),
                                                       [&](const Worker& w) { return w.device == worker.device; }));
    limit = std::min(limit, resident_blocks(worker.device) / sharing);
  }
  return static_cast<int>(std::max<std::size_t>(1, std::min(needed, static_cast<std::size_t>(limit))));
}

// One launch of `kernel` on the current device, allowed to start before the kernel ahead of it on
// `stream` ends (it waits inside for that one), where the GPU can (compute capability 9 and later).
template <typename Args>
void launch_early(void (*kernel)(Args), const Args& args, int blocks, int threads, cudaStream_t stream) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.stream = stream;
  config.attrs = &early;
  config.numAttrs = device_facts(device).early_launch ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args));
}

}  // namespace

int one_kernel_blocks(const AllReduceWorkspace& workspace, std::size_t count) {
  const std::size_t needed = std::max<std::size_t>(1, (count + 4 * kThreads - 1) / (4 * kThreads));
  return blocks_all_resident(workspace, needed, [](int device) { return device_facts(device).resident_blocks; });
}

void enqueue_one_kernel(const OneKernelArgs& args, cudaStream_t stream) {
  // One launch, allowed to start before the kernel ahead of it ends (it waits inside for that one):
  // back-to-back calls then overlap one kernel's launch with the previous kernel's last steps.
  launch_early(one_kernel, args, args.blocks, kThreads, stream);
}

void one_kernel_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                           const OneKernelLaunch& launch) {
  check_buffers(workspace, buffers, count, "one_kernel_all_reduce");
  if (count > workspace.one_shot_max_count)
    throw std::invalid_argument("one_kernel_all_reduce: " + std::to_string(count) + " floats, the scratch holds " +
                                std::to_string(workspace.one_shot_max_count));
  if (const std::string why = gave_up(workspace); !why.empty())
    throw std::runtime_error(
        "one_kernel_all_reduce: an earlier call gave up, and the workers' flags no longer "
        "agree (make a new workspace): " +
        why);
  const int w = workspace.size();
  if (w == 1 || count == 0) return;
  const course::DeviceGuard keep_callers_device(workspace.workers[0].device);
  OneKernelArgs args;
  args.workers = w;
  args.count = count;
  args.blocks = one_kernel_blocks(workspace, count);
  args.patience_ns = workspace.patience.count();
  args.half = kernel_half(workspace.one_shot_max_count);
  for (int j = 0; j < w; ++j) {
    args.scratch[j] = workspace.workers[j].kernel_scratch.data();
    args.signals[j] = workspace.workers[j].signals.data();
  }
  for (int k = 0; k < w; ++k) {
    args.worker = k;
    args.buffer = buffers[k];
    args.give_up = &workspace.give_ups[k];
    args.give_up_claim = workspace.workers[k].give_up_claim.data();
    CUDA_CHECK(cudaSetDevice(workspace.workers[k].device));
    launch(args, workspace.workers[k].stream);
  }
}

// ---- Task 5 -------------------------------------------------------------------------------------

// Task 5: NCCL's LL protocol in a one-shot. Every word pushed carries its float and the call
// number together, so a reader that sees the number sees the float: no fence, no flag of its own,
// one crossing of the link per line. Each thread pushes its lines to every peer (one 16-byte store
// per peer), then waits for the same lines from every peer in its own memory and sums them. Two
// halves of inbox by call parity make a "finished reading" message unnecessary (the header says
// why), and the call number lives on the GPU as in task 4, so a graph replay counts its calls.
namespace {

constexpr int kLlThreads = 256;  // per block; a line per thread

using SystemWord = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

// Line i of `count` floats at `data` (an odd count's last line: the float, then 0.0f).
__device__ float2 load_line(const float* data, std::size_t count, std::size_t i) {
  if (2 * i + 1 < count) return reinterpret_cast<const float2*>(data)[i];  // 8-byte aligned: data is 16
  return make_float2(data[2 * i], 0.0f);
}

__device__ void store_line(float* data, std::size_t count, std::size_t i, float2 value) {
  if (2 * i + 1 < count)
    reinterpret_cast<float2*>(data)[i] = value;
  else
    data[2 * i] = value.x;  // the padding word is never written
}

// What a thread's wait for one line ended with.
enum class LineWait { arrived, gave_up, stopped };

// Waits until both words of `line` (in this worker's own memory) carry `call`; their floats in
// `value`. Each word is read whole (a relaxed load at system scope: never kept in a register or
// the L1, never torn), and a line whose words disagree is half arrived. Gives up after
// `patience_ns`; stops when another thread of the block gave up (`block_gave_up`).
__device__ LineWait wait_for_line(LlLine* line, unsigned long long call, long long patience_ns,
                                  const volatile int& block_gave_up, float2& value) {
  SystemWord first(line->word[0]), second(line->word[1]);
  unsigned long long a = first.load(cuda::memory_order_relaxed), b = second.load(cuda::memory_order_relaxed);
  if (!ll_word_of_call(a, call) || !ll_word_of_call(b, call)) {
    const auto start = cuda::std::chrono::system_clock::now();
    for (;;) {
      a = first.load(cuda::memory_order_relaxed);
      b = second.load(cuda::memory_order_relaxed);
      if (ll_word_of_call(a, call) && ll_word_of_call(b, call)) break;
      if (block_gave_up) return LineWait::stopped;
      const auto waited = cuda::std::chrono::system_clock::now() - start;
      if (waited > cuda::std::chrono::nanoseconds(patience_ns)) return LineWait::gave_up;
      if (waited > cuda::std::chrono::microseconds(20)) __nanosleep(200);
    }
  }
  value = make_float2(__uint_as_float(static_cast<unsigned int>(a)), __uint_as_float(static_cast<unsigned int>(b)));
  return LineWait::arrived;
}

__device__ float2 plus2(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}

__global__ void __launch_bounds__(kLlThreads) ll_one_shot_kernel(const LlOneShotArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched early (programmatic dependent launch): this grid may be resident before the kernel
  // ahead of it on the stream has ended. Nothing is read or pushed before that one is done.
  cudaGridDependencySynchronize();
#endif
  const int k = a.worker;
  const unsigned long long call = a.calls->calls + 1;  // this stream's previous kernel moved it, and ended
  const std::size_t lines = ll_lines(a.count);
  const std::size_t half = (call % 2) * static_cast<std::size_t>(a.workers) * a.lines;  // this call's half
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  __shared__ volatile int gave_up;  // set by a thread that gave up; the others stop waiting
  if (threadIdx.x == 0) gave_up = 0;
  __syncthreads();
  // 1. Push: each line to every peer, one 16-byte store each, into slot k of this call's half.
  for (std::size_t i = first; i < lines; i += stride) {
    const float2 x = load_line(a.buffer, a.count, i);
    LlLine line;
    line.word[0] = ll_word(__float_as_uint(x.x), call);
    line.word[1] = ll_word(__float_as_uint(x.y), call);
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j)
      if (j < a.workers && j != k) a.inbox[j][half + static_cast<std::size_t>(k) * a.lines + i] = line;
  }
  // 2. Wait for every peer's line in my own inbox, then the sum in worker order from worker 0's.
  LlLine* mine = nullptr;  // a.inbox[k] + half, without indexing the parameter array by a run-time k
#pragma unroll
  for (int j = 0; j < kMaxWorkers; ++j)
    if (j == k) mine = a.inbox[j] + half;
  for (std::size_t i = first; i < lines && !gave_up; i += stride) {
    float2 x[kMaxWorkers];
    bool complete = true;
#pragma unroll
    for (int j = 0; j < kMaxWorkers; ++j) {
      if (j >= a.workers || !complete) continue;
      if (j == k) {
        x[j] = load_line(a.buffer, a.count, i);
        continue;
      }
      const LineWait got =
          wait_for_line(mine + static_cast<std::size_t>(j) * a.lines + i, call, a.patience_ns, gave_up, x[j]);
      if (got != LineWait::arrived) {
        complete = false;
        if (got == LineWait::gave_up) {
          gave_up = 1;
          report_give_up(a.give_up, a.give_up_claim, call, j, static_cast<int>(blockIdx.x), 0);
        }
      }
    }
    if (!complete) break;
    float2 sum = x[0];
#pragma unroll
    for (int j = 1; j < kMaxWorkers; ++j)
      if (j < a.workers) sum = plus2(sum, x[j]);
    store_line(a.buffer, a.count, i, sum);
  }
  __syncthreads();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();  // every wait of this block is over
#endif
  if (gave_up) return;  // the call is broken: `calls` must not move
  // The last block of this worker to finish moves the count of calls (every block has read it).
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned int, cuda::thread_scope_device> done(a.calls->blocks_done);
    if (done.fetch_add(1, cuda::memory_order_acq_rel) == gridDim.x - 1) {
      done.store(0, cuda::memory_order_relaxed);
      a.calls->calls = call;
    }
  }
}

// The LL kernel's blocks resident at once on `device`, asked once per device.
int ll_resident_blocks(int device) {
  static std::array<std::atomic<int>, 64> known{};  // 0: not asked yet
  const bool cached = device >= 0 && device < static_cast<int>(known.size());
  if (cached && known[device].load() > 0) return known[device].load();
  const course::DeviceGuard on_device(device);
  int sms = 0, per_sm = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ll_one_shot_kernel, kLlThreads, 0));
  const int resident = std::max(1, sms * per_sm);
  if (cached) known[device].store(resident);
  return resident;
}

}  // namespace

int ll_one_shot_blocks(const AllReduceWorkspace& workspace, std::size_t count) {
  // Task 5: one block while its threads cover every line; then a line per thread, all resident.
  const std::size_t needed = std::max<std::size_t>(1, (ll_lines(count) + kLlThreads - 1) / kLlThreads);
  return blocks_all_resident(workspace, needed, ll_resident_blocks);
}

void enqueue_ll_one_shot(const LlOneShotArgs& args, cudaStream_t stream) {
  // Task 5: one launch, allowed to start before the kernel ahead of it ends (as task 4's).
  launch_early(ll_one_shot_kernel, args, args.blocks, kLlThreads, stream);
}

void ll_one_shot_all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count,
                            const LlOneShotLaunch& launch) {
  // Task 5: the checks, then one launch per worker with its device current, and nothing else.
  check_buffers(workspace, buffers, count, "ll_one_shot_all_reduce");
  if (count > workspace.ll_max_count)
    throw std::invalid_argument("ll_one_shot_all_reduce: " + std::to_string(count) + " floats, the inbox holds " +
                                std::to_string(workspace.ll_max_count));
  if (const std::string why = gave_up(workspace); !why.empty())
    throw std::runtime_error(
        "ll_one_shot_all_reduce: an earlier call gave up, and the workers' counts no longer "
        "agree (make a new workspace): " +
        why);
  const int w = workspace.size();
  if (w == 1 || count == 0) return;
  const course::DeviceGuard keep_callers_device(workspace.workers[0].device);
  LlOneShotArgs args;
  args.workers = w;
  args.count = count;
  args.blocks = ll_one_shot_blocks(workspace, count);
  args.patience_ns = workspace.patience.count();
  args.lines = ll_lines(workspace.ll_max_count);
  for (int j = 0; j < w; ++j) args.inbox[j] = workspace.workers[j].ll_inbox.data();
  for (int k = 0; k < w; ++k) {
    args.worker = k;
    args.buffer = buffers[k];
    args.give_up = &workspace.give_ups[k];
    args.give_up_claim = workspace.workers[k].give_up_claim.data();
    args.calls = workspace.workers[k].ll_calls.data();
    CUDA_CHECK(cudaSetDevice(workspace.workers[k].device));
    launch(args, workspace.workers[k].stream);
  }
}

// ---- Task 6 -------------------------------------------------------------------------------------

Algorithm choose_algorithm(const AllReduceWorkspace& workspace, std::size_t count) {
  // Task 6: the ring from the crossover (or where no scratch holds it); below it, the LL one-shot
  // below its limit (where its inbox holds the count), then the one-kernel below its own.
  if (count >= workspace.crossover_count || count > workspace.one_shot_max_count) return Algorithm::ring;
  if (count < workspace.ll_one_shot_below && count <= workspace.ll_max_count) return Algorithm::ll_one_shot;
  return count < workspace.one_kernel_below ? Algorithm::one_kernel : Algorithm::one_shot;
}

void all_reduce(AllReduceWorkspace& workspace, std::span<float* const> buffers, std::size_t count) {
  // Task 6: run what choose_algorithm picks.
  switch (choose_algorithm(workspace, count)) {
    case Algorithm::one_shot:
      one_shot_all_reduce(workspace, buffers, count);
      break;
    case Algorithm::one_kernel:
      one_kernel_all_reduce(workspace, buffers, count);
      break;
    case Algorithm::ring:
      ring_all_reduce(workspace, buffers, count);
      break;
    case Algorithm::ll_one_shot:
      ll_one_shot_all_reduce(workspace, buffers, count);
      break;
  }
}

namespace {

// The smallest rows[i].count from which `holds` is true for every row to the end; `never` when it
// is false for the last row. Walks back from the largest count.
template <class Holds>
std::size_t from_here_on(const std::vector<AlgorithmTiming>& rows, std::size_t never, Holds holds) {
  std::size_t from = never;
  for (std::size_t i = rows.size(); i-- > 0;) {
    if (!holds(rows[i])) break;
    from = rows[i].count;
  }
  return from;
}

}  // namespace

// Task 6: walk back from the largest count while the ring beats every other algorithm measured.
std::size_t crossover_from(const std::vector<AlgorithmTiming>& rows) {
  if (rows.empty()) throw std::invalid_argument("crossover_from: no rows");
  return from_here_on(rows, kRingNeverWins, [](const AlgorithmTiming& r) {
    return r.ring_ms < r.one_shot_ms && (r.one_kernel_ms <= 0 || r.ring_ms < r.one_kernel_ms) &&
           (r.ll_one_shot_ms <= 0 || r.ring_ms < r.ll_one_shot_ms);
  });
}

std::size_t one_kernel_below_from(const std::vector<AlgorithmTiming>& rows) {
  // Task 6: walk back from the largest count while the one-kernel is not faster than the one-shot.
  if (rows.empty()) throw std::invalid_argument("one_kernel_below_from: no rows");
  return from_here_on(rows, kNeverFromHere, [](const AlgorithmTiming& r) {
    return r.one_kernel_ms <= 0 || r.one_kernel_ms >= r.one_shot_ms;
  });
}

std::size_t ll_one_shot_below_from(const std::vector<AlgorithmTiming>& rows) {
  // Task 6: the same walk: the LL one-shot not faster than the one-shot or the one-kernel.
  if (rows.empty()) throw std::invalid_argument("ll_one_shot_below_from: no rows");
  return from_here_on(rows, kNeverFromHere, [](const AlgorithmTiming& r) {
    return r.ll_one_shot_ms <= 0 || r.ll_one_shot_ms >= r.one_shot_ms ||
           (r.one_kernel_ms > 0 && r.ll_one_shot_ms >= r.one_kernel_ms);
  });
}

// Task 6: the four algorithms at every count (the LL one-shot where its inbox holds it), calls back
// to back and one wait, as nccl-tests times.
std::vector<AlgorithmTiming> measure_crossover(AllReduceWorkspace& workspace, std::span<float* const> buffers,
                                               std::span<const std::size_t> counts, int warmup, int repeats) {
  if (counts.empty()) throw std::invalid_argument("measure_crossover: no counts");
  if (repeats < 1 || warmup < 0) throw std::invalid_argument("measure_crossover: repeats >= 1 and warmup >= 0");
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] == 0 || counts[i] > workspace.one_shot_max_count || (i > 0 && counts[i] <= counts[i - 1]))
      throw std::invalid_argument("measure_crossover: counts must be strictly ascending, in [1, one_shot_max_count]");
  check_buffers(workspace, buffers, counts.back(), "measure_crossover");
  const auto ms_per_call = [&](const std::function<void()>& call) {
    return 1e3 * course::seconds_per_call(
                     call, [&] { synchronize(workspace); }, warmup, repeats);
  };
  // Each algorithm's best (fewest ms) of the rounds; 0 is "not timed yet".
  const auto keep_best = [](double& best, double ms) { best = best > 0 ? std::min(best, ms) : ms; };
  std::vector<AlgorithmTiming> rows;
  for (const std::size_t count : counts) {
    AlgorithmTiming row;
    row.count = count;
    for (int round = 0; round < kCrossoverRounds; ++round) {  // in turns: a slow moment hits all four alike
      keep_best(row.one_shot_ms, ms_per_call([&] { one_shot_all_reduce(workspace, buffers, count); }));
      keep_best(row.ring_ms, ms_per_call([&] { ring_all_reduce(workspace, buffers, count); }));
      keep_best(row.one_kernel_ms, ms_per_call([&] { one_kernel_all_reduce(workspace, buffers, count); }));
      if (count <= workspace.ll_max_count)
        keep_best(row.ll_one_shot_ms, ms_per_call([&] { ll_one_shot_all_reduce(workspace, buffers, count); }));
    }
    rows.push_back(row);
  }
  workspace.crossover_count = crossover_from(rows);
  workspace.one_kernel_below = one_kernel_below_from(rows);
  workspace.ll_one_shot_below = ll_one_shot_below_from(rows);
  return rows;
}

}  // namespace lesson07
