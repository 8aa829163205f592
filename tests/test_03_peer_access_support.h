// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What more than one of lesson 03's test files needs: the skip reason for a machine without a
// peer pair, and the watchdog's limit and hint for copies. Constants only, so there is no .cpp;
// each file's own helpers stay in its anonymous namespace.
#pragma once

#include <chrono>

namespace lesson03_tests {

// Skip reasons start "needs N GPUs" like every skip for missing hardware, so graders read them as such.
inline constexpr const char* kNoPeerPair =
    "needs 2 GPUs with peer access between them; cudaDeviceCanAccessPeer is 0 for every pair here";

inline constexpr auto kCopyLimit = std::chrono::seconds(120);
inline constexpr const char* kCopyHint =
    "a host loop (cudaEventQuery, cudaStreamQuery) waits for work that was never enqueued, or for a stream "
    "of the other device; wait with cudaStreamWaitEvent and synchronize the destination's stream once at the end";

}  // namespace lesson03_tests
