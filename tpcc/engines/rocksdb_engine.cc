// The RocksDB adapter: see rocksdb_engine.h.
#include "tpcc/engines/rocksdb_engine.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>
#include <rocksdb/version.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sm/common/assert.h"
#include "tpcc/engines/periodic_sync.h"
#include "tpcc/engines/worker_threads.h"

namespace sm::tpcc {
namespace {

Status Error(const rocksdb::Status& s, const char* what) {
  const std::string msg = std::string("rocksdb: ") + what + ": " + s.ToString();
  if (s.IsBusy() || s.IsTryAgain()) return Status::Deadlock(msg);  // conflict or deadlock
  if (s.IsTimedOut()) return Status::LockTimeout(msg);
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsNoSpace()) return Status::NoSpace(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupported()) return Status::NotSupported(msg);
  return Status::IOError(msg);
}

rocksdb::Slice S(std::string_view v) { return rocksdb::Slice(v.data(), v.size()); }
std::string_view V(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

struct Shared {
  ForeignEngineOptions options;
  rocksdb::TransactionDB* db = nullptr;
  std::array<rocksdb::ColumnFamilyHandle*, kTableCount> cf{};
  rocksdb::ColumnFamilyOptions cf_options;
  std::shared_ptr<rocksdb::Statistics> statistics;
  std::atomic<uint64_t> committed{0}, aborted{0}, conflicts{0}, timeouts{0};  // relaxed
};

class RocksDbTxn final : public EngineTxn {
 public:
  explicit RocksDbTxn(Shared* shared) : sh_(shared) {}
  ~RocksDbTxn() override {
    if (active_) Abort().PermitUnchecked();  // the destructor's contract: abort
  }

  Status Begin(TxnIsolation isolation) override {
    if (active_) return Status::InvalidArgument("Begin on an active transaction");
    if (sh_->options.read_only && isolation == TxnIsolation::kSerializable) {
      isolation = TxnIsolation::kReadCommitted;  // nothing can be written: no locks to take
    }
    serializable_ = isolation == TxnIsolation::kSerializable;
    rocksdb::WriteOptions wo;
    wo.sync = sh_->options.commit == ForeignCommit::kDurable;
    rocksdb::TransactionOptions to;
    to.set_snapshot = serializable_;
    to.deadlock_detect = true;
    to.lock_timeout = static_cast<int64_t>(sh_->options.lock_timeout_ms);
    // The finished transaction object is reused (BeginTransaction's old_txn).
    txn_.reset(sh_->db->BeginTransaction(wo, to, txn_.release()));
    read_ = rocksdb::ReadOptions();
    read_.snapshot = serializable_ ? txn_->GetSnapshot() : nullptr;
    active_ = true;
    return Status::OK();
  }

  Status Commit(CommitKind kind) override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    if (kind != CommitKind::kDefault) {
      rocksdb::WriteOptions wo;
      wo.sync = kind == CommitKind::kDurable;
      txn_->SetWriteOptions(wo);
    }
    rocksdb::Status s = txn_->Commit();
    if (!s.ok()) {
      Status e = Count(Error(s, "commit"));
      Abort().PermitUnchecked();  // the commit's error is the one to report
      return e;
    }
    active_ = false;
    sh_->committed.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }

  Status Abort() override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    active_ = false;
    sh_->aborted.fetch_add(1, std::memory_order_relaxed);
    rocksdb::Status s = txn_->Rollback();
    return s.ok() ? Status::OK() : Error(s, "rollback");
  }

  bool active() const override { return active_; }

  Status Get(TableId table, std::string_view key, std::string* value) override {
    return Read(table, key, value, /*exclusive=*/false);
  }

  Status GetForUpdate(TableId table, std::string_view key, std::string* value) override {
    return Read(table, key, value, /*exclusive=*/true);
  }

  Status GetMany(TableId table, const std::vector<std::string_view>& keys, bool for_update,
                 RowVisitor visit) override {
    std::string value;
    for (size_t i = 0; i < keys.size(); ++i) {
      Status s = Read(table, keys[i], &value, for_update);
      if (s.IsNotFound()) continue;
      SM_TRY(std::move(s));
      if (!visit(i, value)) break;
    }
    return Status::OK();
  }

  Status Insert(TableId table, std::string_view key, std::string_view value) override {
    Status s = Read(table, key, &scratch_, /*exclusive=*/true);
    if (s.ok()) return Status::Duplicate();
    if (!s.IsNotFound()) return s;
    return Put(table, key, value);
  }

  Status Update(TableId table, std::string_view key, std::string_view value) override {
    SM_TRY(Read(table, key, &scratch_, /*exclusive=*/true));
    return Put(table, key, value);
  }

  Status Delete(TableId table, std::string_view key) override {
    if (sh_->options.read_only) return Status::NotSupported("the database is open read-only");
    SM_TRY(Read(table, key, &scratch_, /*exclusive=*/true));
    rocksdb::Status s = txn_->Delete(Cf(table), S(key));
    return s.ok() ? Status::OK() : Count(Error(s, "delete"));
  }

