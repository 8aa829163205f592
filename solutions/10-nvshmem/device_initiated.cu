// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10: communication started by the GPU. The symmetric heap and the two ways to reach a peer's
// copy (a pointer, or a put); lesson 08's Jacobi as one kernel per GPU whose first and last blocks
// put the boundary rows into the neighbours' halos with a signal that the next sweep waits for; an all-reduce
// of one kernel per GPU that pushes every float to every PE in a word with its call's number (LL). No host
// orders anything.
// Fill in each TODO(task N); README.md in this folder explains each task, and
//     meson test -C build --suite 10-nvshmem --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "device_initiated.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cuda/atomic>
#include <cuda/std/chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"
#include "common/partition.h"

namespace lesson10 {
namespace {

// Given: helpers for tasks 2 and 3 (use them or write your own).

// An NVSHMEM call that returns a status (0: success) made into the course's kind of error.
[[maybe_unused]] void nvshmem_check(int status, const char* call) {
  if (status != 0) throw std::runtime_error(std::string(call) + " failed with status " + std::to_string(status));
}

// Waits until the signal word *signal (of this PE) is >= value; false when `patience_ns` passed first.
// The data a put-with-signal delivers arrives before its signal. Seeing the signal is a read: the fence
// after it (at system scope: the signal came from another GPU) orders this thread's later reads, and the
// barriers after it (__syncthreads, a grid's sync) those of the threads that read the data, after the
// data the signal covers (nvshmem_signal_wait_until, which never gives up, ends with a GPU-scope fence).
[[maybe_unused]] __device__ bool wait_for_signal(std::uint64_t* signal, std::uint64_t value, long long patience_ns) {
  if (!nvshmem_uint64_test(signal, NVSHMEM_CMP_GE, value)) {
    const auto start = cuda::std::chrono::system_clock::now();  // the GPU's global timer
    while (!nvshmem_uint64_test(signal, NVSHMEM_CMP_GE, value)) {
      const auto waited = cuda::std::chrono::system_clock::now() - start;
      if (waited > cuda::std::chrono::nanoseconds(patience_ns)) return false;
      if (waited > cuda::std::chrono::microseconds(20)) __nanosleep(200);
    }
  }
  __threadfence_system();
  return true;
}

// The report of a block that gave up, written by exactly one block: the first to claim it.
[[maybe_unused]] __device__ void report_give_up(GiveUp* report, unsigned int* claim, unsigned long long call, int peer,
                                                int block) {
  unsigned int free = 0;
  if (!cuda::atomic_ref<unsigned int, cuda::thread_scope_device>(*claim).compare_exchange_strong(
          free, 1u, cuda::memory_order_relaxed))
    return;  // another block's report stands
  volatile GiveUp* live = report;
  live->peer = peer;
  live->block = block;
  __threadfence_system();  // the fields before the call number that says they are there
  live->call = call;
}

// True once a block of this owner has claimed the report: the owner is broken, its kernels stop.
[[maybe_unused]] __device__ bool gave_up_already(unsigned int* claim) {
  return cuda::atomic_ref<unsigned int, cuda::thread_scope_device>(*claim).load(cuda::memory_order_relaxed) != 0;
}

// Throws std::runtime_error with the report when an earlier kernel of this owner gave up.
[[maybe_unused]] void throw_if_gave_up(const GiveUp* report, const char* call) {
  if (const std::string text = gave_up(*report); !text.empty())
    throw std::runtime_error(std::string(call) + ": an earlier kernel gave up, make a new one: " + text);
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

SymmetricFloats allocate_symmetric(const Session& session, std::size_t count) {
  if (count == 0) throw std::invalid_argument("allocate_symmetric: count is 0");
  const course::DeviceGuard on_device(session.device);
  void* data = nvshmem_malloc(count * sizeof(float));
  if (data == nullptr)
    throw std::runtime_error("allocate_symmetric: nvshmem_malloc of " + std::to_string(count * sizeof(float)) +
                             " bytes returned no memory (NVSHMEM_SYMMETRIC_SIZE too small?)");
  return {static_cast<float*>(data), count};
}

void free_symmetric(const Session& session, SymmetricFloats& buffer) {
  if (buffer.data == nullptr) return;
  const course::DeviceGuard on_device(session.device);
  nvshmem_free(buffer.data);
  buffer = SymmetricFloats{};
}

PeerPath peer_path(const Session& session, const SymmetricFloats& buffer, int pe) {
  if (pe < 0 || pe >= session.pes)
    throw std::invalid_argument("peer_path: PE " + std::to_string(pe) + " is not in [0, " +
                                std::to_string(session.pes) + ")");
  if (buffer.data == nullptr) throw std::invalid_argument("peer_path: the buffer is empty");
  return nvshmem_ptr(buffer.data, pe) != nullptr ? PeerPath::load_store : PeerPath::put;
}

namespace {

// Plain stores into a peer's copy, through the address nvshmem_ptr gave.
__global__ void store_to_peer(const float* source, float* peer_copy, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    peer_copy[i] = source[i];
}

// NVSHMEM's put: block b puts its slice; any PE, whatever connects the two.
__global__ void put_to_peer(const float* source, float* destination, std::size_t count, int pe) {
  const course::Range slice = {count * blockIdx.x / gridDim.x, count * (blockIdx.x + 1) / gridDim.x};
  if (slice.end > slice.begin)
    nvshmemx_putmem_block(destination + slice.begin, source + slice.begin, (slice.end - slice.begin) * sizeof(float),
                          pe);
}

}  // namespace

void enqueue_put(const Session& session, const float* source, const SymmetricFloats& destination, int pe,
                 std::size_t count, PeerPath path, cudaStream_t stream) {
  if (pe < 0 || pe >= session.pes)
    throw std::invalid_argument("enqueue_put: PE " + std::to_string(pe) + " is not in [0, " +
                                std::to_string(session.pes) + ")");
  if (count > destination.count)
    throw std::invalid_argument("enqueue_put: count " + std::to_string(count) + " is more than the destination's " +
                                std::to_string(destination.count));
  if (count > 0 && source == nullptr) throw std::invalid_argument("enqueue_put: null source");
  float* peer_copy = destination.data == nullptr ? nullptr : static_cast<float*>(nvshmem_ptr(destination.data, pe));
  if (path == PeerPath::load_store && peer_copy == nullptr)
    throw std::invalid_argument("enqueue_put: PE " + std::to_string(pe) +
                                "'s copy has no address here (nvshmem_ptr gave nullptr): use PeerPath::put");
  if (count == 0) return;
  const course::DeviceGuard on_device(session.device);
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((count + 1023) / 1024, 64));
  if (path == PeerPath::load_store)
    store_to_peer<<<blocks, 256, 0, stream>>>(source, peer_copy, count);
  else
    put_to_peer<<<blocks, 256, 0, stream>>>(source, destination.data, count, pe);
  CUDA_CHECK(cudaGetLastError());
}

// ---- Task 2 -------------------------------------------------------------------------------------

JacobiBlock decompose(const Session& session, std::size_t ny, std::size_t nx, std::span<const float> initial) {
  if (ny < 3 || nx < 3) throw std::invalid_argument("decompose: the grid needs at least 3 x 3 points");
  if (initial.size() != ny * nx) throw std::invalid_argument("decompose: initial does not hold ny * nx floats");
  if (ny - 2 < static_cast<std::size_t>(session.pes))
    throw std::invalid_argument("decompose: fewer interior rows (" + std::to_string(ny - 2) + ") than PEs (" +
                                std::to_string(session.pes) + ")");
  JacobiBlock block;
  block.ny = ny;
  block.nx = nx;
  block.rows = block_rows(ny, session.pes, session.pe);
  block.max_rows = block_rows(ny, session.pes, 0).size();
  const std::size_t floats = (block.max_rows + 2) * nx;
  block.current = allocate_symmetric(session, floats);
  block.next = allocate_symmetric(session, floats);
  const course::DeviceGuard on_device(session.device);
  block.signals = static_cast<std::uint64_t*>(nvshmem_calloc(kJacobiSignals, sizeof(std::uint64_t)));
  if (block.signals == nullptr) throw std::runtime_error("decompose: nvshmem_calloc of the signals failed");
  CUDA_CHECK(cudaStreamCreateWithFlags(&block.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMallocHost(&block.give_up, sizeof(GiveUp)));
  *block.give_up = GiveUp{};
  CUDA_CHECK(cudaMalloc(&block.give_up_claim, sizeof(unsigned int)));
  CUDA_CHECK(cudaMemsetAsync(block.give_up_claim, 0, sizeof(unsigned int), block.stream));
  const std::size_t bytes = (block.rows.size() + 2) * nx * sizeof(float);
  const float* first = initial.data() + (block.rows.begin - 1) * nx;
  for (SymmetricFloats* buffer : {&block.current, &block.next})
    CUDA_CHECK(cudaMemcpyAsync(buffer->data, first, bytes, cudaMemcpyHostToDevice, block.stream));
  CUDA_CHECK(cudaStreamSynchronize(block.stream));
  nvshmem_barrier_all();  // every PE's signals are zero before any PE's kernel can set one
  return block;
}

namespace {

struct JacobiArgs {
  int pe, pes;
  std::size_t nx, rows, rows_above;  // rows_above: the PE above's rows (its halo below is row rows_above + 1)
  float* current;
  float* next;
  std::uint64_t* signals;
  std::uint64_t first_sweep, last_sweep;  // s in [first_sweep, last_sweep]
  long long patience_ns;
  GiveUp* give_up;
  unsigned int* give_up_claim;
  unsigned int* counters;  // device memory, zeroed before the launch: 2 x kCounters, sweep s uses half s % 2
};

// A sweep's counters: the tiles handed out, and the tiles of its first and of its last band that are done.
constexpr int kTaken = 0, kFirstBandDone = 1, kLastBandDone = 2, kCounters = 3;

// Thread 0 of block `block`: waits until the halo above (side 0) or below (side 1) of `current` holds
// the neighbour's row of sweep s. False when it gave up (and claimed the report, when it was the first).
__device__ bool wait_for_halo(const JacobiArgs& a, std::uint64_t s, int side, int block) {
  if (wait_for_signal(&a.signals[2 * (s % 2) + side], s, a.patience_ns)) return true;
  report_give_up(a.give_up, a.give_up_claim, s, side == 0 ? a.pe - 1 : a.pe + 1, block);
  return false;
}

// Lesson 08's tiles: kTileRows rows and blockDim.x columns, columns from 0, so that a warp's loads cover
// whole 128-byte lines. A thread issues every load of its column first (the row above the tile to the
// row below it, then left and right of each row, from L1), then adds, then stores: no load waits behind
// a store, and no value is carried from one tile to the next (the 8 rows' loads held in 48 registers
// with nothing spilled; the grid's boundary columns are kept, and their threads sit out).
constexpr int kTileRows = 8;

// kRows rows of one column: `column` points at the column in the row above them, `out` at the first
// row's point in `next`.
template <int kRows>
__device__ void sweep_column(const float* __restrict__ column, float* __restrict__ out, std::size_t nx) {
  float c[kRows + 2], swept[kRows];
#pragma unroll
  for (int r = 0; r < kRows + 2; ++r) c[r] = column[r * nx];
#pragma unroll
  for (int r = 1; r <= kRows; ++r)
    swept[r - 1] = 0.25f * ((c[r - 1] + c[r + 1]) + (column[r * nx - 1] + column[r * nx + 1]));
#pragma unroll
  for (int r = 0; r < kRows; ++r) out[r * nx] = swept[r];
}

// Column x of the tile whose first row is local row `first` (rows runs to local row `rows`).
__device__ void sweep_tile(const float* __restrict__ current, float* __restrict__ next, std::size_t nx,
                           std::size_t rows, std::size_t x, std::size_t first) {
  if (x == 0 || x + 1 >= nx) return;  // a boundary column, or past the grid's edge
  const float* column = current + (first - 1) * nx + x;
  float* out = next + first * nx + x;
  if (rows + 1 - first >= kTileRows) {
    sweep_column<kTileRows>(column, out, nx);
  } else {  // the last band's rows, one at a time
    for (std::size_t r = 0; r < rows + 1 - first; ++r) sweep_column<1>(column + r * nx, out + r * nx, nx);
  }
}

// The band of rows that the k-th band handed out is: the first, then the last (the rows the neighbours
// wait for), then the others from the top.
__device__ unsigned int band_of(unsigned int k, unsigned int bands) {
  return k == 0 ? 0 : (k == 1 ? bands - 1 : k - 1);
}

// Sweep s of the PE's rows [1, rows] (local rows; 0 and rows + 1 are the halos) from `current` into
// `next`, by the whole grid of a persistent kernel. The tiles are handed out as the hardware hands out the
// blocks of a launch: in order, to whichever block is free (an atomic counter, the next tile's number taken
// while the block sweeps this one), so the tiles at work at any moment are neighbours whose shared rows
// are still in L2 (handed out statically, block b: tiles b, b + gridDim.x, ..., the blocks drift apart
// within a sweep and rows come from memory again: on one H200, 10240 x 20480 points, 621 us a sweep
// against 487). The two bands that hold the boundary rows go first: the block that finishes the last tile
// of one puts its row to the neighbour at once, and the rest of the sweep hides the trip. Only the tiles
// of those bands read a halo, so only they wait for the neighbours' rows of sweep s - 1. A block that
// gives up waiting claims the report (when it is the first) and stops sweeping; the kernel reads the claim
// after the grid.sync() that ends the sweep.
__device__ void sweep(const JacobiArgs& a, std::uint64_t s, const float* __restrict__ current, float* __restrict__ next,
                      unsigned int* counters) {
  __shared__ unsigned int tile;
  __shared__ int flags;  // 1: this block finished the first band, 2: the last band; 4: it gave up waiting
  const std::size_t nx = a.nx, rows = a.rows;
  const unsigned int across = static_cast<unsigned int>((nx + blockDim.x - 1) / blockDim.x);  // tiles a band
  const unsigned int bands = static_cast<unsigned int>((rows + kTileRows - 1) / kTileRows);
  const unsigned int tiles = across * bands;
  const bool above = a.pe > 0, below = a.pe < a.pes - 1;  // the neighbours
  unsigned int following = 0;
  if (threadIdx.x == 0) following = atomicAdd(&counters[kTaken], 1u);
  for (;;) {
    __syncthreads();  // every thread is done with the last tile's number and flags
    if (threadIdx.x == 0) {
      tile = following;
      following = atomicAdd(&counters[kTaken], 1u);  // on its way while this tile is swept
      flags = 0;
      if (tile < tiles && s > 1) {  // 1. the halos this tile reads hold the neighbours' rows of sweep s - 1
        const unsigned int band = band_of(tile / across, bands);
        if ((band == 0 && above && !wait_for_halo(a, s - 1, 0, static_cast<int>(blockIdx.x))) ||
            (band == bands - 1 && below && !wait_for_halo(a, s - 1, 1, static_cast<int>(blockIdx.x))))
          flags = 4;
      }
    }
    __syncthreads();
    const unsigned int t = tile;
    if (t >= tiles || flags == 4) return;
    // 2. sweep the tile
    const unsigned int band = band_of(t / across, bands);
    sweep_tile(current, next, nx, rows, std::size_t{t % across} * blockDim.x + threadIdx.x,
               1 + std::size_t{band} * kTileRows);
    // 3. the block that finishes a boundary band puts its row into the neighbour's halo, the signal behind it
    const bool first_band = band == 0 && above, last_band = band == bands - 1 && below;
    if (!first_band && !last_band) continue;
    __syncthreads();  // the block's stores of this tile are issued
    if (threadIdx.x == 0) {
      __threadfence();  // and visible before the count says the tile is done
      flags = (first_band && atomicAdd(&counters[kFirstBandDone], 1u) + 1 == across ? 1 : 0) |
              (last_band && atomicAdd(&counters[kLastBandDone], 1u) + 1 == across ? 2 : 0);
      __threadfence();  // the other blocks' stores of the band, which their counts covered, before the put reads
    }
    __syncthreads();
    if (flags & 1)
      nvshmemx_putmem_signal_nbi_block(next + (a.rows_above + 1) * nx, next + 1 * nx, nx * sizeof(float),
                                       &a.signals[2 * (s % 2) + 1], s, NVSHMEM_SIGNAL_SET, a.pe - 1);
    if (flags & 2)
      nvshmemx_putmem_signal_nbi_block(next, next + a.rows * nx, nx * sizeof(float), &a.signals[2 * (s % 2) + 0], s,
                                       NVSHMEM_SIGNAL_SET, a.pe + 1);
    // the puts have read their rows before a later sweep writes this buffer again
    if (flags != 0 && threadIdx.x == 0) nvshmem_quiet();
  }
}

// Five blocks of 256 threads an SM (48 registers a thread): on one H200 487 us a sweep against 568 us at
// the four blocks the compiler's own choice of registers leaves room for.
constexpr int kJacobiThreads = 256, kJacobiBlocksPerSm = 5;

__global__ void __launch_bounds__(kJacobiThreads, kJacobiBlocksPerSm) jacobi_kernel(JacobiArgs a) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  __shared__ bool stop;
  float* current = a.current;
  float* next = a.next;
  for (std::uint64_t s = a.first_sweep; s <= a.last_sweep; ++s) {
    // the next sweep's counters, last used by the sweep before this one (ended by its grid.sync())
    if (blockIdx.x == 0 && threadIdx.x < kCounters) a.counters[kCounters * ((s + 1) % 2) + threadIdx.x] = 0;
    sweep(a, s, current, next, a.counters + kCounters * (s % 2));
    // 4. the whole grid has swept before any block reads `next`; a PE that gave up stops here, every block
    grid.sync();
    if (threadIdx.x == 0) stop = gave_up_already(a.give_up_claim);
    __syncthreads();
    if (stop) return;
    float* swept = next;
    next = current;
    current = swept;
  }
  // `current` holds the neighbours' rows of the last sweep when the call returns
  if (blockIdx.x == 0 && threadIdx.x == 0 && a.last_sweep >= a.first_sweep &&
      (a.pe == 0 || wait_for_halo(a, a.last_sweep, 0, 0)) && a.pe < a.pes - 1)
    (void)wait_for_halo(a, a.last_sweep, 1, 0);
}

}  // namespace

void run_device_initiated(const Session& session, JacobiBlock& block, int iterations) {
  if (iterations < 0) throw std::invalid_argument("run_device_initiated: iterations < 0");
  throw_if_gave_up(block.give_up, "run_device_initiated");
  if (iterations == 0) return;
  const course::DeviceGuard on_device(session.device);
  unsigned int* counters = nullptr;  // the sweeps' counters (JacobiArgs), this call's own, zeroed
  CUDA_CHECK(cudaMallocAsync(&counters, 2 * kCounters * sizeof(unsigned int), block.stream));
  CUDA_CHECK(cudaMemsetAsync(counters, 0, 2 * kCounters * sizeof(unsigned int), block.stream));
  JacobiArgs args{session.pe,
                  session.pes,
                  block.nx,
                  block.rows.size(),
                  session.pe > 0 ? block_rows(block.ny, session.pes, session.pe - 1).size() : 0,
                  block.current.data,
                  block.next.data,
                  block.signals,
                  block.sweeps + 1,
                  block.sweeps + static_cast<std::uint64_t>(iterations),
                  block.patience_ns,
                  block.give_up,
                  block.give_up_claim,
                  counters};
  void* kernel_args[] = {&args};
  int most = 0;
  nvshmem_check(nvshmemx_collective_launch_query_gridsize(reinterpret_cast<const void*>(jacobi_kernel),
                                                          dim3(kJacobiThreads), kernel_args, 0, &most),
                "nvshmemx_collective_launch_query_gridsize");
  const std::size_t tiles =
      (block.nx + kJacobiThreads - 1) / kJacobiThreads * ((block.rows.size() + kTileRows - 1) / kTileRows);
  const int blocks = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(most, tiles)));  // none idle
  nvshmem_check(nvshmemx_collective_launch(reinterpret_cast<const void*>(jacobi_kernel), dim3(blocks),
                                           dim3(kJacobiThreads), kernel_args, 0, block.stream),
                "nvshmemx_collective_launch");
  CUDA_CHECK(cudaFreeAsync(counters, block.stream));
  CUDA_CHECK(cudaStreamSynchronize(block.stream));
  block.sweeps += static_cast<std::uint64_t>(iterations);
  if (iterations % 2 == 1) std::swap(block.current, block.next);
  throw_if_gave_up(block.give_up, "run_device_initiated");
}

