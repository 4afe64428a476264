// DropTable gives the dropped tree's pages back to the volume: at once when no transaction is
// active, after the transactions active at the drop have finished otherwise, and again at
// restart from the page-free records when a crash lost the allocation map's change. A crash
// before the reclamation finished (before it began, half way, or while a transaction held the
// pages back) leaves a pending-drop entry from which Open finishes it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "tests/api/api_test_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

using test::MustOpen;

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%08d", i);
  return buf;
}

// Row i of a table: its key and its 300-byte value.
struct RowShape {
  std::string (*key)(int);
  char fill;
};

void FillWith(Database* db, Table* t, int rows, RowShape shape) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int i = 0; i < rows; ++i) {
    REQUIRE(t->Insert(txn.get(), shape.key(i), std::string(300, shape.fill)).ok());
  }
  REQUIRE(txn->Commit().ok());
}

void CheckWith(Database* db, Table* t, int rows, RowShape shape) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  for (int i = 0; i < rows; ++i) {
    Status s = t->Get(txn.get(), shape.key(i), &value);
    INFO("row " << i << ": " << s.ToString());
    REQUIRE(s.ok());
    REQUIRE(value == std::string(300, shape.fill));
  }
  REQUIRE(txn->Commit().ok());
}

// Enough rows of 300 bytes for a tree of a few dozen pages and two levels.
void Fill(Database* db, Table* t, int rows) { FillWith(db, t, rows, {Key, 'v'}); }
void CheckRows(Database* db, Table* t, int rows) { CheckWith(db, t, rows, {Key, 'v'}); }
Table* CreateFilled(Database* db, const char* name, int rows) {
  Table* t = nullptr;
  REQUIRE(db->CreateTable(name, &t).ok());
  Fill(db, t, rows);
  return t;
}
void CheckTable(Database* db, const char* name, int rows) {
  Table* t = nullptr;
  REQUIRE(db->OpenTable(name, &t).ok());
  CheckRows(db, t, rows);
}

uint64_t Allocated(Database* db) { return db->stats().volume_pages_allocated; }

api::DatabaseImpl* Impl(Database* db) { return static_cast<api::DatabaseImpl*>(db); }

