// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// NOT_IMPLEMENTED("task 2") marks a TODO in a starter file. Calling it throws
// course::NotImplemented whose message names the task, the function and the starter's
// file:line, so a student's first test run reads like a to-do list, not like a crash:
//     NOT_IMPLEMENTED: task 2 in describe_device() at lessons/01-device-enumeration/device_enumeration.cpp:48
#pragma once

#include <stdexcept>
#include <string>

namespace course {

class NotImplemented : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

std::string not_implemented_message(const char* task, const char* function, const char* file, int line);

[[noreturn]] void not_implemented(const char* task, const char* function, const char* file, int line);

}  // namespace course

#define NOT_IMPLEMENTED(task) ::course::not_implemented((task), __func__, __FILE__, __LINE__)
