// TxnKeyLocks: the B-tree's key locks over the lock manager (mapping and pin in btree_locks.h).
#include "index/btree_locks.h"

#include "sm/common/assert.h"

namespace sm::index {

using lock::LockDuration;
using lock::LockId;
using lock::LockMode;
using lock::LockWait;

TxnKeyLocks::TxnKeyLocks(lock::LockManager* manager, lock::LockOwner* owner,
                         txn::Isolation isolation, lock::TableId table, txn::Txn* txn)
    : manager_(manager), owner_(owner), txn_(txn), isolation_(isolation), table_(table) {
  SM_ASSERT(manager != nullptr);
  SM_ASSERT(owner != nullptr);
  SM_ASSERT(owner->manager() == manager);
}

void TxnKeyLocks::Reset(txn::Isolation isolation) {
  SM_ASSERT(owner_->lock_count() == 0);  // after ReleaseAll
  isolation_ = isolation;
  table_mode_ = LockMode::kNone;
  pinned_ = KeyLock{};
  last_ = KeyLock{};
}

bool TxnKeyLocks::CoveredByLast(const KeyLock& lock) {
  if (!(last_.id == lock.id) || !Covers(last_.mode, lock.mode)) return false;
  SM_DASSERT(Covers(owner_->HeldMode(lock.id), last_.mode));  // still held (see "Last lock")
  lock::LockManager::CountCovered(owner_);
  return true;
}

// Inlined, like Intend: out of line, Map returned the 32-byte KeyLock through memory and Intend
// derived the intention from its mode at run time; inlined, each purpose's mode is a constant
// that folds through IntentionFor, Covers and ParentCoversChild.
[[gnu::always_inline]] inline TxnKeyLocks::KeyLock TxnKeyLocks::Map(
    const KeyLockRequest& request) const {
  const bool serializable = isolation_ == txn::Isolation::kSerializable;
  const LockDuration read_duration = serializable ? LockDuration::kCommit : LockDuration::kInstant;
  // The hash of the request's key: PrefetchKey's (the caller vouches that it is of the same
  // bytes), or computed here.
  SM_DASSERT(request.prefetched == 0 || request.prefetched == LockId::HashKey(request.key));
  const uint64_t hash = request.end_of_index      ? 0
                        : request.prefetched != 0 ? request.prefetched
                                                  : LockId::HashKey(request.key);
  // Only the *Next purposes may name the end of index.
  auto key = [&] {
    SM_ASSERT(!request.end_of_index);
    return LockId::KeyHash(table_, hash);
  };
  auto next = [&] {
    return request.end_of_index ? LockId::TableEnd(table_) : LockId::KeyHash(table_, hash);
  };
  switch (request.purpose) {
    case KeyLockPurpose::kWrite:  // the record, not the gap before it
      return KeyLock{key(), LockMode::kXK, LockDuration::kCommit};
    case KeyLockPurpose::kInsertNext:  // RangeOp::kInsert
      return KeyLock{next(), LockMode::kIX, LockDuration::kInstant};
    case KeyLockPurpose::kDeleteNext:  // RangeOp::kDelete
      return KeyLock{next(), LockMode::kX, LockDuration::kCommit};
    case KeyLockPurpose::kRead:
      return KeyLock{key(), LockMode::kS, read_duration};
    case KeyLockPurpose::kReadNext:  // RangeOp::kScan when serializable
      return KeyLock{next(), LockMode::kS, read_duration};
    case KeyLockPurpose::kIncrement:
      return KeyLock{key(), LockMode::kInc, LockDuration::kCommit};
  }
  SM_UNREACHABLE();
}

Status TxnKeyLocks::LockTable(bool for_write, LockWait wait) {
  return LockTableMode(for_write ? LockMode::kIX : LockMode::kIS, wait);
}

Status TxnKeyLocks::LockTableMode(LockMode intention, LockWait wait) {
  if (Covers(table_mode_, intention)) return Status::OK();  // LockTable() calls it directly
  // The owner's mode, which may be stronger than asked (e.g. a table S taken elsewhere), or
  // the one a database lock implies on the table (which then holds no lock of its own).
  SM_TRY(manager_->LockTable(owner_, table_, intention, wait, &table_mode_));
  SM_ASSERT(Covers(table_mode_, intention));
  return Status::OK();
}

[[gnu::always_inline]] inline Status TxnKeyLocks::Intend(const KeyLock& lock, LockWait wait,
                                                         bool* covered) {
  // A stale cache (ReleaseAll without Reset) would skip the intention lock: catch it in debug.
  SM_DASSERT(Covers(lock::Supremum(owner_->HeldMode(LockId::Table(table_)),
                                   lock::ImpliedOnChildren(owner_->HeldMode(LockId::Database()))),
                    table_mode_));
  const LockMode intention = lock::IntentionFor(lock.mode);
  // Nearly every request finds the table intention taken by an earlier one of this
  // transaction: one table look-up, no call, no Status.
  if (!Covers(table_mode_, intention)) [[unlikely]] SM_TRY(LockTableMode(intention, wait));
  *covered = lock::ParentCoversChild(table_mode_, lock.mode);
  return Status::OK();
}

void TxnKeyLocks::DropPin() {
  if (pinned_.mode == LockMode::kNone) return;
  SM_DASSERT(!(pinned_.id == last_.id));  // taken on a key not held, then nothing new noted
  const bool released = manager_->Release(owner_, pinned_.id);
  SM_ASSERT(released);  // nothing else releases a single lock of this owner
  pinned_ = KeyLock{};
}

Status TxnKeyLocks::TryLockKey(const KeyLockRequest& request) {
  const KeyLock lock = Map(request);
  if (pinned_.mode != LockMode::kNone) {
    // The restart after LockKey: the same request is granted by the pin, held until now.
    const bool same = pinned_.id == lock.id && pinned_.mode == lock.mode;
    DropPin();
    if (same) return Status::OK();
  }
  bool covered = false;
  SM_TRY(Intend(lock, LockWait::kNoWait, &covered));
  if (covered) return Status::OK();
  SM_TRY(manager_->Lock(owner_, lock.id, lock.mode, lock.duration, LockWait::kNoWait));
  if (lock.duration == LockDuration::kCommit) last_ = lock;
  return Status::OK();
}

uint64_t TxnKeyLocks::PrefetchKey(std::string_view key) {
  const uint64_t hash = LockId::HashKey(key);
  manager_->Prefetch(LockId::KeyHash(table_, hash));
  return hash;
}

bool TxnKeyLocks::ReadsCommittedWithoutLocks(Lsn page_lsn) {
  if (isolation_ != txn::Isolation::kReadCommitted) return false;
  if (!Covers(table_mode_, LockMode::kIS) &&
      !LockTableMode(LockMode::kIS, LockWait::kNoWait).ok()) {
    return false;  // the intention would wait: lock row by row, which waits as it must
  }
  const bool committed = (txn_ != nullptr && txn_->HoldsOnlyCommitted(page_lsn)) ||
                         manager_->NoOtherWriter(owner_, table_);
  // A read restarted after a lock wait finds that lock pinned (see "Waiting"); reading unlocked,
  // it will not ask for it again, so it goes now, as an instant lock would have.
  if (committed) DropPin();
  return committed;
}

Status TxnKeyLocks::LockKey(const KeyLockRequest& request) {
  DropPin();
  const KeyLock lock = Map(request);
  if (CoveredByLast(lock)) return Status::OK();
  bool covered = false;
  SM_TRY(Intend(lock, LockWait::kBlock, &covered));
  if (covered) return Status::OK();
  if (lock.duration == LockDuration::kInstant && owner_->HeldMode(lock.id) == LockMode::kNone) {
    SM_TRY(manager_->Lock(owner_, lock.id, lock.mode, LockDuration::kCommit, LockWait::kBlock));
    pinned_ = lock;
    return Status::OK();
  }
  // Held already (an instant request on a held lock is a conversion the manager keeps) or
  // commit duration.
  SM_TRY(manager_->Lock(owner_, lock.id, lock.mode, lock.duration, LockWait::kBlock));
  if (lock.duration == LockDuration::kCommit) last_ = lock;
  return Status::OK();
}

}  // namespace sm::index
