// Restart recovery (log/recovery.h) against a fake database: the checkpoint payload codec;
// analysis, redo and undo on logs with and without checkpoints, fuzzy checkpoints, interrupted
// rollbacks, truncated logs and transactions larger than the log buffer; crashes during redo and
// undo; and a seeded crash test against a model of committed work.
//
// The fake database (FakeDb) is a map of pages {page LSN, int64 value} with a durable image and
// a cache. Its records: kPageUndoRedo "add delta to the page" (sub-type kAdd, page id in the
// header), kCompensation "add -delta" written by undo, kPageRedo "set the page to v" written by
// system transactions (txn id 0). A page is stamped with the end LSN of the last record applied
// (recovery.h, RecoveryTarget::Redo), so the WAL rule is log->Flush(page LSN) before a write.
// FakeTxns is the transaction layer above it: chained records, commits through
// LogManager::Commit, rollbacks (also interrupted ones) with compensation records, fuzzy
// checkpoints with optional truncation.
#include "log/recovery.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "log/log_format.h"
#include "log/log_manager.h"
#include "tests/log/log_test_util.h"
#include "tests/test_util.h"

using namespace sm;
using namespace sm::log;
using sm::io::CrashMode;
using sm::io::FaultInjectionFileSystem;

namespace {

constexpr uint8_t kAdd = 1;  // kPageUndoRedo, kCompensation: add an int64 to the page
constexpr uint8_t kSet = 2;  // kPageRedo: set the page to an int64

// An int64 in the first 8 bytes, padded to `bytes` (a bigger record, same meaning).
std::string Int64Payload(int64_t v, size_t bytes = 8) {
  std::string p(std::max<size_t>(bytes, 8), 'p');
  std::memcpy(p.data(), &v, 8);
  return p;
}

Status PayloadInt64(const LogRecordView& record, int64_t* v) {
  if (record.payload.size() < 8) {
    return Status::Corruption("fake record at LSN " + std::to_string(record.lsn.value()) +
                              ": short payload");
  }
  std::memcpy(v, record.payload.data(), 8);
  return Status::OK();
}

struct Page {
  Lsn lsn;  // end of the last record applied
  int64_t value = 0;
};

// The fake database and recovery target. Single-threaded (the tests drive it from one thread).
class FakeDb final : public RecoveryTarget {
 public:
  void Attach(LogManager* log) { log_ = log; }

  // The n-th Redo / Undo call from now fails with IOError (0: none). An Undo failure happens
  // before the compensation record is logged, or after it is logged and applied.
  void FailRedoAt(uint64_t n) {
    fail_redo_at_ = n;
    redo_calls_ = 0;
  }
  void FailUndoAt(uint64_t n, bool after_logging) {
    fail_undo_at_ = n;
    fail_undo_after_logging_ = after_logging;
    undo_calls_ = 0;
  }
  void ClearFailures() { fail_redo_at_ = fail_undo_at_ = 0; }

  Page& Fetch(PageId id) {
    auto it = cache_.find(id);
    if (it == cache_.end()) {
      auto d = durable_.find(id);
      it = cache_.emplace(id, d == durable_.end() ? Page{} : d->second).first;
    }
    return it->second;
  }
  int64_t Value(PageId id) { return Fetch(id).value; }

  // Applies a change made at run time by the record at [lsn, end).
  void Apply(PageId id, uint8_t subtype, int64_t v, Lsn lsn, Lsn end) {
    Page& page = Fetch(id);
    if (subtype == kSet) {
      page.value = v;
    } else {
      page.value += v;
    }
    page.lsn = end;
    rec_lsn_.try_emplace(id, lsn);
  }

  // Writes a cached page back, honoring the WAL rule.
  Status FlushPage(PageId id) {
    auto it = cache_.find(id);
    if (it == cache_.end()) return Status::OK();
    if (it->second.lsn.valid()) SM_TRY(log_->Flush(it->second.lsn));
    durable_[id] = it->second;
    rec_lsn_.erase(id);
    return Status::OK();
  }
  Status FlushAllPages() {
    for (const auto& [id, page] : cache_) SM_TRY(FlushPage(id));
    return Status::OK();
  }
  std::vector<PageId> CachedPages() const {
    std::vector<PageId> ids;
    for (const auto& [id, page] : cache_) ids.push_back(id);
    return ids;
  }
  std::vector<DirtyPage> DirtyPages() const {
    std::vector<DirtyPage> pages;
    for (const auto& [id, rec_lsn] : rec_lsn_) pages.push_back(DirtyPage{id, rec_lsn});
    return pages;
  }
  // The process dies: the cache is gone, the durable image stays.
  void Crash() {
    cache_.clear();
    rec_lsn_.clear();
    ClearFailures();
  }

  Status Redo(const LogRecordView& record, uint32_t* pages_applied) override {
    *pages_applied = 0;
    if (fail_redo_at_ != 0 && ++redo_calls_ == fail_redo_at_) {
      return Status::IOError("injected redo failure");
    }
    int64_t v = 0;
    SM_TRY(PayloadInt64(record, &v));
    if (!record.page.valid() || (record.subtype != kAdd && record.subtype != kSet)) {
      return Status::Corruption("fake redo: bad record " + record.ToString());
    }
    Page& page = Fetch(record.page);
    if (page.lsn > record.lsn) return Status::OK();  // the page reflects it already
    Apply(record.page, record.subtype, v, record.lsn, record.end_lsn());
    *pages_applied = 1;
    return Status::OK();
  }

  Status Undo(RecoveredTxn* txn, const LogRecordView& record) override {
    ++undo_calls_;
    if (fail_undo_at_ == undo_calls_ && !fail_undo_after_logging_) {
      return Status::IOError("injected undo failure");
    }
    if (record.type != RecordType::kPageUndoRedo || record.subtype != kAdd) {
      return Status::Corruption("fake undo: bad record " + record.ToString());
    }
    int64_t delta = 0;
    SM_TRY(PayloadInt64(record, &delta));
    undone_.push_back(record.lsn);
    std::string payload = Int64Payload(-delta);
    LogRecord clr;
    clr.type = RecordType::kCompensation;
    clr.subtype = kAdd;
    clr.txn = txn->id;
    clr.prev_lsn = txn->last_lsn;
    clr.page = record.page;
    clr.undo_next = record.prev_lsn;
    clr.payload = payload;
    Lsn lsn, end;
    SM_TRY(log_->Insert(clr, &lsn, &end));
    Apply(record.page, kAdd, -delta, lsn, end);
    last_compensation_ = {record.page, -delta, end};
    txn->last_lsn = lsn;
    if (fail_undo_at_ == undo_calls_) return Status::IOError("injected undo failure");
    return Status::OK();
  }

  // The LSNs of the records passed to Undo, in order.
  std::vector<Lsn>& undone() { return undone_; }
  // The change the last compensation record made: page, delta, end of the record.
  struct Compensation {
    PageId page;
    int64_t delta = 0;
    Lsn end;
  };
  const Compensation& last_compensation() const { return last_compensation_; }

