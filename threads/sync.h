// Fiber-aware synchronization: SpinLock, Latch (shared/exclusive), Mutex, Event, WaitGroup.
//
// Every wait suspends the calling fiber (other fibers of its worker run meanwhile) or, on a
// plain OS thread, blocks that thread; waiters are queued FIFO and woken through a Baton, so
// a wake-up from another worker goes through that worker's remote queue.
//
// Latch state word (Latch::word_):
//   bits 0..31  number of shared holders
//   bit  32     held exclusively
//   bit  33     waiters queued (the queue is non-empty); while set, the lock-free fast paths
//               refuse to acquire, so queued waiters are served in FIFO order (no barging)
// Invariants:
//   1. Never both shared holders and the exclusive bit.
//   2. The waiter queue and bit 33 change only under queue_lock_.
//   3. A release that finds waiters hands the latch over: it sets the word on the waiters'
//      behalf (one exclusive, or a run of consecutive shared waiters) before posting them.
//   4. Exclusive acquisitions by a fiber bump its exclusive_held() counter (the STEPS CTX gate);
//      shared ones do not.
//
// Guarded members: a member that may be touched only with a lock held says so in one form,
// `// GUARDED_BY(lock_)` (LevelDB's annotation, as a comment: g++ has no thread-safety
// analysis), and the functions that rely on it check it with lock_.AssertHeld().
//
// Thread/fiber safety: all classes here are safe from any fiber and any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "sm/common/assert.h"
#include "threads/baton.h"

namespace sm::threads {

// Test-and-test-and-set spin lock for critical sections of a few instructions that never
// wait. Never hold one across a suspension point.
class SpinLock {
 public:
  void lock() {
    for (;;) {
      if (!flag_.exchange(true, std::memory_order_acquire)) return;
      while (flag_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  bool try_lock() { return !flag_.exchange(true, std::memory_order_acquire); }
  void unlock() { flag_.store(false, std::memory_order_release); }
  // Debug builds: aborts unless the lock is held. A spin lock records no holder (it lives in
  // 64-byte lock-table buckets), so this checks that someone holds it, not who.
  void AssertHeld() const { SM_DASSERT(flag_.load(std::memory_order_relaxed)); }

 private:
  std::atomic<bool> flag_{false};
};

enum class LatchMode : uint8_t { kShared, kExclusive };

class Latch {
 public:
  Latch() = default;
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  void Acquire(LatchMode mode) {
    if (mode == LatchMode::kShared) {
      AcquireShared();
    } else {
      AcquireExclusive();
    }
  }
  void Release(LatchMode mode) {
    if (mode == LatchMode::kShared) {
      ReleaseShared();
    } else {
      ReleaseExclusive();
    }
  }
  void AcquireShared();
  void AcquireExclusive();
  bool TryAcquireShared();
  bool TryAcquireExclusive();
  void ReleaseShared();
  void ReleaseExclusive();
  // Shared -> exclusive if the caller is the only holder and nobody is queued; else false
  // and the caller still holds it shared. (A blocking upgrade could deadlock two upgraders.)
  bool TryUpgrade();
  // Exclusive -> shared; wakes queued shared waiters.
  void Downgrade();

  bool HeldExclusive() const { return (word_.load(std::memory_order_relaxed) & kExclusive); }
  uint32_t shared_count() const {
    return static_cast<uint32_t>(word_.load(std::memory_order_relaxed) & kSharedMask);
  }
  // acquire: a caller that sees the latch free sees the last holder's accesses done.
  bool IsFree() const { return (word_.load(std::memory_order_acquire) & ~kWaiters) == 0; }

 private:
  static constexpr uint64_t kSharedMask = 0xffffffffull;
  static constexpr uint64_t kExclusive = 1ull << 32;
  static constexpr uint64_t kWaiters = 1ull << 33;
  struct Waiter;

  void AcquireSlow(LatchMode mode);
  void ReleaseSlow();
  static void NoteExclusive(bool acquired);

  std::atomic<uint64_t> word_{0};
  SpinLock queue_lock_;
  Waiter* head_ = nullptr;  // FIFO of waiters; GUARDED_BY(queue_lock_)
  Waiter* tail_ = nullptr;  // GUARDED_BY(queue_lock_)
};

// Exclusive-only latch; counts toward the fiber's exclusive_held() like an exclusive latch.
// Debug builds record the holder (the fiber, or the OS thread off a fiber) for AssertHeld.
class Mutex {
 public:
  void lock() {
    latch_.AcquireExclusive();
    SM_DEBUG_ONLY(holder_.store(Self(), std::memory_order_relaxed));
  }
  bool try_lock() {
    if (!latch_.TryAcquireExclusive()) return false;
    SM_DEBUG_ONLY(holder_.store(Self(), std::memory_order_relaxed));
    return true;
  }
  void unlock() {
    SM_DEBUG_ONLY(holder_.store(nullptr, std::memory_order_relaxed));
    latch_.ReleaseExclusive();
  }
  bool IsHeld() const { return latch_.HeldExclusive(); }
  // Debug builds: aborts unless the calling fiber (off a fiber: thread) holds the mutex.
  void AssertHeld() const {
#ifdef SM_DEBUG
    SM_ASSERT(latch_.HeldExclusive());
    SM_ASSERT(holder_.load(std::memory_order_relaxed) == Self());
#endif
  }

 private:
  Latch latch_;
#ifdef SM_DEBUG
  // The caller's identity: its fiber, else a per-thread address.
  static const void* Self();

  // Stored by the holder under the latch (relaxed: only the holder's own later load must see
  // its store, and program order gives that; any other thread's load fails AssertHeld).
  std::atomic<const void*> holder_{nullptr};
#endif
};

// Manual-reset event: Wait returns once Set has been called and until Reset. When Wait (or a
// WaitUntil that returns true) returns, the Set that released it is done with the event, so
// the waiter may destroy it.
class Event {
 public:
  Event() = default;
  explicit Event(bool set) : set_(set) {}
  void Set();
  void Reset();
  bool IsSet() const { return set_.load(std::memory_order_acquire); }
  void Wait();
  bool WaitUntil(Baton::Clock::time_point deadline);

 private:
  struct Waiter;
  bool WaitImpl(Baton::Clock::time_point deadline, bool timed);
  std::atomic<bool> set_{false};
  SpinLock lock_;
  Waiter* head_ = nullptr;  // GUARDED_BY(lock_)
};

// Counts outstanding work; Wait returns when the count reaches zero, and the group may be
// destroyed then: the Done that reached zero is done with it (Wait waits on the event, not on
// the count, which reaches zero before that Done sets the event).
class WaitGroup {
 public:
  void Add(int64_t n = 1);
  void Done();
  void Wait() { zero_.Wait(); }
  int64_t count() const { return count_.load(std::memory_order_acquire); }

 private:
  std::atomic<int64_t> count_{0};
  Event zero_{/*set=*/true};  // set while the count is zero (from the Done that made it so)
};

// RAII holders.
class LatchGuard {
 public:
  LatchGuard(Latch& latch, LatchMode mode) : latch_(&latch), mode_(mode) {
    latch_->Acquire(mode_);
  }
  ~LatchGuard() {
    if (latch_ != nullptr) latch_->Release(mode_);
  }
  LatchGuard(const LatchGuard&) = delete;
  LatchGuard& operator=(const LatchGuard&) = delete;

 private:
  Latch* latch_;
  LatchMode mode_;
};

}  // namespace sm::threads
