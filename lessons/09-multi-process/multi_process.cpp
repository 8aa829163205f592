// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 09: one process per GPU. Who this process is, from what mpirun or srun put in its
// environment; one NCCL communicator over every process, its id broadcast over MPI and its
// initialization non-blocking, so that a rank that never comes makes the others fail instead of
// hang; and a one-shot all-reduce across the processes of one node, which read each other's GPU
// memory through CUDA IPC.
//     meson test -C build --suite 09-multi-process --print-errorlogs
// checks your work. Keep the rest as it is; your own #include or helper may go anywhere.
#include "multi_process.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <array>
#include <charconv>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"

namespace lesson09 {

namespace {

// An MPI call that did not return MPI_SUCCESS, as an exception (MPI's default handler ends the
// job first; a communicator with MPI_ERRORS_RETURN gets here).
[[maybe_unused]] void mpi_check(int result, const char* call) {
  if (result != MPI_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: MPI error " + std::to_string(result));
}

}  // namespace

// ---- Task 1 -------------------------------------------------------------------------------------

// TODO(task 1): the launcher's variables, checked, and this process's GPU (README, task 1 and its hints).
RankPlacement place_rank(const Environment& environment, int visible_devices) {
  (void)environment;
  (void)visible_devices;
  NOT_IMPLEMENTED("task 1");
}

// ---- Task 2 -------------------------------------------------------------------------------------

// TODO(task 2): rank 0's id over MPI, a non-blocking init polled against a deadline (README, task 2 and its hints).
ncclComm_t init_nccl_over_mpi(MPI_Comm comm, int device, std::chrono::milliseconds timeout,
                              const MakeUniqueId& make_id) {
  (void)comm;
  (void)device;
  (void)timeout;
  (void)make_id;
  NOT_IMPLEMENTED("task 2");
}

// ---- Task 3 -------------------------------------------------------------------------------------

// TODO(task 3): export, exchange and open the handles (README, task 3 and its hints).
IpcAllReduce open_ipc_all_reduce(MPI_Comm comm, int device, std::size_t max_count) {
  (void)comm;
  (void)device;
  (void)max_count;
  NOT_IMPLEMENTED("task 3");
}

void ipc_all_reduce(IpcAllReduce& ipc, const float* input, float* output, std::size_t count, cudaStream_t stream,
                    const PeerSum& sum) {
  // TODO(task 3): copy in after the peers' read_done, publish, then sum every peer's buffer in rank order.
  (void)ipc;
  (void)input;
  (void)output;
  (void)count;
  (void)stream;
  (void)sum;
  NOT_IMPLEMENTED("task 3");
}

void close_ipc_all_reduce(IpcAllReduce& ipc) {
  // TODO(task 3): close what you opened, wait for every rank, then free your own.
  (void)ipc;
  NOT_IMPLEMENTED("task 3");
}

// ---- Task 4 -------------------------------------------------------------------------------------

// TODO(task 4): the directives, then srun with every word in single quotes (README, task 4 and its hints).
std::string render_job_script(const JobShape& shape) {
  (void)shape;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson09