 private:
  LogManager* log_ = nullptr;
  std::map<PageId, Page> durable_;
  std::map<PageId, Page> cache_;
  std::map<PageId, Lsn> rec_lsn_;  // dirty cached pages: the first record since the last write
  uint64_t fail_redo_at_ = 0, redo_calls_ = 0;
  uint64_t fail_undo_at_ = 0, undo_calls_ = 0;
  bool fail_undo_after_logging_ = false;
  std::vector<Lsn> undone_;
  Compensation last_compensation_;
};

// The transaction layer above FakeDb: what sm/txn does, reduced to the records recovery sees.
class FakeTxns {
 public:
  FakeTxns(LogManager* log, FakeDb* db, TxnId next_id)
      : log_(log), db_(db), next_id_(std::max<uint64_t>(next_id.value(), 1)) {}

  TxnId Begin() {
    TxnId id(next_id_++);
    active_[id] = RecoveredTxn{id, TxnStatus::kActive, Lsn(), Lsn(), Lsn()};
    return id;
  }

  // Adds delta to page in txn (payload_bytes: the record's size).
  Status Add(TxnId id, PageId page, int64_t delta, size_t payload_bytes = 8, Lsn* end = nullptr) {
    std::string payload = Int64Payload(delta, payload_bytes);
    LogRecord record;
    record.type = RecordType::kPageUndoRedo;
    record.subtype = kAdd;
    record.page = page;
    record.payload = payload;
    Lsn lsn, record_end;
    SM_TRY(Append(&active_.at(id), &record, &lsn, &record_end));
    db_->Apply(page, kAdd, delta, lsn, record_end);
    if (end != nullptr) *end = record_end;
    return Status::OK();
  }

  // A system transaction sets page to value (redo-only, txn id 0).
  Status Set(PageId page, int64_t value, Lsn* end = nullptr) {
    std::string payload = Int64Payload(value);
    LogRecord record;
    record.type = RecordType::kPageRedo;
    record.subtype = kSet;
    record.flags = kFlagSystemTxn;
    record.page = page;
    record.payload = payload;
    Lsn lsn, record_end;
    SM_TRY(log_->Insert(record, &lsn, &record_end));
    db_->Apply(page, kSet, value, lsn, record_end);
    if (end != nullptr) *end = record_end;
    return Status::OK();
  }

  // *commit_end: the end of the commit record (set once it is appended).
  Status Commit(TxnId id, CommitMode mode, Lsn* commit_end = nullptr) {
    Lsn lsn;
    Status s = log_->Commit(id, active_.at(id).last_lsn, mode, &lsn);
    if (lsn.valid()) {
      active_.erase(id);
      if (commit_end != nullptr) *commit_end = Lsn(lsn.value() + RecordBytes(0));
    }
    return s;
  }

  // Rolls txn back as TxnManager::Rollback does. max_undos >= 0: stops (as a crash would) after
  // that many records are undone, leaving the transaction aborting.
  Status Abort(TxnId id, int max_undos = -1) {
    RecoveredTxn& txn = active_.at(id);
    if (txn.status == TxnStatus::kActive) {
      LogRecord record;
      record.type = RecordType::kTxnAbort;
      Lsn lsn;
      SM_TRY(Append(&txn, &record, &lsn));
      txn.status = TxnStatus::kAborting;
    }
    int undone = 0;
    SM_TRY(UndoLast(&txn, max_undos, &undone));
    if (max_undos >= 0 && undone == max_undos && txn.undo_next.valid()) return Status::OK();
    LogRecord end;
    end.type = RecordType::kTxnEnd;
    Lsn lsn;
    SM_TRY(Append(&txn, &end, &lsn));
    active_.erase(id);
    return Status::OK();
  }

  // Rolls txn back to a savepoint `updates` updates ago; it stays active and may go on, so
  // that its later updates' prev_lsn chain runs through compensation records.
  // *compensations (optional): what the compensation records did.
  Status RollbackToSavepoint(TxnId id, int updates,
                             std::vector<FakeDb::Compensation>* compensations = nullptr) {
    RecoveredTxn& txn = active_.at(id);
    REQUIRE(txn.status == TxnStatus::kActive);
    int undone = 0;
    return UndoLast(&txn, updates, &undone, compensations);
  }

  // A fuzzy checkpoint in three steps, so that work can run between them.
  bool checkpoint_begun() const { return checkpoint_.begin_lsn.valid(); }
  bool checkpoint_snapped() const { return snapped_; }
  Status BeginCheckpoint() {
    LogRecord record;
    record.type = RecordType::kCheckpointBegin;
    checkpoint_ = CheckpointData();
    snapped_ = false;
    return log_->Insert(record, &checkpoint_.begin_lsn);
  }
  void SnapshotCheckpoint() {
    checkpoint_.next_txn_id = TxnId(next_id_);
    for (const auto& [id, txn] : active_) {
      if (txn.first_lsn.valid()) checkpoint_.txns.push_back(txn);
    }
    checkpoint_.dirty_pages = db_->DirtyPages();
    snapped_ = true;
  }
  Status EndCheckpoint(bool truncate, CheckpointData* data = nullptr) {
    std::string payload = EncodeCheckpoint(checkpoint_);
    LogRecord record;
    record.type = RecordType::kCheckpointEnd;
    record.payload = payload;
    Lsn lsn;
    SM_TRY(log_->Insert(record, &lsn));
    SM_TRY(log_->FlushAll());
    SM_TRY(log_->SetCheckpoint(checkpoint_.begin_lsn));
    if (truncate) SM_TRY(log_->Truncate(checkpoint_.OldestNeeded()));
    if (data != nullptr) *data = checkpoint_;
    checkpoint_ = CheckpointData();
    snapped_ = false;
    return Status::OK();
  }
  Status Checkpoint(bool truncate, CheckpointData* data = nullptr) {
    SM_TRY(BeginCheckpoint());
    SnapshotCheckpoint();
    return EndCheckpoint(truncate, data);
  }

  const std::map<TxnId, RecoveredTxn>& active() const { return active_; }
  const RecoveredTxn& txn(TxnId id) const { return active_.at(id); }

 private:
  Status Append(RecoveredTxn* txn, LogRecord* record, Lsn* lsn, Lsn* end = nullptr) {
    record->txn = txn->id;
    record->prev_lsn = txn->last_lsn;
    SM_TRY(log_->Insert(*record, lsn, end));
    if (!txn->first_lsn.valid()) txn->first_lsn = *lsn;
    txn->last_lsn = *lsn;
    if (record->type == RecordType::kPageUndoRedo) txn->undo_next = *lsn;
    return Status::OK();
  }

