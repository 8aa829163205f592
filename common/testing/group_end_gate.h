// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// "Waits for every rank's stream" after a collective, shown with any rank the last to finish. A
// gate closed on a rank's stream before the call (held_stream.h) holds the collective itself, and
// with it every rank: NCCL's ranks wait for each other, so a call that waits for the first rank's
// stream only waits as long as a correct one. A GroupEndGate instead closes its gate on one stream
// right after the call's group call (the outermost ncclGroupEnd) has enqueued the collective: that
// rank's collective runs, the others finish, and only the held stream still has work that the call
// must wait for. The program defines ncclGroupStart and ncclGroupEnd itself (group_end_gate.cpp),
// notes the group depth of each thread and passes each call on to libnccl's own; the definitions
// come into a program that uses GroupEndGate (its own library, as common/testing/kernel_launches.cpp
// is for launches).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <functional>
#include <string>

namespace course::testing {

// While one lives, the next outermost ncclGroupEnd of any thread that succeeds closes a gate on
// `stream` before it returns (once; later group calls pass). Opened by open() or at the end of
// the scope (which waits for the gate's host function, as StreamGate does). One at a time: a second
// while one lives throws std::logic_error.
class GroupEndGate {
 public:
  explicit GroupEndGate(cudaStream_t stream);
  ~GroupEndGate();
  GroupEndGate(const GroupEndGate&) = delete;
  GroupEndGate& operator=(const GroupEndGate&) = delete;
  bool closed() const;  // whether a group call has closed it yet
  void open();
};

struct AfterGroupOutcome {
  bool group_ended = false;  // the call made a group call (the gate closed)
  bool returned = false;     // the call returned while the gate was closed, within the patience
};

// Runs `call` on a thread of its own with a GroupEndGate on `held`, waits up to `patience` for it
// to return, opens the gate and waits for the call (its exception goes on to the caller); all of it
// under the watchdog (`what` names it). Run the call once before, ungated: a kernel's first launch
// may wait for the whole device (stream_gate.h).
AfterGroupOutcome returns_while_held_after_group(cudaStream_t held, const std::string& what,
                                                 const std::function<void()>& call, std::chrono::milliseconds patience);

}  // namespace course::testing
