// The WiredTiger adapter: see wiredtiger_engine.h.
#include "tpcc/engines/wiredtiger_engine.h"

#include <wiredtiger.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "sm/common/assert.h"
#include "tpcc/engines/periodic_sync.h"
#include "tpcc/engines/worker_threads.h"

namespace sm::tpcc {
namespace {

// A session per EngineTxn (each terminal's, the loader's, the checks'), and a few of its own.
constexpr unsigned kMaxSessions = 4096;
// The longest backoff after write conflicts in a row: 2^10 microseconds.
constexpr int kMaxBackoffShift = 10;
// Conflicts in a row that only yield the processor before the backoff sleeps.
constexpr int kYieldingConflicts = 4;

Status Error(int rc, const char* what) {
  const std::string msg = std::string("wiredtiger: ") + what + ": " + wiredtiger_strerror(rc);
  switch (rc) {
    case WT_NOTFOUND: return Status::NotFound(msg);
    case WT_DUPLICATE_KEY: return Status::Duplicate(msg);
    case WT_ROLLBACK: return Status::Deadlock(msg);
    case WT_PANIC: return Status::Fatal(msg);
    case ENOSPC: return Status::NoSpace(msg);
    default: return Status::IOError(msg);
  }
}

// WiredTiger's URI of a table: its name with '_' for '.', which names its file.
std::string Uri(TableId table) {
  std::string name = TableName(table);
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return "table:" + name;
}

WT_ITEM Item(std::string_view bytes) {
  WT_ITEM item;
  std::memset(&item, 0, sizeof item);
  item.data = bytes.data();
  item.size = bytes.size();
  return item;
}
std::string_view View(const WT_ITEM& item) {
  return std::string_view(static_cast<const char*>(item.data), item.size);
}

struct Shared {
  ForeignEngineOptions options;
  WT_CONNECTION* conn = nullptr;
};

class WiredTigerTxn final : public EngineTxn {
 public:
  explicit WiredTigerTxn(Shared* shared) : sh_(shared) {
    open_ = Check(sh_->conn->open_session(sh_->conn, nullptr, nullptr, &session_), "session");
    if (!open_.ok()) session_ = nullptr;
  }
  ~WiredTigerTxn() override {
    if (active_) Abort().PermitUnchecked();  // the destructor's contract: abort
    open_.PermitUnchecked();
    if (session_ != nullptr) session_->close(session_, nullptr);  // closes its cursors
  }

  Status Begin(TxnIsolation isolation) override {
    if (!open_.ok()) return open_;
    if (active_) return Status::InvalidArgument("Begin on an active transaction");
    const char* config = isolation == TxnIsolation::kSerializable ? "isolation=snapshot"
                                                                  : "isolation=read-committed";
    SM_TRY(Check(session_->begin_transaction(session_, config), "begin"));
    active_ = true;
    return Status::OK();
  }

  Status Commit(CommitKind kind) override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    const char* config = kind == CommitKind::kBulk      ? "sync=off"
                         : kind == CommitKind::kDurable ? "sync=on"
                                                        : nullptr;  // transaction_sync
    active_ = false;  // a failed commit rolls the transaction back
    conflict_streak_ = 0;
    return Check(session_->commit_transaction(session_, config), "commit");
  }

