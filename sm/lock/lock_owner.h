// LockOwner: the lock state of one transaction, meant to be embedded in the Txn object.
//
// Owns: the transaction's lock requests (all of them, granted or waiting, in acquisition
// order, for ReleaseAll), a small hash from LockId to request (so that re-requests and parent
// intention checks need no latch), a pool of request objects (no heap allocation per lock
// once warm), a pool of empty lock heads for the table entries its calls create and empty
// (lock_table.h), the request it is waiting for, the Baton it waits on, and its statistics.
//
// Owner state machine (LockManager performs every transition):
//   idle     --Lock/Convert that must wait-->  waiting (waiting_ set; registered with the
//                                              deadlock detector while waiting)
//   waiting  --granted / victim / timeout-->   idle
//   idle     --ReleaseAll-->                   idle, holding nothing for a transaction (perhaps
//                                              keeping inherited intention locks, see
//                                              LockManager "Inheritance"); Reset(TxnId) may
//                                              follow
//
// Invariants:
//   1. held_ lists exactly the owner's requests that are linked in the lock table (states
//      kGranted, kConverting, kWaiting, kInherited), plus its inherited requests that were
//      revoked (kRevoked, freed when next looked at), plus, transiently while the owner is
//      inside a lock call, one kDetached request it is about to free.
//   2. The hash (cache_) indexes exactly the requests on held_.
//   3. At most one request is waiting (waiting_), and only while a lock call is in progress.
//   4. A Reset owner holds nothing but inherited requests; a destroyed owner holds nothing.
//   5. held_count_ + inherited_count_ = length of held_; inherited_count_ counts the requests
//      with LockRequest::inherited set.
//
// Identity and age: txn_id() orders transactions by age (smaller = older). The deadlock
// detector picks the youngest transaction of a cycle as its victim, so a transaction that
// retries under its original id eventually becomes the oldest and cannot be picked again.
//
// Thread/fiber safety: an owner is used by one fiber or thread at a time (its transaction's);
// it may move between fibers, workers and plain threads between calls. Never thread_local:
// fibers share OS threads. Other transactions touch an owner only through the lock table
// (under bucket latches), through its Baton, and, while it waits, through the detector.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include <boost/intrusive/list_hook.hpp>

#include "sm/common/assert.h"
#include "sm/common/ids.h"
#include "sm/lock/lock_id.h"
#include "sm/lock/lock_mode.h"
#include "sm/lock/lock_table.h"
#include "threads/baton.h"

