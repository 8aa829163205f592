// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Timing GPU work: CUDA events recorded on the stream measure what the GPU did, not when the
// host returned from an asynchronous launch. `measure()` runs a warm-up first (module loading,
// first-touch allocation and clock ramp-up stay out of the numbers), then repeats and reports
// the median and the minimum, the two figures our benchmarks print.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "buffers.h"

namespace course {

class EventTimer {
 public:
  explicit EventTimer(int device) : start_(device), stop_(device) {}
  void start(cudaStream_t stream) { start_.record(stream); }
  void stop(cudaStream_t stream) { stop_.record(stream); }
  // Waits for the stop event and returns the milliseconds between the two events.
  float elapsed_ms() const;

 private:
  Event start_;
  Event stop_;
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  int repeats = 0;
};

// Summarises repeated measurements (in milliseconds).
Timing summarize(std::vector<double> samples_ms);

// Times `work` (which enqueues on `stream`) with events: `warmup` untimed runs, then `repeats` timed ones.
Timing measure(int device, cudaStream_t stream, const std::function<void()>& work, int warmup = 3, int repeats = 20);

// Times `work` with the host clock; `work` must finish its GPU work before it returns
// (use this for work that spans several devices or streams).
Timing measure_host(const std::function<void()>& work, int warmup = 3, int repeats = 20);

// Seconds per call of `enqueue` (asynchronous work on one or more streams), host clock, as nccl-tests
// times a collective: `warmup` calls and one `wait`, then `iterations` calls enqueued back to back
// and one `wait` for all of them.
double seconds_per_call(const std::function<void()>& enqueue, const std::function<void()>& wait, int warmup,
                        int iterations);

// A size as the benchmarks print it: "8 B", "64 KiB", "256 MiB" (whole units, rounded down).
std::string size_label(std::size_t bytes);

// GB/s with GB = 10^9 bytes, as link and memory datasheets count.
inline double gigabytes_per_second(double bytes, double ms) {
  return ms > 0 ? bytes / (ms * 1e6) : 0.0;
}

}  // namespace course
