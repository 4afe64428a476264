// Worker: an OS thread that runs fibers cooperatively, with its own run queue.
//
// Owns: the run queue (this worker's thread only), the remote queue (any thread pushes fibers
// woken or spawned from elsewhere), the timer list, the worker's I/O reactor, and the eventfd
// an idle worker sleeps on.
//
// Two ways to switch:
//   - the scheduler path: Yield() / Block() pick the next fiber from the run queue (or go to
//     the worker's own context, which polls for events and sleeps when nothing is runnable);
//   - DirectSwitch(to): switch straight to a named parked fiber, touching no queue. This is
//     the primitive behind STEPS' CTX. The caller becomes kParked and is owned by whoever
//     arranged the switch (a team ring); it must be switched to again or made ready later.
//
// Invariants:
//   1. Only this worker's thread touches run_queue_, timers_, current_ and fiber states;
//      other threads reach it through PushRemote() (a lock-free stack) and the eventfd.
//   2. A worker sleeps (poll on its eventfd) only after publishing sleeping_ = true and then
//      finding the remote queue empty; a remote pusher writes the eventfd if it sees
//      sleeping_ (both seq_cst), so no wake-up is lost.
//   3. Events (remote queue, I/O completions, timers) are polled at least every
//      kPollInterval switches and whenever the run queue is empty, so a worker whose fibers
//      yield to each other cannot starve I/O or cross-worker wake-ups.
//   4. A finished fiber's control block is freed by the next context that runs on this
//      worker (ReapZombie), never on its own stack.
//
// Thread/fiber safety: Spawn, Wake and Stop may be called from any thread; every other
// method only from a fiber (or the scheduler context) of this worker.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>

#include "sm/common/assert.h"
#include "threads/fiber.h"
#include "threads/fiber_switch.h"

namespace sm::threads {

class Reactor;

struct WorkerStats {
  uint64_t fibers_spawned = 0;
  uint64_t scheduler_switches = 0;  // through the run queue or the scheduler context
  uint64_t direct_switches = 0;
  uint64_t remote_wakeups = 0;
  uint64_t idle_sleeps = 0;
};

class Worker {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint32_t kPollInterval = 64;

  Worker(int index, size_t stack_bytes, unsigned aio_depth, int pin_cpu);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // The worker whose thread is the caller, or nullptr on a plain OS thread. Inline: the CTX
  // handler and every exclusive latch ask for it.
  static Worker* Current();
  // The running fiber of the caller's worker, or nullptr (plain thread, scheduler context).
  static Fiber* CurrentFiber();

  int index() const { return index_; }
  // The running fiber, or nullptr in the scheduler context.
  Fiber* current_fiber() const { return current_ == &main_ ? nullptr : current_; }
  // The running fiber, or the worker's own context in the scheduler context, whose team_slot
  // is never set: the team scheduler, which reads only team_slot first, saves the test.
  Fiber* current_context() const { return current_; }
  Reactor& reactor() { return *reactor_; }
  const WorkerStats& stats() const { return stats_; }
  // Switches made on this worker so far, of every kind: unchanged while a fiber runs.
  uint64_t SwitchCount() const { return stats_.scheduler_switches + stats_.direct_switches; }
  size_t live_fibers() const { return live_fibers_.load(std::memory_order_relaxed); }

  // Creates a fiber that runs fn on this worker (*fiber; null on failure). Any thread.
  // Closed after Stop(); IOError if no stack can be had (FiberStackAllocator::Allocate).
  [[nodiscard]] Status TrySpawn(std::function<void()> fn, std::string name, Fiber** fiber);
  // TrySpawn for callers that need no reason: nullptr if it fails.
  Fiber* Spawn(std::function<void()> fn, std::string name = {});

