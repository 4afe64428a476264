// Rollback through the transaction layer (sm/txn/txn_manager.h, "Abort"): an abort undoes every
// record of the transaction, newest first, through the undo handlers the B-tree registered
// (index/btree_wal.h), writing one compensation record per undo.
//
// Setup: tests/txn/txn_test_util.h.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>

#include "index/btree_wal.h"
#include "log/log_record.h"
#include "tests/txn/txn_test_util.h"

using namespace sm;
using sm::test::In;
using sm::test::Key64;
using sm::test::LoadCommitted;
using sm::test::LogRecords;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::WalDb;

TEST_CASE("txn: abort rolls back inserts, updates and deletes", "[unit][txn]") {
  WalDb db(4, 64);
  Model model;
  LoadCommitted(db, &model, 0, 600, 2, 40);
  std::mt19937_64 rng(4);
  auto t = db.Begin();
  Model view = model;
  uint64_t records = 0;
  for (int i = 0; i < 800; ++i) {
    std::string key = Key64(rng() % 1400);
    auto it = view.find(key);
    std::string value = std::string(rng() % 300 + 1, static_cast<char>('a' + i % 26));
    if (it == view.end()) {
      REQUIRE(db.tree->Insert(key, value, In(t.get())).ok());
      view[key] = value;
    } else if (rng() % 2 == 0) {
      REQUIRE(db.tree->Update(key, value, In(t.get())).ok());
      it->second = value;
    } else {
      REQUIRE(db.tree->Delete(key, In(t.get())).ok());
      view.erase(it);
    }
    ++records;
  }
  RequireSameAsModel(*db.tree, view);
  uint64_t undone = db.txns->stats().records_undone;
  REQUIRE(db.txns->Abort(t.get()).ok());
  REQUIRE(db.txns->stats().records_undone - undone == records);
  db.RequireTree(model);
  // Each undo wrote one compensation record pointing at the record before the one it undid.
  uint64_t clrs = 0;
  for (const log::LogRecordBuf& buf : LogRecords(db)) {
    const log::LogRecordView& r = buf.view();
    if (r.txn != t->id() || r.type != log::RecordType::kCompensation) continue;
    bool full_form =
        r.subtype >= index::kSubtypeBtreeClrInsert && r.subtype <= index::kSubtypeBtreeClrDelete;
    REQUIRE((full_form || r.subtype == index::kSubtypeBtreeClrUpdateDiff));
    ++clrs;
  }
  REQUIRE(clrs == records);
}
