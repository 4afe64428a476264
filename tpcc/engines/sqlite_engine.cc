// The SQLite adapter: see sqlite_engine.h.
#include "tpcc/engines/sqlite_engine.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sm/common/assert.h"
#include "tpcc/engines/worker_threads.h"

namespace sm::tpcc {
namespace {

constexpr char kFileName[] = "tpcc.sqlite";
constexpr int kPageBytes = 8192;  // our page size, so that both trees have the same fan-out
constexpr int kMaxScanDepth = 4;  // nested scans (a visitor's scan) per transaction

const char* SyncPragma(ForeignCommit commit) {
  switch (commit) {
    case ForeignCommit::kDurable: return "PRAGMA synchronous=FULL";
    case ForeignCommit::kAsync: return "PRAGMA synchronous=NORMAL";
    case ForeignCommit::kNone: return "PRAGMA synchronous=OFF";
  }
  return "PRAGMA synchronous=FULL";
}

// An SQLite result code as a Status; `what` names the call.
Status Error(sqlite3* db, int rc, const char* what) {
  const int primary = rc & 0xff;
  std::string msg = std::string("sqlite: ") + what + ": " +
                    (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::LockTimeout(msg);
  if (primary == SQLITE_CONSTRAINT) return Status::Duplicate(msg);
  if (primary == SQLITE_FULL) return Status::NoSpace(msg);
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return Status::Corruption(msg);
  if (primary == SQLITE_IOERR) return Status::IOError(msg);
  if (primary == SQLITE_CANTOPEN) return Status::NotFound(msg);
  return Status::IOError(msg);
}

Status Exec(sqlite3* db, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::OK() : Error(db, rc, sql);
}

std::string Quoted(TableId table) { return std::string("\"") + TableName(table) + "\""; }

// Binds a key or value as a BLOB: an empty one too (a null pointer would bind NULL).
int BindBlob(sqlite3_stmt* stmt, int index, std::string_view bytes) {
  static const char kEmpty = 0;
  return sqlite3_bind_blob(stmt, index, bytes.empty() ? &kEmpty : bytes.data(),
                           static_cast<int>(bytes.size()), SQLITE_STATIC);
}

std::string_view Column(sqlite3_stmt* stmt, int column) {
  const void* data = sqlite3_column_blob(stmt, column);
  const int bytes = sqlite3_column_bytes(stmt, column);
  return data == nullptr ? std::string_view() : std::string_view(static_cast<const char*>(data), bytes);
}

struct Counters {
  std::atomic<uint64_t> committed{0}, aborted{0}, busy{0};  // relaxed: statistics
};

struct Settings {
  std::string file;
  ForeignEngineOptions options;
};

// Opens a connection with the adapter's settings (every connection: the pragmas are per
// connection).
Status OpenConnection(const Settings& settings, bool create, sqlite3** out) {
  *out = nullptr;
  int flags = SQLITE_OPEN_NOMUTEX;  // invariant 1
  flags |= settings.options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create) flags |= SQLITE_OPEN_CREATE;
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(settings.file.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status s = Error(db, rc, "open");
    sqlite3_close_v2(db);
    return s;
  }
  const uint64_t timeout_ms = std::min<uint64_t>(settings.options.lock_timeout_ms, INT32_MAX);
  sqlite3_busy_timeout(db, static_cast<int>(timeout_ms));
  const uint64_t cache_kib =
      std::max<uint64_t>(1024, settings.options.cache_bytes / 1024 / settings.options.workers);
  Status s = Exec(db, SyncPragma(settings.options.commit));
  if (s.ok()) s = Exec(db, ("PRAGMA cache_size=-" + std::to_string(cache_kib)).c_str());
  if (!s.ok()) {
    sqlite3_close_v2(db);
    return s;
  }
  *out = db;
  return Status::OK();
}

class SqliteTxn final : public EngineTxn {
 public:
  SqliteTxn(const Settings* settings, Counters* counters)
      : settings_(settings), counters_(counters), sync_(settings->options.commit) {
    open_ = OpenConnection(*settings, /*create=*/false, &db_);
  }
  ~SqliteTxn() override {
    if (active_) Abort().PermitUnchecked();  // the destructor's contract: abort
    open_.PermitUnchecked();
    for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }

