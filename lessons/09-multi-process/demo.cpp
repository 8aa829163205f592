// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09 demo: your code in every process a launcher started. Each rank says who it is (task
// 1), joins one NCCL communicator and sums rank + 1 over every rank (task 2), then does the same
// sum with your one-shot through CUDA IPC (task 3); every rank should end with 1 + 2 + ... + N
// everywhere. A task not done yet stops its own section, on every rank alike. With --job-script it
// prints the sbatch script of task 4 that runs it, and starts nothing.
// Run it with:  mpirun -n 2 ./build/tests/demo-09      (or: srun -n 2 ./build/tests/demo-09)
// Its job script (task 4):  ./build/tests/demo-09 --job-script 2 4 > job.sbatch && sbatch job.sbatch
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/programs.h"
#include "multi_process.h"

using namespace lesson09;

namespace {

// Prints one line per rank, in rank order (each rank's line goes through rank 0).
void print_in_rank_order(const std::string& line) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char mine[256] = {};
  std::snprintf(mine, sizeof mine, "%s", line.c_str());
  std::vector<char> all(static_cast<std::size_t>(size) * sizeof mine);
  MPI_Gather(mine, sizeof mine, MPI_CHAR, all.data(), sizeof mine, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int r = 0; r < size; ++r) std::printf("  %s\n", all.data() + r * sizeof mine);
  std::fflush(stdout);
}

std::string summary(const std::vector<float>& values, float expected) {
  std::size_t wrong = 0;
  for (const float v : values) wrong += v == expected ? 0 : 1;
  char text[160];
  std::snprintf(text, sizeof text, "first %g, last %g, %zu of %zu wrong (expected %g everywhere)", values.front(),
                values.back(), wrong, values.size(), expected);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  // demo-09 --job-script NODES GPUS_PER_NODE [PROGRAM ARGUMENT...]: your task-4 script that runs
  // PROGRAM with its arguments (this demo when none is given), for sbatch.
  if (argc >= 4 && std::string(argv[1]) == "--job-script") {
    try {
      const JobShape shape{.job_name = "lesson-09-demo",
                           .nodes = std::atoi(argv[2]),
                           .gpus_per_node = std::atoi(argv[3]),
                           .time_limit = "00:10:00",
                           .program = argc > 4 ? std::string(argv[4]) : course::this_program(),
                           .arguments = std::vector<std::string>(argv + std::min(argc, 5), argv + argc)};
      std::fputs(render_job_script(shape).c_str(), stdout);
      return 0;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "stopped: %s\n", error.what());
      return 1;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto say = [&](const char* title) {
    if (rank == 0) std::printf("== %s\n", title);
  };
  const float expected = static_cast<float>(size * (size + 1) / 2);
  constexpr std::size_t kCount = std::size_t{1} << 20;
  int device = -1;

  say("task 1: who am I");
  std::string line = "rank " + std::to_string(rank) + ": ";
  try {
    const RankPlacement placement = place_rank(course::process_environment(), course::visible_gpu_count());
    device = placement.device;
    line += "launcher " + placement.launcher + ", rank " + std::to_string(placement.rank) + " of " +
            std::to_string(placement.size) + ", local rank " + std::to_string(placement.local_rank) + ", GPU " +
            std::to_string(placement.device);
  } catch (const std::exception& error) {
    line += std::string("stopped: ") + error.what();
  }
  print_in_rank_order(line);
  int everyone_placed = 0;
  const int placed = device >= 0 ? 1 : 0;
  MPI_Allreduce(&placed, &everyone_placed, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!everyone_placed) {
    if (rank == 0) std::printf("  (tasks 2 and 3 need every rank on a GPU)\n");
    MPI_Finalize();
    return 0;
  }
  const course::Stream stream(device);
  const course::DeviceBuffer<float> input(device, kCount), output(device, kCount);
  const std::vector<float> mine(kCount, static_cast<float>(rank + 1));
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaMemcpy(input.data(), mine.data(), input.bytes(), cudaMemcpyHostToDevice));
  std::vector<float> got(kCount);

  say("task 2: one NCCL communicator over every process");
  line = "rank " + std::to_string(rank) + ": ";
  try {
    ncclComm_t comm = init_nccl_over_mpi(MPI_COMM_WORLD, device, std::chrono::seconds(30));
    complete_nccl_call(comm, ncclAllReduce(input.data(), output.data(), kCount, ncclFloat, ncclSum, comm, stream),
                       "ncclAllReduce");
    stream.synchronize();
    CUDA_CHECK(cudaMemcpy(got.data(), output.data(), output.bytes(), cudaMemcpyDeviceToHost));
    destroy_communicator(comm);
    line += "NCCL all-reduce: " + summary(got, expected);
  } catch (const std::exception& error) {
    line += std::string("stopped: ") + error.what();
  }
  print_in_rank_order(line);

  // CUDA IPC reaches only the processes of this node: task 3 runs among them (one communicator per
  // node, MPI_COMM_TYPE_SHARED), so on N nodes each node sums its own ranks' numbers.
  say("task 3: a one-shot all-reduce through CUDA IPC, among the processes of each node");
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 1, node_expected = 0;
  const int value = rank + 1;  // what this rank's buffer holds everywhere
  MPI_Comm_size(node, &node_size);
  MPI_Allreduce(&value, &node_expected, 1, MPI_INT, MPI_SUM, node);
  line = "rank " + std::to_string(rank) + ": ";
  try {
    IpcAllReduce ipc = open_ipc_all_reduce(node, device, kCount);
    ipc_all_reduce(ipc, input.data(), output.data(), kCount, stream);
    stream.synchronize();
    CUDA_CHECK(cudaMemcpy(got.data(), output.data(), output.bytes(), cudaMemcpyDeviceToHost));
    close_ipc_all_reduce(ipc);
    line += "IPC one-shot: " + summary(got, static_cast<float>(node_expected));
    if (node_size < size) line += " (the " + std::to_string(node_size) + " processes of its node)";
  } catch (const std::exception& error) {
    line += std::string("stopped: ") + error.what();
  }
  print_in_rank_order(line);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return 0;
}
