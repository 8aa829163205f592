// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// One checker for every copy of the course (see copies.h).
#include "copies.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>

#include "../buffers.h"
#include "../check.h"
#include "../compare.h"
#include "../device_guard.h"
#include "../random.h"
#include "gpu_test.h"

namespace course::testing {

void check_copies(const CopySet& set, const CopyCall& copy) {
  const std::size_t largest = set.sizes.empty() ? 0 : *std::max_element(set.sizes.begin(), set.sizes.end());
  const std::vector<std::uint8_t> input = course::random_bytes(largest, set.seed);
  const DeviceBuffer<std::uint8_t> src(set.src_device, std::max<std::size_t>(largest, 1));
  const DeviceBuffer<std::uint8_t> dst(set.dst_device, largest + kGuardBytes);
  if (largest > 0) CUDA_CHECK(cudaMemcpy(src.data(), input.data(), largest, cudaMemcpyHostToDevice));
  std::vector<std::uint8_t> got(largest + kGuardBytes);
  for (const std::size_t bytes : set.sizes) {
    {
      DeviceGuard on_destination(set.dst_device);
      course::poison_device(dst.data(), dst.bytes());
    }
    INFO("copy of " << bytes << " bytes from GPU " << set.src_device << " to GPU " << set.dst_device << ", " << set.what
                    << ", GPU " << set.caller_device << " current before the call");
    CUDA_CHECK(cudaSetDevice(set.caller_device));
    const std::string answer = copy(dst.data(), src.data(), bytes);
    CHECK(answer == set.expected_answer);
    {
      const int after = current_device();
      INFO("the copy left GPU " << after << " current: give the caller its device back");
      CHECK(after == set.caller_device);
    }
    CUDA_CHECK(cudaMemcpy(got.data(), dst.data(), bytes + kGuardBytes, cudaMemcpyDeviceToHost));
    const Comparison comparison = compare_exact(got.data(), input.data(), bytes);
    INFO("the bytes that arrived: " << comparison.describe());
    CHECK(comparison.ok());
    const auto guard = got.begin() + static_cast<std::ptrdiff_t>(bytes);  // what this copy read back
    const auto written_after_end = std::count_if(guard, guard + static_cast<std::ptrdiff_t>(kGuardBytes),
                                                 [](std::uint8_t b) { return b != course::kPoisonByte; });
    INFO(written_after_end << " of the " << kGuardBytes << " bytes after the end were written");
    CHECK(written_after_end == 0);
  }
}

}  // namespace course::testing
