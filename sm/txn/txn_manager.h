// TxnManager: begins, commits and aborts transactions, appends their log records, takes fuzzy
// checkpoints, and runs restart recovery as the log's RecoveryTarget.
//
// Owns: transaction ids, the table of active transactions, the commit and rollback protocols,
// the checkpointer thread, and the statistics. It borrows the log, the lock manager, the buffer
// pool and the volume, which must outlive it.
//
// Commit (two-phase locking with early lock release): a transaction that logged nothing commits
// without a log record. Otherwise a kTxnCommit record is appended and the transaction's locks
// are released at once, before the record is durable (early lock release, as in Aether:
// Johnson et al., VLDB 2010); in durable mode the fiber then waits (group commit) until the
// record is durable and only then acknowledges. Another transaction may meanwhile read the
// data and commit, but its own commit record follows this one in the log, and the log is a
// prefix: a crash that loses this commit loses every later one too, so nothing inconsistent
// survives and nothing acknowledged is lost. The one transaction the log order does not cover
// is a reader that logs nothing: it commits without a record, so in durable mode it waits
// until the log is durable up to the last commit record whose locks were released
// (released_commit_end_, raised before the release), i.e. it acknowledges only durable data.
// Holding the locks until the sync instead would serialize every transaction that touches a
// hot row (a TPC-C warehouse) behind one sync each, and group commit would find nothing to
// group. A committed transaction needs no kTxnEnd record.
//
// Abort: a kTxnAbort record, then the transaction's records are undone newest first through the
// handler table (record_handlers.h), each undo logged as a compensation record; then kTxnEnd,
// then the locks are released. The records are read back with LogManager::ReadRecord: from the
// log buffer while they are still in it (no log sync, no file read: the usual case), else from
// the log file, so a rollback of a transaction larger than the log buffer works too.
//
// Checkpoint (fuzzy, ARIES): kCheckpointBegin; advance the buffer pool's full-page-image epoch
// and write every dirty page (torn-write protection, BufferPool::AdvanceFpiEpoch: a page
// torn by a crash is rebuilt by redo from the full image logged at its first change after the
// checkpoint); snapshot the active transactions, then check the failed state again (a
// rollback that failed meanwhile took its transaction off the active list), and the buffer
// pool's dirty pages; sync the volume (every page written before the snapshot, and the
// allocation map, become durable, so a page absent from the dirty table needs no redo from
// before the checkpoint); kCheckpointEnd with both tables; flush the log; record the begin LSN in
// the log's control file; truncate the log below CheckpointData::OldestNeeded(). Checkpoints run
// on request and, if checkpoint_interval is set, from a background thread, which spreads its
// page writes over checkpoint_spread of the interval; a Checkpoint call (Close's too) makes a
// background checkpoint in progress write the rest at once, and then runs its own.
//
// Sticky failed state (health): the database refuses changes until it is reopened once
//   - the log latched its fatal state (a failed segment write or sync, log_manager.h),
//   - the volume latched its fatal state (a failed fdatasync, volume.h), or
//   - a rollback failed (Abort): the transaction's changes are then partly undone in the
//     buffer pool, with its locks released, and only restart recovery can finish the undo.
//     TxnManager latches this state itself (LatchFailure), so that no checkpoint forgets the
//     half-rolled-back transaction and no other transaction commits on top of its changes.
// In the failed state Begin, Commit (read-only too: nothing is acknowledged), LogRecord,
// LogSystem and Checkpoint return the first cause as Status::Fatal; nothing is retried. The
// buffer pool writes no page any more (its WAL flush callback fails): a page may hold a change
// whose logging failed and was reverted - dirty, yet with no full image logged since the last
// checkpoint, so a torn write of it could not be repaired - or an undo whose compensation
// record could not be logged. The volume keeps its state as of the failure; recovery redoes
// the rest from the log.
// Transitions: ok --log or volume fatal, or LatchFailure (Abort)--> failed; failed is final.
//
// Restart runs log::Recover with this object as the target (it must be called before the first
// Begin), then flushes every page and takes a checkpoint, so that the next restart starts there.
// With RecoveryOptions::analysis_only (a read-only open) it runs analysis alone and writes
// nothing; the caller decides from the report whether the database may be read as it is.
//
// Checked in code: a durable commit is acknowledged only once its record is durable (a
// read-only one once every released commit record is); each record undone, by Abort or by
// restart, writes exactly one compensation record; a transaction finishes once, committed
// with its commit record or aborted with nothing left to undo; a checkpoint's snapshot decodes
// as recovery will read it and needs no record the log has already cut; redo applies a record
// only to a page that lacks it; Restart leaves no page dirty and the log durable to its end.
//
// Thread/fiber safety: Begin, Commit, Abort, LogRecord, LogSystem, Checkpoint and stats may be
// called concurrently from fibers on any worker and from plain threads. A Txn is used by one
// fiber or thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "log/log_manager.h"
#include "log/recovery.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/space/volume.h"
#include "sm/txn/record_handlers.h"
#include "sm/txn/txn.h"
#include "threads/baton.h"
#include "threads/sync.h"