// ---- Task 3 -------------------------------------------------------------------------------------

namespace {

constexpr int kAllReduceThreads = 512;

// Waits until the word at `word` (of this PE's inbox) carries call c, and gives it in `seen`; false when
// `patience_ns` passed first or another block of this owner gave up. Each look is one fresh 8-byte load
// (volatile): the float and its call number come together, so no fence is needed after it.
__device__ bool wait_for_word(const std::uint64_t* word, std::uint64_t c, long long patience_ns,
                              const unsigned int* claim, std::uint64_t& seen) {
  const volatile std::uint64_t* live = word;
  if (ll_word_of_call(seen = *live, c)) return true;
  const auto start = cuda::std::chrono::system_clock::now();  // the GPU's global timer
  while (!ll_word_of_call(seen = *live, c)) {
    const auto waited = cuda::std::chrono::system_clock::now() - start;
    if (waited > cuda::std::chrono::nanoseconds(patience_ns)) return false;
    if (waited > cuda::std::chrono::microseconds(20)) {
      if (*static_cast<const volatile unsigned int*>(claim) != 0) return false;  // the owner is broken
      __nanosleep(200);
    }
  }
  return true;
}

__global__ void __launch_bounds__(kAllReduceThreads) all_reduce_kernel(AllReduceArgs a) {
  const std::uint64_t c = a.call;
  const std::size_t lo = a.count * blockIdx.x / gridDim.x, hi = a.count * (blockIdx.x + 1) / gridDim.x;
  __shared__ bool stop;
  // an earlier call's kernel gave up: the owner is broken, this one returns at once
  if (threadIdx.x == 0) stop = gave_up_already(a.give_up_claim);
  __syncthreads();
  if (stop) return;
  // 1. push: each float of my slice with the call's number, one word, into slot pe of every PE's half c % 2
  for (std::size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    const std::uint64_t word = ll_word(__float_as_uint(a.input[i]), c);
    std::uint64_t* slot = a.inbox + inbox_word(c, a.pes, a.pe, a.max_count, i);
    for (int p = 0; p < a.pes; ++p)
      if (p != a.silent_to) nvshmem_uint64_p(slot, word, p);
  }
  if (a.delay_sum_ns > 0) {
    if (threadIdx.x == 0) {
      const auto start = cuda::std::chrono::system_clock::now();
      while (cuda::std::chrono::system_clock::now() - start < cuda::std::chrono::nanoseconds(a.delay_sum_ns))
        __nanosleep(1000);
    }
    __syncthreads();
  }
  // 2. every PE's word of each of my floats, added in PE order as it comes
  for (std::size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    float sum = 0;
    for (int p = 0; p < a.pes; ++p) {
      std::uint64_t word = 0;
      if (!wait_for_word(a.inbox + inbox_word(c, a.pes, p, a.max_count, i), c, a.patience_ns, a.give_up_claim, word)) {
        report_give_up(a.give_up, a.give_up_claim, c, p, static_cast<int>(blockIdx.x));  // when the first
        return;
      }
      const float value = __uint_as_float(static_cast<std::uint32_t>(word));
      sum = p == 0 ? value : sum + value;
    }
    a.output[i] = sum;
  }
}

}  // namespace

