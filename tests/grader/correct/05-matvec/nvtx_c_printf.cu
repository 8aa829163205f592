// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Correct-but-different lesson 05 file (tests/grader/correct/README.md): must earn full marks.
// Idioms: NVTX ranges through its C API (nvtxRangePushA / nvtxRangePop) around each product,
// printf debugging of the cuBLAS handles made, a grid of 2 rows per block with 256 threads.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/managed_memory.h"
#include "common/not_implemented.h"
#include "common/partition.h"
#include "matvec.h"

namespace lesson05 {

// ---- Task 1 -------------------------------------------------------------------------------------

// Task 1: one block of kThreads threads computes kRowsPerBlock rows at a time. Each thread reads
// x once per column and the matching element of every row, so x comes from L2 once for four rows
// of W (which streams from memory exactly once, marked evict-first with __ldcs). Every thread
// ends with one partial sum per row: warp shuffles add up each warp's, shared memory the warps'.
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerBlock = 2;
constexpr std::size_t kMaxBlocks = std::size_t{1} << 20;  // more rows: the blocks loop

__device__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;  // complete in lane 0
}

template <bool kVectorized>
__global__ void __launch_bounds__(kThreads) gemv_kernel(const float* __restrict__ W, const float* __restrict__ x,
                                                        float* __restrict__ y, std::size_t m, std::size_t n) {
  __shared__ float warp_sums[kRowsPerBlock][kWarps];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kRowsPerBlock;
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * kRowsPerBlock; first < m; first += stride) {
    const std::size_t left = m - first;
    const int rows = left < std::size_t{kRowsPerBlock} ? static_cast<int>(left) : kRowsPerBlock;
    float sum[kRowsPerBlock] = {};
    if constexpr (kVectorized) {
      // Rows start on 16-byte boundaries: one float4 load reads four columns.
      const float4* x4 = reinterpret_cast<const float4*>(x);
      for (std::size_t j = threadIdx.x; j < n / 4; j += kThreads) {
        const float4 xv = __ldg(x4 + j);
#pragma unroll
        for (int r = 0; r < kRowsPerBlock; ++r) {
          if (r < rows) {
            const float4 w = __ldcs(reinterpret_cast<const float4*>(W + (first + r) * n) + j);
            sum[r] += w.x * xv.x + w.y * xv.y + w.z * xv.z + w.w * xv.w;
          }
        }
      }
    } else {
      for (std::size_t j = threadIdx.x; j < n; j += kThreads) {
        const float xv = __ldg(x + j);
#pragma unroll
        for (int r = 0; r < kRowsPerBlock; ++r)
          if (r < rows) sum[r] += __ldcs(W + (first + r) * n + j) * xv;
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r) {
      const float s = warp_sum(sum[r]);
      if (lane == 0) warp_sums[r][warp] = s;
    }
    __syncthreads();
    if (warp < rows) {  // warp r adds up the warps' sums of row r
      const float s = warp_sum(lane < kWarps ? warp_sums[warp][lane] : 0.0f);
      if (lane == 0) y[first + warp] = s;
    }
    __syncthreads();  // warp_sums is written again for the next rows
  }
}

bool aligned_16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

void launch_gemv(const float* W, const float* x, float* y, std::size_t m, std::size_t n, cudaStream_t stream) {
  if (m == 0) return;  // nothing to compute, and a grid of 0 blocks is an error
  const std::size_t groups = (m + kRowsPerBlock - 1) / kRowsPerBlock;
  const auto blocks = static_cast<unsigned>(std::min(groups, kMaxBlocks));
  if (n % 4 == 0 && aligned_16(W) && aligned_16(x)) {
    gemv_kernel<true><<<blocks, kThreads, 0, stream>>>(W, x, y, m, n);
  } else {
    gemv_kernel<false><<<blocks, kThreads, 0, stream>>>(W, x, y, m, n);
  }
  CUDA_CHECK_LAUNCH();
}

// ---- Task 2 -------------------------------------------------------------------------------------

