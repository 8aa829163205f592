// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Given: finishing a call on a non-blocking NCCL communicator. Such a communicator may answer any
// call with ncclInProgress and carry on in the background (connecting to its peers, say, on its
// first collective); ncclCommGetAsyncError says when it is done, and whether it went well.
#include <nccl.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "multi_process.h"

namespace lesson09 {

void complete_nccl_call(ncclComm_t comm, ncclResult_t result, const char* call) {
  // A call on a non-blocking communicator usually completes within microseconds: poll at once,
  // and sleep between polls only after a millisecond (a sleep of 100 us per call would be most of
  // a small all-reduce's time).
  ncclResult_t state = result;
  const auto start = std::chrono::steady_clock::now();
  while (state == ncclInProgress) {
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1))
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    else
      std::this_thread::yield();
    if (const ncclResult_t r = ncclCommGetAsyncError(comm, &state); r != ncclSuccess) state = r;
  }
  if (state != ncclSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + ncclGetErrorString(state) + " (" +
                             ncclGetLastError(comm) + ")");
}

void destroy_communicator(ncclComm_t comm) {
  complete_nccl_call(comm, ncclCommFinalize(comm), "ncclCommFinalize");
  if (const ncclResult_t r = ncclCommDestroy(comm); r != ncclSuccess)
    throw std::runtime_error(std::string("ncclCommDestroy failed: ") + ncclGetErrorString(r));
}

}  // namespace lesson09