  Status Begin(TxnIsolation isolation) override {
    if (!open_.ok()) return open_;
    if (active_) return Status::InvalidArgument("Begin on an active transaction");
    // SQLite refuses to change the synchronous setting inside a transaction, so a batch of the
    // loader (whose commits are kBulk) begins under OFF when the previous commit was kBulk.
    SM_TRY(SetSync(bulk_hint_ ? ForeignCommit::kNone : settings_->options.commit));
    const bool serializable =
        isolation == TxnIsolation::kSerializable && !settings_->options.read_only;
    SM_TRY(Step(Prepared(serializable ? kBeginImmediate : kBeginDeferred), "begin"));
    active_ = true;
    return Status::OK();
  }

  Status Commit(CommitKind kind) override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    const ForeignCommit needed = kind == CommitKind::kBulk      ? ForeignCommit::kNone
                                 : kind == CommitKind::kDurable ? ForeignCommit::kDurable
                                                                : settings_->options.commit;
    Status s = Step(Prepared(kCommit), "commit");
    if (!s.ok()) {
      if (sqlite3_get_autocommit(db_) == 0) Abort().PermitUnchecked();  // report the commit's
      active_ = false;
      return s;
    }
    active_ = false;
    bulk_hint_ = kind == CommitKind::kBulk;
    counters_->committed.fetch_add(1, std::memory_order_relaxed);
    // Committed under a weaker setting than this commit needs: sync the WAL now.
    if (Weaker(sync_, needed)) return SyncWal();
    return Status::OK();
  }

  Status Abort() override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    active_ = false;
    counters_->aborted.fetch_add(1, std::memory_order_relaxed);
    if (sqlite3_get_autocommit(db_) != 0) return Status::OK();  // SQLite rolled it back already
    return Step(Prepared(kRollback), "rollback");
  }

  bool active() const override { return active_; }

  Status Get(TableId table, std::string_view key, std::string* value) override {
    sqlite3_stmt* stmt = Prepared(Index(kGet, table));
    if (stmt == nullptr) return PrepareError();
    BindBlob(stmt, 1, key);
    int rc = sqlite3_step(stmt);
    Status s = Status::OK();
    if (rc == SQLITE_ROW) {
      std::string_view v = Column(stmt, 0);
      value->assign(v.data(), v.size());
    } else if (rc == SQLITE_DONE) {
      s = Status::NotFound();
    } else {
      s = Fail(rc, "get");
    }
    sqlite3_reset(stmt);
    return s;
  }

  Status GetForUpdate(TableId table, std::string_view key, std::string* value) override {
    return Get(table, key, value);
  }

  Status GetMany(TableId table, const std::vector<std::string_view>& keys, bool for_update,
                 RowVisitor visit) override {
    std::string value;
    for (size_t i = 0; i < keys.size(); ++i) {
      Status s = Get(table, keys[i], &value);
      if (s.IsNotFound()) continue;
      SM_TRY(std::move(s));
      if (!visit(i, value)) break;
    }
    return Status::OK();
  }

  Status Insert(TableId table, std::string_view key, std::string_view value) override {
    return Write(Index(kInsert, table), key, value, "insert");
  }

