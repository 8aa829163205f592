// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 07 benchmark: your ring, your one-shot (ordered by events), your one-kernel and your LL
// one-shot (each plain and replayed from a CUDA graph), your dispatcher (with the limits it
// measured) and NCCL's all-reduce (plain, from a CUDA graph, and on NCCL's symmetric memory where
// the installed NCCL has it, graphed), side by side, in place, for 8 B to 1 GiB per worker, timed
// as nccl-tests times (calls enqueued back to back, one wait, host clock; a graph holds several
// calls; below 1 MiB the best of three such timings; the dispatcher timed in turns with the best
// of your four, the best of five each) on every GPU count this machine has. The ring's smallest
// sizes show its latency, 2 (W - 1) dependent steps; at 8 B and 64 KiB the host's time to enqueue
// a call is printed beside the time per call (where they are close, the CPU sets the pace). Then
// PASS/FAIL lines for the lesson's targets: the ring within 80% of NCCL's busbw at 64 MiB and
// above; at 64 KiB and below the one-kernel and the LL one-shot faster than plain NCCL, and the
// graphed LL one-shot faster than NCCL graphed on its symmetric memory and, on two GPUs, at most
// 4 us at 8 B (all need distinct GPUs); the dispatcher within 10% of the best of your four at
// every size, from those turns; and, on one GPU, the ring on {0, 0, 0, 0} at 256 MiB and above
// within 80% of the device's copy speed for the bytes it moves.
// Run it with: meson test -C build --benchmark --suite 07-all-reduce --verbose
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "all_reduce.h"
#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "common/programs.h"
#include "common/timer.h"

using namespace lesson07;

namespace {

constexpr std::size_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
// The largest size per worker: 1 GiB, or the first argument in MiB (`bench-07 1` stops at 1 MiB:
// the small-message rows in seconds instead of a minute).
std::size_t kLargest = kGiB;

int iterations_for(std::size_t bytes) {
  return bytes >= 64 * kMiB ? 10 : bytes >= kMiB ? 50 : 200;
}

// One row of the table: seconds per call of each algorithm (0: not measured).
struct Row {
  std::size_t bytes = 0;
  double ring = 0, one_shot = 0, one_kernel = 0, one_kernel_graphed = 0, ll_one_shot = 0, ll_graphed = 0;
  // The dispatcher, timed in turns with the best of your four (time_in_turns_with_the_best), and that
  // best one's time from the same turns: the dispatcher's target compares these two.
  double dispatcher = 0, best_in_turns = 0;
  const char* best_name = "";
  double nccl = 0, nccl_graphed = 0, nccl_symmetric = 0;
};

// The best of `timing`'s results: three of them below 1 MiB, where a call of a few us that the host
// paces varies by 10-20% from one timing to the next (the best is the least disturbed), one above.
double best_of(std::size_t bytes, const std::function<double()>& timing) {
  double best = timing();
  for (int t = 1; t < (bytes < kMiB ? 3 : 1); ++t) best = std::min(best, timing());
  return best;
}

// How many calls one graph holds: enough that one replay's host cost is spread thin.
int calls_per_graph(std::size_t bytes) {
  return bytes >= 64 * kMiB ? 1 : bytes >= kMiB ? 5 : 20;
}

// NCCL's symmetric kernels run on buffers that every rank allocated with ncclMemAlloc and
// registered together as a symmetric window (NCCL 2.27 and later). Empty: why not measured.
std::string symmetric_unavailable() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version < NCCL_VERSION(2, 27, 0))
    return "the NCCL library loaded is older than 2.27";
  // NVLink multicast (NVLS) would be one of NCCL's choices for symmetric memory on some systems;
  // this course never uses it (the GPU hosts are shared), so the column needs it switched off.
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  if (nvls == nullptr || std::strcmp(nvls, "0") != 0)
    return "NCCL_NVLS_ENABLE is not 0 (this course never uses multicast)";
  return "";
#else
  return "built against an NCCL older than 2.27";
#endif
}