  Status Abort() override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    active_ = false;
    Status s = Check(session_->rollback_transaction(session_, nullptr), "rollback");
    // A conflict does not wait for the transaction it lost to, and the driver retries at
    // once: back off exponentially, as MongoDB's write-conflict retry loop does over
    // WiredTiger, so that the retries give the winner time to commit.
    if (conflicted_) {
      conflict_streak_ = std::min(conflict_streak_ + 1, kMaxBackoffShift);
      if (conflict_streak_ <= kYieldingConflicts) {
        std::this_thread::yield();  // the winner is often about to commit
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(int64_t{1} << conflict_streak_));
      }
    } else {
      conflict_streak_ = 0;
    }
    conflicted_ = false;
    return s;
  }

  bool active() const override { return active_; }

  Status Get(TableId table, std::string_view key, std::string* value) override {
    WT_CURSOR* c = nullptr;
    SM_TRY(Cursor(table, &c));
    WT_ITEM k = Item(key), v;
    c->set_key(c, &k);
    int rc = c->search(c);
    if (rc == 0) rc = c->get_value(c, &v);
    if (rc == 0) value->assign(static_cast<const char*>(v.data), v.size);
    c->reset(c);
    if (rc == WT_NOTFOUND) return Status::NotFound();
    return Check(rc, "get");
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
    return Write(table, key, &value, /*insert=*/true);
  }

  Status Update(TableId table, std::string_view key, std::string_view value) override {
    return Write(table, key, &value, /*insert=*/false);
  }

  Status Delete(TableId table, std::string_view key) override {
    return Write(table, key, nullptr, /*insert=*/false);
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
    if (!active_) return Status::InvalidArgument("no active transaction");
    // Invariant 3: scans have cursors of their own, apart from the point operations' (which
    // a visitor may call), and a visitor's scan opens one more.
    const bool nested = scanning_;
    WT_CURSOR*& own = scan_cursors_[static_cast<int>(table)];
    WT_CURSOR* c = nested ? nullptr : own;
    if (c == nullptr) {
      SM_TRY(Check(session_->open_cursor(session_, Uri(table).c_str(), nullptr, nullptr, &c),
                   "cursor"));
      if (!nested) own = c;
    }
    scanning_ = true;
    int rc = reverse ? Last(c, upper) : First(c, lower);
    WT_ITEM k, v;
    while (rc == 0) {
      rc = c->get_key(c, &k);
      if (rc == 0) rc = c->get_value(c, &v);
      if (rc != 0) break;
      const std::string_view key = View(k);
      if (!reverse && !upper.empty() && key >= upper) break;
      if (reverse && key < lower) break;
      if (!visitor(key, View(v))) break;
      rc = reverse ? c->prev(c) : c->next(c);
    }
    scanning_ = nested;
    if (nested) {
      c->close(c);
    } else {
      c->reset(c);
    }
    return rc == WT_NOTFOUND ? Status::OK() : Check(rc, "scan");
  }

 private:
  Status Check(int rc, const char* what) {
    if (rc == 0) return Status::OK();
    conflicted_ = conflicted_ || rc == WT_ROLLBACK;
    return Error(rc, what);
  }

  // The session's cursor on `table`, opened at its first use (invariant 1).
  Status Cursor(TableId table, WT_CURSOR** out) {
    if (!active_) return Status::InvalidArgument("no active transaction");
    WT_CURSOR*& c = cursors_[static_cast<int>(table)];
    if (c == nullptr) {
      SM_TRY(Check(session_->open_cursor(session_, Uri(table).c_str(), nullptr,
                                         "overwrite=false", &c),
                   "cursor"));
    }
    *out = c;
    return Status::OK();
  }

  // Positions c at the first key >= lower (0), or says there is none (WT_NOTFOUND).
  static int First(WT_CURSOR* c, std::string_view lower) {
    if (lower.empty()) return c->next(c);  // a reset cursor's next is the first key
    WT_ITEM k = Item(lower);
    c->set_key(c, &k);
    int exact = 0;
    int rc = c->search_near(c, &exact);
    if (rc == 0 && exact < 0) rc = c->next(c);
    return rc;
  }

  // Positions c at the last key < upper (any key if upper is empty).
  static int Last(WT_CURSOR* c, std::string_view upper) {
    if (upper.empty()) return c->prev(c);  // a reset cursor's prev is the last key
    WT_ITEM k = Item(upper);
    c->set_key(c, &k);
    int exact = 0;
    int rc = c->search_near(c, &exact);
    if (rc == 0 && exact >= 0) rc = c->prev(c);
    return rc;
  }

  Status Write(TableId table, std::string_view key, const std::string_view* value, bool insert) {
    if (sh_->options.read_only) return Status::NotSupported("the database is open read-only");
    WT_CURSOR* c = nullptr;
    SM_TRY(Cursor(table, &c));
    WT_ITEM k = Item(key);
    c->set_key(c, &k);
    int rc = 0;
    if (value == nullptr) {
      rc = c->remove(c);
    } else {
      WT_ITEM v = Item(*value);
      c->set_value(c, &v);
      rc = insert ? c->insert(c) : c->update(c);
    }
    c->reset(c);
    if (rc == WT_NOTFOUND) return Status::NotFound();
    if (rc == WT_DUPLICATE_KEY) return Status::Duplicate();
    return Check(rc, insert ? "insert" : value == nullptr ? "remove" : "update");
  }

  Shared* const sh_;
  WT_SESSION* session_ = nullptr;
  Status open_;  // the session's open: a failure is reported by Begin
  std::array<WT_CURSOR*, kTableCount> cursors_{};       // point reads and writes
  std::array<WT_CURSOR*, kTableCount> scan_cursors_{};  // scans that are not nested
  bool active_ = false;
  bool scanning_ = false;  // the cursor of a table is in a scan (a visitor is running)
  bool conflicted_ = false;  // this transaction met a write conflict (WT_ROLLBACK)
  int conflict_streak_ = 0;  // transactions in a row that ended in a conflict
};

