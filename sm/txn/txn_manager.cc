// TxnManager: begin, commit, abort and rollback, record logging, and statistics. Checkpoints and
// restart recovery are in txn_recovery.cc.
#include "sm/txn/txn_manager.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <string>

#include "sm/buffer/buffer_pool.h"
#include "sm/common/assert.h"
#include "sm/lock/lock_manager.h"
#include "sm/space/volume.h"
#include "sm/txn/page_frees.h"
#include "sm/txn/page_images.h"
#include "sm/txn/record_handlers.h"
#include "threads/ctx_point.h"
#include "threads/worker.h"

namespace sm::txn {

SM_DEFINE_CTX_SITE(kCtxCommitLog, "txn.commit");  // before the commit record is logged

std::string TxnStats::ToString() const {
  return "txns: begun " + std::to_string(begun) + ", committed " + std::to_string(committed) +
         " (" + std::to_string(read_only_commits) + " read-only), aborted " +
         std::to_string(aborted) + ", failed " + std::to_string(failed) + ", records undone " +
         std::to_string(records_undone) + ", checkpoints " + std::to_string(checkpoints) +
         ", active " + std::to_string(active);
}

TxnManager::TxnManager(log::LogManager* log, lock::LockManager* locks, buffer::BufferPool* pool,
                       space::Volume* volume, const TxnManagerOptions& options)
    : log_(log), locks_(locks), pool_(pool), volume_(volume), options_(options) {
  SM_ASSERT(log_ != nullptr && locks_ != nullptr && pool_ != nullptr && volume_ != nullptr);
  RegisterPageImageHandler();
  RegisterPageFreeHandler();
  // The buffer pool's half of write-ahead logging: a page goes to disk only after the log up
  // to its page LSN (the end of the last record that changed it), and a page that becomes
  // dirty is known to miss nothing below the log's current end. In the failed state no page is
  // written at all, even one whose page LSN is durable: it may hold a change whose logging
  // failed and was reverted, so no full image logged since the last checkpoint protects its
  // write against tearing, or an undo whose compensation record could not be logged.
  pool_->SetWalFlush([this, log](Lsn page_lsn) {
    SM_TRY(health());
    return page_lsn.valid() ? log->Flush(page_lsn) : Status::OK();
  });
  pool_->SetRecLsnSource([log] { return log->end_lsn(); });
  // The other side of the WAL rule, checked by the pool just before each write.
  pool_->SetDurableLsnSource([log] { return log->durable_lsn(); });
}

TxnManager::~TxnManager() {
  StopCheckpointer();
  for (ActiveShard& shard : active_) {
    std::lock_guard<threads::Mutex> guard(shard.mu);
    SM_ASSERT(shard.list.empty());  // every transaction must be finished (or destroyed) first
  }
  recycled_.clear();  // their LockOwners leave the lock manager, which outlives us
}

Status TxnManager::FailedHealth() const {
  SM_TRY(log_->health());
  SM_TRY(volume_->health());
  std::lock_guard<threads::SpinLock> guard(failure_lock_);
  return failure_;
}

void TxnManager::LatchFailure(const Status& cause) {
  std::lock_guard<threads::SpinLock> guard(failure_lock_);
  if (failed_.load(std::memory_order_relaxed)) return;  // only the first cause is kept
  failure_ = Status::Fatal("the database refuses changes until it is reopened: " +
                           cause.ToString());
  failure_.PermitUnchecked();  // a record, handed out as copies by health()
  failed_.store(true, std::memory_order_release);
}

Status TxnManager::Begin(Isolation isolation, std::unique_ptr<Txn>* txn) {
  SM_TRY(health());
  TxnId id(next_txn_id_.fetch_add(1, std::memory_order_relaxed));
  std::unique_ptr<Txn> fresh;
  if (*txn != nullptr && Reusable(**txn)) {
    fresh = std::move(*txn);
  } else {
    Recycle(std::move(*txn));
    std::lock_guard<threads::SpinLock> guard(recycled_mu_);
    if (!recycled_.empty()) {
      fresh = std::move(recycled_.back());
      recycled_.pop_back();
    }
  }
  if (fresh != nullptr) {
    fresh->Restart(id, isolation);
  } else {
    fresh.reset(new Txn(this, id, isolation));
  }
  fresh->active_shard_ = static_cast<uint8_t>(CallerActiveShard());
  {
    ActiveShard& shard = active_[fresh->active_shard_];
    std::lock_guard<threads::Mutex> guard(shard.mu);
    shard.list.push_back(*fresh);
    ++shard.begun;
  }
  *txn = std::move(fresh);
  return Status::OK();
}

size_t TxnManager::CallerActiveShard() {
  if (threads::Worker* worker = threads::Worker::Current()) {
    return static_cast<size_t>(worker->index()) % kActiveShards;
  }
  // A plain thread's shard, hashed once per thread (std::hash of a thread id is a byte hash).
  thread_local const size_t shard =
      std::hash<std::thread::id>{}(std::this_thread::get_id()) % kActiveShards;
  return shard;
}

bool TxnManager::Reusable(const Txn& txn) const {
  return txn.manager_ == this && !txn.active() && txn.lock_owner_.lock_count() == 0;
}

void TxnManager::Recycle(std::unique_ptr<Txn> txn) {
  if (txn == nullptr || !Reusable(*txn)) return;  // destroyed here (an active one rolls back)
  std::lock_guard<threads::SpinLock> guard(recycled_mu_);
  if (recycled_.size() < kRecycledTxns) recycled_.push_back(std::move(txn));
}

Status TxnManager::NotActive(const Txn* txn) const {
  if (txn == nullptr) return Status::InvalidArgument("no transaction");
  if (txn->manager_ != this) {
    return Status::InvalidArgument("transaction " + std::to_string(txn->id_.value()) +
                                   " belongs to another database");
  }
  if (!txn->active()) {
    return Status::TxnFinished("transaction " + std::to_string(txn->id_.value()) +
                               " already finished (" + TxnStateName(txn->state_) + ")");
  }
  return Status::OK();
}

Status TxnManager::LogRecord(Txn* txn, log::LogRecord* record, Lsn* lsn, Lsn* page_lsn) {
  SM_TRY(CheckActive(txn));
  SM_TRY(health());
  return Append(txn, record, lsn, page_lsn);
}

// A change of a transaction's log chain (Txn::chain_seq_): the count is odd from the
// constructor to the destructor. Only the transaction's own fiber or thread makes one.
class TxnManager::ChainChange {
 public:
  explicit ChainChange(Txn* txn) : txn_(txn) {
    uint32_t seq = txn_->chain_seq_.load(std::memory_order_relaxed);
    SM_DASSERT((seq & 1) == 0);
    // relaxed: the log reservation that follows is a release read-modify-write, which orders
    // this store before it for a checkpoint that reserves after it (Txn::chain_seq_).
    txn_->chain_seq_.store(seq + 1, std::memory_order_relaxed);
  }
  ~ChainChange() {
    // release: a reader that sees the even count sees the chain's new fields.
    txn_->chain_seq_.store(txn_->chain_seq_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_release);
  }
  ChainChange(const ChainChange&) = delete;
  ChainChange& operator=(const ChainChange&) = delete;

