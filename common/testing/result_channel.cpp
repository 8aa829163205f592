// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The grader's result channel (see result_channel.h): a JSON line as each test case begins, one
// as it ends with its result, and one when main() closes the run, written through a pipe the
// grader made; and a check that every one of Catch2's control exceptions that anything catches
// was thrown by Catch2 itself after a failed check or a SKIP().
#include "result_channel.h"

#include <cxxabi.h>
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
#include <vector>

namespace {

constexpr std::size_t kMessageLimit = 2000;  // characters of a failure message kept in a record

int g_fd = -1;                             // the channel's descriptor, -1 when closed
std::string g_token;                       // the grader's token, repeated in every record
unsigned long g_sequence = 0;              // the number of the last record written
course::testing::CaseCounts g_run_counts;  // the run's cases, once it ended (g_run_ended)
bool g_run_ended = false;                  // the run ended (a listing of the cases runs none)
unsigned long g_results = 0;               // the results written (the closing record says how many)
std::atomic<bool> g_forged{false};         // a control exception was thrown that Catch2 did not mean
thread_local bool t_control_expected;      // Catch2 just reported a failure or a skip on this thread
// The control exceptions Catch2 threw on this thread in the running case (their objects):
// every other one that a handler catches was made by someone else.
thread_local std::vector<const void*> t_genuine;

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

// A record's first fields, {"token":"...","seq":N,"event":"<event>" (the caller adds the rest and "}\n").
std::string record_head(const char* event) {
  std::string record = "{\"token\":";
  append_json_string(record, g_token);
  record += ",\"seq\":" + std::to_string(++g_sequence) + ",\"event\":\"" + event + "\"";
  return record;
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

  void testRunEnded(const Catch::TestRunStats& stats) override {
    const auto& cases = stats.totals.testCases;
    g_run_counts = {cases.passed + cases.failedButOk, cases.failed, cases.skipped};
    g_run_ended = true;
  }

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    first_failure_.clear();
    skip_reason_.clear();
    g_forged = false;
    t_control_expected = false;
    t_genuine.clear();
    if (g_fd < 0) return;
    std::string record = record_head("begin") + ",\"case\":";
    append_json_string(record, info.name);
    write_all(record + "}\n");
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
    std::string record = record_head("result") + ",\"case\":";
    append_json_string(record, stats.testInfo->name);
    record += ",\"status\":\"" + status + "\",\"message\":";
    append_json_string(record, message);
    record += "}\n";
    ++g_results;
    write_all(record);
  }

 private:
  std::string first_failure_;
  std::string skip_reason_;
};

}  // namespace

CATCH_REGISTER_LISTENER(ResultChannelListener)

// Every C++ throw of this program passes here, and every catch (the test programs link with
// -Wl,--wrap=__cxa_throw,--wrap=__cxa_begin_catch; Catch2 is a static library, so its own
// handlers are wrapped too). A control exception is genuine when Catch2 threw it right after
// reporting a failed check or a SKIP(); a handler that catches any other one (made by hand,
// raised with std::rethrow_exception, or an object whose type was rewritten in memory, none of
// which passes __cxa_throw) marks the running case as forged.
extern "C" {
[[noreturn]] void __real___cxa_throw(void* object, std::type_info* type, void (*destroy)(void*));
[[noreturn]] void __wrap___cxa_throw(void* object, std::type_info* type, void (*destroy)(void*)) {
  if (is_control_exception(type)) {
    if (t_control_expected)
      t_genuine.push_back(object);
    else
      g_forged = true;
    t_control_expected = false;
  }
  __real___cxa_throw(object, type, destroy);
}

void* __real___cxa_begin_catch(void* exception) noexcept;
void* __wrap___cxa_begin_catch(void* exception) noexcept {
  void* object = __real___cxa_begin_catch(exception);
  if (is_control_exception(abi::__cxa_current_exception_type())) {
    bool genuine = false;
    for (const void* known : t_genuine) genuine = genuine || known == object;
    if (!genuine) g_forged = true;
  }
  return object;
}
}

namespace course::testing {

namespace {

// Everything the grader wrote into the setup pipe, up to its end (it writes, then closes).
std::string read_setup(int fd) {
  std::string text;
  char buffer[4096];
  while (text.size() < 256 * 1024) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

std::string hex(const char* text) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char* c = reinterpret_cast<const unsigned char*>(text); *c != 0; ++c) {
    out += kDigits[*c >> 4];
    out += kDigits[*c & 15];
  }
  return out;
}

long descriptor(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || fd < 0 || fcntl(static_cast<int>(fd), F_GETFD) < 0) return -2;
  return fd;
}

}  // namespace

bool open_result_channel(int argc, char** argv) {
  const bool asked = std::getenv("COURSE_RESULT_FD") != nullptr || std::getenv("COURSE_RESULT_SETUP_FD") != nullptr;
  const long fd = descriptor("COURSE_RESULT_FD");
  const long setup_fd = descriptor("COURSE_RESULT_SETUP_FD");
  unsetenv("COURSE_RESULT_FD");
  unsetenv("COURSE_RESULT_SETUP_FD");
  if (!asked) return true;
  if (fd < 0 || setup_fd < 0) {
    std::fprintf(stderr, "result channel: COURSE_RESULT_FD or COURSE_RESULT_SETUP_FD is not an open descriptor\n");
    return false;
  }
  // The token and the arguments the grader gave this program come through a pipe, read here
  // once: nothing secret is in the environment, and a program whose arguments were changed
  // before main() (by code that ran first) reports nothing.
  const std::string setup = read_setup(static_cast<int>(setup_fd));
  close(static_cast<int>(setup_fd));
  std::string expected;
  for (int i = 1; i < argc; ++i) expected += hex(argv[i]) + "\n";
  const std::size_t first_line = setup.find('\n');
  if (first_line == std::string::npos || first_line == 0 || setup.substr(first_line + 1) != expected) {
    std::fprintf(stderr, "result channel: the program's arguments are not the ones the grader gave it\n");
    return false;
  }
  g_token = setup.substr(0, first_line);
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

int meson_exit_code(const CaseCounts& cases) {
  if (cases.failed > 0) return 1;
  if (cases.passed > 0) return 0;
  return cases.skipped > 0 ? 77 : 2;
}

int run_exit_code(int catch2_exit_code) {
  return g_run_ended ? meson_exit_code(g_run_counts) : catch2_exit_code;
}

void close_result_channel(int exit_code) {
  if (g_fd < 0) return;
  write_all(record_head("end") + ",\"cases\":" + std::to_string(g_results) + ",\"exit\":" + std::to_string(exit_code) +
            "}\n");
  close(g_fd);
  g_fd = -1;
}

}  // namespace course::testing
