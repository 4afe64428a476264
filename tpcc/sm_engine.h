// SmEngine: the engine adapter (tpcc/engine.h) over our storage manager's public API, sm/sm.h.
//
// Owns: the open Database, the handles of the tables of the schema opened (one B-tree each; the
// two TPC-C indexes are CreateIndex tables), and the mapping of the adapter's calls onto Table
// and Cursor calls.
//
// Mapping:
//   TxnIsolation    -> sm::Isolation (serializable / read committed), per transaction.
//   CommitKind      kDefault -> Transaction::Commit() (Options::commit_mode); kBulk ->
//                   CommitMode::kNone; kDurable -> CommitMode::kDurable.
//   GetForUpdate    Table::GetForUpdate, or Get (ReadForUpdate).
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

// How GetForUpdate locks its row.
enum class ReadForUpdate : uint8_t {
  kLock,   // Table::GetForUpdate: the row's exclusive lock at the read. The default.
  kPlain,  // a plain Get: a shared lock, upgraded by the Update that follows. Correct, but two
           // terminals that read one row to update it deadlock on the upgrade (on the hot
           // warehouse and district rows, several times per completed transaction on two
           // workers); kept to measure that.
};
const char* ReadForUpdateName(ReadForUpdate mode);

struct SmEngineOptions {
  sm::Options db;  // passed to Database::Open
  ReadForUpdate read_for_update = ReadForUpdate::kLock;
};

class SmEngine final : public Engine {
 public:
  // Opens (creating or recovering) the database; *report says what Open did.
  [[nodiscard]] static Status Open(const SmEngineOptions& options, std::unique_ptr<SmEngine>* engine,
                                   sm::OpenReport* report = nullptr);
  ~SmEngine() override;

  std::string Describe() const override;
  Status OpenSchema(Schema schema, bool create, bool* created) override;
  std::unique_ptr<EngineTxn> NewTxn() override;
  Status Checkpoint() override;
  Status Verify() override;
  EngineStats Stats() override;
  Status Spawn(std::function<void()> fn, int worker) override;
  unsigned workers() const override;
  Status Close() override;

  sm::Database* database() { return db_.get(); }
  sm::Table* table(TableId id) const { return tables_[static_cast<int>(id)]; }
  ReadForUpdate read_for_update() const { return options_.read_for_update; }

 private:
  explicit SmEngine(const SmEngineOptions& options) : options_(options) {}

  const SmEngineOptions options_;
  std::unique_ptr<sm::Database> db_;
  std::array<sm::Table*, kTableCount> tables_{};
};

}  // namespace sm::tpcc
