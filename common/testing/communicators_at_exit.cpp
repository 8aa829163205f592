// SPDX-License-Identifier: MIT
// Copyright (c) 2026 The multi-GPU course authors
//
// The keeper of communicators_at_exit.h: one per program, made at the first set it is given, so
// that its destructor runs at exit, before the CUDA runtime's clean-up.
#include "communicators_at_exit.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "gpu_test.h"

namespace course::testing {
namespace {

class Keeper {
 public:
  void keep(std::vector<ncclComm_t> set) {
    const std::lock_guard<std::mutex> lock(mutex_);
    sets_.push_back(std::move(set));
  }
  ~Keeper() {
    run_with_watchdog("destroying the communicators the cases made", std::chrono::seconds(30),
                      "a collective still running on one of them: ncclCommDestroy waits for it (a call that "
                      "not every rank of the communicator joined)",
                      [this] {
                        std::vector<std::thread> destroying;
                        for (std::vector<ncclComm_t>& set : sets_)
                          destroying.emplace_back([&set] {
                            for (ncclComm_t comm : set)
                              if (comm != nullptr) (void)ncclCommDestroy(comm);
                          });
                        for (std::thread& t : destroying) t.join();
                      });
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<ncclComm_t>> sets_;
};

}  // namespace

void destroy_at_exit(std::vector<ncclComm_t> set) {
  static Keeper keeper;
  keeper.keep(std::move(set));
}

}  // namespace course::testing
