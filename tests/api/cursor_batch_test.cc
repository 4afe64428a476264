// Cursor::NextBatch: the same rows as Next, its stops, its refusals, and its read-committed
// reads, which skip per-row locks only while no other transaction can write the table.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"

namespace sm {
namespace {

std::string K(int i) { return test::NumberedKey(i); }

struct Fixture {
  io::FaultInjectionFileSystem fs{7};
  std::unique_ptr<Database> db;
  Table* table = nullptr;
  explicit Fixture(int rows) {
    Options o = test::SmallDbOptions(&fs);
    o.lock_wait_timeout = std::chrono::milliseconds(5000);
    REQUIRE(Database::Open(o, &db).ok());
    REQUIRE(db->CreateTable("t", &table).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    // Values long enough that the rows span many leaves.
    for (int i = 0; i < rows; ++i) {
      REQUIRE(table->Insert(txn.get(), K(i), std::string(100, 'a' + i % 26)).ok());
    }
    REQUIRE(txn->Commit().ok());
  }
  ~Fixture() {
    if (db) db->Close().PermitUnchecked();
  }
};

// Reads [lower, upper) with NextBatch batches of `batch` rows.
std::vector<std::string> ReadBatched(Table* table, Transaction* txn, const ScanOptions& range,
                                     size_t batch) {
  std::vector<std::string> keys;
  std::unique_ptr<Cursor> cursor;
  REQUIRE(table->NewCursor(txn, range, &cursor).ok());
  if (!cursor->Valid()) return keys;
  keys.emplace_back(cursor->key());
  for (;;) {
    size_t visited = 0;
    REQUIRE(cursor
                ->NextBatch(
                    batch,
                    [&](std::string_view k, std::string_view v) {
                      CHECK(v.size() == 100);
                      keys.emplace_back(k);
                      return true;
                    },
                    &visited)
                .ok());
    CHECK(visited <= batch);
    if (!cursor->Valid()) break;
    CHECK(cursor->key() == keys.back());  // on the last row visited
    if (visited == 0) break;
  }
  return keys;
}

TEST_CASE("NextBatch visits the rows Next would", "[unit][api]") {
  Fixture f(2000);
  for (Isolation iso : {Isolation::kSerializable, Isolation::kReadCommitted}) {
    std::unique_ptr<Transaction> txn;
    REQUIRE(f.db->Begin(&txn, iso).ok());
    for (size_t batch : {1, 3, 64, 5000}) {
      INFO("batch " << batch);
      std::vector<std::string> all = ReadBatched(f.table, txn.get(), ScanOptions::All(), batch);
      REQUIRE(all.size() == 2000);
      for (int i = 0; i < 2000; ++i) REQUIRE(all[i] == K(i));
      std::vector<std::string> part =
          ReadBatched(f.table, txn.get(), ScanOptions::Range(K(500), K(1500)), batch);
      REQUIRE(part.size() == 1000);
      CHECK(part.front() == K(500));
      CHECK(part.back() == K(1499));
    }
    REQUIRE(txn->Commit().ok());
  }
}

TEST_CASE("NextBatch stops where its visitor says", "[unit][api]") {
  Fixture f(300);
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  std::unique_ptr<Cursor> cursor;
  REQUIRE(f.table->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  size_t visited = 0;
  int seen = 0;
  REQUIRE(cursor
              ->NextBatch(
                  100, [&](std::string_view, std::string_view) { return ++seen < 7; }, &visited)
              .ok());
  CHECK(visited == 7);
  CHECK(cursor->key() == K(7));
  REQUIRE(cursor->Next().ok());
  CHECK(cursor->key() == K(8));
}

TEST_CASE("NextBatch refuses reverse cursors and finished transactions", "[unit][api]") {
  Fixture f(10);
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  ScanOptions reverse = ScanOptions::All();
  reverse.reverse = true;
  std::unique_ptr<Cursor> cursor;
  REQUIRE(f.table->NewCursor(txn.get(), reverse, &cursor).ok());
  size_t visited = 0;
  auto any = [](std::string_view, std::string_view) { return true; };
  CHECK(cursor->NextBatch(5, any, &visited).IsInvalidArgument());
  REQUIRE(f.table->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  REQUIRE(txn->Commit().ok());
  CHECK(cursor->NextBatch(5, any, &visited).IsTxnFinished());
  CHECK(cursor->Next().IsTxnFinished());
  CHECK(visited == 0);
}

TEST_CASE("a read-committed NextBatch waits for an uncommitted row", "[unit][api]") {
  Fixture f(500);
  std::unique_ptr<Transaction> writer;
  REQUIRE(f.db->Begin(&writer).ok());
  REQUIRE(f.table->Update(writer.get(), K(400), std::string(100, '!')).ok());
  std::unique_ptr<Transaction> reader;
  REQUIRE(f.db->Begin(&reader, Isolation::kReadCommitted).ok());
  // Catch2's assertions are not thread-safe: the thread keeps its result for the main thread.
  Status aborted;
  std::thread committer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    aborted = writer->Abort();
  });
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> values;
  std::unique_ptr<Cursor> cursor;
  REQUIRE(f.table->NewCursor(reader.get(), ScanOptions::All(), &cursor).ok());
  size_t visited = 0;
  REQUIRE(cursor
              ->NextBatch(
                  1000,
                  [&](std::string_view, std::string_view v) {
                    values.emplace_back(v);
                    return true;
                  },
                  &visited)
              .ok());
  committer.join();
  CHECK(aborted.ok());
  // The aborted update was never read: the scan waited at k00400 for the writer to end.
  REQUIRE(values.size() == 499);
  CHECK(values[399] == std::string(100, 'a' + 400 % 26));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(150));
  REQUIRE(reader->Commit().ok());
}

}  // namespace
}  // namespace sm