  Status Update(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Write(Index(kUpdate, table), key, value, "update"));
    return sqlite3_changes(db_) == 1 ? Status::OK() : Status::NotFound();
  }

  Status Delete(TableId table, std::string_view key) override {
    SM_TRY(Write(Index(kDelete, table), key, std::string_view(), "delete"));
    return sqlite3_changes(db_) == 1 ? Status::OK() : Status::NotFound();
  }

  Status Add(TableId table, std::string_view key, uint32_t offset, int64_t delta,
             std::string* value) override {
    SM_TRY(Get(table, key, value));
    if (offset + sizeof(int64_t) > value->size()) {
      return Status::InvalidArgument("Add beyond the end of the row");
    }
    int64_t n = 0;
    std::memcpy(&n, value->data() + offset, sizeof n);
    n += delta;
    std::memcpy(value->data() + offset, &n, sizeof n);
    return Update(table, key, *value);
  }

  Status Scan(TableId table, std::string_view lower, std::string_view upper, bool reverse,
              ScanVisitor visitor) override {
    if (depth_ == kMaxScanDepth) return Status::NotSupported("scans nested too deep");
    const int shape = (reverse ? 2 : 0) + (upper.empty() ? 0 : 1);
    sqlite3_stmt* stmt = Prepared(kScanBase + (depth_ * 4 + shape) * kTableCount +
                                  static_cast<int>(table));
    if (stmt == nullptr) return PrepareError();
    BindBlob(stmt, 1, lower);
    if (!upper.empty()) BindBlob(stmt, 2, upper);
    ++depth_;  // invariant 2: a visitor's scan takes the next depth's statement
    Status s = Status::OK();
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        s = Fail(rc, "scan");
        break;
      }
      if (!visitor(Column(stmt, 0), Column(stmt, 1))) break;
    }
    --depth_;
    sqlite3_reset(stmt);
    return s;
  }

 private:
  // The statements, by index: the fixed ones, then four per table, then the scans by depth,
  // shape (reverse, bounded) and table.
  enum : int { kBeginImmediate, kBeginDeferred, kCommit, kRollback, kFixedCount };
  enum Op : int { kGet, kInsert, kUpdate, kDelete };
  static constexpr int kScanBase = kFixedCount + 4 * kTableCount;
  static constexpr int kStatementCount = kScanBase + kMaxScanDepth * 4 * kTableCount;
  static int Index(Op op, TableId table) {
    return kFixedCount + op * kTableCount + static_cast<int>(table);
  }

  static std::string Sql(int index) {
    switch (index) {
      case kBeginImmediate: return "BEGIN IMMEDIATE";
      case kBeginDeferred: return "BEGIN";
      case kCommit: return "COMMIT";
      case kRollback: return "ROLLBACK";
    }
    if (index < kScanBase) {
      const int op = (index - kFixedCount) / kTableCount;
      const std::string t = Quoted(static_cast<TableId>((index - kFixedCount) % kTableCount));
      switch (op) {
        case kGet: return "SELECT v FROM " + t + " WHERE k = ?1";
        case kInsert: return "INSERT INTO " + t + "(k, v) VALUES (?1, ?2)";
        case kUpdate: return "UPDATE " + t + " SET v = ?2 WHERE k = ?1";
        default: return "DELETE FROM " + t + " WHERE k = ?1";
      }
    }
    const int shape = ((index - kScanBase) / kTableCount) % 4;
    const std::string t = Quoted(static_cast<TableId>((index - kScanBase) % kTableCount));
    return "SELECT k, v FROM " + t + " WHERE k >= ?1" + ((shape & 1) ? " AND k < ?2" : "") +
           " ORDER BY k" + ((shape & 2) ? " DESC" : "");
  }

  // The statement of `index`, prepared at its first use; nullptr if that failed (prepare_).
  sqlite3_stmt* Prepared(int index) {
    SM_DASSERT(index >= 0 && index < kStatementCount);
    if (statements_.empty()) statements_.assign(kStatementCount, nullptr);
    sqlite3_stmt*& stmt = statements_[index];
    if (stmt != nullptr || db_ == nullptr) return stmt;
    const std::string sql = Sql(index);
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      prepare_ = Error(db_, rc, sql.c_str());
      stmt = nullptr;
    }
    return stmt;
  }
  Status PrepareError() {
    if (!open_.ok()) return open_;
    Status s = std::move(prepare_);
    return s.ok() ? Status::IOError("sqlite: statement not prepared") : s;
  }

  Status Fail(int rc, const char* what) {
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
      counters_->busy.fetch_add(1, std::memory_order_relaxed);
    }
    return Error(db_, rc, what);
  }

  // Runs a statement without rows (begin, commit, rollback).
  Status Step(sqlite3_stmt* stmt, const char* what) {
    if (stmt == nullptr) return PrepareError();
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    return rc == SQLITE_DONE ? Status::OK() : Fail(rc, what);
  }

  static bool Weaker(ForeignCommit a, ForeignCommit b) {
    auto rank = [](ForeignCommit c) { return c == ForeignCommit::kDurable ? 2 : c == ForeignCommit::kAsync ? 1 : 0; };
    return rank(a) < rank(b);
  }

  Status SetSync(ForeignCommit commit) {
    if (sync_ == commit || settings_->options.read_only) return Status::OK();
    SM_TRY(Exec(db_, SyncPragma(commit)));
    sync_ = commit;
    return Status::OK();
  }

  // Makes every commit so far durable: a checkpoint under synchronous=FULL syncs the WAL
  // before it copies it into the database, and the database after.
  Status SyncWal() {
    const ForeignCommit was = sync_;
    SM_TRY(SetSync(ForeignCommit::kDurable));
    Status s = Exec(db_, "PRAGMA wal_checkpoint(FULL)");
    Status restore = SetSync(was);
    if (s.ok()) return restore;
    restore.PermitUnchecked();  // the checkpoint's error is the one to report
    return s;
  }

  Status Write(int index, std::string_view key, std::string_view value, const char* what) {
    if (settings_->options.read_only) return Status::NotSupported("the database is open read-only");
    sqlite3_stmt* stmt = Prepared(index);
    if (stmt == nullptr) return PrepareError();
    BindBlob(stmt, 1, key);
    if (sqlite3_bind_parameter_count(stmt) >= 2) BindBlob(stmt, 2, value);
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    if (rc == SQLITE_DONE) return Status::OK();
    return Fail(rc, what);
  }

  const Settings* const settings_;
  Counters* const counters_;
  sqlite3* db_ = nullptr;
  Status open_;     // the connection's open: a failure is reported by Begin
  Status prepare_;  // the last failed prepare
  std::vector<sqlite3_stmt*> statements_;
  ForeignCommit sync_;      // the connection's synchronous setting
  bool bulk_hint_ = false;  // the last commit was CommitKind::kBulk
  bool active_ = false;
  int depth_ = 0;  // scans in progress (nested in visitors)
};

