// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The Catch2 main of every lesson's test program: prints the GPU inventory once (to stderr,
// so a reporter writing XML to stdout stays valid), makes device 0 current again after every
// test case, and gives Meson an exit code made from the counts of cases. When the grader runs it, each case's result
// also goes to the grader through the result channel (result_channel.h), opened before anything else
// and closed, with the exit code, as main() returns.
#include <cuda_runtime.h>

#include <catch2/catch_session.hpp>
#include <catch2/interfaces/catch_interfaces_reporter.hpp>
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>
#include <cstdlib>
#include <iostream>

#include "gpu_test.h"
#include "result_channel.h"

namespace {

// The current device belongs to the thread, and every case runs on the main thread: without
// this, a case that leaves device 2 current (on purpose, or through the student's mistake)
// would make the next case start there.
class BackToDeviceZero : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats&) override {
    if (course::testing::gpu_count() > 0) (void)cudaSetDevice(0);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(BackToDeviceZero)

int main(int argc, char** argv) {
  // Streams share the device's hardware work queues, given out in turn as streams are made: 8 of
  // them by default, so the 9th stream queues behind the 1st. A case that holds one worker's stream
  // and watches the others (held_stream.h) needs them independent: on one H100, lesson 08's four
  // workers made 8 streams, the test's watcher a 9th, and the watcher waited behind the held worker.
  // 32 is the most the driver gives; read when the CUDA context is made, so set before any CUDA call.
  // The ranks of a multi-process job (launch_ranks, lesson 09's mpirun) would inherit it; they are
  // given the driver's default instead (rank_environment in gpu_test.h says why).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", /*overwrite=*/0);
  if (!course::testing::open_result_channel(argc, argv)) return 1;
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  // The inventory starts CUDA (half a second on a 2-GPU host); a listing (the grader lists every
  // lesson's cases before it runs any) runs no case and needs none.
  const auto& asked = session.configData();
  const bool listing = asked.listTests || asked.listTags || asked.listReporters || asked.listListeners;
  if (!listing && std::getenv("COURSE_CHILD_OUTPUT") == nullptr) {
    std::cerr << course::testing::gpu_inventory() << std::flush;
  }
  const int exit_code = course::testing::run_exit_code(session.run());
  course::testing::close_result_channel(exit_code);  // the last record: the run ended as it says
  return exit_code;
}
