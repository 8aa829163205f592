// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 10 benchmark, one process per GPU (meson test --benchmark starts it as mpirun -n 2), each
// figure beside its yardstick:
//  - the device-initiated Jacobi: microseconds per sweep across domain sizes, beside one GPU's time for
//    the whole grid (the faster of a plain sweep kernel and lesson 08's run_plain on PE 0's GPU alone),
//    the parallel efficiency t(1) / (P x t(P)), and lesson 08's overlapped schedule (its run_overlapped,
//    linked from the same build as this lesson's code: your lesson 08 beside your lesson 10, the
//    reference's beside the reference's) on the same two GPUs,
//    driven by rank 0's process alone while rank 1 waits in a barrier: lesson 08 is one process that
//    orders every GPU from the host. Targets: >= 95 % efficiency at 20480^2, and 1.3x fewer
//    microseconds per sweep than lesson 08 at the size where lesson 08's efficiency is lowest (where its
//    host ordering costs most, chosen from lesson 08's figures, not from lesson 10's);
//  - the device-initiated all-reduce from 8 B to 1 MiB beside NCCL's on the same GPUs, one NCCL rank per
//    process: plain, graphed (20 calls a CUDA graph) and graphed on NCCL's symmetric memory (its best
//    path, the ceiling), and the link's bandwidth (a peer copy) beside the bus bandwidth. Your calls are
//    timed launched one by one and graphed (20 calls a graph, replayed: right because 20 is even and
//    more than 2, README), each with its output poisoned before and checked after. Target: graphed,
//    faster than NCCL graphed from 8 B to 64 KiB. Every column is timed as nccl-tests times (calls
//    enqueued back to back, one wait, host clock), the slowest rank's time.
// Median and minimum of 7 repeats after a warm-up. NVLink multicast stays off: NVSHMEM_DISABLE_NVLS=1 and
// NCCL_NVLS_ENABLE=0 are set here, before either library starts. GB = 10^9 bytes.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"
#include "common/compare.h"
#include "common/device_guard.h"
#include "common/random.h"
#include "device_initiated.h"
#include "jacobi.h"  // lesson 08's contract: the host-ordered yardstick

namespace {

constexpr int kRepeats = 7, kSweeps = 200;
constexpr double kTargetEfficiency = 0.95;     // at 20480^2 on 2 GPUs, as lesson 08's target
constexpr double kTargetOverLesson08 = 1.3;    // lesson 08's us per sweep / lesson 10's, where 08 costs most
constexpr std::size_t kFasterUpTo = 64 << 10;  // the all-reduce beats NCCL graphed from 8 B to this
constexpr int kCallsPerGraph = 20, kCalls = 100;
// Lesson 10's calls keep the numbers they were captured with: a graph of them replays right only when
// the halves of the inbox still alternate and no call finds its own number from the last replay (README).
static_assert(kCallsPerGraph % 2 == 0 && kCallsPerGraph >= 4, "a graph of lesson 10's calls: an even number, >= 4");

// One GPU's yardstick: a plain sweep of the whole grid, one launch per sweep.
__global__ void sweep_whole(const float* current, float* next, std::size_t ny, std::size_t nx) {
  for (std::size_t y = 1 + blockIdx.x; y + 1 < ny; y += gridDim.x)
    for (std::size_t x = 1 + threadIdx.x; x + 1 < nx; x += blockDim.x)
      next[y * nx + x] = 0.25f * ((current[(y - 1) * nx + x] + current[(y + 1) * nx + x]) +
                                  (current[y * nx + x - 1] + current[y * nx + x + 1]));
}

struct Stats {
  double median = 0, minimum = 0;  // < 0: not measured
};
Stats stats_of(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

// The slowest rank's figure: a collective is done when its last rank is.
double slowest(double value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return value;
}

// Rank 0's ordinal of rank 1's GPU, or -1 (with the reason in `why`) when rank 0 cannot drive it: one
// PE, PEs on different nodes, rank 1's GPU hidden from rank 0 (CUDA_VISIBLE_DEVICES, srun
// --gpus-per-task=1) or the same GPU as rank 0's. Collective.
int second_gpu_of_rank_0(const lesson10::Session& session, std::string& why) {
  if (session.pes < 2) {
    why = "needs 2 PEs";
    return -1;
  }
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, session.pe, MPI_INFO_NULL, &node);
  int on_node = 0;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  int all_on_node = on_node == session.pes ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &all_on_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  char bus[32] = {};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, session.device));
  MPI_Bcast(bus, sizeof bus, MPI_CHAR, 1, MPI_COMM_WORLD);
  int device = -1;
  if (!all_on_node) {
    why = "the PEs are on different nodes";
  } else if (session.pe == 0 && cudaDeviceGetByPCIBusId(&device, bus) != cudaSuccess) {
    (void)cudaGetLastError();
    device = -1;
    why = "rank 0 does not see rank 1's GPU (CUDA_VISIBLE_DEVICES)";
  } else if (session.pe == 0 && device == session.device) {
    device = -1;
    why = "both PEs are on one GPU";
  }
  return device;
}