  // Undoes txn's updates newest first, up to max_undos of them (< 0: all).
  Status UndoLast(RecoveredTxn* txn, int max_undos, int* undone,
                  std::vector<FakeDb::Compensation>* compensations = nullptr) {
    while (txn->undo_next.valid() && (max_undos < 0 || *undone < max_undos)) {
      LogRecordBuf buf;
      SM_TRY(log_->ReadRecord(txn->undo_next, &buf));
      const LogRecordView& record = buf.view();
      REQUIRE(record.txn == txn->id);
      if (record.kind() == RecordKind::kUndoRedo) {
        SM_TRY(db_->Undo(txn, record));
        if (compensations != nullptr) compensations->push_back(db_->last_compensation());
        txn->undo_next = record.prev_lsn;
        ++*undone;
      } else if (record.kind() == RecordKind::kCompensation) {
        txn->undo_next = record.undo_next;
      } else {
        txn->undo_next = record.prev_lsn;
      }
    }
    return Status::OK();
  }

  LogManager* const log_;
  FakeDb* const db_;
  uint64_t next_id_;
  std::map<TxnId, RecoveredTxn> active_;
  CheckpointData checkpoint_;
  bool snapped_ = false;
};

// One database on a fault-injection file system: open, work, crash, recover.
struct Harness {
  explicit Harness(uint64_t seed, LogOptions log_options = logtest::SmallOptions())
      : fs(seed), options(log_options) {
    Open();
  }

  void Open() {
    log = logtest::OpenLog(&fs, options, &open_report);
    db.Attach(log.get());
    txns = std::make_unique<FakeTxns>(log.get(), &db, next_txn_id);
  }
  // The process and the machine die; the log is opened again (not recovered).
  void CrashAndReopen(CrashMode mode = CrashMode::kDropUnsynced) {
    txns.reset();
    log->TEST_Kill();
    fs.SimulateCrash(mode);
    log.reset();
    db.Crash();
    Open();
  }
  Status TryRecover(RecoveryReport* report, RecoveryOptions recovery_options = {}) {
    db.undone().clear();
    Status s = Recover(log.get(), &db, recovery_options, report);
    // All losers are undone together in one backward sweep of the log.
    for (size_t i = 1; i < db.undone().size(); ++i) REQUIRE(db.undone()[i] < db.undone()[i - 1]);
    return s;
  }
  RecoveryReport RecoverOk(RecoveryOptions recovery_options = {}) {
    RecoveryReport report;
    Status s = TryRecover(&report, recovery_options);
    INFO(s.ToString());
    REQUIRE(s.ok());
    INFO(report.ToString());
    REQUIRE(log->durable_lsn() == log->end_lsn());
    REQUIRE(report.end_lsn == log->end_lsn());
    next_txn_id = report.next_txn_id;
    txns = std::make_unique<FakeTxns>(log.get(), &db, next_txn_id);
    return report;
  }
  int64_t Value(uint64_t page) { return db.Value(PageId(page)); }
  std::vector<LogRecordBuf> Log(Lsn from = Lsn(kFirstLsn)) { return logtest::ReadAll(&fs, from); }

