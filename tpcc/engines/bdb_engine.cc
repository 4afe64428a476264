// The Berkeley DB adapter: see bdb_engine.h.
#include "tpcc/engines/bdb_engine.h"

#include <db.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "sm/common/assert.h"
#include "tpcc/engines/periodic_sync.h"
#include "tpcc/engines/worker_threads.h"

namespace sm::tpcc {
namespace {

// The lock table: a loader batch locks the pages of tens of thousands of rows.
constexpr uint32_t kMaxLocks = 200000;
constexpr uint32_t kPageBytes = 8192;  // our page size, so that both trees have the same fan-out

Status Error(int rc, const char* what) {
  const std::string msg = std::string("bdb: ") + what + ": " + db_strerror(rc);
  switch (rc) {
    case DB_NOTFOUND: return Status::NotFound(msg);
    case DB_KEYEXIST: return Status::Duplicate(msg);
    case DB_LOCK_DEADLOCK: return Status::Deadlock(msg);
    case DB_LOCK_NOTGRANTED: return Status::LockTimeout(msg);
    case DB_RUNRECOVERY: return Status::Fatal(msg);
    case ENOSPC: return Status::NoSpace(msg);
    case ENOMEM: return Status::Busy(msg);
    default: return Status::IOError(msg);
  }
}

// A DBT over bytes the caller owns (an input).
DBT In(std::string_view bytes) {
  DBT d;
  std::memset(&d, 0, sizeof d);
  d.data = const_cast<char*>(bytes.data());
  d.size = static_cast<u_int32_t>(bytes.size());
  return d;
}

// A DBT that Berkeley DB fills with malloc'ed memory, kept and grown from read to read
// (invariant 3).
struct OutDbt {
  DBT dbt;
  OutDbt() {
    std::memset(&dbt, 0, sizeof dbt);
    dbt.flags = DB_DBT_REALLOC;
  }
  ~OutDbt() { std::free(dbt.data); }
  OutDbt(const OutDbt&) = delete;
  OutDbt& operator=(const OutDbt&) = delete;
  std::string_view view() const { return std::string_view(static_cast<const char*>(dbt.data), dbt.size); }
};

struct Shared {
  ForeignEngineOptions options;
  DB_ENV* env = nullptr;
  std::array<DB*, kTableCount> db{};
  std::atomic<uint64_t> committed{0}, aborted{0};  // relaxed: statistics
};

class BdbTxn final : public EngineTxn {
 public:
  explicit BdbTxn(Shared* shared) : sh_(shared) {}
  ~BdbTxn() override {
    if (txn_ != nullptr) Abort().PermitUnchecked();  // the destructor's contract: abort
  }

  Status Begin(TxnIsolation isolation) override {
    if (txn_ != nullptr) return Status::InvalidArgument("Begin on an active transaction");
    const u_int32_t flags = isolation == TxnIsolation::kReadCommitted ? DB_READ_COMMITTED : 0;
    int rc = sh_->env->txn_begin(sh_->env, nullptr, &txn_, flags);
    if (rc != 0) {
      txn_ = nullptr;
      return Error(rc, "begin");
    }
    return Status::OK();
  }

  Status Commit(CommitKind kind) override {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    const u_int32_t flags = kind == CommitKind::kBulk      ? DB_TXN_NOSYNC
                            : kind == CommitKind::kDurable ? DB_TXN_SYNC
                                                           : 0;  // as the environment is set
    int rc = txn_->commit(txn_, flags);  // frees the handle, committed or not
    txn_ = nullptr;
    if (rc != 0) {
      sh_->aborted.fetch_add(1, std::memory_order_relaxed);
      return Error(rc, "commit");
    }
    sh_->committed.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }

  Status Abort() override {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    int rc = txn_->abort(txn_);
    txn_ = nullptr;
    sh_->aborted.fetch_add(1, std::memory_order_relaxed);
    return rc == 0 ? Status::OK() : Error(rc, "abort");
  }

  bool active() const override { return txn_ != nullptr; }

  Status Get(TableId table, std::string_view key, std::string* value) override {
    return Read(table, key, value, 0);
  }

  Status GetForUpdate(TableId table, std::string_view key, std::string* value) override {
    return Read(table, key, value, DB_RMW);
  }