// A plate whose top edge is held at 1, everything else starting at 0.5 (lesson 08's benchmark's grid).
std::vector<float> plate(std::size_t n) {
  std::vector<float> grid(n * n, 0.5f);
  std::fill(grid.begin(), grid.begin() + static_cast<std::ptrdiff_t>(n), 1.0f);
  return grid;
}

// Microseconds per sweep of `run` (a call of kSweeps sweeps that returns once they are done), host clock,
// after one untimed call. Runs on the calling process only.
Stats per_sweep_here(const std::function<void()>& run) {
  run();
  std::vector<double> times;
  for (int r = 0; r < kRepeats; ++r) {
    const double start = MPI_Wtime();
    run();
    times.push_back((MPI_Wtime() - start) * 1e6 / kSweeps);
  }
  return stats_of(times);
}

// One GPU's time for the whole grid with the plain kernel, us per sweep.
Stats one_gpu_kernel(int device, std::size_t n, const std::vector<float>& grid) {
  const course::DeviceGuard on_device(device);
  course::DeviceBuffer<float> a(device, n * n), b(device, n * n);
  CUDA_CHECK(cudaMemcpy(a.data(), grid.data(), a.bytes(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b.data(), grid.data(), b.bytes(), cudaMemcpyHostToDevice));
  const course::Stream stream(device);
  return per_sweep_here([&] {
    for (int s = 0; s < kSweeps; ++s)
      sweep_whole<<<1024, 256, 0, stream>>>(s % 2 ? b.data() : a.data(), s % 2 ? a.data() : b.data(), n, n);
    CUDA_CHECK_LAUNCH();
    stream.synchronize();
  });
}

// Lesson 08's schedule `run` on `devices`, us per sweep; {-1, -1} and the reason when it throws (your
// lesson 08 not done yet, in bench-10).
Stats lesson08_schedule(const std::vector<int>& devices, std::size_t n, const std::vector<float>& grid,
                        void (*run)(lesson08::Decomposition&, int), std::string& why) {
  try {
    lesson08::Decomposition decomposition = lesson08::decompose(devices, n, n, grid);
    return per_sweep_here([&] { run(decomposition, kSweeps); });
  } catch (const std::exception& error) {
    why = std::string("lesson 08 threw: ") + error.what();
    return {-1, -1};
  }
}

// GB/s of one peer copy of 256 MiB from `from` to `to`, one direction (CUDA events, median of 10).
double link_bandwidth(int from, int to) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  const course::DeviceGuard on_device(from);
  const cudaError_t enabled = cudaDeviceEnablePeerAccess(to, 0);
  if (enabled == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // already on: fine
  } else {
    CUDA_CHECK(enabled);
  }
  course::DeviceBuffer<unsigned char> source(from, kBytes), destination(to, kBytes);
  const course::Stream stream(from);
  cudaEvent_t begin, end;
  CUDA_CHECK(cudaEventCreate(&begin));
  CUDA_CHECK(cudaEventCreate(&end));
  std::vector<double> ms;
  for (int r = 0; r <= 10; ++r) {
    CUDA_CHECK(cudaEventRecord(begin, stream));
    CUDA_CHECK(cudaMemcpyPeerAsync(destination.data(), to, source.data(), from, kBytes, stream));
    CUDA_CHECK(cudaEventRecord(end, stream));
    CUDA_CHECK(cudaEventSynchronize(end));
    float elapsed = 0;
    CUDA_CHECK(cudaEventElapsedTime(&elapsed, begin, end));
    if (r > 0) ms.push_back(elapsed);  // the first is the warm-up
  }
  CUDA_CHECK(cudaEventDestroy(begin));
  CUDA_CHECK(cudaEventDestroy(end));
  return kBytes / (stats_of(ms).median * 1e6);
}