DistributedMatrix distribute_rows(std::span<const int> devices, int root, const float* W, std::size_t m,
                                  std::size_t n) {
  // Task 2: worker k gets a balanced block of rows; everything of it is made on devices[k].
  if (devices.empty()) throw std::invalid_argument("distribute_rows: the device list is empty");
  if (W == nullptr && m * n > 0) throw std::invalid_argument("distribute_rows: W is nullptr");
  DistributedMatrix A;
  A.split = Split::rows;
  A.m = m;
  A.n = n;
  A.root = root;
  const int parts = static_cast<int>(devices.size());
  A.workers.reserve(devices.size());
  for (int k = 0; k < parts; ++k) {
    const int device = devices[k];
    const course::Range rows = course::split_range(m, parts, k);
    Worker worker{device,
                  rows,
                  course::Range{0, n},
                  course::DeviceBuffer<float>(device, rows.size() * n),
                  course::DeviceBuffer<float>(device, n),
                  course::DeviceBuffer<float>(device, rows.size()),
                  course::Stream(device)};
    if (worker.W.size() > 0) {
      const course::DeviceGuard on(device);
      CUDA_CHECK(cudaMemcpy(worker.W.data(), W + rows.begin * n, worker.W.bytes(), cudaMemcpyHostToDevice));
    }
    A.workers.push_back(std::move(worker));
  }
  return A;
}

void multiply_rows(DistributedMatrix& A, const float* x, float* y) {
  // Task 2: enqueue everything on every worker first, then wait for each: the devices work at once.
  if (A.split != Split::rows) throw std::invalid_argument("multiply_rows: the matrix is not split by rows");
  if ((x == nullptr && A.n > 0) || (y == nullptr && A.m > 0))
    throw std::invalid_argument("multiply_rows: x or y is nullptr");
  nvtxRangePushA("multiply_rows");
  for (Worker& w : A.workers) {
    const course::DeviceGuard on(w.device);
    if (A.n > 0) CUDA_CHECK(cudaMemcpyPeerAsync(w.x.data(), w.device, x, A.root, w.x.bytes(), w.stream));
    launch_gemv(w.W.data(), w.x.data(), w.y.data(), w.rows.size(), A.n, w.stream);
    if (!w.rows.empty())
      CUDA_CHECK(cudaMemcpyPeerAsync(y + w.rows.begin, A.root, w.y.data(), w.device, w.y.bytes(), w.stream));
  }
  for (const Worker& w : A.workers) w.stream.synchronize();
  nvtxRangePop();
}

// ---- Task 3 -------------------------------------------------------------------------------------

DistributedMatrix distribute_columns(std::span<const int> devices, int root, const float* W, std::size_t m,
                                     std::size_t n) {
  // Task 3: worker k gets a balanced block of columns, all rows; the root gets room for the partials.
  if (devices.empty()) throw std::invalid_argument("distribute_columns: the device list is empty");
  if (W == nullptr && m * n > 0) throw std::invalid_argument("distribute_columns: W is nullptr");
  DistributedMatrix A;
  A.split = Split::columns;
  A.m = m;
  A.n = n;
  A.root = root;
  const int parts = static_cast<int>(devices.size());
  A.workers.reserve(devices.size());
  for (int k = 0; k < parts; ++k) {
    const int device = devices[k];
    const course::Range cols = course::split_range(n, parts, k);
    Worker worker{device,
                  course::Range{0, m},
                  cols,
                  course::DeviceBuffer<float>(device, m * cols.size()),
                  course::DeviceBuffer<float>(device, cols.size()),
                  course::DeviceBuffer<float>(device, m),
                  course::Stream(device)};
    if (worker.W.size() > 0) {
      // m rows of cols.size() floats, taken every n floats out of W: one strided copy.
      const course::DeviceGuard on(device);
      const std::size_t width = cols.size() * sizeof(float);
      CUDA_CHECK(
          cudaMemcpy2D(worker.W.data(), width, W + cols.begin, n * sizeof(float), width, m, cudaMemcpyHostToDevice));
    }
    A.workers.push_back(std::move(worker));
  }
  A.partials = course::DeviceBuffer<float>(root, devices.size() * m);
  A.root_stream.emplace(root);
  return A;
}

// Task 3: the partials arrive side by side in A.partials; one kernel on the root adds them up, in
// the order of the workers.
namespace {

__global__ void sum_partials_kernel(const float* partials, std::size_t parts, std::size_t m, float* y) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m; i += stride) {
    float sum = 0.0f;
    for (std::size_t k = 0; k < parts; ++k) sum += partials[k * m + i];
    y[i] = sum;
  }
}

}  // namespace

