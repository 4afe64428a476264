// SmEngine and its transaction: the adapter calls mapped onto sm/sm.h.
#include "tpcc/sm_engine.h"

#include <string>
#include <utility>

namespace sm::tpcc {

namespace {

class SmTxn final : public EngineTxn {
 public:
  explicit SmTxn(SmEngine* engine) : engine_(engine) {}
  ~SmTxn() override = default;  // a live sm::Transaction aborts when destroyed

  Status Begin(TxnIsolation isolation) override {
    if (txn_ != nullptr && txn_->active()) {
      return Status::InvalidArgument("Begin on an active transaction");
    }
    // The finished transaction in txn_ begins again (sm::Database::Begin).
    return engine_->database()->Begin(&txn_, isolation == TxnIsolation::kSerializable
                                                 ? sm::Isolation::kSerializable
                                                 : sm::Isolation::kReadCommitted);
  }

  Status Commit(CommitKind kind) override {
    if (txn_ == nullptr) return Status::InvalidArgument("no transaction");
    switch (kind) {
      case CommitKind::kBulk:
        return txn_->Commit(sm::CommitMode::kNone);
      case CommitKind::kDurable:
        return txn_->Commit(sm::CommitMode::kDurable);
      case CommitKind::kDefault:
        break;
    }
    return txn_->Commit();
  }

  Status Abort() override {
    if (txn_ == nullptr) return Status::InvalidArgument("no transaction");
    return txn_->Abort();
  }

  bool active() const override { return txn_ != nullptr && txn_->active(); }

  Status Get(TableId table, std::string_view key, std::string* value) override {
    SM_TRY(Check(table));
    return T(table)->Get(txn_.get(), key, value);
  }

  Status GetForUpdate(TableId table, std::string_view key, std::string* value) override {
    SM_TRY(Check(table));
    if (engine_->read_for_update() == ReadForUpdate::kLock) {
      return T(table)->GetForUpdate(txn_.get(), key, value);
    }
    return T(table)->Get(txn_.get(), key, value);
  }

  Status GetMany(TableId table, const std::vector<std::string_view>& keys, bool for_update,
                 RowVisitor visit) override {
    SM_TRY(Check(table));
    for_update = for_update && engine_->read_for_update() == ReadForUpdate::kLock;
    return T(table)->GetMany(txn_.get(), keys, for_update,
                             [&](size_t index, const Status& found, std::string_view value) {
                               return !found.ok() || visit(index, value);
                             });
  }

  Status Insert(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Check(table));
    return T(table)->Insert(txn_.get(), key, value);
  }

  Status Update(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Check(table));
    return T(table)->Update(txn_.get(), key, value);
  }

  Status Delete(TableId table, std::string_view key) override {
    SM_TRY(Check(table));
    return T(table)->Delete(txn_.get(), key);
  }

  Status Add(TableId table, std::string_view key, uint32_t offset, int64_t delta,
             std::string* value) override {
    SM_TRY(Check(table));
    return T(table)->Add(txn_.get(), key, offset, delta, value);
  }

  Status Modify(TableId table, std::string_view key, RowEdit edit) override {
    SM_TRY(Check(table));
    return T(table)->Modify(txn_.get(), key,
                            [edit](char* value, size_t size) { edit(value, size); });
  }
  Status Scan(TableId table, std::string_view lower, std::string_view upper, bool reverse,
              ScanVisitor visitor) override {
    SM_TRY(Check(table));
    // The visitor may not use the transaction (the adapter's contract): a forward scan hands it
    // a leaf's rows under the leaf's latch.
    if (scanning_) return Status::InvalidArgument("a scan's visitor used its transaction");
    // The options and the cursor are kept from scan to scan: their buffers then stay grown.
    sm::ScanOptions& options = scan_options_;
    options.lower.assign(lower);
    options.has_lower = !lower.empty();
    options.upper.assign(upper);
    options.has_upper = !upper.empty();
    options.reverse = reverse;
    SM_TRY(T(table)->NewCursor(txn_.get(), options, &cursor_));
    scanning_ = true;
    Status s = reverse ? ScanBackward(visitor) : ScanForward(visitor);
    scanning_ = false;
    return s;
  }

