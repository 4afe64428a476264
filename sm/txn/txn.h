// Txn: the state of one transaction - its id, isolation level, lifecycle state, its chain in the
// log (first and last LSN), the rollback cursor, and its locks (an embedded LockOwner).
//
// Owns: nothing shared. A Txn is created by TxnManager::Begin and finished by Commit or Abort;
// every field changes only through TxnManager (and the B-tree logger, through
// TxnManager::LogRecord), on the fiber or thread that runs the transaction. A finished Txn
// handed back with TxnManager::Recycle is restarted by a later Begin with a new id (its
// LockOwner keeps its request pool and hash, so a warm transaction allocates nothing).
//
// State machine:
//   active --Commit (commit record appended; durable per mode)-->  committed
//   active --Abort (rolled back through the log, end record)-->     aborted
//   active --Commit or Abort in (or into) the database's failed state, or a rollback that
//          failed-->                                                failed (the log, the volume
//          or a half-done rollback latched TxnManager's sticky failed state; the transaction's
//          outcome is decided by the next recovery)
// A finished transaction (committed, aborted, failed) refuses every further call with
// Status::TxnFinished.
//
// Per-transaction state lives here, never in thread_local storage: fibers share OS threads, and
// a transaction may run on a plain thread.
//
// Thread/fiber safety: a Txn is used by one fiber or thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <boost/intrusive/list_hook.hpp>

#include "sm/common/ids.h"
#include "sm/common/relaxed.h"
#include "sm/lock/lock_owner.h"

namespace sm::txn {

enum class Isolation : uint8_t {
  kSerializable,   // strict 2PL with key-range (next-key) locks: no phantoms
  kReadCommitted,  // read locks released at the end of each read; write locks to the end
};
const char* IsolationName(Isolation isolation);

enum class TxnState : uint8_t { kActive, kCommitted, kAborted, kFailed };
const char* TxnStateName(TxnState state);

class TxnManager;

class Txn {
 public:
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn();

  TxnId id() const { return id_; }
  Isolation isolation() const { return isolation_; }
  TxnState state() const { return state_; }
  bool active() const { return state_ == TxnState::kActive; }
  lock::LockOwner* lock_owner() { return &lock_owner_; }

  Lsn first_lsn() const { return first_lsn_; }  // invalid until the first record
  Lsn last_lsn() const { return last_lsn_; }    // prev_lsn of the next record
  uint64_t records_logged() const { return records_logged_; }

  // While a rollback (Abort or restart undo) undoes a record, the undo_next_lsn the compensation
  // record written for that undo must carry; Lsn::Invalid() otherwise. Record loggers use it to
  // choose between an undo-redo record and a compensation record.
  bool compensating() const { return compensating_; }
  Lsn compensation_undo_next() const { return compensation_undo_next_; }

  // Whether a page whose LSN is `page_lsn` holds no change of a transaction that has not
  // finished, so that a read-committed read may return its rows without locking them: true
  // when the LSN is below a bound of TxnManager::UncommittedBound. A bound stays one for good
  // (a transaction that logs later logs above it), so the first call takes the one the manager
  // published last, which costs no lock; a page at or above it makes this transaction compute
  // a fresh one, once, and keep it.
  bool HoldsOnlyCommitted(Lsn page_lsn);

  // Where record loggers encode this transaction's payloads: it keeps its capacity across
  // Restart, so that logging a change allocates nothing once the Txn is warm.
  std::string* payload_buffer() { return &payload_buffer_; }

 private:
  friend class TxnManager;
  Txn(TxnManager* manager, TxnId id, Isolation isolation);
  // A finished Txn that holds no locks starts over as a new transaction.
  void Restart(TxnId id, Isolation isolation);

  TxnManager* const manager_;
  TxnId id_;
  Isolation isolation_;
  TxnState state_ = TxnState::kActive;
  // The log chain. Changed only by the transaction's own fiber or thread, inside a ChainChange
  // (txn_manager.cc), and read without a lock by checkpoints (ChainSnapshot): a sequence count,
  // odd while a change is under way, lets a reader wait out a change and retry a read that
  // overlapped one. Append makes the count odd before its log reservation (a release
  // read-modify-write), and a checkpoint reads the count after its own (acquire): a record
  // below the checkpoint's begin record is then either seen in progress or seen done. This
  // replaced a mutex, whose two locked instructions per log record each waited for the
  // record's copy into the log to drain from the store buffer.
  std::atomic<uint32_t> chain_seq_{0};
  Relaxed<Lsn> first_lsn_;
  Relaxed<Lsn> last_lsn_;
  Relaxed<Lsn> undo_next_;             // the newest record not yet undone (or compensated)
  Relaxed<bool> commit_logged_{false};  // the kTxnCommit record is in the log
  Relaxed<bool> abort_logged_{false};   // the kTxnAbort record is in the log (rolling back)
  uint64_t records_logged_ = 0;
  bool compensating_ = false;
  Lsn compensation_undo_next_;
  Lsn read_committed_bound_;  // invalid until HoldsOnlyCommitted first asks
  bool read_committed_bound_fresh_ = false;  // computed by this transaction, not published
  std::string payload_buffer_;
  lock::LockOwner lock_owner_;
  // TxnManager's table of active transactions: the shard Begin put it in, and its place there.
  uint8_t active_shard_ = 0;
  boost::intrusive::list_member_hook<> active_hook_;  // GUARDED_BY(that shard's mu)
};

}  // namespace sm::txn
