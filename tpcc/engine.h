// The engine adapter: the only surface through which TPC-C (schema, loader, transactions,
// consistency checks, driver) and the YCSB-like workload (tpcc/ycsb.h) touch a storage engine,
// after LeanStore's TPCCWorkload<Adapter>.
//
// Owns: the vocabulary the workload needs and nothing more - a fixed set of tables addressed by
// TableId, byte-string keys that compare with memcmp (tpcc/keys.h builds them), opaque values
// (tpcc/rows.h), transactions with begin/commit/abort, point reads and writes, and ordered
// range scans. Our engine's adapter (tpcc/sm_engine.h) is the default; another embedded engine
// can run the same workload by implementing these two classes.
//
// Contract every adapter keeps:
//   1. Errors are sm::Status values (sm/common/status.h). A transaction that gets a retryable
//      status (Status::IsRetryable: deadlock victim, lock timeout) must be aborted by the
//      caller and may be run again; NotFound and Duplicate are ordinary answers; anything
//      else is fatal for the run.
//   2. Serializable transactions see no phantoms in Scan; read-committed ones read only
//      committed data and may see phantoms.
//   3. Scan visits the keys of [lower, upper) in ascending order (descending if reverse) and
//      stops as soon as the visitor returns false. An empty `upper` means no upper bound. The
//      visitor's views are valid only during its call, and it must not use the transaction
//      (an engine may hand it rows while it holds a page latch); the scan refuses a nested one.
//   4. GetForUpdate reads a row that the transaction is about to update: an engine that can
//      lock it exclusively at once should (it avoids shared-to-exclusive upgrade deadlocks);
//      a plain Get is a correct implementation.
//   5. Spawn runs a function on the engine's fiber runtime (a TPC-C terminal is one fiber);
//      an engine without one may run it on a thread. Functions spawned on the same worker
//      never run at the same time as each other (they interleave only where the engine
//      suspends them), which the driver relies on for its per-worker statistics. A Spawn
//      that fails (a resource limit: its message names it) does not run the function.
//
// Thread/fiber safety: an Engine is shared by all terminals; an EngineTxn belongs to one
// terminal (one fiber) at a time and is reused for that terminal's successive transactions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "sm/common/status.h"

namespace sm::tpcc {

// The tables of the schema (tpcc/rows.h describes their keys and rows).
enum class TableId : uint8_t {
  kWarehouse,
  kDistrict,
  kCustomer,
  kCustomerByName,  // index: (w, d, last, first) + customer key
  kHistory,
  kNewOrder,
  kOrder,
  kOrderByCustomer,  // index: (w, d, c) + order key
  kOrderLine,
  kItem,
  kStock,
  kMeta,  // the drivers' metadata (TPC-C: warehouse count, scale, load constants; YCSB's)
  kUsertable,  // YCSB's one table (tpcc/ycsb.h)
};
inline constexpr int kTableCount = 13;
const char* TableName(TableId table);
inline bool IsIndex(TableId table) {
  return table == TableId::kCustomerByName || table == TableId::kOrderByCustomer;
}

// The set of tables a database holds: TPC-C's twelve, or YCSB's usertable with the meta table.
// A database is created with one schema and opened with it, so a TPC-C database made before
// the usertable existed opens as it did.
enum class Schema : uint8_t { kTpcc, kYcsb };
inline bool InSchema(TableId table, Schema schema) {
  if (table == TableId::kMeta) return true;
  return (table == TableId::kUsertable) == (schema == Schema::kYcsb);
}

// A non-owning reference to a callable (std::function without the allocation).
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit on purpose, like std::function
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// Returns false to stop the scan.
using ScanVisitor = FunctionRef<bool(std::string_view key, std::string_view value)>;
// Edits a row's bytes in place (Modify); the count cannot change.
using RowEdit = FunctionRef<void(char* value, size_t size)>;
// One row of a batched read (GetMany): the key's index in the batch and its value; absent keys
// are not visited. Returns false to stop the batch.
using RowVisitor = FunctionRef<bool(size_t index, std::string_view value)>;

enum class TxnIsolation : uint8_t { kSerializable, kReadCommitted };

// How a commit must be made durable. kDefault: as the engine is configured (--commit);
// kBulk: the loader's batches, which need not be durable one by one; kDurable: durable when
// Commit returns, whatever the configuration (the loader's last commit, which makes the whole
// load durable).
enum class CommitKind : uint8_t { kDefault, kBulk, kDurable };

class EngineTxn {
 public:
  virtual ~EngineTxn() = default;  // aborts an active transaction

