// LockManager: deadlock detection on the blocking path (see "Deadlocks and timeouts" in
// lock_manager.h for the graph, the consistency argument and the victim policy).
//
// Everything here runs under detector_mutex_. Liveness of the owners we look at:
//   * an owner found in a lock queue is alive while we hold that queue's bucket latch (it
//     cannot unlink its request, and so cannot finish, without the latch); we read its
//     dd_registered_ flag right then;
//   * a registered owner is alive, and keeps its waiting request (waiting_, and the request's
//     id) unchanged, until it unregisters, which needs detector_mutex_, which we hold. Only
//     registered owners are expanded, so every pointer we follow later is valid.
#include <mutex>

#include "sm/common/assert.h"
#include "sm/lock/lock_manager.h"

namespace sm::lock {

void LockManager::DetectDeadlocks(LockOwner* self) {
  std::lock_guard<threads::Mutex> guard(detector_mutex_);
  self->dd_registered_ = true;
  // Each round breaks one cycle through `self` by failing one member; repeat until no cycle
  // passes through it. A round whose victim was decided concurrently (granted, timed out)
  // changes nothing, but that victim has no out-edges any more, so the next round differs.
  for (;;) {
    LockOwner* victim = FindCycleVictim(self);
    if (victim == nullptr) return;
    Victimize(victim, self);
    if (victim == self) return;
  }
}

void LockManager::Unregister(LockOwner* owner) {
  std::lock_guard<threads::Mutex> guard(detector_mutex_);
  owner->dd_registered_ = false;
  owner->waiting_ = nullptr;
}

// Iterative depth-first search from `self` over registered owners. Returns the youngest
// member (largest TxnId; ties go to `self`, which needs no cross-owner wake-up) of the first
// cycle through `self`, or nullptr.
LockOwner* LockManager::FindCycleVictim(LockOwner* self) {
  detector_mutex_.AssertHeld();
  ++dd_epoch_;
  dd_edges_.clear();
  dd_stack_.clear();
  self->dd_epoch_ = dd_epoch_;
  PushFrame(self);
  while (!dd_stack_.empty()) {
    DetectorFrame& top = dd_stack_.back();
    if (top.next_edge == top.end_edge) {
      dd_stack_.pop_back();
      continue;
    }
    const DetectorEdge edge = dd_edges_[top.next_edge++];
    if (edge.owner == self) {
      // The stack is the path self -> ... -> top, and top waits for self: a cycle.
      LockOwner* victim = self;
      for (const DetectorFrame& f : dd_stack_) {
        if (f.owner->txn_id() > victim->txn_id()) victim = f.owner;
      }
      return victim;
    }
    // Unregistered owners are not waiting (or have not yet run their own search, which will
    // see this edge): they have no out-edges for us.
    if (!edge.registered || edge.owner->dd_epoch_ == dd_epoch_) continue;
    edge.owner->dd_epoch_ = dd_epoch_;
    PushFrame(edge.owner);  // invalidates `top`
  }
  return nullptr;
}

void LockManager::PushFrame(LockOwner* owner) {
  detector_mutex_.AssertHeld();
  size_t begin = dd_edges_.size();
  CollectBlockers(owner);
  dd_stack_.push_back(DetectorFrame{owner, begin, dd_edges_.size()});
}

// Appends the out-edges of a registered owner: whom its waiting request waits for.
void LockManager::CollectBlockers(LockOwner* owner) {
  detector_mutex_.AssertHeld();
  LockRequest* req = owner->waiting_;
  SM_ASSERT(req != nullptr);
  Bucket& bucket = BucketFor(req->mix);
  std::lock_guard<threads::SpinLock> guard(bucket.latch);
  if (owner->wait_outcome_ != LockOwner::WaitOutcome::kPending) return;  // no longer waits
  const LockHead* head = req->head;
  const LockMode want = req->wait_mode;
  const bool is_new = req->state == RequestState::kWaiting;
  auto add = [this](const LockRequest& r) {
    dd_edges_.push_back(DetectorEdge{r.owner, r.owner->dd_registered_});
  };
  // (a) holders whose granted mode conflicts with what we want.
  for (const LockRequest& r : head->granted) {
    if (!Compatible(r.mode, want)) add(r);
  }
  // (b) pending conversions: a conversion waits only for conflicting holders; a new
  // request waits for every pending conversion (they are served first).
  for (const LockRequest& r : head->converting) {
    if (&r != req && (is_new || !Compatible(r.mode, want))) add(r);
  }
  // (c) the waiter just ahead, which transitively waits for everything ahead of it.
  if (is_new) {
    auto it = head->waiting.iterator_to(*req);
    if (it != head->waiting.begin()) add(*std::prev(it));
  }
}

void LockManager::Victimize(LockOwner* victim, LockOwner* self) {
  detector_mutex_.AssertHeld();
  LockRequest* req = victim->waiting_;
  Bucket& bucket = BucketFor(req->mix);
  WakeList wakes;
  bucket.latch.lock();
  if (victim->wait_outcome_ == LockOwner::WaitOutcome::kPending) {
    victim->wait_outcome_ = LockOwner::WaitOutcome::kVictim;
    RemoveWaiter(bucket, req, self, &wakes);  // runs on self's fiber: its head pool
    wakes.Add(victim);  // also when victim == self: its Wait then returns at once
  }
  SM_PARANOID(CheckBucketLocked(bucket));
  bucket.latch.unlock();
  wakes.PostAll();
}

}  // namespace sm::lock
