// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10 benchmark, one process per GPU (meson test --benchmark starts it as mpirun -n 2):
//  - the device-initiated Jacobi: microseconds per sweep across domain sizes, beside one GPU's time for
//    the whole grid (a plain sweep kernel on PE 0's GPU alone) and the parallel efficiency
//    t(1) / (P x t(P)), with the target's PASS/FAIL line at 20480 x 20480 (>= 95 %);
//  - the device-initiated all-reduce from 8 B to 1 MiB: median and minimum microseconds per call.
// CUDA events after a warm-up, median and minimum of the repeats. Not yet here (GPU-VERIFY.md): lesson
// 08's overlapped schedule and NCCL graphed on the same GPUs, the yardsticks of the other two targets.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "device_initiated.h"

namespace {

// One GPU's yardstick: a plain sweep of the whole grid, one launch per sweep.
__global__ void sweep_whole(const float* current, float* next, std::size_t ny, std::size_t nx) {
  for (std::size_t y = 1 + blockIdx.x; y + 1 < ny; y += gridDim.x)
    for (std::size_t x = 1 + threadIdx.x; x + 1 < nx; x += blockDim.x)
      next[y * nx + x] = 0.25f * ((current[(y - 1) * nx + x] + current[(y + 1) * nx + x]) +
                                  (current[y * nx + x - 1] + current[y * nx + x + 1]));
}

struct Stats {
  double median = 0, minimum = 0;
};
Stats stats_of(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, local_rank = 0, visible = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    if (rank == 0) std::printf("SKIP: no GPU\n");
    MPI_Finalize();
    return 77;
  }
  const lesson10::Session session = lesson10::start_nvshmem(MPI_COMM_WORLD, local_rank % visible);
  CUDA_CHECK(cudaSetDevice(session.device));
  constexpr int kRepeats = 7, kSweeps = 200;
  if (session.pe == 0)
    std::printf("Jacobi, %d PEs, %d sweeps a call: us per sweep (median, min)\n", session.pes, kSweeps);
  for (const std::size_t n : {std::size_t{1024}, std::size_t{4096}, std::size_t{8192}, std::size_t{20480}}) {
    std::vector<float> grid(n * n, 0.0f);
    for (std::size_t x = 0; x < n; ++x) grid[x] = 1.0f;
    lesson10::JacobiBlock block = lesson10::decompose(session, n, n, grid);
    lesson10::run_device_initiated(session, block, 10);  // warm-up
    std::vector<double> times;
    for (int r = 0; r < kRepeats; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      lesson10::run_device_initiated(session, block, kSweeps);
      MPI_Barrier(MPI_COMM_WORLD);
      times.push_back((MPI_Wtime() - start) * 1e6 / kSweeps);
    }
    lesson10::close_block(session, block);
    const Stats many = stats_of(times);
    if (session.pe == 0) {  // one GPU's time for the whole grid
      course::DeviceBuffer<float> a(session.device, n * n), b(session.device, n * n);
      CUDA_CHECK(cudaMemcpy(a.data(), grid.data(), a.bytes(), cudaMemcpyHostToDevice));
      CUDA_CHECK(cudaMemcpy(b.data(), grid.data(), b.bytes(), cudaMemcpyHostToDevice));
      cudaEvent_t begin, end;
      CUDA_CHECK(cudaEventCreate(&begin));
      CUDA_CHECK(cudaEventCreate(&end));
      std::vector<double> one;
      for (int r = 0; r <= kRepeats; ++r) {
        CUDA_CHECK(cudaEventRecord(begin));
        for (int s = 0; s < kSweeps; ++s)
          sweep_whole<<<1024, 256>>>(s % 2 ? b.data() : a.data(), s % 2 ? a.data() : b.data(), n, n);
        CUDA_CHECK(cudaEventRecord(end));
        CUDA_CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
        if (r > 0) one.push_back(ms * 1e3 / kSweeps);  // the first is the warm-up
      }
      const Stats single = stats_of(one);
      const double efficiency = single.median / (session.pes * many.median);
      std::printf("  %6zu^2: %9.2f %9.2f   one GPU %9.2f   efficiency %5.1f %%\n", n, many.median, many.minimum,
                  single.median, 100 * efficiency);
      if (n == 20480 && session.pes == 2)
        std::printf("%s: parallel efficiency at 20480^2 on 2 GPUs %.1f %% (target >= 95 %%)\n",
                    efficiency >= 0.95 ? "PASS" : "FAIL", 100 * efficiency);
      CUDA_CHECK(cudaEventDestroy(begin));
      CUDA_CHECK(cudaEventDestroy(end));
    }
  }
  constexpr std::size_t kMaxCount = std::size_t{1} << 18;
  lesson10::AllReduceWorkspace workspace = lesson10::open_all_reduce(session, kMaxCount);
  course::DeviceBuffer<float> input(session.device, kMaxCount), output(session.device, kMaxCount);
  CUDA_CHECK(cudaMemset(input.data(), 0, input.bytes()));
  const course::Stream stream(session.device);
  cudaEvent_t begin, end;
  CUDA_CHECK(cudaEventCreate(&begin));
  CUDA_CHECK(cudaEventCreate(&end));
  if (session.pe == 0) std::printf("All-reduce, %d PEs: us per call (median, min), 100 calls a repeat\n", session.pes);
  for (std::size_t bytes = 8; bytes <= kMaxCount * sizeof(float); bytes *= 4) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<double> times;
    for (int r = 0; r <= kRepeats; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      CUDA_CHECK(cudaEventRecord(begin, stream));
      for (int c = 0; c < 100; ++c) lesson10::device_all_reduce(workspace, input.data(), output.data(), count, stream);
      CUDA_CHECK(cudaEventRecord(end, stream));
      CUDA_CHECK(cudaEventSynchronize(end));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
      if (r > 0) times.push_back(ms * 1e3 / 100);
    }
    const Stats call = stats_of(times);
    if (session.pe == 0) std::printf("  %8zu B: %8.2f %8.2f\n", bytes, call.median, call.minimum);
  }
  CUDA_CHECK(cudaEventDestroy(begin));
  CUDA_CHECK(cudaEventDestroy(end));
  lesson10::close_all_reduce(workspace);
  lesson10::stop_nvshmem(session);
  MPI_Finalize();
  return 0;
}
