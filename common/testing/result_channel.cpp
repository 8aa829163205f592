// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The grader's result channel (see result_channel.h): one JSON line per test case, written
// by a Catch2 listener through a pipe the grader made, and a check that every one of Catch2's
// control exceptions was thrown by Catch2 itself after a failed check or a SKIP().
#include "result_channel.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch_test_case_info.hpp>
#include <catch2/internal/catch_test_failure_exception.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <typeinfo>

namespace {

constexpr std::size_t kMessageLimit = 2000;  // characters of a failure message kept in a record

int g_fd = -1;                         // the channel's descriptor, -1 when closed
std::string g_token;                   // the grader's token, repeated in every record
std::atomic<bool> g_forged{false};     // a control exception was thrown that Catch2 did not mean
thread_local bool t_control_expected;  // Catch2 just reported a failure or a skip on this thread

bool is_control_exception(const std::type_info* type) {
  if (type == nullptr) return false;
  // Compare by name, as the C++ runtime does when it matches a handler: a type of the same
  // name made elsewhere would be caught by Catch2's handler too.
  const char* name = type->name();
  if (*name == '*') ++name;
  for (const std::type_info* control : {&typeid(Catch::TestFailureException), &typeid(Catch::TestSkipException)}) {
    const char* control_name = control->name();
    if (*control_name == '*') ++control_name;
    if (std::strcmp(name, control_name) == 0) return true;
  }
  return false;
}

void append_json_string(std::string& out, const std::string& text) {
  out += '"';
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void write_all(const std::string& text) {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t written = ::write(g_fd, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // the grader is gone; nothing else to do
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

// The first failed check of a case, in the words the grader shows a student:
// "REQUIRE( a == b ) with expansion: 1 == 2", then "with message: <INFO>" lines.
std::string describe_failure(const Catch::AssertionStats& stats) {
  const Catch::AssertionResult& result = stats.assertionResult;
  std::string text;
  const std::string message(result.getMessage());
  if (result.getResultType() == Catch::ResultWas::ThrewException && result.hasExpression()) {
    text = message + " (thrown inside " + result.getExpressionInMacro() + ")";
  } else if (result.hasExpression()) {
    text = result.getExpressionInMacro();
    if (result.hasExpandedExpression() && result.getExpandedExpression() != result.getExpression())
      text += " with expansion: " + result.getExpandedExpression();
    if (!message.empty()) text += "\nwith message: " + message;
  } else {
    text = message;
  }
  for (const Catch::MessageInfo& info : stats.infoMessages)
    if (info.type == Catch::ResultWas::Info && !info.message.empty()) text += "\nwith message: " + info.message;
  return text;
}

class ResultChannelListener : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo&) override {
    first_failure_.clear();
    skip_reason_.clear();
    g_forged = false;
    t_control_expected = false;
  }

  void assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& result = stats.assertionResult;
    if (result.getResultType() == Catch::ResultWas::ExplicitSkip) {
      t_control_expected = true;
      if (skip_reason_.empty()) skip_reason_ = std::string(result.getMessage());
    } else if (!result.isOk()) {
      t_control_expected = true;
      if (first_failure_.empty()) first_failure_ = describe_failure(stats);
    }
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (g_fd < 0) return;
    const auto& counts = stats.totals.assertions;
    std::string status = "passed", message;
    if (g_forged) {
      status = "failed";
      message =
          "the case was ended by the test framework's own control exception, thrown by code that is not a "
          "check or SKIP() (student code must not throw Catch2's exceptions)";
    } else if (counts.failed > 0 || !first_failure_.empty()) {
      status = "failed";
      message = first_failure_.empty() ? "failed (no check named)" : first_failure_;
    } else if (counts.skipped > 0) {
      status = "skipped";
      message = skip_reason_;
    }
    if (message.size() > kMessageLimit) message = message.substr(0, kMessageLimit) + "...";
    std::string record = "{\"token\":";
    append_json_string(record, g_token);
    record += ",\"seq\":" + std::to_string(++sequence_) + ",\"case\":";
    append_json_string(record, stats.testInfo->name);
    record += ",\"status\":\"" + status + "\",\"message\":";
    append_json_string(record, message);
    record += "}\n";
    write_all(record);
  }

 private:
  std::string first_failure_;
  std::string skip_reason_;
  unsigned long sequence_ = 0;
};

}  // namespace

CATCH_REGISTER_LISTENER(ResultChannelListener)

// Every C++ throw of this program passes here (the test programs link with
// -Wl,--wrap=__cxa_throw): a control exception that Catch2 did not just announce by reporting
// a failed check or a SKIP() marks the running case as forged.
extern "C" {
[[noreturn]] void __real___cxa_throw(void* object, std::type_info* type, void (*destroy)(void*));
[[noreturn]] void __wrap___cxa_throw(void* object, std::type_info* type, void (*destroy)(void*)) {
  if (is_control_exception(type)) {
    if (!t_control_expected) g_forged = true;
    t_control_expected = false;
  }
  __real___cxa_throw(object, type, destroy);
}
}

namespace course::testing {

bool open_result_channel() {
  const char* fd_text = std::getenv("COURSE_RESULT_FD");
  const char* token = std::getenv("COURSE_RESULT_TOKEN");
  if (fd_text == nullptr) return true;
  g_token = token ? token : "";
  char* end = nullptr;
  const long fd = std::strtol(fd_text, &end, 10);
  unsetenv("COURSE_RESULT_FD");
  unsetenv("COURSE_RESULT_TOKEN");
  if (end == fd_text || *end != '\0' || fd < 0 || fcntl(static_cast<int>(fd), F_GETFD) < 0) {
    std::fprintf(stderr, "result channel: COURSE_RESULT_FD=%s is not an open descriptor\n", fd_text);
    return false;
  }
  // Move the descriptor to a random number in the upper half of what this process may open,
  // closed on exec, so neither a guess nor a child process finds it where the grader put it.
  rlimit limit{};
  long high = 1024;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    high = static_cast<long>(limit.rlim_cur);
  std::random_device random;
  const long lowest = high / 2 + static_cast<long>(random() % static_cast<unsigned long>(high / 4 + 1));
  int moved = fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, static_cast<int>(lowest));
  if (moved < 0) moved = fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) {
    std::fprintf(stderr, "result channel: cannot move descriptor %ld: %s\n", fd, std::strerror(errno));
    return false;
  }
  close(static_cast<int>(fd));
  g_fd = moved;
  return true;
}

}  // namespace course::testing