  FaultInjectionFileSystem fs;
  LogOptions options;
  LogOpenReport open_report;
  std::unique_ptr<LogManager> log;
  FakeDb db;
  std::unique_ptr<FakeTxns> txns;
  TxnId next_txn_id{1};
};

void Ok(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

size_t CountRecords(const std::vector<LogRecordBuf>& records, RecordType type, TxnId txn) {
  return std::count_if(records.begin(), records.end(), [&](const LogRecordBuf& r) {
    return r.view().type == type && r.view().txn == txn;
  });
}

// Every undo-redo record of txn compensated exactly once (a CLR's undo_next is the prev_lsn of
// the record it undid), and the transaction ended once.
void RequireRolledBackOnce(const std::vector<LogRecordBuf>& records, TxnId txn) {
  std::multiset<uint64_t> undone, updates;
  for (const LogRecordBuf& r : records) {
    if (r.view().txn != txn) continue;
    if (r.view().type == RecordType::kPageUndoRedo) updates.insert(r.view().prev_lsn.value());
    if (r.view().type == RecordType::kCompensation) undone.insert(r.view().undo_next.value());
  }
  INFO("txn " << txn.value());
  REQUIRE_FALSE(updates.empty());
  REQUIRE(undone == updates);
  REQUIRE(CountRecords(records, RecordType::kTxnEnd, txn) == 1);
}

}  // namespace

// --- Checkpoint payload ----------------------------------------------------------------------

namespace {

CheckpointData RandomCheckpoint(std::mt19937_64& rng) {
  CheckpointData data;
  data.begin_lsn = Lsn(kFirstLsn + 8 * (rng() % 1000000));
  data.next_txn_id = TxnId(1 + rng() % 100000);
  for (size_t i = 0, n = rng() % 6; i < n; ++i) {
    RecoveredTxn txn;
    txn.id = TxnId(1 + rng() % 100000);
    txn.status = static_cast<TxnStatus>(1 + rng() % 3);
    txn.first_lsn = Lsn(kFirstLsn + 8 * (rng() % 1000));
    txn.last_lsn = Lsn(txn.first_lsn.value() + 8 * (rng() % 1000));
    txn.undo_next = rng() % 4 == 0 ? Lsn() : Lsn(txn.last_lsn.value() - 8 * (rng() % 10));
    if (txn.undo_next.valid() && txn.undo_next < txn.first_lsn) txn.undo_next = txn.first_lsn;
    data.txns.push_back(txn);
  }
  for (size_t i = 0, n = rng() % 8; i < n; ++i) {
    data.dirty_pages.push_back(
        DirtyPage{PageId(1 + rng() % 5000), Lsn(kFirstLsn + 8 * (rng() % 1000000))});
  }
  return data;
}

void RequireSame(const CheckpointData& a, const CheckpointData& b) {
  REQUIRE(a.begin_lsn == b.begin_lsn);
  REQUIRE(a.next_txn_id == b.next_txn_id);
  REQUIRE(a.txns.size() == b.txns.size());
  for (size_t i = 0; i < a.txns.size(); ++i) {
    REQUIRE(a.txns[i].id == b.txns[i].id);
    REQUIRE(a.txns[i].status == b.txns[i].status);
    REQUIRE(a.txns[i].first_lsn == b.txns[i].first_lsn);
    REQUIRE(a.txns[i].last_lsn == b.txns[i].last_lsn);
    REQUIRE(a.txns[i].undo_next == b.txns[i].undo_next);
  }
  REQUIRE(a.dirty_pages.size() == b.dirty_pages.size());
  for (size_t i = 0; i < a.dirty_pages.size(); ++i) {
    REQUIRE(a.dirty_pages[i].page == b.dirty_pages[i].page);
    REQUIRE(a.dirty_pages[i].rec_lsn == b.dirty_pages[i].rec_lsn);
  }
}

}  // namespace

TEST_CASE("checkpoint payload: round trip, RedoLsn and OldestNeeded", "[unit][recovery]") {
  CheckpointData data;
  data.begin_lsn = Lsn(90000);
  data.next_txn_id = TxnId(42);
  data.txns.push_back(
      RecoveredTxn{TxnId(7), TxnStatus::kActive, Lsn(50000), Lsn(95000), Lsn(95000)});
  data.txns.push_back(
      RecoveredTxn{TxnId(9), TxnStatus::kAborting, Lsn(88000), Lsn(89000), Lsn(88000)});
  data.txns.push_back(
      RecoveredTxn{TxnId(11), TxnStatus::kCommitted, Lsn(89500), Lsn(89600), Lsn()});
  data.dirty_pages.push_back(DirtyPage{PageId(3), Lsn(70000)});
  data.dirty_pages.push_back(DirtyPage{PageId(4), Lsn(91000)});
  REQUIRE(data.RedoLsn() == Lsn(70000));
  REQUIRE(data.OldestNeeded() == Lsn(50000));

  std::string payload = EncodeCheckpoint(data);
  REQUIRE(payload.size() == 25 + 3 * 33 + 2 * 16);
  REQUIRE(static_cast<uint8_t>(payload[0]) == 1);  // format version
  CheckpointData back;
  Ok(DecodeCheckpoint(payload, &back));
  RequireSame(data, back);

  CheckpointData empty;
  empty.begin_lsn = Lsn(kFirstLsn);
  empty.next_txn_id = TxnId(1);
  REQUIRE(empty.RedoLsn() == Lsn(kFirstLsn));
  REQUIRE(empty.OldestNeeded() == Lsn(kFirstLsn));
  Ok(DecodeCheckpoint(EncodeCheckpoint(empty), &back));
  RequireSame(empty, back);

  REQUIRE(std::string(TxnStatusName(TxnStatus::kAborting)) == "aborting");
}

TEST_CASE("checkpoint payload: damaged payloads are Corruption naming the problem",
          "[unit][recovery]") {
  CheckpointData data;
  data.begin_lsn = Lsn(8192);
  data.next_txn_id = TxnId(5);
  data.txns.push_back(RecoveredTxn{TxnId(3), TxnStatus::kActive, Lsn(4096), Lsn(8000), Lsn(8000)});
  data.dirty_pages.push_back(DirtyPage{PageId(2), Lsn(4096)});
  const std::string good = EncodeCheckpoint(data);
  CheckpointData out;
  out.next_txn_id = TxnId(99);  // untouched on failure

  auto require_corruption = [&](std::string payload, const char* text) {
    Status s = DecodeCheckpoint(payload, &out);
    INFO(s.ToString());
    REQUIRE(s.IsCorruption());
    REQUIRE(std::string(s.message()).find(text) != std::string::npos);
    REQUIRE(out.next_txn_id == TxnId(99));
  };
  require_corruption("", "truncated header");
  require_corruption(good.substr(0, 10), "truncated header");
  require_corruption(good.substr(0, good.size() - 1), "truncated");
  require_corruption(good + "x", "oversized");
  std::string bad = good;
  bad[0] = 2;
  require_corruption(bad, "version 2");
  bad = good;
  bad[21] = 100;  // page_count
  require_corruption(bad, "100 dirty pages need");
  bad = good;
  bad[25 + 8] = 4;  // status of txn entry 0
  require_corruption(bad, "txn entry 0: status 4");
  bad = good;
  std::memset(bad.data() + 25, 0, 8);  // txn id
  require_corruption(bad, "txn id 0");
  bad = good;
  std::memset(bad.data() + 25 + 33, 0, 8);  // page id
  require_corruption(bad, "dirty page entry 0: page id 0");
  bad = good;
  std::memset(bad.data() + 1, 0, 8);
  require_corruption(bad, "begin_lsn 0");
  CheckpointData backwards = data;
  backwards.txns[0].undo_next = Lsn(9000);
  require_corruption(EncodeCheckpoint(backwards), "undo_next above last_lsn");
}

TEST_CASE("checkpoint payload: random truncations, flips and garbage never crash",
          "[unit][random][recovery]") {
  const uint64_t seed = sm::test::TestSeed("checkpoint payload fuzz");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    CheckpointData data = RandomCheckpoint(rng);
    const std::string good = EncodeCheckpoint(data);
    CheckpointData back;
    Ok(DecodeCheckpoint(good, &back));
    RequireSame(data, back);
    for (size_t n = 0; n < good.size(); ++n) {  // the length is exact: every prefix is bad
      REQUIRE(DecodeCheckpoint(std::string_view(good).substr(0, n), &back).IsCorruption());
    }
    for (int i = 0; i < 20; ++i) {
      std::string bad = good;
      for (int flips = 1 + rng() % 3; flips > 0; --flips) {
        bad[rng() % bad.size()] ^= static_cast<char>(1u << (rng() % 8));
      }
      Status s = DecodeCheckpoint(bad, &back);
      REQUIRE((s.ok() || s.IsCorruption()));
      if (s.ok()) REQUIRE(EncodeCheckpoint(back) == bad);  // a valid payload decodes exactly
    }
    std::string garbage(rng() % 200, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    Status s = DecodeCheckpoint(garbage, &back);
    REQUIRE((s.ok() || s.IsCorruption()));
  }
}

// --- Recovery on small hand-built logs -------------------------------------------------------

TEST_CASE("recovery of an empty log does nothing", "[unit][recovery]") {
  Harness h(1);
  RecoveryReport report = h.RecoverOk();
  REQUIRE(report.nothing_to_do());
  REQUIRE_FALSE(report.checkpoint_lsn.valid());
  REQUIRE(report.analysis_lsn == Lsn(kFirstLsn));
  REQUIRE(report.redo_lsn == Lsn(kFirstLsn));
  REQUIRE(report.end_lsn == Lsn(kFirstLsn));  // nothing written
  REQUIRE(report.analysis_records == 0);
  REQUIRE(report.next_txn_id == TxnId(1));
  REQUIRE(report.ToString().find("checkpoint at none") != std::string::npos);
}

TEST_CASE("recovery without a checkpoint keeps the winners and rolls back the losers",
          "[unit][crash][recovery]") {
  Harness h(2);
  FakeTxns& t = *h.txns;
  TxnId t1 = t.Begin(), t2 = t.Begin(), t3 = t.Begin(), t4 = t.Begin();
  Ok(t.Add(t1, PageId(1), 10));
  Ok(t.Add(t2, PageId(1), 100));
  Ok(t.Add(t1, PageId(2), 20));
  Ok(t.Set(PageId(50), 7));  // a system transaction: survives whatever happens to t2
  Ok(t.Add(t2, PageId(2), 200));
  Ok(t.Add(t3, PageId(3), 1000));
  Ok(t.Commit(t1, CommitMode::kDurable));
  Ok(t.Add(t4, PageId(3), 5));
  Ok(t.Abort(t4));  // rolled back at run time: nothing left for recovery
  Ok(t.Add(t2, PageId(3), 300));
  Ok(t.Commit(t3, CommitMode::kNone));
  Ok(h.db.FlushPage(PageId(1)));  // holds t2's uncommitted +100 on disk
  Ok(h.log->FlushAll());          // t3's commit (mode none) too
  h.CrashAndReopen();

  RecoveryReport report = h.RecoverOk();
  INFO(report.ToString());
  REQUIRE(h.Value(1) == 10);
  REQUIRE(h.Value(2) == 20);
  REQUIRE(h.Value(3) == 1000);
  REQUIRE(h.Value(50) == 7);
  REQUIRE(report.losers == std::vector<TxnId>{t2});
  REQUIRE(report.winners == 2);
  REQUIRE(report.undo_records == 3);
  REQUIRE_FALSE(report.checkpoint_lsn.valid());
  REQUIRE(report.analysis_lsn == Lsn(kFirstLsn));
  REQUIRE(report.redo_lsn == Lsn(kFirstLsn));
  REQUIRE(report.redo_records == 9);        // 7 updates, the set, t4's compensation record
  REQUIRE(report.redo_pages_applied == 7);  // page 1 on disk has t1's and t2's first updates
  REQUIRE(report.dirty_pages == 4);
  REQUIRE(report.next_txn_id == TxnId(5));

  auto records = h.Log();
  RequireRolledBackOnce(records, t2);
  REQUIRE(CountRecords(records, RecordType::kTxnAbort, t2) == 1);
  REQUIRE(CountRecords(records, RecordType::kTxnEnd, t1) == 1);  // winners get an end record
  REQUIRE(CountRecords(records, RecordType::kTxnEnd, t3) == 1);
  REQUIRE(CountRecords(records, RecordType::kTxnEnd, t4) == 1);  // only its own
  REQUIRE(report.ToString().find("undo: 1 loser,") != std::string::npos);
}

TEST_CASE("recovery starts at a fuzzy checkpoint: analysis at its begin, redo at its RedoLsn",
          "[unit][crash][recovery]") {
  Harness h(3);
  FakeTxns& t = *h.txns;
  TxnId t0 = t.Begin(), t1 = t.Begin();
  Ok(t.Add(t0, PageId(5), 17));  // t0 logs only before the checkpoint: known from its table
  Ok(h.db.FlushPage(PageId(5)));
  Ok(t.Add(t1, PageId(1), 5));  // page 1 stays dirty: its rec_lsn is below the checkpoint
  Ok(t.BeginCheckpoint());
  Ok(t.Add(t1, PageId(2), 7));  // after begin, before the snapshot: in the table already
  TxnId t2 = t.Begin();
  Ok(t.Add(t2, PageId(3), 11));
  t.SnapshotCheckpoint();
  Ok(t.Commit(t1, CommitMode::kNone));  // after the snapshot, before the end
  TxnId t3 = t.Begin();
  Ok(t.Add(t3, PageId(4), 13));
  Ok(t.Add(t2, PageId(3), 1));
  CheckpointData checkpoint;
  Ok(t.EndCheckpoint(/*truncate=*/false, &checkpoint));
  Ok(t.Commit(t3, CommitMode::kDurable));
  REQUIRE(checkpoint.txns.size() == 3);         // t0, t1, t2
  REQUIRE(checkpoint.dirty_pages.size() == 3);  // pages 1, 2, 3
  h.CrashAndReopen(CrashMode::kTearUnsynced);

  const size_t records_from_begin = h.Log(checkpoint.begin_lsn).size();
  RecoveryReport report = h.RecoverOk();
  INFO(report.ToString());
  REQUIRE(report.checkpoint_lsn == checkpoint.begin_lsn);
  REQUIRE(report.analysis_lsn == checkpoint.begin_lsn);
  REQUIRE(report.analysis_records == records_from_begin);
  REQUIRE(report.redo_lsn == checkpoint.RedoLsn());
  REQUIRE(report.redo_lsn < checkpoint.begin_lsn);  // page 1's rec_lsn
  REQUIRE(report.losers == std::vector<TxnId>{t0, t2});
  REQUIRE(report.undo_records == 3);
  REQUIRE(h.Value(5) == 0);
  REQUIRE(h.Value(1) == 5);
  REQUIRE(h.Value(2) == 7);
  REQUIRE(h.Value(3) == 0);
  REQUIRE(h.Value(4) == 13);
  REQUIRE(report.next_txn_id == TxnId(5));
  auto records = h.Log();
  RequireRolledBackOnce(records, t0);
  RequireRolledBackOnce(records, t2);
}

TEST_CASE("a rollback interrupted by the crash continues from its undo_next",
          "[unit][crash][recovery]") {
  Harness h(4);
  FakeTxns& t = *h.txns;
  TxnId t0 = t.Begin(), t1 = t.Begin();
  for (uint64_t p = 1; p <= 5; ++p) Ok(t.Add(t0, PageId(p), 1));
  Ok(t.Commit(t0, CommitMode::kDurable));
  for (uint64_t p = 1; p <= 5; ++p) Ok(t.Add(t1, PageId(p), 10 * p));
  Ok(h.log->FlushAll());
  Ok(t.Abort(t1, /*max_undos=*/2));  // pages 5 and 4 are compensated, then the crash
  REQUIRE(t.txn(t1).status == TxnStatus::kAborting);
  uint64_t expected_undos = 0;
  SECTION("its compensation records survive") {
    Ok(h.db.FlushAllPages());
    Ok(h.log->FlushAll());
    expected_undos = 3;
  }
  SECTION("its compensation records are lost") { expected_undos = 5; }  // never synced
  h.CrashAndReopen();

  RecoveryReport report = h.RecoverOk();
  INFO(report.ToString());
  REQUIRE(report.losers == std::vector<TxnId>{t1});
  REQUIRE(report.undo_records == expected_undos);
  for (uint64_t p = 1; p <= 5; ++p) REQUIRE(h.Value(p) == 1);
  auto records = h.Log();
  RequireRolledBackOnce(records, t1);
  REQUIRE(CountRecords(records, RecordType::kTxnAbort, t1) == 1);  // not written again
}

TEST_CASE("a loser that rolled back to a savepoint and went on is undone around its CLRs",
          "[unit][crash][recovery]") {
  Harness h(12);
  FakeTxns& t = *h.txns;
  TxnId winner = t.Begin(), loser = t.Begin();
  for (auto [id, base] : {std::pair{winner, uint64_t{10}}, std::pair{loser, uint64_t{20}}}) {
    Ok(t.Add(id, PageId(base + 1), 1));
    Ok(t.Add(id, PageId(base + 2), 2));
    Ok(t.Add(id, PageId(base + 3), 4));
    Ok(t.RollbackToSavepoint(id, 2));  // undoes +4 and +2
    Ok(t.Add(id, PageId(base + 2), 8));
    Ok(t.Add(id, PageId(base + 3), 16));
  }
  Ok(t.Commit(winner, CommitMode::kDurable));
  Ok(h.db.FlushAllPages());
  h.CrashAndReopen();

  RecoveryReport report = h.RecoverOk();
  INFO(report.ToString());
  REQUIRE(report.losers == std::vector<TxnId>{loser});
  REQUIRE(report.undo_records == 3);  // +16, +8, then past the CLRs straight to +1
  REQUIRE(h.Value(11) == 1);
  REQUIRE(h.Value(12) == 8);
  REQUIRE(h.Value(13) == 16);
  for (uint64_t p = 21; p <= 23; ++p) REQUIRE(h.Value(p) == 0);
  RequireRolledBackOnce(h.Log(), loser);
}

namespace {

// The same small workload for the crash-during-recovery tests: a winner, two losers, one with
// an interrupted rollback, a system update, some pages written. Returns the expected values.
std::map<uint64_t, int64_t> LoadLosers(Harness* h) {
  FakeTxns& t = *h->txns;
  TxnId w = t.Begin(), a = t.Begin(), b = t.Begin(), c = t.Begin();
  for (uint64_t p = 1; p <= 4; ++p) Ok(t.Add(w, PageId(p), int64_t(p)));
  for (int i = 0; i < 6; ++i) Ok(t.Add(a, PageId(1 + i % 4), 100));
  Ok(t.Commit(w, CommitMode::kNone));
  Ok(t.Set(PageId(9), 99));
  for (int i = 0; i < 4; ++i) Ok(t.Add(b, PageId(4 - i % 4), 1000));
  for (int i = 0; i < 3; ++i) Ok(t.Add(c, PageId(2), 10000));
  Ok(t.Abort(c, 1));
  Ok(h->db.FlushPage(PageId(1)));
  Ok(h->db.FlushPage(PageId(3)));
  Ok(h->log->FlushAll());
  return {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {9, 99}};
}

void RequireValues(Harness* h, const std::map<uint64_t, int64_t>& expected) {
  for (const auto& [page, value] : expected) {
    INFO("page " << page);
    REQUIRE(h->Value(page) == value);
  }
}

}  // namespace

TEST_CASE("a crash during undo, then recovery again, ends as one full recovery",
          "[unit][crash][recovery]") {
  uint64_t full_undos = 0;
  {
    Harness h(5);
    auto expected = LoadLosers(&h);
    h.CrashAndReopen();
    RecoveryReport report = h.RecoverOk();
    RequireValues(&h, expected);
    full_undos = report.undo_records;
    REQUIRE(full_undos == 6 + 4 + 2);
  }
  const CrashMode modes[] = {CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced,
                             CrashMode::kTearUnsynced};
  const std::vector<TxnId> losers = {TxnId(2), TxnId(3), TxnId(4)};
  for (uint64_t k = 1; k <= full_undos; ++k) {
    for (int variant = 0; variant < 12; ++variant) {
      const bool after_logging = variant % 2 == 1;
      const bool flush_pages = variant / 2 % 2 == 1;
      const CrashMode mode = modes[variant / 4];
      INFO("undo fails at call " << k << ", after logging " << after_logging << ", pages flushed "
                                 << flush_pages << ", crash mode " << variant / 4);
      Harness h(1000 + k * 100 + variant);
      auto expected = LoadLosers(&h);
      h.CrashAndReopen();
      h.db.FailUndoAt(k, after_logging);
      RecoveryReport failed;
      Status s = h.TryRecover(&failed);
      REQUIRE(s.IsIOError());
      if (flush_pages) Ok(h.db.FlushAllPages());  // the WAL rule makes the CLRs durable first
      h.CrashAndReopen(mode);
      RecoveryReport report = h.RecoverOk();
      RequireValues(&h, expected);
      REQUIRE(report.undo_records <= full_undos);
      auto records = h.Log();
      for (TxnId loser : losers) RequireRolledBackOnce(records, loser);
      // Recovering once more finds nothing left to undo.
      h.CrashAndReopen(mode);
      RecoveryReport again = h.RecoverOk();
      REQUIRE(again.losers.empty());
      RequireValues(&h, expected);
    }
  }
}

TEST_CASE("a crash during redo, then recovery again, ends as one full recovery",
          "[unit][crash][recovery]") {
  uint64_t redo_records = 0;
  {
    Harness h(6);
    LoadLosers(&h);
    h.CrashAndReopen();
    redo_records = h.RecoverOk().redo_records;
  }
  for (uint64_t k = 1; k <= redo_records; ++k) {
    for (bool flush_pages : {false, true}) {
      INFO("redo fails at call " << k << ", pages flushed " << flush_pages);
      Harness h(200 + k);
      auto expected = LoadLosers(&h);
      h.CrashAndReopen();
      h.db.FailRedoAt(k);
      RecoveryReport failed;
      REQUIRE(h.TryRecover(&failed).IsIOError());
      REQUIRE(failed.undo_records == 0);
      const Lsn end = h.log->end_lsn();
      REQUIRE(h.log->durable_lsn() == end);       // redo wrote nothing
      if (flush_pages) Ok(h.db.FlushAllPages());  // partly redone pages reach the disk
      h.CrashAndReopen(CrashMode::kTearUnsynced);
      REQUIRE(h.open_report.end_lsn == end);
      h.RecoverOk();
      RequireValues(&h, expected);
    }
  }
}

TEST_CASE("recovery is idempotent: a second recovery without new work changes nothing",
          "[unit][crash][recovery]") {
  Harness h(7);
  auto expected = LoadLosers(&h);
  h.CrashAndReopen();
  RecoveryReport first = h.RecoverOk();
  RequireValues(&h, expected);
  REQUIRE(first.losers.size() == 3);
  auto mode = GENERATE(CrashMode::kDropUnsynced, CrashMode::kTearUnsynced);
  h.CrashAndReopen(mode);
  RecoveryReport second = h.RecoverOk();
  INFO(second.ToString());
  RequireValues(&h, expected);
  REQUIRE(second.losers.empty());
  REQUIRE(second.winners == first.winners);  // its commit is seen again, then its end record
  REQUIRE(second.undo_records == 0);
  REQUIRE(second.end_lsn == first.end_lsn);  // nothing written
  REQUIRE(second.next_txn_id == first.next_txn_id);
}

TEST_CASE("recovery with undo off stops after redo and writes nothing", "[unit][recovery]") {
  Harness h(8);
  auto expected = LoadLosers(&h);
  h.CrashAndReopen();
  const Lsn end = h.log->end_lsn();
  RecoveryOptions redo_only;
  redo_only.undo = false;
  RecoveryReport report = h.RecoverOk(redo_only);
  REQUIRE(report.losers.size() == 3);
  REQUIRE(report.end_lsn == end);
  REQUIRE(h.Value(1) == 1 + 200 + 1000);  // history repeated, losers included
  h.CrashAndReopen();
  h.RecoverOk();
  RequireValues(&h, expected);
}

TEST_CASE("a transaction larger than the log buffer is rolled back at restart",
          "[unit][crash][recovery]") {
  LogOptions options = logtest::SmallOptions();
  options.buffer_bytes = 64 * 1024;
  options.segment_bytes = 256 * 1024;
  Harness h(9, options);
  FakeTxns& t = *h.txns;
  TxnId small = t.Begin();
  for (uint64_t p = 1; p <= 8; ++p) Ok(t.Add(small, PageId(p), int64_t(p)));
  Ok(t.Commit(small, CommitMode::kDurable));
  TxnId big = t.Begin();
  constexpr int kRecords = 400;  // 400 KiB of log: six times the buffer
  for (int i = 0; i < kRecords; ++i) Ok(t.Add(big, PageId(1 + i % 8), 3, 1024));
  Ok(h.db.FlushAllPages());  // the disk holds the big transaction's changes
  h.CrashAndReopen();

  RecoveryReport report = h.RecoverOk();
  INFO(report.ToString());
  REQUIRE(report.losers == std::vector<TxnId>{big});
  REQUIRE(report.undo_records == kRecords);
  REQUIRE(report.redo_bytes > 6 * options.buffer_bytes);
  for (uint64_t p = 1; p <= 8; ++p) REQUIRE(h.Value(p) == int64_t(p));
  RequireRolledBackOnce(h.Log(), big);
}

TEST_CASE("recovery after the log was truncated at a checkpoint", "[unit][crash][recovery]") {
  Harness h(10);
  FakeTxns& t = *h.txns;
  int64_t sum = 0;
  for (int i = 0; i < 100; ++i) {  // ~60 KiB: the first segment fills
    TxnId id = t.Begin();
    Ok(t.Add(id, PageId(1 + i % 4), i, 512));
    Ok(t.Commit(id, CommitMode::kNone));
    sum += i;
  }
  const bool long_runner = GENERATE(false, true);
  TxnId old;
  if (long_runner) {  // active across the checkpoint: the log keeps its records
    old = t.Begin();
    Ok(t.Add(old, PageId(1), 1000000, 512));
  }
  for (int i = 0; i < 300; ++i) {  // ~180 KiB more: three more segments
    TxnId id = t.Begin();
    Ok(t.Add(id, PageId(1 + i % 4), 1, 512));
    Ok(t.Commit(id, CommitMode::kNone));
    sum += 1;
  }
  Ok(h.db.FlushAllPages());
  CheckpointData checkpoint;
  Ok(t.Checkpoint(/*truncate=*/true, &checkpoint));
  REQUIRE(h.log->start_lsn() == checkpoint.OldestNeeded());
  REQUIRE(h.log->start_lsn() == (long_runner ? t.txn(old).first_lsn : checkpoint.begin_lsn));
  REQUIRE(h.log->stats().segments_removed >= (long_runner ? 1u : 3u));
  TxnId last = t.Begin(), loser = t.Begin();
  Ok(t.Add(last, PageId(2), 5));
  Ok(t.Add(loser, PageId(3), 7));
  Ok(t.Commit(last, CommitMode::kDurable));
  h.CrashAndReopen(CrashMode::kTearUnsynced);
  REQUIRE(h.open_report.start_lsn == checkpoint.OldestNeeded());

  RecoveryReport report = h.RecoverOk();
  INFO(report.ToString());
  REQUIRE(report.analysis_lsn == checkpoint.begin_lsn);
  REQUIRE(report.redo_lsn == checkpoint.begin_lsn);
  int64_t total = 0;
  for (uint64_t p = 1; p <= 4; ++p) total += h.Value(p);
  REQUIRE(total == sum + 5);
  REQUIRE(report.losers.size() == (long_runner ? 2u : 1u));
  REQUIRE(report.undo_records == report.losers.size());
}

TEST_CASE("a checkpoint LSN without a matching checkpoint end is Corruption", "[unit][recovery]") {
  Harness h(11);
  TxnId id = h.txns->Begin();
  Ok(h.txns->Add(id, PageId(1), 1));
  Lsn lsn;
  std::string text;
  SECTION("no end record") {
    LogRecord begin;
    begin.type = RecordType::kCheckpointBegin;
    Ok(h.log->Insert(begin, &lsn));
    text = "has no checkpoint_end";
  }
  SECTION("not a begin record") {
    lsn = h.txns->txn(id).first_lsn;
    text = "is not a checkpoint_begin";
  }
  SECTION("an end record with a damaged payload") {
    LogRecord begin;
    begin.type = RecordType::kCheckpointBegin;
    Ok(h.log->Insert(begin, &lsn));
    LogRecord end;
    end.type = RecordType::kCheckpointEnd;
    end.payload = "\x01garbage";
    Lsn end_lsn;
    Ok(h.log->Insert(end, &end_lsn));
    text = "truncated header";
  }
  Ok(h.log->FlushAll());
  Ok(h.log->SetCheckpoint(lsn));
  h.CrashAndReopen();
  RecoveryReport report;
  Status s = h.TryRecover(&report);
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  REQUIRE(std::string(s.message()).find(text) != std::string::npos);
}

// --- Random crashes against a model ----------------------------------------------------------

namespace {

constexpr uint64_t kAddPages = 12;
constexpr uint64_t kSetPageBase = 100;  // pages 101..104: only system transactions set them
constexpr uint64_t kSetPages = 4;

// What survives a crash: a transaction's changes iff its commit record does; a system update
// iff its record does. The log is a prefix, so "survives" is "ends at or below the reopened
// log's end".
struct Model {
  struct Add {
    TxnId txn;
    uint64_t page;
    int64_t delta;
    Lsn end;
  };
  struct Set {
    uint64_t page;
    int64_t value;
    Lsn end;
  };
  std::vector<Add> adds;
  std::vector<Set> sets;
  std::map<TxnId, Lsn> commits;  // commit record end
  Lsn acknowledged;              // end of the last commit acknowledged durable

