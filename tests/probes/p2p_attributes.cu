// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Probe: what cudaDeviceGetP2PAttribute(cudaDevP2PAttrAccessSupported) reports before and after
// peer access is enabled (lesson 03, task 1 and "Task 2"). The Runtime API reference words it as
// "1 if peer access is enabled", which reads like the enabled state; the lesson uses it as what
// the hardware and driver allow. This prints cudaDeviceCanAccessPeer and the three attributes of
// GPU 0 -> 1 and 1 -> 0 with peer access off, after enabling 0 -> 1, after enabling 1 -> 0 too,
// and after disabling both, and what the attribute query says about a device paired with itself.
#include "probe.h"

namespace {

void print_link(const char* when, int from, int to) {
  int can = -1, access = -1, rank = -1, atomics = -1;
  CHECK(cudaDeviceCanAccessPeer(&can, from, to));
  CHECK(cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, from, to));
  CHECK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, from, to));
  CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, from, to));
  std::printf(
      "%-34s GPU %d -> GPU %d: canAccessPeer %d, AccessSupported %d, PerformanceRank %d, NativeAtomicSupported %d\n",
      when, from, to, can, access, rank, atomics);
}

// Enables or disables from -> to (made with `from` current); prints what the call returned.
void set_access(int from, int to, bool enable) {
  CHECK(cudaSetDevice(from));
  const cudaError_t error = enable ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
  std::printf("%s GPU %d -> GPU %d: %s\n", enable ? "cudaDeviceEnablePeerAccess" : "cudaDeviceDisablePeerAccess", from,
              to, probe::outcome(error));
}

}  // namespace

int main() {
  const int count = probe::print_header("p2p_attributes");
  if (count < 1) {
    std::printf("needs 1 GPU, found 0: nothing measured\n");
    return 0;
  }
  int value = -1;
  std::printf("cudaDeviceGetP2PAttribute(AccessSupported, GPU 0, GPU 0): %s\n",
              probe::outcome(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, 0, 0)));
  if (count < 2) {
    std::printf("needs 2 GPUs, found %d: no pair to ask about\n", count);
    return 0;
  }
  for (int from = 0; from < count; ++from)
    for (int to = 0; to < count; ++to)
      if (from != to) print_link("peer access off (never enabled):", from, to);

  int can_forward = 0, can_backward = 0;
  CHECK(cudaDeviceCanAccessPeer(&can_forward, 0, 1));
  CHECK(cudaDeviceCanAccessPeer(&can_backward, 1, 0));
  if (!can_forward || !can_backward) {
    std::printf("GPU 0 and GPU 1 cannot enable peer access both ways: nothing to compare\n");
    return 0;
  }
  set_access(0, 1, true);
  print_link("after enabling 0 -> 1 only:", 0, 1);
  print_link("after enabling 0 -> 1 only:", 1, 0);
  set_access(1, 0, true);
  print_link("after enabling both ways:", 0, 1);
  print_link("after enabling both ways:", 1, 0);
  set_access(0, 1, true);  // a second time: the answer that lesson 03's task 2 clears
  set_access(0, 1, false);
  set_access(1, 0, false);
  print_link("after disabling both ways:", 0, 1);
  print_link("after disabling both ways:", 1, 0);
  return 0;
}
