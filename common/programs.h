// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What the course's programs share: counting the GPUs without failing on a machine that has none
// (demos, benchmarks and the tests' skips), and running a demo in sections, so that a task not
// done yet (NOT_IMPLEMENTED) or a CUDA error stops its own section only and the reader still
// sees the rest.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace course {

// The number of GPUs this process can use; 0 when there is no driver or no device, and then no
// CUDA error is left behind for a later call to report.
int visible_gpu_count();

// Prints "== title", runs `body`, and on an exception prints "  stopped: <what>" and clears the
// CUDA error state, so that the next section starts clean.
void demo_section(const std::string& title, const std::function<void()>& body);

// This process's environment, name -> value (what lesson 09's place_rank takes).
std::map<std::string, std::string> process_environment();

// What a program that starts copies of itself needs: a whole file's text ("" when it cannot be
// read), and this program's path (from /proc/self/exe; throws std::runtime_error without it).
std::string read_file(const std::filesystem::path& path);
std::string this_program();

}  // namespace course