namespace sm::lock {
class LockManager;
}
namespace sm::buffer {
class BufferPool;
}

namespace sm::txn {

struct TxnManagerOptions {
  log::CommitMode commit_mode = log::CommitMode::kDurable;
  // 0: no background checkpoints.
  std::chrono::milliseconds checkpoint_interval{0};
  // A background checkpoint spreads its page writes over this fraction of the interval.
  double checkpoint_spread = 0;
};

struct TxnStats {
  uint64_t begun = 0;
  uint64_t committed = 0;
  uint64_t read_only_commits = 0;  // of committed: no log record needed
  uint64_t aborted = 0;
  uint64_t failed = 0;
  uint64_t records_undone = 0;  // by aborts (not restart)
  uint64_t checkpoints = 0;
  uint64_t active = 0;  // now
  std::string ToString() const;
};

struct CheckpointReport {
  Lsn begin_lsn;
  Lsn end_lsn;
  Lsn oldest_needed;  // the log was truncated below this
  uint64_t active_txns = 0;
  uint64_t dirty_pages = 0;
};

class TxnManager final : public log::RecoveryTarget {
 public:
  TxnManager(log::LogManager* log, lock::LockManager* locks, buffer::BufferPool* pool,
             space::Volume* volume, const TxnManagerOptions& options = {});
  ~TxnManager() override;  // stops the checkpointer; active transactions must be finished
  TxnManager(const TxnManager&) = delete;
  TxnManager& operator=(const TxnManager&) = delete;

  // Restart recovery (see the file comment); once, before the first Begin.
  [[nodiscard]] Status Restart(const log::RecoveryOptions& options, log::RecoveryReport* report);
  // Starts the background checkpointer if options.checkpoint_interval is set.
  void StartCheckpointer();
  void StopCheckpointer();

  // A Txn already in *txn that Recycle would keep is restarted in place (its owner keeps the
  // same object, and what it built around it, from one transaction to the next); any other
  // Txn in *txn goes to Recycle, and *txn gets a recycled or new one.
  [[nodiscard]] Status Begin(Isolation isolation, std::unique_ptr<Txn>* txn);
  // Takes back a Txn its owner is done with: a finished one that holds no locks is kept (up to
  // kRecycledTxns) for a later Begin; anything else is destroyed (an active one rolls back).
  void Recycle(std::unique_ptr<Txn> txn);
  static constexpr size_t kRecycledTxns = 256;
  [[nodiscard]] Status Commit(Txn* txn) { return Commit(txn, options_.commit_mode); }
  [[nodiscard]] Status Commit(Txn* txn, log::CommitMode mode);
  [[nodiscard]] Status Abort(Txn* txn);

  // Appends `record` as the next record of txn: sets its txn id and prev_lsn, and advances the
  // transaction's last (and first) LSN. *lsn: where it starts; *page_lsn: where it ends, the
  // LSN to stamp on the pages it changed (record_handlers.h, page LSN convention). Refused for
  // a finished transaction.
  [[nodiscard]] Status LogRecord(Txn* txn, log::LogRecord* record, Lsn* lsn,
                                 Lsn* page_lsn = nullptr);
  // Appends a redo-only record of a system transaction (txn id 0, kFlagSystemTxn): structure
  // changes that must survive whatever happens to the transaction that caused them. *page_lsn
  // as in LogRecord.
  [[nodiscard]] Status LogSystem(log::LogRecord* record, Lsn* page_lsn);

  [[nodiscard]] Status Checkpoint(CheckpointReport* report = nullptr);

  // OK, or the sticky failed state's Status::Fatal (see the file comment). Inline for the
  // usual answer: every logged record asks.
  [[nodiscard]] Status health() const {
    if (!failed_.load(std::memory_order_acquire)) [[likely]] {
      SM_TRY(log_->health());
      return volume_->health();
    }
    return FailedHealth();
  }

  TxnStats stats() const;
  // The transactions active now, by id (ascending). Work deferred until every one of them has
  // finished (a dropped tree's pages) compares a later call's answer with this one: a
  // transaction that begins after this call is not in it.
  std::vector<TxnId> ActiveTxnIds() const;
  // An LSN at or below the first record of every transaction that has not finished, now or
  // later: the log's end, lowered to the first LSN of each active transaction that has
  // logged. A transaction that logs after the call logs above the end it read, so the bound
  // holds until every caller is done with it; a page whose LSN is below it holds no
  // uncommitted change (Txn::HoldsOnlyCommitted). Visits every shard of the active table, and
  // publishes the bound if it is the highest yet.
  Lsn UncommittedBound() const;
  // The highest bound UncommittedBound has published (invalid before the first): a bound
  // computed earlier is still one, only lower, so it may be used without visiting the shards.
  Lsn PublishedUncommittedBound() const {
    return Lsn(published_bound_.load(std::memory_order_acquire));
  }
  log::LogManager* log() const { return log_; }
  lock::LockManager* locks() const { return locks_; }
  buffer::BufferPool* pool() const { return pool_; }
  space::Volume* volume() const { return volume_; }
  const TxnManagerOptions& options() const { return options_; }

