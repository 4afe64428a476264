// TxnManager: fuzzy checkpoints, the background checkpointer, and restart recovery (the
// log::RecoveryTarget side: redo through the handler table, undo of losers).
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "sm/buffer/buffer_pool.h"
#include "sm/common/assert.h"
#include "sm/space/volume.h"
#include "sm/txn/record_handlers.h"
#include "sm/txn/txn_manager.h"
#include "threads/worker.h"

namespace sm::txn {

// ---- Restart ---------------------------------------------------------------------------------

Status TxnManager::Restart(const log::RecoveryOptions& options, log::RecoveryReport* report) {
  SM_TRY(log::Recover(log_, this, options, report));
  uint64_t next = report->next_txn_id.value();
  uint64_t current = next_txn_id_.load(std::memory_order_relaxed);
  if (next > current) next_txn_id_.store(next, std::memory_order_relaxed);
  if (!options.undo) return Status::OK();  // losers remain: no checkpoint may forget them
  if (options.analysis_only) {
    // A read-only open: analysis changed no page, and nothing may be written.
    SM_ASSERT(pool_->DirtyPages().empty());
    return Status::OK();
  }
  // Redo marked pages dirty with rec_lsn = the record repeated; writing them all now makes the
  // checkpoint below a clean starting point for the next restart.
  SM_TRY(pool_->FlushAll());
  // Nothing runs yet that could dirty a page again (Restart precedes the first Begin).
  SM_ASSERT(pool_->DirtyPages().empty());
  SM_TRY(Checkpoint());
  // The checkpoint flushed its end record, the last record there is.
  SM_ASSERT(log_->durable_lsn() == log_->end_lsn());
  return Status::OK();
}

Status TxnManager::Redo(const log::LogRecordView& record, uint32_t* pages_applied) {
  *pages_applied = 0;
  const RecordHandler* handler = FindRecordHandler(record.type, record.subtype);
  if (handler == nullptr) {
    return Status::Corruption("redo of the record at LSN " + std::to_string(record.lsn.value()) +
                              ": no handler for " + log::RecordTypeName(record.type) +
                              " sub-type " + std::to_string(record.subtype));
  }
  RedoContext ctx(pool_, volume_, record, &torn_);
  if (handler->redo != nullptr) {
    SM_TRY(handler->redo(ctx));
  } else {
    if (!record.page.valid()) {
      return Status::Corruption("redo of the record at LSN " +
                                std::to_string(record.lsn.value()) + " (" + handler->name +
                                "): it names no page");
    }
    buffer::PageHandle page;
    bool apply = false;
    SM_TRY(ctx.Fix(record.page, /*full_image=*/false, &page, &apply));
    if (apply) {
      const Lsn before = PageLsn(page.data());
      SM_TRY(handler->redo_page(record, page.data()));
      // The handler changes the page, never its LSN: the caller stamps it (handler contract).
      SM_ASSERT(PageLsn(page.data()) == before);
      ctx.Applied(page);
    }
  }
  *pages_applied = ctx.pages_applied();
  return Status::OK();
}

Status TxnManager::EndRedo() {
  if (torn_.pending.empty()) return Status::OK();
  std::string pages;
  for (uint64_t id : torn_.pending) pages += (pages.empty() ? "" : ", ") + std::to_string(id);
  return Status::Corruption("page(s) " + pages +
                            " failed verification (torn or damaged) and the log after the "
                            "last checkpoint holds no full image to rebuild them from");
}

// A record inserted before the checkpoint's begin record has made the count odd before the
// checkpoint reserved (Txn::chain_seq_): an odd count is waited out, a count that moved during
// the read is read again.
bool TxnManager::ChainSnapshot(const Txn& txn, log::RecoveredTxn* entry) {
  for (;;) {
    // acquire: pairs with ChainChange's release, and the caller's reservation was acq_rel.
    uint32_t before = txn.chain_seq_.load(std::memory_order_acquire);
    if (before & 1) {
      // The owner is inside Append (perhaps waiting for log space): let it run.
      if (threads::Worker* worker = threads::Worker::Current()) {
        worker->Yield();
      } else {
        std::this_thread::yield();
      }
      continue;
    }
    entry->id = txn.id_;
    entry->status = txn.commit_logged_  ? log::TxnStatus::kCommitted
                    : txn.abort_logged_ ? log::TxnStatus::kAborting
                                        : log::TxnStatus::kActive;
    entry->first_lsn = txn.first_lsn_;
    entry->last_lsn = txn.last_lsn_;
    entry->undo_next = txn.undo_next_;
    // acquire fence: the field reads above complete before the count is read again.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (txn.chain_seq_.load(std::memory_order_relaxed) == before) {
      return entry->first_lsn.valid();
    }
  }
}