struct Setup {
  std::vector<int> devices;
  AllReduceWorkspace workspace;
  std::vector<course::DeviceBuffer<float>> memory;
  std::vector<float*> buffers;
  std::vector<ncclComm_t> comms;  // empty unless every device is distinct
  std::vector<float*> symmetric;  // ncclMemAlloc'd buffers, one per rank, registered as a window (or empty)
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  std::vector<ncclWindow_t> windows;
#endif
  std::string symmetric_note;  // why symmetric is empty

  explicit Setup(const std::vector<int>& devices_) : devices(devices_), workspace(devices_, kLargest / sizeof(float)) {
    for (const int d : devices) {
      memory.emplace_back(d, kLargest / sizeof(float));
      buffers.push_back(memory.back().data());
      const course::DeviceGuard on_device(d);
      CUDA_CHECK(cudaMemset(buffers.back(), 0x3C, kLargest));  // floats of 0.0115, not zeros
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    std::vector<int> sorted = devices;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) {
      comms.resize(devices.size());
      NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()));
      symmetric_note = symmetric_unavailable();
      if (symmetric_note.empty()) make_symmetric_buffers();
    } else {
      symmetric_note = "needs distinct GPUs";
    }
  }
  ~Setup() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    if (!windows.empty()) {
      (void)ncclGroupStart();
      for (std::size_t k = 0; k < comms.size(); ++k) (void)ncclCommWindowDeregister(comms[k], windows[k]);
      (void)ncclGroupEnd();
    }
    for (std::size_t k = 0; k < symmetric.size(); ++k) {
      const course::DeviceGuard on_device(devices[k]);
      (void)ncclMemFree(symmetric[k]);
    }
