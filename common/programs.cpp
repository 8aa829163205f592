// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// What the course's programs share (programs.h).
#include "programs.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace course {

int visible_gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear "no driver" / "no device" so it cannot leak into a later call
    return 0;
  }
  return count;
}

void demo_section(const std::string& title, const std::function<void()>& body) {
  std::cout << "\n== " << title << '\n';
  try {
    body();
  } catch (const std::exception& e) {
    std::cout << "  stopped: " << e.what() << '\n';
    (void)cudaGetLastError();  // do not let this section's error leak into the next one
  }
}

std::map<std::string, std::string> process_environment(const std::map<std::string, std::string>& over) {
  std::map<std::string, std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::size_t equals = text.find('=');
    if (equals != std::string::npos) environment[text.substr(0, equals)] = text.substr(equals + 1);
  }
  for (const auto& [name, value] : over) environment[name] = value;
  return environment;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string this_program() {
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
  return std::string(self, static_cast<std::size_t>(length));
}

ExecImage::ExecImage(std::vector<std::string> arguments, const std::map<std::string, std::string>& environment)
    : arguments_(std::move(arguments)) {
  if (arguments_.empty()) throw std::invalid_argument("ExecImage: no program");
  for (const auto& [name, value] : environment) entries_.push_back(name + "=" + value);
  for (std::string& a : arguments_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  for (std::string& e : entries_) envp_.push_back(e.data());
  envp_.push_back(nullptr);
}

void ExecImage::exec() const {
  execve(argv_[0], argv_.data(), envp_.data());
  _exit(127);
}

}  // namespace course
