// LockManager: the invariant checker (head invariants of lock_table.h, owner invariants of
// lock_owner.h) and the TEST_ hooks.
#include <cstdio>
#include <iterator>
#include <mutex>
#include <string>

#include "sm/common/assert.h"
#include "sm/lock/lock_manager.h"

namespace sm::lock {
namespace {

bool Fail(const LockHead& head, const char* what) {
  std::fprintf(stderr, "lock invariant violated on %s: %s\n", head.id.ToString().c_str(), what);
  return false;
}

bool Contains(const RequestList& list, const LockRequest* req) {
  for (const LockRequest& r : list) {
    if (&r == req) return true;
  }
  return false;
}

size_t Length(const RequestList& list) {
  return static_cast<size_t>(std::distance(list.begin(), list.end()));
}

}  // namespace

bool LockManager::CheckHead(const LockHead& head, size_t* request_count) const {
  if (head.empty()) return Fail(head, "empty head left in its bucket chain (1)");
  uint32_t counts[kLockModeCount] = {};
  for (const RequestList* list : {&head.granted, &head.converting}) {
    for (const LockRequest& r : *list) {
      ++*request_count;
      if (r.head != &head || !(r.id == head.id)) return Fail(head, "request names another head");
      if (r.mode == LockMode::kNone) return Fail(head, "holder without a mode");
      ++counts[static_cast<int>(r.mode)];
      const bool converting = list == &head.converting;
      const bool state_fits = converting ? r.state == RequestState::kConverting
                                         : (r.state == RequestState::kGranted ||
                                            r.state == RequestState::kInherited);
      if (!state_fits) {
        return Fail(head, "request state does not match its list");
      }
      if (converting != (r.wait_mode != LockMode::kNone)) {
        return Fail(head, "wait mode set outside the conversion queue");
      }
    }
  }
  uint8_t mask = 0;
  for (int m = 0; m < kLockModeCount; ++m) {
    if (counts[m] != head.granted_count[m]) return Fail(head, "granted counts are stale (2)");
    if (counts[m] != 0) mask |= detail::ModeBit(static_cast<LockMode>(m));
  }
  if (mask != head.granted_mask) return Fail(head, "granted mask is stale (2)");
  for (const RequestList* list : {&head.granted, &head.converting}) {
    for (const LockRequest& r : *list) {
      if (!head.CanConvert(r.mode, r.mode)) return Fail(head, "incompatible holders (3)");
      for (const RequestList* other : {&head.granted, &head.converting, &head.waiting}) {
        for (const LockRequest& o : *other) {
          if (&o != &r && o.owner == r.owner) return Fail(head, "owner queued twice (5)");
        }
      }
    }
  }
  for (const LockRequest& r : head.converting) {
    if (head.CanConvert(r.mode, r.wait_mode)) return Fail(head, "grantable conversion waits (4)");
  }
  for (const LockRequest& r : head.waiting) {
    ++*request_count;
    if (r.head != &head || r.state != RequestState::kWaiting || r.mode != LockMode::kNone ||
        r.wait_mode == LockMode::kNone) {
      return Fail(head, "malformed waiting request");
    }
  }
  if (head.converting.empty() && !head.waiting.empty()) {
    const LockRequest& first = head.waiting.front();
    if ((head.granted_mask & detail::kIncompatibleMask[static_cast<int>(first.wait_mode)]) == 0) {
      return Fail(head, "grantable waiter left at the queue head (4)");
    }
  }
  return true;
}

bool LockManager::CheckOwnerRequest(const LockOwner& owner, const LockRequest& r,
                                     size_t* request_count) const {
  if (r.owner != &owner || owner.Find(r.id, r.mix) != &r) {
    std::fprintf(stderr, "lock owner %llu: lock list and hash disagree on %s\n",
                 static_cast<unsigned long long>(owner.txn_id().value()),
                 r.id.ToString().c_str());
    return false;
  }
  if (r.state == RequestState::kDetached && owner.waiting_ == &r) return true;  // being freed
  Bucket& bucket = BucketFor(r.mix);
  std::lock_guard<threads::SpinLock> guard(bucket.latch);
  const bool inherited = r.state == RequestState::kInherited || r.state == RequestState::kRevoked;
  if (r.inherited != inherited) {
    std::fprintf(stderr, "lock owner %llu: %s is inherited in one place only\n",
                 static_cast<unsigned long long>(owner.txn_id().value()),
                 r.id.ToString().c_str());
    return false;
  }
  if (r.state == RequestState::kRevoked) return true;  // out of the table, freed when next seen
  const LockHead* head = FindHead(bucket, r.id);
  const RequestList* list = nullptr;
  if (head == r.head && head != nullptr) {
    list = r.state == RequestState::kGranted || r.state == RequestState::kInherited
               ? &head->granted
           : r.state == RequestState::kConverting ? &head->converting
           : r.state == RequestState::kWaiting    ? &head->waiting
                                                  : nullptr;
  }
  if (list == nullptr || !Contains(*list, &r)) {
    std::fprintf(stderr, "lock owner %llu holds %s, which the table does not list\n",
                 static_cast<unsigned long long>(owner.txn_id().value()),
                 r.id.ToString().c_str());
    return false;
  }
  ++*request_count;
  return true;
}

bool LockManager::CheckOwner(const LockOwner& owner, size_t* request_count) const {
  size_t listed = 0;
  for (const LockRequest& r : owner.held_) {
    ++listed;
    if (!CheckOwnerRequest(owner, r, request_count)) return false;
  }
  if (listed != owner.held_count_ + owner.inherited_count_) {
    std::fprintf(stderr, "lock owner %llu: lock count %zu + %zu inherited, list length %zu\n",
                 static_cast<unsigned long long>(owner.txn_id().value()), owner.held_count_,
                 owner.inherited_count_, listed);
    return false;
  }
  // Every listed request is hashed (above); nothing else is, e.g. a released request.
  size_t hashed = 0;
  for (size_t slot = 0; slot <= owner.cache_mask_; ++slot) {
    for (const LockRequest* r = owner.cache_[slot]; r != nullptr; r = r->cache_next) ++hashed;
  }
  if (hashed != listed) {
    std::fprintf(stderr, "lock owner %llu: %zu requests hashed, %zu listed\n",
                 static_cast<unsigned long long>(owner.txn_id().value()), hashed, listed);
    return false;
  }
  return true;
}

bool LockManager::CheckInvariants() const {
  size_t in_table = 0;
  for (size_t i = 0; i <= bucket_mask_; ++i) {
    Bucket& bucket = buckets_[i];
    std::lock_guard<threads::SpinLock> guard(bucket.latch);
    for (const LockHead* head = bucket.chain; head != nullptr; head = head->next) {
      if ((head->id.Mix() & bucket_mask_) != i) return Fail(*head, "head in the wrong bucket");
      if (!CheckHead(*head, &in_table)) return false;
    }
  }
  size_t owned = 0;
  std::lock_guard<threads::SpinLock> guard(owners_latch_);
  for (const LockOwner& owner : owners_) {
    if (!CheckOwner(owner, &owned)) return false;
  }
  if (owned != in_table) {
    std::fprintf(stderr, "lock table holds %zu requests, owners list %zu\n", in_table, owned);
    return false;
  }
  return true;
}

bool LockManager::CheckBucketLocked(const Bucket& bucket) const {
  const size_t index = static_cast<size_t>(&bucket - buckets_.get());
  size_t requests = 0;
  for (const LockHead* head = bucket.chain; head != nullptr; head = head->next) {
    if ((head->id.Mix() & bucket_mask_) != index) return Fail(*head, "head in the wrong bucket");
    if (!CheckHead(*head, &requests)) return false;
  }
  return true;
}

bool LockManager::CheckBucket(Bucket& bucket) const {
  std::lock_guard<threads::SpinLock> guard(bucket.latch);
  return CheckBucketLocked(bucket);
}

bool LockManager::CheckOwnerNow(const LockOwner& owner) const {
  if (owner.waiting_ != nullptr) {  // owner invariant 3: only inside a lock call
    std::fprintf(stderr, "lock owner %llu: waiting outside a lock call\n",
                 static_cast<unsigned long long>(owner.txn_id().value()));
    return false;
  }
  size_t requests = 0;
  return CheckOwner(owner, &requests);
}

bool LockManager::CheckOwnerLock(const LockOwner& owner, const LockId& id) const {
  if (owner.waiting_ != nullptr) {
    std::fprintf(stderr, "lock owner %llu: waiting outside a lock call\n",
                 static_cast<unsigned long long>(owner.txn_id().value()));
    return false;
  }
  const LockRequest* r = owner.Find(id, id.Mix());
  size_t requests = 0;
  return r == nullptr || CheckOwnerRequest(owner, *r, &requests);
}

size_t LockManager::TEST_LockHeadCount() const {
  size_t count = 0;
  for (size_t i = 0; i <= bucket_mask_; ++i) {
    std::lock_guard<threads::SpinLock> guard(buckets_[i].latch);
    for (const LockHead* h = buckets_[i].chain; h != nullptr; h = h->next) ++count;
  }
  return count;
}

void LockManager::QueueLengths(const LockId& id, size_t* granted, size_t* waiting) const {
  Bucket& bucket = BucketFor(id.Mix());
  std::lock_guard<threads::SpinLock> guard(bucket.latch);
  const LockHead* head = FindHead(bucket, id);
  *granted = *waiting = 0;
  if (head == nullptr) return;
  *granted = Length(head->granted) + Length(head->converting);
  *waiting = Length(head->converting) + Length(head->waiting);
}

size_t LockManager::TEST_WaiterCount(const LockId& id) const {
  size_t granted, waiting;
  QueueLengths(id, &granted, &waiting);
  return waiting;
}

size_t LockManager::TEST_GrantedCount(const LockId& id) const {
  size_t granted, waiting;
  QueueLengths(id, &granted, &waiting);
  return granted;
}

std::string LockManager::TEST_Dump() const {
  std::string out;
  auto append = [&out](const char* tag, const RequestList& list, bool waiting) {
    for (const LockRequest& r : list) {
      out += ' ';
      out += tag;
      out += std::to_string(r.owner->txn_id().value());
      out += ':';
      out += LockModeName(waiting ? r.wait_mode : r.mode);
      if (!waiting && r.wait_mode != LockMode::kNone) {
        out += "->";
        out += LockModeName(r.wait_mode);
      }
    }
  };
  for (size_t i = 0; i <= bucket_mask_; ++i) {
    std::lock_guard<threads::SpinLock> guard(buckets_[i].latch);
    for (const LockHead* h = buckets_[i].chain; h != nullptr; h = h->next) {
      out += h->id.ToString() + " |";
      append("g", h->granted, false);
      append("c", h->converting, false);
      out += " |";
      append("w", h->waiting, true);
      out += '\n';
    }
  }
  return out;
}

}  // namespace sm::lock
