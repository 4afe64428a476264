// Helpers for the lock manager tests: polling for a queue state, ending transactions with a
// check that the table is empty, and a small "run this on a fiber and wait for it" wrapper.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <thread>

#include "sm/common/status.h"
#include "sm/lock/lock_manager.h"
#include "tests/test_util.h"
#include "threads/baton.h"
#include "threads/runtime.h"

namespace sm::lock::test {

// Polls `pred` from a plain thread until it holds or `timeout` passes.
inline bool Eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// Ends the transactions of `owners` and checks that the lock table is empty and consistent.
inline void EndAll(LockManager& lm, std::initializer_list<LockOwner*> owners) {
  for (LockOwner* owner : owners) lm.ReleaseAll(owner);
  CHECK(lm.TEST_LockHeadCount() == 0);
  CHECK(lm.CheckInvariants());
}

// A lock call running on a fiber; the plain test thread joins it with Join().
class FiberCall {
 public:
  FiberCall(threads::Runtime* rt, int worker, std::function<Status()> fn) {
    rt->Spawn(
        [this, fn = std::move(fn)] {
          status_ = fn();
          done_.Post();
        },
        worker);
  }
  // Waits (from a plain thread) for the call to return, and gives its status.
  Status Join() {
    done_.Wait();
    return std::move(status_);
  }
  bool finished() const { return done_.posted(); }

 private:
  Status status_;
  threads::Baton done_;
};

}  // namespace sm::lock::test
