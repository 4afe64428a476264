// Helpers of the TPC-C tests: a database on the in-memory fault-injection file system, loaded
// at a given scale, and row access outside the workload's transactions.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tpcc/consistency.h"
#include "tpcc/loader.h"
#include "tpcc/rows.h"
#include "tpcc/schema.h"
#include "tpcc/sm_engine.h"

namespace sm::tpcc::test {

// A tiny scale for transaction tests: 100 items, 30 customers per district (so 9 NEW-ORDER
// rows per district, O_ID 22..30, D_NEXT_O_ID 31).
inline Scale TinyScale() { return Scale{100, 30}; }

struct TestDb {
  std::unique_ptr<io::FaultInjectionFileSystem> fs;
  std::unique_ptr<SmEngine> engine;
  DatabaseInfo info;
  LoadResult load;

  ~TestDb() {
    if (engine != nullptr) {
      Status s = engine->Close();
      INFO(s.ToString());
      CHECK(s.ok());
    }
  }
};

inline SmEngineOptions TestEngineOptions(io::FileSystem* fs, unsigned workers,
                                         size_t pool_bytes = 64u << 20,
                                         ReadForUpdate mode = ReadForUpdate::kLock) {
  SmEngineOptions o;
  o.read_for_update = mode;
  o.db.path = "/tpcc";
  o.db.file_system = fs;
  o.db.buffer_pool_bytes = pool_bytes;
  o.db.log_segment_bytes = 16u << 20;
  o.db.log_buffer_bytes = 1u << 20;
  o.db.checkpoint_interval = std::chrono::milliseconds(0);
  o.db.workers = workers;
  o.db.commit_mode = CommitMode::kAsync;
  return o;
}

// A database loaded with `warehouses` at `scale` (REQUIREs that it works).
inline std::unique_ptr<TestDb> LoadTestDb(uint32_t warehouses, Scale scale, uint64_t seed,
                                          unsigned workers = 1, size_t pool_bytes = 64u << 20,
                                          ReadForUpdate mode = ReadForUpdate::kLock) {
  auto db = std::make_unique<TestDb>();
  db->fs = std::make_unique<io::FaultInjectionFileSystem>(seed);
  Status s = SmEngine::Open(TestEngineOptions(db->fs.get(), workers, pool_bytes, mode), &db->engine);
  INFO(s.ToString());
  REQUIRE(s.ok());
  LoadOptions lo;
  lo.warehouses = warehouses;
  lo.scale = scale;
  lo.seed = seed;
  s = Load(db->engine.get(), lo, &db->load);
  INFO(s.ToString());
  REQUIRE(s.ok());
  db->info = db->load.info;
  return db;
}

// Reads one row in its own read-committed transaction; false if absent.
template <typename Row>
bool ReadRow(Engine* engine, TableId table, const std::string& key, Row* row) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kReadCommitted).ok());
  std::string value;
  Status s = txn->Get(table, key, &value);
  REQUIRE(txn->Commit().ok());
  if (s.IsNotFound()) return false;
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(DecodeRow(value, row));
  return true;
}

template <typename Row>
Row MustRead(Engine* engine, TableId table, const std::string& key) {
  Row row;
  INFO("table " << TableName(table));
  REQUIRE(ReadRow(engine, table, key, &row));
  return row;
}

inline bool Exists(Engine* engine, TableId table, const std::string& key) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kReadCommitted).ok());
  std::string value;
  Status s = txn->Get(table, key, &value);
  REQUIRE(txn->Commit().ok());
  REQUIRE((s.ok() || s.IsNotFound()));
  return s.ok();
}

// Writes (upserts by delete + insert, or inserts) one value in its own transaction.
inline void Put(Engine* engine, TableId table, const std::string& key, const std::string& value) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kSerializable).ok());
  Status s = txn->Update(table, key, value);
  if (s.IsNotFound()) s = txn->Insert(table, key, value);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(txn->Commit().ok());
}

inline void Remove(Engine* engine, TableId table, const std::string& key) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kSerializable).ok());
  REQUIRE(txn->Delete(table, key).ok());
  REQUIRE(txn->Commit().ok());
}

// Counts the rows of a table (or of a key range).
inline uint64_t CountRows(Engine* engine, TableId table, const std::string& lower = {},
                          const std::string& upper = {}) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kReadCommitted).ok());
  uint64_t n = 0;
  REQUIRE(txn->Scan(table, lower, upper, false, [&](std::string_view, std::string_view) {
                ++n;
                return true;
              }).ok());
  REQUIRE(txn->Commit().ok());
  return n;
}

// Runs the conditions and REQUIREs that they could run; returns the failed ones' numbers.
inline std::vector<int> FailedConditions(Engine* engine, const DatabaseInfo& info,
                                         const std::vector<int>& conditions) {
  std::vector<ConditionResult> results;
  Status s = CheckConsistency(engine, info, conditions, &results);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(results.size() == conditions.size());
  std::vector<int> failed;
  for (const ConditionResult& r : results) {
    if (!r.passed) {
      UNSCOPED_INFO("condition " << r.condition << ": " << r.detail);
      failed.push_back(r.condition);
    }
  }
  return failed;
}

inline std::vector<int> AllConditions() { return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; }
inline std::vector<int> RunConditions() { return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12}; }

}  // namespace sm::tpcc::test
