// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 03, provided: the staged copy WITHOUT overlap, the baseline that task 3's overlapped copy
// is measured against. One pinned buffer; each chunk goes device-to-host on the source device's
// stream, then host-to-device on the destination device's stream, and the next chunk may only
// overwrite the buffer once that has finished. Events order the two streams, so the host never
// waits until the end. Read it before task 3: your version adds a second buffer so that the two
// halves of consecutive chunks run at the same time.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "common/buffers.h"
#include "common/check.h"
#include "common/device_guard.h"
#include "peer_access.h"

namespace lesson03 {

void copy_staged_serial(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes,
                        const CopyOptions& options) {
  const std::size_t chunk = options.chunk_bytes;
  if (chunk == 0) throw std::invalid_argument("copy_staged_serial: chunk_bytes must be at least 1");
  if (options.staging != nullptr && options.staging->size() < chunk)
    throw std::invalid_argument("copy_staged_serial: the staging buffer is smaller than one chunk");
  if (bytes == 0) return;

  course::PinnedBuffer<std::uint8_t> own;
  std::uint8_t* staging = options.staging != nullptr ? options.staging->data() : nullptr;
  if (staging == nullptr) {
    own = course::PinnedBuffer<std::uint8_t>(std::min(chunk, bytes));
    staging = own.data();
  }

  course::Stream to_host(src_device);    // device-to-host copies: the source device's copy engine
  course::Stream to_device(dst_device);  // host-to-device copies: the destination device's copy engine
  const course::Event filled(src_device, cudaEventDisableTiming);   // the chunk is in the staging buffer
  const course::Event drained(dst_device, cudaEventDisableTiming);  // the chunk has left it

  const auto* from = static_cast<const std::uint8_t*>(src);
  auto* to = static_cast<std::uint8_t*>(dst);
  for (std::size_t offset = 0; offset < bytes; offset += chunk) {
    const std::size_t n = std::min(chunk, bytes - offset);
    {
      course::DeviceGuard on_source(src_device);
      if (offset > 0) CUDA_CHECK(cudaStreamWaitEvent(to_host, drained, 0));  // the buffer is free again
      CUDA_CHECK(cudaMemcpyAsync(staging, from + offset, n, cudaMemcpyDeviceToHost, to_host));
      filled.record(to_host);
    }
    {
      course::DeviceGuard on_destination(dst_device);
      CUDA_CHECK(cudaStreamWaitEvent(to_device, filled, 0));
      CUDA_CHECK(cudaMemcpyAsync(to + offset, staging, n, cudaMemcpyHostToDevice, to_device));
      drained.record(to_device);
    }
  }
  to_device.synchronize();  // the last chunk has arrived, and so have all before it
}

}  // namespace lesson03