class WiredTigerEngine final : public Engine {
 public:
  WiredTigerEngine(std::unique_ptr<Shared> shared, WT_SESSION* admin)
      : sh_(std::move(shared)), admin_(admin), threads_(sh_->options.workers) {
    if (sh_->options.commit == ForeignCommit::kAsync && !sh_->options.read_only) {
      WT_CONNECTION* conn = sh_->conn;
      sync_.emplace([conn, session = static_cast<WT_SESSION*>(nullptr)]() mutable {
        // The sync thread's own session (a session is used by one thread at a time).
        if (session == nullptr) {
          int rc = conn->open_session(conn, nullptr, nullptr, &session);
          if (rc != 0) return Error(rc, "session");
        }
        int rc = session->log_flush(session, "sync=on");
        return rc == 0 ? Status::OK() : Error(rc, "log flush");
      });
    }
  }
  ~WiredTigerEngine() override { Close().PermitUnchecked(); }

  std::string Describe() const override {
    static constexpr const char* kSync[] = {"log synced at commit", "log synced periodically",
                                            "log not synced"};
    int major = 0, minor = 0, patch = 0;
    wiredtiger_version(&major, &minor, &patch);
    return "wiredtiger " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + " (row store, snapshot isolation for serializable, " +
           kSync[static_cast<int>(sh_->options.commit)] + ", cache " +
           std::to_string(sh_->options.cache_bytes >> 20) + " MiB, " +
           std::to_string(threads_.workers()) + " worker threads)";
  }

  Status OpenSchema(Schema schema, bool create, bool* created) override {
    *created = false;
    for (int i = 0; i < kTableCount; ++i) {
      if (!InSchema(static_cast<TableId>(i), schema)) continue;
      const std::string uri = Uri(static_cast<TableId>(i));
      WT_CURSOR* c = nullptr;
      int rc = admin_->open_cursor(admin_, uri.c_str(), nullptr, nullptr, &c);
      if (rc == 0) {
        c->close(c);
        continue;
      }
      if (!create || sh_->options.read_only) {
        return Status::NotFound(std::string("no table ") + TableName(static_cast<TableId>(i)));
      }
      rc = admin_->create(admin_, uri.c_str(), "key_format=u,value_format=u");
      if (rc != 0) return Error(rc, "create table");
      *created = true;
    }
    return Status::OK();
  }

  std::unique_ptr<EngineTxn> NewTxn() override {
    return std::make_unique<WiredTigerTxn>(sh_.get());
  }

  Status Checkpoint() override {
    if (sh_->options.read_only) return Status::OK();
    int rc = admin_->checkpoint(admin_, nullptr);
    if (rc == 0) rc = admin_->log_flush(admin_, "sync=on");
    return rc == 0 ? Status::OK() : Error(rc, "checkpoint");
  }

