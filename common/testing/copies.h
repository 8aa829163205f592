// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Checking a set of copies between two devices: random bytes in, a poisoned destination with a
// guard zone after its end, every size of a list (edges included), the bytes that arrived, the
// bytes that must not have been touched, what the copy says it did, and the caller's device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace course::testing {

// The copy under test: `bytes` from src to dst; returns what it says it did (a path name, say).
using CopyCall = std::function<std::string(void* dst, const void* src, std::size_t bytes)>;

struct CopySet {
  int src_device = 0;
  int dst_device = 0;
  std::vector<std::size_t> sizes;
  std::uint64_t seed = 0;
  std::string expected_answer;  // what every call must return
  int caller_device = 0;        // made current before each call; must be current after it
  std::string what;             // "chunks of 4096, staged path forced", for the messages
};

// Poisoned bytes after the end of every destination, which no copy may touch.
constexpr std::size_t kGuardBytes = 64;

void check_copies(const CopySet& set, const CopyCall& copy);

}  // namespace course::testing