  // --- From a fiber of this worker -------------------------------------------------------
  // Moves the running fiber to the tail of the run queue and runs the next ready one.
  void Yield();
  // Yield, if other fibers are ready here.
  void YieldIfOthersReady() {
    if (HasReadyFibers()) Yield();
  }
  // Where fibers take turns (a transaction's begin): yields if other fibers are ready and the
  // caller has not given up the CPU since its previous call. A fiber that never gives it up
  // would otherwise run every transaction while those made ready meanwhile wait (and how many
  // of them ever ran would depend on start-up timing). One that blocked or yielded since (a
  // lock wait, an I/O, a descent that interleaved its leaf miss) has let the others run
  // already, and yielding again would only add a trip through the scheduler to each of its
  // transactions.
  void YieldForTurn() {
    Fiber* self = current_;
    SM_DASSERT(self != &main_);
    if (self->turn_mark_ == SwitchCount() && HasReadyFibers()) Yield();
    self->turn_mark_ = SwitchCount();
  }
  // Suspends the running fiber until Wake(fiber). Returns at once if a Wake arrived first.
  void Block();
  // Switches straight to `to` (kParked or kReady but in no queue) without touching any queue;
  // the running fiber becomes kParked.
  void DirectSwitch(Fiber* to);
  // Makes a parked fiber runnable through the run queue (at the front if `front`).
  void MakeReady(Fiber* fiber, bool front = false);
  // Parks the running fiber and runs `next` (or, if null, whatever the scheduler picks).
  void ParkAndSwitch(Fiber* next);
  // Puts the running fiber at the tail of the run queue and switches straight to `next`
  // (kParked, in no queue).
  void YieldTo(Fiber* next);
  // The fiber the scheduler runs next, ahead of the run queue (STEPS' "next team member runs
  // next" after a member leaves its team). Must be kParked.
  void SetNextHint(Fiber* next) { next_hint_ = next; }
  // Fibers waiting to run here: in the run queue, or made ready from another thread and not
  // yet drained (a fiber that never blocks would otherwise keep those out for good).
  bool HasReadyFibers() const {
    return !run_queue_.empty() || remote_head_.load(std::memory_order_relaxed) != nullptr;
  }

  // --- Hooks for the team scheduler (steps/), process-wide, set before workers run fibers ---
  // Called on the running fiber's worker when a fiber whose team_slot is set is about to
  // block or yield (paper section 4.1.3): the hook takes it out of its team.
  using TeamLeaveHook = void (*)(Fiber* fiber, WaitReason reason);
  // Called when no fiber is ready: may return a parked fiber to run (the head of the next
  // team), or null.
  using IdleHook = Fiber* (*)(Worker* worker);
  static void SetTeamHooks(TeamLeaveHook leave, IdleHook idle);
  // Per-worker state of the team scheduler; the runtime never reads it.
  void* team_state = nullptr;

  // --- Any thread ----------------------------------------------------------------------------
  // Makes a blocked fiber of this worker ready. Safe from any thread and worker.
  void Wake(Fiber* fiber);
  // Asks the worker to exit once every fiber has finished.
  void Stop();
  void Join();

  // --- Timers (from this worker's thread) ------------------------------------------------
  // A timer lives in its owner's frame (a timed wait) and is linked into the worker's
  // deadline-ordered set while armed, so arming one allocates nothing.
  struct Timer : boost::intrusive::set_base_hook<boost::intrusive::link_mode<
                     boost::intrusive::normal_link>> {
    void (*fire)(void* arg) = nullptr;  // runs in the scheduler path; must not switch
    void* arg = nullptr;
    Clock::time_point deadline;
    bool armed = false;
    friend bool operator<(const Timer& a, const Timer& b) { return a.deadline < b.deadline; }
  };
  void ArmTimer(Timer* timer, Clock::time_point deadline);
  void CancelTimer(Timer* timer);

