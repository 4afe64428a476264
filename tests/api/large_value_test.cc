// Large values through the public API: values too large for a leaf are stored as chunks in the
// table's value tree (sm/api/large_values.h) and read back whole by every read path; they are
// replaced, deleted, rolled back, recovered after a crash, reclaimed with their table, and
// checked by Verify. The crash-point test (crash_points_test.cc) runs them under faults too.
#include <atomic>
#include <chrono>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "tests/api/api_test_util.h"
#include "tests/io/io_test_util.h"
#include "tests/test_util.h"
#include "tools/admin/dump.h"

namespace sm {
namespace {

using test::MustOpen;

// A value of `bytes` bytes that differs from every other (seed) at every chunk.
std::string Pattern(size_t bytes, uint32_t seed) {
  std::string value(bytes, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 1103515245u + 12345u;
    value[i] = static_cast<char>(x >> 24);
  }
  return value;
}

index::BTree* ValueTree(Database* db, Table* table) {
  (void)db;
  return static_cast<api::TableImpl*>(table)->value_tree();
}

uint64_t Records(const index::BTree* tree) {
  index::BtreeStats stats;
  REQUIRE(tree->GetStats(&stats).ok());
  return stats.records;
}

// The smallest value that no longer fits a leaf next to `key`.
size_t FirstLargeSize(std::string_view key) {
  return index::kMaxLeafRecordBytes - index::kLeafRecordOverheadBytes - key.size() + 1;
}

TEST_CASE("large values read back whole through every read path", "[unit][api]") {
  io::FaultInjectionFileSystem fs(41);
  auto db = MustOpen(test::SmallDbOptions(&fs));
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  REQUIRE(ValueTree(db.get(), t) == nullptr);  // made with the first large value
  const std::vector<size_t> sizes = {FirstLargeSize("a") - 1, FirstLargeSize("b"),
                                     api::kChunkBytes * 3, 1u << 20, 16u << 20};
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e"};
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (size_t i = 0; i < sizes.size(); ++i) {
    Status s = t->Insert(txn.get(), keys[i], Pattern(sizes[i], i));
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  REQUIRE(t->Insert(txn.get(), "f", "small").ok());
  REQUIRE(txn->Commit().ok());
  REQUIRE(ValueTree(db.get(), t) != nullptr);

  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  for (size_t i = 0; i < sizes.size(); ++i) {
    REQUIRE(t->Get(txn.get(), keys[i], &value).ok());
    REQUIRE(value == Pattern(sizes[i], i));
    REQUIRE(t->GetForUpdate(txn.get(), keys[i], &value).ok());
    REQUIRE(value == Pattern(sizes[i], i));
  }
  std::vector<std::string_view> many(keys.begin(), keys.end());
  size_t rows = 0;
  REQUIRE(
      t->GetMany(txn.get(), many, false, [&](size_t i, const Status& found, std::string_view v) {
         REQUIRE(found.ok());
         REQUIRE(v == Pattern(sizes[i], i));
         ++rows;
         return true;
       }).ok());
  REQUIRE(rows == sizes.size());

  // Cursors: forward with Next, backward, and in batches.
  std::unique_ptr<Cursor> cursor;
  REQUIRE(t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  for (size_t i = 0; i < sizes.size(); ++i) {
    REQUIRE(cursor->Valid());
    REQUIRE(cursor->key() == keys[i]);
    REQUIRE(cursor->value() == Pattern(sizes[i], i));
    REQUIRE(cursor->Next().ok());
  }
  REQUIRE(cursor->value() == "small");
  ScanOptions reverse = ScanOptions::All();
  reverse.reverse = true;
  REQUIRE(t->NewCursor(txn.get(), reverse, &cursor).ok());
  REQUIRE(cursor->Next().ok());  // past "f"
  REQUIRE(cursor->value() == Pattern(sizes[4], 4));
  REQUIRE(cursor->Prev().ok());
  REQUIRE(cursor->value() == "small");
  REQUIRE(t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  REQUIRE(cursor->value() == Pattern(sizes[0], 0));
  size_t visited = 0, seen = 1;
  REQUIRE(cursor
              ->NextBatch(
                  100,
                  [&](std::string_view key, std::string_view v) {
                    if (key != "f") REQUIRE(v == Pattern(sizes[seen], seen));
                    ++seen;
                    return true;
                  },
                  &visited)
              .ok());
  REQUIRE(visited == sizes.size());
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());

  // And after a reopen.
  db = MustOpen(test::SmallDbOptions(&fs));
  REQUIRE(db->OpenTable("t", &t).ok());
  REQUIRE(db->Begin(&txn).ok());
  REQUIRE(t->Get(txn.get(), "e", &value).ok());
  REQUIRE(value == Pattern(sizes[4], 4));
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("replacing, deleting and rolling back large values frees their chunks", "[unit][api]") {
  io::FaultInjectionFileSystem fs(42);
  auto db = MustOpen(test::SmallDbOptions(&fs));
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  std::string value;
  auto commit = [&](const std::function<Status(Transaction*)>& work) {
    REQUIRE(db->Begin(&txn).ok());
    Status s = work(txn.get());
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(txn->Commit().ok());
  };
  auto read = [&](std::string_view key) {
    REQUIRE(db->Begin(&txn).ok());
    Status s = t->Get(txn.get(), key, &value);
    REQUIRE(txn->Commit().ok());
    return s;
  };
  const std::string big = Pattern(100000, 1), bigger = Pattern(300000, 2);
  commit([&](Transaction* x) { return t->Insert(x, "k", big); });
  index::BTree* values = ValueTree(db.get(), t);
  const uint64_t big_chunks = Records(values);
  REQUIRE(big_chunks == (big.size() + api::kChunkBytes - 1) / api::kChunkBytes);

  SECTION("large to larger, to small, to large again, then deleted") {
    commit([&](Transaction* x) { return t->Update(x, "k", bigger); });
    REQUIRE(read("k").ok());
    REQUIRE(value == bigger);
    REQUIRE(Records(values) == (bigger.size() + api::kChunkBytes - 1) / api::kChunkBytes);
    commit([&](Transaction* x) { return t->Upsert(x, "k", "tiny"); });
    REQUIRE(read("k").ok());
    REQUIRE(value == "tiny");
    REQUIRE(Records(values) == 0);
    commit([&](Transaction* x) { return t->Upsert(x, "k", big); });
    REQUIRE(Records(values) == big_chunks);
    commit([&](Transaction* x) { return t->Delete(x, "k"); });
    REQUIRE(read("k").IsNotFound());
    REQUIRE(Records(values) == 0);
  }
  SECTION("a rolled-back insert, update and delete leave the value as it was") {
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "other", bigger).ok());
    REQUIRE(t->Update(txn.get(), "k", bigger).ok());
    REQUIRE(t->Get(txn.get(), "k", &value).ok());
    REQUIRE(value == bigger);  // its own change
    REQUIRE(t->Delete(txn.get(), "k").ok());
    REQUIRE(txn->Abort().ok());
    REQUIRE(read("k").ok());
    REQUIRE(value == big);
    REQUIRE(read("other").IsNotFound());
    REQUIRE(Records(values) == big_chunks);
  }
  SECTION("a Duplicate or NotFound write leaves nothing behind") {
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "k", bigger).IsDuplicate());
    REQUIRE(t->Update(txn.get(), "absent", bigger).IsNotFound());
    REQUIRE(txn->Commit().ok());
    REQUIRE(Records(values) == big_chunks);
  }
  SECTION("what large values refuse") {
    REQUIRE(db->Begin(&txn).ok());
    Status s = t->Add(txn.get(), "k", 0, 1);
    INFO(s.ToString());
    REQUIRE(s.IsInvalidArgument());
    REQUIRE(
        t->Insert(txn.get(), std::string(index::kMaxKeyBytes + 1, 'x'), big).IsInvalidArgument());
    std::string too_large(api::kMaxValueBytes + 1, 'x');
    s = t->Insert(txn.get(), "huge", too_large);
    INFO(s.ToString());
    REQUIRE(s.IsInvalidArgument());
    REQUIRE(txn->active());  // refused, not rolled back
    REQUIRE(txn->Commit().ok());
  }
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("Verify and reads detect a large value whose chunks were damaged", "[unit][api]") {
  io::FaultInjectionFileSystem fs(43);
  auto db = MustOpen(test::SmallDbOptions(&fs));
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  REQUIRE(t->Insert(txn.get(), "k", Pattern(50000, 7)).ok());
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Verify().ok());
  // Change one chunk behind the stub's back, through the value tree itself.
  index::BTree* values = ValueTree(db.get(), t);
  std::string chunk_key;
  {
    index::Cursor cursor(values);
    REQUIRE(cursor.SeekToFirst().ok());
    REQUIRE(cursor.Next().ok());
    chunk_key = cursor.key();
  }
  REQUIRE(db->Begin(&txn).ok());
  txn::Txn* raw = static_cast<api::TransactionImpl*>(txn.get())->txn();
  SECTION("a chunk's bytes") {
    std::string chunk;
    REQUIRE(values->Lookup(chunk_key, &chunk).ok());
    chunk[10] ^= 1;
    REQUIRE(values->Update(chunk_key, chunk, index::OpContext{raw}).ok());
  }
  SECTION("a missing chunk") { REQUIRE(values->Delete(chunk_key, index::OpContext{raw}).ok()); }
  REQUIRE(txn->Commit().ok());
  Status s = db->Verify();
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  s = t->Get(txn.get(), "k", &value);
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  REQUIRE(txn->Abort().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("large values survive a crash as committed, and a drop gives their pages back",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(44);
  Options options = test::SmallDbOptions(&fs);
  options.buffer_pool_bytes = 1u << 20;  // smaller than the values: their pages are written back
  const std::string committed = Pattern(3u << 20, 1), uncommitted = Pattern(2u << 20, 2);
  uint64_t allocated_before = 0;
  {
    auto db = MustOpen(options);
    allocated_before = db->stats().volume_pages_allocated;
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "committed", committed).ok());
    REQUIRE(t->Insert(txn.get(), "replaced", uncommitted).ok());
    REQUIRE(txn->Commit().ok());
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "uncommitted", uncommitted).ok());
    REQUIRE(t->Update(txn.get(), "replaced", committed).ok());
    // The process dies with the transaction open.
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    txn.reset();
    db.reset();
    fs.SimulateCrash(io::CrashMode::kTearUnsynced);
  }
  auto db = MustOpen(options);
  REQUIRE(db->Verify().ok());
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  REQUIRE(t->Get(txn.get(), "committed", &value).ok());
  REQUIRE(value == committed);
  REQUIRE(t->Get(txn.get(), "replaced", &value).ok());
  REQUIRE(value == uncommitted);
  REQUIRE(t->Get(txn.get(), "uncommitted", &value).IsNotFound());
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->stats().volume_pages_allocated > allocated_before + 500);
  REQUIRE(db->DropTable("t").ok());
  REQUIRE(db->Checkpoint().ok());
  // The table's pages and its value tree's went back (the catalog may have grown a page).
  REQUIRE(db->stats().volume_pages_allocated <= allocated_before + 2);
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

