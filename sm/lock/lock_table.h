// Lock table internals: requests, lock heads and hash buckets. Private to sm/lock: callers use
// LockManager (lock_manager.h) and LockOwner (lock_owner.h).
//
// Owns: the in-memory layout of the lock table.
//
//   LockManager::buckets_[Mix(id) & mask]   one cache line: SpinLock, chain of LockHeads
//   LockHead                                one per locked resource with a non-empty queue:
//     granted     granted requests, in grant order (with the inherited ones)
//     converting  granted requests with a pending conversion (upgrade), FIFO; they still hold
//                 their old mode, so they count in the granted group
//     waiting     new requests not yet granted, FIFO
//                                           A head that empties goes to the pool of the owner
//                                           whose call emptied it (LockOwner::GiveHead), and
//                                           a new head comes from the caller's pool: recycled
//                                           heads stay warm in the cache of the worker that
//                                           uses them, and no allocation happens under a latch
//                                           once the owner's pool is warm.
//   LockRequest                             one per (owner, resource); allocated from its
//                                           owner's pool, linked into exactly one head list
//
// Request state machine (every transition under the bucket latch of the request's head):
//   (new)       --LockManager::Acquire, grantable-->             kGranted
//   (new)       --LockManager::Acquire, must wait-->             kWaiting
//   kWaiting    --LockManager::GrantWaiters-->                   kGranted   (owner posted)
//   kWaiting    --RemoveWaiter (deadlock victim or timeout)-->   kDetached  (owner frees it)
//   kGranted    --LockManager::Convert, grantable-->             kGranted   (stronger mode)
//   kGranted    --LockManager::Convert, must wait-->             kConverting
//   kConverting --LockManager::GrantWaiters-->                   kGranted   (stronger mode)
//   kConverting --RemoveWaiter (victim or timeout)-->            kGranted   (old mode kept)
//   kGranted    --LockManager::ReleaseRequest-->                 kFree      (back to the pool)
//   kGranted    --LockManager::Bequeath (owner's ReleaseAll)-->  kInherited (kept for the
//                                                                owner's next transaction)
//   kInherited  --LockManager::Claim (owner's next use)-->       kGranted
//   kInherited  --LockManager::RevokeInherited (a conflict)-->   kRevoked   (out of the head;
//                                                                the owner frees it)
//   kInherited  --LockManager::ReleaseRequest-->                 kFree      (unused by the
//                                                                owner's next transaction)
//
// Head invariants (checked by LockManager::CheckInvariants):
//   1. A head in a bucket chain has at least one request; an emptied head leaves the chain
//      under the same latch hold that emptied it.
//   2. granted_count[m] = number of requests in granted + converting holding mode m
//      (inherited requests, on `granted`, included);
//      granted_mask has bit m iff granted_count[m] > 0.
//   3. The modes held by granted + converting are pairwise compatible.
//   4. No conversion in `converting` is compatible with the modes of all other holders, and
//      if `converting` is empty the first waiter is incompatible with the granted group
//      (nothing grantable is left waiting: FIFO grants stop only at a conflict).
//   5. An owner has at most one request per head.
//
// Thread/fiber safety: every field of a head and of a linked request is GUARDED_BY(its
// bucket's latch), except LockRequest::id/owner (immutable while linked).
#pragma once

#include <boost/intrusive/list.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sm/lock/lock_id.h"
#include "sm/lock/lock_mode.h"
#include "threads/sync.h"

namespace sm::lock {

class LockOwner;
struct LockHead;

enum class RequestState : uint8_t {
  kFree,
  kGranted,
  kWaiting,
  kConverting,
  kDetached,
  kInherited,  // granted to an owner between transactions (lock_manager.h, "Inheritance")
  kRevoked,
};

using ListHook =
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;

struct LockRequest {
  ListHook queue_hook;  // in head->granted, ->converting or ->waiting (bucket latch)
  ListHook owner_hook;  // in owner->held_ (owner only)
  LockRequest* cache_next = nullptr;  // owner's hash chain, or the pool's free list
  LockHead* head = nullptr;
  LockOwner* owner = nullptr;
  LockId id;
  uint64_t mix = 0;                     // id.Mix(), cached
  LockMode mode = LockMode::kNone;      // granted mode; kNone while a new request waits
  LockMode wait_mode = LockMode::kNone; // wanted mode while kWaiting / kConverting
  RequestState state = RequestState::kFree;
  // Owner only: kept from the owner's previous transaction and not yet claimed by the current
  // one, so its state must be read under the bucket latch (it may be kRevoked).
  bool inherited = false;
};

using RequestList = boost::intrusive::list<
    LockRequest,
    boost::intrusive::member_hook<LockRequest, ListHook, &LockRequest::queue_hook>,
    boost::intrusive::constant_time_size<false>>;

using OwnerRequestList = boost::intrusive::list<
    LockRequest,
    boost::intrusive::member_hook<LockRequest, ListHook, &LockRequest::owner_hook>,
    boost::intrusive::constant_time_size<false>>;

struct LockHead {
  LockId id;
  LockHead* next = nullptr;  // bucket chain or bucket free list
  RequestList granted;
  RequestList converting;
  RequestList waiting;
  uint32_t granted_count[kLockModeCount] = {};
  uint8_t granted_mask = 0;

  bool empty() const { return granted.empty() && converting.empty() && waiting.empty(); }

  void AddGranted(LockMode m) {
    if (granted_count[static_cast<int>(m)]++ == 0) granted_mask |= detail::ModeBit(m);
  }
  void RemoveGranted(LockMode m) {
    if (--granted_count[static_cast<int>(m)] == 0) granted_mask &= ~detail::ModeBit(m);
  }
  // The granted-mode set without one holder of `m` (the converting request itself).
  uint8_t MaskWithout(LockMode m) const {
    return granted_count[static_cast<int>(m)] == 1 ? granted_mask & ~detail::ModeBit(m)
                                                   : granted_mask;
  }
  // A new request is granted at once only if it conflicts with no holder and nobody is
  // queued ahead of it (no barging past waiters or pending conversions).
  bool CanGrantNew(LockMode m) const {
    return (granted_mask & detail::kIncompatibleMask[static_cast<int>(m)]) == 0 &&
           waiting.empty() && converting.empty();
  }
  // A holder of `held` may convert to `target` if no other holder conflicts with `target`.
  bool CanConvert(LockMode held, LockMode target) const {
    return (MaskWithout(held) & detail::kIncompatibleMask[static_cast<int>(target)]) == 0;
  }
};

// One lock-table partition. Padded to a cache line so that workers latching neighbouring
// buckets do not share a line.
struct alignas(64) Bucket {
  threads::SpinLock latch;
  LockHead* chain = nullptr;  // heads in use; GUARDED_BY(latch)
};
static_assert(sizeof(Bucket) == 64);

// Owners to wake once the bucket latch is dropped: a post may enter the kernel to wake a
// sleeping worker or thread, which must not happen while other workers spin on the latch.
// Add() runs under the latch together with the change of the owner's wait outcome; PostAll()
// after the latch is released (both in lock_manager.cc).
class WakeList {
 public:
  WakeList() = default;
  WakeList(const WakeList&) = delete;
  WakeList& operator=(const WakeList&) = delete;
  void Add(LockOwner* owner);
  void PostAll();

 private:
  static constexpr size_t kInline = 8;
  LockOwner* inline_[kInline];
  size_t count_ = 0;
  std::vector<LockOwner*> more_;  // more than kInline wake-ups from one release: rare
};

}  // namespace sm::lock