class SqliteEngine final : public Engine {
 public:
  SqliteEngine(Settings settings, sqlite3* admin)
      : settings_(std::move(settings)), admin_(admin), threads_(settings_.options.workers) {}
  ~SqliteEngine() override { Close().PermitUnchecked(); }

  std::string Describe() const override {
    static constexpr const char* kSync[] = {"FULL", "NORMAL", "OFF"};
    return std::string("sqlite ") + sqlite3_libversion() + " (WAL, synchronous " +
           kSync[static_cast<int>(settings_.options.commit)] + ", cache " +
           std::to_string(settings_.options.cache_bytes / settings_.options.workers >> 20) +
           " MiB per connection, " + std::to_string(threads_.workers()) + " worker threads)";
  }

  Status OpenSchema(Schema schema, bool create, bool* created) override {
    *created = false;
    for (int i = 0; i < kTableCount; ++i) {
      const auto id = static_cast<TableId>(i);
      if (!InSchema(id, schema)) continue;
      sqlite3_stmt* stmt = nullptr;
      const char* sql = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1";
      int rc = sqlite3_prepare_v2(admin_, sql, -1, &stmt, nullptr);
      if (rc != SQLITE_OK) return Error(admin_, rc, sql);
      sqlite3_bind_text(stmt, 1, TableName(id), -1, SQLITE_STATIC);
      rc = sqlite3_step(stmt);
      sqlite3_finalize(stmt);
      if (rc == SQLITE_ROW) continue;
      if (rc != SQLITE_DONE) return Error(admin_, rc, "reading the schema");
      if (!create) return Status::NotFound(std::string("no table ") + TableName(id));
      SM_TRY(Exec(admin_, ("CREATE TABLE " + Quoted(id) +
                           "(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
                              .c_str()));
      *created = true;
    }
    return Status::OK();
  }

  std::unique_ptr<EngineTxn> NewTxn() override {
    return std::make_unique<SqliteTxn>(&settings_, &counters_);
  }

  // Copies the WAL into the database and empties it, syncing both (the admin connection runs
  // with synchronous=FULL).
  Status Checkpoint() override {
    if (settings_.options.read_only) return Status::OK();
    return Exec(admin_, "PRAGMA wal_checkpoint(TRUNCATE)");
  }

  Status Verify() override {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(admin_, "PRAGMA quick_check", -1, &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(admin_, rc, "quick_check");
    rc = sqlite3_step(stmt);
    std::string result = rc == SQLITE_ROW ? std::string(Column(stmt, 0)) : "";
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW) return Error(admin_, rc, "quick_check");
    return result == "ok" ? Status::OK() : Status::Corruption("sqlite quick_check: " + result);
  }

  EngineStats Stats() override {
    EngineStats s;
    s.txn_committed = counters_.committed.load(std::memory_order_relaxed);
    s.txn_aborted = counters_.aborted.load(std::memory_order_relaxed);
    s.lock_timeouts = counters_.busy.load(std::memory_order_relaxed);
    return s;
  }

  Status Spawn(std::function<void()> fn, int worker) override {
    return threads_.Spawn(std::move(fn), worker);
  }
  unsigned workers() const override { return threads_.workers(); }

  Status Close() override {
    threads_.Stop();
    if (admin_ == nullptr) return Status::OK();
    Status s = Status::OK();
    if (!settings_.options.read_only) s = Checkpoint();
    int rc = sqlite3_close(admin_);  // fails while a terminal's connection is open: a caller bug
    admin_ = nullptr;
    if (rc != SQLITE_OK && s.ok()) return Error(nullptr, rc, "close");
    return s;
  }

 private:
  const Settings settings_;
  sqlite3* admin_;  // OpenSchema, Checkpoint, Verify and Close: used when no terminal runs
  Counters counters_;
  WorkerThreads threads_;
};

}  // namespace

