// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Correct-but-different lesson 09 file (tests/grader/correct/README.md): must earn full marks.
// Idioms: MPI-3's non-blocking collectives: the handles exchanged with MPI_Iallgather and the
// one-shot's barriers made with MPI_Ibarrier, each completed with MPI_Wait. (Rank 0's IdMessage stays
// a blocking MPI_Bcast, as the contract says: a non-blocking collective never matches a blocking one,
// and the test's missing rank calls MPI_Bcast.)
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
#include "multi_process.h"

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

namespace {

// The value of `name` as a whole decimal number; throws std::invalid_argument when it is not one.
int whole_number(const Environment& environment, const std::string& name) {
  const std::string& text = environment.at(name);
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size())
    throw std::invalid_argument("place_rank: " + name + "='" + text + "' is not a whole decimal number");
  return value;
}

}  // namespace

RankPlacement place_rank(const Environment& environment, int visible_devices) {
  struct Launcher {
    const char* name;
    std::array<const char*, 3> variables;  // rank, size, local rank
  };
  const Launcher launchers[] = {
      {"mpirun", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"srun", {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}},
  };
  const auto visible_mask = [&] {
    const auto mask = environment.find("CUDA_VISIBLE_DEVICES");
    return mask == environment.end() ? std::string() : " (CUDA_VISIBLE_DEVICES=" + mask->second + ")";
  };

  RankPlacement placement{.launcher = "none", .rank = 0, .size = 1, .local_rank = 0, .device = 0};
  for (const Launcher& launcher : launchers) {
    int present = 0;
    for (const char* variable : launcher.variables) present += environment.count(variable) > 0 ? 1 : 0;
    if (present == 0) continue;
    const std::string names =
        std::string(launcher.variables[0]) + ", " + launcher.variables[1] + " and " + launcher.variables[2];
    if (present < 3) throw std::invalid_argument("place_rank: " + names + " must all be set, or none of them");
    placement.launcher = launcher.name;
    placement.rank = whole_number(environment, launcher.variables[0]);
    placement.size = whole_number(environment, launcher.variables[1]);
    placement.local_rank = whole_number(environment, launcher.variables[2]);
    if (placement.size < 1 || placement.rank < 0 || placement.rank >= placement.size || placement.local_rank < 0 ||
        placement.local_rank >= placement.size)
      throw std::invalid_argument("place_rank: " + names + " say rank " + std::to_string(placement.rank) + " of " +
                                  std::to_string(placement.size) + ", local rank " +
                                  std::to_string(placement.local_rank) + ": not a rank of the job");
    break;  // Open MPI's first: an mpirun inside an sbatch job sees Slurm's variables too
  }

  if (visible_devices < 1)
    throw std::runtime_error("place_rank: rank " + std::to_string(placement.rank) + " sees no GPU" + visible_mask());
  if (visible_devices == 1) {
    placement.device = 0;  // its own GPU (srun --gpus-per-task=1), or the node's one GPU, shared
  } else if (placement.local_rank < visible_devices) {
    placement.device = placement.local_rank;
  } else {
    throw std::runtime_error("place_rank: rank " + std::to_string(placement.rank) + " is local rank " +
                             std::to_string(placement.local_rank) + " on its node, which shows only " +
                             std::to_string(visible_devices) + " GPUs" + visible_mask() +
                             ": start at most one process per GPU on each node");
  }
  return placement;
}

// ---- Task 2 -------------------------------------------------------------------------------------

