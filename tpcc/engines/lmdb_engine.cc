// The LMDB adapter: see lmdb_engine.h.
#include "tpcc/engines/lmdb_engine.h"

#include <lmdb.h>

#include <array>
#include <atomic>
#include <cerrno>
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

// The map's size bounds the database; it is address space, not memory or disk. Where address
// space is scarce (the sanitizers reserve most of it) Open halves it until the map fits, down
// to kMinMapBytes.
constexpr size_t kMapBytes = size_t{1} << 40;
constexpr size_t kMinMapBytes = size_t{1} << 30;
constexpr unsigned kMaxReaders = 1024;  // a reader slot per open read transaction

Status Error(int rc, const char* what) {
  std::string msg = std::string("lmdb: ") + what + ": " + mdb_strerror(rc);
  switch (rc) {
    case MDB_NOTFOUND: return Status::NotFound(msg);
    case MDB_KEYEXIST: return Status::Duplicate(msg);
    case MDB_MAP_FULL: return Status::NoSpace(msg);
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID: return Status::Corruption(msg);
    case MDB_READERS_FULL:
    case MDB_TXN_FULL: return Status::Busy(msg);
    default: return Status::IOError(msg);
  }
}

MDB_val Val(std::string_view bytes) {
  return MDB_val{bytes.size(), const_cast<char*>(bytes.data())};
}
std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

struct Shared {
  ForeignEngineOptions options;
  MDB_env* env = nullptr;
  std::array<MDB_dbi, kTableCount> dbi{};
  std::atomic<uint64_t> committed{0}, aborted{0};  // relaxed: statistics
};

class LmdbTxn final : public EngineTxn {
 public:
  explicit LmdbTxn(Shared* shared) : sh_(shared) {}
  ~LmdbTxn() override {
    if (txn_ != nullptr) Abort().PermitUnchecked();  // the destructor's contract: abort
  }

  Status Begin(TxnIsolation isolation) override {
    if (txn_ != nullptr) return Status::InvalidArgument("Begin on an active transaction");
    read_only_ = isolation == TxnIsolation::kReadCommitted || sh_->options.read_only;
    // A write transaction waits here for the one writer before it (invariant 1).
    int rc = mdb_txn_begin(sh_->env, nullptr, read_only_ ? MDB_RDONLY : 0, &txn_);
    if (rc != 0) {
      txn_ = nullptr;
      return Error(rc, "begin");
    }
    return Status::OK();
  }

  Status Commit(CommitKind kind) override {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    int rc = mdb_txn_commit(txn_);  // frees the transaction, committed or not
    txn_ = nullptr;
    if (rc != 0) {
      sh_->aborted.fetch_add(1, std::memory_order_relaxed);
      return Error(rc, "commit");
    }
    sh_->committed.fetch_add(1, std::memory_order_relaxed);
    if (kind == CommitKind::kDurable && !read_only_ &&
        sh_->options.commit != ForeignCommit::kDurable) {
      rc = mdb_env_sync(sh_->env, 1);
      if (rc != 0) return Error(rc, "sync");
    }
    return Status::OK();
  }

  Status Abort() override {
    if (txn_ == nullptr) return Status::InvalidArgument("no active transaction");
    mdb_txn_abort(txn_);
    txn_ = nullptr;
    sh_->aborted.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }

  bool active() const override { return txn_ != nullptr; }

  Status Get(TableId table, std::string_view key, std::string* value) override {
    SM_TRY(Active());
    MDB_val k = Val(key), v{};
    int rc = mdb_get(txn_, Dbi(table), &k, &v);
    if (rc == MDB_NOTFOUND) return Status::NotFound();
    if (rc != 0) return Error(rc, "get");
    value->assign(static_cast<const char*>(v.mv_data), v.mv_size);
    return Status::OK();
  }

  Status GetForUpdate(TableId table, std::string_view key, std::string* value) override {
    return Get(table, key, value);
  }

  Status GetMany(TableId table, const std::vector<std::string_view>& keys, bool for_update,
                 RowVisitor visit) override {
    SM_TRY(Active());
    for (size_t i = 0; i < keys.size(); ++i) {
      MDB_val k = Val(keys[i]), v{};
      int rc = mdb_get(txn_, Dbi(table), &k, &v);
      if (rc == MDB_NOTFOUND) continue;
      if (rc != 0) return Error(rc, "get");
      if (!visit(i, View(v))) break;
    }
    return Status::OK();
  }