Status TxnManager::Undo(log::RecoveredTxn* loser, const log::LogRecordView& record) {
  // A stand-in transaction object for the loser, never in the active table: it carries the
  // chain so the compensation record links to the loser's last record.
  Txn txn(this, loser->id, Isolation::kSerializable);
  txn.first_lsn_ = loser->first_lsn;
  txn.last_lsn_ = loser->last_lsn;
  txn.undo_next_ = loser->undo_next;
  txn.records_logged_ = 1;
  SM_ASSERT(record.txn == loser->id);
  SM_ASSERT(record.lsn == loser->undo_next);  // the driver undoes newest first
  Status s = UndoOne(&txn, record);
  loser->last_lsn = txn.last_lsn_;
  txn.state_ = TxnState::kAborted;  // not a real Abort: the driver writes the end record
  return s;
}

// ---- Checkpoints -----------------------------------------------------------------------------

Status TxnManager::Checkpoint(CheckpointReport* report) {
  checkpoint_callers_.fetch_add(1, std::memory_order_relaxed);
  Status s = RunCheckpoint(report, {});
  checkpoint_callers_.fetch_sub(1, std::memory_order_relaxed);
  return s;
}

Status TxnManager::RunCheckpoint(CheckpointReport* report,
                                 const buffer::FlushPace& pace) {
  std::lock_guard<threads::Mutex> serial(checkpoint_mu_);
  // In the failed state a checkpoint could forget a half-rolled-back transaction.
  SM_TRY(health());
  log::LogRecord begin_record;
  begin_record.type = log::RecordType::kCheckpointBegin;
  log::CheckpointData data;
  SM_TRY(log_->Insert(begin_record, &data.begin_lsn));
  // Torn-write protection (BufferPool::AdvanceFpiEpoch): from here on the first change of
  // each page logs its full image; then every page dirty now is written, so that the only
  // page writes left unsynced at a crash are of pages changed - and imaged - after this point.
  pool_->AdvanceFpiEpoch();
  SM_TRY(pool_->FlushAll(pace));
  // Shard by shard: a transaction missing from the snapshot because it registered after its
  // shard was visited logs nothing before our begin record, so analysis meets all of it.
  for (ActiveShard& shard : active_) {
    std::lock_guard<threads::Mutex> guard(shard.mu);
    for (Txn& txn : shard.list) {
      log::RecoveredTxn entry;
      if (!ChainSnapshot(txn, &entry)) continue;  // nothing logged yet: nothing to recover
      data.txns.push_back(entry);
    }
  }
  // Again, after the snapshot: a rollback that failed while this checkpoint wrote its pages
  // latched the failed state and then took its transaction off the active list (Abort), so the
  // snapshot may lack a half-rolled-back transaction. Recorded, such a checkpoint would let
  // recovery skip its undo and truncate the log below its records. The shard locks order the
  // two: a transaction missing from the snapshot left its shard after it latched the state.
  SM_TRY(health());
  data.next_txn_id = TxnId(next_txn_id_.load(std::memory_order_relaxed));
  for (const auto& [page, rec_lsn] : pool_->DirtyPages()) {
    data.dirty_pages.push_back(log::DirtyPage{page, rec_lsn});
  }
  CheckSnapshot(data);
  // Every page written before the snapshot above (and so absent from it) becomes durable,
  // with the allocation map: redo need not look before this checkpoint for them.
  SM_TRY(volume_->Sync());
  std::string payload = log::EncodeCheckpoint(data);
  SM_DASSERT(DecodesAs(payload, data));  // what recovery will read back (and accept)
  log::LogRecord end_record;
  end_record.type = log::RecordType::kCheckpointEnd;
  end_record.payload = payload;
  Lsn end_lsn, after_end;
  SM_TRY(log_->Insert(end_record, &end_lsn, &after_end));
  SM_ASSERT(data.begin_lsn < end_lsn);
  SM_TRY(log_->Flush(after_end));
  SM_TRY(log_->SetCheckpoint(data.begin_lsn));
  Lsn oldest = data.OldestNeeded();
  // The checkpoint needs no record that an earlier truncation cut (recovery would refuse it:
  // "needs redo from LSN ... but the log starts at ...").
  SM_ASSERT(oldest >= log_->start_lsn());
  SM_TRY(log_->Truncate(oldest));
  counters_.checkpoints.fetch_add(1, std::memory_order_relaxed);
  if (report != nullptr) {
    report->begin_lsn = data.begin_lsn;
    report->end_lsn = end_lsn;
    report->oldest_needed = oldest;
    report->active_txns = data.txns.size();
    report->dirty_pages = data.dirty_pages.size();
  }
  return Status::OK();
}

