// TxnKeyLocks: the B-tree's KeyLockHook (btree_hooks.h) for one transaction on one table, over
// the lock manager's key-range (next-key) protocol (sm/lock/lock_manager.h).
//
// Owns: the mapping from the tree's lock requests to lock-manager calls, the transaction's
// intention lock on the table (as far as this hook took it), and at most one lock kept across a
// tree restart (the "pin", below).
//
// Mapping ("next" is the request's key, or LockId::TableEnd(table) when end_of_index; every
// lock also needs the table and database intention locks, see "Intention"):
//
//   purpose       serializable                              read committed
//   kWrite        XK on the key, commit                     XK on the key, commit
//   kInsertNext   IX on next, instant  (RangeOp::kInsert)   IX on next, instant
//   kDeleteNext   X on next, commit    (RangeOp::kDelete)   X on next, commit
//   kRead         S on the key, commit                      S on the key, instant
//   kReadNext     S on next, commit    (RangeOp::kScan)     S on next, instant
//   kIncrement    INC on the key, commit                    INC on the key, commit
//
// Read committed. A read lock is asked for with instant duration: it is granted iff no other
// transaction holds a conflicting lock at that moment, and nothing stays in the lock table, so
// no Release call is needed and a later writer does not wait for the reader. That suffices
// because the tree asks for it with the leaf latched and copies the record under the same
// latch, while every writer holds XK on its key (kWrite, granted before it changes the leaf) and,
// for a delete, X on the next key until it commits: so a record read is committed, and a key
// found absent was not removed by an uncommitted delete. The latter is why kReadNext takes an
// instant S under read committed rather than nothing: without it a lookup or a scan end would
// report "absent" for a key whose delete is later rolled back (a dirty read). Instant locks
// hold no gap, so phantoms remain possible, as read committed allows.
//
// Waiting (btree_hooks.h, locking contract 1). TryLockKey asks with LockWait::kNoWait and says
// Busy if the lock would wait; the tree then drops its latches and calls LockKey, which waits
// (LockWait::kBlock), and restarts the operation. A lock of commit duration granted by LockKey
// stays held, so the restart's TryLockKey is a covered re-request. An instant lock would not
// stay, so the restart could be refused again and again (an inserter behind a stream of
// scanners of the same next key). Hence the pin: LockKey takes an instant request that the
// transaction does not already hold with commit duration instead and remembers it; the next
// call of this hook releases it first. If that call is the same request (the restart reaching
// the same next key), it is granted at once: the lock was held up to this moment, under the
// caller's latch, which is all an instant lock promises. The pin only ever extends a lock's
// hold, which two-phase locking allows, and while it is held the transaction waits for nothing.
// An insertion asks for kInsertNext and then kWrite; after a wait for the former, the restart's
// kInsertNext is granted by the pin and drops it, so if its kWrite must then wait, it waits
// holding nothing on the next key.
//
// Intention. Key locks need IS (for S) or IX (for IX, X) on the table and the database. The
// hook takes them through LockTable on its first key lock of each kind and remembers the mode,
// so each later key request is one LockManager::Lock call (one hash probe of the owner when
// re-requested) rather than LockKey's walk over both ancestors. If the transaction holds the
// table in a mode that covers the key lock (S or SIX for reads, X for everything), the key lock
// is skipped, as LockManager::LockHierarchical does.
//
// Last lock. Reading a row for update and then updating it asks twice for X on one key: the
// tree's Update asks through LockKey before its descent (in TPC-C nearly every LockKey call).
// The hook remembers the last key lock it was granted with commit duration (id and the mode
// asked for; the owner's mode may be stronger), and LockKey answers a request that this lock
// covers at once, without the intention check, the lock manager's call and its owner-hash
// probe, exactly as the manager would (a covered request is a no-op, also an instant one).
// TryLockKey does not look: its covered requests are rare, so the check would cost more than
// it saves. The remembered lock is held:
// commit-duration key locks of this owner are released only by ReleaseAll (after which Reset
// forgets it) and by DropPin, and a pin is only ever taken on a key the owner did not hold.
//
// Lifetime: one TxnKeyLocks per transaction and table, used through one LockOwner. It must not
// be used after the owner's ReleaseAll until Reset is called (its cached table mode and pin
// would be stale).
//
// Thread/fiber safety: like its LockOwner, used by one fiber or thread at a time (the
// transaction's); it may move between fibers and workers between calls. The tree calls it
// from the fiber running the operation.
#pragma once

