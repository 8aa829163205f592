// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// NCCL communicators a test program is done with, destroyed when it ends. ncclCommDestroy takes
// about half a second a set (NCCL stops its threads: 0.48 s measured on an H200 host, against
// 0.06 s to make a set), so a case that made and destroyed its own sets spent most of its time on
// it. Kept to the end, every set is destroyed at once, one thread per set, and the program's exit
// pays that half second once. Only for communicators whose tear-down no case checks.
#pragma once

#include <nccl.h>

#include <vector>

namespace course::testing {

// Takes `set` (null entries are skipped) to be destroyed when the program ends: before the CUDA
// runtime's own clean-up (registered at the program's first CUDA call, earlier than the keeper this
// makes), under the watchdog (30 s): ncclCommDestroy waits for the communicator's work, and a
// collective that a wrong file left running for good (a call not every rank joined) would
// otherwise hold the program's exit forever. Thread-safe.
void destroy_at_exit(std::vector<ncclComm_t> set);

}  // namespace course::testing