// The snapshot's invariants, checked before it is logged: what DecodeCheckpoint accepts
// (log/recovery.cc, invariants 1 and 2) and what recovery relies on. Cheap per entry; the
// duplicate check, a sort, is an SM_DASSERT.
void TxnManager::CheckSnapshot(const log::CheckpointData& data) {
  SM_ASSERT(data.begin_lsn.valid());
  SM_ASSERT(data.next_txn_id.valid());
  for (const log::RecoveredTxn& txn : data.txns) {
    SM_ASSERT(txn.id.valid() && txn.id < data.next_txn_id);  // ids are handed out below it
    SM_ASSERT(txn.first_lsn.valid() && txn.first_lsn <= txn.last_lsn);
    SM_ASSERT(txn.undo_next <= txn.last_lsn);
  }
  for (const log::DirtyPage& page : data.dirty_pages) {
    SM_ASSERT(page.page.valid());
    SM_ASSERT(page.rec_lsn.valid());  // recovery refuses rec_lsn 0
  }
  SM_DASSERT(DistinctTxns(data));  // each active transaction is in one shard's list
}

bool TxnManager::DistinctTxns(const log::CheckpointData& data) {
  std::vector<uint64_t> ids;
  for (const log::RecoveredTxn& txn : data.txns) ids.push_back(txn.id.value());
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

bool TxnManager::DecodesAs(const std::string& payload, const log::CheckpointData& data) {
  log::CheckpointData decoded;
  Status s = log::DecodeCheckpoint(payload, &decoded);
  if (!s.ok()) {
    s.PermitUnchecked();
    return false;
  }
  return decoded.begin_lsn == data.begin_lsn && decoded.next_txn_id == data.next_txn_id &&
         decoded.txns.size() == data.txns.size() &&
         decoded.dirty_pages.size() == data.dirty_pages.size() &&
         decoded.RedoLsn() == data.RedoLsn() && decoded.OldestNeeded() == data.OldestNeeded();
}

void TxnManager::StartCheckpointer() {
  if (options_.checkpoint_interval.count() <= 0 || checkpointer_.joinable()) return;
  checkpointer_stop_.store(false, std::memory_order_relaxed);
  checkpointer_ = std::thread([this] { CheckpointerMain(); });
}

void TxnManager::StopCheckpointer() {
  if (!checkpointer_.joinable()) return;
  checkpointer_stop_.store(true, std::memory_order_release);
  checkpointer_wake_.Post();
  checkpointer_.join();
  checkpointer_wake_.Reset();
}

void TxnManager::CheckpointerMain() {
  bool reported = false;
  buffer::FlushPace pace;
  pace.spread = std::chrono::milliseconds(static_cast<int64_t>(
      static_cast<double>(options_.checkpoint_interval.count()) * options_.checkpoint_spread));
  pace.hurry = [this] {
    return checkpoint_callers_.load(std::memory_order_relaxed) > 0 ||
           checkpointer_stop_.load(std::memory_order_acquire);
  };
  while (!checkpointer_stop_.load(std::memory_order_acquire)) {
    checkpointer_wake_.WaitFor(options_.checkpoint_interval);
    if (checkpointer_stop_.load(std::memory_order_acquire)) break;
    Status s = RunCheckpoint(nullptr, pace);
    if (!s.ok() && !reported) {  // the log or volume is failed: say so once, keep serving
      std::fprintf(stderr, "background checkpoint failed: %s\n", s.ToString().c_str());
      reported = true;
    }
  }
}

}  // namespace sm::txn