void multiply_columns(DistributedMatrix& A, const float* x, float* y) {
  if (A.split != Split::columns || !A.root_stream)
    throw std::invalid_argument("multiply_columns: the matrix is not split by columns");
  if ((x == nullptr && A.n > 0) || (y == nullptr && A.m > 0))
    throw std::invalid_argument("multiply_columns: x or y is nullptr");
  std::vector<course::Event> arrived;  // arrived[k]: worker k's partial is on the root
  arrived.reserve(A.workers.size());
  for (std::size_t k = 0; k < A.workers.size(); ++k) {
    Worker& w = A.workers[k];
    const course::DeviceGuard on(w.device);
    if (!w.cols.empty())
      CUDA_CHECK(cudaMemcpyPeerAsync(w.x.data(), w.device, x + w.cols.begin, A.root, w.x.bytes(), w.stream));
    launch_gemv(w.W.data(), w.x.data(), w.y.data(), A.m, w.cols.size(), w.stream);
    if (A.m > 0)
      CUDA_CHECK(cudaMemcpyPeerAsync(A.partials.data() + k * A.m, A.root, w.y.data(), w.device, w.y.bytes(), w.stream));
    arrived.emplace_back(w.device, cudaEventDisableTiming);
    arrived.back().record(w.stream);
  }
  const course::DeviceGuard on_root(A.root);
  const course::Stream& root_stream = *A.root_stream;
  for (const course::Event& event : arrived) CUDA_CHECK(cudaStreamWaitEvent(root_stream, event, 0));
  if (A.m > 0) {
    constexpr unsigned kSumThreads = 256;
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>((A.m + kSumThreads - 1) / kSumThreads, 4096));
    sum_partials_kernel<<<blocks, kSumThreads, 0, root_stream.get()>>>(A.partials.data(), A.workers.size(), A.m, y);
    CUDA_CHECK_LAUNCH();
  }
  root_stream.synchronize();  // it waited for every worker's last copy, so everything is done
}

// ---- Task 4 -------------------------------------------------------------------------------------

std::vector<CublasHandle> create_cublas_handles(const DistributedMatrix& A) {
  // Task 4: a handle belongs to the device current at cublasCreate, like a stream or an allocation.
  if (A.split != Split::rows) throw std::invalid_argument("create_cublas_handles: the matrix is not split by rows");
  std::vector<CublasHandle> handles;
  handles.reserve(A.workers.size());
  try {
    for (const Worker& w : A.workers) {
      const course::DeviceGuard on(w.device);
      CublasHandle made{w.device, nullptr};
      CUBLAS_CHECK(cublasCreate(&made.handle));
      handles.push_back(made);
      CUBLAS_CHECK(cublasSetStream(made.handle, w.stream));
      std::printf("cuBLAS handle %zu made on GPU %d\n", handles.size() - 1, w.device);
    }
  } catch (...) {
    try {
      destroy_cublas_handles(handles);
    } catch (...) {
      // the first error is the one to report
    }
    throw;
  }
  return handles;
}