AllReduceWorkspace open_all_reduce(const Session& session, std::size_t max_count) {
  if (max_count == 0) throw std::invalid_argument("open_all_reduce: max_count is 0");
  if (session.pes > kMaxPes)
    throw std::runtime_error("open_all_reduce: " + std::to_string(session.pes) +
                             " PEs, more than kMaxPes = " + std::to_string(kMaxPes));
  AllReduceWorkspace workspace;
  workspace.pe = session.pe;
  workspace.pes = session.pes;
  workspace.device = session.device;
  workspace.max_count = max_count;
  const course::DeviceGuard on_device(session.device);
  workspace.inbox = static_cast<std::uint64_t*>(nvshmem_calloc(2 * session.pes * max_count, sizeof(std::uint64_t)));
  if (workspace.inbox == nullptr)
    throw std::runtime_error("open_all_reduce: the symmetric heap has no room for an inbox of " +
                             std::to_string(2 * session.pes * max_count) + " words");
  CUDA_CHECK(cudaMallocHost(&workspace.give_up, sizeof(GiveUp)));
  *workspace.give_up = GiveUp{};
  CUDA_CHECK(cudaMalloc(&workspace.give_up_claim, sizeof(unsigned int)));
  CUDA_CHECK(cudaMemset(workspace.give_up_claim, 0, sizeof(unsigned int)));
  AllReduceArgs probe;
  void* kernel_args[] = {&probe};
  int most = 0;
  nvshmem_check(nvshmemx_collective_launch_query_gridsize(reinterpret_cast<const void*>(all_reduce_kernel),
                                                          dim3(kAllReduceThreads), kernel_args, 0, &most),
                "nvshmemx_collective_launch_query_gridsize");
  workspace.blocks = std::max(1, std::min(most, kMaxBlocks));
  CUDA_CHECK(cudaDeviceSynchronize());
  nvshmem_barrier_all();  // every PE's inbox is zero before any kernel writes a word into it
  return workspace;
}

