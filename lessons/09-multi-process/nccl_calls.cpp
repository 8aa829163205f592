// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Given: finishing a call on a non-blocking NCCL communicator. Such a communicator may answer any
// call with ncclInProgress and carry on in the background (connecting to its peers, say, on its
// first collective); ncclCommGetAsyncError says when it is done, and whether it went well.
#include <nccl.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "multi_process.h"

namespace lesson09 {

void complete_nccl_call(ncclComm_t comm, ncclResult_t result, const char* call) {
  ncclResult_t state = result;
  while (state == ncclInProgress) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
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