  Status Insert(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Writable());
    MDB_val k = Val(key), v = Val(value);
    int rc = mdb_put(txn_, Dbi(table), &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST) return Status::Duplicate();
    return rc == 0 ? Status::OK() : Error(rc, "insert");
  }

  Status Update(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Writable());
    MDB_val k = Val(key), v{};
    int rc = mdb_get(txn_, Dbi(table), &k, &v);
    if (rc == MDB_NOTFOUND) return Status::NotFound();
    if (rc != 0) return Error(rc, "update");
    v = Val(value);
    rc = mdb_put(txn_, Dbi(table), &k, &v, 0);
    return rc == 0 ? Status::OK() : Error(rc, "update");
  }

  Status Delete(TableId table, std::string_view key) override {
    SM_TRY(Writable());
    MDB_val k = Val(key);
    int rc = mdb_del(txn_, Dbi(table), &k, nullptr);
    if (rc == MDB_NOTFOUND) return Status::NotFound();
    return rc == 0 ? Status::OK() : Error(rc, "delete");
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
    SM_TRY(Active());
    MDB_cursor* cursor = nullptr;  // one per scan: a visitor's scan gets its own
    int rc = mdb_cursor_open(txn_, Dbi(table), &cursor);
    if (rc != 0) return Error(rc, "cursor");
    Status s = reverse ? Backward(cursor, lower, upper, visitor)
                       : Forward(cursor, lower, upper, visitor);
    mdb_cursor_close(cursor);
    return s;
  }

 private:
  Status Active() const {
    return txn_ != nullptr ? Status::OK() : Status::InvalidArgument("no active transaction");
  }
  Status Writable() const {
    SM_TRY(Active());
    if (!read_only_) return Status::OK();
    return Status::NotSupported(
        "lmdb: a read-committed transaction is a read-only snapshot; writes need a "
        "serializable (write) transaction");
  }
  MDB_dbi Dbi(TableId table) const { return sh_->dbi[static_cast<int>(table)]; }

  static Status Forward(MDB_cursor* cursor, std::string_view lower, std::string_view upper,
                        ScanVisitor& visitor) {
    MDB_val k = Val(lower), v{};
    int rc = lower.empty() ? mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
                           : mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);
    while (rc == 0) {
      if (!upper.empty() && View(k) >= upper) return Status::OK();
      if (!visitor(View(k), View(v))) return Status::OK();
      rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    return rc == MDB_NOTFOUND ? Status::OK() : Error(rc, "scan");
  }

  static Status Backward(MDB_cursor* cursor, std::string_view lower, std::string_view upper,
                         ScanVisitor& visitor) {
    MDB_val k = Val(upper), v{};
    int rc = 0;
    if (upper.empty()) {
      rc = mdb_cursor_get(cursor, &k, &v, MDB_LAST);
    } else {
      rc = mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE);  // the first key >= upper
      rc = rc == 0 ? mdb_cursor_get(cursor, &k, &v, MDB_PREV)
                   : rc == MDB_NOTFOUND ? mdb_cursor_get(cursor, &k, &v, MDB_LAST) : rc;
    }
    while (rc == 0) {
      if (View(k) < lower) return Status::OK();
      if (!visitor(View(k), View(v))) return Status::OK();
      rc = mdb_cursor_get(cursor, &k, &v, MDB_PREV);
    }
    return rc == MDB_NOTFOUND ? Status::OK() : Error(rc, "scan");
  }

  Shared* const sh_;
  MDB_txn* txn_ = nullptr;
  bool read_only_ = false;
};

class LmdbEngine final : public Engine {
 public:
  explicit LmdbEngine(std::unique_ptr<Shared> shared)
      : sh_(std::move(shared)), threads_(sh_->options.workers) {
    if (sh_->options.commit == ForeignCommit::kAsync && !sh_->options.read_only) {
      MDB_env* env = sh_->env;
      sync_.emplace([env] {
        int rc = mdb_env_sync(env, 1);
        return rc == 0 ? Status::OK() : Error(rc, "sync");
      });
    }
  }
  ~LmdbEngine() override { Close().PermitUnchecked(); }

