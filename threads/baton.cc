// Baton: fiber and OS-thread waiting, timed waits through worker timers and futexes.
#include "threads/baton.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <thread>

#include "sm/common/assert.h"
#include "threads/fiber.h"
#include "threads/worker.h"

namespace sm::threads {
namespace {

long Futex(std::atomic<uint32_t>* addr, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, value, timeout, nullptr, 0);
}

}  // namespace

struct Baton::Waiter {
  Fiber* fiber = nullptr;             // null for an OS-thread waiter
  std::atomic<uint32_t> futex_word{0};  // thread waiter: 1 once posted
  bool timed_out = false;             // fiber waiter: set by the timer that won the race
  Baton* baton = nullptr;             // fiber waiter with a deadline: for the timer

  // The timer of a timed fiber wait: it wins only if it takes the waiter out of the baton
  // before a Post does.
  static void Expire(void* arg) {
    auto* waiter = static_cast<Waiter*>(arg);
    uintptr_t mine = reinterpret_cast<uintptr_t>(waiter);
    if (waiter->baton->state_.compare_exchange_strong(mine, 0, std::memory_order_acq_rel)) {
      waiter->timed_out = true;
      waiter->fiber->worker()->Wake(waiter->fiber);
    }
  }
};

void Baton::Post() {
  uintptr_t old = state_.exchange(kPosted, std::memory_order_acq_rel);
  if (old <= kPosted) return;
  auto* waiter = reinterpret_cast<Waiter*>(old);
  if (Fiber* fiber = waiter->fiber) {
    // Read everything needed before waking: the waiter record dies once the fiber runs.
    fiber->worker()->Wake(fiber);
    return;
  }
  waiter->futex_word.store(1, std::memory_order_release);
  // The waiter may already have returned; a wake on a dead futex word is harmless.
  Futex(&waiter->futex_word, FUTEX_WAKE_PRIVATE, 1, nullptr);
}

void Baton::Wait() {
  if (Fiber::Current() != nullptr) {
    WaitOnFiber({}, false);
  } else {
    WaitOnThread({}, false);
  }
}

bool Baton::WaitUntil(Clock::time_point deadline) {
  if (Fiber::Current() != nullptr) return WaitOnFiber(deadline, true);
  return WaitOnThread(deadline, true);
}

void Baton::Reset() {
  // A read-modify-write (a full barrier), not a plain store: the usual pattern is Reset, then
  // look at some condition, then Wait. With a relaxed store the condition's loads could be
  // ordered before the reset, and a Post landing in between (after the condition was read,
  // before the reset took effect) would be wiped out: a lost wake-up.
  uintptr_t old = state_.exchange(0, std::memory_order_seq_cst);
  SM_DASSERT(old <= kPosted);
  (void)old;
}

bool Baton::WaitOnFiber(Clock::time_point deadline, bool timed) {
  if (state_.load(std::memory_order_acquire) == kPosted) return true;
  Waiter waiter;
  waiter.fiber = Fiber::Current();
  uintptr_t expected = 0;
  if (!state_.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(&waiter),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
    SM_ASSERT(expected == kPosted);  // a second concurrent waiter is a bug
    return true;
  }
  Worker* worker = waiter.fiber->worker();
  Worker::Timer timer;
  if (timed) {
    waiter.baton = this;
    timer.fire = &Waiter::Expire;
    timer.arg = &waiter;
    worker->ArmTimer(&timer, deadline);
  }
  // Block at least once even if the post already landed: the poster reads the waiter record
  // after its exchange and only its Wake (or the timer's) says it is done with it. Leaving
  // earlier would let this frame die under the poster (and its wake reach a fiber that may
  // have finished).
  do {
    worker->Block();
  } while (!waiter.timed_out && state_.load(std::memory_order_acquire) != kPosted);
  if (timed) worker->CancelTimer(&timer);
  return !waiter.timed_out;
}

bool Baton::WaitOnThread(Clock::time_point deadline, bool timed) {
  if (state_.load(std::memory_order_acquire) == kPosted) return true;
  Waiter waiter;
  uintptr_t expected = 0;
  if (!state_.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(&waiter),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
    SM_ASSERT(expected == kPosted);
    return true;
  }
  while (waiter.futex_word.load(std::memory_order_acquire) == 0) {
    if (!timed) {
      Futex(&waiter.futex_word, FUTEX_WAIT_PRIVATE, 0, nullptr);
      continue;
    }
    auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) {
      uintptr_t mine = reinterpret_cast<uintptr_t>(&waiter);
      if (state_.compare_exchange_strong(mine, 0, std::memory_order_acq_rel)) return false;
      // A Post took the word first; it is about to set futex_word. Wait for it untimed.
      timed = false;
      continue;
    }
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    Futex(&waiter.futex_word, FUTEX_WAIT_PRIVATE, 0, &ts);
  }
  return true;
}

void SleepUntil(Baton::Clock::time_point deadline) {
  if (Fiber::Current() == nullptr) {
    std::this_thread::sleep_until(deadline);
    return;
  }
  WaitReasonScope reason(WaitReason::kSleep);
  Baton never_posted;
  bool posted = never_posted.WaitUntil(deadline);
  SM_ASSERT(!posted);
}

void SleepFor(std::chrono::nanoseconds duration) {
  SleepUntil(Baton::Clock::now() + duration);
}

}  // namespace sm::threads