void destroy_cublas_handles(std::vector<CublasHandle>& handles) {
  // Task 4: each handle with its own device current; every handle, even after a failure.
  std::exception_ptr first_error;
  for (const CublasHandle& h : handles) {
    try {
      const course::DeviceGuard on(h.device);
      CUBLAS_CHECK(cublasDestroy(h.handle));
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  handles.clear();
  if (first_error) std::rethrow_exception(first_error);
}

void multiply_rows_cublas(DistributedMatrix& A, const std::vector<CublasHandle>& handles, const float* x, float* y) {
  // Task 4: the row split of task 2, with cuBLAS on each worker's block.
  if (A.split != Split::rows) throw std::invalid_argument("multiply_rows_cublas: the matrix is not split by rows");
  if (handles.size() != A.workers.size())
    throw std::invalid_argument("multiply_rows_cublas: one handle per worker is needed");
  if ((x == nullptr && A.n > 0) || (y == nullptr && A.m > 0))
    throw std::invalid_argument("multiply_rows_cublas: x or y is nullptr");
  if (A.n > static_cast<std::size_t>(INT_MAX) || A.m > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument("multiply_rows_cublas: a dimension does not fit cuBLAS's int");
  const float one = 1.0f;
  const float zero = 0.0f;
  for (std::size_t k = 0; k < A.workers.size(); ++k) {
    Worker& w = A.workers[k];
    const course::DeviceGuard on(w.device);
    if (A.n > 0) CUDA_CHECK(cudaMemcpyPeerAsync(w.x.data(), w.device, x, A.root, w.x.bytes(), w.stream));
    if (w.rows.empty()) continue;
    if (A.n > 0) {
      // cuBLAS reads matrices column-major. The row-major block (rows x n) read column-major is its
      // transpose, an n x rows matrix with leading dimension n; y = W x = (W^T)^T x is CUBLAS_OP_T.
      const int n = static_cast<int>(A.n);
      CUBLAS_CHECK(cublasSgemv(handles[k].handle, CUBLAS_OP_T, n, static_cast<int>(w.rows.size()), &one, w.W.data(), n,
                               w.x.data(), 1, &zero, w.y.data(), 1));
    } else {
      // BLAS returns at once for an empty sum and leaves y untouched: write the zeros ourselves.
      CUDA_CHECK(cudaMemsetAsync(w.y.data(), 0, w.y.bytes(), w.stream));
    }
    CUDA_CHECK(cudaMemcpyPeerAsync(y + w.rows.begin, A.root, w.y.data(), w.device, w.y.bytes(), w.stream));
  }
  for (const Worker& w : A.workers) w.stream.synchronize();
}

// ---- Task 5 -------------------------------------------------------------------------------------

ManagedMatrix allocate_managed(std::span<const int> devices, std::size_t m, std::size_t n) {
  // Task 5: one pointer per array, valid on every device and on the host.
  if (devices.empty()) throw std::invalid_argument("allocate_managed: the device list is empty");
  ManagedMatrix A;
  A.m = m;
  A.n = n;
  A.devices.assign(devices.begin(), devices.end());
  A.rows = course::split_ranges(m, static_cast<int>(devices.size()));
  try {
    if (m * n > 0) CUDA_CHECK(cudaMallocManaged(&A.W, m * n * sizeof(float)));
    if (n > 0) CUDA_CHECK(cudaMallocManaged(&A.x, n * sizeof(float)));
    if (m > 0) CUDA_CHECK(cudaMallocManaged(&A.y, m * sizeof(float)));
    A.streams.reserve(devices.size());
    for (const int device : devices) A.streams.emplace_back(device);
  } catch (...) {
    free_managed(A);
    throw;
  }
  return A;
}

void free_managed(ManagedMatrix& A) {
  // Task 5: nothing may still be reading or writing the memory when it is freed.
  for (const course::Stream& stream : A.streams) (void)cudaStreamSynchronize(stream);
  A.streams.clear();
  for (float** pointer : {&A.W, &A.x, &A.y}) {
    float* memory = std::exchange(*pointer, nullptr);
    if (memory != nullptr) CUDA_CHECK(cudaFree(memory));
  }
  A.devices.clear();
  A.rows.clear();
}

void advise_and_prefetch(ManagedMatrix& A) {
  // Task 5: first say where every block belongs, then move each block there; wait at the end.
  const std::size_t x_bytes = A.n * sizeof(float);
  const auto blocks_of = [&A](std::size_t k) {  // worker k's rows of W and its rows of y
    const course::Range rows = A.rows[k];
    return std::array<std::pair<float*, std::size_t>, 2>{
        {{A.W + rows.begin * A.n, rows.size() * A.n * sizeof(float)}, {A.y + rows.begin, rows.size() * sizeof(float)}}};
  };
  if (A.x != nullptr) CUDA_CHECK(course::mem_advise(A.x, x_bytes, cudaMemAdviseSetReadMostly, A.devices.front()));
  for (std::size_t k = 0; k < A.devices.size(); ++k) {
    for (const auto& [block, bytes] : blocks_of(k)) {
      if (bytes == 0) continue;
      CUDA_CHECK(course::mem_advise(block, bytes, cudaMemAdviseSetPreferredLocation, A.devices[k]));
      CUDA_CHECK(course::mem_advise(block, bytes, cudaMemAdviseSetAccessedBy, A.devices[k]));
    }
  }
  for (std::size_t k = 0; k < A.devices.size(); ++k) {
    const course::DeviceGuard on(A.devices[k]);
    if (A.x != nullptr) CUDA_CHECK(course::mem_prefetch_async(A.x, x_bytes, A.devices[k], A.streams[k]));
    for (const auto& [block, bytes] : blocks_of(k))
      if (bytes > 0) CUDA_CHECK(course::mem_prefetch_async(block, bytes, A.devices[k], A.streams[k]));
  }
  for (const course::Stream& stream : A.streams) stream.synchronize();
}

void multiply_managed(ManagedMatrix& A) {
  // Task 5: the kernels read the managed pointers directly; the advice decides where pages live.
  for (std::size_t k = 0; k < A.devices.size(); ++k) {
    const course::Range rows = A.rows[k];
    const course::DeviceGuard on(A.devices[k]);
    const float* block = A.W == nullptr ? nullptr : A.W + rows.begin * A.n;
    float* part = A.y == nullptr ? nullptr : A.y + rows.begin;
    launch_gemv(block, A.x, part, rows.size(), A.n, A.streams[k]);
  }
  for (const course::Stream& stream : A.streams) stream.synchronize();
}

}  // namespace lesson05
