// ARIES restart recovery (log/recovery.h): the checkpoint payload codec and the three passes.
//
// Owns: the byte format of a kCheckpointEnd payload and the Recovery object below, which holds
// the recovered transaction table and dirty page table for the length of one Recover call.
//
// Checkpoint payload, format version 1 (little-endian, unaligned; sm/common/coding.h):
//
//   off size field
//     0   1  version        kCheckpointVersion (1)
//     1   8  begin_lsn      the matching kCheckpointBegin record; never 0
//     9   8  next_txn_id    never 0
//    17   4  txn_count
//    21   4  page_count
//    25   .  txn_count entries of 33 bytes:
//              id 8 (never 0), status 1 (TxnStatus), first_lsn 8, last_lsn 8, undo_next 8
//     .   .  page_count entries of 16 bytes: page 8 (never 0), rec_lsn 8 (never 0)
//   The payload is exactly 25 + 33 * txn_count + 16 * page_count bytes long. The counts come
//   first so that DecodeCheckpoint checks the whole length before it reads any entry.
//
// Invariants checked by DecodeCheckpoint (a payload that breaks one is Corruption):
//   1. first_lsn <= last_lsn and undo_next <= last_lsn (a transaction's records are ordered).
//   2. status is one of TxnStatus; ids and page ids are not 0.
//
// The passes (Recovery, one object per Recover call; the rules are in recovery.h):
//   Analyze    builds txns_ and dirty_ and sets redo_lsn_ and the next transaction id;
//   RedoPass   uses only redo_lsn_ (history is repeated by the page LSN test, not by dirty_);
//   UndoPass   writes kTxnEnd for the winners, kTxnAbort for the active losers, then rolls the
//              losers back together (largest undo_next first) and ends each one.
// Checked as the passes run: replay visits LSNs in increasing order (analysis and redo, paired
// with the append-side checks of log_manager.h); every transaction in the table keeps
// first_lsn <= last_lsn and undo_next <= last_lsn (the checkpoint invariants above); undo
// writes exactly one compensation record per undone record, linked to the transaction's
// previous record and pointing past the undone one; every loser ends with nothing left to
// undo; and the log is durable to its end when Recover returns.
// Any error of the target or the log ends Recover with that error. The records written until
// then (durable or not) leave the log as a crash at that point would: the next recovery
// continues from them (recovery.h, "Idempotence").
#include "log/recovery.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <queue>
#include <unordered_map>
#include <utility>

#include "log/log_manager.h"
#include "log/log_reader.h"
#include "sm/common/assert.h"
#include "sm/common/coding.h"
#include "sm/common/counted.h"