namespace sm::lock {

class LockManager;

// Lock statistics, as plain numbers (LockStats) or as an owner's live counters.
template <typename Counter>
struct BasicLockStats {
  Counter requests{};          // lock calls, parent intention locks included
  Counter covered{};           // re-requests already covered by a held mode: no-ops
  Counter immediate_grants{};  // granted without waiting (new locks and conversions)
  Counter conversions{};       // requests that strengthened a held lock (granted or not)
  Counter waits{};             // requests that had to wait
  Counter deadlocks{};         // requests failed with Status::Deadlock (victims)
  Counter timeouts{};          // requests failed with Status::LockTimeout
  Counter refusals{};          // LockWait::kNoWait requests that would have waited
  Counter wait_ns{};           // total time spent waiting
  Counter inherited{};         // intention locks claimed from the previous transaction
  Counter revocations{};       // inherited locks of idle owners taken back by a request
};

// Every counter, for field-wise arithmetic.
template <typename Counter>
inline constexpr Counter BasicLockStats<Counter>::*kLockStatFieldsOf[] = {
    &BasicLockStats<Counter>::requests,    &BasicLockStats<Counter>::covered,
    &BasicLockStats<Counter>::immediate_grants, &BasicLockStats<Counter>::conversions,
    &BasicLockStats<Counter>::waits,       &BasicLockStats<Counter>::deadlocks,
    &BasicLockStats<Counter>::timeouts,    &BasicLockStats<Counter>::refusals,
    &BasicLockStats<Counter>::wait_ns,     &BasicLockStats<Counter>::inherited,
    &BasicLockStats<Counter>::revocations,
};

// Of one owner (LockOwner::stats) or of a whole manager (LockManager::stats: every owner, live
// or destroyed).
struct LockStats : BasicLockStats<uint64_t> {
  double average_wait_us() const { return waits == 0 ? 0.0 : wait_ns / 1e3 / double(waits); }
  void Add(const LockStats& other);
};
inline constexpr auto& kLockStatFields = kLockStatFieldsOf<uint64_t>;
inline constexpr size_t kLockStatFieldCount = std::size(kLockStatFields);
static_assert(kLockStatFieldCount * sizeof(uint64_t) == sizeof(LockStats));

// A counter that only its owner writes and statistics read from any thread: a relaxed load and
// store (no increment is lost with one writer) cost what a plain counter does, where a fold
// into shared totals at every transaction's end would add a loop over every field to each
// transaction (steps_bench's payment_instructions_per_txn_serial counts it).
class OwnerCounter {
 public:
  OwnerCounter& operator++() { return *this += 1; }
  OwnerCounter& operator+=(uint64_t n) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    return *this;
  }
  uint64_t load() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class LockOwner {
 public:
  // Binds the owner to `manager` for its whole life (it registers there, for
  // CheckInvariants). `txn_id` may be Invalid() until Reset.
  LockOwner(LockManager* manager, TxnId txn_id);
  ~LockOwner();
  LockOwner(const LockOwner&) = delete;
  LockOwner& operator=(const LockOwner&) = delete;

  // Starts a new transaction on this owner (keeps the pools). Requires that nothing is held.
  void Reset(TxnId txn_id);

  TxnId txn_id() const { return txn_id_; }
  LockManager* manager() const { return manager_; }
  // Locks held by the current transaction, whatever their mode (while a lock call waits,
  // including the request it waits for); inherited locks it has not used are not counted.
  size_t lock_count() const { return held_count_; }
  // Inherited locks not (yet) used by the current transaction; some may have been revoked.
  size_t inherited_count() const { return inherited_count_; }
  // The mode the current transaction holds on `id`, kNone if none. Owner's own fiber only.
  LockMode HeldMode(const LockId& id) const;
  // Since construction. Any thread.
  LockStats stats() const;

 private:
  friend class LockManager;
  friend class WakeList;
  enum class WaitOutcome : uint8_t { kPending, kGranted, kVictim, kTimedOut };

  LockRequest* Find(const LockId& id, uint64_t mix) const;
  // Makes sure the pool has a free request, so that NewRequest (which may then run under a
  // bucket latch) never allocates.
  void ReserveRequest() {
    if (free_requests_ == nullptr) [[unlikely]] GrowPool();
  }
  void GrowPool();
  // Requires ReserveRequest since the last NewRequest.
  LockRequest* NewRequest(const LockId& id, uint64_t mix);
  // Lock heads (lock_table.h) recycled by this owner's calls. ReserveHead before a bucket
  // latch makes TakeHead under it allocation-free; GiveHead keeps up to kMaxFreeHeads.
  void ReserveHead() {
    if (free_heads_ == nullptr) [[unlikely]] GiveHead(new LockHead());
  }
  LockHead* TakeHead();
  void GiveHead(LockHead* head);
  void AddHeld(LockRequest* req);     // links into held_ and the hash
  void RemoveHeld(LockRequest* req);  // unlinks from held_ and the hash
  void Link(LockRequest* req);        // AddHeld and RemoveHeld without the count
  void Unlink(LockRequest* req);
  void Unhash(LockRequest* req);  // Unlink's half for the hash
  // Ends the inheritance of `req`: the current transaction's lock if it is still granted,
  // else unlinked and freed.
  void EndInheritance(LockRequest* req, bool granted);
  // Turns a request of the current transaction into one kept for the next (still on held_).
  void KeepForNext(LockRequest* req);
  void FreeRequest(LockRequest* req);
  void GrowCache();
  void HashAll();  // links every request on held_ into an empty hash
  size_t CacheSlot(uint64_t mix) const { return (mix >> 32) & cache_mask_; }

  LockManager* const manager_;
  TxnId txn_id_;

  OwnerRequestList held_;             // acquisition order; ReleaseAll goes backwards
  size_t held_count_ = 0;             // requests on held_ of the current transaction
  size_t inherited_count_ = 0;        // requests on held_ inherited and not yet claimed
  std::unique_ptr<LockRequest*[]> cache_;  // chained hash over held_, by (mix >> 32)
  size_t cache_mask_ = 0;
  LockRequest* free_requests_ = nullptr;  // pool free list (through cache_next)
  LockHead* free_heads_ = nullptr;        // empty heads (through next), owner only
  size_t free_head_count_ = 0;
  // Heads drift between owners (the last holder frees a head another created), so an owner
  // keeps several transactions' worth before it deletes any (about 100 bytes each).
  static constexpr size_t kMaxFreeHeads = 512;
  std::vector<std::unique_ptr<LockRequest[]>> request_chunks_;

  // --- Waiting (see LockManager::WaitForGrant) -------------------------------------------
  threads::Baton baton_;       // posted by whoever decides the outcome of the wait
  LockRequest* waiting_ = nullptr;  // set by the owner; read by the detector while registered
  WaitOutcome wait_outcome_ = WaitOutcome::kPending;  // bucket latch of waiting_->head

  // --- Deadlock detector state ------------------------------------------------------------
  // In the waits-for graph: alive until it unregisters.
  bool dd_registered_ = false;  // GUARDED_BY(LockManager::detector_mutex_)
  // Visit mark of the current search.
  uint64_t dd_epoch_ = 0;  // GUARDED_BY(LockManager::detector_mutex_)

  BasicLockStats<OwnerCounter> stats_;  // written by the owner only

  boost::intrusive::list_member_hook<> registry_hook_;  // LockManager::owners_
};

// The per-request helpers of the acquisition and release paths, inline: each is a few
// stores, less than the call that reached it from lock_manager.cc.

inline LockRequest* LockOwner::Find(const LockId& id, uint64_t mix) const {
  for (LockRequest* r = cache_[CacheSlot(mix)]; r != nullptr; r = r->cache_next) {
    if (r->id == id) return r;
  }
  return nullptr;
}

inline void LockOwner::EndInheritance(LockRequest* req, bool granted) {
  SM_DASSERT(req->inherited);
  req->inherited = false;
  --inherited_count_;
  if (granted) {
    ++held_count_;
    return;
  }
  Unlink(req);
  FreeRequest(req);
}

inline void LockOwner::KeepForNext(LockRequest* req) {
  SM_DASSERT(!req->inherited);
  req->inherited = true;
  --held_count_;
  ++inherited_count_;
}

inline LockRequest* LockOwner::NewRequest(const LockId& id, uint64_t mix) {
  SM_ASSERT(free_requests_ != nullptr);  // ReserveRequest
  LockRequest* req = free_requests_;
  free_requests_ = req->cache_next;
  SM_DASSERT(req->state == RequestState::kFree);
  req->cache_next = nullptr;
  req->head = nullptr;
  req->owner = this;
  req->id = id;
  req->mix = mix;
  req->mode = LockMode::kNone;
  req->wait_mode = LockMode::kNone;
  return req;
}

inline LockHead* LockOwner::TakeHead() {
  LockHead* head = free_heads_;
  SM_ASSERT(head != nullptr);  // ReserveHead
  free_heads_ = head->next;
  --free_head_count_;
  head->next = nullptr;
  return head;
}

inline void LockOwner::GiveHead(LockHead* head) {
  SM_DASSERT(head->empty() && head->granted_mask == 0);
  if (free_head_count_ == kMaxFreeHeads) {
    delete head;  // heads drift from the owners that empty them to those that fill them
    return;
  }
  head->next = free_heads_;
  free_heads_ = head;
  ++free_head_count_;
}

inline void LockOwner::Unhash(LockRequest* req) {
  LockRequest** link = &cache_[CacheSlot(req->mix)];
  while (*link != req) {
    SM_DASSERT(*link != nullptr);
    link = &(*link)->cache_next;
  }
  *link = req->cache_next;
  req->cache_next = nullptr;
}

inline void LockOwner::FreeRequest(LockRequest* req) {
  req->state = RequestState::kFree;
  req->head = nullptr;
  req->cache_next = free_requests_;
  free_requests_ = req;
}

inline void LockOwner::AddHeld(LockRequest* req) {
  SM_DASSERT(Find(req->id, req->mix) == nullptr);  // invariant 5 of lock_table.h
  Link(req);
  ++held_count_;
}

inline void LockOwner::Link(LockRequest* req) {
  held_.push_back(*req);
  LockRequest** slot = &cache_[CacheSlot(req->mix)];
  req->cache_next = *slot;
  *slot = req;
  if (held_count_ + inherited_count_ >= cache_mask_ + 1) GrowCache();  // chains about one long
}

}  // namespace sm::lock
