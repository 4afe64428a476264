// Read-committed reads without key locks: a read of a leaf whose page LSN is below every
// uncommitted change (txn::Txn::HoldsOnlyCommitted) returns its rows unlocked; a leaf that a
// running transaction has changed is read under locks as before, so an uncommitted write is
// still waited for, never read.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"

namespace sm {
namespace {

using test::NumberedKey;

struct Fixture {
  Fixture() : fs(61) {
    Options o = test::SmallDbOptions(&fs);
    o.lock_wait_timeout = std::chrono::milliseconds(50);
    db = test::MustOpen(o);
    REQUIRE(db->CreateTable("t", &table).ok());
    std::unique_ptr<Transaction> load;
    REQUIRE(db->Begin(&load).ok());
    for (int i = 0; i < 100; ++i) REQUIRE(table->Insert(load.get(), NumberedKey(i), "old").ok());
    REQUIRE(load->Commit().ok());
  }
  std::unique_ptr<Transaction> Reader() {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn, Isolation::kReadCommitted).ok());
    // The table's intention lock, taken once by the first read: not counted below.
    std::string value;
    REQUIRE(table->Get(txn.get(), NumberedKey(99), &value).ok());
    return txn;
  }
  uint64_t LockRequests() { return db->stats().lock_requests; }
  // The lock requests that reading `key` in `txn` makes.
  uint64_t RequestsToRead(Transaction* txn, int key, std::string* value) {
    const uint64_t before = LockRequests();
    Status s = table->Get(txn, NumberedKey(key), value);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return LockRequests() - before;
  }

  io::FaultInjectionFileSystem fs;
  std::unique_ptr<Database> db;
  Table* table = nullptr;
};

TEST_CASE("read committed: rows of a leaf no running transaction changed are read unlocked",
          "[unit][api][isolation]") {
  Fixture f;
  std::unique_ptr<Transaction> reader = f.Reader();
  std::string value;
  CHECK(f.RequestsToRead(reader.get(), 5, &value) == 0);
  CHECK(value == "old");
  // An absent key (no next-key lock) and a scan (no lock per row).
  uint64_t before = f.LockRequests();
  CHECK(f.table->Get(reader.get(), "k00005x", &value).IsNotFound());
  std::unique_ptr<Cursor> cursor;
  REQUIRE(f.table->NewCursor(reader.get(), ScanOptions::All(), &cursor).ok());
  int rows = 0;
  for (; cursor->Valid(); ++rows) REQUIRE(cursor->Next().ok());
  CHECK(rows == 100);
  CHECK(f.LockRequests() == before);
  REQUIRE(reader->Commit().ok());

  // A serializable reader locks as always.
  std::unique_ptr<Transaction> serializable;
  REQUIRE(f.db->Begin(&serializable).ok());
  CHECK(f.RequestsToRead(serializable.get(), 6, &value) >= 1);
  REQUIRE(serializable->Commit().ok());
}

TEST_CASE("read committed: a leaf with an uncommitted change is read under locks",
          "[unit][api][isolation]") {
  Fixture f;
  std::unique_ptr<Transaction> early = f.Reader();  // its bound predates the writer
  std::unique_ptr<Transaction> writer;
  REQUIRE(f.db->Begin(&writer).ok());
  REQUIRE(f.table->Update(writer.get(), NumberedKey(50), "new").ok());

  // Another row of the changed leaf: locked (and granted), the committed value returned.
  std::string value;
  CHECK(f.RequestsToRead(early.get(), 51, &value) >= 1);
  CHECK(value == "old");
  std::unique_ptr<Transaction> late = f.Reader();  // its bound is the writer's first record
  CHECK(f.RequestsToRead(late.get(), 52, &value) >= 1);
  // The changed row itself: its lock waits for the writer, here until the timeout; the
  // uncommitted value is never returned.
  Status s = f.table->Get(late.get(), NumberedKey(50), &value);
  CHECK(s.IsLockTimeout());
  // A scan, too, waits at the changed row instead of reading past it.
  std::unique_ptr<Cursor> cursor;
  REQUIRE(f.table->NewCursor(early.get(), ScanOptions::All(), &cursor).ok());
  int seen = 0;  // rows the cursor stood on
  while (cursor->Valid() && seen < 100) {
    CHECK(cursor->value() == "old");
    ++seen;
    s = cursor->Next();
    if (!s.ok()) break;
  }
  CHECK(s.IsLockTimeout());
  CHECK(seen == 50);  // k00000 to k00049

  // Once the writer has committed, a reader that begins then reads the leaf unlocked again.
  REQUIRE(writer->Commit().ok());
  std::unique_ptr<Transaction> after = f.Reader();
  CHECK(f.RequestsToRead(after.get(), 50, &value) == 0);
  CHECK(value == "new");
  REQUIRE(after->Commit().ok());
}

}  // namespace
}  // namespace sm
