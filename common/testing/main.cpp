// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The Catch2 main of every lesson's test program: prints the GPU inventory once (to stderr,
// so a reporter writing XML to stdout stays valid) and maps the exit code for Meson.
#include <catch2/catch_session.hpp>

#include <cstdlib>
#include <iostream>

#include "gpu_test.h"

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  if (std::getenv("COURSE_CHILD_OUTPUT") == nullptr) std::cerr << course::testing::gpu_inventory() << std::flush;
  return course::testing::meson_exit_code(session.run());
}
