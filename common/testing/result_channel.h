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
// that child processes do not inherit, and a Catch2 listener writes one line per case as the case ends:
//     {"token":"...","seq":1,"case":"<name>","status":"passed|failed|skipped","message":"..."}
// The listener also notices when a case was ended by one of Catch2's own control exceptions
// (what REQUIRE and SKIP() throw) that no failed check or SKIP() threw, wherever it is caught:
// the case then fails.
// Without COURSE_RESULT_FD (meson test, a student's own run) the channel stays closed.
// tests/grader/README.md explains why this, with the grader's symbol checks, can be trusted.
#pragma once

namespace course::testing {

// Call first thing in main(), with main's arguments, before any test runs. Returns false
// (after printing why to stderr) when the grader asked for a channel that cannot be used or
// the arguments are not the grader's; the program should then end with a failure.
bool open_result_channel(int argc, char** argv);

}  // namespace course::testing