#include "index/btree_hooks.h"
#include "sm/common/status.h"
#include "sm/lock/lock_id.h"
#include "sm/lock/lock_manager.h"
#include "sm/lock/lock_mode.h"
#include "sm/lock/lock_owner.h"
#include "sm/txn/txn.h"

namespace sm::index {

class TxnKeyLocks final : public KeyLockHook {
 public:
  // `txn` (may be null: then no page is known to be older than every uncommitted change)
  // answers ReadsCommittedWithoutLocks' page test.
  TxnKeyLocks(lock::LockManager* manager, lock::LockOwner* owner, txn::Isolation isolation,
              lock::TableId table, txn::Txn* txn = nullptr);
  TxnKeyLocks(const TxnKeyLocks&) = delete;
  TxnKeyLocks& operator=(const TxnKeyLocks&) = delete;

  // With a leaf latched: never waits. Busy if the lock would wait.
  [[nodiscard]] Status TryLockKey(const KeyLockRequest& request) override;
  // With no latch held: waits until granted. Deadlock / LockTimeout: not granted; the
  // transaction must abort (release its locks) and may retry.
  [[nodiscard]] Status LockKey(const KeyLockRequest& request) override;
  // The lock table's bucket of the key's lock (the lock that a found key takes). Returns the
  // key's hash, which a request on the key then need not compute again.
  uint64_t PrefetchKey(std::string_view key) override;
  // Read committed, the table's IS held (taken here if it is granted at once), and either the
  // page older than the transaction's bound (needs the transaction) or no other transaction
  // able to write the table.
  bool ReadsCommittedWithoutLocks(Lsn page_lsn) override;
  bool ReadsMayGoUnlocked() const override {
    return isolation_ == txn::Isolation::kReadCommitted;
  }

  // Takes the table's intention lock for readers (IS) or writers (IX), and the database's,
  // unless this hook already holds it. Key requests do it themselves when needed; calling it
  // first (e.g. IX at the start of a write statement) keeps that wait out of the tree.
  [[nodiscard]] Status LockTable(bool for_write, lock::LockWait wait = lock::LockWait::kBlock);

  // For a new transaction on the same owner, after the owner's ReleaseAll.
  void Reset(txn::Isolation isolation);

  txn::Isolation isolation() const { return isolation_; }
  lock::TableId table() const { return table_; }
  // The lock kept across a restart (see "Waiting"); invalid if none. For tests.
  lock::LockId TEST_pinned() const { return pinned_.id; }

 private:
  // One lock-manager request (mode kNone: none, for pinned_).
  struct KeyLock {
    lock::LockId id;
    lock::LockMode mode = lock::LockMode::kNone;
    lock::LockDuration duration = lock::LockDuration::kCommit;
  };

  KeyLock Map(const KeyLockRequest& request) const;
  // The request is covered by last_ (counted as a covered request).
  bool CoveredByLast(const KeyLock& lock);
  // Ensures the intention lock `lock` needs. *covered: the table lock covers the key lock.
  Status Intend(const KeyLock& lock, lock::LockWait wait, bool* covered);
  Status LockTableMode(lock::LockMode intention, lock::LockWait wait);
  void DropPin();

  lock::LockManager* const manager_;
  lock::LockOwner* const owner_;
  txn::Txn* const txn_;
  txn::Isolation isolation_;
  const lock::TableId table_;
  // The owner's mode on the table once taken here: its table lock, or the mode a database
  // lock implies (lock::ImpliedOnChildren).
  lock::LockMode table_mode_ = lock::LockMode::kNone;
  KeyLock pinned_;                                     // mode kNone: no pin
  KeyLock last_;  // see "Last lock"; mode kNone: none
};

}  // namespace sm::index