// Readers at read committed scan and read a row whose large value a writer keeps replacing:
// every value they see is one of the versions, whole.
TEST_CASE("readers see whole large values while a writer replaces them", "[unit][api]") {
  io::FaultInjectionFileSystem fs(45);
  Options options = test::SmallDbOptions(&fs);
  options.workers = 2;
  auto db = MustOpen(options);
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  constexpr int kVersions = 6;
  std::vector<std::string> versions;
  for (int v = 0; v < kVersions; ++v) versions.push_back(Pattern(20000 + 7000 * v, v));
  {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "a", "small").ok());
    REQUIRE(t->Insert(txn.get(), "k", versions[0]).ok());
    REQUIRE(txn->Commit().ok());
  }
  std::atomic<int> bad{0}, reads{0}, writes{0};
  const int kRounds = test::kSanitized ? 40 : 200;
  WaitGroup group;
  REQUIRE(db->Spawn(
                [&] {
                  std::unique_ptr<Transaction> txn;
                  for (int i = 1; i <= kRounds; ++i) {
                    if (!db->Begin(&txn).ok()) return;
                    Status s = i % 3 == 0 ? t->Upsert(txn.get(), "k", "tiny")
                                          : t->Update(txn.get(), "k", versions[i % kVersions]);
                    if (s.ok() && i % 4 != 0)
                      s = txn->Commit();
                    else if (s.ok())
                      s = txn->Abort();
                    if (!s.ok()) ++bad;
                    ++writes;
                  }
                },
                0, &group)
              .ok());
  REQUIRE(db->Spawn(
                [&] {
                  std::unique_ptr<Transaction> txn;
                  std::unique_ptr<Cursor> cursor;
                  std::string value;
                  auto known = [&](std::string_view v) {
                    if (v == "tiny") return true;
                    for (const std::string& version : versions) {
                      if (v == version) return true;
                    }
                    return false;
                  };
                  for (int i = 0; i < kRounds; ++i) {
                    if (!db->Begin(&txn, Isolation::kReadCommitted).ok()) return;
                    if (!t->Get(txn.get(), "k", &value).ok() || !known(value)) ++bad;
                    if (!t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok()) ++bad;
                    size_t visited = 0;
                    Status s = cursor->NextBatch(
                        10,
                        [&](std::string_view, std::string_view v) { return known(v) || !++bad; },
                        &visited);
                    if (!s.ok() || visited != 1) ++bad;
                    if (!txn->Commit().ok()) ++bad;
                    ++reads;
                  }
                },
                1, &group)
              .ok());
  group.Wait();
  CHECK(writes == kRounds);
  CHECK(reads == kRounds);
  REQUIRE(bad == 0);
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

