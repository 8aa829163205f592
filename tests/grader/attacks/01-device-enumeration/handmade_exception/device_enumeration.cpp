// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// the untouched starter (it implements nothing, so it must score 0) plus one trick, and the
// grader must say why. Catch2's failure exception made by hand (type name built at run time), raised with
// std::rethrow_exception so that no __cxa_throw sees it.
#include "device_enumeration.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <iomanip>

#include "common/check.h"
#include "common/device_guard.h"
#include "common/not_implemented.h"

#include <cxxabi.h>

#include <cstring>
#include <exception>
#include <string>
#include <typeinfo>

extern "C" void* __cxa_init_primary_exception(void*, std::type_info*, void (*)(void*)) noexcept;

namespace {
struct MadeType : std::type_info {
  explicit MadeType(const char* name) : std::type_info(name) {}
};
void raise_made_failure() {
  static std::string name = std::string("N5") + "Cat" + "ch20TestFailureExceptionE";
  static MadeType type(name.c_str());
  void* object = abi::__cxa_allocate_exception(8);
  __cxa_init_primary_exception(object, &type, nullptr);
  std::exception_ptr made;  // takes the object without counting a reference: `held` counts one
  std::memcpy(static_cast<void*>(&made), &object, sizeof object);
  std::exception_ptr held = made;
  std::memset(static_cast<void*>(&made), 0, sizeof made);
  std::rethrow_exception(held);
}
}  // namespace

namespace lesson01 {

int count_devices() {
  raise_made_failure();  // the trick runs where a test calls the student's code
  // TODO(task 1): return the number of visible GPUs, 0 (not an exception) when there is none.
  NOT_IMPLEMENTED("task 1");
}

DeviceInfo describe_device(int ordinal) {
  // TODO(task 2): fill a DeviceInfo for `ordinal`, leaving the caller's current device as it was.
  (void)ordinal;
  NOT_IMPLEMENTED("task 2");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  // TODO(task 3): the ordinals that meet every criterion, lowest first, at most max_devices.
  (void)criteria;
  NOT_IMPLEMENTED("task 3");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  // TODO(task 4): a header line, then one line per device with every field of DeviceInfo.
  (void)out;
  (void)devices;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson01