#endif
    for (ncclComm_t comm : comms) (void)ncclCommDestroy(comm);
  }
  void make_symmetric_buffers() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    for (std::size_t k = 0; k < comms.size(); ++k) {
      const course::DeviceGuard on_device(devices[k]);
      void* memory = nullptr;
      NCCL_CHECK(ncclMemAlloc(&memory, kLargest));
      symmetric.push_back(static_cast<float*>(memory));
      CUDA_CHECK(cudaMemset(memory, 0x3C, kLargest));
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    windows.resize(comms.size());
    NCCL_CHECK(ncclGroupStart());  // a window is registered by every rank together
    for (std::size_t k = 0; k < comms.size(); ++k)
      NCCL_CHECK(ncclCommWindowRegister(comms[k], symmetric[k], kLargest, &windows[k], NCCL_WIN_COLL_SYMMETRIC));
    NCCL_CHECK(ncclGroupEnd());
#endif
  }
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  void wait() const {
    for (const Worker& w : workspace.workers) w.stream.synchronize();
  }
  void nccl_all_reduce(std::size_t count, const std::vector<float*>& on) {
    NCCL_CHECK(ncclGroupStart());
    for (std::size_t k = 0; k < comms.size(); ++k) {
      const course::DeviceGuard on_device(devices[k]);
      NCCL_CHECK(ncclAllReduce(on[k], on[k], count, ncclFloat, ncclSum, comms[k], workspace.workers[k].stream));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  // Seconds per call of `call`, the best of best_of's timings.
  double time(const std::function<void()>& call, std::size_t bytes) {
    return best_of(bytes, [&] { return time_once(call, bytes); });
  }
  // One timing of `call`: a warm-up, then iterations_for(bytes) calls back to back and one wait.
  double time_once(const std::function<void()>& call, std::size_t bytes) {
    return course::seconds_per_call(
        call, [this] { wait(); }, 3, iterations_for(bytes));
  }
  // The same for `call` captured calls_per_graph(bytes) times into one graph and replayed.
  double time_graphed(const std::function<void()>& call, std::size_t bytes) {
    const int calls = calls_per_graph(bytes);
    CapturedCalls graph(workspace, call, calls);
    const int replays = std::max(2, iterations_for(bytes) / calls);
    return best_of(bytes, [&] {
      return course::seconds_per_call([&] { graph.launch(); }, [this] { synchronize(workspace); }, 2, replays) / calls;
    });
  }
};

std::string show(const std::vector<int>& devices) {
  std::string text = "{";
  for (std::size_t k = 0; k < devices.size(); ++k) text += (k ? ", " : "") + std::to_string(devices[k]);
  return text + "}";
}

void print_time(double seconds) {
  if (seconds <= 0)
    std::printf(" %10s", "-");
  else
    std::printf(" %10.1f", seconds * 1e6);
}

// One of your four algorithms at one size: its name, the table's time for it, and one call.
struct Candidate {
  const char* name;
  double seconds;
  std::function<void()> call;
};

// The dispatcher against the best of your four at this size (the fastest in the table), timed in
// turns: five rounds of one timing of each, the best of each kept, into row.dispatcher and
// row.best_in_turns. Two timings of a call of a few us taken apart differ by 10-20% as the host's
// pace drifts (the table's columns show it), more than the 10% the target allows; in turns, the
// drift falls on both alike. The dispatcher that picks the best algorithm runs the same kernels and
// differs by its choice alone.
void time_in_turns_with_the_best(Setup& s, const std::vector<Candidate>& yours, const std::function<void()>& dispatcher,
                                 Row& row) {
  const Candidate* best = &yours.front();
  for (const Candidate& c : yours)
    if (c.seconds > 0 && c.seconds < best->seconds) best = &c;
  row.dispatcher = row.best_in_turns = std::numeric_limits<double>::infinity();
  for (int round = 0; round < (row.bytes < kMiB ? 5 : 2); ++round) {
    row.dispatcher = std::min(row.dispatcher, s.time_once(dispatcher, row.bytes));
    row.best_in_turns = std::min(row.best_in_turns, s.time_once(best->call, row.bytes));
  }
  row.best_name = best->name;
}

// The table for one list of workers; returns its rows.
std::vector<Row> sweep(Setup& s) {
  const int w = s.workspace.size();
  std::vector<std::size_t> counts;
  for (std::size_t bytes = 8; bytes <= kLargest; bytes *= 2) counts.push_back(bytes / sizeof(float));
  // As many calls a timing as the table's own from 1 MiB to 64 MiB (iterations_for): on four H200s, 10
  // calls of the ring at 16 MiB, whose pace its host's enqueues set, read no faster than the one-kernel's
  // 173 us, where 50 read 134 to 166 us; the limits it measured then picked the slower of the two.
  (void)measure_crossover(s.workspace, s.buffers, counts, 3, iterations_for(kMiB));
  const Cost ring = ring_cost(1.0, w), one_shot = one_shot_cost(1.0, w);
  std::printf(
      "\n%d workers on GPUs %s: the ring receives %.3f x S per worker in %d dependent steps, the one-shot, "
      "the one-kernel and the LL one-shot %.0f x S in %d (the LL one-shot's words carry twice that).\n"
      "Measured by your measure_crossover: ",
      w, show(s.devices).c_str(), ring.bytes_per_worker, ring.dependent_steps, one_shot.bytes_per_worker,
      one_shot.dependent_steps);
  const auto label = [](std::size_t count) {
    return count == kRingNeverWins ? std::string("never") : course::size_label(count * sizeof(float));
  };
  std::printf("the ring from %s on, the LL one-shot below %s, the one-kernel below %s.\n",
              label(s.workspace.crossover_count).c_str(), label(s.workspace.ll_one_shot_below).c_str(),
              label(s.workspace.one_kernel_below).c_str());
  std::printf(
      "Time per call in us (graphed: %d calls per graph below 1 MiB, 5 below 64 MiB, then 1); NCCL on "
      "its symmetric memory, graphed: %s\n",
      calls_per_graph(0), s.symmetric.empty() ? ("not measured: " + s.symmetric_note).c_str() : "measured");
  std::printf("%9s | %10s %10s %10s %10s %11s %11s %10s | %10s %10s %10s\n", "", "ring", "one-shot", "one-kernel",
              "one-kernel", "LL one-shot", "LL one-shot", "dispatcher", "NCCL", "NCCL", "NCCL");
  std::printf("%9s | %10s %10s %10s %10s %11s %11s %10s | %10s %10s %10s\n", "size", "(task 1)", "(task 3)", "(task 4)",
              "graphed", "(task 5)", "graphed", "(task 6)", "", "graphed", "symm+graph");
  std::vector<Row> rows;
  for (const std::size_t count : counts) {
    Row row;
    row.bytes = count * sizeof(float);
    const auto ring = [&] { ring_all_reduce(s.workspace, s.buffers, count); };
    const auto one_shot = [&] { one_shot_all_reduce(s.workspace, s.buffers, count); };
    const auto one_kernel = [&] { one_kernel_all_reduce(s.workspace, s.buffers, count); };
    const auto ll_one_shot = [&] { ll_one_shot_all_reduce(s.workspace, s.buffers, count); };
    row.ring = s.time(ring, row.bytes);
    row.one_shot = s.time(one_shot, row.bytes);
    row.one_kernel = s.time(one_kernel, row.bytes);
    row.one_kernel_graphed = s.time_graphed(one_kernel, row.bytes);
    if (count <= s.workspace.ll_max_count) {
      row.ll_one_shot = s.time(ll_one_shot, row.bytes);
      row.ll_graphed = s.time_graphed(ll_one_shot, row.bytes);
    }
    time_in_turns_with_the_best(
        s,
        {{"ring", row.ring, ring},
         {"one-shot", row.one_shot, one_shot},
         {"one-kernel", row.one_kernel, one_kernel},
         {"LL one-shot", row.ll_one_shot, ll_one_shot}},
        [&] { all_reduce(s.workspace, s.buffers, count); }, row);
    if (!s.comms.empty()) {
      row.nccl = s.time([&] { s.nccl_all_reduce(count, s.buffers); }, row.bytes);
      row.nccl_graphed = s.time_graphed([&] { s.nccl_all_reduce(count, s.buffers); }, row.bytes);
    }
    if (!s.symmetric.empty())
      row.nccl_symmetric = s.time_graphed([&] { s.nccl_all_reduce(count, s.symmetric); }, row.bytes);
    synchronize(s.workspace);  // a one-kernel or LL one-shot that gave up stops the benchmark here, with why
    std::printf("%9s |", course::size_label(row.bytes).c_str());
    for (const double t : {row.ring, row.one_shot, row.one_kernel, row.one_kernel_graphed}) print_time(t);
    for (const double t : {row.ll_one_shot, row.ll_graphed}) {
      std::printf(" ");  // the LL columns are one wider
      print_time(t);
    }
    print_time(row.dispatcher);
    std::printf(" |");
    for (const double t : {row.nccl, row.nccl_graphed, row.nccl_symmetric}) print_time(t);
    std::printf("\n");
    rows.push_back(row);
  }
  std::printf("the ring's latency: %.1f us at 8 B over %d dependent steps, %.1f us per step\n", rows.front().ring * 1e6,
              ring.dependent_steps, ring.dependent_steps ? rows.front().ring * 1e6 / ring.dependent_steps : 0.0);
  return rows;
}

// Where a small call's time goes: the host's time to enqueue one call (50 calls back to back, before
// the wait) beside the time per call once the GPUs are done. Where the two are close, the CPU making
// the API calls (launches, event records and waits, one per worker and step) sets the pace, not the GPUs.
void small_message_anatomy(Setup& s) {
  std::printf("where a small call's time goes (host enqueue per call / time per call, us):\n");
  for (const std::size_t bytes : {std::size_t{8}, 64 * kKiB}) {
    const std::size_t count = bytes / sizeof(float);
    std::printf("  %6s:", course::size_label(bytes).c_str());
    const auto show_split = [&](const char* name, const std::function<void()>& call) {
      constexpr int kCalls = 50;
      for (int i = 0; i < 5; ++i) call();
      synchronize(s.workspace);
      const auto begin = std::chrono::steady_clock::now();
      for (int i = 0; i < kCalls; ++i) call();
      const auto enqueued = std::chrono::steady_clock::now();
      synchronize(s.workspace);
      const auto done = std::chrono::steady_clock::now();
      const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count() / kCalls; };
      std::printf("  %s %.1f / %.1f", name, us(enqueued - begin), us(done - begin));
    };
    show_split("ring", [&] { ring_all_reduce(s.workspace, s.buffers, count); });
    show_split("one-shot", [&] { one_shot_all_reduce(s.workspace, s.buffers, count); });
    show_split("one-kernel", [&] { one_kernel_all_reduce(s.workspace, s.buffers, count); });
    show_split("LL one-shot", [&] { ll_one_shot_all_reduce(s.workspace, s.buffers, count); });
    if (!s.comms.empty()) show_split("NCCL", [&] { s.nccl_all_reduce(count, s.buffers); });
    std::printf("\n");
  }
}

