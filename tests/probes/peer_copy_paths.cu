// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Probe: which path a copy between GPUs takes, read from its speed (lessons 03 and 05).
//  - One GPU: its PCIe link from and to pinned host memory, each direction alone and both at
//    once (is the link full duplex?), and a round trip through pinned host memory, the way a
//    staged copy goes.
//  - Two GPUs: GPU 0 -> host and host -> GPU 1 alone and at once (the two halves of a staged
//    copy, on two links), then cudaMemcpyPeerAsync GPU 0 -> GPU 1 with peer access off both ways,
//    on 0 -> 1 only, on 1 -> 0 only and on both ways, each issued on a stream of GPU 0 and on a
//    stream of GPU 1. The CUDA Programming Guide says only that with peer access enabled between
//    two devices their copies "no longer need to be staged through the host": a copy with peer
//    access off that runs at the speed of the round trip through the host, far below what the
//    same copy does with it on, is staged; which direction of access a copy needs is measured
//    here, not documented.
// Every figure is the median of 5 copies of 256 MiB after a warm-up, GB = 10^9 bytes.
#include <chrono>
#include <functional>

#include "probe.h"

namespace {

constexpr std::size_t kBytes = std::size_t{256} << 20;
constexpr int kRepeats = 5;

double gb_per_s(std::size_t bytes, double ms) {
  return static_cast<double>(bytes) / (ms * 1e6);
}

// The median time of `work`, enqueued on `stream` of `device`, timed with events on that stream.
double time_on_stream(int device, cudaStream_t stream, const std::function<void()>& work) {
  CHECK(cudaSetDevice(device));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  work();
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> times;
  for (int r = 0; r < kRepeats; ++r) {
    CHECK(cudaEventRecord(start, stream));
    work();
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return probe::median(times);
}

// The median host time of `work`, which enqueues and then waits for what it enqueued.
double time_on_host(const std::function<void()>& work) {
  work();
  std::vector<double> times;
  for (int r = 0; r < kRepeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return probe::median(times);
}

cudaStream_t make_stream(int device) {
  CHECK(cudaSetDevice(device));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void* device_memory(int device) {
  CHECK(cudaSetDevice(device));
  void* p = nullptr;
  CHECK(cudaMalloc(&p, kBytes));
  CHECK(cudaMemset(p, 0x3C, kBytes));
  CHECK(cudaDeviceSynchronize());
  return p;
}

// Peer access from -> to on or off (made with `from` current); "already" answers are fine.
void set_access(int from, int to, bool on) {
  CHECK(cudaSetDevice(from));
  const cudaError_t error = on ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
  if (error != cudaSuccess && error != cudaErrorPeerAccessAlreadyEnabled && error != cudaErrorPeerAccessNotEnabled) {
    std::printf("FAILED: peer access GPU %d -> GPU %d %s: %s\n", from, to, on ? "on" : "off", cudaGetErrorName(error));
    std::exit(1);
  }
  (void)cudaGetLastError();
}

}  // namespace

int main() {
  const int count = probe::print_header("peer_copy_paths");
  if (count < 1) {
    std::printf("needs 1 GPU, found 0: nothing measured\n");
    return 0;
  }
  void *host_a = nullptr, *host_b = nullptr;
  CHECK(cudaMallocHost(&host_a, kBytes));
  CHECK(cudaMallocHost(&host_b, kBytes));
  void* gpu0_a = device_memory(0);
  void* gpu0_b = device_memory(0);
  cudaStream_t gpu0_s = make_stream(0), gpu0_t = make_stream(0);

  std::printf("-- GPU 0 and pinned host memory, 256 MiB per copy\n");
  const double to_host = gb_per_s(kBytes, time_on_stream(0, gpu0_s, [&] {
                                    CHECK(cudaMemcpyAsync(host_a, gpu0_a, kBytes, cudaMemcpyDeviceToHost, gpu0_s));
                                  }));
  const double to_device = gb_per_s(kBytes, time_on_stream(0, gpu0_s, [&] {
                                      CHECK(cudaMemcpyAsync(gpu0_b, host_b, kBytes, cudaMemcpyHostToDevice, gpu0_s));
                                    }));
  const double duplex_ms = time_on_host([&] {
    CHECK(cudaMemcpyAsync(host_a, gpu0_a, kBytes, cudaMemcpyDeviceToHost, gpu0_s));
    CHECK(cudaMemcpyAsync(gpu0_b, host_b, kBytes, cudaMemcpyHostToDevice, gpu0_t));
    CHECK(cudaStreamSynchronize(gpu0_s));
    CHECK(cudaStreamSynchronize(gpu0_t));
  });
  const double round_trip = gb_per_s(kBytes, time_on_stream(0, gpu0_s, [&] {
                                       CHECK(cudaMemcpyAsync(host_a, gpu0_a, kBytes, cudaMemcpyDeviceToHost, gpu0_s));
                                       CHECK(cudaMemcpyAsync(gpu0_b, host_a, kBytes, cudaMemcpyHostToDevice, gpu0_s));
                                     }));
  const double within = gb_per_s(
      kBytes, time_on_stream(0, gpu0_s, [&] { CHECK(cudaMemcpyPeerAsync(gpu0_b, 0, gpu0_a, 0, kBytes, gpu0_s)); }));
  std::printf("GPU 0 -> host alone: %.1f GB/s\n", to_host);
  std::printf("host -> GPU 0 alone: %.1f GB/s\n", to_device);
  std::printf("GPU 0 -> host and host -> GPU 0 at once: %.1f GB/s each way (%.2fx of the slower alone)\n",
              gb_per_s(kBytes, duplex_ms), gb_per_s(kBytes, duplex_ms) / std::min(to_host, to_device));
  std::printf("round trip GPU 0 -> host -> GPU 0, one after the other: %.1f GB/s of data moved\n", round_trip);
  std::printf("cudaMemcpyPeerAsync GPU 0 -> GPU 0: %.1f GB/s\n", within);

  if (count < 2) {
    std::printf("needs 2 GPUs, found %d: no copy between GPUs measured\n", count);
    return 0;
  }
  void* gpu1_a = device_memory(1);
  cudaStream_t gpu1_s = make_stream(1);
  std::printf("-- GPU 0, GPU 1 and pinned host memory, 256 MiB per copy\n");
  const double to_gpu1 = gb_per_s(kBytes, time_on_stream(1, gpu1_s, [&] {
                                    CHECK(cudaMemcpyAsync(gpu1_a, host_b, kBytes, cudaMemcpyHostToDevice, gpu1_s));
                                  }));
  const double halves_ms = time_on_host([&] {
    CHECK(cudaMemcpyAsync(host_a, gpu0_a, kBytes, cudaMemcpyDeviceToHost, gpu0_s));
    CHECK(cudaMemcpyAsync(gpu1_a, host_b, kBytes, cudaMemcpyHostToDevice, gpu1_s));
    CHECK(cudaStreamSynchronize(gpu0_s));
    CHECK(cudaStreamSynchronize(gpu1_s));
  });
  std::printf("host -> GPU 1 alone: %.1f GB/s\n", to_gpu1);
  std::printf("GPU 0 -> host and host -> GPU 1 at once: %.1f GB/s each way (%.2fx of the slower alone)\n",
              gb_per_s(kBytes, halves_ms), gb_per_s(kBytes, halves_ms) / std::min(to_host, to_gpu1));

  int can_forward = 0, can_backward = 0;
  CHECK(cudaDeviceCanAccessPeer(&can_forward, 0, 1));
  CHECK(cudaDeviceCanAccessPeer(&can_backward, 1, 0));
  std::printf("cudaDeviceCanAccessPeer: GPU 0 -> GPU 1 %d, GPU 1 -> GPU 0 %d\n", can_forward, can_backward);
  struct State {
    const char* name;
    bool forward, backward;
  };
  for (const State state : {State{"off both ways", false, false}, State{"on 0 -> 1 only", true, false},
                            State{"on 1 -> 0 only", false, true}, State{"on both ways", true, true}}) {
    if ((state.forward && !can_forward) || (state.backward && !can_backward)) {
      std::printf("peer access %s: not possible here\n", state.name);
      continue;
    }
    set_access(0, 1, state.forward);
    set_access(1, 0, state.backward);
    for (const int issuer : {0, 1}) {
      const cudaStream_t stream = issuer == 0 ? gpu0_s : gpu1_s;
      const double rate = gb_per_s(kBytes, time_on_stream(issuer, stream, [&] {
                                     CHECK(cudaMemcpyPeerAsync(gpu1_a, 1, gpu0_a, 0, kBytes, stream));
                                   }));
      std::printf("cudaMemcpyPeerAsync GPU 0 -> GPU 1, peer access %s, on a stream of GPU %d: %.1f GB/s\n", state.name,
                  issuer, rate);
    }
  }
  set_access(0, 1, false);
  set_access(1, 0, false);
  return 0;
}
