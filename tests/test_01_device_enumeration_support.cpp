// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Lesson 01 test helpers (declared and described in test_01_device_enumeration_support.h): the
// runtime's UUID of a device, and the child process under a CUDA_VISIBLE_DEVICES mask whose report
// is parsed here.
#include "test_01_device_enumeration_support.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/testing/devices.h"

namespace lesson01_tests {
namespace {

ChildView parse_child(const std::string& text) {
  ChildView view;
  std::istringstream in(text);
  std::string key;
  while (in >> key) {
    if (key == "count") {
      in >> view.count;
    } else if (key == "last_error") {
      in >> view.last_error;
    } else if (key == "device") {
      int ordinal = 0;
      std::string uuid;
      in >> ordinal >> uuid;
      view.uuids.push_back(uuid);
    } else if (key == "threw") {
      std::getline(in >> std::ws, view.threw);  // the text after "threw "
    } else if (key == "selected") {
      in >> view.selected;
    } else if (key == "select_threw") {
      std::getline(in >> std::ws, view.select_threw);
    }
  }
  return view;
}

}  // namespace

std::string runtime_uuid(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::ostringstream out;
  out << "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out << '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
    out << hex;
  }
  return out.str();
}

ChildView run_child_with_visible_devices(const std::string& visible, const std::vector<int>& parent_ordinals) {
  return parse_child(
      course::testing::run_child_under_device_mask("child: report the visible devices", visible, parent_ordinals));
}

}  // namespace lesson01_tests