 private:
  void ThreadMain(int pin_cpu);
  void SchedulerLoop();
  void SwitchTo(Fiber* from, Fiber* to);
  void ScheduleNext();  // running fiber has been queued, blocked or parked
  Fiber* PopReady();
  Fiber* PickNext();    // hint, run queue, then the idle hook
  void LeaveTeam(Fiber* fiber, WaitReason reason);
  void PollEvents(bool may_sleep);
  void DrainRemote();
  void FireTimers(Clock::time_point now);
  int SleepTimeoutMs(Clock::time_point now) const;
  void PushRemote(Fiber* fiber);
  void MakeReadyLocal(Fiber* fiber);
  void ReapZombie() {
    if (zombie_ != nullptr) [[unlikely]] FreeZombie();
  }
  void FreeZombie();
  [[noreturn]] void FinishCurrent();
  static void FiberMain(boost::context::detail::transfer_t transfer);
  void WakeSleeper();
  // Sanitizer bookkeeping around every switch; compiled away unless SM_ASAN / SM_TSAN, so
  // the switch path stays a handful of instructions.
#if defined(SM_ASAN) || defined(SM_TSAN)
  void BeforeSwitch(Fiber* to, void** fake_stack, bool from_dies);
  void AfterSwitch(void* fake_stack);
#else
  void BeforeSwitch(Fiber*, void**, bool) {}
  void AfterSwitch(void*) {}
#endif

  using RunQueue = boost::intrusive::list<Fiber, boost::intrusive::constant_time_size<false>>;

  const int index_;
  FiberStackAllocator stacks_;
  Fiber main_;           // the worker thread's own (scheduler) context
  Fiber* current_;       // running fiber, &main_ in the scheduler context
  Fiber* zombie_ = nullptr;
  Fiber* next_hint_ = nullptr;
  RunQueue run_queue_;
  boost::intrusive::multiset<Timer> timers_;
  uint32_t switches_since_poll_ = 0;
  WorkerStats stats_;

  std::atomic<Fiber*> remote_head_{nullptr};  // Treiber stack of fibers made ready remotely
  // Threads inside PushRemote: the worker is not destroyed while one may still touch it
  // (after its push a fiber can run, finish and let the runtime shut down).
  std::atomic<uint32_t> remote_pushers_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> live_fibers_{0};
  std::atomic<uint64_t> next_fiber_id_{1};
  int event_fd_ = -1;
  std::unique_ptr<Reactor> reactor_;
  std::thread thread_;
};

namespace detail {
// Per OS thread (fibers never migrate). constinit: no TLS wrapper call on access.
extern constinit thread_local Worker* tls_worker;
}  // namespace detail

inline Worker* Worker::Current() { return detail::tls_worker; }

// Inline, with DirectSwitch: a STEPS CTX is the handler's checks, these stores and the
// switch itself, with no further call.
inline void Worker::SwitchTo(Fiber* from, Fiber* to) {
  SM_DASSERT(from == current_);
  SM_DASSERT(to != from);
  current_ = to;
  to->state_ = FiberState::kRunning;
  void* fake_stack = nullptr;
  BeforeSwitch(to, &fake_stack, /*from_dies=*/false);
  // Whoever resumes us later passes its own control block as data; we store the context it
  // left behind, so every switch is one jump with no callback.
  boost::context::detail::transfer_t back = SwitchContext(to->context_, from);
  static_cast<Fiber*>(back.data)->context_ = back.fctx;
  AfterSwitch(fake_stack);
  ReapZombie();
}

inline void Worker::DirectSwitch(Fiber* to) {
  Fiber* self = current_;
  SM_DASSERT(self != &main_);
  SM_DASSERT(to->worker_ == this);
  SM_DASSERT(to->state_ == FiberState::kParked || to->state_ == FiberState::kReady);
  SM_DASSERT(!to->is_linked());
  ++stats_.direct_switches;
  self->state_ = FiberState::kParked;
  SwitchTo(self, to);
}
inline Fiber* Worker::CurrentFiber() {
  Worker* worker = detail::tls_worker;
  return worker == nullptr ? nullptr : worker->current_fiber();
}

}  // namespace sm::threads