 private:
  Txn* const txn_;
};

// LogRecord once its caller has checked the transaction and the database's health.
Status TxnManager::Append(Txn* txn, log::LogRecord* record, Lsn* lsn, Lsn* page_lsn) {
  ChainChange change(txn);
  record->txn = txn->id_;
  record->prev_lsn = txn->last_lsn_;
  Lsn start, end;
  SM_TRY(log_->Insert(*record, &start, &end));
  SM_DASSERT(start < end);
  if (!txn->first_lsn_.get().valid()) txn->first_lsn_ = start;
  txn->last_lsn_ = start;
  switch (log::KindOf(record->type)) {
    case log::RecordKind::kUndoRedo:
      txn->undo_next_ = start;
      break;
    case log::RecordKind::kCompensation:
      txn->undo_next_ = record->undo_next;
      break;
    default:
      break;  // nothing to undo in it
  }
  if (record->type == log::RecordType::kTxnCommit) txn->commit_logged_ = true;
  if (record->type == log::RecordType::kTxnAbort) txn->abort_logged_ = true;
  ++txn->records_logged_;
  // What a checkpoint snapshots of the chain (ChainSnapshot) must decode: the checkpoint
  // payload's invariant 1 (log/recovery.cc).
  SM_DASSERT(txn->first_lsn_.get() <= txn->last_lsn_.get());
  SM_DASSERT(txn->undo_next_.get() <= txn->last_lsn_.get());
  *lsn = start;
  if (page_lsn != nullptr) *page_lsn = end;
  return Status::OK();
}

Status TxnManager::LogSystem(log::LogRecord* record, Lsn* page_lsn) {
  SM_TRY(health());
  record->txn = TxnId::Invalid();
  record->prev_lsn = Lsn::Invalid();
  record->flags = static_cast<uint16_t>(record->flags | log::kFlagSystemTxn);
  Lsn start;
  return log_->Insert(*record, &start, page_lsn);
}

Status TxnManager::Commit(Txn* txn, log::CommitMode mode) {
  SM_TRY(CheckActive(txn));
  SM_CTX(kCtxCommitLog);
  // In the failed state nothing is acknowledged: not even a read-only transaction, which may
  // have read changes of a transaction whose rollback failed.
  if (Status failed = health(); !failed.ok()) {
    ReleaseLocks(txn);
    Finish(txn, TxnState::kFailed);
    return failed;
  }
  if (txn->records_logged_ == 0) {  // read-only: no record, see "Commit" in the header
    ReleaseLocks(txn);
    Status s = mode == log::CommitMode::kDurable ? AwaitReleasedCommits() : Status::OK();
    Finish(txn, s.ok() ? TxnState::kCommitted : TxnState::kFailed, /*read_only=*/true);
    return s;
  }
  log::LogRecord record;
  record.type = log::RecordType::kTxnCommit;
  Lsn lsn, end;
  Status s = Append(txn, &record, &lsn, &end);  // checked above
  if (s.ok()) {
    NoteReleasedCommit(end);  // before the release: a reader that sees the data sees this
    ReleaseLocks(txn);        // early release, see "Commit" in the header
    s = log_->AwaitCommit(end, mode);
    // The acknowledgement of a durable commit: its record is durable (the log checks the
    // same on its side of AwaitCommit).
    SM_ASSERT(!s.ok() || mode != log::CommitMode::kDurable || log_->durable_lsn() >= end);
    SM_DASSERT(!s.ok() || txn->commit_logged_);
  } else {
    ReleaseLocks(txn);
  }
  // A failure here means the log is in its sticky fatal state: whether the commit record
  // survives is for the next recovery to find out.
  Finish(txn, s.ok() ? TxnState::kCommitted : TxnState::kFailed);
  return s;
}

void TxnManager::NoteReleasedCommit(Lsn end) {
  uint64_t seen = released_commit_end_.load(std::memory_order_relaxed);
  while (seen < end.value() &&
         !released_commit_end_.compare_exchange_weak(seen, end.value(),
                                                     std::memory_order_release,
                                                     std::memory_order_relaxed)) {
  }
}

Status TxnManager::AwaitReleasedCommits() {
  const Lsn released(released_commit_end_.load(std::memory_order_acquire));
  if (!released.valid() || log_->durable_lsn() >= released) return Status::OK();  // usual
  Status s = log_->Flush(released);
  // A read-only durable commit acknowledges only data whose commit records are durable.
  SM_ASSERT(!s.ok() || log_->durable_lsn() >= released);
  return s;
}

Status TxnManager::Abort(Txn* txn) {
  SM_TRY(CheckActive(txn));
  Status s = Rollback(txn);
  // A rollback that stopped half way leaves changes of a transaction that is not committed in
  // the pages; only restart recovery can undo them (see the file comment).
  if (!s.ok()) LatchFailure(s);
  ReleaseLocks(txn);
  Finish(txn, s.ok() ? TxnState::kAborted : TxnState::kFailed);
  return s;
}

// Undoes the transaction's records newest first (each undo logged as a compensation record),
// then writes its end record. The records are read back from the log (its buffer, or its file
// once the buffer has moved on), so a rollback is not limited by the log buffer.
Status TxnManager::Rollback(Txn* txn) {
  if (txn->records_logged_ == 0) return Status::OK();
  log::LogRecord abort_record;
  abort_record.type = log::RecordType::kTxnAbort;
  Lsn lsn;
  SM_TRY(LogRecord(txn, &abort_record, &lsn));
  Lsn next = txn->undo_next_;
  while (next.valid()) {
    log::LogRecordBuf buf;
    SM_TRY(log_->ReadRecord(next, &buf));
    const log::LogRecordView& record = buf.view();
    if (record.txn != txn->id_) {
      return Status::Corruption("rollback of transaction " + std::to_string(txn->id_.value()) +
                                ": the record at LSN " + std::to_string(next.value()) +
                                " belongs to transaction " + std::to_string(record.txn.value()));
    }
    switch (record.kind()) {
      case log::RecordKind::kUndoRedo:
        SM_TRY(UndoOne(txn, record));
        counters_.records_undone.fetch_add(1, std::memory_order_relaxed);
        next = record.prev_lsn;
        break;
      case log::RecordKind::kCompensation:
        next = record.undo_next;
        break;
      default:
        next = record.prev_lsn;
        break;
    }
    ChainChange change(txn);
    txn->undo_next_ = next;
  }
  SM_DASSERT(txn->abort_logged_);
  log::LogRecord end_record;
  end_record.type = log::RecordType::kTxnEnd;
  return LogRecord(txn, &end_record, &lsn);
}

Status TxnManager::UndoOne(Txn* txn, const log::LogRecordView& record) {
  const RecordHandler* handler = FindRecordHandler(record.type, record.subtype);
  if (handler == nullptr || handler->undo == nullptr) {
    return Status::Corruption("undo of the record at LSN " + std::to_string(record.lsn.value()) +
                              ": no undo handler for " + log::RecordTypeName(record.type) +
                              " sub-type " + std::to_string(record.subtype));
  }
  SM_ASSERT(record.txn == txn->id_);
  SM_ASSERT(record.lsn <= txn->last_lsn_.get());  // a record of this chain, not yet undone
  SM_ASSERT(!txn->compensating_);                 // undos do not nest
  const uint64_t logged_before = txn->records_logged_;
  const Lsn last_before = txn->last_lsn_;
  txn->compensating_ = true;
  txn->compensation_undo_next_ = record.prev_lsn;
  UndoContext ctx{this, txn};
  Status s = handler->undo(ctx, record);
  txn->compensating_ = false;
  txn->compensation_undo_next_ = Lsn::Invalid();
  if (s.ok()) {
    // One compensation record per undone record (record_handlers.h, "undo"): one record
    // appended to the chain, and a compensation record, since only that kind sets undo_next
    // to the undone record's predecessor (Append).
    SM_ASSERT(txn->records_logged_ == logged_before + 1);
    SM_ASSERT(txn->last_lsn_.get() > last_before);
    SM_ASSERT(txn->undo_next_.get() == record.prev_lsn);
  }
  return s;
}

// A recycled Txn keeps its database and table intention locks for the next transaction it
// runs (lock_manager.h, "Inheritance"): most transactions take the same ones again.
void TxnManager::ReleaseLocks(Txn* txn) {
  locks_->ReleaseAll(&txn->lock_owner_, lock::Inherit::kIntentions);
}

void TxnManager::Finish(Txn* txn, TxnState state, bool read_only) {
  SM_ASSERT(state != TxnState::kActive);
  SM_ASSERT(txn->active());  // the state machine of txn.h: only an active one finishes
  SM_ASSERT(!txn->compensating_);
  // A commit is read-only exactly when nothing was logged; one that logged wrote its commit
  // record; an abort leaves nothing to undo.
  SM_ASSERT(state != TxnState::kCommitted || read_only == (txn->records_logged_ == 0));
  SM_ASSERT(state != TxnState::kCommitted || read_only || txn->commit_logged_);
  SM_ASSERT(state != TxnState::kAborted || !txn->undo_next_.get().valid());
  txn->state_ = state;
  ActiveShard& shard = active_[txn->active_shard_];
  std::lock_guard<threads::Mutex> guard(shard.mu);
  shard.list.erase(shard.list.iterator_to(*txn));
  if (state == TxnState::kCommitted) {
    ++shard.committed;
    if (read_only) ++shard.read_only_commits;
  } else {
    ++(state == TxnState::kAborted ? shard.aborted : shard.failed);
  }
}

std::vector<TxnId> TxnManager::ActiveTxnIds() const {
  std::vector<TxnId> ids;
  for (const ActiveShard& shard : active_) {
    std::lock_guard<threads::Mutex> guard(shard.mu);
    for (const Txn& txn : shard.list) ids.push_back(txn.id());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The end is read first, with acquire: a transaction whose first record was reserved below it
// made its chain count odd before that reservation (ChainChange), so the walk either sees its
// first LSN or waits the change out (ChainSnapshot). One that reserves later logs above the end.
Lsn TxnManager::UncommittedBound() const {
  Lsn bound = log_->end_lsn_acquire();
  for (const ActiveShard& shard : active_) {
    std::lock_guard<threads::Mutex> guard(shard.mu);
    for (const Txn& txn : shard.list) {
      log::RecoveredTxn chain;
      if (ChainSnapshot(txn, &chain) && chain.first_lsn < bound) bound = chain.first_lsn;
    }
  }
  uint64_t published = published_bound_.load(std::memory_order_relaxed);
  while (published < bound.value() &&
         !published_bound_.compare_exchange_weak(published, bound.value(),
                                                 std::memory_order_release,
                                                 std::memory_order_relaxed)) {
  }
  return bound;
}

TxnStats TxnManager::stats() const {
  TxnStats stats;
  stats.records_undone = counters_.records_undone.load(std::memory_order_relaxed);
  stats.checkpoints = counters_.checkpoints.load(std::memory_order_relaxed);
  for (const ActiveShard& shard : active_) {
    std::lock_guard<threads::Mutex> guard(shard.mu);
    stats.active += shard.list.size();
    stats.begun += shard.begun;
    stats.committed += shard.committed;
    stats.read_only_commits += shard.read_only_commits;
    stats.aborted += shard.aborted;
    stats.failed += shard.failed;
  }
  return stats;
}

}  // namespace sm::txn