void print_us(const Stats& s) {
  if (s.median < 0)
    std::printf(" %19s", "-");
  else
    std::printf(" %9.2f %9.2f", s.median, s.minimum);
}

void jacobi(const lesson10::Session& session, std::vector<std::string>& targets) {
  std::string why_not;
  int second = second_gpu_of_rank_0(session, why_not);
  MPI_Bcast(&second, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (session.pe == 0) {
    const std::string lesson08_gpus =
        second < 0 ? "not measured: " + why_not
                   : "GPUs {" + std::to_string(session.device) + ", " + std::to_string(second) + "} driven by rank 0";
    std::printf(
        "Jacobi, %d PEs, %d sweeps a call: us per sweep (median, min); one GPU: the faster of a plain "
        "kernel and lesson 08's run_plain on GPU %d alone; lesson 08: its run_overlapped (%s)\n",
        session.pes, kSweeps, session.device, lesson08_gpus.c_str());
    std::printf("  %8s %19s %19s %7s %19s %7s %9s\n", "size", "lesson 10", "one GPU", "eff.", "lesson 08 overlap",
                "eff.", "08 / 10");
  }
  double efficiency_20480 = -1, worst_08_efficiency = 2, ratio_where_08_worst = -1;
  std::size_t worst_08_size = 0;
  std::string why_08 = why_not;
  for (const std::size_t n : {std::size_t{1024}, std::size_t{4096}, std::size_t{8192}, std::size_t{20480}}) {
    const std::vector<float> grid = plate(n);
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
    if (session.pe == 0) {  // the yardsticks, while the other ranks wait in the barrier below
      Stats one = one_gpu_kernel(session.device, n, grid);
      std::string ignored;
      const Stats plain08 = lesson08_schedule({session.device}, n, grid, lesson08::run_plain, ignored);
      if (plain08.median > 0 && plain08.median < one.median) one = plain08;
      Stats overlapped08{-1, -1};
      if (second >= 0)
        overlapped08 = lesson08_schedule({session.device, second}, n, grid, lesson08::run_overlapped, why_08);
      const double efficiency = one.median / (session.pes * many.median);
      std::printf("  %6zu^2", n);
      print_us(many);
      print_us(one);
      std::printf(" %6.1f%%", 100 * efficiency);
      print_us(overlapped08);
      if (overlapped08.median > 0) {
        const double efficiency08 = one.median / (2 * overlapped08.median);
        const double ratio = overlapped08.median / many.median;
        std::printf(" %6.1f%% %8.2fx\n", 100 * efficiency08, ratio);
        if (efficiency08 < worst_08_efficiency) {
          worst_08_efficiency = efficiency08;
          worst_08_size = n;
          ratio_where_08_worst = ratio;
        }
      } else {
        std::printf(" %7s %9s\n", "-", "-");
      }
      if (n == 20480 && session.pes == 2) efficiency_20480 = efficiency;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (session.pe != 0) return;
  char line[320];
  if (efficiency_20480 >= 0)
    std::snprintf(line, sizeof line, "%s: parallel efficiency at 20480^2 on 2 GPUs %.1f %% (target >= %.0f %%)",
                  efficiency_20480 >= kTargetEfficiency ? "PASS" : "FAIL", 100 * efficiency_20480,
                  100 * kTargetEfficiency);
  else
    std::snprintf(line, sizeof line, "not measured: parallel efficiency at 20480^2 on 2 GPUs (%d PE%s)", session.pes,
                  session.pes == 1 ? "" : "s, needs exactly 2");
  targets.push_back(line);
  if (ratio_where_08_worst > 0)
    std::snprintf(line, sizeof line,
                  "%s: %.2fx fewer us per sweep than lesson 08's overlapped schedule at %zu^2, where its efficiency is "
                  "lowest (%.1f %%) (target >= %.1fx)",
                  ratio_where_08_worst >= kTargetOverLesson08 ? "PASS" : "FAIL", ratio_where_08_worst, worst_08_size,
                  100 * worst_08_efficiency, kTargetOverLesson08);
  else
    std::snprintf(line, sizeof line, "not measured: against lesson 08's overlapped schedule (%s)", why_08.c_str());
  targets.push_back(line);
}

// One NCCL rank per process, over the MPI-broadcast id (lesson 09).
ncclComm_t nccl_rank(const lesson10::Session& session) {
  ncclUniqueId id{};
  if (session.pe == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  const course::DeviceGuard on_device(session.device);
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRank(&comm, session.pes, id, session.pe));
  return comm;
}

// us per call: `enqueue` enqueues `calls` calls on `stream`, back to back; one wait; the slowest rank.
Stats per_call(const std::function<void()>& enqueue, int calls, const course::Stream& stream) {
  enqueue();  // warm-up
  stream.synchronize();
  std::vector<double> times;
  for (int r = 0; r < kRepeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    enqueue();
    stream.synchronize();
    times.push_back(slowest((MPI_Wtime() - start) * 1e6 / calls));
  }
  return stats_of(times);
}

// A CUDA graph of kCallsPerGraph calls of `call`, captured on `stream`. A call that throws ends the
// capture (the stream can be used again) and the exception goes on.
struct Graph {
  cudaGraphExec_t exec = nullptr;
  Graph(const std::function<void()>& call, cudaStream_t stream) {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      for (int c = 0; c < kCallsPerGraph; ++c) call();
    } catch (...) {
      (void)cudaStreamEndCapture(stream, &graph);
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      throw;
    }
    cudaError_t made = cudaStreamEndCapture(stream, &graph);  // the capture ends, made or not
    if (made == cudaSuccess) {
      made = cudaGraphInstantiate(&exec, graph, 0);
      (void)cudaGraphDestroy(graph);
    }
    if (made != cudaSuccess) (void)cudaGetLastError();  // nothing of it left for a later check
    CUDA_CHECK(made);
  }
  ~Graph() { (void)cudaGraphExecDestroy(exec); }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
};

// The float whose four bytes are all `byte`: how cudaMemset fills an input (0x3C: 0.0115, not zero).
float float_of_bytes(unsigned char byte) {
  const std::uint32_t bits = 0x01010101u * byte;
  float value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// True on every rank when every rank's `output` holds the sum of the PEs' inputs (each input all
// `value`) added in PE order in float, in every one of its first `count` floats. Collective.
bool sums_right(const lesson10::Session& session, const float* output, std::size_t count, float value) {
  float sum = value;
  for (int p = 1; p < session.pes; ++p) sum += value;
  const std::vector<float> expected(count, sum);
  std::vector<float> got(count);
  CUDA_CHECK(cudaMemcpy(got.data(), output, count * sizeof(float), cudaMemcpyDeviceToHost));
  int right = course::compare_exact(got.data(), expected.data(), count).ok() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &right, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return right == 1;
}

void all_reduce(const lesson10::Session& session, int second, std::vector<std::string>& targets) {
  constexpr std::size_t kMaxCount = std::size_t{1} << 18;  // 1 MiB of floats
  const course::DeviceGuard on_device(session.device);
  double link = -1;
  if (session.pe == 0 && second >= 0) link = link_bandwidth(session.device, second);
  lesson10::AllReduceWorkspace workspace = lesson10::open_all_reduce(session, kMaxCount);
  course::DeviceBuffer<float> input(session.device, kMaxCount), output(session.device, kMaxCount);
  const course::Stream stream(session.device);
  constexpr unsigned char kInput = 0x3C, kOtherInput = 0x3D;  // every input float: 0.0115 (0.0463 for one check)
  CUDA_CHECK(cudaMemsetAsync(input.data(), kInput, input.bytes(), stream));
  ncclComm_t comm = nccl_rank(session);
  float* symmetric = nullptr;  // NCCL's symmetric memory: input then output, one window (NCCL 2.27 and later)
  std::string symmetric_note = "built against an NCCL older than 2.27";
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  ncclWindow_t window = nullptr;
  int version = 0;
  NCCL_CHECK(ncclGetVersion(&version));
  symmetric_note = version < NCCL_VERSION(2, 27, 0) ? "the NCCL library loaded is older than 2.27" : "";
  if (symmetric_note.empty()) {
    void* memory = nullptr;
    NCCL_CHECK(ncclMemAlloc(&memory, 2 * kMaxCount * sizeof(float)));
    symmetric = static_cast<float*>(memory);
    CUDA_CHECK(cudaMemset(symmetric, 0x3C, 2 * kMaxCount * sizeof(float)));
    CUDA_CHECK(cudaDeviceSynchronize());
    NCCL_CHECK(
        ncclCommWindowRegister(comm, symmetric, 2 * kMaxCount * sizeof(float), &window, NCCL_WIN_COLL_SYMMETRIC));
  }
#endif
  if (session.pe == 0) {
    std::printf(
        "\nAll-reduce, %d PEs, out of place: us per call (median, min), %d calls a repeat, the slowest rank; "
        "graphed: %d calls a CUDA graph, replayed; link (rank 0's peer copy, one direction): ",
        session.pes, kCalls, kCallsPerGraph);
    if (link > 0)
      std::printf("%.0f GB/s\n", link);
    else
      std::printf("not measured\n");
    if (symmetric == nullptr) std::printf("  NCCL symmetric, graphed: not measured (%s)\n", symmetric_note.c_str());
    std::printf("  %10s %19s %19s %8s %19s %19s %19s %9s\n", "size", "lesson 10", "lesson 10 graphed", "busbw", "NCCL",
                "NCCL graphed", "NCCL symm+graph", "g / g");
  }
  bool faster = true, right = true;
  std::string slower_at, wrong_at, graph_note;  // graph_note: why your calls could not be graphed
  for (std::size_t bytes = 8; bytes <= kMaxCount * sizeof(float); bytes *= 2) {
    const std::size_t count = bytes / sizeof(float);
    const auto ours_call = [&] { lesson10::device_all_reduce(workspace, input.data(), output.data(), count, stream); };
    course::poison_device(output.data(), output.bytes());  // NaN: nothing the calls do not write passes
    const Stats ours = per_call(
        [&] {
          for (int c = 0; c < kCalls; ++c) ours_call();
        },
        kCalls, stream);
    bool ours_right = sums_right(session, output.data(), count, float_of_bytes(kInput));
    // The same calls captured into a graph and replayed: right as they are, because a graph holds an
    // even number (>= 4) of calls (README: Measure).
    Stats ours_graphed{-1, -1};
    if (graph_note.empty()) {
      course::poison_device(output.data(), output.bytes());
      const std::uint64_t calls_before = workspace.calls;
      std::unique_ptr<Graph> graph;
      int captured = 1;
      try {
        graph = std::make_unique<Graph>(ours_call, stream);
      } catch (const std::exception& error) {
        captured = 0;
        graph_note = std::string("the capture failed: ") + error.what();
      }
      MPI_Allreduce(MPI_IN_PLACE, &captured, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (captured == 1) {
        ours_graphed = per_call(
            [&] {
              for (int g = 0; g < kCalls / kCallsPerGraph; ++g) CUDA_CHECK(cudaGraphLaunch(graph->exec, stream));
            },
            kCalls, stream);
        ours_right = sums_right(session, output.data(), count, float_of_bytes(kInput)) && ours_right;
        // One more replay with other inputs: a replay that took the words of the last one as new would
        // give the old sums.
        CUDA_CHECK(cudaMemsetAsync(input.data(), kOtherInput, input.bytes(), stream));
        course::poison_device(output.data(), output.bytes());
        CUDA_CHECK(cudaGraphLaunch(graph->exec, stream));
        stream.synchronize();
        ours_right = sums_right(session, output.data(), count, float_of_bytes(kOtherInput)) && ours_right;
        CUDA_CHECK(cudaMemsetAsync(input.data(), kInput, input.bytes(), stream));
      } else {
        // No PE runs its graph: the calls captured never happened, on every PE alike.
        workspace.calls = calls_before;
        if (graph_note.empty()) graph_note = "another PE could not capture its calls";
      }
    }
    if (!ours_right && right) {
      right = false;
      wrong_at = std::to_string(bytes) + " B";
    }
    const auto nccl_on = [&](const float* from, float* to) {
      NCCL_CHECK(ncclAllReduce(from, to, count, ncclFloat, ncclSum, comm, stream));
    };
    const Stats plain = per_call(
        [&] {
          for (int c = 0; c < kCalls; ++c) nccl_on(input.data(), output.data());
        },
        kCalls, stream);
    Stats graphed, symmetric_graphed{-1, -1};
    {
      const Graph graph([&] { nccl_on(input.data(), output.data()); }, stream);
      graphed = per_call(
          [&] {
            for (int g = 0; g < kCalls / kCallsPerGraph; ++g) CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));
          },
          kCalls, stream);
    }
    if (symmetric != nullptr) {
      const Graph graph([&] { nccl_on(symmetric, symmetric + kMaxCount); }, stream);
      symmetric_graphed = per_call(
          [&] {
            for (int g = 0; g < kCalls / kCallsPerGraph; ++g) CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));
          },
          kCalls, stream);
    }
    // Launch cost against launch cost: your graphed calls against NCCL's (your plain ones where they
    // could not be graphed).
    const Stats& best = ours_graphed.median > 0 ? ours_graphed : ours;
    const double busbw = 2.0 * (session.pes - 1) / session.pes * bytes / (best.median * 1e3);  // GB/s
    if (bytes <= kFasterUpTo && !(best.median < graphed.median)) {
      faster = false;
      if (slower_at.empty()) slower_at = std::to_string(bytes) + " B";
    }
    if (session.pe == 0) {
      std::printf("  %8zu B", bytes);
      print_us(ours);
      print_us(ours_graphed);
      std::printf(" %8.2f", busbw);
      print_us(plain);
      print_us(graphed);
      print_us(symmetric_graphed);
      std::printf(" %8.2fx%s\n", graphed.median / best.median, ours_right ? "" : "  WRONG SUMS");
    }
  }
  if (session.pe == 0) {
    if (!graph_note.empty()) std::printf("  lesson 10 graphed: not measured: %s\n", graph_note.c_str());
    char line[320];
    if (!right)
      std::snprintf(line, sizeof line, "FAIL: the all-reduce's sums are wrong (first at %s): nothing timed counts",
                    wrong_at.c_str());
    else if (session.pes != 2)
      std::snprintf(line, sizeof line, "not measured: the all-reduce against NCCL graphed on 2 GPUs (%d PE%s)",
                    session.pes, session.pes == 1 ? "" : "s, needs exactly 2");
    else
      std::snprintf(line, sizeof line,
                    "%s: the all-reduce%s faster than NCCL graphed at every size from 8 B to 64 KiB%s",
                    faster ? "PASS" : "FAIL", graph_note.empty() ? " graphed" : " (graphed where it could be: above)",
                    faster ? "" : (" (not at " + slower_at + ")").c_str());
    targets.push_back(line);
  }
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  if (symmetric != nullptr) {
    NCCL_CHECK(ncclCommWindowDeregister(comm, window));
    NCCL_CHECK(ncclMemFree(symmetric));
  }
#endif
  NCCL_CHECK(ncclCommDestroy(comm));
  lesson10::close_all_reduce(workspace);
}

}  // namespace