  std::string Describe() const override {
    static constexpr const char* kSync[] = {"sync at commit", "MDB_NOSYNC + a sync every interval of PeriodicSync",
                                            "MDB_NOSYNC"};
    int major = 0, minor = 0, patch = 0;
    mdb_version(&major, &minor, &patch);
    return "lmdb " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + " (" + kSync[static_cast<int>(sh_->options.commit)] +
           ", one writer at a time, no cache of its own: the OS page cache, " +
           std::to_string(threads_.workers()) + " worker threads)";
  }

  Status OpenSchema(Schema schema, bool create, bool* created) override {
    *created = false;
    MDB_txn* txn = nullptr;
    const bool write = create && !sh_->options.read_only;
    int rc = mdb_txn_begin(sh_->env, nullptr, write ? 0 : MDB_RDONLY, &txn);
    if (rc != 0) return Error(rc, "begin");
    for (int i = 0; i < kTableCount; ++i) {
      if (!InSchema(static_cast<TableId>(i), schema)) continue;
      rc = mdb_dbi_open(txn, TableName(static_cast<TableId>(i)), 0, &sh_->dbi[i]);
      if (rc == MDB_NOTFOUND && write) {
        rc = mdb_dbi_open(txn, TableName(static_cast<TableId>(i)), MDB_CREATE, &sh_->dbi[i]);
        *created = true;
      }
      if (rc != 0) {
        mdb_txn_abort(txn);
        if (rc == MDB_NOTFOUND) {
          return Status::NotFound(std::string("no table ") + TableName(static_cast<TableId>(i)));
        }
        return Error(rc, "opening a table");
      }
    }
    rc = mdb_txn_commit(txn);  // invariant 2: the handles stay open for every transaction
    return rc == 0 ? Status::OK() : Error(rc, "commit");
  }

  std::unique_ptr<EngineTxn> NewTxn() override { return std::make_unique<LmdbTxn>(sh_.get()); }

  Status Checkpoint() override {
    if (sh_->options.read_only) return Status::OK();
    int rc = mdb_env_sync(sh_->env, 1);
    return rc == 0 ? Status::OK() : Error(rc, "sync");
  }

  Status Verify() override { return Status::OK(); }  // LMDB has no structure checker

  EngineStats Stats() override {
    EngineStats s;
    s.txn_committed = sh_->committed.load(std::memory_order_relaxed);
    s.txn_aborted = sh_->aborted.load(std::memory_order_relaxed);
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
    mdb_env_close(sh_->env);
    sh_->env = nullptr;
    return s;
  }

 private:
  std::unique_ptr<Shared> sh_;
  WorkerThreads threads_;
  std::optional<PeriodicSync> sync_;
};

}  // namespace

Status OpenLmdbEngine(const ForeignEngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (options.workers == 0) return Status::InvalidArgument("lmdb: no workers");
  std::error_code error;
  if (options.create) {
    std::filesystem::create_directories(options.path, error);
    if (error) return Status::IOError("lmdb: cannot make " + options.path + ": " + error.message());
  } else if (!std::filesystem::exists(options.path + "/data.mdb", error)) {
    return Status::NotFound("no lmdb database at " + options.path);
  }
  auto shared = std::make_unique<Shared>();
  shared->options = options;
  unsigned flags = MDB_NOTLS;
  if (options.read_only) flags |= MDB_RDONLY;
  if (options.commit != ForeignCommit::kDurable) flags |= MDB_NOSYNC;
  int rc = ENOMEM;
  for (size_t map_bytes = kMapBytes; rc == ENOMEM && map_bytes >= kMinMapBytes; map_bytes /= 2) {
    rc = mdb_env_create(&shared->env);
    if (rc != 0) return Error(rc, "env");
    rc = mdb_env_set_mapsize(shared->env, map_bytes);
    if (rc == 0) rc = mdb_env_set_maxdbs(shared->env, kTableCount + 1);
    if (rc == 0) rc = mdb_env_set_maxreaders(shared->env, kMaxReaders);
    if (rc == 0) rc = mdb_env_open(shared->env, options.path.c_str(), flags, 0644);
    if (rc != 0) {
      mdb_env_close(shared->env);  // a failed open leaves a handle only to close
      shared->env = nullptr;
    }
  }
  if (rc != 0) return Error(rc, "open");
  *engine = std::make_unique<LmdbEngine>(std::move(shared));
  return Status::OK();
}

}  // namespace sm::tpcc