  Status Verify() override { return Status::OK(); }  // WT_SESSION::verify needs the tables idle

  EngineStats Stats() override {
    EngineStats s;
    WT_CURSOR* c = nullptr;
    if (admin_->open_cursor(admin_, "statistics:", nullptr, "statistics=(fast)", &c) != 0) {
      return s;
    }
    auto read = [c](int key) -> uint64_t {
      c->set_key(c, key);
      const char* desc = nullptr;
      const char* value = nullptr;
      int64_t n = 0;
      if (c->search(c) != 0 || c->get_value(c, &desc, &value, &n) != 0) return 0;
      return n < 0 ? 0 : static_cast<uint64_t>(n);
    };
    s.txn_committed = read(WT_STAT_CONN_TXN_COMMIT);
    s.txn_aborted = read(WT_STAT_CONN_TXN_ROLLBACK);
    s.log_bytes = read(WT_STAT_CONN_LOG_BYTES_WRITTEN);
    s.log_syncs = read(WT_STAT_CONN_LOG_SYNC);
    s.pool_misses = read(WT_STAT_CONN_CACHE_READ);
    s.pool_writes = read(WT_STAT_CONN_CACHE_WRITE);
    const uint64_t requested = read(WT_STAT_CONN_CACHE_PAGES_REQUESTED);
    s.pool_hits = requested > s.pool_misses ? requested - s.pool_misses : 0;
    c->close(c);
    return s;
  }

  Status Spawn(std::function<void()> fn, int worker) override {
    return threads_.Spawn(std::move(fn), worker);
  }
  unsigned workers() const override { return threads_.workers(); }

  Status Close() override {
    threads_.Stop();
    if (sh_->conn == nullptr) return Status::OK();
    Status s = sync_ ? sync_->Stop() : Status::OK();
    sync_.reset();
    // Closing the connection checkpoints every table and closes every session.
    int rc = sh_->conn->close(sh_->conn, nullptr);
    sh_->conn = nullptr;
    admin_ = nullptr;
    if (rc != 0 && s.ok()) return Error(rc, "close");
    return s;
  }

 private:
  std::unique_ptr<Shared> sh_;
  WT_SESSION* admin_;  // OpenSchema, Checkpoint, Stats: the driver's thread
  WorkerThreads threads_;
  std::optional<PeriodicSync> sync_;
};

}  // namespace

Status OpenWiredTigerEngine(const ForeignEngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (options.workers == 0) return Status::InvalidArgument("wiredtiger: no workers");
  std::error_code error;
  if (options.create) {
    std::filesystem::create_directories(options.path, error);
    if (error) {
      return Status::IOError("wiredtiger: cannot make " + options.path + ": " + error.message());
    }
  } else if (!std::filesystem::exists(options.path + "/WiredTiger", error)) {
    return Status::NotFound("no wiredtiger database at " + options.path);
  }
  std::string config = "cache_size=" + std::to_string(options.cache_bytes >> 20) +
                       "MB,log=(enabled=true,archive=true),statistics=(fast),session_max=" +
                       std::to_string(kMaxSessions);
  if (options.create) config += ",create";
  if (options.read_only) config += ",readonly=true";
  config += options.commit == ForeignCommit::kDurable
                ? ",transaction_sync=(enabled=true,method=fsync)"
                : ",transaction_sync=(enabled=false)";
  auto shared = std::make_unique<Shared>();
  shared->options = options;
  int rc = wiredtiger_open(options.path.c_str(), nullptr, config.c_str(), &shared->conn);
  if (rc != 0) return Error(rc, "open");
  WT_SESSION* admin = nullptr;
  rc = shared->conn->open_session(shared->conn, nullptr, nullptr, &admin);
  if (rc != 0) {
    shared->conn->close(shared->conn, nullptr);
    return Error(rc, "session");
  }
  *engine = std::make_unique<WiredTigerEngine>(std::move(shared), admin);
  return Status::OK();
}

}  // namespace sm::tpcc
