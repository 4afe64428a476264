// LsnWaitList: fibers and threads waiting for a monotonic LSN (the log's written or durable
// position) to reach a target.
//
// Owns: an unordered intrusive list of waiters. Each Waiter lives on its waiting fiber's or
// thread's stack and carries a Baton.
//
// Protocol (no lost wake-ups):
//   waiter:   lock; if progress >= target or aborted: unlock, return; link; unlock; Baton::Wait.
//   advancer: store progress (release); WakeUpTo(progress) - which takes the lock.
// A waiter either checks under the lock after the advancer's store (and sees it) or is linked
// before the advancer takes the lock (and is woken). The same holds for `aborted` with WakeAll.
//
// Invariants:
//   1. A waiter is linked from the moment it is added until a Wake* unlinks it; it is unlinked
//      before its Baton is posted, and its record is not touched after the post (the waiter's
//      frame may be gone by then).
//   2. size() counts linked waiters.
//
// Thread/fiber safety: everything is safe from any fiber and thread. The spin lock is held for a
// few instructions per waiter, never across a post or a suspension.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "threads/baton.h"
#include "threads/sync.h"

namespace sm::log {

class LsnWaitList {
 public:
  // Suspends the caller until progress >= target or aborted is true. Returns true if it had to
  // wait, false if the condition held at once.
  bool Wait(uint64_t target, const std::atomic<uint64_t>& progress,
            const std::atomic<bool>& aborted);
  // Wakes every waiter whose target <= lsn; returns how many.
  size_t WakeUpTo(uint64_t lsn);
  // Wakes every waiter.
  size_t WakeAll() { return WakeUpTo(UINT64_MAX); }
  // Linked waiters; relaxed: a hint for the flusher, which learns of new waiters through its
  // wake-up baton anyway.
  size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  struct Waiter {
    uint64_t target = 0;
    Waiter* next = nullptr;
    threads::Baton baton;
  };

  threads::SpinLock lock_;
  Waiter* head_ = nullptr;  // GUARDED_BY(lock_)
  std::atomic<size_t> size_{0};
};

}  // namespace sm::log