// PASS/FAIL lines for the targets one list of workers can show; returns the number of FAILs.
int targets(const Setup& s, const std::vector<Row>& rows) {
  const int w = s.workspace.size();
  int failures = 0;
  const auto verdict = [&](bool pass) {
    failures += pass ? 0 : 1;
    return pass ? "PASS" : "FAIL";
  };
  std::printf("targets for %s:\n", show(s.devices).c_str());
  if (s.comms.empty()) {
    std::printf("  ring >= 80%% of NCCL's busbw at 64 MiB and above: not measured: needs 2 distinct GPUs\n");
    std::printf("  one-kernel and LL one-shot against NCCL at 64 KiB and below: not measured: needs 2 distinct GPUs\n");
  } else {
    for (const Row& r : rows) {
      if (r.bytes >= 64 * kMiB)
        std::printf("  %s: ring busbw %.1f GB/s, NCCL %.1f GB/s: %.0f%% (target 80%%) %s\n",
                    course::size_label(r.bytes).c_str(), bus_bandwidth_gb_per_s(r.bytes, r.ring, w),
                    bus_bandwidth_gb_per_s(r.bytes, r.nccl, w), 100 * r.nccl / r.ring, verdict(r.ring <= r.nccl / 0.8));
    }
    // Plain against plain, graphed against the best NCCL graphed (its symmetric memory, or where the
    // installed NCCL has none, its plain buffers), one line per size up to 64 KiB.
    for (const Row& r : rows) {
      if (r.bytes > 64 * kKiB) continue;
      const bool symmetric = r.nccl_symmetric > 0;
      const double ceiling = symmetric ? r.nccl_symmetric : r.nccl_graphed;
      std::printf(
          "  %s: one-kernel %.1f us, NCCL %.1f us (target: faster) %s; LL one-shot %.1f us (target: faster) %s; "
          "LL graphed %.1f us, NCCL graphed %s %.1f us (target: faster%s) %s; one-kernel graphed %.1f us (not a "
          "target)\n",
          course::size_label(r.bytes).c_str(), r.one_kernel * 1e6, r.nccl * 1e6, verdict(r.one_kernel < r.nccl),
          r.ll_one_shot * 1e6, verdict(r.ll_one_shot > 0 && r.ll_one_shot < r.nccl), r.ll_graphed * 1e6,
          symmetric ? "on symmetric memory" : "on plain buffers", ceiling * 1e6,
          r.bytes == 8 && w == 2 ? ", and at most 4 us on two GPUs" : "",
          verdict(r.ll_graphed > 0 && r.ll_graphed < ceiling && (r.bytes != 8 || w != 2 || r.ll_graphed <= 4e-6)),
          r.one_kernel_graphed * 1e6);
    }
    if (rows.front().nccl_symmetric <= 0)
      std::printf(
          "  (NCCL's symmetric memory not measured: %s; the LL lines held the graphed LL one-shot against "
          "NCCL graphed on its plain buffers)\n",
          s.symmetric_note.c_str());
    const Row& small = rows.front();
    std::printf("  (the one-shot of task 3 at %s: %.1f us, NCCL %.1f us: host-bound, not a target)\n",
                course::size_label(small.bytes).c_str(), small.one_shot * 1e6, small.nccl * 1e6);
  }
  int dispatcher_fails = 0;
  for (const Row& r : rows) {
    if (r.dispatcher > 1.1 * r.best_in_turns) {
      ++dispatcher_fails;
      std::printf(
          "  %s: dispatcher %.1f us, the best of yours (%s) %.1f us, timed in turns: more than 10%% slower FAIL\n",
          course::size_label(r.bytes).c_str(), r.dispatcher * 1e6, r.best_name, r.best_in_turns * 1e6);
    }
  }
  std::printf(
      "  dispatcher within 10%% of the best of ring, one-shot, one-kernel and LL one-shot at all %zu sizes (timed in "
      "turns): %s\n",
      rows.size(), verdict(dispatcher_fails == 0));
  return failures;
}

