// Worker: scheduler loop, switching, remote wake-ups, timers, idle sleep.
#include "threads/worker.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>

#include "sm/common/assert.h"
#include "threads/fiber_switch.h"
#include "threads/reactor.h"

#ifdef SM_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#ifdef SM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace sm::threads {
namespace detail {
constinit thread_local Worker* tls_worker = nullptr;
}  // namespace detail
using detail::tls_worker;

namespace {
// Set once before workers run team members; read on every block/yield of a team member.
std::atomic<Worker::TeamLeaveHook> g_leave_hook{nullptr};
std::atomic<Worker::IdleHook> g_idle_hook{nullptr};
}  // namespace

void Worker::SetTeamHooks(TeamLeaveHook leave, IdleHook idle) {
  g_leave_hook.store(leave, std::memory_order_relaxed);
  g_idle_hook.store(idle, std::memory_order_relaxed);
}


Worker::Worker(int index, size_t stack_bytes, unsigned aio_depth, int pin_cpu)
    : index_(index),
      stacks_(stack_bytes),
      main_(this, 0, "scheduler", nullptr),
      current_(&main_) {
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  SM_ASSERT(event_fd_ >= 0);
  reactor_ = std::make_unique<Reactor>(this, event_fd_, aio_depth);
  thread_ = std::thread([this, pin_cpu] { ThreadMain(pin_cpu); });
}

Worker::~Worker() {
  Stop();
  Join();
  // acquire: pairs with the pushers' release; afterwards nobody touches this worker.
  while (remote_pushers_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  reactor_.reset();
  close(event_fd_);
}

void Worker::ThreadMain(int pin_cpu) {
  tls_worker = this;
  if (pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pin_cpu, &set);
    // Pinning is a request: a failure (e.g. a restricted cpuset) leaves the thread unpinned.
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  char name[16];
  std::snprintf(name, sizeof(name), "sm-worker-%d", index_);
  pthread_setname_np(pthread_self(), name);
#ifdef SM_TSAN
  main_.tsan_fiber_ = __tsan_get_current_fiber();
#endif
  SchedulerLoop();
  tls_worker = nullptr;
}

void Worker::SchedulerLoop() {
  for (;;) {
    ReapZombie();
    PollEvents(/*may_sleep=*/false);
    if (Fiber* next = PickNext()) {
      ++stats_.scheduler_switches;
      SwitchTo(&main_, next);
      continue;
    }
    if (stopping_.load(std::memory_order_acquire) &&
        live_fibers_.load(std::memory_order_acquire) == 0) {
      break;
    }
    PollEvents(/*may_sleep=*/true);
  }
}

Fiber* Worker::Spawn(std::function<void()> fn, std::string name) {
  Fiber* fiber = nullptr;
  TrySpawn(std::move(fn), std::move(name), &fiber).PermitUnchecked();  // null says it failed
  return fiber;
}

Status Worker::TrySpawn(std::function<void()> fn, std::string name, Fiber** spawned) {
  *spawned = nullptr;
  if (stopping_.load(std::memory_order_acquire)) {
    return Status::Closed("the fiber runtime is shut down");
  }
  boost::context::stack_context stack;
  SM_TRY(stacks_.Allocate(&stack));
  uint64_t id = next_fiber_id_.fetch_add(1, std::memory_order_relaxed);  // unique only
  auto* fiber = new Fiber(this, id, std::move(name), std::move(fn));
  fiber->stack_ = stack;
  fiber->stack_bottom_ = static_cast<char*>(fiber->stack_.sp) - fiber->stack_.size;
  fiber->stack_bytes_ = fiber->stack_.size;
  fiber->context_ = boost::context::detail::make_fcontext(fiber->stack_.sp, fiber->stack_.size,
                                                          &Worker::FiberMain);
#ifdef SM_TSAN
  fiber->tsan_fiber_ = __tsan_create_fiber(0);
#endif
  live_fibers_.fetch_add(1, std::memory_order_relaxed);  // ordered by the push below
  if (Current() == this) {
    ++stats_.fibers_spawned;
    fiber->fresh_ = false;
    MakeReadyLocal(fiber);
  } else {
    PushRemote(fiber);
  }
  *spawned = fiber;
  return Status::OK();
}

// First frame of every fiber. `transfer.data` is the context that switched to us, whose
// saved context we store (as after every switch); current_ already names this fiber.
void Worker::FiberMain(boost::context::detail::transfer_t transfer) {
  static_cast<Fiber*>(transfer.data)->context_ = transfer.fctx;
  Worker* worker = Current();
  worker->AfterSwitch(nullptr);
  worker->ReapZombie();
  Fiber* self = worker->current_;
  self->fn_();  // an escaping exception terminates: this frame has no caller to unwind to
  worker->FinishCurrent();
}

void Worker::FinishCurrent() {
  Fiber* dying = current_;
  dying->state_ = FiberState::kFinished;
  dying->fn_ = nullptr;  // release captures on this worker, while the stack still exists
  SM_ASSERT(dying->exclusive_held_ == 0);  // a fiber must not finish holding a latch
  SM_ASSERT(dying->team_slot == nullptr);   // nor as a member of a STEPS team
  SM_ASSERT(zombie_ == nullptr);
  zombie_ = dying;  // freed by the next context to run here, off this stack
  live_fibers_.fetch_sub(1, std::memory_order_release);
  Fiber* next = PickNext();
  if (next == nullptr) next = &main_;
  ++stats_.scheduler_switches;
  current_ = next;
  next->state_ = FiberState::kRunning;
  BeforeSwitch(next, nullptr, /*from_dies=*/true);
  SwitchContext(next->context_, dying);
  SM_UNREACHABLE();
}

void Worker::FreeZombie() {
#ifdef SM_TSAN
  __tsan_destroy_fiber(zombie_->tsan_fiber_);
#endif
  stacks_.deallocate(zombie_->stack_);
  delete zombie_;
  zombie_ = nullptr;
}

#if defined(SM_ASAN) || defined(SM_TSAN)
void Worker::BeforeSwitch(Fiber* to, void** fake_stack, bool from_dies) {
#ifdef SM_ASAN
  // from_dies: a null save slot tells ASan to drop the dying fiber's fake stack.
  __sanitizer_start_switch_fiber(from_dies ? nullptr : fake_stack, to->stack_bottom_,
                                 to->stack_bytes_);
#endif
#ifdef SM_TSAN
  __tsan_switch_to_fiber(to->tsan_fiber_, 0);
#endif
  (void)to;
  (void)fake_stack;
  (void)from_dies;
}

void Worker::AfterSwitch(void* fake_stack) {
#ifdef SM_ASAN
  const void* from_bottom = nullptr;
  size_t from_bytes = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &from_bottom, &from_bytes);
  // The worker's own context is the only one whose bounds we did not allocate. It is always
  // the first context on a worker to switch away, so the first report names its stack.
  if (main_.stack_bottom_ == nullptr) {
    main_.stack_bottom_ = from_bottom;
    main_.stack_bytes_ = from_bytes;
  }
#endif
  (void)fake_stack;
}
#endif  // SM_ASAN || SM_TSAN