namespace sm::log {
namespace {

constexpr uint8_t kCheckpointVersion = 1;
constexpr size_t kCheckpointFixedBytes = 1 + 8 + 8 + 4 + 4;
constexpr size_t kCheckpointTxnBytes = 8 + 1 + 8 + 8 + 8;
constexpr size_t kCheckpointPageBytes = 8 + 8;

std::string LsnText(Lsn lsn) { return std::to_string(lsn.value()); }

bool IsPageKind(RecordKind kind) {
  return kind == RecordKind::kRedoOnly || kind == RecordKind::kUndoRedo ||
         kind == RecordKind::kCompensation;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Status CheckpointCorruption(const std::string& what) {
  return Status::Corruption("checkpoint payload: " + what);
}

Status DecodeTxn(ByteReader* in, size_t index, RecoveredTxn* txn) {
  uint64_t id = 0, first = 0, last = 0, undo_next = 0;
  uint8_t status = 0;
  // The length was checked against the counts, so these reads cannot fail.
  const bool read = in->GetFixed64(&id) && in->GetFixed8(&status) && in->GetFixed64(&first) &&
                    in->GetFixed64(&last) && in->GetFixed64(&undo_next);
  SM_ASSERT(read);
  const std::string where = "txn entry " + std::to_string(index) + ": ";
  if (id == 0) return CheckpointCorruption(where + "txn id 0");
  if (status < static_cast<uint8_t>(TxnStatus::kActive) ||
      status > static_cast<uint8_t>(TxnStatus::kAborting)) {
    return CheckpointCorruption(where + "status " + std::to_string(status));
  }
  if (first > last) return CheckpointCorruption(where + "first_lsn above last_lsn");
  if (undo_next > last) return CheckpointCorruption(where + "undo_next above last_lsn");
  txn->id = TxnId(id);
  txn->status = static_cast<TxnStatus>(status);
  txn->first_lsn = Lsn(first);
  txn->last_lsn = Lsn(last);
  txn->undo_next = Lsn(undo_next);
  return Status::OK();
}

Status DecodePage(ByteReader* in, size_t index, DirtyPage* page) {
  uint64_t id = 0, rec_lsn = 0;
  const bool read = in->GetFixed64(&id) && in->GetFixed64(&rec_lsn);
  SM_ASSERT(read);
  const std::string where = "dirty page entry " + std::to_string(index) + ": ";
  if (id == 0) return CheckpointCorruption(where + "page id 0");
  if (rec_lsn == 0) return CheckpointCorruption(where + "rec_lsn 0");
  page->page = PageId(id);
  page->rec_lsn = Lsn(rec_lsn);
  return Status::OK();
}

// --- The driver ------------------------------------------------------------------------------

class Recovery {
 public:
  Recovery(LogManager* log, RecoveryTarget* target, RecoveryReport* report)
      : log_(log), target_(target), report_(report) {}

  Status Analyze();
  Status RedoPass();
  Status UndoPass(bool undo);

 private:
  Status FindCheckpoint(Lsn begin, CheckpointData* checkpoint);
  void LoadCheckpoint(const CheckpointData& checkpoint);
  void Track(const LogRecordView& record);
  void TrackTxn(const LogRecordView& record);
  Status Append(RecordType type, RecoveredTxn* txn);
  Status RollBackLosers(const std::vector<RecoveredTxn*>& losers);
  Status UndoStep(RecoveredTxn* txn);
  // SM_DASSERT: the record at txn->last_lsn is the compensation record of undoing `undone`,
  // written right after `previous_last` in txn's chain.
  bool CompensationWritten(const RecoveredTxn& txn, Lsn previous_last,
                           const LogRecordView& undone);

  LogManager* const log_;
  RecoveryTarget* const target_;
  RecoveryReport* const report_;
  std::unordered_map<TxnId, RecoveredTxn> txns_;
  std::unordered_map<PageId, Lsn> dirty_;  // page -> rec_lsn
  Lsn redo_lsn_;
  uint64_t next_txn_id_ = 1;
};

// Analysis: the tables as of the end of the log (recovery.h, "Analysis").
Status Recovery::Analyze() {
  const auto start = std::chrono::steady_clock::now();
  Lsn from = log_->start_lsn();
  redo_lsn_ = from;
  const Lsn checkpoint_lsn = log_->checkpoint_lsn();
  if (checkpoint_lsn.valid()) {
    CheckpointData checkpoint;
    SM_TRY(FindCheckpoint(checkpoint_lsn, &checkpoint));
    LoadCheckpoint(checkpoint);
    from = checkpoint_lsn;
    redo_lsn_ = checkpoint.RedoLsn();
    if (redo_lsn_ < log_->start_lsn()) {
      return Status::Corruption("checkpoint at LSN " + LsnText(checkpoint_lsn) +
                                " needs redo from LSN " + LsnText(redo_lsn_) +
                                " but the log starts at LSN " + LsnText(log_->start_lsn()));
    }
  }
  report_->checkpoint_lsn = checkpoint_lsn;
  report_->analysis_lsn = from;

  // Redo starts at or before the checkpoint analysis starts at.
  SM_ASSERT(redo_lsn_ <= from);
  std::unique_ptr<LogReader> reader = log_->NewReader();
  SM_TRY(reader->Seek(from));
  LogRecordView record;
  Lsn last;
  Status s;
  while ((s = reader->Next(&record)).ok()) {
    SM_ASSERT(record.lsn > last);  // replay order is log order (as in RedoPass)
    last = record.lsn;
    Track(record);
    ++report_->analysis_records;
  }
  if (!s.IsNotFound()) return s;

  report_->dirty_pages = dirty_.size();
  report_->unfinished = txns_.size();
  report_->next_txn_id = TxnId(next_txn_id_);
  report_->analysis_seconds = SecondsSince(start);
  return Status::OK();
}

// The checkpoint whose begin record is at `begin`: the first kCheckpointEnd after it that names
// it. The control file only ever points at a complete checkpoint, so a missing end is Corruption.
Status Recovery::FindCheckpoint(Lsn begin, CheckpointData* checkpoint) {
  std::unique_ptr<LogReader> reader = log_->NewReader();
  SM_TRY(reader->Seek(begin));
  LogRecordView record;
  Status s = reader->Next(&record);
  if (s.IsNotFound() || (s.ok() && record.type != RecordType::kCheckpointBegin)) {
    return Status::Corruption("the control file's checkpoint LSN " + LsnText(begin) +
                              " is not a checkpoint_begin record");
  }
  SM_TRY(s);
  while ((s = reader->Next(&record)).ok()) {
    if (record.type != RecordType::kCheckpointEnd) continue;
    Status decoded = DecodeCheckpoint(record.payload, checkpoint);
    if (!decoded.ok()) {
      return Status::Corruption("checkpoint_end at LSN " + LsnText(record.lsn) + ": " +
                                std::string(decoded.message()));
    }
    if (checkpoint->begin_lsn == begin) return Status::OK();
  }
  if (!s.IsNotFound()) return s;
  return Status::Corruption("the checkpoint at LSN " + LsnText(begin) +
                            " has no checkpoint_end record");
}

void Recovery::LoadCheckpoint(const CheckpointData& checkpoint) {
  for (const RecoveredTxn& txn : checkpoint.txns) {
    txns_[txn.id] = txn;
    if (txn.status == TxnStatus::kCommitted) ++report_->winners;
    next_txn_id_ = std::max(next_txn_id_, txn.id.value() + 1);
  }
  for (const DirtyPage& page : checkpoint.dirty_pages) dirty_.emplace(page.page, page.rec_lsn);
  next_txn_id_ = std::max(next_txn_id_, checkpoint.next_txn_id.value());
}

void Recovery::Track(const LogRecordView& record) {
  const RecordKind kind = record.kind();
  // Comments and checkpoint brackets belong to no transaction and change no page.
  if (kind == RecordKind::kInfo || kind == RecordKind::kCheckpoint) return;
  if (IsPageKind(kind)) ++report_->analysis_page_records;
  if (IsPageKind(kind) && record.page.valid()) dirty_.try_emplace(record.page, record.lsn);
  if (record.txn.valid()) TrackTxn(record);
}

// One record of a transaction. Records between the checkpoint's begin and end records may
// already be reflected in the checkpoint's table: those (lsn <= last_lsn) move no LSN, but
// state changes (commit, abort, end) are applied all the same - they are final.
void Recovery::TrackTxn(const LogRecordView& record) {
  next_txn_id_ = std::max(next_txn_id_, record.txn.value() + 1);
  if (record.type == RecordType::kTxnEnd) {
    txns_.erase(record.txn);
    return;
  }
  auto [it, inserted] = txns_.try_emplace(record.txn);
  RecoveredTxn& txn = it->second;
  if (inserted) {
    txn.id = record.txn;
    txn.first_lsn = record.lsn;
  }
  if (record.lsn > txn.last_lsn) {
    txn.last_lsn = record.lsn;
    if (record.kind() == RecordKind::kUndoRedo) txn.undo_next = record.lsn;
    if (record.kind() == RecordKind::kCompensation) txn.undo_next = record.undo_next;
  }
  if (record.type == RecordType::kTxnCommit && txn.status != TxnStatus::kCommitted) {
    txn.status = TxnStatus::kCommitted;
    ++report_->winners;
  } else if (record.type == RecordType::kTxnAbort && txn.status == TxnStatus::kActive) {
    txn.status = TxnStatus::kAborting;
  }
  // The checkpoint payload's invariant 1, kept for every transaction analysis touches.
  SM_DASSERT(txn.first_lsn.valid() && txn.first_lsn <= txn.last_lsn);
  SM_DASSERT(txn.undo_next <= txn.last_lsn);
}

// Redo: repeats history from redo_lsn_ to the end of the log.
Status Recovery::RedoPass() {
  const auto start = std::chrono::steady_clock::now();
  report_->redo_lsn = redo_lsn_;
  std::unique_ptr<LogReader> reader = log_->NewReader();
  SM_TRY(reader->Seek(redo_lsn_));
  LogRecordView record;
  Lsn last;
  Status s;
  while ((s = reader->Next(&record)).ok()) {
    SM_ASSERT(record.lsn > last);  // replay order is log order
    last = record.lsn;
    report_->redo_bytes += record.length;
    if (!IsPageKind(record.kind())) continue;
    uint32_t applied = 0;
    SM_TRY(target_->Redo(record, &applied));
    ++report_->redo_records;
    report_->redo_pages_applied += applied;
  }
  if (!s.IsNotFound()) return s;
  report_->redo_seconds = SecondsSince(start);
  return Status::OK();
}

// Appends a kTxnAbort or kTxnEnd record as the next record of txn.
Status Recovery::Append(RecordType type, RecoveredTxn* txn) {
  SM_ASSERT(type == RecordType::kTxnAbort || type == RecordType::kTxnEnd);
  // Ending a loser needs it rolled back (abort records start rollbacks, so need no such thing).
  SM_ASSERT(type == RecordType::kTxnAbort || txn->status == TxnStatus::kCommitted ||
            !txn->undo_next.valid());
  LogRecord record;
  record.type = type;
  record.txn = txn->id;
  record.prev_lsn = txn->last_lsn;
  Lsn lsn;
  SM_TRY(log_->Insert(record, &lsn));
  SM_ASSERT(lsn > txn->last_lsn);  // a chain only grows forward
  txn->last_lsn = lsn;
  return Status::OK();
}

// Undo: ends the winners, rolls back the losers (recovery.h, "Undo").
Status Recovery::UndoPass(bool undo) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<RecoveredTxn*> winners, losers;
  for (auto& [id, txn] : txns_) {
    (txn.status == TxnStatus::kCommitted ? winners : losers).push_back(&txn);
  }
  // Id order: the records this pass writes do not depend on the hash table's order.
  auto by_id = [](const RecoveredTxn* a, const RecoveredTxn* b) { return a->id < b->id; };
  std::sort(winners.begin(), winners.end(), by_id);
  std::sort(losers.begin(), losers.end(), by_id);
  for (const RecoveredTxn* txn : losers) report_->losers.push_back(txn->id);
  if (!undo) return Status::OK();

  for (RecoveredTxn* txn : winners) SM_TRY(Append(RecordType::kTxnEnd, txn));
  for (RecoveredTxn* txn : losers) {
    if (txn->status != TxnStatus::kActive) continue;
    SM_TRY(Append(RecordType::kTxnAbort, txn));
    txn->status = TxnStatus::kAborting;
  }
  SM_TRY(RollBackLosers(losers));
  for (const RecoveredTxn* txn : losers) {
    SM_ASSERT(!txn->undo_next.valid());  // rolled back to its first record, and ended
  }
  SM_TRY(log_->FlushAll());
  report_->undo_seconds = SecondsSince(start);
  return Status::OK();
}

// All losers together, always the largest undo_next first, so the log is read backwards once.
Status Recovery::RollBackLosers(const std::vector<RecoveredTxn*>& losers) {
  using Entry = std::pair<Lsn, RecoveredTxn*>;
  auto lower = [](const Entry& a, const Entry& b) { return a.first < b.first; };
  std::priority_queue<Entry, std::vector<Entry>, decltype(lower)> queue(lower);
  for (RecoveredTxn* txn : losers) {
    if (txn->undo_next.valid()) {
      queue.emplace(txn->undo_next, txn);
    } else {
      SM_TRY(Append(RecordType::kTxnEnd, txn));
    }
  }
  Lsn previous = Lsn(UINT64_MAX);
  while (!queue.empty()) {
    RecoveredTxn* txn = queue.top().second;
    SM_ASSERT(queue.top().first < previous);  // one backward pass over the log
    previous = queue.top().first;
    queue.pop();
    SM_TRY(UndoStep(txn));
    if (txn->undo_next.valid()) {
      queue.emplace(txn->undo_next, txn);
    } else {
      SM_TRY(Append(RecordType::kTxnEnd, txn));
    }
  }
  return Status::OK();
}

// Undoes (or skips) the record at txn->undo_next and moves undo_next down the chain.
Status Recovery::UndoStep(RecoveredTxn* txn) {
  SM_ASSERT(txn->status == TxnStatus::kAborting);  // its kTxnAbort record is in the log
  const Lsn lsn = txn->undo_next;
  SM_ASSERT(lsn.valid() && lsn <= txn->last_lsn);
  LogRecordBuf buf;
  SM_TRY(log_->ReadRecord(lsn, &buf));
  const LogRecordView& record = buf.view();
  if (record.txn != txn->id) {
    return Status::Corruption("undo of txn " + std::to_string(txn->id.value()) + " reached LSN " +
                              LsnText(lsn) + " of txn " + std::to_string(record.txn.value()));
  }
  switch (record.kind()) {
    case RecordKind::kUndoRedo: {
      const Lsn last = txn->last_lsn;
      SM_TRY(target_->Undo(txn, record));
      SM_ASSERT(txn->last_lsn > last);  // the target logged a compensation record
      SM_DASSERT(CompensationWritten(*txn, last, record));  // exactly one, linked right
      ++report_->undo_records;
      txn->undo_next = record.prev_lsn;
      break;
    }
    case RecordKind::kCompensation:
      txn->undo_next = record.undo_next;
      break;
    default:  // nothing to undo in it
      txn->undo_next = record.prev_lsn;
      break;
  }
  SM_ASSERT(txn->undo_next < lsn);  // record invariant: both links point backwards
  return Status::OK();
}

bool Recovery::CompensationWritten(const RecoveredTxn& txn, Lsn previous_last,
                                   const LogRecordView& undone) {
  LogRecordBuf buf;
  Status s = log_->ReadRecord(txn.last_lsn, &buf);
  if (!s.ok()) {
    s.PermitUnchecked();
    return false;
  }
  const LogRecordView& clr = buf.view();
  // Its prev_lsn is the record before it: had the target written two records for this
  // transaction, the second's prev_lsn would be the first's.
  return clr.kind() == RecordKind::kCompensation && clr.txn == txn.id &&
         clr.prev_lsn == previous_last && clr.undo_next == undone.prev_lsn;
}

}  // namespace

const char* TxnStatusName(TxnStatus status) {
  switch (status) {
    case TxnStatus::kActive:
      return "active";
    case TxnStatus::kCommitted:
      return "committed";
    case TxnStatus::kAborting:
      return "aborting";
  }
  return "?";
}

Lsn CheckpointData::RedoLsn() const {
  Lsn lsn = begin_lsn;
  for (const DirtyPage& page : dirty_pages) lsn = std::min(lsn, page.rec_lsn);
  return lsn;
}

Lsn CheckpointData::OldestNeeded() const {
  Lsn lsn = RedoLsn();
  for (const RecoveredTxn& txn : txns) {
    if (txn.first_lsn.valid()) lsn = std::min(lsn, txn.first_lsn);
  }
  return lsn;
}

std::string EncodeCheckpoint(const CheckpointData& data) {
  std::string out;
  out.reserve(kCheckpointFixedBytes + data.txns.size() * kCheckpointTxnBytes +
              data.dirty_pages.size() * kCheckpointPageBytes);
  out.push_back(static_cast<char>(kCheckpointVersion));
  PutFixed64(&out, data.begin_lsn.value());
  PutFixed64(&out, data.next_txn_id.value());
  PutFixed32(&out, static_cast<uint32_t>(data.txns.size()));
  PutFixed32(&out, static_cast<uint32_t>(data.dirty_pages.size()));
  for (const RecoveredTxn& txn : data.txns) {
    PutFixed64(&out, txn.id.value());
    out.push_back(static_cast<char>(txn.status));
    PutFixed64(&out, txn.first_lsn.value());
    PutFixed64(&out, txn.last_lsn.value());
    PutFixed64(&out, txn.undo_next.value());
  }
  for (const DirtyPage& page : data.dirty_pages) {
    PutFixed64(&out, page.page.value());
    PutFixed64(&out, page.rec_lsn.value());
  }
  // The length DecodeCheckpoint demands (the counts fit their 32 bits, or this differs).
  SM_ASSERT(out.size() == kCheckpointFixedBytes + data.txns.size() * kCheckpointTxnBytes +
                              data.dirty_pages.size() * kCheckpointPageBytes);
  SM_ASSERT(data.txns.size() <= UINT32_MAX && data.dirty_pages.size() <= UINT32_MAX);
  return out;
}

Status DecodeCheckpoint(std::string_view payload, CheckpointData* data) {
  ByteReader in(payload);
  uint8_t version = 0;
  uint64_t begin = 0, next_txn = 0;
  uint32_t txn_count = 0, page_count = 0;
  if (!(in.GetFixed8(&version) && in.GetFixed64(&begin) && in.GetFixed64(&next_txn) &&
        in.GetFixed32(&txn_count) && in.GetFixed32(&page_count))) {
    return CheckpointCorruption("truncated header (" + std::to_string(payload.size()) + " bytes)");
  }
  if (version != kCheckpointVersion) {
    return CheckpointCorruption("unknown version " + std::to_string(version));
  }
  if (begin == 0) return CheckpointCorruption("begin_lsn 0");
  if (next_txn == 0) return CheckpointCorruption("next_txn_id 0");
  // 64-bit arithmetic: the counts are at most 2^32 - 1, so this cannot overflow.
  const uint64_t expected = kCheckpointFixedBytes + uint64_t{txn_count} * kCheckpointTxnBytes +
                            uint64_t{page_count} * kCheckpointPageBytes;
  if (payload.size() != expected) {
    return CheckpointCorruption(std::string(payload.size() < expected ? "truncated" : "oversized") +
                                ": " + std::to_string(txn_count) + " txns and " +
                                std::to_string(page_count) + " dirty pages need " +
                                std::to_string(expected) + " bytes, found " +
                                std::to_string(payload.size()));
  }
  CheckpointData decoded;
  decoded.begin_lsn = Lsn(begin);
  decoded.next_txn_id = TxnId(next_txn);
  decoded.txns.resize(txn_count);
  decoded.dirty_pages.resize(page_count);
  for (uint32_t i = 0; i < txn_count; ++i) SM_TRY(DecodeTxn(&in, i, &decoded.txns[i]));
  for (uint32_t i = 0; i < page_count; ++i) SM_TRY(DecodePage(&in, i, &decoded.dirty_pages[i]));
  SM_ASSERT(in.done());
  *data = std::move(decoded);
  return Status::OK();
}

std::string RecoveryReport::ToString() const {
  const double redo_mb = static_cast<double>(redo_bytes) / 1e6;
  const double redo_rate = redo_seconds > 0 ? redo_mb / redo_seconds : 0;
  char redo_size[64];
  std::snprintf(redo_size, sizeof(redo_size), "%.2f MB at %.1f MB/s", redo_mb, redo_rate);
  auto seconds = [](double s) {
    char out[32];
    std::snprintf(out, sizeof(out), "%.3f s", s);
    return std::string(out);
  };
  return "recovery: checkpoint at " +
         (checkpoint_lsn.valid() ? std::to_string(checkpoint_lsn.value()) : "none") +
         ", analysis from " + std::to_string(analysis_lsn.value()) + " (" +
         Counted(analysis_records, "record") + ", " + Counted(dirty_pages, "dirty page") + ", " +
         Counted(winners, "winner") + ") in " + seconds(analysis_seconds) + ";\n  redo from " +
         std::to_string(redo_lsn.value()) + ": " + Counted(redo_records, "record") + ", " +
         Counted(redo_pages_applied, "page") + " applied, " + redo_size + ";\n  undo: " +
         Counted(losers.size(), "loser") + ", " + Counted(undo_records, "record") + " in " +
         seconds(undo_seconds) + "; next txn id " + std::to_string(next_txn_id.value()) +
         ", end " + std::to_string(end_lsn.value());
}

Status Recover(LogManager* log, RecoveryTarget* target, const RecoveryOptions& options,
               RecoveryReport* report) {
  *report = RecoveryReport();
  // Recovery reads through readers bounded at the durable LSN: make it the end of the log.
  SM_TRY(log->FlushAll());
  Recovery recovery(log, target, report);
  SM_TRY(recovery.Analyze());
  if (options.analysis_only) {
    SM_TRY(recovery.UndoPass(/*undo=*/false));  // lists the losers, writes nothing
    report->end_lsn = log->end_lsn();
    return Status::OK();
  }
  SM_TRY(recovery.RedoPass());
  SM_TRY(target->EndRedo());
  SM_TRY(recovery.UndoPass(options.undo));
  report->end_lsn = log->end_lsn();
  // Every record recovery wrote is durable (recovery.h, "Undo"); with undo off it wrote none.
  SM_ASSERT(log->durable_lsn() == report->end_lsn);
  return Status::OK();
}

}  // namespace sm::log
