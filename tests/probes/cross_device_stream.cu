// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Probe: what the runtime does with work given to a stream, an event or memory of a device that
// is not the current one (lesson 02, "Everything belongs to a device", and hint 4 of task 2).
// The CUDA Programming Guide says a kernel launch into a stream of another device fails, that an
// event is recorded only on a stream of its own device, and that copies, stream waits and event
// synchronization work across devices. Each line below is one such call made with GPU 1 current
// on GPU 0's stream, event or memory, and what it returned. Which GPU ran a kernel is read from a
// __device__ variable that each GPU holds its own copy of, so no call here can fault.
#include "probe.h"

namespace {

__device__ int device_tag;  // GPU d holds 100 + d in its own copy

__global__ void report_device_tag(int* out) {
  *out = device_tag;
}

std::string ran_on(int tag) {
  return tag >= 100 ? "GPU " + std::to_string(tag - 100) : "did not run";
}

}  // namespace

int main() {
  using probe::outcome;
  const int count = probe::print_header("cross_device_stream");
  if (count < 2) {
    std::printf("needs 2 GPUs, found %d: nothing measured\n", count);
    return 0;
  }
  cudaStream_t stream[2];
  cudaEvent_t event[2];
  int* memory[2];
  for (int d = 0; d < 2; ++d) {
    CHECK(cudaSetDevice(d));
    const int tag = 100 + d;
    CHECK(cudaMemcpyToSymbol(device_tag, &tag, sizeof tag));
    CHECK(cudaStreamCreateWithFlags(&stream[d], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&event[d], cudaEventDisableTiming));
    CHECK(cudaMalloc(&memory[d], sizeof(int)));
  }
  int* tag = nullptr;  // pinned and mapped: with unified addressing every GPU can write it
  CHECK(cudaHostAlloc(&tag, sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));

  // GPU 1 current, then the control (GPU 0 current), then GPU 1 again: before and after the
  // kernel has run on GPU 0 once.
  for (const int current : {1, 0, 1}) {
    CHECK(cudaSetDevice(current));
    *tag = -1;
    report_device_tag<<<1, 1, 0, stream[0]>>>(tag);
    const cudaError_t launch = cudaGetLastError();
    const cudaError_t sync = cudaStreamSynchronize(stream[0]);
    std::printf("GPU %d current, kernel launched into a stream of GPU 0: launch %s, synchronize %s, ran on %s\n",
                current, outcome(launch), outcome(sync), ran_on(*tag).c_str());
  }

  // GPU 1 is current from here on.
  std::printf("GPU 1 current, cudaEventRecord(event of GPU 0, stream of GPU 1): %s\n",
              outcome(cudaEventRecord(event[0], stream[1])));
  std::printf("GPU 1 current, cudaEventRecord(event of GPU 0, stream of GPU 0): %s\n",
              outcome(cudaEventRecord(event[0], stream[0])));
  std::printf("GPU 1 current, cudaEventSynchronize(event of GPU 0): %s\n", outcome(cudaEventSynchronize(event[0])));
  std::printf("GPU 1 current, cudaStreamWaitEvent(stream of GPU 1, event of GPU 0): %s\n",
              outcome(cudaStreamWaitEvent(stream[1], event[0], 0)));
  const int value = 7;
  std::printf("GPU 1 current, cudaMemcpyAsync(host to memory of GPU 0, stream of GPU 0): %s\n",
              outcome(cudaMemcpyAsync(memory[0], &value, sizeof value, cudaMemcpyHostToDevice, stream[0])));
  std::printf("GPU 1 current, cudaMemsetAsync(memory of GPU 0, stream of GPU 0): %s\n",
              outcome(cudaMemsetAsync(memory[0], 0, sizeof(int), stream[0])));
  void* pooled = nullptr;
  const cudaError_t pooled_error = cudaMallocAsync(&pooled, 1 << 20, stream[0]);
  cudaPointerAttributes attributes{};
  if (pooled_error == cudaSuccess) CHECK(cudaPointerGetAttributes(&attributes, pooled));
  std::printf("GPU 1 current, cudaMallocAsync(stream of GPU 0): %s, memory of GPU %d\n", outcome(pooled_error),
              pooled_error == cudaSuccess ? attributes.device : -1);
  if (pooled_error == cudaSuccess) CHECK(cudaFreeAsync(pooled, stream[0]));
  std::printf("GPU 1 current, cudaStreamSynchronize(stream of GPU 0): %s\n", outcome(cudaStreamSynchronize(stream[0])));
  std::printf("GPU 1 current, cudaFree(memory of GPU 0): %s\n", outcome(cudaFree(memory[0])));
  int current = -1;
  CHECK(cudaGetDevice(&current));
  std::printf("current device afterwards: GPU %d\n", current);

  CHECK(cudaFree(memory[1]));
  CHECK(cudaFreeHost(tag));
  for (int d = 0; d < 2; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaEventDestroy(event[d]));
    CHECK(cudaStreamDestroy(stream[d]));
  }
  return 0;
}