void enqueue_all_reduce_kernel(const AllReduceArgs& args, cudaStream_t stream) {
  AllReduceArgs copy = args;
  void* kernel_args[] = {&copy};
  // Every block resident at once, on the caller's stream: a block waits for its partner block on every
  // PE, which may be waiting for it. nvshmemx_collective_launch does the same through a stream of its
  // own, and the two events that join it to this one cost 2.3 us a call on two H200s.
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(all_reduce_kernel), dim3(args.blocks),
                                         dim3(kAllReduceThreads), kernel_args, 0, stream));
}

void device_all_reduce(AllReduceWorkspace& workspace, const float* input, float* output, std::size_t count,
                       cudaStream_t stream, const AllReduceLaunch& launch) {
  if (count > workspace.max_count)
    throw std::invalid_argument("device_all_reduce: count " + std::to_string(count) + " is more than max_count " +
                                std::to_string(workspace.max_count));
  if (count > 0 && (input == nullptr || output == nullptr))
    throw std::invalid_argument("device_all_reduce: null input or output");
  throw_if_gave_up(workspace.give_up, "device_all_reduce");
  if (count == 0) return;
  const course::DeviceGuard on_device(workspace.device);
  AllReduceArgs args;
  args.pe = workspace.pe;
  args.pes = workspace.pes;
  args.input = input;
  args.output = output;
  args.count = count;
  args.max_count = workspace.max_count;
  args.inbox = workspace.inbox;
  args.call = workspace.calls + 1;
  args.blocks = all_reduce_blocks(workspace, count);
  args.patience_ns = workspace.patience_ns;
  args.give_up = workspace.give_up;
  args.give_up_claim = workspace.give_up_claim;
  launch(args, stream);
  workspace.calls += 1;
}

}  // namespace lesson10