  Status GetMany(TableId table, const std::vector<std::string_view>& keys, bool for_update,
                 RowVisitor visit) override {
    std::string value;
    for (size_t i = 0; i < keys.size(); ++i) {
      Status s = Read(table, keys[i], &value, for_update ? DB_RMW : 0);
      if (s.IsNotFound()) continue;
      SM_TRY(std::move(s));
      if (!visit(i, value)) break;
    }
    return Status::OK();
  }

  Status Insert(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Writable());
    DBT k = In(key), v = In(value);
    int rc = Db(table)->put(Db(table), txn_, &k, &v, DB_NOOVERWRITE);
    if (rc == DB_KEYEXIST) return Status::Duplicate();
    return rc == 0 ? Status::OK() : Error(rc, "insert");
  }

  Status Update(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Writable());
    SM_TRY(Read(table, key, nullptr, DB_RMW));
    DBT k = In(key), v = In(value);
    int rc = Db(table)->put(Db(table), txn_, &k, &v, 0);
    return rc == 0 ? Status::OK() : Error(rc, "update");
  }

  Status Delete(TableId table, std::string_view key) override {
    SM_TRY(Writable());
    DBT k = In(key);
    int rc = Db(table)->del(Db(table), txn_, &k, 0);
    if (rc == DB_NOTFOUND) return Status::NotFound();
    return rc == 0 ? Status::OK() : Error(rc, "delete");
  }

  Status Add(TableId table, std::string_view key, uint32_t offset, int64_t delta,
             std::string* value) override {
    SM_TRY(Read(table, key, value, DB_RMW));
    if (offset + sizeof(int64_t) > value->size()) {
      return Status::InvalidArgument("Add beyond the end of the row");
    }
    int64_t n = 0;
    std::memcpy(&n, value->data() + offset, sizeof n);
    n += delta;
    std::memcpy(value->data() + offset, &n, sizeof n);
    SM_TRY(Writable());
    DBT k = In(key), v = In(*value);
    int rc = Db(table)->put(Db(table), txn_, &k, &v, 0);
    return rc == 0 ? Status::OK() : Error(rc, "add");
  }

  Status Scan(TableId table, std::string_view lower, std::string_view upper, bool reverse,
              ScanVisitor visitor) override {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    DBC* cursor = nullptr;  // invariant 2: this scan's own
    int rc = Db(table)->cursor(Db(table), txn_, &cursor, 0);
    if (rc != 0) return Error(rc, "cursor");
    OutDbt k, v;
    if (!reverse) {
      rc = Position(cursor, lower, &k, &v, DB_FIRST);
    } else {
      rc = Position(cursor, upper, &k, &v, DB_LAST);
      if (!upper.empty()) {
        // At the first key >= upper, the one before it; with none >= upper, the last key.
        rc = rc == 0 ? cursor->get(cursor, &k.dbt, &v.dbt, DB_PREV)
             : rc == DB_NOTFOUND ? cursor->get(cursor, &k.dbt, &v.dbt, DB_LAST)
                                 : rc;
      }
    }
    while (rc == 0) {
      const std::string_view key = k.view();
      if (!reverse && !upper.empty() && key >= upper) break;
      if (reverse && key < lower) break;
      if (!visitor(key, v.view())) break;
      rc = cursor->get(cursor, &k.dbt, &v.dbt, reverse ? DB_PREV : DB_NEXT);
    }
    int close = cursor->close(cursor);
    if (rc != 0 && rc != DB_NOTFOUND) return Error(rc, "scan");
    return close == 0 ? Status::OK() : Error(close, "cursor close");
  }

 private:
  DB* Db(TableId table) const { return sh_->db[static_cast<int>(table)]; }

  Status Writable() const {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    if (!sh_->options.read_only) return Status::OK();
    return Status::NotSupported("bdb: the database was opened for reading only");
  }

  // The cursor at the first key >= `at` (DB_SET_RANGE), or at `otherwise` if `at` is empty.
  static int Position(DBC* cursor, std::string_view at, OutDbt* k, OutDbt* v, u_int32_t otherwise) {
    if (at.empty()) return cursor->get(cursor, &k->dbt, &v->dbt, otherwise);
    // DB_SET_RANGE reads the key from the DBT and writes the found key into it.
    k->dbt.data = std::realloc(k->dbt.data, at.size());
    std::memcpy(k->dbt.data, at.data(), at.size());
    k->dbt.size = static_cast<u_int32_t>(at.size());
    return cursor->get(cursor, &k->dbt, &v->dbt, DB_SET_RANGE);
  }