  [[nodiscard]] virtual Status Begin(TxnIsolation isolation) = 0;
  [[nodiscard]] virtual Status Commit(CommitKind kind = CommitKind::kDefault) = 0;
  [[nodiscard]] virtual Status Abort() = 0;
  virtual bool active() const = 0;

  [[nodiscard]] virtual Status Get(TableId table, std::string_view key, std::string* value) = 0;
  [[nodiscard]] virtual Status GetForUpdate(TableId table, std::string_view key,
                                            std::string* value) = 0;
  // Get, or GetForUpdate with for_update, of each key in order, each present row visited; an
  // engine may read ahead (keys spread over many pages cost less than the reads one by one).
  [[nodiscard]] virtual Status GetMany(TableId table, const std::vector<std::string_view>& keys,
                                       bool for_update, RowVisitor visit) = 0;
  [[nodiscard]] virtual Status Insert(TableId table, std::string_view key,
                                      std::string_view value) = 0;
  [[nodiscard]] virtual Status Update(TableId table, std::string_view key,
                                      std::string_view value) = 0;
  [[nodiscard]] virtual Status Delete(TableId table, std::string_view key) = 0;
  // Reads the row for update, lets `edit` change its bytes (their count unchanged) and writes
  // them back: GetForUpdate then Update, which is what this default does; an engine that can do
  // it in one operation should. `edit` may run more than once, each time on the row as stored,
  // and must not use the transaction. NotFound if absent.
  [[nodiscard]] virtual Status Modify(TableId table, std::string_view key, RowEdit edit) {
    std::string* row = value_buffer();
    SM_TRY(GetForUpdate(table, key, row));
    edit(row->data(), row->size());
    return Update(table, key, *row);
  }
  // Adds delta to the little-endian int64_t at value bytes [offset, offset + 8) under an
  // increment lock (sm::Table::Add); *value: the row after the addition.
  [[nodiscard]] virtual Status Add(TableId table, std::string_view key, uint32_t offset,
                                   int64_t delta, std::string* value) = 0;
  [[nodiscard]] virtual Status Scan(TableId table, std::string_view lower,
                                    std::string_view upper, bool reverse,
                                    ScanVisitor visitor) = 0;

  // A buffer for the value of a point read that the caller decodes at once: it keeps its
  // capacity from one read to the next, so reading a row allocates nothing. Its contents
  // are the caller's until the next read into it.
  std::string* value_buffer() { return &value_buffer_; }

 private:
  std::string value_buffer_;
};

// Engine-wide figures for the run summary; an adapter fills what it knows.
struct EngineStats {
  uint64_t lock_requests = 0, lock_waits = 0, deadlocks = 0, lock_timeouts = 0;
  uint64_t pool_hits = 0, pool_misses = 0, pool_writes = 0, pool_dirty_pages = 0;
  uint64_t pool_hinted_hits = 0;  // of pool_hits, those that needed no page-table lookup
  uint64_t log_bytes = 0, log_syncs = 0, log_space_waits = 0;
  double commits_per_sync = 0;
  uint64_t txn_committed = 0, txn_aborted = 0;
  uint64_t checkpoints = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // The engine's name and configuration, one line for reports ("sm (buffer pool 1 GiB, ...)").
  virtual std::string Describe() const = 0;
  // Opens the tables of `schema` (InSchema); creates those that are missing if `create`, else
  // says NotFound. *created: some did not exist and were created. The tables of the other
  // schema stay closed: a transaction may not name them.
  [[nodiscard]] virtual Status OpenSchema(Schema schema, bool create, bool* created) = 0;
  virtual std::unique_ptr<EngineTxn> NewTxn() = 0;
  // Makes everything committed so far durable and bounds restart work (after a bulk load).
  [[nodiscard]] virtual Status Checkpoint() = 0;
  // Checks the engine's own structures (B-tree invariants); optional.
  [[nodiscard]] virtual Status Verify() = 0;
  virtual EngineStats Stats() = 0;
  [[nodiscard]] virtual Status Spawn(std::function<void()> fn, int worker) = 0;
  virtual unsigned workers() const = 0;
  [[nodiscard]] virtual Status Close() = 0;
};

}  // namespace sm::tpcc