 private:
  // The rows after the first come a leaf at a time (Cursor::NextBatch: no copy of each row,
  // one latch per leaf).
  Status ScanForward(ScanVisitor visitor) {
    if (!cursor_->Valid()) return Status::OK();
    bool more = visitor(cursor_->key(), cursor_->value());
    const sm::Cursor::RowVisitor rows = [&](std::string_view key, std::string_view value) {
      more = visitor(key, value);
      return more;
    };
    constexpr size_t kBatchRows = 1024;  // a bound per call; a batch ends at a leaf's end anyway
    Status s = Status::OK();
    size_t visited = 0;
    while (s.ok() && more && cursor_->Valid()) s = cursor_->NextBatch(kBatchRows, rows, &visited);
    return s;
  }
  Status ScanBackward(ScanVisitor visitor) {
    Status s = Status::OK();
    while (s.ok() && cursor_->Valid()) {
      if (!visitor(cursor_->key(), cursor_->value())) break;
      s = cursor_->Next();
    }
    return s;
  }
  sm::Table* T(TableId table) const { return engine_->table(table); }
  // A handle exists only after OpenSchema (a caller error, reported rather than crashed on).
  Status Check(TableId table) const {
    if (T(table) != nullptr) [[likely]] return Status::OK();
    return NotOpen(table);
  }
  // Out of line, so that Check, called by every operation, is inlined.
  [[gnu::noinline]] static Status NotOpen(TableId table) {
    return Status::InvalidArgument(std::string(TableName(table)) +
                                   " is not open: call Engine::OpenSchema first");
  }

  SmEngine* const engine_;
  std::unique_ptr<sm::Transaction> txn_;
  sm::ScanOptions scan_options_;
  std::unique_ptr<sm::Cursor> cursor_;  // the last scan's, reused by the next (NewCursor)
  bool scanning_ = false;               // cursor_ is in use (a visitor is running)
};

std::string Bytes(uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

const char* ReadForUpdateName(ReadForUpdate mode) {
  switch (mode) {
    case ReadForUpdate::kLock: return "lock";
    case ReadForUpdate::kPlain: return "plain";
  }
  return "?";
}

Status SmEngine::Open(const SmEngineOptions& options, std::unique_ptr<SmEngine>* engine,
                      sm::OpenReport* report) {
  std::unique_ptr<SmEngine> e(new SmEngine(options));
  SM_TRY(sm::Database::Open(options.db, &e->db_, report));
  *engine = std::move(e);
  return Status::OK();
}

SmEngine::~SmEngine() = default;

std::string SmEngine::Describe() const {
  return std::string("sm (buffer pool ") + Bytes(options_.db.buffer_pool_bytes) + ", commit " +
         sm::CommitModeName(options_.db.commit_mode) + ", " + std::to_string(db_->workers()) +
         " workers, read-for-update: " + ReadForUpdateName(options_.read_for_update) + ")";
}

Status SmEngine::OpenSchema(Schema schema, bool create, bool* created) {
  *created = false;
  for (int i = 0; i < kTableCount; ++i) {
    auto id = static_cast<TableId>(i);
    if (!InSchema(id, schema)) continue;
    Status s = db_->OpenTable(TableName(id), &tables_[i]);
    if (s.ok()) continue;
    if (!s.IsNotFound() || !create) return s;
    SM_TRY(IsIndex(id) ? db_->CreateIndex(TableName(id), &tables_[i])
                       : db_->CreateTable(TableName(id), &tables_[i]));
    *created = true;
  }
  return Status::OK();
}

std::unique_ptr<EngineTxn> SmEngine::NewTxn() { return std::make_unique<SmTxn>(this); }

Status SmEngine::Checkpoint() { return db_->Checkpoint(); }

Status SmEngine::Verify() { return db_->Verify(); }

EngineStats SmEngine::Stats() {
  sm::DatabaseStats d = db_->stats();
  EngineStats s;
  s.lock_requests = d.lock_requests;
  s.lock_waits = d.lock_waits;
  s.deadlocks = d.deadlocks;
  s.lock_timeouts = d.lock_timeouts;
  s.pool_hits = d.pool_hits;
  s.pool_hinted_hits = d.pool_hinted_hits;
  s.pool_misses = d.pool_misses;
  s.pool_writes = d.pool_writes;
  s.pool_dirty_pages = d.pool_dirty_pages;
  s.log_bytes = d.log_bytes;
  s.log_syncs = d.log_syncs;
  s.log_space_waits = d.log_space_waits;
  s.commits_per_sync = d.commits_per_sync;
  s.txn_committed = d.txn_committed;
  s.txn_aborted = d.txn_aborted;
  s.checkpoints = d.checkpoints;
  return s;
}

Status SmEngine::Spawn(std::function<void()> fn, int worker) {
  return db_->Spawn(std::move(fn), worker);
}

unsigned SmEngine::workers() const { return db_->workers(); }

Status SmEngine::Close() { return db_->Close(); }

}  // namespace sm::tpcc
