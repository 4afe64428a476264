// SmEngine: the engine adapter (tpcc/engine.h) over our storage manager's public API, sm/sm.h.
//
// Owns: the open Database, the handles of the twelve tables (one B-tree each; the two indexes
// are CreateIndex tables), and the mapping of the adapter's calls onto Table and Cursor calls.
//
// Mapping:
//   TxnIsolation    -> sm::Isolation (serializable / read committed), per transaction.
//   CommitKind      kDefault -> Transaction::Commit() (Options::commit_mode); kBulk ->
//                   CommitMode::kNone; kDurable -> CommitMode::kDurable.
//   GetForUpdate    sm/sm.h has no read-for-update; see ReadForUpdate.
//   Scan            Table::NewCursor with a [lower, upper) range (reverse as asked).
//
// Thread/fiber safety: the adapter adds no shared state of its own beyond the handle array,
// which is written once by EnsureSchema before any terminal starts.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "sm/sm.h"
#include "tpcc/engine.h"

namespace sm::tpcc {

// How GetForUpdate takes its row's exclusive lock before it reads (sm/sm.h has no
// read-for-update; without one, read-then-update of the hot district and warehouse rows makes
// two terminals on different workers hold shared locks and deadlock on the upgrade, several
// times per completed transaction).
enum class ReadForUpdate : uint8_t {
  kPlain,        // a plain Get: correct, and deadlock-prone as said
  kInsertProbe,  // Insert(key) first: the B-tree X-locks the key and then finds it present
                 // (Duplicate). Relies on the order of index/btree.cc's Write, which sm/sm.h
                 // does not promise (a change under way takes S there instead).
  kLockRow,      // Upsert the row's entry in the adapter's own table "tpcc.row_lock" (key:
                 // table id + row key, empty value), which takes its X lock, then Get. Only the
                 // public API's promises are used; it costs a tiny logged write per call.
  kLockRowHot,   // kLockRow for WAREHOUSE and DISTRICT rows, which every New-Order or Payment of
                 // a warehouse updates; kPlain for the rest (customer, stock, order, order line),
                 // where two terminals rarely meet on one row. The default.
};
const char* ReadForUpdateName(ReadForUpdate mode);

struct SmEngineOptions {
  sm::Options db;  // passed to Database::Open
  ReadForUpdate read_for_update = ReadForUpdate::kLockRowHot;
};

class SmEngine final : public Engine {
 public:
  // Opens (creating or recovering) the database; *report says what Open did.
  [[nodiscard]] static Status Open(const SmEngineOptions& options, std::unique_ptr<SmEngine>* engine,
                                   sm::OpenReport* report = nullptr);
  ~SmEngine() override;

  std::string Describe() const override;
  Status OpenSchema(bool create, bool* created) override;
  std::unique_ptr<EngineTxn> NewTxn() override;
  Status Checkpoint() override;
  Status Verify() override;
  EngineStats Stats() override;
  void Spawn(std::function<void()> fn, int worker) override;
  unsigned workers() const override;
  Status Close() override;

  sm::Database* database() { return db_.get(); }
  sm::Table* table(TableId id) const { return tables_[static_cast<int>(id)]; }
  ReadForUpdate read_for_update() const { return options_.read_for_update; }
  sm::Table* row_lock_table() const { return row_locks_; }

 private:
  explicit SmEngine(const SmEngineOptions& options) : options_(options) {}

  const SmEngineOptions options_;
  std::unique_ptr<sm::Database> db_;
  std::array<sm::Table*, kTableCount> tables_{};
  sm::Table* row_locks_ = nullptr;  // the table of kLockRow and kLockRowHot
};

}  // namespace sm::tpcc
