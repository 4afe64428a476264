// Latch, Event and WaitGroup: slow paths, queueing and hand-off.
#include "threads/sync.h"

#include <mutex>

#include "sm/common/assert.h"
#include "threads/ctx_point.h"
#include "threads/fiber.h"
#include "threads/worker.h"

namespace sm::threads {

// A CTX point (ctx_point.h), a candidate for the STEPS placement: a blocking latch or mutex
// acquisition, before it (it may wait). The try-acquires have none: the buffer pool tries
// latches under its partition spin lock.
SM_DEFINE_CTX_SITE(kCtxLatchAcquire, "latch.acquire");

struct Latch::Waiter {
  LatchMode mode = LatchMode::kShared;
  Waiter* next = nullptr;
  Baton granted;
};

#ifdef SM_DEBUG
const void* Mutex::Self() {
  static thread_local const char thread_identity = 0;
  if (const Fiber* fiber = Worker::CurrentFiber()) return fiber;
  return &thread_identity;
}
#endif

void Latch::NoteExclusive(bool acquired) {
  if (Fiber* fiber = Worker::CurrentFiber()) {
    if (acquired) {
      fiber->NoteExclusiveAcquired();
    } else {
      fiber->NoteExclusiveReleased();
    }
  }
}

bool Latch::TryAcquireShared() {
  uint64_t w = word_.load(std::memory_order_relaxed);
  while (!(w & (kExclusive | kWaiters))) {
    // acquire: the holder's critical section starts after the latch is observed taken.
    if (word_.compare_exchange_weak(w, w + 1, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

bool Latch::TryAcquireExclusive() {
  uint64_t expected = 0;
  if (word_.compare_exchange_strong(expected, kExclusive, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
    NoteExclusive(true);
    return true;
  }
  return false;
}

void Latch::AcquireShared() {
  SM_CTX(kCtxLatchAcquire);
  if (!TryAcquireShared()) AcquireSlow(LatchMode::kShared);
}

void Latch::AcquireExclusive() {
  SM_CTX(kCtxLatchAcquire);
  uint64_t expected = 0;
  if (!word_.compare_exchange_strong(expected, kExclusive, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
    AcquireSlow(LatchMode::kExclusive);
  }
  NoteExclusive(true);
}

void Latch::AcquireSlow(LatchMode mode) {
  Waiter me;
  me.mode = mode;
  {
    std::lock_guard<SpinLock> guard(queue_lock_);
    uint64_t w = word_.load(std::memory_order_relaxed);
    for (;;) {
      if (head_ == nullptr) {
        bool grantable =
            mode == LatchMode::kShared ? !(w & kExclusive) : (w & (kExclusive | kSharedMask)) == 0;
        uint64_t desired = mode == LatchMode::kShared ? w + 1 : (w | kExclusive);
        if (grantable) {
          if (word_.compare_exchange_weak(w, desired, std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
            return;
          }
          continue;
        }
      }
      if (word_.compare_exchange_weak(w, w | kWaiters, std::memory_order_relaxed,
                                      std::memory_order_relaxed)) {
        break;
      }
    }
    if (tail_ == nullptr) {
      head_ = tail_ = &me;
    } else {
      tail_->next = &me;
      tail_ = &me;
    }
  }
  WaitReasonScope reason(WaitReason::kLatch);
  // The releaser set the word on our behalf (invariant 3); the Baton's acquire pairs with
  // its post, which follows that write, so no fence is needed here.
  me.granted.Wait();
}

void Latch::ReleaseShared() {
  // release: publish the reader's critical section before the count drops.
  uint64_t old = word_.fetch_sub(1, std::memory_order_release);
  SM_DASSERT((old & kSharedMask) > 0);
  if ((old & kWaiters) && (old & kSharedMask) == 1) ReleaseSlow();
}

void Latch::ReleaseExclusive() {
  NoteExclusive(false);
  uint64_t expected = kExclusive;
  if (word_.compare_exchange_strong(expected, 0, std::memory_order_release,
                                    std::memory_order_relaxed)) {
    return;
  }
  SM_DASSERT(expected & kExclusive);
  {
    std::lock_guard<SpinLock> guard(queue_lock_);
    word_.fetch_and(~kExclusive, std::memory_order_release);
  }
  ReleaseSlow();
}

void Latch::ReleaseSlow() {
  Waiter* to_post = nullptr;
  {
    std::lock_guard<SpinLock> guard(queue_lock_);
    uint64_t w = word_.load(std::memory_order_relaxed);
    Waiter** link = &to_post;
    while (head_ != nullptr) {
      Waiter* head = head_;
      uint64_t desired;
      if (head->mode == LatchMode::kExclusive) {
        if ((w & (kExclusive | kSharedMask)) != 0) break;
        desired = w | kExclusive;
      } else {
        if (w & kExclusive) break;
        desired = w + 1;
      }
      Waiter* rest = head->next;
      if (rest == nullptr) desired &= ~kWaiters;
      if (!word_.compare_exchange_weak(w, desired, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
        continue;  // a concurrent shared release changed the count; re-evaluate
      }
      w = desired;
      head_ = rest;
      if (rest == nullptr) tail_ = nullptr;
      head->next = nullptr;
      *link = head;
      link = &head->next;
      if (head->mode == LatchMode::kExclusive) break;
    }
  }
  // Post outside the spin lock: a post may wake a thread through a syscall.
  while (to_post != nullptr) {
    Waiter* next = to_post->next;  // read before posting: the record dies with its waiter
    to_post->granted.Post();
    to_post = next;
  }
}

bool Latch::TryUpgrade() {
  uint64_t expected = 1;  // exactly one shared holder (us), no waiters
  if (word_.compare_exchange_strong(expected, kExclusive, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
    NoteExclusive(true);
    return true;
  }
  return false;
}

void Latch::Downgrade() {
  NoteExclusive(false);
  uint64_t expected = kExclusive;
  if (word_.compare_exchange_strong(expected, 1, std::memory_order_release,
                                    std::memory_order_relaxed)) {
    return;
  }
  {
    std::lock_guard<SpinLock> guard(queue_lock_);
    word_.fetch_add(1 - kExclusive, std::memory_order_release);  // X -> one shared holder
  }
  ReleaseSlow();  // grants the shared waiters at the head of the queue, if any
}

struct Event::Waiter {
  Waiter* next = nullptr;
  Baton posted;
};

void Event::Set() {
  Waiter* waiters;
  {
    std::lock_guard<SpinLock> guard(lock_);
    set_.store(true, std::memory_order_release);
    waiters = head_;
    head_ = nullptr;
  }
  while (waiters != nullptr) {
    Waiter* next = waiters->next;
    waiters->posted.Post();
    waiters = next;
  }
}

// An RMW for the same reason as Baton::Reset: loads after it must not move before it.
void Event::Reset() { set_.exchange(false, std::memory_order_seq_cst); }

void Event::Wait() { WaitImpl({}, false); }

bool Event::WaitUntil(Baton::Clock::time_point deadline) { return WaitImpl(deadline, true); }

bool Event::WaitImpl(Baton::Clock::time_point deadline, bool timed) {
  if (set_.load(std::memory_order_acquire)) {
    // The Set that stored it may still hold lock_; once we have held it, that Set is done
    // with the event (it posts its waiters after unlocking, touching only their records).
    std::lock_guard<SpinLock> guard(lock_);
    return true;
  }
  Waiter me;
  {
    std::lock_guard<SpinLock> guard(lock_);
    if (set_.load(std::memory_order_acquire)) return true;
    me.next = head_;
    head_ = &me;
  }
  if (!timed) {
    me.posted.Wait();
    return true;
  }
  if (me.posted.WaitUntil(deadline)) return true;
  {
    std::lock_guard<SpinLock> guard(lock_);
    for (Waiter** link = &head_; *link != nullptr; link = &(*link)->next) {
      if (*link == &me) {
        *link = me.next;
        return false;
      }
    }
  }
  // Set() took us off the list and is about to post: that post is ours to consume.
  me.posted.Wait();
  return true;
}

void WaitGroup::Add(int64_t n) {
  SM_ASSERT(n >= 0);
  if (n == 0) return;  // the count stays as it is, and so does the event
  if (count_.fetch_add(n, std::memory_order_acq_rel) == 0) zero_.Reset();
}

void WaitGroup::Done() {
  int64_t old = count_.fetch_sub(1, std::memory_order_acq_rel);
  SM_ASSERT(old > 0);
  if (old == 1) zero_.Set();
}

}  // namespace sm::threads
