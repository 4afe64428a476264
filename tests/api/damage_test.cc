// Damage to a closed database that the checksums alone do not settle: a damaged copy of the
// allocation map (the volume keeps two and silently takes the other), the pages of a dropped
// table (in no tree, so the tree walk never reads them), and the report Verify prints.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/page/page.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/fs_util.h"

namespace sm {
namespace {

Options DamageOptions(io::FileSystem* fs) {
  Options o = test::SmallDbOptions(fs);
  o.direct_io = false;
  return o;
}

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%07d", i);
  return buf;
}

void InsertRows(Database* db, Table* t, int from, int to) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int i = from; i < to; ++i) REQUIRE(t->Insert(txn.get(), Key(i), std::string(500, 'v')).ok());
  REQUIRE(txn->Commit().ok());
}

int CountRows(Database* db, Table* t) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::unique_ptr<Cursor> cursor;
  REQUIRE(t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  int n = 0;
  for (; cursor->Valid(); ++n) REQUIRE(cursor->Next().ok());
  REQUIRE(txn->Commit().ok());
  return n;
}

Status VerifyDb(Database* db, std::string* report) {
  return static_cast<api::DatabaseImpl*>(db)->VerifyWithReport(report);
}

// XORs the byte at `offset` of `path`, durably.
void FlipByte(io::FileSystem* fs, const std::string& path, uint64_t offset) {
  std::string bytes;
  REQUIRE(test::ReadWholeFile(fs, path, &bytes).ok());
  REQUIRE(offset < bytes.size());
  bytes[offset] ^= 0x20;
  REQUIRE(test::WriteWholeFile(fs, path, bytes).ok());
}

}  // namespace

// Before the fix, Open took the surviving map copy as it was; after a clean close nothing redid
// the allocations it lacked, and the next allocation handed out a page a tree still used.
TEST_CASE("a damaged allocation-map copy after a clean close loses no allocation", "[unit][api]") {
  io::FaultInjectionFileSystem fs(31);
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(DamageOptions(&fs), &db).ok());
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    InsertRows(db.get(), t, 0, 300);
    REQUIRE(db->Checkpoint().ok());  // one map copy as of here
    InsertRows(db.get(), t, 300, 600);
    REQUIRE(db->Close().ok());  // the other, with the pages allocated since
  }
  REQUIRE(test::CopyDir(&fs, "/db", "/base").ok());
  uint64_t remarked = 0;
  for (uint64_t slot_page : {1, 2}) {  // range 0's two map copies
    INFO("map copy at page " << slot_page);
    REQUIRE(test::DeleteDir(&fs, "/db").ok());
    REQUIRE(test::CopyDir(&fs, "/base", "/db").ok());
    FlipByte(&fs, "/db/data.sm", slot_page * kPageBytes + 100);
    std::unique_ptr<Database> db;
    OpenReport report;
    REQUIRE(Database::Open(DamageOptions(&fs), &db, &report).ok());
    CHECK(report.map_copies_rejected == 1);
    CHECK(report.ToString().find("1 damaged allocation-map copy (the other copy used") !=
          std::string::npos);
    remarked += report.pages_remarked;
    Table* t = nullptr;
    REQUIRE(db->OpenTable("t", &t).ok());
    InsertRows(db.get(), t, 600, 1200);  // allocates: must not hand out a page in use
    std::string text;
    Status verified = VerifyDb(db.get(), &text);
    INFO(verified.ToString());
    REQUIRE(verified.ok());
    CHECK(text.find("allocation-map copies were invalid at open") != std::string::npos);
    CHECK(CountRows(db.get(), t) == 1200);
    REQUIRE(db->Close().ok());
  }
  CHECK(remarked > 0);  // the newer copy was one of the two
}

namespace {

// Table "gone" with 200 rows, whose pages the database will keep when it is dropped (the state
// a crash between a drop and its reclamation leaves); returns its pages.
std::vector<PageId> CreateTableToDrop(Database* db) {
  static_cast<api::DatabaseImpl*>(db)->TEST_KeepDroppedPages();
  Table* t = nullptr;
  REQUIRE(db->CreateTable("gone", &t).ok());
  InsertRows(db, t, 0, 200);
  std::vector<PageId> pages;
  index::VerifyOptions options;
  options.pages = &pages;
  REQUIRE(static_cast<api::TableImpl*>(t)->tree()->Verify(nullptr, options).ok());
  return pages;
}

}  // namespace

TEST_CASE("Verify reads the pages of a dropped table, which no tree reaches", "[unit][api]") {
  io::FaultInjectionFileSystem fs(32);
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(DamageOptions(&fs), &db).ok());
  // Pages allocated in no tree while the database is open (Open gives back any it finds).
  std::vector<PageId> dropped = CreateTableToDrop(db.get());
  REQUIRE(db->Checkpoint().ok());  // the pages on disk
  REQUIRE(db->DropTable("gone").ok());
  REQUIRE(dropped.size() > 2);
  const uint64_t victim = dropped[dropped.size() / 2].value();
  FlipByte(&fs, "/db/data.sm", victim * kPageBytes + 4000);
  std::string text;
  Status s = VerifyDb(db.get(), &text);
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  CHECK(std::string(s.message()).find("page " + std::to_string(victim) + " (in no tree)") !=
        std::string::npos);
}

