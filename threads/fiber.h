// Fiber: a user-level thread with its own stack, run by exactly one Worker for its whole life.
//
// Owns: the fiber control block (saved context, state, per-fiber counters) and the stack
// allocator (mmap'ed stacks with a guard page, pooled, registered with valgrind).
//
// Contexts are Boost.Context's fcontext, made by make_fcontext and switched by SwitchContext
// (fiber_switch.h), which keeps jump_fcontext's frame but saves only the callee-saved
// registers and the stack pointer and returns with a predicted `ret`. The callback form
// (fiber::resume_with) and jump_fcontext itself (return mispredictions) both cost more per
// switch (bench_switch's direct_switch_ns), and CTX switches are on the hot path of every
// operation.
//
// State machine (transitions are performed by Worker, see worker.h):
//   kReady    --Worker::SwitchTo/DirectSwitch-->            kRunning
//   kRunning  --Worker::Yield-->                            kReady (tail of the run queue)
//   kRunning  --Worker::Block-->                            kBlocked
//   kBlocked  --Worker::Wake-->                             kReady
//   kRunning  --Worker::DirectSwitch (to another fiber)-->  kParked (owned by the caller of
//                                                           DirectSwitch, e.g. a STEPS team)
//   kRunning  --fn returns-->                               kFinished (control block freed by
//                                                           its worker after the switch away)
//
// Invariants:
//   1. A fiber is in its worker's run queue iff its state is kReady and it was made ready
//      through Wake/Yield/Spawn (parked fibers are in no queue).
//   2. exclusive_held() counts exclusive latches and mutexes this fiber holds; CTX points
//      switch only when it is zero (STEPS paper, section 4.1.3).
//   3. No exception escapes a fiber's function: one that does calls std::terminate.
//
// Thread/fiber safety: a Fiber is touched only by its own worker thread, except Wake(), which
// any thread may call through Worker::Wake.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/stack_context.hpp>
#include <boost/intrusive/list_hook.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "sm/common/status.h"

namespace sm::threads {

class Worker;

enum class FiberState : uint8_t { kReady, kRunning, kBlocked, kParked, kFinished };

// Why a fiber is about to wait: set by the waiting layer (WaitReasonScope) so that STEPS can
// report why team members went stray (paper Table 4).
enum class WaitReason : uint8_t { kOther, kLock, kLatch, kIo, kLogFlush, kYield, kSleep };
inline constexpr int kWaitReasonCount = 7;
const char* WaitReasonName(WaitReason reason);

// Allocates fiber stacks: mmap'ed, a PROT_NONE guard page below, pooled process-wide, and
// registered with valgrind (VALGRIND_STACK_REGISTER) so memcheck and callgrind follow switches.
// A stack is two memory mappings (the guard page and the rest), so the kernel's limit on a
// process's mappings (vm.max_map_count) bounds the fibers alive at once, before memory does.
class FiberStackAllocator {
 public:
  explicit FiberStackAllocator(size_t stack_bytes) : stack_bytes_(stack_bytes) {}
  // IOError if the kernel refuses the memory or the guard page; the message names the limit
  // that is the likely cause (memory, or vm.max_map_count) and what to change.
  [[nodiscard]] Status Allocate(boost::context::stack_context* sctx);
  void deallocate(boost::context::stack_context& sctx) noexcept;
  size_t stack_bytes() const { return stack_bytes_; }

  // Test hook: the next `count` allocations (of any allocator) fail as if the kernel had
  // refused the stack's mapping (guard_page false) or its guard page with `err`.
  static void TEST_FailNextAllocations(int count, bool guard_page, int err);

 private:
  size_t stack_bytes_;
};

class Fiber : public boost::intrusive::list_base_hook<
                  boost::intrusive::link_mode<boost::intrusive::safe_link>> {
 public:
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  Worker* worker() const { return worker_; }
  FiberState state() const { return state_; }

  // Exclusive latches and mutexes held (the CTX gate of STEPS).
  uint32_t exclusive_held() const { return exclusive_held_; }
  void NoteExclusiveAcquired() { ++exclusive_held_; }
  void NoteExclusiveReleased();

  // An opaque slot for the layer that schedules teams (steps/). The runtime reads it only to
  // decide whether to call the team-leave hook (worker.h) and asserts it is cleared before
  // the fiber finishes.
  void* team_slot = nullptr;
  // The reason for the next wait (see WaitReasonScope); kOther when nobody said.
  WaitReason wait_reason = WaitReason::kOther;

  // The fiber running on this OS thread, or nullptr on a plain thread or a worker's own
  // scheduler context.
  static Fiber* Current();

 private:
  friend class Worker;
  Fiber(Worker* worker, uint64_t id, std::string name, std::function<void()> fn)
      : id_(id), name_(std::move(name)), worker_(worker), fn_(std::move(fn)) {}
  ~Fiber() = default;

  uint64_t id_;
  std::string name_;
  Worker* worker_;
  std::function<void()> fn_;
  boost::context::detail::fcontext_t context_ = nullptr;  // saved context while not running
  boost::context::stack_context stack_{};                  // empty for a worker's own context
  FiberState state_ = FiberState::kReady;
  uint32_t exclusive_held_ = 0;
  uint64_t turn_mark_ = 0;        // Worker::YieldForTurn: its worker's SwitchCount() then
  bool fresh_ = true;             // spawned, not yet made ready on its worker
  bool wake_pending_ = false;     // a Wake arrived while not blocked: the next Block returns
  Fiber* remote_next_ = nullptr;  // link in the worker's remote queue
  void* tsan_fiber_ = nullptr;  // ThreadSanitizer's fiber handle (SM_TSAN builds)
  // Stack bounds, for AddressSanitizer's stack-switch annotations (SM_ASAN builds); for a
  // worker's own context they are learned at its first switch.
  const void* stack_bottom_ = nullptr;
  size_t stack_bytes_ = 0;
};

// Sets the running fiber's wait reason for the scope of a wait (no-op on plain threads).
class WaitReasonScope {
 public:
  explicit WaitReasonScope(WaitReason reason) : fiber_(Fiber::Current()) {
    if (fiber_ != nullptr) {
      saved_ = fiber_->wait_reason;
      fiber_->wait_reason = reason;
    }
  }
  ~WaitReasonScope() {
    if (fiber_ != nullptr) fiber_->wait_reason = saved_;
  }
  WaitReasonScope(const WaitReasonScope&) = delete;
  WaitReasonScope& operator=(const WaitReasonScope&) = delete;

 private:
  Fiber* fiber_;
  WaitReason saved_ = WaitReason::kOther;
};

}  // namespace sm::threads
