// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09 benchmark, run as one process per GPU:  mpirun -n 2 ./build/tests/bench-09
// (meson test -C build --benchmark --suite 09-multi-process starts it that way). Every rank places
// itself with your place_rank (task 1) and joins your communicator (task 2). It then times:
//  1. NCCL's all-reduce from these N processes against lesson 06's one-process group call over the
//     same GPUs (rank 0 alone, ncclCommInitAll): one process per GPU costs nothing once the
//     communicator exists, so the bus bandwidth should be within 5% at 64 MiB and above (PASS/FAIL);
//  2. your IPC one-shot (task 3) against NCCL from 8 B to 1 MiB, with the host time per call beside
//     each: the one-shot's two MPI barriers per call are host time that NCCL does not spend.
// Times: many calls enqueued back to back between two barriers, median of 5 repeats, per call.
// GB = 10^9 bytes. It needs N distinct GPUs; with fewer it says so and measures nothing.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/programs.h"
#include "multi_process.h"

using namespace lesson09;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr int kRepeats = 5;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

struct Timing {
  double seconds_per_call = 0;       // the slowest rank's, median of the repeats
  double host_seconds_per_call = 0;  // the time to enqueue one call on the host (slowest rank)
};

// `calls` calls of `enqueue` back to back on every rank, between barriers, after `warmup` calls.
Timing time_calls(const std::function<void()>& enqueue, const std::function<void()>& wait, int warmup, int calls,
                  MPI_Comm comm) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i) enqueue();
  wait();
  std::vector<double> totals, hosts;
  for (int repeat = 0; repeat < kRepeats; ++repeat) {
    MPI_Barrier(comm);
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) enqueue();
    const auto enqueued = Clock::now();
    wait();
    const auto end = Clock::now();
    double mine[2] = {std::chrono::duration<double>(end - start).count() / calls,
                      std::chrono::duration<double>(enqueued - start).count() / calls};
    double slowest[2] = {0, 0};
    MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, comm);
    totals.push_back(slowest[0]);
    hosts.push_back(slowest[1]);
  }
  return {median(totals), median(hosts)};
}

double busbw_gb_per_s(std::size_t bytes, double seconds, int ranks) {
  return static_cast<double>(bytes) / seconds / 1e9 * 2.0 * (ranks - 1) / ranks;
}

