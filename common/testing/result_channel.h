// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The grader's result channel: how a test program tells the grader each case's result in a
// way the student's code in the same process cannot rewrite after the fact. The grader opens
// two pipes: the program writes results into one (its descriptor in COURSE_RESULT_FD) and
// reads its setup from the other (COURSE_RESULT_SETUP_FD): a per-run token, then the program's
// arguments as the grader gave them. open_result_channel() reads the setup at the top of
// main() (nothing secret is in the environment), checks the arguments (code that ran before
// main() could have rewritten them), moves the result descriptor to a random high number
// that child processes do not inherit, and a Catch2 listener writes a line as each case begins
// and one as it ends, and close_result_channel() a last one as main() returns:
//     {"token":"...","seq":1,"event":"begin","case":"<name>"}
//     {"token":"...","seq":2,"event":"result","case":"<name>","status":"passed|failed|skipped","message":"..."}
//     {"token":"...","seq":3,"event":"end","cases":1,"exit":0}
// The grader counts a result only from a process that ended the way these records say: the
// closing record present, and the exit status the one it names (tests/grader/README.md).
// The listener also notices when a case was ended by one of Catch2's own control exceptions
// (what REQUIRE and SKIP() throw) that no failed check or SKIP() threw, wherever it is caught:
// the case then fails.
// Without COURSE_RESULT_FD (meson test, a student's own run) the channel stays closed.
// tests/grader/README.md explains why this, with the grader's symbol checks, can be trusted.
#pragma once

#include <cstdint>

namespace course::testing {

// Call first thing in main(), with main's arguments, before any test runs. Returns false
// (after printing why to stderr) when the grader asked for a channel that cannot be used or
// the arguments are not the grader's; the program should then end with a failure.
bool open_result_channel(int argc, char** argv);

// Call as main() returns `exit_code` after the test run: writes the run's closing record (the
// number of results written, and `exit_code`) and closes the channel. A run that ends any
// other way (a signal, std::exit, a hang) has no closing record, and none of its results count.
void close_result_channel(int exit_code);

// The run's test cases by outcome, as Catch2 counts them (TestRunStats::totals.testCases).
struct CaseCounts {
  std::uint64_t passed = 0;
  std::uint64_t failed = 0;
  std::uint64_t skipped = 0;
};

// The exit code for Meson, from the run's own counts rather than Catch2's exit code (before
// Catch2 3.7.1 that was the number of failed assertions, so 4 failures read as "all skipped"):
// 1 when a case failed, 77 when every case that ran was skipped, 2 when no case ran (no test
// case matched the filter), 0 otherwise.
int meson_exit_code(const CaseCounts& cases);

// main()'s exit code once Catch2's session has run: meson_exit_code of the cases the run counted
// (the channel's listener counts them as the run ends), or `catch2_exit_code` where no run ended
// (a listing of the cases runs none). Pass it to close_result_channel and return it.
int run_exit_code(int catch2_exit_code);

}  // namespace course::testing