// One GPU: the ring on {0, 0, 0, 0} against the device's copy speed for the bytes it moves.
int copy_yardstick(Setup& s, const std::vector<Row>& rows) {
  const int w = s.workspace.size();
  const int device = s.devices[0];
  int failures = 0;
  std::printf(
      "\nOne GPU: the ring on %s against cudaMemcpyDeviceToDevice on GPU %d (target: 80%% of the copy's speed "
      "at 256 MiB and above)\n",
      show(s.devices).c_str(), device);
  std::printf(
      "  Per call, over all %d workers, the ring transfers 2 (W - 1) x S bytes between workers; on one GPU each "
      "reduce-scatter transfer\n  reads two chunks and writes one, each all-gather transfer reads one and "
      "writes one: 5 (W - 1) x S bytes of memory traffic,\n  held against the copy's traffic (it reads and "
      "writes every byte it copies).\n",
      w);
  const course::Stream& stream = s.workspace.workers[0].stream;
  for (const Row& r : rows) {
    if (r.bytes < 256 * kMiB) continue;
    const double copy = s.time(
        [&] {
          const course::DeviceGuard on_device(device);
          CUDA_CHECK(cudaMemcpyAsync(s.buffers[1], s.buffers[0], r.bytes, cudaMemcpyDeviceToDevice, stream));
        },
        r.bytes);
    const double copy_traffic_rate = 2.0 * r.bytes / copy;  // bytes read + written per second
    const double transfers = 2.0 * (w - 1) * r.bytes, traffic = 5.0 * (w - 1) * r.bytes;
    const double at_copy_speed = traffic / copy_traffic_rate;
    const double ratio = at_copy_speed / r.ring;
    std::printf(
        "  %s: copy %.1f GB/s (read + write %.1f); ring %.1f us: %.1f GB/s of transfers, %.1f GB/s of traffic = "
        "%.0f%% of the copy's %s\n",
        course::size_label(r.bytes).c_str(), r.bytes / copy / 1e9, copy_traffic_rate / 1e9, r.ring * 1e6,
        transfers / r.ring / 1e9, traffic / r.ring / 1e9, 100 * ratio, ratio >= 0.8 ? "PASS" : "FAIL");
    failures += ratio >= 0.8 ? 0 : 1;
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    const long mib = std::strtol(argv[1], nullptr, 10);
    if (mib < 1 || mib > 1024) {
      std::fprintf(stderr, "usage: %s [largest size per worker in MiB, 1 to 1024]\n", argv[0]);
      return 2;
    }
    kLargest = static_cast<std::size_t>(mib) * kMiB;
  }
  const int gpus = course::visible_gpu_count();
  if (gpus == 0) {
    std::printf("Lesson 07 benchmark: no GPU visible; nothing measured.\n");
    return 0;
  }
  int failures = 0;
  try {
    std::printf(
        "Lesson 07 benchmark: all-reduce of floats in place, per worker 8 B to %s; time per call with "
        "calls back to back; GB = 10^9 bytes;\nbusbw = algbw x 2 (W - 1) / W (task 2).\n",
        course::size_label(kLargest).c_str());
    std::vector<std::vector<int>> lists;
    if (gpus == 1) lists.push_back({0, 0, 0, 0});
    for (int g = 2; g <= gpus; ++g) {
      lists.emplace_back();
      for (int d = 0; d < g; ++d) lists.back().push_back(d);
    }
    for (const std::vector<int>& devices : lists) {
      Setup setup(devices);
      const std::vector<Row> rows = sweep(setup);
      small_message_anatomy(setup);
      failures += targets(setup, rows);
      if (gpus == 1) failures += copy_yardstick(setup, rows);
    }
    if (gpus == 1)
      std::printf(
          "\nMulti-GPU targets (ring, one-kernel and LL one-shot against NCCL): not measured: needs 2 GPUs, found "
          "1\n");
  } catch (const std::exception& e) {
    std::printf("stopped: %s\n", e.what());
    return 1;
  }
  std::printf("\n%s\n", failures == 0 ? "all targets met" : "some targets missed (FAIL above)");
  return failures == 0 ? 0 : 1;
}