  // value == nullptr: only the lock (and whether the row exists).
  Status Read(TableId table, std::string_view key, std::string* value, u_int32_t flags) {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    if (sh_->options.read_only) flags &= ~DB_RMW;
    DBT k = In(key);
    int rc = Db(table)->get(Db(table), txn_, &k, &value_.dbt, flags);
    if (rc == DB_NOTFOUND) return Status::NotFound();
    if (rc != 0) return Error(rc, "get");
    if (value != nullptr) value->assign(value_.view());
    return Status::OK();
  }

  Shared* const sh_;
  DB_TXN* txn_ = nullptr;
  OutDbt value_;  // point reads' buffer
};

class BdbEngine final : public Engine {
 public:
  explicit BdbEngine(std::unique_ptr<Shared> shared)
      : sh_(std::move(shared)), threads_(sh_->options.workers) {
    if (sh_->options.commit == ForeignCommit::kAsync && !sh_->options.read_only) {
      DB_ENV* env = sh_->env;
      sync_.emplace([env] {
        int rc = env->log_flush(env, nullptr);
        return rc == 0 ? Status::OK() : Error(rc, "log flush");
      });
    }
  }
  ~BdbEngine() override { Close().PermitUnchecked(); }

  std::string Describe() const override {
    static constexpr const char* kSync[] = {"log synced at commit",
                                            "DB_TXN_WRITE_NOSYNC + periodic log flush",
                                            "DB_TXN_NOSYNC"};
    int major = 0, minor = 0, patch = 0;
    db_version(&major, &minor, &patch);
    return "bdb " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + " (transactional B-trees, " +
           kSync[static_cast<int>(sh_->options.commit)] + ", cache " +
           std::to_string(sh_->options.cache_bytes >> 20) + " MiB, " +
           std::to_string(threads_.workers()) + " worker threads)";
  }

  Status OpenSchema(Schema schema, bool create, bool* created) override {
    *created = false;
    for (int i = 0; i < kTableCount; ++i) {
      if (sh_->db[i] != nullptr || !InSchema(static_cast<TableId>(i), schema)) continue;
      const std::string file = std::string(TableName(static_cast<TableId>(i))) + ".db";
      std::error_code error;
      const bool exists = std::filesystem::exists(sh_->options.path + "/" + file, error);
      if (!exists && (!create || sh_->options.read_only)) {
        return Status::NotFound(std::string("no table ") + TableName(static_cast<TableId>(i)));
      }
      DB* db = nullptr;
      int rc = db_create(&db, sh_->env, 0);
      if (rc != 0) return Error(rc, "db_create");
      if (!exists) db->set_pagesize(db, kPageBytes);
      rc = db->open(db, nullptr, file.c_str(), nullptr, DB_BTREE,
                    DB_THREAD | DB_AUTO_COMMIT | (exists ? 0 : DB_CREATE), 0644);
      if (rc != 0) {
        db->close(db, 0);
        return Error(rc, "opening a table");
      }
      sh_->db[i] = db;  // invariant 1
      *created = *created || !exists;
    }
    return Status::OK();
  }

  std::unique_ptr<EngineTxn> NewTxn() override { return std::make_unique<BdbTxn>(sh_.get()); }

  // Flushes the log and the cache's dirty pages and writes a checkpoint record, so that
  // recovery starts here; the log files before it are removed (DB_LOG_AUTO_REMOVE).
  Status Checkpoint() override {
    if (sh_->options.read_only) return Status::OK();
    int rc = sh_->env->txn_checkpoint(sh_->env, 0, 0, DB_FORCE);
    return rc == 0 ? Status::OK() : Error(rc, "checkpoint");
  }

  Status Verify() override { return Status::OK(); }  // DB->verify needs the handle closed

