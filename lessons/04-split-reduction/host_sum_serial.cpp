// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 04, given: the sum of pinned host data WITHOUT overlap, the baseline that task 3 is
// measured against. Each worker has one chunk buffer and one stream: copy a chunk in, reduce it,
// copy the next one in, ... Stream order keeps it correct, and also makes every copy wait for the
// previous reduction, so the copy engine and the SMs take turns. The workers still run at the
// same time: the host enqueues everything before it waits. Read it before task 3: yours adds a
// second buffer and a second stream so that chunk c+1 is copied while chunk c is reduced.
#include <algorithm>
#include <stdexcept>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/partition.h"
#include "split_reduction.h"

namespace lesson04 {

double sum_from_host_serial(SplitWorkspace& workspace, const float* host, std::size_t n, const ChunkReduce& reduce) {
  if (host == nullptr && n > 0) throw std::invalid_argument("sum_from_host_serial: host is nullptr");
  const int workers = static_cast<int>(workspace.workers.size());
  const std::size_t chunk = workspace.chunk_elements;
  for (int k = 0; k < workers; ++k) {
    Worker& w = workspace.workers[k];
    const course::DeviceGuard on_worker(w.device);
    const course::Range range = course::split_range(n, workers, k);
    if (range.empty()) reduce(w.chunks[0].data(), 0, w.partials.data(), w.sum.data(), false, w.stream);
    for (std::size_t offset = range.begin; offset < range.end; offset += chunk) {
      const std::size_t count = std::min(chunk, range.end - offset);
      CUDA_CHECK(
          cudaMemcpyAsync(w.chunks[0].data(), host + offset, count * sizeof(float), cudaMemcpyHostToDevice, w.stream));
      reduce(w.chunks[0].data(), count, w.partials.data(), w.sum.data(), offset > range.begin, w.stream);
    }
    CUDA_CHECK(
        cudaMemcpyAsync(&workspace.host_partials[k], w.sum.data(), sizeof(double), cudaMemcpyDeviceToHost, w.stream));
  }
  double total = 0;
  for (int k = 0; k < workers; ++k) {
    workspace.workers[k].stream.synchronize();
    total += workspace.host_partials[k];
  }
  return total;
}

}  // namespace lesson04