// sm_admin dump and load move data across format versions: a value as large as the engine
// stores must survive them.
TEST_CASE("a dump carries large values to a new database", "[unit][api]") {
  test::ScratchDir dir;
  Options options;
  options.path = dir.path() + "/a";
  options.buffer_pool_bytes = 8u << 20;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  const std::string big = Pattern(17u << 20, 9);  // above the dump's former field limit
  {
    auto db = MustOpen(options);
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "big", big).ok());
    REQUIRE(t->Insert(txn.get(), "small", "v").ok());
    REQUIRE(txn->Commit().ok());
    uint64_t tables = 0, rows = 0;
    Status s = admin::DumpDatabase(db.get(), dir.path() + "/a.dump", &tables, &rows);
    INFO(s.ToString());
    REQUIRE(s.ok());
    REQUIRE(rows == 2);
    REQUIRE(db->Close().ok());
  }
  uint64_t tables = 0, rows = 0;
  Status s = admin::LoadDatabase(dir.path() + "/a.dump", dir.path() + "/b", &tables, &rows);
  INFO(s.ToString());
  REQUIRE(s.ok());
  options.path = dir.path() + "/b";
  auto db = MustOpen(options);
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  REQUIRE(t->Get(txn.get(), "big", &value).ok());
  REQUIRE(value == big);
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

}  // namespace
}  // namespace sm
