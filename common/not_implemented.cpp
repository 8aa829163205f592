// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The text of NOT_IMPLEMENTED's message; the course's checks look for its first word.
#include "not_implemented.h"

#include "check.h"

namespace course {

std::string not_implemented_message(const char* task, const char* function, const char* file, int line) {
  return std::string("NOT_IMPLEMENTED: ") + task + " in " + function + "() at " + course_relative_path(file) + ':' +
         std::to_string(line);
}

void not_implemented(const char* task, const char* function, const char* file, int line) {
  throw NotImplemented(not_implemented_message(task, function, file, line));
}

}  // namespace course