  // Forgets what the crash took (a lost transaction's id may be handed out again).
  void Survive(Lsn log_end) {
    auto lost = [&](Lsn end) { return end > log_end; };
    std::erase_if(adds, [&](const Add& a) { return lost(a.end); });
    std::erase_if(sets, [&](const Set& s) { return lost(s.end); });
    std::erase_if(commits, [&](const auto& c) { return lost(c.second); });
  }
  int64_t Expected(uint64_t page) const {
    int64_t value = 0;
    if (page > kSetPageBase) {
      for (const Set& s : sets) {
        if (s.page == page) value = s.value;
      }
      return value;
    }
    for (const Add& a : adds) {
      if (a.page == page && commits.count(a.txn) != 0) value += a.delta;
    }
    return value;
  }
  TxnId MaxTxnLogged() const {
    TxnId max;
    for (const Add& a : adds) max = std::max(max, a.txn);
    return max;
  }
};

// One random step of the workload.
Status RandomStep(std::mt19937_64& rng, Harness* h, Model* model) {
  FakeTxns& t = *h->txns;
  std::vector<TxnId> running, aborting;
  for (const auto& [id, txn] : t.active()) {
    (txn.status == TxnStatus::kActive ? running : aborting).push_back(id);
  }
  const uint32_t dice = rng() % 100;
  if ((dice < 12 || (running.empty() && dice < 40)) && running.size() < 5) {
    t.Begin();
    return Status::OK();
  }
  if (dice < 58 && !running.empty()) {
    TxnId id = running[rng() % running.size()];
    Model::Add add{id, 1 + rng() % kAddPages, int64_t(rng() % 201) - 100, Lsn()};
    SM_TRY(t.Add(id, PageId(add.page), add.delta, 8 + rng() % 300, &add.end));
    model->adds.push_back(add);
    return Status::OK();
  }
  if (dice < 68 && !running.empty()) {
    TxnId id = running[rng() % running.size()];
    const CommitMode mode = rng() % 2 == 0 ? CommitMode::kDurable
                            : rng() % 2    ? CommitMode::kAsync
                                           : CommitMode::kNone;
    Lsn end;
    SM_TRY(t.Commit(id, mode, &end));
    model->commits[id] = end;
    if (mode == CommitMode::kDurable) model->acknowledged = std::max(model->acknowledged, end);
    return Status::OK();
  }
  if (dice < 73 && !running.empty()) {
    TxnId id = running[rng() % running.size()];
    return t.Abort(id, rng() % 3 == 0 ? int(rng() % 3) : -1);  // sometimes interrupted
  }
  if (dice < 76 && !running.empty()) {
    TxnId id = running[rng() % running.size()];
    std::vector<FakeDb::Compensation> undone;
    SM_TRY(t.RollbackToSavepoint(id, 1 + rng() % 3, &undone));
    for (const auto& c : undone) model->adds.push_back({id, c.page.value(), c.delta, c.end});
    return Status::OK();
  }
  if (dice < 78 && !aborting.empty()) return t.Abort(aborting[rng() % aborting.size()]);
  if (dice < 85) {
    Model::Set set{kSetPageBase + 1 + rng() % kSetPages, int64_t(rng() % 1000), Lsn()};
    SM_TRY(t.Set(PageId(set.page), set.value, &set.end));
    model->sets.push_back(set);
    return Status::OK();
  }
  if (dice < 94) {
    std::vector<PageId> pages = h->db.CachedPages();
    if (pages.empty()) return Status::OK();
    return h->db.FlushPage(pages[rng() % pages.size()]);
  }
  // A fuzzy checkpoint advances one step at a time, so work runs between its records.
  if (!t.checkpoint_begun()) return t.BeginCheckpoint();
  if (!t.checkpoint_snapped()) {
    t.SnapshotCheckpoint();
    return Status::OK();
  }
  return t.EndCheckpoint(/*truncate=*/rng() % 2 == 0);
}

// What the random test covered (printed, so a change that makes it trivial is noticed).
struct Coverage {
  uint64_t crash_points = 0;
  uint64_t failed_recoveries = 0;
  uint64_t from_checkpoint = 0;  // recoveries that started at a checkpoint
  uint64_t truncated = 0;        // ... on a log whose start had moved
  uint64_t losers = 0;
  uint64_t undo_records = 0;
  uint64_t redo_records = 0;
};

// After a crash and reopen: what survived is what the model says, recovered.
void RecoverAndVerify(std::mt19937_64& rng, Harness* h, Model* model, Coverage* coverage) {
  REQUIRE(h->open_report.end_lsn >= model->acknowledged);  // every durable commit survived
  model->Survive(h->open_report.end_lsn);
  if (rng() % 4 == 0) {  // a crash during recovery first
    if (rng() % 2 == 0) {
      h->db.FailRedoAt(1 + rng() % 20);
    } else {
      h->db.FailUndoAt(1 + rng() % 6, rng() % 2 == 0);
    }
    RecoveryReport failed;
    Status s = h->TryRecover(&failed);
    h->db.ClearFailures();
    if (!s.ok()) {
      REQUIRE(s.IsIOError());
      if (rng() % 2 == 0) Ok(h->db.FlushAllPages());
      h->CrashAndReopen(rng() % 2 ? CrashMode::kDropUnsynced : CrashMode::kTearUnsynced);
      ++coverage->crash_points;
      ++coverage->failed_recoveries;
    }
  }
  RecoveryReport report = h->RecoverOk();
  INFO(report.ToString());
  coverage->from_checkpoint += report.checkpoint_lsn.valid();
  coverage->truncated += h->log->start_lsn() > Lsn(kFirstLsn);
  coverage->losers += report.losers.size();
  coverage->undo_records += report.undo_records;
  coverage->redo_records += report.redo_records;
  REQUIRE(report.next_txn_id > model->MaxTxnLogged());
  for (TxnId loser : report.losers) REQUIRE(model->commits.count(loser) == 0);
  for (uint64_t page = 1; page <= kAddPages; ++page) {
    INFO("page " << page);
    REQUIRE(h->Value(page) == model->Expected(page));
  }
  for (uint64_t page = kSetPageBase + 1; page <= kSetPageBase + kSetPages; ++page) {
    INFO("page " << page);
    REQUIRE(h->Value(page) == model->Expected(page));
  }
  if (rng() % 2 == 0) {  // as TxnManager::Restart does: write everything, checkpoint
    Ok(h->db.FlushAllPages());
    Ok(h->txns->Checkpoint(/*truncate=*/true));
  }
}

}  // namespace

TEST_CASE("random transactions, flushes, checkpoints and crashes recover to the committed state",
          "[random][crash][recovery]") {
  const uint64_t seed = sm::test::TestSeed("recovery random crashes");
  std::mt19937_64 rng(seed);
  constexpr int kDatabases = 100;
  constexpr int kCrashesPerDatabase = 10;
  Coverage coverage;
  const auto start = std::chrono::steady_clock::now();
  for (int db = 0; db < kDatabases; ++db) {
    Harness h(rng());
    Model model;
    for (int epoch = 0; epoch < kCrashesPerDatabase; ++epoch) {
      INFO("seed " << seed << ", database " << db << ", epoch " << epoch);
      for (int steps = rng() % 250; steps > 0; --steps) Ok(RandomStep(rng, &h, &model));
      h.CrashAndReopen(rng() % 2 ? CrashMode::kDropUnsynced : CrashMode::kTearUnsynced);
      ++coverage.crash_points;
      RecoverAndVerify(rng, &h, &model, &coverage);
    }
    Ok(h.log->Close());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "[recovery random crashes] %llu crash points (%llu during recovery) in %.2f s; %llu "
      "recoveries from a checkpoint (%llu on a truncated log); %llu losers, %llu records "
      "undone, %llu redone\n",
      u(coverage.crash_points), u(coverage.failed_recoveries), seconds, u(coverage.from_checkpoint),
      u(coverage.truncated), u(coverage.losers), u(coverage.undo_records),
      u(coverage.redo_records));
  REQUIRE(coverage.crash_points >= 200);
}
