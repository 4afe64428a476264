// Baton: a single-shot wait/post rendezvous usable from fibers and from plain OS threads
// (after folly::Baton). The building block of every wait in the engine: latches, locks,
// group commit and I/O completions all end in a Baton.
//
// State word (state_):
//   0            empty: not posted, nobody waiting
//   kPosted (1)  posted; Wait returns at once
//   pointer      a waiter (a Waiter record on the waiting fiber's or thread's stack)
//
// Transitions:
//   empty   --Wait/WaitUntil (CAS)-->     waiter
//   empty   --Post (exchange)-->          posted
//   waiter  --Post (exchange)-->          posted, and the waiter is woken (fiber: Worker::Wake;
//                                         thread: futex)
//   waiter  --timeout (CAS waiter->0)-->  empty, and WaitUntil returns false
//   posted  --Reset-->                    empty (only when nobody waits)
// Post and a timeout race on the same word; exactly one wins, so a waiter is woken once. A
// fiber waiter always blocks until that wake arrives, because the winner still reads the
// waiter record after taking the word.
//
// Thread/fiber safety: one waiter at a time; Post from any thread, any number of times.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace sm::threads {

class Baton {
 public:
  using Clock = std::chrono::steady_clock;

  Baton() = default;
  Baton(const Baton&) = delete;
  Baton& operator=(const Baton&) = delete;

  void Post();
  void Wait();
  // Returns true if posted, false if the deadline passed first.
  bool WaitUntil(Clock::time_point deadline);
  template <typename Rep, typename Period>
  bool WaitFor(std::chrono::duration<Rep, Period> timeout) {
    return WaitUntil(Clock::now() + timeout);
  }
  bool posted() const { return state_.load(std::memory_order_acquire) == kPosted; }
  void Reset();

 private:
  static constexpr uintptr_t kPosted = 1;
  struct Waiter;
  bool WaitOnFiber(Clock::time_point deadline, bool timed);
  bool WaitOnThread(Clock::time_point deadline, bool timed);

  std::atomic<uintptr_t> state_{0};
};

// Suspends the calling fiber (or sleeps the calling thread) until `deadline` has passed.
// Fibers sleeping on one worker wake in deadline order.
void SleepUntil(Baton::Clock::time_point deadline);
// Suspends the calling fiber (or sleeps the calling thread) for at least `duration`.
void SleepFor(std::chrono::nanoseconds duration);

}  // namespace sm::threads
