// DropTable gives the dropped tree's pages back to the volume: at once when no transaction is
// active, after the transactions active at the drop have finished otherwise, and again at
// restart from the page-free records when a crash lost the allocation map's change.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "sm/api/api_internal.h"
#include "sm/io/fault_file.h"
#include "tests/api/api_test_util.h"

namespace sm {
namespace {

std::unique_ptr<Database> MustOpen(const Options& o) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(o, &db);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return db;
}

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%08d", i);
  return buf;
}

// Enough rows of 300 bytes for a tree of a few dozen pages and two levels.
void Fill(Database* db, Table* t, int rows) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int i = 0; i < rows; ++i) REQUIRE(t->Insert(txn.get(), Key(i), std::string(300, 'v')).ok());
  REQUIRE(txn->Commit().ok());
}

uint64_t Allocated(Database* db) { return db->stats().volume_pages_allocated; }

TEST_CASE("a dropped table's pages are freed and reused by the next table", "[unit][api]") {
  io::FaultInjectionFileSystem fs(71);
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
  Table* keep = nullptr;
  REQUIRE(db->CreateTable("keep", &keep).ok());
  Fill(db.get(), keep, 100);
  const uint64_t before = Allocated(db.get());
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  Fill(db.get(), t, 2000);
  const uint64_t filled = Allocated(db.get());
  REQUIRE(filled > before + 50);
  REQUIRE(db->DropTable("t").ok());
  CHECK(Allocated(db.get()) == before);
  REQUIRE(db->Verify().ok());

  const uint64_t file_pages = db->stats().volume_pages;
  Table* again = nullptr;
  REQUIRE(db->CreateTable("again", &again).ok());
  Fill(db.get(), again, 2000);
  CHECK(db->stats().volume_pages == file_pages);  // the freed pages served, the file did not grow
  CHECK(Allocated(db.get()) == filled);
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("a dropped table's pages wait for the transactions active at the drop",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(72);
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
  const uint64_t before = Allocated(db.get());
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  Fill(db.get(), t, 1000);
  const uint64_t filled = Allocated(db.get());
  std::unique_ptr<Transaction> user;
  REQUIRE(db->Begin(&user).ok());
  std::string value;
  REQUIRE(t->Get(user.get(), Key(7), &value).ok());

  REQUIRE(db->DropTable("t").ok());
  CHECK(Allocated(db.get()) == filled);  // the user may still be inside the tree
  CHECK(t->Get(user.get(), Key(7), &value).IsNotFound());
  std::unique_ptr<Transaction> later;  // began after the drop: does not hold the pages back
  REQUIRE(db->Begin(&later).ok());
  REQUIRE(db->Checkpoint().ok());
  CHECK(Allocated(db.get()) == filled);
  REQUIRE(user->Commit().ok());
  REQUIRE(db->Checkpoint().ok());
  CHECK(Allocated(db.get()) < filled);
  CHECK(Allocated(db.get()) <= before + 1);  // the catalog may have grown by a page
  REQUIRE(later->Commit().ok());
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("Close gives back the pages of a drop that waited", "[unit][api]") {
  io::FaultInjectionFileSystem fs(73);
  uint64_t filled = 0;
  {
    std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    Fill(db.get(), t, 1000);
    filled = Allocated(db.get());
    std::unique_ptr<Transaction> user;
    REQUIRE(db->Begin(&user).ok());
    REQUIRE(db->DropTable("t").ok());
    REQUIRE(user->Commit().ok());
    CHECK(Allocated(db.get()) == filled);
    REQUIRE(db->Close().ok());
  }
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
  CHECK(Allocated(db.get()) < filled - 20);
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("after a crash, redo frees a dropped table's pages again", "[crash][api]") {
  for (io::CrashMode mode : {io::CrashMode::kDropUnsynced, io::CrashMode::kTearUnsynced}) {
    io::FaultInjectionFileSystem fs(74);
    uint64_t dropped = 0, filled = 0;
    {
      Options o = test::SmallDbOptions(&fs);
      o.commit_mode = CommitMode::kDurable;
      std::unique_ptr<Database> db = MustOpen(o);
      Table* t = nullptr;
      REQUIRE(db->CreateTable("t", &t).ok());
      Fill(db.get(), t, 1500);
      // A checkpoint makes the full allocation map durable; the frees after it reach the map
      // on disk only through redo.
      REQUIRE(db->Checkpoint().ok());
      filled = Allocated(db.get());
      REQUIRE(db->DropTable("t").ok());
      dropped = Allocated(db.get());
      REQUIRE(dropped < filled - 20);
      // Something durable after the drop, so the page-free records are durable too.
      Table* u = nullptr;
      REQUIRE(db->CreateTable("u", &u).ok());
      Fill(db.get(), u, 10);
      static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    }
    fs.SimulateCrash(mode);
    std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
    Table* t = nullptr;
    CHECK(db->OpenTable("t", &t).IsNotFound());
    Table* u = nullptr;
    REQUIRE(db->OpenTable("u", &u).ok());
    CHECK(Allocated(db.get()) < filled - 20);
    REQUIRE(db->Verify().ok());
    REQUIRE(db->Close().ok());
  }
}

}  // namespace
}  // namespace sm