  Status Add(TableId table, std::string_view key, uint32_t offset, int64_t delta,
             std::string* value) override {
    SM_TRY(Read(table, key, value, /*exclusive=*/true));
    if (offset + sizeof(int64_t) > value->size()) {
      return Status::InvalidArgument("Add beyond the end of the row");
    }
    int64_t n = 0;
    std::memcpy(&n, value->data() + offset, sizeof n);
    n += delta;
    std::memcpy(value->data() + offset, &n, sizeof n);
    return Put(table, key, *value);
  }

  Status Scan(TableId table, std::string_view lower, std::string_view upper, bool reverse,
              ScanVisitor visitor) override {
    if (!active_) return Status::InvalidArgument("no active transaction");
    // Invariant 2; the transaction's iterator sees its own writes.
    std::unique_ptr<rocksdb::Iterator> it(txn_->GetIterator(read_, Cf(table)));
    if (!reverse) {
      lower.empty() ? it->SeekToFirst() : it->Seek(S(lower));
    } else if (upper.empty()) {
      it->SeekToLast();
    } else {
      it->SeekForPrev(S(upper));  // the last key <= upper; upper itself is out of range
      if (it->Valid() && V(it->key()) >= upper) it->Prev();
    }
    for (; it->Valid(); reverse ? it->Prev() : it->Next()) {
      const std::string_view k = V(it->key());
      if (!reverse && !upper.empty() && k >= upper) break;
      if (reverse && k < lower) break;
      if (serializable_) {
        // The key read is locked and validated, as a Get's (no range: see the header).
        rocksdb::Status s = txn_->GetForUpdate(read_, Cf(table), S(k), static_cast<std::string*>(nullptr), false);
        if (!s.ok()) return Count(Error(s, "scan lock"));
      }
      if (!visitor(k, V(it->value()))) return Status::OK();
    }
    return it->status().ok() ? Status::OK() : Error(it->status(), "scan");
  }

 private:
  rocksdb::ColumnFamilyHandle* Cf(TableId table) const { return sh_->cf[static_cast<int>(table)]; }

  Status Read(TableId table, std::string_view key, std::string* value, bool exclusive) {
    if (!active_) return Status::InvalidArgument("no active transaction");
    rocksdb::Status s;
    if (serializable_ || exclusive) {
      s = txn_->GetForUpdate(read_, Cf(table), S(key), value, exclusive || !serializable_,
                             /*do_validate=*/serializable_);
    } else {
      s = txn_->Get(read_, Cf(table), S(key), value);
    }
    if (s.IsNotFound()) return Status::NotFound();
    return s.ok() ? Status::OK() : Count(Error(s, "get"));
  }

  Status Put(TableId table, std::string_view key, std::string_view value) {
    if (sh_->options.read_only) return Status::NotSupported("the database is open read-only");
    rocksdb::Status s = txn_->Put(Cf(table), S(key), S(value));
    return s.ok() ? Status::OK() : Count(Error(s, "put"));
  }

  Status Count(Status s) {
    if (s.IsDeadlock()) sh_->conflicts.fetch_add(1, std::memory_order_relaxed);
    if (s.IsLockTimeout()) sh_->timeouts.fetch_add(1, std::memory_order_relaxed);
    return s;
  }

  Shared* const sh_;
  std::unique_ptr<rocksdb::Transaction> txn_;
  rocksdb::ReadOptions read_;
  std::string scratch_;  // the old value an Insert, Update or Delete locks
  bool serializable_ = false;
  bool active_ = false;
};

class RocksDbEngine final : public Engine {
 public:
  explicit RocksDbEngine(std::unique_ptr<Shared> shared)
      : sh_(std::move(shared)), threads_(sh_->options.workers) {
    if (sh_->options.commit == ForeignCommit::kAsync && !sh_->options.read_only) {
      rocksdb::TransactionDB* db = sh_->db;
      sync_.emplace([db] {
        rocksdb::Status s = db->SyncWAL();
        return s.ok() ? Status::OK() : Error(s, "SyncWAL");
      });
    }
  }
  ~RocksDbEngine() override { Close().PermitUnchecked(); }