  EngineStats Stats() override {
    EngineStats s;
    s.txn_committed = sh_->committed.load(std::memory_order_relaxed);
    s.txn_aborted = sh_->aborted.load(std::memory_order_relaxed);
    DB_LOG_STAT* log = nullptr;
    if (sh_->env->log_stat(sh_->env, &log, 0) == 0) {
      s.log_bytes = uint64_t(log->st_w_mbytes) * (1u << 20) + log->st_w_bytes;
      s.log_syncs = log->st_scount;
      std::free(log);
    }
    DB_LOCK_STAT* lock = nullptr;
    if (sh_->env->lock_stat(sh_->env, &lock, 0) == 0) {
      s.lock_requests = lock->st_nrequests;
      s.lock_waits = lock->st_lock_wait;
      s.deadlocks = lock->st_ndeadlocks;
      s.lock_timeouts = lock->st_nlocktimeouts;
      std::free(lock);
    }
    DB_MPOOL_STAT* pool = nullptr;
    if (sh_->env->memp_stat(sh_->env, &pool, nullptr, 0) == 0) {
      s.pool_hits = pool->st_cache_hit;
      s.pool_misses = pool->st_cache_miss;
      s.pool_writes = pool->st_page_out;
      s.pool_dirty_pages = pool->st_page_dirty;
      std::free(pool);
    }
    return s;
  }

  Status Spawn(std::function<void()> fn, int worker) override {
    return threads_.Spawn(std::move(fn), worker);
  }
  unsigned workers() const override { return threads_.workers(); }

  Status Close() override {
    threads_.Stop();
    if (sh_->env == nullptr) return Status::OK();
    Status s = sync_ ? sync_->Stop() : Status::OK();
    Status c = Checkpoint();
    if (s.ok()) s = std::move(c);
    c.PermitUnchecked();
    for (DB*& db : sh_->db) {
      if (db == nullptr) continue;
      int rc = db->close(db, 0);
      if (rc != 0 && s.ok()) s = Error(rc, "closing a table");
      db = nullptr;
    }
    int rc = sh_->env->close(sh_->env, 0);
    sh_->env = nullptr;
    if (rc != 0 && s.ok()) s = Error(rc, "closing the environment");
    return s;
  }

 private:
  std::unique_ptr<Shared> sh_;
  WorkerThreads threads_;
  std::optional<PeriodicSync> sync_;
};

}  // namespace

Status OpenBdbEngine(const ForeignEngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (options.workers == 0) return Status::InvalidArgument("bdb: no workers");
  std::error_code error;
  if (options.create) {
    std::filesystem::create_directories(options.path, error);
    if (error) return Status::IOError("bdb: cannot make " + options.path + ": " + error.message());
  } else if (!std::filesystem::exists(options.path + "/__db.001", error) &&
             !std::filesystem::exists(options.path + "/tpcc.meta.db", error)) {
    return Status::NotFound("no bdb database at " + options.path);
  }
  auto shared = std::make_unique<Shared>();
  shared->options = options;
  DB_ENV* env = nullptr;
  int rc = db_env_create(&env, 0);
  if (rc != 0) return Error(rc, "db_env_create");
  shared->env = env;
  rc = env->set_cachesize(env, static_cast<u_int32_t>(options.cache_bytes >> 30),
                          static_cast<u_int32_t>(options.cache_bytes & ((1u << 30) - 1)), 1);
  if (rc == 0) rc = env->set_lk_detect(env, DB_LOCK_DEFAULT);
  if (rc == 0) {
    const uint64_t timeout_us = std::min<uint64_t>(options.lock_timeout_ms * 1000, UINT32_MAX);
    rc = env->set_timeout(env, static_cast<db_timeout_t>(timeout_us), DB_SET_LOCK_TIMEOUT);
  }
  if (rc == 0) rc = env->set_lk_max_locks(env, kMaxLocks);
  if (rc == 0) rc = env->set_lk_max_objects(env, kMaxLocks);
  if (rc == 0) rc = env->set_lg_bsize(env, 8u << 20);  // our --log-buffer default
  if (rc == 0 && options.commit == ForeignCommit::kAsync) {
    rc = env->set_flags(env, DB_TXN_WRITE_NOSYNC, 1);
  }
  if (rc == 0 && options.commit == ForeignCommit::kNone) rc = env->set_flags(env, DB_TXN_NOSYNC, 1);
  if (rc == 0) rc = env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1);
  const u_int32_t flags = DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
                          DB_THREAD | DB_RECOVER;
  if (rc == 0) rc = env->open(env, options.path.c_str(), flags, 0644);
  if (rc != 0) {
    env->close(env, 0);
    return Error(rc, "open");
  }
  *engine = std::make_unique<BdbEngine>(std::move(shared));
  return Status::OK();
}

}  // namespace sm::tpcc