int main(int argc, char** argv) {
  // Before NVSHMEM and NCCL read their environment: the course never uses NVLink multicast.
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  // The 20480^2 grid's two buffers take 1.68 GB of symmetric heap per PE on two PEs; NVSHMEM's default
  // heap is 1 GiB. 4 GiB unless you asked for another size.
  setenv("NVSHMEM_SYMMETRIC_SIZE", "4294967296", 0);
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
  try {
    const lesson10::Session session = lesson10::start_nvshmem(MPI_COMM_WORLD, local_rank % visible);
    CUDA_CHECK(cudaSetDevice(session.device));
    if (session.pe == 0) {
      cudaDeviceProp prop{};
      CUDA_CHECK(cudaGetDeviceProperties(&prop, session.device));
      std::printf("Lesson 10 benchmark: %d PE%s (%s). GB = 10^9 bytes.\n\n", session.pes, session.pes == 1 ? "" : "s",
                  prop.name);
    }
    std::vector<std::string> targets;
    jacobi(session, targets);
    std::string ignored;
    const int second = second_gpu_of_rank_0(session, ignored);
    all_reduce(session, second, targets);
    if (session.pe == 0) {
      std::printf("\nTargets:\n");
      for (const std::string& line : targets) std::printf("  %s\n", line.c_str());
    }
    lesson10::stop_nvshmem(session);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench-10, rank %d: %s\n", rank, error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
