// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10, given: NVSHMEM started from the launcher that started the processes. The unique-id
// bootstrap: rank 0 makes NVSHMEM's id and MPI_Bcast takes it to every rank, as lesson 09 did with
// NCCL's id. It needs nothing of MPI but one broadcast, so it works with whichever MPI the course was
// built with (NVSHMEM's MPI bootstrap plugin is built against one MPI's ABI, the wheel's against
// Open MPI 4). Also given: the row split, the report of a kernel that gave up, the frees, the grid.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nvshmem_host.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "device_initiated.h"

namespace lesson10 {

Session start_nvshmem(MPI_Comm comm, int device) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (rank == 0 && nvshmemx_get_uniqueid(&id) != 0) std::memset(&id, 0, sizeof id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  const course::DeviceGuard on_device(device);
  // NVSHMEM binds the PE to the CUDA context current when it starts; with none, it only bootstraps and
  // defers the rest to a later call (its "two-stage initialization"), while PEs that had one go on into
  // collective steps. The guard skips cudaSetDevice when `device` is already current, and cudaGetDevice
  // makes no context: the first runtime call that needs one (here) makes the device's current.
  CUDA_CHECK(cudaFree(nullptr));
  nvshmemx_init_attr_t attributes = NVSHMEMX_INIT_ATTR_INITIALIZER;
  if (nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attributes) != 0)
    throw std::runtime_error("start_nvshmem: nvshmemx_set_attr_uniqueid_args failed on rank " + std::to_string(rank));
  nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attributes);  // ends the process itself when it fails
  // And one barrier of every PE: every PE has started when any PE goes on (a first TODO that throws
  // sends its PE to nvshmem_finalize at once).
  nvshmem_barrier_all();
  return Session{nvshmem_my_pe(), nvshmem_n_pes(), device};
}

void stop_nvshmem(const Session& session) {
  const course::DeviceGuard on_device(session.device);
  nvshmem_finalize();
}

std::string gave_up(const GiveUp& report) {
  // The kernel writes `call` last (after a fence): read it first, through volatile (pinned memory the GPU
  // may write while the host reads), and the rest only when it is set.
  const volatile GiveUp* live = &report;
  GiveUp seen;
  seen.call = live->call;
  if (seen.call == 0) return "";
  seen.peer = live->peer;
  seen.block = live->block;
  std::ostringstream text;
  text << "block " << seen.block << " gave up waiting in call (or sweep) " << seen.call << " for PE " << seen.peer
       << ": its data never came (a PE that never launched its kernel, a missing put or signal, a wait for the "
          "wrong value?)";
  return text.str();
}

course::Range block_rows(std::size_t ny, int pes, int p) {
  if (ny < 3 || pes < 1 || p < 0 || p >= pes)
    throw std::invalid_argument("block_rows: needs ny >= 3 and 0 <= p < pes, got ny = " + std::to_string(ny) +
                                ", pes = " + std::to_string(pes) + ", p = " + std::to_string(p));
  const course::Range part = course::split_range(ny - 2, pes, p);
  return {part.begin + 1, part.end + 1};
}

void close_block(const Session& session, JacobiBlock& block) {
  const course::DeviceGuard on_device(session.device);
  if (block.stream != nullptr) CUDA_CHECK(cudaStreamSynchronize(block.stream));
  nvshmem_barrier_all();  // no peer still puts into what is freed next
  for (SymmetricFloats* buffer : {&block.current, &block.next})
    if (buffer->data != nullptr) nvshmem_free(buffer->data);
  if (block.signals != nullptr) nvshmem_free(block.signals);
  if (block.give_up != nullptr) CUDA_CHECK(cudaFreeHost(block.give_up));
  if (block.give_up_claim != nullptr) CUDA_CHECK(cudaFree(block.give_up_claim));
  if (block.stream != nullptr) CUDA_CHECK(cudaStreamDestroy(block.stream));
  block = JacobiBlock{};
}

void close_all_reduce(AllReduceWorkspace& workspace) {
  const course::DeviceGuard on_device(workspace.device);
  CUDA_CHECK(cudaDeviceSynchronize());
  nvshmem_barrier_all();
  if (workspace.inbox != nullptr) nvshmem_free(workspace.inbox);
  if (workspace.give_up != nullptr) CUDA_CHECK(cudaFreeHost(workspace.give_up));
  if (workspace.give_up_claim != nullptr) CUDA_CHECK(cudaFree(workspace.give_up_claim));
  workspace = AllReduceWorkspace{};
}

int all_reduce_blocks(const AllReduceWorkspace& workspace, std::size_t count) {
  constexpr std::size_t kFloatsPerBlock = 512;
  const std::size_t wanted = (count + kFloatsPerBlock - 1) / kFloatsPerBlock;
  const std::size_t most = workspace.blocks < 1 ? 1 : static_cast<std::size_t>(workspace.blocks);
  return static_cast<int>(wanted < 1 ? 1 : (wanted > most ? most : wanted));
}

}  // namespace lesson10