  std::string Describe() const override {
    static constexpr const char* kSync[] = {"WAL synced at commit", "WAL synced periodically",
                                            "WAL not synced"};
    return "rocksdb " + std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) +
           "." + std::to_string(ROCKSDB_PATCH) + " (pessimistic TransactionDB, " +
           kSync[static_cast<int>(sh_->options.commit)] + ", block cache " +
           std::to_string(sh_->options.cache_bytes >> 20) + " MiB, " +
           std::to_string(threads_.workers()) + " worker threads" +
           (sh_->options.read_only ? "; opened read-write, as a TransactionDB has no read-only "
                                     "open, and refusing writes"
                                   : "") +
           ")";
  }

  Status OpenSchema(Schema schema, bool create, bool* created) override {
    *created = false;
    for (int i = 0; i < kTableCount; ++i) {
      if (sh_->cf[i] != nullptr || !InSchema(static_cast<TableId>(i), schema)) continue;
      if (!create || sh_->options.read_only) {
        return Status::NotFound(std::string("no table ") + TableName(static_cast<TableId>(i)));
      }
      rocksdb::Status s =
          sh_->db->CreateColumnFamily(sh_->cf_options, TableName(static_cast<TableId>(i)), &sh_->cf[i]);
      if (!s.ok()) return Error(s, "create table");
      *created = true;
    }
    return Status::OK();
  }

  std::unique_ptr<EngineTxn> NewTxn() override { return std::make_unique<RocksDbTxn>(sh_.get()); }

  // Syncs the WAL (everything committed is durable) and flushes the memtables, so that a
  // restart has little of the WAL to replay.
  Status Checkpoint() override {
    if (sh_->options.read_only) return Status::OK();
    rocksdb::Status s = sh_->db->SyncWAL();
    if (!s.ok()) return Error(s, "SyncWAL");
    std::vector<rocksdb::ColumnFamilyHandle*> cfs(sh_->cf.begin(), sh_->cf.end());
    cfs.erase(std::remove(cfs.begin(), cfs.end(), nullptr), cfs.end());
    s = sh_->db->Flush(rocksdb::FlushOptions(), cfs);
    return s.ok() ? Status::OK() : Error(s, "flush");
  }

  Status Verify() override {
    rocksdb::Status s = sh_->db->VerifyChecksum();
    return s.ok() ? Status::OK() : Error(s, "VerifyChecksum");
  }

  EngineStats Stats() override {
    EngineStats s;
    s.txn_committed = sh_->committed.load(std::memory_order_relaxed);
    s.txn_aborted = sh_->aborted.load(std::memory_order_relaxed);
    s.deadlocks = sh_->conflicts.load(std::memory_order_relaxed);
    s.lock_timeouts = sh_->timeouts.load(std::memory_order_relaxed);
    s.log_bytes = sh_->statistics->getTickerCount(rocksdb::WAL_FILE_BYTES);
    s.log_syncs = sh_->statistics->getTickerCount(rocksdb::WAL_FILE_SYNCED);
    return s;
  }

  Status Spawn(std::function<void()> fn, int worker) override {
    return threads_.Spawn(std::move(fn), worker);
  }
  unsigned workers() const override { return threads_.workers(); }

  Status Close() override {
    threads_.Stop();
    if (sh_->db == nullptr) return Status::OK();
    Status s = sync_ ? sync_->Stop() : Status::OK();
    if (!sh_->options.read_only) {
      rocksdb::Status w = sh_->db->SyncWAL();
      if (!w.ok() && s.ok()) s = Error(w, "SyncWAL");
    }
    for (rocksdb::ColumnFamilyHandle*& cf : sh_->cf) {
      if (cf != nullptr) sh_->db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
      cf = nullptr;
    }
    rocksdb::Status c = sh_->db->Close();
    delete sh_->db;
    sh_->db = nullptr;
    if (!c.ok() && s.ok()) return Error(c, "close");
    return s;
  }

 private:
  std::unique_ptr<Shared> sh_;
  WorkerThreads threads_;
  std::optional<PeriodicSync> sync_;
};

}  // namespace

Status OpenRocksDbEngine(const ForeignEngineOptions& options, std::unique_ptr<Engine>* engine) {
  if (options.workers == 0) return Status::InvalidArgument("rocksdb: no workers");
  std::error_code error;
  if (!options.create && !std::filesystem::exists(options.path + "/CURRENT", error)) {
    return Status::NotFound("no rocksdb database at " + options.path);
  }
  auto shared = std::make_unique<Shared>();
  shared->options = options;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.cache_bytes);
  shared->cf_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = options.create;
  db_options.statistics = rocksdb::CreateDBStatistics();
  db_options.statistics->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  db_options.max_background_jobs = 2;
  shared->statistics = db_options.statistics;

  std::vector<std::string> names;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, options.path, &names);
  if (!s.ok()) names = {rocksdb::kDefaultColumnFamilyName};  // a new database
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : names) families.emplace_back(name, shared->cf_options);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::TransactionDBOptions txn_db_options;
  txn_db_options.transaction_lock_timeout = static_cast<int64_t>(options.lock_timeout_ms);
  s = rocksdb::TransactionDB::Open(db_options, txn_db_options, options.path, families, &handles,
                                   &shared->db);
  if (!s.ok()) return Error(s, "open");
  for (size_t i = 0; i < handles.size(); ++i) {
    bool mapped = false;
    for (int t = 0; t < kTableCount && !mapped; ++t) {
      if (names[i] == TableName(static_cast<TableId>(t))) {
        shared->cf[t] = handles[i];
        mapped = true;
      }
    }
    if (!mapped) shared->db->DestroyColumnFamilyHandle(handles[i]).PermitUncheckedError();
  }
  *engine = std::make_unique<RocksDbEngine>(std::move(shared));
  return Status::OK();
}

}  // namespace sm::tpcc