Status OpenSqliteEngine(const ForeignEngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (options.workers == 0) return Status::InvalidArgument("sqlite: no workers");
  Settings settings{options.path + "/" + kFileName, options};
  std::error_code error;
  if (options.create) {
    std::filesystem::create_directories(options.path, error);
    if (error) return Status::IOError("sqlite: cannot make " + options.path + ": " + error.message());
  } else if (!std::filesystem::exists(settings.file, error)) {
    return Status::NotFound("no sqlite database at " + options.path);
  }
  // The admin connection syncs fully: its checkpoints are what make a load durable.
  Settings admin_settings = settings;
  admin_settings.options.commit = ForeignCommit::kDurable;
  sqlite3* admin = nullptr;
  SM_TRY(OpenConnection(admin_settings, options.create, &admin));
  Status s = Status::OK();
  if (!options.read_only) {
    // page_size applies to a new database only (before its first table); WAL persists.
    s = Exec(admin, ("PRAGMA page_size=" + std::to_string(kPageBytes)).c_str());
    if (s.ok()) s = Exec(admin, "PRAGMA journal_mode=WAL");
  }
  if (!s.ok()) {
    sqlite3_close(admin);
    return s;
  }
  *engine = std::make_unique<SqliteEngine>(std::move(settings), admin);
  return Status::OK();
}

}  // namespace sm::tpcc
