// Regression: a serializable scan stepping right over a leaf's end let a concurrent insertion
// into the gap it had just passed commit before the scan did (a phantom), found by the
// isolation test's count scans (isolation_test.cc).
//
// The scan observed the gap between the last key of one leaf and the first key of the next,
// released the first leaf, and only then locked that next key; an insertion at the end of the
// first leaf checked its kInsertNext lock on the same key in between, was granted (the scan held
// nothing there yet), inserted and committed. The scan now keeps the leaves it stepped over
// latched until it has locked the key beyond them (Cursor::Forward). The test stops the scan at
// that moment with Cursor::TEST_SetStepRightHook, starts the insertion on another thread and
// gives it time: it must not commit before the scan's transaction does.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "index/btree.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"

namespace sm {
namespace {

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%03d", i);
  return buf;
}

TEST_CASE("a scan stepping over a leaf's end blocks insertions into the gap it passed",
          "[unit][isolation]") {
  io::FaultInjectionFileSystem fs(1);
  Options options;
  options.path = "/db";
  options.file_system = &fs;
  options.buffer_pool_bytes = 4u << 20;
  options.commit_mode = CommitMode::kNone;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  options.workers = 1;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  {
    // Even keys of 1 KB: several leaves, and a free key (odd) in every gap.
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int i = 0; i < 60; i += 2)
      REQUIRE(table->Insert(txn.get(), Key(i), std::string(1000, 'v')).ok());
    REQUIRE(txn->Commit().ok());
  }

  std::atomic<bool> inserted_committed{false};
  std::string inserted_key;
  std::thread inserter;
  bool hooked = false;
  index::Cursor::TEST_SetStepRightHook([&](std::string_view last_key) {
    if (hooked) return;  // the first leaf boundary only
    hooked = true;
    // Sorts right after the last key of the leaf the scan left, before the next leaf's first.
    inserted_key = std::string(last_key) + "x";
    inserter = std::thread([&] {
      std::unique_ptr<Transaction> txn;
      if (!db->Begin(&txn).ok()) return;
      if (table->Insert(txn.get(), inserted_key, "phantom").ok() && txn->Commit().ok()) {
        inserted_committed.store(true);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // room for the race
  });

  std::unique_ptr<Transaction> scan_txn;
  REQUIRE(db->Begin(&scan_txn).ok());
  std::unique_ptr<Cursor> cursor;
  REQUIRE(table->NewCursor(scan_txn.get(), ScanOptions::All(), &cursor).ok());
  bool saw_inserted = false;
  int rows = 0;
  while (cursor->Valid()) {
    saw_inserted |= cursor->key() == inserted_key;
    ++rows;
    REQUIRE(cursor->Next().ok());
  }
  cursor.reset();
  const bool committed_during_scan = inserted_committed.load();
  REQUIRE(scan_txn->Commit().ok());
  if (inserter.joinable()) inserter.join();
  index::Cursor::TEST_SetStepRightHook(nullptr);

  REQUIRE(hooked);  // the scan did cross a leaf boundary
  INFO("scan saw " << rows << " rows; inserted " << inserted_key);
  // Serializable: an insertion the scan did not see is ordered after it, so it cannot have
  // committed while the scan's transaction still held its locks.
  CHECK_FALSE((committed_during_scan && !saw_inserted));
  CHECK(inserted_committed.load());  // it went in once the scan committed
  REQUIRE(db->Close().ok());
}

}  // namespace
}  // namespace sm
