// LockManager: acquisition, conversion, waiting, release and the grant pass.
//
// Latch order: detector_mutex_ > bucket latch > nothing. A bucket latch is held for a few
// list operations only, never across a wait or a Baton post; owners_latch_ > bucket latch
// (CheckInvariants only).
#include "sm/lock/lock_manager.h"

#include <bit>
#include <mutex>
#include <string>

#include "sm/common/assert.h"
#include "threads/ctx_point.h"
#include "threads/fiber.h"

namespace sm::lock {
namespace {

// STEPS may switch team members here, before the lock table is touched (no latch held).
SM_DEFINE_CTX_SITE(kCtxLockAcquire, "lock.acquire");
SM_DEFINE_CTX_SITE(kCtxLockReleaseAll, "lock.release_all");  // a transaction's end

using Clock = threads::Baton::Clock;

// The database's lock id never changes, so neither does its bucket mix.
constexpr uint64_t kDatabaseMix = LockId::Database().Mix();

// Waits at least this long are treated as "wait forever" (no timer is armed).
constexpr auto kForever = std::chrono::hours(24 * 365);

size_t BucketCount(size_t requested) {
  return std::bit_ceil(requested < 1024 ? size_t{1024} : requested);
}

std::string WaitMessage(const char* what, const LockOwner* owner, const LockId& id,
                        LockMode wanted) {
  return std::string(what) + ": txn " + std::to_string(owner->txn_id().value()) + " wants " +
         LockModeName(wanted) + " on " + id.ToString();
}

// Inheritance keeps the intention locks of the upper levels only (see "Inheritance").
bool IsInheritable(const LockId& id, LockMode mode) {
  return (id.kind() == LockId::Kind::kDatabase || id.kind() == LockId::Kind::kTable) &&
         (mode == LockMode::kIS || mode == LockMode::kIX);
}

}  // namespace

LockManager::LockManager(const LockManagerOptions& options)
    : options_(options),
      bucket_mask_(BucketCount(options.bucket_count) - 1),
      buckets_(new Bucket[bucket_mask_ + 1]) {}

LockManager::~LockManager() {
  {
    std::lock_guard<threads::SpinLock> guard(owners_latch_);
    SM_ASSERT(owners_.empty());
  }
  for (size_t i = 0; i <= bucket_mask_; ++i) {
    Bucket& bucket = buckets_[i];
    SM_ASSERT(bucket.chain == nullptr);
  }
}

// --- Acquisition ------------------------------------------------------------------------------

Status LockManager::Lock(LockOwner* owner, const LockId& id, LockMode mode, LockDuration duration,
                         LockWait wait) {
  LockMode held;
  Status s = LockExact(owner, id, mode, duration, wait, &held);
  SM_PARANOID(CheckOwnerLock(*owner, id));
  return s;
}

// Lock's body, inlined into LockHierarchical too; *held: the mode the owner holds on `id` once
// granted (kNone after an instant request it did not hold), which LockHierarchical reports
// without probing the owner's hash again.
[[gnu::always_inline]] inline Status LockManager::LockExact(LockOwner* owner, const LockId& id,
                                                            LockMode mode, LockDuration duration,
                                                            LockWait wait, LockMode* held) {
  SM_ASSERT(owner->manager_ == this);
  SM_ASSERT(id.valid());
  SM_ASSERT(mode != LockMode::kNone);
  SM_DASSERT(owner->waiting_ == nullptr);
  SM_CTX(kCtxLockAcquire);
  ++owner->stats_.requests;
  uint64_t mix = id.Mix();
  if (LockRequest* req = FindOwn(owner, id, mix)) {
    if (Covers(req->mode, mode)) {
      ++owner->stats_.covered;
      *held = req->mode;
      return Status::OK();
    }
    const LockMode target = Supremum(req->mode, mode);
    SM_TRY(Convert(owner, req, target, wait));
    *held = target;
    return Status::OK();
  }
  SM_TRY(Acquire(owner, id, mix, mode, duration, wait));
  *held = duration == LockDuration::kCommit ? mode : LockMode::kNone;
  return Status::OK();
}

Status LockManager::LockHierarchical(LockOwner* owner, const LockId& id, LockMode mode,
                                     LockDuration duration, LockWait wait, LockMode* effective) {
  // Top-down (the hierarchy is database > table > key, lock_id.h): an ancestor held in a mode
  // that covers `mode` on its children grants the request with nothing below it locked.
  LockMode implied = LockMode::kNone;
  const LockId::Kind kind = id.kind();
  if (kind != LockId::Kind::kDatabase) {
    SM_TRY(LockAncestor(owner, LockId::Database(), kDatabaseMix, mode, wait, &implied));
    if (implied == LockMode::kNone && kind != LockId::Kind::kTable) {
      const LockId table = id.Parent();
      SM_TRY(LockAncestor(owner, table, table.Mix(), mode, wait, &implied));
    }
  }
  LockMode held = implied;
  if (implied == LockMode::kNone) SM_TRY(LockExact(owner, id, mode, duration, wait, &held));
  if (effective != nullptr) *effective = held;
  SM_PARANOID(CheckOwnerLock(*owner, id));
  return Status::OK();
}

// The intention lock that a request for `mode` below `ancestor` needs on it. *implied: the mode
// the ancestor's lock implies on its children if it covers `mode` there (nothing below is
// locked then; see ParentCoversChild), else kNone. Nearly always the owner holds the intention
// already (claimed from its previous transaction): one probe of its hash, no call.
[[gnu::always_inline]] inline Status LockManager::LockAncestor(LockOwner* owner,
                                                               const LockId& ancestor, uint64_t mix,
                                                               LockMode mode, LockWait wait,
                                                               LockMode* implied) {
  ++owner->stats_.requests;
  LockRequest* req = FindOwn(owner, ancestor, mix);
  const LockMode held = req != nullptr ? req->mode : LockMode::kNone;
  if (ParentCoversChild(held, mode)) {  // e.g. table X: no key locks needed below it
    ++owner->stats_.covered;
    *implied = ImpliedOnChildren(held);
    return Status::OK();
  }
  const LockMode intent = IntentionFor(mode);
  if (Covers(held, intent)) {
    ++owner->stats_.covered;
    return Status::OK();
  }
  return StrengthenAncestor(owner, ancestor, mix, req, intent, wait);
}

Status LockManager::StrengthenAncestor(LockOwner* owner, const LockId& ancestor, uint64_t mix,
                                       LockRequest* req, LockMode intent, LockWait wait) {
  return req != nullptr ? Convert(owner, req, Supremum(req->mode, intent), wait)
                        : Acquire(owner, ancestor, mix, intent, LockDuration::kCommit, wait);
}

Status LockManager::LockKeyRange(LockOwner* owner, const LockId& next_key, RangeOp op,
                                 LockWait wait) {
  SM_ASSERT(next_key.is_key());
  switch (op) {
    case RangeOp::kScan:
      return LockHierarchical(owner, next_key, LockMode::kS, LockDuration::kCommit, wait);
    case RangeOp::kInsert:
      return LockHierarchical(owner, next_key, LockMode::kIX, LockDuration::kInstant, wait);
    case RangeOp::kDelete:
      return LockHierarchical(owner, next_key, LockMode::kX, LockDuration::kCommit, wait);
  }
  SM_UNREACHABLE();
}

// Inlined into LockExact and StrengthenAncestor (the queueing path is Enqueue, out of line):
// the call and the frame of a function that could wait would cost every lock request
// instructions (steps_bench's payment_instructions_per_txn_serial and
// mix_instructions_per_txn_serial count them).
[[gnu::always_inline]] inline Status LockManager::Acquire(LockOwner* owner, const LockId& id,
                                                          uint64_t mix, LockMode mode,
                                                          LockDuration duration, LockWait wait) {
  Bucket& bucket = BucketFor(mix);
  // A request is only built once it must be queued or kept (an instant lock granted at once,
  // common in TPC-C, needs none); the pool is filled before the latch so
  // that taking one under it never allocates.
  owner->ReserveRequest();
  owner->ReserveHead();
  bucket.latch.lock();
  LockHead* head = FindHead(bucket, id);
  if (head != nullptr && !head->CanGrantNew(mode)) {
    owner->stats_.revocations += RevokeInherited(head, mode);
  }
  if (head == nullptr || head->CanGrantNew(mode)) {
    ++owner->stats_.immediate_grants;
    if (duration == LockDuration::kInstant) {  // grantable now, so nothing to hold
      if (head != nullptr) FreeHeadIfEmpty(bucket, head, owner);  // holders may be revoked
      SM_PARANOID(CheckBucketLocked(bucket));
      bucket.latch.unlock();
      return Status::OK();
    }
    if (head == nullptr) head = CreateHead(bucket, id, owner);
    LockRequest* req = owner->NewRequest(id, mix);
    req->head = head;
    req->mode = mode;
    req->state = RequestState::kGranted;
    head->granted.push_back(*req);
    head->AddGranted(mode);
    SM_PARANOID(CheckBucketLocked(bucket));
    bucket.latch.unlock();
    owner->AddHeld(req);
    return Status::OK();
  }
  return Enqueue(owner, bucket, head, id, mix, mode, duration, wait);
}

Status LockManager::Enqueue(LockOwner* owner, Bucket& bucket, LockHead* head, const LockId& id,
                            uint64_t mix, LockMode mode, LockDuration duration, LockWait wait) {
  bucket.latch.AssertHeld();
  SM_DASSERT(head != nullptr && !head->CanGrantNew(mode));
  if (wait == LockWait::kNoWait) {
    SM_PARANOID(CheckBucketLocked(bucket));  // revocations may have changed the head
    bucket.latch.unlock();
    ++owner->stats_.refusals;
    return Status::Busy("lock would wait");
  }
  LockRequest* req = owner->NewRequest(id, mix);
  req->head = head;
  req->wait_mode = mode;
  req->state = RequestState::kWaiting;
  head->waiting.push_back(*req);
  owner->baton_.Reset();  // nobody posts it before waiting_ is visible under the latch
  owner->waiting_ = req;
  owner->wait_outcome_ = LockOwner::WaitOutcome::kPending;
  SM_PARANOID(CheckBucketLocked(bucket));
  bucket.latch.unlock();
  owner->AddHeld(req);
  Status status = WaitForGrant(owner, req, mode);
  if (status.ok() && duration == LockDuration::kInstant) {
    owner->RemoveHeld(req);
    ReleaseRequest(req);
    owner->FreeRequest(req);
  }
  return status;
}

Status LockManager::Convert(LockOwner* owner, LockRequest* req, LockMode target, LockWait wait) {
  ++owner->stats_.conversions;
  Bucket& bucket = BucketFor(req->mix);
  bucket.latch.lock();
  LockHead* head = req->head;
  SM_DASSERT(req->state == RequestState::kGranted);
  SM_DASSERT(Covers(target, req->mode));
  if (!head->CanConvert(req->mode, target)) {
    owner->stats_.revocations += RevokeInherited(head, target);
  }
  if (head->CanConvert(req->mode, target)) {
    head->RemoveGranted(req->mode);
    head->AddGranted(target);
    req->mode = target;
    SM_PARANOID(CheckBucketLocked(bucket));
    bucket.latch.unlock();
    ++owner->stats_.immediate_grants;
    return Status::OK();
  }
  if (wait == LockWait::kNoWait) {
    SM_PARANOID(CheckBucketLocked(bucket));
    bucket.latch.unlock();
    ++owner->stats_.refusals;
    return Status::Busy("lock conversion would wait");
  }
  // Still holding its old mode, the request moves to the conversion queue, which is served
  // before every plain waiter.
  head->granted.erase(head->granted.iterator_to(*req));
  head->converting.push_back(*req);
  req->wait_mode = target;
  req->state = RequestState::kConverting;
  owner->baton_.Reset();
  owner->waiting_ = req;
  owner->wait_outcome_ = LockOwner::WaitOutcome::kPending;
  SM_PARANOID(CheckBucketLocked(bucket));
  bucket.latch.unlock();
  return WaitForGrant(owner, req, target);
}

// --- Waiting ----------------------------------------------------------------------------------

// The request is queued and waiting_ is set. Whoever changes wait_outcome_ away from kPending
// (a grant, a deadlock victimization, or our own timeout) does so under the bucket latch,
// and every decider except our own timeout posts baton_ afterwards. Relies on Baton's
// contract that a wait returns only once the poster is done with the waiter (its stack
// record and its fiber), since the owner may finish right after.
Status LockManager::WaitForGrant(LockOwner* owner, LockRequest* req, LockMode wanted) {
  ++owner->stats_.waits;
  const Clock::time_point start = Clock::now();
  if (options_.detect_deadlocks) DetectDeadlocks(owner);
  {
    threads::WaitReasonScope reason(threads::WaitReason::kLock);  // STEPS stray statistics
    bool posted = true;
    if (options_.lock_wait_timeout >= kForever) {
      owner->baton_.Wait();
    } else {
      posted = owner->baton_.WaitUntil(
          start + std::chrono::duration_cast<Clock::duration>(options_.lock_wait_timeout));
    }
    if (!posted) HandleTimeout(owner, req);
  }
  if (owner->dd_registered_) {  // only the owner itself writes its flag
    Unregister(owner);
  } else {
    owner->waiting_ = nullptr;
  }
  owner->stats_.wait_ns += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  return FinishWait(owner, req, wanted);
}

void LockManager::HandleTimeout(LockOwner* owner, LockRequest* req) {
  Bucket& bucket = BucketFor(req->mix);
  WakeList wakes;
  bucket.latch.lock();
  const bool mine = owner->wait_outcome_ == LockOwner::WaitOutcome::kPending;
  if (mine) {
    owner->wait_outcome_ = LockOwner::WaitOutcome::kTimedOut;
    RemoveWaiter(bucket, req, owner, &wakes);
  }
  SM_PARANOID(CheckBucketLocked(bucket));
  bucket.latch.unlock();
  wakes.PostAll();
  // Granted or victimized just as the timer fired: the decider's post is on its way (or has
  // come). Consume it, so that the Baton is clean for the next wait; the outcome stands.
  if (!mine) owner->baton_.Wait();
}

Status LockManager::FinishWait(LockOwner* owner, LockRequest* req, LockMode wanted) {
  SM_DASSERT(owner->waiting_ == nullptr);  // the wait is over, whatever its outcome
  SM_PARANOID(CheckBucket(BucketFor(req->mix)));
  switch (owner->wait_outcome_) {
    case LockOwner::WaitOutcome::kGranted:
      SM_DASSERT(req->state == RequestState::kGranted);
      return Status::OK();
    case LockOwner::WaitOutcome::kVictim:
    case LockOwner::WaitOutcome::kTimedOut: {
      const bool victim = owner->wait_outcome_ == LockOwner::WaitOutcome::kVictim;
      std::string message =
          WaitMessage(victim ? "deadlock victim" : "lock wait timeout", owner, req->id, wanted);
      if (req->state == RequestState::kDetached) {  // a new request: drop it
        owner->RemoveHeld(req);
        owner->FreeRequest(req);
      } else {
        SM_DASSERT(req->state == RequestState::kGranted);  // a conversion: old mode kept
      }
      if (victim) {
        ++owner->stats_.deadlocks;
        return Status::Deadlock(message);
      }
      ++owner->stats_.timeouts;
      return Status::LockTimeout(message);
    }
    case LockOwner::WaitOutcome::kPending:
      break;
  }
  SM_UNREACHABLE();
}

void WakeList::Add(LockOwner* owner) {
  if (count_ < kInline) {
    inline_[count_++] = owner;
  } else {
    more_.push_back(owner);
  }
}

void WakeList::PostAll() {
  for (size_t i = 0; i < count_; ++i) inline_[i]->baton_.Post();
  for (LockOwner* owner : more_) owner->baton_.Post();
}

// --- Release ----------------------------------------------------------------------------------

bool LockManager::Release(LockOwner* owner, const LockId& id) {
  SM_DASSERT(owner->waiting_ == nullptr);
  LockRequest* req = FindOwn(owner, id, id.Mix());
  if (req == nullptr) return false;
  owner->RemoveHeld(req);
  ReleaseRequest(req);
  owner->FreeRequest(req);
  SM_PARANOID(CheckOwnerLock(*owner, id));  // read-committed: once per read, so not the list
  return true;
}

void LockManager::ReleaseAll(LockOwner* owner, Inherit inherit) {
  SM_ASSERT(owner->manager_ == this);
  SM_ASSERT(owner->waiting_ == nullptr);
  SM_CTX(kCtxLockReleaseAll);
  SM_PARANOID(CheckOwnerNow(*owner));  // what the transaction leaves, once per transaction
  ReleaseHeld(owner, inherit);
  // Only what inheritance keeps is left (lock_owner.h, invariant 4).
  SM_DASSERT(owner->held_count_ == 0);
  SM_PARANOID(CheckOwnerNow(*owner));
}

void LockManager::Retire(LockOwner* owner) {
  ReleaseHeld(owner, Inherit::kNothing);
  std::lock_guard<threads::SpinLock> guard(owners_latch_);
  retired_stats_.Add(owner->stats());  // in the same hold: stats() counts it exactly once
  owners_.erase(owners_.iterator_to(*owner));
}

void LockManager::ReleaseHeld(LockOwner* owner, Inherit inherit) {
  // Newest first: keys before their table and database. Kept requests stay on held_.
  auto it = owner->held_.end();
  while (it != owner->held_.begin()) {
    LockRequest* req = &*--it;
    if (req->inherited) {  // not used by this transaction: not kept any longer
      req->inherited = false;
      --owner->inherited_count_;
    } else if (inherit == Inherit::kIntentions && IsInheritable(req->id, req->mode) &&
               Bequeath(req)) {
      owner->KeepForNext(req);
      continue;
    } else {
      --owner->held_count_;
    }
    ReleaseRequest(req);  // one call site: it is inlined
    it = owner->held_.erase(it);
    owner->Unhash(req);
    owner->FreeRequest(req);
  }
}

[[gnu::always_inline]] inline void LockManager::ReleaseRequest(LockRequest* req) {
  Bucket& bucket = BucketFor(req->mix);
  bucket.latch.lock();
  // Held, or inherited (ReleaseHeld clears `inherited` first) and perhaps revoked.
  SM_DASSERT(req->state == RequestState::kGranted || req->state == RequestState::kInherited ||
             req->state == RequestState::kRevoked);
  // An inherited request that was revoked is out of the table already.
  if (req->state != RequestState::kRevoked) {
    const LockHead* head = req->head;
    if (!head->waiting.empty() || !head->converting.empty()) [[unlikely]] {
      ReleaseQueued(bucket, req);  // unlocks the bucket
      return;
    }
    // Nobody queued, so nobody to grant: no wake list to fill and post (nearly every release).
    Unlink(bucket, req, nullptr);
  }
  SM_PARANOID(CheckBucketLocked(bucket));
  bucket.latch.unlock();
}

void LockManager::ReleaseQueued(Bucket& bucket, LockRequest* req) {
  WakeList wakes;
  Unlink(bucket, req, &wakes);
  SM_PARANOID(CheckBucketLocked(bucket));
  bucket.latch.unlock();
  wakes.PostAll();
}

// prfchw: __builtin_prefetch(p, 1) becomes PREFETCHW (see LogManager::PrefetchNextRecord);
// without it the compiler drops a write prefetch altogether. For writing: the bucket's latch
// is a read-modify-write of the line.
__attribute__((target("prfchw"))) void LockManager::Prefetch(const LockId& id) const {
  __builtin_prefetch(&BucketFor(id.Mix()), 1);
}

// --- Inheritance ------------------------------------------------------------------------------

// The owner's request on `id` if its current transaction holds it (claiming an inherited one),
// else nullptr. Inlined: Lock asks it before every acquisition.
[[gnu::always_inline]] inline LockRequest* LockManager::FindOwn(LockOwner* owner, const LockId& id,
                                                                uint64_t mix) {
  LockRequest* req = owner->Find(id, mix);
  if (req != nullptr && req->inherited) return Claim(owner, req);
  return req;
}

// An inherited request becomes the current transaction's, unless a conflicting request
// revoked it (then it is freed: nullptr).
LockRequest* LockManager::Claim(LockOwner* owner, LockRequest* req) {
  Bucket& bucket = BucketFor(req->mix);
  bucket.latch.lock();
  const bool granted = req->state == RequestState::kInherited;
  SM_DASSERT(granted || req->state == RequestState::kRevoked);
  if (granted) req->state = RequestState::kGranted;
  SM_PARANOID(CheckBucketLocked(bucket));
  // Also orders the revoker's unlinking (under this latch) before the request's reuse.
  bucket.latch.unlock();
  owner->EndInheritance(req, granted);
  if (!granted) return nullptr;
  ++owner->stats_.inherited;
  return req;
}

// Keeps a granted request for the owner's next transaction, unless someone waits on its head
// (whom keeping it could block: the lock is released then). Inlined into ReleaseHeld, its only
// caller, which runs it for every intention lock at every transaction's end.
[[gnu::always_inline]] inline bool LockManager::Bequeath(LockRequest* req) {
  Bucket& bucket = BucketFor(req->mix);
  std::lock_guard<threads::SpinLock> guard(bucket.latch);
  SM_DASSERT(req->state == RequestState::kGranted);
  if (!req->head->waiting.empty() || !req->head->converting.empty()) return false;
  req->state = RequestState::kInherited;
  SM_PARANOID(CheckBucketLocked(bucket));
  return true;
}

// --- Under the bucket latch -----------------------------------------------------------------

namespace {

// A request by another owner that lets it write below the locked object.
bool IsOtherWriter(const LockRequest& r, const LockOwner* owner) {
  constexpr uint8_t kWriting = detail::ModeBit(LockMode::kIX) | detail::ModeBit(LockMode::kSIX) |
                               detail::ModeBit(LockMode::kX);
  uint8_t modes = detail::ModeBit(r.mode) | detail::ModeBit(r.wait_mode);
  return r.owner != owner && (modes & kWriting) != 0;
}

}  // namespace

bool LockManager::NoOtherWriter(const LockOwner* owner, TableId table) const {
  for (const LockId& id : {LockId::Database(), LockId::Table(table)}) {
    Bucket& bucket = BucketFor(id.Mix());
    bucket.latch.lock();
    const LockHead* head = FindHead(bucket, id);
    bool writer = false;
    if (head != nullptr) {
      for (const RequestList* list : {&head->granted, &head->converting, &head->waiting}) {
        for (const LockRequest& r : *list) writer |= IsOtherWriter(r, owner);
      }
    }
    bucket.latch.unlock();
    if (writer) return false;
  }
  return true;
}

LockHead* LockManager::FindHead(const Bucket& bucket, const LockId& id) {
  bucket.latch.AssertHeld();
  for (LockHead* h = bucket.chain; h != nullptr; h = h->next) {
    if (h->id == id) return h;
  }
  return nullptr;
}

LockHead* LockManager::CreateHead(Bucket& bucket, const LockId& id, LockOwner* caller) {
  bucket.latch.AssertHeld();
  LockHead* head = caller->TakeHead();
  SM_DASSERT(head->empty() && head->granted_mask == 0);
  head->id = id;
  head->next = bucket.chain;
  bucket.chain = head;
  return head;
}

// Takes a holder (granted or inherited) off its head and grants whom that unblocks (`wakes`
// may be null if nobody is queued on the head). Inlined, with FreeHeadIfEmpty, into the
// release path, which runs once per lock a transaction held.
[[gnu::always_inline]] inline void LockManager::Unlink(Bucket& bucket, LockRequest* req,
                                                       WakeList* wakes) {
  bucket.latch.AssertHeld();
  LockHead* head = req->head;
  head->granted.erase(head->granted.iterator_to(*req));
  head->RemoveGranted(req->mode);
  if (!head->waiting.empty() || !head->converting.empty()) {
    SM_ASSERT(wakes != nullptr);
    GrantWaiters(head, wakes);
  }
  FreeHeadIfEmpty(bucket, head, req->owner);  // only its owner releases a request
}

// Takes back the inherited requests on `head` that conflict with `wanted`; their idle owners
// find them kRevoked (see "Inheritance"). Returns how many. The head may be left empty.
uint64_t LockManager::RevokeInherited(LockHead* head, LockMode wanted) {
  uint64_t revoked = 0;
  for (auto it = head->granted.begin(); it != head->granted.end();) {
    LockRequest& r = *it;
    if (r.state != RequestState::kInherited || Compatible(r.mode, wanted)) {
      ++it;
      continue;
    }
    it = head->granted.erase(it);
    head->RemoveGranted(r.mode);
    r.state = RequestState::kRevoked;
    r.head = nullptr;
    ++revoked;
  }
  return revoked;
}

[[gnu::always_inline]] inline void LockManager::FreeHeadIfEmpty(Bucket& bucket, LockHead* head,
                                                                LockOwner* caller) {
  if (!head->empty()) return;
  LockHead** link = &bucket.chain;
  while (*link != head) link = &(*link)->next;
  *link = head->next;
  caller->GiveHead(head);
}

// Conversions first (any that became compatible), then, only if none is pending, plain
// waiters in FIFO order up to the first conflict.
void LockManager::GrantWaiters(LockHead* head, WakeList* wakes) {
  for (auto it = head->converting.begin(); it != head->converting.end();) {
    LockRequest& r = *it;
    if (!head->CanConvert(r.mode, r.wait_mode)) {
      ++it;  // granting a later one only strengthens the group, so this stays blocked
      continue;
    }
    it = head->converting.erase(it);
    head->RemoveGranted(r.mode);  // GrantQueued adds the stronger mode
    GrantQueued(head, r, wakes);
  }
  if (!head->converting.empty()) return;
  while (!head->waiting.empty()) {
    LockRequest& r = head->waiting.front();
    if ((head->granted_mask & detail::kIncompatibleMask[static_cast<int>(r.wait_mode)]) != 0) {
      break;
    }
    head->waiting.pop_front();
    GrantQueued(head, r, wakes);
  }
}

// A request just taken off the waiting or conversion queue now holds its wanted mode; its
// owner is told (outcome) and queued for the wake-up.
void LockManager::GrantQueued(LockHead* head, LockRequest& r, WakeList* wakes) {
  head->granted.push_back(r);
  head->AddGranted(r.wait_mode);
  r.mode = r.wait_mode;
  r.wait_mode = LockMode::kNone;
  r.state = RequestState::kGranted;
  r.owner->wait_outcome_ = LockOwner::WaitOutcome::kGranted;
  wakes->Add(r.owner);
}

// Takes a waiting request out of its queue (deadlock victim or timeout): a new request is
// detached (its owner frees it), a conversion falls back to the mode it holds. Waiters
// behind it may now be grantable.
void LockManager::RemoveWaiter(Bucket& bucket, LockRequest* req, LockOwner* caller,
                               WakeList* wakes) {
  bucket.latch.AssertHeld();
  LockHead* head = req->head;
  if (req->state == RequestState::kWaiting) {
    head->waiting.erase(head->waiting.iterator_to(*req));
    req->state = RequestState::kDetached;
    req->head = nullptr;
  } else {
    SM_ASSERT(req->state == RequestState::kConverting);
    head->converting.erase(head->converting.iterator_to(*req));
    head->granted.push_back(*req);
    req->state = RequestState::kGranted;
  }
  req->wait_mode = LockMode::kNone;
  GrantWaiters(head, wakes);
  FreeHeadIfEmpty(bucket, head, caller);
}

// --- Statistics and owners ----------------------------------------------------------------

LockStats LockManager::stats() const {
  std::lock_guard<threads::SpinLock> guard(owners_latch_);
  LockStats total = retired_stats_;
  for (const LockOwner& owner : owners_) total.Add(owner.stats());
  return total;
}

void LockManager::RegisterOwner(LockOwner* owner) {
  std::lock_guard<threads::SpinLock> guard(owners_latch_);
  owners_.push_back(*owner);
}

}  // namespace sm::lock