// Lesson 06's way: one process, one communicator per GPU (ncclCommInitAll), a group call per
// all-reduce. Returns the time per call for each size; run by rank 0 alone.
std::vector<double> one_process_times(int ranks, const std::vector<std::size_t>& sizes) {
  std::vector<int> devices(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) devices[d] = d;
  std::vector<ncclComm_t> comms(devices.size());
  NCCL_CHECK(ncclCommInitAll(comms.data(), ranks, devices.data()));
  std::vector<course::Stream> streams;
  std::vector<course::DeviceBuffer<float>> buffers;
  for (const int d : devices) {
    streams.emplace_back(d);
    buffers.emplace_back(d, sizes.back() / sizeof(float));
  }
  std::vector<double> times;
  for (const std::size_t bytes : sizes) {
    const auto enqueue = [&] {
      NCCL_CHECK(ncclGroupStart());
      for (int k = 0; k < ranks; ++k)
        NCCL_CHECK(ncclAllReduce(buffers[k].data(), buffers[k].data(), bytes / sizeof(float), ncclFloat, ncclSum,
                                 comms[k], streams[k]));
      NCCL_CHECK(ncclGroupEnd());
    };
    const auto wait = [&] {
      for (const course::Stream& s : streams) s.synchronize();
    };
    times.push_back(time_calls(enqueue, wait, 5, 20, MPI_COMM_SELF).seconds_per_call);
  }
  for (ncclComm_t comm : comms) NCCL_CHECK(ncclCommDestroy(comm));
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int exit_code = 0;
  try {
    const int visible = course::visible_gpu_count();
    int fewest = visible;
    MPI_Allreduce(&visible, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (size < 2 || fewest < size) {
      if (rank == 0)
        std::printf(
            "needs 2 distinct GPUs, one per process: %d process%s, %d GPU%s visible to each "
            "(run it as mpirun -n 2 on a machine with 2 GPUs); nothing measured\n",
            size, size == 1 ? "" : "es", fewest, fewest == 1 ? "" : "s");
      MPI_Finalize();
      return 0;
    }
    const RankPlacement placement = place_rank(course::process_environment(), visible);
    const int device = placement.device;
    ncclComm_t comm = init_nccl_over_mpi(MPI_COMM_WORLD, device, std::chrono::seconds(60));
    const course::Stream stream(device);
    const std::vector<std::size_t> large = {64 * kMiB, 256 * kMiB, 1024 * kMiB};
    const course::DeviceBuffer<float> big(device, large.back() / sizeof(float));
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaMemset(big.data(), 0, big.bytes()));

    // ---- 1. N processes against one process -------------------------------------------------
    std::vector<double> multi;
    for (const std::size_t bytes : large) {
      const auto enqueue = [&] {
        complete_nccl_call(
            comm, ncclAllReduce(big.data(), big.data(), bytes / sizeof(float), ncclFloat, ncclSum, comm, stream),
            "ncclAllReduce");
      };
      multi.push_back(time_calls(
                          enqueue, [&] { stream.synchronize(); }, 5, 20, MPI_COMM_WORLD)
                          .seconds_per_call);
    }

    // ---- 2. IPC one-shot against NCCL, small sizes ----------------------------------------------
    std::vector<std::size_t> small;
    for (std::size_t bytes = 8; bytes <= kMiB; bytes *= 4) small.push_back(bytes);
    small.push_back(kMiB);
    small.erase(std::unique(small.begin(), small.end()), small.end());
    const course::DeviceBuffer<float> input(device, kMiB / sizeof(float)), output(device, kMiB / sizeof(float)),
        reference(device, kMiB / sizeof(float));
    {
      std::vector<float> values(kMiB / sizeof(float));
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7 + rank * 3) % 17) - 8;
      CUDA_CHECK(cudaMemcpy(input.data(), values.data(), input.bytes(), cudaMemcpyHostToDevice));
    }
    IpcAllReduce ipc = open_ipc_all_reduce(MPI_COMM_WORLD, device, kMiB / sizeof(float));
    struct SmallRow {
      std::size_t bytes;
      Timing nccl, ipc;
    };
    std::vector<SmallRow> rows;
    for (const std::size_t bytes : small) {
      const std::size_t count = bytes / sizeof(float);
      const auto wait = [&] { stream.synchronize(); };
      const Timing nccl_timing = time_calls(
          [&] {
            complete_nccl_call(comm,
                               ncclAllReduce(input.data(), reference.data(), count, ncclFloat, ncclSum, comm, stream),
                               "ncclAllReduce");
          },
          wait, 20, 200, MPI_COMM_WORLD);
      const Timing ipc_timing = time_calls([&] { ipc_all_reduce(ipc, input.data(), output.data(), count, stream); },
                                           wait, 20, 200, MPI_COMM_WORLD);
      rows.push_back({bytes, nccl_timing, ipc_timing});
    }
    // The same sums: small integers, exact in float whatever the order.
    std::vector<float> from_nccl(kMiB / sizeof(float)), from_ipc(kMiB / sizeof(float));
    CUDA_CHECK(cudaMemcpy(from_nccl.data(), reference.data(), reference.bytes(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(from_ipc.data(), output.data(), output.bytes(), cudaMemcpyDeviceToHost));
    int same = from_nccl == from_ipc ? 1 : 0, all_same = 0;
    MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    close_ipc_all_reduce(ipc);
    destroy_communicator(comm);

    // ---- rank 0: the one-process baseline on the same GPUs, then the tables -----------------------
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      const std::vector<double> single = one_process_times(size, large);
      std::printf("== NCCL all-reduce, %d processes (one per GPU) against one process (lesson 06's group call)\n",
                  size);
      std::printf("%10s %14s %14s %10s\n", "size", "N procs GB/s", "1 proc GB/s", "ratio");
      bool pass = true;
      for (std::size_t i = 0; i < large.size(); ++i) {
        const double mine = busbw_gb_per_s(large[i], multi[i], size);
        const double theirs = busbw_gb_per_s(large[i], single[i], size);
        pass = pass && mine >= 0.95 * theirs;
        std::printf("%7zu MiB %14.1f %14.1f %10.3f\n", large[i] / kMiB, mine, theirs, mine / theirs);
      }
      std::printf("%s: busbw of %d processes within 5%% of one process's at 64 MiB and above\n", pass ? "PASS" : "FAIL",
                  size);
      std::printf("\n== IPC one-shot across processes against NCCL (busbw; time per call; host time per call)\n");
      std::printf("%10s %12s %12s %16s %12s\n", "size", "NCCL us", "one-shot us", "one-shot host us", "faster");
      for (const SmallRow& row : rows)
        std::printf("%8zu B %12.2f %12.2f %16.2f %12s\n", row.bytes, row.nccl.seconds_per_call * 1e6,
                    row.ipc.seconds_per_call * 1e6, row.ipc.host_seconds_per_call * 1e6,
                    row.ipc.seconds_per_call < row.nccl.seconds_per_call ? "one-shot" : "NCCL");
      std::printf("%s: the one-shot's sums equal NCCL's on every rank (1 MiB of small integers)\n",
                  all_same ? "PASS" : "FAIL");
      if (!pass || !all_same) exit_code = 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  } catch (const std::exception& error) {
    std::printf("rank %d stopped: %s\n", rank, error.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);  // the other ranks may wait in a collective for this one: end them all
  }
  MPI_Finalize();
  return exit_code;
}
