// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10 demo: run it as one process per GPU, as lesson 09's programs are run:
//     NVSHMEM_DISABLE_NVLS=1 mpirun -n 2 ./build/tests/demo-10
// (or srun --ntasks-per-node=<GPUs> under Slurm). Each PE says how it reaches the others' copies of a
// symmetric buffer, sweeps a small Jacobi grid with halos put by the kernel, and all-reduces a few floats.
#include <cuda_runtime.h>
#include <mpi.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "common/check.h"
#include "device_initiated.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, local_rank = 0, visible = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  if (cudaGetDeviceCount(&visible) != cudaSuccess || visible == 0) {
    std::printf("rank %d: no GPU visible\n", rank);
    MPI_Finalize();
    return 0;
  }
  const lesson10::Session session = lesson10::start_nvshmem(MPI_COMM_WORLD, local_rank % visible);
  int status = 0;
  try {
    // The host's copies from this PE's symmetric memory are made with its device current: NVSHMEM maps
    // the heap for that device, and a copy issued from another device's context may not reach it.
    CUDA_CHECK(cudaSetDevice(session.device));
    lesson10::SymmetricFloats buffer = lesson10::allocate_symmetric(session, 1024);
    for (int pe = 0; pe < session.pes; ++pe)
      std::printf("PE %d (GPU %d) reaches PE %d's copy by %s\n", session.pe, session.device, pe,
                  lesson10::peer_path(session, buffer, pe) == lesson10::PeerPath::load_store ? "pointer" : "put");
    lesson10::free_symmetric(session, buffer);

    const std::size_t n = 64;
    std::vector<float> grid(n * n, 0.0f);
    for (std::size_t x = 0; x < n; ++x) grid[x] = 1.0f;  // a hot top edge
    lesson10::JacobiBlock block = lesson10::decompose(session, n, n, grid);
    lesson10::run_device_initiated(session, block, 100);
    float centre = 0;
    const std::size_t row = block.rows.size() / 2 + 1;  // the middle of the block, in its own rows (0: the halo)
    CUDA_CHECK(cudaMemcpy(&centre, block.current.data + row * n + n / 2, sizeof centre, cudaMemcpyDeviceToHost));
    // The same 100 sweeps on the CPU, the whole grid: the middle of every block must agree (a PE whose
    // halos never came holds 0 there, where the heat from the hot edge has reached every row).
    std::vector<float> cpu = grid, swept = grid;
    for (int sweep = 0; sweep < 100; ++sweep) {
      for (std::size_t y = 1; y + 1 < n; ++y)
        for (std::size_t x = 1; x + 1 < n; ++x)
          swept[y * n + x] =
              0.25f * ((cpu[(y - 1) * n + x] + cpu[(y + 1) * n + x]) + (cpu[y * n + x - 1] + cpu[y * n + x + 1]));
      cpu.swap(swept);
    }
    const float expected = cpu[(block.rows.begin + row - 1) * n + n / 2];
    std::printf("PE %d: rows [%zu, %zu), after 100 sweeps the middle of its block holds %g (the CPU: %g)%s\n",
                session.pe, block.rows.begin, block.rows.end, centre, expected,
                centre == expected ? "" : "  DIFFERENT");
    // The halos after the run: the neighbours' boundary rows of the last sweep, which the CPU's grid
    // holds at rows.begin - 1 and rows.end; and the four signal words (sweep numbers) that said so.
    for (const std::size_t local : {std::size_t{0}, block.rows.size() + 1}) {
      std::vector<float> halo(n);
      CUDA_CHECK(cudaMemcpy(halo.data(), block.current.data + local * n, n * sizeof(float), cudaMemcpyDeviceToHost));
      const float* truth = cpu.data() + (block.rows.begin + local - 1) * n;
      std::size_t differ = 0;
      for (std::size_t x = 0; x < n; ++x) differ += halo[x] != truth[x] ? 1 : 0;
      std::printf("PE %d: halo %s (grid row %zu): %zu of %zu floats differ from the CPU's\n", session.pe,
                  local == 0 ? "above" : "below", block.rows.begin + local - 1, differ, n);
    }
    std::uint64_t signals[lesson10::kJacobiSignals] = {};
    CUDA_CHECK(cudaMemcpy(signals, block.signals, sizeof signals, cudaMemcpyDeviceToHost));
    std::printf("PE %d: signal words %llu %llu %llu %llu after %llu sweeps\n", session.pe,
                static_cast<unsigned long long>(signals[0]), static_cast<unsigned long long>(signals[1]),
                static_cast<unsigned long long>(signals[2]), static_cast<unsigned long long>(signals[3]),
                static_cast<unsigned long long>(block.sweeps));
    lesson10::close_block(session, block);

    // Every PE gives 1, 2, 3 and 4 times its number plus one; every PE gets the same four sums.
    constexpr std::size_t kCount = 4;
    lesson10::AllReduceWorkspace sums = lesson10::open_all_reduce(session, kCount);
    std::vector<float> mine(kCount), got(kCount, -1.0f);
    for (std::size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>((i + 1) * (session.pe + 1));
    float* input = nullptr;
    float* output = nullptr;
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaMalloc(&input, kCount * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&output, kCount * sizeof(float)));
    CUDA_CHECK(cudaStreamCreate(&stream));
    CUDA_CHECK(cudaMemcpy(input, mine.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
    lesson10::device_all_reduce(sums, input, output, kCount, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(got.data(), output, kCount * sizeof(float), cudaMemcpyDeviceToHost));
    const float ones = static_cast<float>(session.pes * (session.pes + 1) / 2);  // 1 + 2 + ... + pes
    std::printf("PE %d: all-reduce of {1, 2, 3, 4} x (PE + 1) gives {%g, %g, %g, %g} (expected {%g, %g, %g, %g})\n",
                session.pe, got[0], got[1], got[2], got[3], ones, 2 * ones, 3 * ones, 4 * ones);
    // The words every PE pushed here for float 0 of call 1: the call's number above, the float's bits below.
    for (int p = 0; p < session.pes; ++p) {
      std::uint64_t word = 0;
      CUDA_CHECK(cudaMemcpy(&word, sums.inbox + lesson10::inbox_word(1, session.pes, p, kCount, 0), sizeof word,
                            cudaMemcpyDeviceToHost));
      const float value = std::bit_cast<float>(static_cast<std::uint32_t>(word));
      std::printf("PE %d: word from PE %d for float 0: 0x%016llx (call %u, %g)\n", session.pe, p,
                  static_cast<unsigned long long>(word), static_cast<unsigned>(word >> 32), value);
    }
    CUDA_CHECK(cudaStreamDestroy(stream));
    CUDA_CHECK(cudaFree(input));
    CUDA_CHECK(cudaFree(output));
    lesson10::close_all_reduce(sums);
  } catch (const std::exception& error) {
    std::printf("PE %d: %s\n", session.pe, error.what());
    status = 1;
  }
  lesson10::stop_nvshmem(session);
  MPI_Finalize();
  return status;
}