Fiber* Worker::PickNext() {
  if (Fiber* hint = next_hint_) {
    next_hint_ = nullptr;
    SM_DASSERT(hint->state_ == FiberState::kParked);
    return hint;
  }
  if (Fiber* ready = PopReady()) return ready;
  if (IdleHook idle = g_idle_hook.load(std::memory_order_relaxed)) return idle(this);
  return nullptr;
}

void Worker::LeaveTeam(Fiber* fiber, WaitReason reason) {
  if (fiber->team_slot == nullptr) return;
  if (TeamLeaveHook leave = g_leave_hook.load(std::memory_order_relaxed)) leave(fiber, reason);
}

Fiber* Worker::PopReady() {
  if (run_queue_.empty()) return nullptr;
  Fiber* next = &run_queue_.front();
  run_queue_.pop_front();
  return next;
}

void Worker::MakeReadyLocal(Fiber* fiber) {
  fiber->state_ = FiberState::kReady;
  run_queue_.push_back(*fiber);
}

void Worker::ScheduleNext() {
  Fiber* self = current_;
  if (++switches_since_poll_ >= kPollInterval ||
      remote_head_.load(std::memory_order_relaxed) != nullptr) {
    PollEvents(/*may_sleep=*/false);
  }
  Fiber* next = PickNext();
  if (next == self) {  // it was the only ready fiber (or the head of the next team)
    self->state_ = FiberState::kRunning;
    return;
  }
  ++stats_.scheduler_switches;
  SwitchTo(self, next != nullptr ? next : &main_);
}

void Worker::Yield() {
  Fiber* self = current_;
  SM_ASSERT(self != &main_);
  LeaveTeam(self, WaitReason::kYield);
  MakeReadyLocal(self);
  ScheduleNext();
}

void Worker::Block() {
  Fiber* self = current_;
  SM_ASSERT(self != &main_);
  if (self->wake_pending_) {
    self->wake_pending_ = false;
    return;
  }
  LeaveTeam(self, self->wait_reason);
  self->state_ = FiberState::kBlocked;
  ScheduleNext();
}

void Worker::MakeReady(Fiber* fiber, bool front) {
  SM_DASSERT(fiber->worker_ == this);
  SM_DASSERT(!fiber->is_linked());
  fiber->state_ = FiberState::kReady;
  if (front) {
    run_queue_.push_front(*fiber);
  } else {
    run_queue_.push_back(*fiber);
  }
}

void Worker::ParkAndSwitch(Fiber* next) {
  Fiber* self = current_;
  SM_DASSERT(self != &main_);
  SM_DASSERT(next != self);
  self->state_ = FiberState::kParked;
  ++stats_.scheduler_switches;
  if (next == nullptr) {
    ScheduleNext();
  } else {
    SwitchTo(self, next);
  }
}

