// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// Host unit tests of the messages students read most: NOT_IMPLEMENTED names the task, the
// function and the file:line of the TODO; CUDA_CHECK names the call, file:line and the error.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/check.h"
#include "common/not_implemented.h"

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {
int unfinished_function() {
  NOT_IMPLEMENTED("task 3");
}
}  // namespace

TEST_CASE("NOT_IMPLEMENTED names the task, the function and the file:line", "[host][messages]") {
  try {
    unfinished_function();
    FAIL("NOT_IMPLEMENTED did not throw");
  } catch (const course::NotImplemented& e) {
    const std::string message = e.what();
    CHECK_THAT(message,
               StartsWith("NOT_IMPLEMENTED: task 3 in unfinished_function() at tests/host/test_messages.cpp:"));
  }
}

namespace {
cudaError_t fails_with(cudaError_t error) {
  return error;
}
}  // namespace

TEST_CASE("CUDA_CHECK throws an ApiError naming the call, the place and the error", "[host][messages]") {
  try {
    CUDA_CHECK(fails_with(cudaErrorInvalidDevice));
    FAIL("CUDA_CHECK did not throw");
  } catch (const course::ApiError& e) {
    CHECK(e.library() == "CUDA");
    CHECK(e.code() == static_cast<int>(cudaErrorInvalidDevice));
    const std::string message = e.what();
    CHECK_THAT(message, StartsWith("fails_with(cudaErrorInvalidDevice) failed at tests/host/test_messages.cpp:"));
    CHECK_THAT(message, ContainsSubstring(": cudaErrorInvalidDevice: invalid device ordinal"));
  }
}

TEST_CASE("CUDA_CHECK of a result kept in a variable names the variable, not a call", "[host][messages]") {
  // `const cudaError_t error = cudaDeviceEnablePeerAccess(...); if (...) CUDA_CHECK(error);` once
  // read "error failed at ...", as if a function named error had failed.
  const cudaError_t error = cudaErrorPeerAccessUnsupported;
  try {
    CUDA_CHECK(error);
    FAIL("CUDA_CHECK did not throw");
  } catch (const course::ApiError& e) {
    const std::string message = e.what();
    CHECK_THAT(message, StartsWith("a CUDA call failed (its result, kept in `error`, checked at "
                                   "tests/host/test_messages.cpp:"));
    CHECK_THAT(message, ContainsSubstring("): cudaErrorPeerAccessUnsupported: "));
  }
}

TEST_CASE("paths in messages are shown relative to the course", "[host][messages]") {
  CHECK(std::string(course::course_relative_path("../lessons/01-x/y.cu")) == "lessons/01-x/y.cu");
  CHECK(std::string(course::course_relative_path("/home/me/course/common/check.cpp")) == "common/check.cpp");
  CHECK(std::string(course::course_relative_path("plain.cpp")) == "plain.cpp");
}