  // log::RecoveryTarget
  Status Redo(const log::LogRecordView& record, uint32_t* pages_applied) override;
  Status EndRedo() override;
  Status Undo(log::RecoveredTxn* txn, const log::LogRecordView& record) override;
  // Pages the last Restart found torn and rebuilt from full images.
  uint64_t torn_pages_repaired() const { return torn_.repaired; }

 private:
  using ActiveList = boost::intrusive::list<
      Txn, boost::intrusive::member_hook<Txn, boost::intrusive::list_member_hook<>,
                                         &Txn::active_hook_>,
      boost::intrusive::constant_time_size<true>>;

  // Inline for the usual answer (every logged record asks); the errors are built out of line.
  Status CheckActive(const Txn* txn) const {
    if (txn != nullptr && txn->manager_ == this && txn->active()) [[likely]] return Status::OK();
    return NotActive(txn);
  }
  Status NotActive(const Txn* txn) const;
  Status FailedHealth() const;
  bool Reusable(const Txn& txn) const;
  Status Append(Txn* txn, log::LogRecord* record, Lsn* lsn, Lsn* page_lsn);
  // The two sides of Txn::chain_seq_: a change of the chain (txn_manager.cc), and a
  // checkpoint's consistent read of it into *entry; false: nothing logged yet.
  class ChainChange;
  static bool ChainSnapshot(const Txn& txn, log::RecoveredTxn* entry);
  // Early lock release (see "Commit"): raise released_commit_end_ to end; a read-only
  // commit in durable mode waits until the log is durable up to it.
  void NoteReleasedCommit(Lsn end);
  Status AwaitReleasedCommits();
  Status Rollback(Txn* txn);
  Status UndoOne(Txn* txn, const log::LogRecordView& record);
  void ReleaseLocks(Txn* txn);
  // Takes the transaction off the active list in its final state (read_only: a commit that
  // logged nothing, counted as such if it succeeded).
  void Finish(Txn* txn, TxnState state, bool read_only = false);
  void LatchFailure(const Status& cause);
  void CheckpointerMain();
  Status RunCheckpoint(CheckpointReport* report, const buffer::FlushPace& pace);
  // Checks of a checkpoint's snapshot before it is logged (txn_recovery.cc).
  static void CheckSnapshot(const log::CheckpointData& data);
  static bool DistinctTxns(const log::CheckpointData& data);
  static bool DecodesAs(const std::string& payload, const log::CheckpointData& data);

  log::LogManager* const log_;
  lock::LockManager* const locks_;
  buffer::BufferPool* const pool_;
  space::Volume* const volume_;
  const TxnManagerOptions options_;

  std::atomic<uint64_t> next_txn_id_{1};
  // UncommittedBound's highest answer, raised by any caller; on a line of its own, since every
  // Begin writes next_txn_id_ and every commit released_commit_end_.
  alignas(64) mutable std::atomic<uint64_t> published_bound_{0};
  // The highest end LSN of a commit record whose transaction has released its locks (see
  // "Commit"); raised before the release.
  alignas(64) std::atomic<uint64_t> released_commit_end_{0};
  TornPages torn_;  // restart only (single-threaded)
  // The active transactions, in shards: a worker's fibers begin theirs in the shard of the
  // worker's index, so that workers share no mutex (a fiber parked on a contended one costs
  // its wake-up a system call) and no cache line per Begin and Finish: the counts of begun
  // and finished transactions are kept per shard too. Other threads use a shard by a hash of
  // their id. Readers of the whole table, and stats(), visit the shards one by one.
  static constexpr size_t kActiveShards = 16;
  struct alignas(64) ActiveShard {
    mutable threads::Mutex mu;
    ActiveList list;  // GUARDED_BY(mu)
    // GUARDED_BY(mu)
    uint64_t begun = 0, committed = 0, read_only_commits = 0, aborted = 0, failed = 0;
  };
  static size_t CallerActiveShard();
  ActiveShard active_[kActiveShards];
  threads::SpinLock recycled_mu_;  // held for a push or a pop only
  // Finished, lock-free Txns for Begin. GUARDED_BY(recycled_mu_)
  std::vector<std::unique_ptr<Txn>> recycled_;
  threads::Mutex checkpoint_mu_;      // one checkpoint at a time
  // Callers of Checkpoint waiting or running: a paced background checkpoint hurries.
  std::atomic<int> checkpoint_callers_{0};

  // The failed state latched by LatchFailure. failure_ is written once, under failure_lock_,
  // before failed_ is set (release); readers load failed_ (acquire) first.
  mutable threads::SpinLock failure_lock_;
  Status failure_;
  std::atomic<bool> failed_{false};

  std::thread checkpointer_;
  threads::Baton checkpointer_wake_;
  std::atomic<bool> checkpointer_stop_{false};

  struct Counters {  // the rare events; the per-transaction counts are in the shards
    std::atomic<uint64_t> records_undone{0}, checkpoints{0};
  };
  Counters counters_;
};

}  // namespace sm::txn