void Worker::YieldTo(Fiber* next) {
  Fiber* self = current_;
  SM_DASSERT(self != &main_);
  SM_DASSERT(next != self);
  SM_DASSERT(next->state_ == FiberState::kParked);
  MakeReadyLocal(self);
  ++stats_.scheduler_switches;
  SwitchTo(self, next);
}

void Worker::Wake(Fiber* fiber) {
  SM_DASSERT(fiber->worker_ == this);
  if (Current() != this) {
    PushRemote(fiber);
    return;
  }
  if (fiber->state_ == FiberState::kBlocked) {
    MakeReadyLocal(fiber);
  } else {
    // Not blocked (yet or any more): e.g. a Baton posted between the waiter's registration
    // and its Block, so the waiter saw the post and went on. Keep the wake as a token; every
    // wait loops on its own condition, so a spurious return from Block is harmless.
    SM_DASSERT(fiber->state_ != FiberState::kFinished);
    fiber->wake_pending_ = true;
  }
}

void Worker::PushRemote(Fiber* fiber) {
  // seq_cst/acq_rel: ~Worker waits for this count to drop to zero after joining the thread.
  remote_pushers_.fetch_add(1, std::memory_order_seq_cst);
  Fiber* head = remote_head_.load(std::memory_order_relaxed);
  do {
    fiber->remote_next_ = head;
    // seq_cst pairs with the sleeper's store to sleeping_ (invariant 2).
  } while (!remote_head_.compare_exchange_weak(head, fiber, std::memory_order_seq_cst,
                                               std::memory_order_relaxed));
  if (sleeping_.load(std::memory_order_seq_cst)) WakeSleeper();
  remote_pushers_.fetch_sub(1, std::memory_order_release);
}

void Worker::WakeSleeper() {
  uint64_t one = 1;
  // EAGAIN (counter saturated) still leaves the eventfd readable, which is all we need.
  (void)!write(event_fd_, &one, sizeof(one));
}

void Worker::DrainRemote() {
  // acquire: see the fibers' fields written by the pushers before their CAS.
  Fiber* list = remote_head_.exchange(nullptr, std::memory_order_acquire);
  Fiber* reversed = nullptr;  // the stack is LIFO; wake in arrival order
  while (list != nullptr) {
    Fiber* next = list->remote_next_;
    list->remote_next_ = reversed;
    reversed = list;
    list = next;
  }
  while (reversed != nullptr) {
    Fiber* fiber = reversed;
    reversed = fiber->remote_next_;
    fiber->remote_next_ = nullptr;
    ++stats_.remote_wakeups;
    if (fiber->fresh_) {  // spawned from another thread
      fiber->fresh_ = false;
      ++stats_.fibers_spawned;
      MakeReadyLocal(fiber);
    } else {
      Wake(fiber);
    }
  }
}

void Worker::PollEvents(bool may_sleep) {
  switches_since_poll_ = 0;
  DrainRemote();
  if (reactor_->inflight() > 0) reactor_->Reap();
  if (!timers_.empty()) FireTimers(Clock::now());
  if (!may_sleep || !run_queue_.empty()) return;

  sleeping_.store(true, std::memory_order_seq_cst);
  // Stop() writes the eventfd after setting stopping_, so a stopping worker does not sleep
  // through its exit condition.
  if (remote_head_.load(std::memory_order_seq_cst) == nullptr) {
    ++stats_.idle_sleeps;
    pollfd pfd{event_fd_, POLLIN, 0};
    int timeout_ms = SleepTimeoutMs(Clock::now());
    (void)poll(&pfd, 1, timeout_ms);  // EINTR is just an early wake-up
    uint64_t count;
    (void)!read(event_fd_, &count, sizeof(count));
  }
  sleeping_.store(false, std::memory_order_relaxed);
  DrainRemote();
  if (reactor_->inflight() > 0) reactor_->Reap();
  if (!timers_.empty()) FireTimers(Clock::now());
}

int Worker::SleepTimeoutMs(Clock::time_point now) const {
  if (timers_.empty()) return -1;
  auto wait = timers_.begin()->deadline - now;
  if (wait <= Clock::duration::zero()) return 0;
  // Round up so that we do not wake a hair before the deadline and spin.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  return ms > 60000 ? 60000 : static_cast<int>(ms);
}

void Worker::ArmTimer(Timer* timer, Clock::time_point deadline) {
  SM_DASSERT(Current() == this);
  SM_ASSERT(!timer->armed);
  timer->deadline = deadline;
  timers_.insert(*timer);
  timer->armed = true;
}

void Worker::CancelTimer(Timer* timer) {
  SM_DASSERT(Current() == this);
  if (!timer->armed) return;
  timers_.erase(timers_.iterator_to(*timer));
  timer->armed = false;
}

void Worker::FireTimers(Clock::time_point now) {
  while (!timers_.empty() && timers_.begin()->deadline <= now) {
    Timer& timer = *timers_.begin();
    timers_.erase(timers_.begin());
    timer.armed = false;
    timer.fire(timer.arg);
  }
}

void Worker::Stop() {
  stopping_.store(true, std::memory_order_release);
  WakeSleeper();
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace sm::threads