// Allocated pages in no tree, from the Verify report's "(pages): A allocated, B in trees, C in
// none" line (Verify must pass).
uint64_t PagesInNoTree(Database* db) {
  std::string report;
  Status s = Impl(db)->VerifyWithReport(&report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  INFO(report);
  size_t at = report.find(" in none");
  REQUIRE(at != std::string::npos);
  size_t begin = report.rfind(", ", at);
  REQUIRE(begin != std::string::npos);
  return std::stoull(report.substr(begin + 2, at - begin - 2));
}

// Keys of 1,000 bytes leave room for about eight separators in an inner node, so a few hundred
// rows make a tree of four levels.
std::string TallKey(int i) { return std::string(990, 'p') + Key(i); }

void FillTall(Database* db, Table* t, int rows) { FillWith(db, t, rows, {TallKey, 'w'}); }
void CheckTallRows(Database* db, Table* t, int rows) { CheckWith(db, t, rows, {TallKey, 'w'}); }

std::vector<PageId> TreePages(Table* t) {
  std::vector<PageId> pages;
  index::VerifyOptions options;
  options.pages = &pages;
  REQUIRE(static_cast<api::TableImpl*>(t)->tree()->Verify(nullptr, options).ok());
  std::sort(pages.begin(), pages.end());
  return pages;
}

Options DurableOptions(io::FileSystem* fs) {
  Options o = test::SmallDbOptions(fs);
  o.commit_mode = CommitMode::kDurable;
  return o;
}

TEST_CASE("a dropped table's pages are freed and reused by the next table", "[unit][api]") {
  io::FaultInjectionFileSystem fs(71);
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
  CreateFilled(db.get(), "keep", 100);
  const uint64_t before = Allocated(db.get());
  CreateFilled(db.get(), "t", 2000);
  const uint64_t filled = Allocated(db.get());
  REQUIRE(filled > before + 50);
  REQUIRE(db->DropTable("t").ok());
  CHECK(Allocated(db.get()) == before);
  REQUIRE(db->Verify().ok());

  const uint64_t file_pages = db->stats().volume_pages;
  CreateFilled(db.get(), "again", 2000);
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
  Table* t = CreateFilled(db.get(), "t", 1000);
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
    CreateFilled(db.get(), "t", 1000);
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
      CreateFilled(db.get(), "t", 1500);
      // A checkpoint makes the full allocation map durable; the frees after it reach the map
      // on disk only through redo.
      REQUIRE(db->Checkpoint().ok());
      filled = Allocated(db.get());
      REQUIRE(db->DropTable("t").ok());
      dropped = Allocated(db.get());
      REQUIRE(dropped < filled - 20);
      // Something durable after the drop, so the page-free records are durable too.
      CreateFilled(db.get(), "u", 10);
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

// A durable database holding a table "keep" of 100 rows; *before: its allocated pages then.
std::unique_ptr<Database> OpenWithKeep(io::FaultInjectionFileSystem* fs, uint64_t* before) {
  std::unique_ptr<Database> db = MustOpen(DurableOptions(fs));
  CreateFilled(db.get(), "keep", 100);
  *before = Allocated(db.get());
  return db;
}

// Crashes the file system, reopens, and checks that the drop of "t" is complete: no table "t",
// no drop pending, no allocated page outside every tree.
std::unique_ptr<Database> ReopenAfterDropCrash(io::FaultInjectionFileSystem* fs,
                                               io::CrashMode mode) {
  fs->SimulateCrash(mode);
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(fs));
  Table* t = nullptr;
  CHECK(db->OpenTable("t", &t).IsNotFound());
  CHECK(Impl(db.get())->TEST_PendingDrops() == 0);
  CHECK(PagesInNoTree(db.get()) == 0);
  return db;
}

TEST_CASE("table names beginning with a NUL byte are reserved", "[unit][api]") {
  io::FaultInjectionFileSystem fs(80);
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
  Table* t = nullptr;
  const std::string reserved("\0drop\0\0\0\2", 9);
  CHECK(db->CreateTable(reserved, &t).IsInvalidArgument());
  CHECK(db->DropTable(reserved).IsInvalidArgument());
  REQUIRE(db->Close().ok());
}

// Regression: the pending drops lived only in memory, so a crash after the drop committed and
// before its page-free records were durable left the pages allocated in no tree for good.
TEST_CASE("a crash right after a drop committed: Open gives the pages back", "[crash][api]") {
  for (io::CrashMode mode : {io::CrashMode::kDropUnsynced, io::CrashMode::kTearUnsynced}) {
    io::FaultInjectionFileSystem fs(81);
    uint64_t before = 0, filled = 0, file_pages = 0;
    {
      std::unique_ptr<Database> db = OpenWithKeep(&fs, &before);
      CreateFilled(db.get(), "t", 1500);
      REQUIRE(db->Checkpoint().ok());  // the map on disk has the table's pages
      filled = Allocated(db.get());
      file_pages = db->stats().volume_pages;
      Impl(db.get())->TEST_KeepDroppedPages();  // the process dies before any page-free record
      REQUIRE(db->DropTable("t").ok());
      CHECK(Allocated(db.get()) == filled);
      Impl(db.get())->TEST_Crash();
    }
    std::unique_ptr<Database> db = ReopenAfterDropCrash(&fs, mode);
    CHECK(Allocated(db.get()) <= before + 1);  // the catalog may have grown by a page
    Table* again = nullptr;
    REQUIRE(db->CreateTable("t", &again).ok());  // the name is free again
    Fill(db.get(), again, 1500);
    CHECK(db->stats().volume_pages == file_pages);  // the file did not grow
    Table* keep = nullptr;
    REQUIRE(db->OpenTable("keep", &keep).ok());
    CheckRows(db.get(), keep, 100);
    CheckRows(db.get(), again, 1500);
    REQUIRE(db->Close().ok());
  }
}

// A crash half way through a reclamation, after `stop` steps (page-free records of eight pages,
// leaves first; the root's; the removal of the pending-drop entry): some of the tree's pages are
// free, some reused by a table created since, the rest still the dropped tree's. Open must free
// exactly the rest. In the last case every page is free and the table created since has the
// dropped tree's root page as its own root: Open must only remove the entry.
TEST_CASE("a crash in the middle of a reclamation: Open frees the rest exactly once",
          "[crash][api]") {
  constexpr uint32_t kChunkPages = 8;
  for (int stop_at : {0, 1, 2, 3, 4}) {
    for (bool checkpoint : {false, true}) {
      io::CrashMode mode = checkpoint ? io::CrashMode::kTearUnsynced : io::CrashMode::kDropUnsynced;
      io::FaultInjectionFileSystem fs(82);
      uint64_t before = 0;
      std::vector<PageId> dropped;
      {
        std::unique_ptr<Database> db = OpenWithKeep(&fs, &before);
        Table* t = nullptr;
        REQUIRE(db->CreateTable("t", &t).ok());
        FillTall(db.get(), t, 600);
        REQUIRE(db->Checkpoint().ok());
        dropped = TreePages(t);
        index::BtreeStats stats;
        REQUIRE(static_cast<api::TableImpl*>(t)->tree()->GetStats(&stats).ok());
        REQUIRE(stats.height >= 4);
        // Records below the root, then the root's, then the entry's removal.
        const int64_t chunks =
            static_cast<int64_t>((dropped.size() - 1 + kChunkPages - 1) / kChunkPages);
        const int64_t stops[] = {1, chunks / 2, chunks - 1, chunks, chunks + 1};
        const int64_t stop = stops[stop_at];
        INFO("stop after " << stop << " of " << chunks + 2 << " steps, checkpoint " << checkpoint);
        Impl(db.get())->TEST_LimitReclaim(kChunkPages, stop);
        const uint64_t filled = Allocated(db.get());
        const PageId root = static_cast<api::TableImpl*>(t)->tree()->root_page_id();
        REQUIRE(db->DropTable("t").ok());
        const uint64_t below_root =
            std::min<uint64_t>(static_cast<uint64_t>(stop) * kChunkPages, dropped.size() - 1);
        CHECK(Allocated(db.get()) == filled - below_root - (stop > chunks ? 1 : 0));
        CHECK(Impl(db.get())->TEST_PendingDrops() == 1);
        // A table created since reuses freed pages; its commit makes the page-free records
        // durable.
        Table* u = CreateFilled(db.get(), "u", 400);
        std::vector<PageId> reused = TreePages(u);
        std::vector<PageId> common;
        std::set_intersection(dropped.begin(), dropped.end(), reused.begin(), reused.end(),
                              std::back_inserter(common));
        CHECK(!common.empty());
        if (stop == chunks + 1) {  // the lowest free page, the first the dropped tree took
          CHECK(static_cast<api::TableImpl*>(u)->tree()->root_page_id() == root);
        }
        if (checkpoint) REQUIRE(db->Checkpoint().ok());  // the map on disk shows the reuse
        Impl(db.get())->TEST_Crash();
      }
      {
        std::unique_ptr<Database> db = ReopenAfterDropCrash(&fs, mode);
        CheckTable(db.get(), "keep", 100);
        CheckTable(db.get(), "u", 400);
        CHECK(Allocated(db.get()) < before + dropped.size() / 2);
        // A table created after the crash takes the freed pages and keeps its data.
        CreateFilled(db.get(), "v", 2000);
        REQUIRE(db->Close().ok());
      }
      std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
      CheckTable(db.get(), "u", 400);
      CheckTable(db.get(), "v", 2000);
      CHECK(PagesInNoTree(db.get()) == 0);
      REQUIRE(db->Close().ok());
    }
  }
}

TEST_CASE("a crash while a transaction holds a drop's pages back: Open gives them back",
          "[crash][api]") {
  io::FaultInjectionFileSystem fs(83);
  uint64_t before = 0, filled = 0;
  {
    std::unique_ptr<Database> db = MustOpen(DurableOptions(&fs));
    before = Allocated(db.get());
    Table* t = CreateFilled(db.get(), "t", 1000);
    filled = Allocated(db.get());
    std::unique_ptr<Transaction> user;
    REQUIRE(db->Begin(&user).ok());
    std::string value;
    REQUIRE(t->Get(user.get(), Key(7), &value).ok());
    REQUIRE(db->DropTable("t").ok());
    REQUIRE(db->Checkpoint().ok());  // the user still runs: nothing goes back
    CHECK(Allocated(db.get()) == filled);
    CHECK(Impl(db.get())->TEST_PendingDrops() == 1);
    Impl(db.get())->TEST_Crash();  // before the user ends
    user.reset();
  }
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  std::unique_ptr<Database> db = MustOpen(test::SmallDbOptions(&fs));
  CHECK(Impl(db.get())->TEST_PendingDrops() == 0);
  CHECK(Allocated(db.get()) <= before + 1);
  CHECK(PagesInNoTree(db.get()) == 0);
  REQUIRE(db->Close().ok());
}

// Several crashes, each after a random mix of creates, fills, drops stopped after a random
// number of steps (or held back by a reader, or not at all) and checkpoints: pending drops then
// meet at Open, and the pages of one may have gone to a table dropped later. After every
// restart each live table has its rows, no drop is pending and no page is in no tree.
TEST_CASE("crashes among drops, partial reclamations and reuse leak nothing",
          "[random][crash][api]") {
  const uint64_t seed = test::TestSeed("drop crash random");
  std::mt19937_64 rng(seed);
  struct Rows {
    int count = 0;
    bool tall = false;
  };
  for (int round = 0; round < 8; ++round) {
    io::FaultInjectionFileSystem fs(rng());
    std::map<std::string, Rows> live;
    int next_name = 0;
    for (int cycle = 0; cycle < 3; ++cycle) {
      INFO("round " << round << ", cycle " << cycle);
      {
        std::unique_ptr<Database> db = MustOpen(DurableOptions(&fs));
        std::vector<std::unique_ptr<Transaction>> readers;
        const int ops = 4 + static_cast<int>(rng() % 8);
        for (int op = 0; op < ops; ++op) {
          const uint64_t what = rng() % 10;
          if (what < 4 || live.empty()) {
            std::string name = "t" + std::to_string(next_name++);
            Table* t = nullptr;
            REQUIRE(db->CreateTable(name, &t).ok());
            Rows rows{50 + static_cast<int>(rng() % 1200), rng() % 3 == 0};
            if (rows.tall) rows.count = rows.count / 3;
            rows.tall ? FillTall(db.get(), t, rows.count) : Fill(db.get(), t, rows.count);
            live[name] = rows;
          } else if (what < 8) {
            auto it = live.begin();
            std::advance(it, static_cast<long>(rng() % live.size()));
            if (rng() % 4 == 0) {  // a reader holds this drop's pages back until the crash
              Table* t = nullptr;
              REQUIRE(db->OpenTable(it->first, &t).ok());
              std::unique_ptr<Transaction> reader;
              REQUIRE(db->Begin(&reader).ok());
              std::string value;
              Status s = t->Get(reader.get(), it->second.tall ? TallKey(0) : Key(0), &value);
              REQUIRE(s.ok());
              readers.push_back(std::move(reader));
            }
            const int64_t steps = rng() % 3 == 0 ? -1 : static_cast<int64_t>(rng() % 12);
            Impl(db.get())->TEST_LimitReclaim(4 + static_cast<uint32_t>(rng() % 13), steps);
            REQUIRE(db->DropTable(it->first).ok());
            live.erase(it);
          } else {
            Status s = db->Checkpoint();
            INFO(s.ToString());
            REQUIRE(s.ok());
          }
        }
        Impl(db.get())->TEST_Crash();
      }
      fs.SimulateCrash(rng() % 2 == 0 ? io::CrashMode::kDropUnsynced
                                      : io::CrashMode::kTearUnsynced);
      std::unique_ptr<Database> db = MustOpen(DurableOptions(&fs));
      CHECK(Impl(db.get())->TEST_PendingDrops() == 0);
      CHECK(PagesInNoTree(db.get()) == 0);
      CHECK(db->TableNames().size() == live.size());
      for (const auto& [name, rows] : live) {
        Table* t = nullptr;
        INFO(name);
        REQUIRE(db->OpenTable(name, &t).ok());
        rows.tall ? CheckTallRows(db.get(), t, rows.count) : CheckRows(db.get(), t, rows.count);
      }
      REQUIRE(db->Close().ok());
    }
  }
}

}  // namespace
}  // namespace sm
