// LockOwner: the per-transaction request and head pools, lock list and lock hash (the helpers
// the lock and release paths call per request are inline in lock_owner.h).
#include "sm/lock/lock_owner.h"


#include "sm/common/assert.h"
#include "sm/lock/lock_manager.h"

namespace sm::lock {
namespace {
constexpr size_t kInitialCacheSlots = 16;  // power of two
constexpr size_t kRequestChunk = 64;       // requests allocated at a time

}  // namespace

void LockStats::Add(const LockStats& other) {
  for (auto field : kLockStatFields) this->*field += other.*field;
}

LockOwner::LockOwner(LockManager* manager, TxnId txn_id)
    : manager_(manager),
      txn_id_(txn_id),
      cache_(new LockRequest*[kInitialCacheSlots]()),
      cache_mask_(kInitialCacheSlots - 1) {
  SM_ASSERT(manager != nullptr);
  manager_->RegisterOwner(this);
}

LockOwner::~LockOwner() {
  SM_ASSERT(held_count_ == 0);  // invariant 4: ReleaseAll before destruction
  SM_ASSERT(waiting_ == nullptr);
  SM_ASSERT(!dd_registered_);
  manager_->Retire(this);  // gives up inherited locks, keeps the statistics, unregisters
  SM_ASSERT(held_.empty());
  while (free_heads_ != nullptr) delete TakeHead();
}

void LockOwner::Reset(TxnId txn_id) {
  SM_ASSERT(held_count_ == 0);
  SM_ASSERT(waiting_ == nullptr);
  txn_id_ = txn_id;
}

LockMode LockOwner::HeldMode(const LockId& id) const {
  const LockRequest* req = Find(id, id.Mix());
  if (req == nullptr || req->inherited) return LockMode::kNone;
  return req->mode;  // kNone for a new request that is still waiting
}

void LockOwner::GrowPool() {
  // A chunk per 64 requests, kept for the owner's life: a warm owner never allocates.
  request_chunks_.emplace_back(new LockRequest[kRequestChunk]);
  LockRequest* chunk = request_chunks_.back().get();
  for (size_t i = 0; i < kRequestChunk; ++i) FreeRequest(&chunk[i]);
}

void LockOwner::RemoveHeld(LockRequest* req) {
  SM_DASSERT(!req->inherited);
  Unlink(req);
  --held_count_;
}

void LockOwner::Unlink(LockRequest* req) {
  held_.erase(held_.iterator_to(*req));
  Unhash(req);
}

void LockOwner::GrowCache() {
  size_t slots = (cache_mask_ + 1) * 2;
  cache_.reset(new LockRequest*[slots]());
  cache_mask_ = slots - 1;
  HashAll();
}

void LockOwner::HashAll() {
  for (LockRequest& r : held_) {
    LockRequest** slot = &cache_[CacheSlot(r.mix)];
    r.cache_next = *slot;
    *slot = &r;
  }
}

LockStats LockOwner::stats() const {
  LockStats out;
  for (size_t i = 0; i < kLockStatFieldCount; ++i) {
    out.*kLockStatFields[i] = (stats_.*kLockStatFieldsOf<OwnerCounter>[i]).load();
  }
  return out;
}

}  // namespace sm::lock