ncclComm_t init_nccl_over_mpi(MPI_Comm comm, int device, std::chrono::milliseconds timeout,
                              const MakeUniqueId& make_id) {
  if (timeout.count() <= 0) throw std::invalid_argument("init_nccl_over_mpi: the timeout must be > 0");
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const std::string who = "init_nccl_over_mpi: rank " + std::to_string(rank) + " of " + std::to_string(size);
  // Rank 0 broadcasts whether it made the id, and the id, whatever happened. A blocking MPI_Bcast,
  // unlike the other collectives here: the contract says so, and a rank that plays the test's
  // missing rank calls MPI_Bcast, which an MPI_Ibcast would never match.
  IdMessage message;
  if (rank == 0) message.made = make_id(&message.id);
  mpi_check(MPI_Bcast(&message, static_cast<int>(sizeof message), MPI_BYTE, 0, comm), "MPI_Bcast");
  if (message.made != ncclSuccess)
    throw std::runtime_error(who + ": rank 0 could not make the NCCL id: " + ncclGetErrorString(message.made));
  const ncclUniqueId& id = message.id;
  const auto deadline = std::chrono::steady_clock::now() + timeout;

  const course::DeviceGuard on_device(device);
  ncclComm_t nccl = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // the init returns at once (ncclInProgress); we poll instead of blocking
  if (const ncclResult_t r = ncclCommInitRankConfig(&nccl, size, id, rank, &config);
      r != ncclSuccess && r != ncclInProgress) {
    if (nccl != nullptr) (void)ncclCommAbort(nccl);
    throw std::runtime_error(who + ": ncclCommInitRankConfig failed: " + ncclGetErrorString(r));
  }
  ncclResult_t state = ncclInProgress;
  while (true) {
    if (const ncclResult_t r = ncclCommGetAsyncError(nccl, &state); r != ncclSuccess) state = r;
    if (state != ncclInProgress) break;
    if (std::chrono::steady_clock::now() > deadline) {
      (void)ncclCommAbort(nccl);  // ends its threads; the ranks that did come see an error
      throw std::runtime_error(who + ": timed out after " + std::to_string(timeout.count()) +
                               " ms waiting for every rank to join the communicator (does every rank call "
                               "init_nccl_over_mpi?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (state != ncclSuccess) {
    (void)ncclCommAbort(nccl);
    throw std::runtime_error(who + ": joining the communicator failed: " + ncclGetErrorString(state));
  }
  return nccl;
}

// ---- Task 3 -------------------------------------------------------------------------------------

IpcAllReduce open_ipc_all_reduce(MPI_Comm comm, int device, std::size_t max_count) {
  if (max_count == 0) throw std::invalid_argument("open_ipc_all_reduce: max_count must be > 0");
  IpcAllReduce ipc;
  ipc.comm = comm;
  ipc.device = device;
  ipc.max_count = max_count;
  mpi_check(MPI_Comm_rank(comm, &ipc.rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &ipc.size), "MPI_Comm_size");
  if (ipc.size > kMaxRanks)
    throw std::runtime_error("open_ipc_all_reduce: " + std::to_string(ipc.size) + " processes, at most " +
                             std::to_string(kMaxRanks));

  const course::DeviceGuard on_device(device);
  CUDA_CHECK(cudaMalloc(&ipc.published, max_count * sizeof(float)));
  const unsigned flags = cudaEventInterprocess | cudaEventDisableTiming;  // interprocess needs no timing
  CUDA_CHECK(cudaEventCreateWithFlags(&ipc.published_ready, flags));
  CUDA_CHECK(cudaEventCreateWithFlags(&ipc.read_done, flags));

  struct Handles {
    cudaIpcMemHandle_t buffer;
    cudaIpcEventHandle_t published_ready;
    cudaIpcEventHandle_t read_done;
  };
  Handles mine{};
  CUDA_CHECK(cudaIpcGetMemHandle(&mine.buffer, ipc.published));
  CUDA_CHECK(cudaIpcGetEventHandle(&mine.published_ready, ipc.published_ready));
  CUDA_CHECK(cudaIpcGetEventHandle(&mine.read_done, ipc.read_done));
  std::vector<Handles> all(static_cast<std::size_t>(ipc.size));
  MPI_Request exchange = MPI_REQUEST_NULL;
  mpi_check(MPI_Iallgather(&mine, sizeof(Handles), MPI_BYTE, all.data(), sizeof(Handles), MPI_BYTE, comm, &exchange),
            "MPI_Iallgather");
  mpi_check(MPI_Wait(&exchange, MPI_STATUS_IGNORE), "MPI_Wait");

  for (int peer = 0; peer < ipc.size; ++peer) {
    if (peer == ipc.rank) {  // a process cannot open its own handles
      ipc.buffers.push_back(ipc.published);
      ipc.peer_published_ready.push_back(ipc.published_ready);
      ipc.peer_read_done.push_back(ipc.read_done);
      continue;
    }
    void* buffer = nullptr;
    CUDA_CHECK(cudaIpcOpenMemHandle(&buffer, all[peer].buffer, cudaIpcMemLazyEnablePeerAccess));
    ipc.buffers.push_back(static_cast<const float*>(buffer));
    cudaEvent_t event = nullptr;
    CUDA_CHECK(cudaIpcOpenEventHandle(&event, all[peer].published_ready));
    ipc.peer_published_ready.push_back(event);
    CUDA_CHECK(cudaIpcOpenEventHandle(&event, all[peer].read_done));
    ipc.peer_read_done.push_back(event);
  }
  return ipc;
}

void ipc_all_reduce(IpcAllReduce& ipc, const float* input, float* output, std::size_t count, cudaStream_t stream,
                    const PeerSum& sum) {
  if (count > ipc.max_count)
    throw std::invalid_argument("ipc_all_reduce: count " + std::to_string(count) + " is above max_count " +
                                std::to_string(ipc.max_count));
  if (count > 0 && (input == nullptr || output == nullptr))
    throw std::invalid_argument("ipc_all_reduce: a nullptr input or output with count > 0");
  if (count == 0) return;
  const course::DeviceGuard on_device(ipc.device);

  // Every peer has enqueued its read_done of the previous call: the waits below wait for THAT one.
  MPI_Request barrier = MPI_REQUEST_NULL;
  mpi_check(MPI_Ibarrier(ipc.comm, &barrier), "MPI_Ibarrier");
  mpi_check(MPI_Wait(&barrier, MPI_STATUS_IGNORE), "MPI_Wait");
  for (int peer = 0; peer < ipc.size; ++peer)
    if (peer != ipc.rank) CUDA_CHECK(cudaStreamWaitEvent(stream, ipc.peer_read_done[peer], 0));
  CUDA_CHECK(cudaMemcpyAsync(ipc.published, input, count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  CUDA_CHECK(cudaEventRecord(ipc.published_ready, stream));

  // Every peer has enqueued its published_ready of this call.
  mpi_check(MPI_Ibarrier(ipc.comm, &barrier), "MPI_Ibarrier");
  mpi_check(MPI_Wait(&barrier, MPI_STATUS_IGNORE), "MPI_Wait");
  PeerSources sources;
  sources.count = ipc.size;
  for (int peer = 0; peer < ipc.size; ++peer) {
    if (peer != ipc.rank) CUDA_CHECK(cudaStreamWaitEvent(stream, ipc.peer_published_ready[peer], 0));
    sources.data[peer] = ipc.buffers[peer];
  }
  sum(sources, output, count, stream);
  CUDA_CHECK(cudaEventRecord(ipc.read_done, stream));
}

void close_ipc_all_reduce(IpcAllReduce& ipc) {
  if (ipc.published == nullptr) return;
  const course::DeviceGuard on_device(ipc.device);
  CUDA_CHECK(cudaDeviceSynchronize());  // no queued sum still reads a peer's buffer
  for (int peer = 0; peer < ipc.size; ++peer) {
    if (peer == ipc.rank) continue;
    CUDA_CHECK(cudaIpcCloseMemHandle(const_cast<float*>(ipc.buffers[peer])));
    CUDA_CHECK(cudaEventDestroy(ipc.peer_published_ready[peer]));
    CUDA_CHECK(cudaEventDestroy(ipc.peer_read_done[peer]));
  }
  // Every peer has closed its view of our buffer: now it may go.
  mpi_check(MPI_Barrier(ipc.comm), "MPI_Barrier");
  CUDA_CHECK(cudaEventDestroy(ipc.published_ready));
  CUDA_CHECK(cudaEventDestroy(ipc.read_done));
  CUDA_CHECK(cudaFree(ipc.published));
  ipc.published = nullptr;
  ipc.published_ready = nullptr;
  ipc.read_done = nullptr;
  ipc.buffers.clear();
  ipc.peer_published_ready.clear();
  ipc.peer_read_done.clear();
}

// ---- Task 4 -------------------------------------------------------------------------------------

namespace {

// `word` in single quotes, each quote inside written as '"'"'.
std::string single_quoted(const std::string& word) {
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return quoted + "'";
}

bool is_two_digits_below(const std::string& text, std::size_t at, int limit) {
  const bool digits = text[at] >= '0' && text[at] <= '9' && text[at + 1] >= '0' && text[at + 1] <= '9';
  return digits && (text[at] - '0') * 10 + (text[at + 1] - '0') < limit;
}

}  // namespace

std::string render_job_script(const JobShape& shape) {
  const bool name_ok = !shape.job_name.empty() &&
                       shape.job_name.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == std::string::npos;
  if (!name_ok)
    throw std::invalid_argument("render_job_script: job name '" + shape.job_name +
                                "' is empty or has other characters than letters, digits, '-', '_' and '.'");
  if (shape.nodes < 1 || shape.gpus_per_node < 1)
    throw std::invalid_argument("render_job_script: " + std::to_string(shape.nodes) + " nodes of " +
                                std::to_string(shape.gpus_per_node) + " GPUs: both must be at least 1");
  const std::string& time = shape.time_limit;
  if (time.size() != 8 || time[2] != ':' || time[5] != ':' || !is_two_digits_below(time, 0, 100) ||
      !is_two_digits_below(time, 3, 60) || !is_two_digits_below(time, 6, 60))
    throw std::invalid_argument("render_job_script: time limit '" + time + "' is not HH:MM:SS");
  if (shape.program.empty()) throw std::invalid_argument("render_job_script: no program");
  std::string script = "#!/bin/bash\n";
  script += "#SBATCH --job-name=" + shape.job_name + "\n";
  script += "#SBATCH --nodes=" + std::to_string(shape.nodes) + "\n";
  script += "#SBATCH --ntasks-per-node=" + std::to_string(shape.gpus_per_node) + "\n";
  script += "#SBATCH --gpus-per-node=" + std::to_string(shape.gpus_per_node) + "\n";
  script += "#SBATCH --time=" + time + "\n";
  script += "#SBATCH --output=" + shape.job_name + "-%j.out\n";
  script += "srun " + single_quoted(shape.program);
  for (const std::string& argument : shape.arguments) script += " " + single_quoted(argument);
  return script + "\n";
}

}  // namespace lesson09
