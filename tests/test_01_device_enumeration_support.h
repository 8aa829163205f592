// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01 test helpers that both test files use: the UUID of a device as the runtime reports it,
// formatted independently of the student's code, and a child process of this program run under
// another CUDA_VISIBLE_DEVICES, whose report says what the student's code sees there.
#pragma once

#include <string>
#include <vector>

namespace lesson01_tests {

// The UUID as nvidia-smi prints it, formatted here independently of the student's code.
std::string runtime_uuid(int device);

// What the child case reports, one fact per line: "count N" and "last_error NAME", or "threw MESSAGE"
// (count_devices threw); "selected K" and a "device ORDINAL UUID" per selected device, or
// "select_threw MESSAGE" (select_devices or describe_device threw).
struct ChildView {
  int count = -1;
  std::string last_error;
  std::string threw;
  int selected = -1;
  std::vector<std::string> uuids;  // of the selected devices, in the order select_devices returned them
  std::string select_threw;
};

// `parent_ordinals`: this process's ordinals of the GPUs the mask shows (see devices.h).
ChildView run_child_with_visible_devices(const std::string& visible, const std::vector<int>& parent_ordinals);

}  // namespace lesson01_tests