// A crash between a drop and its reclamation: Open finishes the drop and gives back the rest of
// the pages in no tree, but keeps a damaged one, so that Verify still names the damage.
TEST_CASE("Open keeps a damaged page of a dropped table for Verify to report", "[unit][api]") {
  io::FaultInjectionFileSystem fs(35);
  std::vector<PageId> dropped;
  uint64_t allocated_before_drop = 0;
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(DamageOptions(&fs), &db).ok());
    dropped = CreateTableToDrop(db.get());
    allocated_before_drop = db->stats().volume_pages_allocated;
    REQUIRE(db->DropTable("gone").ok());
    REQUIRE(db->Close().ok());  // the pending-drop entry stays
  }
  std::string file;
  REQUIRE(test::ReadWholeFile(&fs, "/db/data.sm", &file).ok());
  PageId victim;
  for (PageId id : dropped) {
    if (index::Node(file.data() + id.value() * kPageBytes).is_leaf()) victim = id;
  }
  REQUIRE(victim.valid());
  FlipByte(&fs, "/db/data.sm", victim.value() * kPageBytes + 4000);
  std::unique_ptr<Database> db;
  OpenReport report;
  REQUIRE(Database::Open(DamageOptions(&fs), &db, &report).ok());
  INFO(report.ToString());
  CHECK(report.orphan_pages_damaged == 1);
  CHECK(report.ToString().find("1 damaged page in no tree kept") != std::string::npos);
  // Everything of the dropped table but the damaged page went back.
  CHECK(db->stats().volume_pages_allocated + dropped.size() - 1 == allocated_before_drop);
  std::string text;
  Status s = VerifyDb(db.get(), &text);
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  CHECK(std::string(s.message()).find("page " + std::to_string(victim.value()) + " (in no tree)") !=
        std::string::npos);
}

// Open gives back the pages in no tree only if it could walk every tree: a page below damage
// might be a live one.
TEST_CASE("a damaged inner node makes Open keep the pages in no tree", "[unit][api]") {
  io::FaultInjectionFileSystem fs(34);
  PageId root;
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(DamageOptions(&fs), &db).ok());
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    for (int from = 0; from < 8000; from += 1000) InsertRows(db.get(), t, from, from + 1000);
    index::BtreeStats stats;
    REQUIRE(static_cast<api::TableImpl*>(t)->tree()->Verify(&stats).ok());
    REQUIRE(stats.height == 3);
    root = static_cast<api::TableImpl*>(t)->tree()->root_page_id();
    REQUIRE(db->Close().ok());
  }
  std::string file;
  REQUIRE(test::ReadWholeFile(&fs, "/db/data.sm", &file).ok());
  const PageId inner = index::Node(file.data() + root.value() * kPageBytes).leftmost_child();
  FlipByte(&fs, "/db/data.sm", inner.value() * kPageBytes + 100);  // in its header
  std::unique_ptr<Database> db;
  OpenReport report;
  REQUIRE(Database::Open(DamageOptions(&fs), &db, &report).ok());
  INFO(report.ToString());
  CHECK(report.orphan_pages_freed == 0);
  CHECK(report.orphan_sweep_skipped.find("page " + std::to_string(inner.value())) !=
        std::string::npos);
  CHECK(report.ToString().find("pages in no tree kept") != std::string::npos);
  std::string text;
  CHECK(VerifyDb(db.get(), &text).IsCorruption());
}

// A tree that names a page the volume does not have (a damaged child pointer behind a valid
// checksum): Open keeps the pages in no tree and says which page, and Verify reports it.
TEST_CASE("a child pointer to a page not allocated makes Open keep the pages in no tree",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(35);
  PageId root;
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(DamageOptions(&fs), &db).ok());
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    InsertRows(db.get(), t, 0, 400);
    index::BtreeStats stats;
    REQUIRE(static_cast<api::TableImpl*>(t)->tree()->Verify(&stats).ok());
    REQUIRE(stats.height == 2);  // the root's children are leaves, which the walk does not read
    root = static_cast<api::TableImpl*>(t)->tree()->root_page_id();
    REQUIRE(db->Close().ok());
  }
  std::string file;
  REQUIRE(test::ReadWholeFile(&fs, "/db/data.sm", &file).ok());
  char* page = file.data() + root.value() * kPageBytes;
  const uint64_t missing = file.size() / kPageBytes + 1000;
  std::memcpy(page + kPageHeaderBytes + offsetof(index::BtreeNodeHeader, leftmost_child), &missing,
              sizeof missing);
  SealPage(page);
  REQUIRE(test::WriteWholeFile(&fs, "/db/data.sm", file).ok());
  std::unique_ptr<Database> db;
  OpenReport report;
  REQUIRE(Database::Open(DamageOptions(&fs), &db, &report).ok());
  INFO(report.ToString());
  CHECK(report.orphan_pages_freed == 0);
  CHECK(report.orphan_sweep_skipped.find("a tree names page " + std::to_string(missing) +
                                         ", which is not allocated") != std::string::npos);
  std::string text;
  CHECK(VerifyDb(db.get(), &text).IsCorruption());
}

TEST_CASE("the Verify report has a line per tree, one for the pages and one for the log",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(33);
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(DamageOptions(&fs), &db).ok());
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  InsertRows(db.get(), t, 0, 100);
  std::string text;
  REQUIRE(VerifyDb(db.get(), &text).ok());
  INFO(text);
  CHECK(text.find("(catalog): height") == 0);
  CHECK(text.find("\nt: height") != std::string::npos);
  CHECK(text.find("\n(pages): ") != std::string::npos);
  CHECK(text.find("\n(log): LSN ") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 4);
  REQUIRE(db->Close().ok());
}

}  // namespace sm
