// Cursor positioning: SeekToFirst, SeekToLast, Seek and SeekForPrev in key order within the
// range, Next and Prev in and against the scan's direction, the locks a Seek takes, and a
// cursor whose transaction has finished, which is !Valid() with the reason in status().
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

std::string K(int i) { return test::NumberedKey(i); }

// A table of the even keys 0, 2, ..., 2 * (rows - 1), values long enough to span many leaves.
struct Fixture {
  io::FaultInjectionFileSystem fs{11};
  std::unique_ptr<Database> db;
  Table* table = nullptr;
  std::map<std::string, std::string> model;

  explicit Fixture(int rows) {
    Options o = test::SmallDbOptions(&fs);
    o.lock_wait_timeout = std::chrono::milliseconds(200);
    REQUIRE(Database::Open(o, &db).ok());
    REQUIRE(db->CreateTable("t", &table).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int i = 0; i < rows; ++i) {
      std::string value(100, static_cast<char>('a' + i % 26));
      REQUIRE(table->Insert(txn.get(), K(2 * i), value).ok());
      model[K(2 * i)] = value;
    }
    REQUIRE(txn->Commit().ok());
  }
  ~Fixture() {
    if (db != nullptr) CHECK(db->Close().ok());
  }
};

// The cursor's row, or nullopt when it is !Valid(); its status must be OK.
std::optional<std::string> At(const Cursor& cursor) {
  REQUIRE(cursor.status().ok());
  if (!cursor.Valid()) return std::nullopt;
  return std::string(cursor.key());
}

TEST_CASE("a cursor seeks in key order and moves both ways within its range", "[unit][api]") {
  Fixture f(100);  // k00000, k00002, ..., k00198
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  std::unique_ptr<Cursor> c;
  REQUIRE(f.table->NewCursor(txn.get(), ScanOptions::Range(K(10), K(50)), &c).ok());
  CHECK(At(*c) == K(10));

  REQUIRE(c->SeekToLast().ok());
  CHECK(At(*c) == K(48));
  REQUIRE(c->SeekToFirst().ok());
  CHECK(At(*c) == K(10));
  REQUIRE(c->Seek(K(21)).ok());
  CHECK(At(*c) == K(22));
  CHECK(c->value() == f.model[K(22)]);
  REQUIRE(c->Seek(K(22)).ok());
  CHECK(At(*c) == K(22));
  REQUIRE(c->SeekForPrev(K(21)).ok());
  CHECK(At(*c) == K(20));
  REQUIRE(c->Seek(K(3)).ok());  // below the range: its first key
  CHECK(At(*c) == K(10));
  REQUIRE(c->SeekForPrev(K(99)).ok());  // above the range: its last key
  CHECK(At(*c) == K(48));
  REQUIRE(c->Seek(K(49)).ok());  // nothing at or above 49 inside [10, 50)
  CHECK(At(*c) == std::nullopt);
  REQUIRE(c->SeekForPrev(K(9)).ok());
  CHECK(At(*c) == std::nullopt);

  // Backwards from the last row to the range's start, then forwards again.
  REQUIRE(c->SeekToLast().ok());
  std::vector<std::string> down;
  while (c->Valid()) {
    down.emplace_back(c->key());
    REQUIRE(c->Prev().ok());
  }
  CHECK(At(*c) == std::nullopt);
  REQUIRE(down.size() == 20);
  CHECK(down.front() == K(48));
  CHECK(down.back() == K(10));
  CHECK(c->Prev().IsInvalidArgument());  // exhausted: only a Seek moves it
  REQUIRE(c->Seek(K(30)).ok());
  REQUIRE(c->Next().ok());
  CHECK(At(*c) == K(32));
  REQUIRE(c->Prev().ok());
  REQUIRE(c->Prev().ok());
  CHECK(At(*c) == K(28));
  REQUIRE(txn->Commit().ok());
}

TEST_CASE("on a reverse cursor Next moves down and Prev up, and seeks stay in key order",
          "[unit][api]") {
  Fixture f(50);
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  ScanOptions reverse = ScanOptions::All();
  reverse.reverse = true;
  std::unique_ptr<Cursor> c;
  REQUIRE(f.table->NewCursor(txn.get(), reverse, &c).ok());
  CHECK(At(*c) == K(98));
  REQUIRE(c->Next().ok());
  CHECK(At(*c) == K(96));
  REQUIRE(c->Prev().ok());
  REQUIRE(c->Prev().ok());
  CHECK(At(*c) == std::nullopt);  // past the largest key
  REQUIRE(c->SeekToFirst().ok());
  CHECK(At(*c) == K(0));
  REQUIRE(c->Next().ok());
  CHECK(At(*c) == std::nullopt);  // below the smallest
  REQUIRE(c->Seek(K(41)).ok());
  CHECK(At(*c) == K(42));
  REQUIRE(c->Next().ok());
  CHECK(At(*c) == K(40));
  REQUIRE(txn->Commit().ok());
}

TEST_CASE("random seeks and moves match an ordered map", "[random][api]") {
  const uint64_t seed = test::TestSeed("cursor seeks");
  std::mt19937_64 rng(seed);
  Fixture f(400);
  std::unique_ptr<Transaction> txn;
  std::unique_ptr<Cursor> c;
  for (int round = 0; round < 20; ++round) {
    INFO("seed " << seed << " round " << round);
    int a = static_cast<int>(rng() % 820);
    int b = static_cast<int>(rng() % 820);
    if (a > b) std::swap(a, b);
    ScanOptions o = ScanOptions::Range(K(a), K(b));
    o.lower_inclusive = rng() % 2 == 0;
    o.upper_inclusive = rng() % 2 == 0;
    o.reverse = rng() % 2 == 0;
    auto inside = [&](const std::string& k) {
      return (o.lower_inclusive ? k >= o.lower : k > o.lower) &&
             (o.upper_inclusive ? k <= o.upper : k < o.upper);
    };
    std::map<std::string, std::string> range;
    for (const auto& [k, v] : f.model) {
      if (inside(k)) range[k] = v;
    }
    REQUIRE(f.db->Begin(&txn).ok());
    REQUIRE(f.table->NewCursor(txn.get(), o, &c).ok());
    std::optional<std::string> expect;
    if (!range.empty()) expect = o.reverse ? range.rbegin()->first : range.begin()->first;
    // Moves up (+1) or down (-1) in key order from `expect`.
    auto step = [&](int dir) {
      auto it = range.find(*expect);
      if (dir > 0) {
        ++it;
        expect = it == range.end() ? std::nullopt : std::optional(it->first);
      } else {
        expect = it == range.begin() ? std::nullopt : std::optional(std::prev(it)->first);
      }
    };
    for (int op = 0; op < 200; ++op) {
      REQUIRE(At(*c) == expect);
      if (expect) REQUIRE(c->value() == range[*expect]);
      const std::string probe = K(static_cast<int>(rng() % 820));
      switch (rng() % 6) {
        case 0:
          REQUIRE(c->SeekToFirst().ok());
          expect = range.empty() ? std::nullopt : std::optional(range.begin()->first);
          break;
        case 1:
          REQUIRE(c->SeekToLast().ok());
          expect = range.empty() ? std::nullopt : std::optional(range.rbegin()->first);
          break;
        case 2: {
          REQUIRE(c->Seek(probe).ok());
          auto it = range.lower_bound(probe);
          expect = it == range.end() ? std::nullopt : std::optional(it->first);
          break;
        }
        case 3: {
          REQUIRE(c->SeekForPrev(probe).ok());
          auto it = range.upper_bound(probe);
          expect = it == range.begin() ? std::nullopt : std::optional(std::prev(it)->first);
          break;
        }
        case 4:
          if (!expect) break;
          REQUIRE(c->Next().ok());
          step(o.reverse ? -1 : 1);
          break;
        case 5:
          if (!expect) break;
          REQUIRE(c->Prev().ok());
          step(o.reverse ? 1 : -1);
          break;
      }
    }
    REQUIRE(txn->Commit().ok());
  }
}

TEST_CASE("a serializable Seek locks the gap it looked into", "[unit][api]") {
  Fixture f(20);
  std::unique_ptr<Transaction> reader;
  REQUIRE(f.db->Begin(&reader).ok());
  std::unique_ptr<Cursor> c;
  REQUIRE(f.table->NewCursor(reader.get(), ScanOptions::All(), &c).ok());
  REQUIRE(c->Seek(K(21)).ok());  // 21 is absent: the cursor stands on 22
  CHECK(At(*c) == K(22));
  std::unique_ptr<Transaction> writer;
  REQUIRE(f.db->Begin(&writer).ok());
  CHECK(f.table->Insert(writer.get(), K(21), "phantom").IsLockTimeout());
  REQUIRE(c->Seek(K(21)).ok());  // and the reader still finds no 21
  CHECK(At(*c) == K(22));
  REQUIRE(reader->Commit().ok());
  REQUIRE(f.db->Begin(&writer).ok());
  REQUIRE(f.table->Insert(writer.get(), K(21), "after").ok());
  REQUIRE(writer->Commit().ok());
}

TEST_CASE("a cursor of a finished transaction is !Valid() and says why", "[unit][api]") {
  Fixture f(10);
  std::unique_ptr<Transaction> txn;
  std::unique_ptr<Cursor> c;

  REQUIRE(f.db->Begin(&txn).ok());
  REQUIRE(f.table->NewCursor(txn.get(), ScanOptions::All(), &c).ok());
  REQUIRE(c->Valid());
  REQUIRE(txn->Commit().ok());
  CHECK_FALSE(c->Valid());
  CHECK(c->status().IsTxnFinished());
  CHECK(c->Next().IsTxnFinished());
  CHECK(c->Prev().IsTxnFinished());
  CHECK(c->SeekToFirst().IsTxnFinished());
  CHECK(c->Seek(K(4)).IsTxnFinished());
  CHECK(c->SeekForPrev(K(4)).IsTxnFinished());
  CHECK_FALSE(c->Valid());

  // The transaction object begins another transaction: not the cursor's.
  REQUIRE(f.db->Begin(&txn).ok());
  CHECK_FALSE(c->Valid());
  CHECK(c->SeekToLast().IsTxnFinished());
  REQUIRE(f.table->NewCursor(txn.get(), ScanOptions::All(), &c).ok());
  CHECK(c->status().ok());
  REQUIRE(txn->Abort().ok());
  CHECK_FALSE(c->Valid());
  CHECK_FALSE(c->status().ok());

  // Closed with the database.
  REQUIRE(f.db->Begin(&txn).ok());
  REQUIRE(f.table->NewCursor(txn.get(), ScanOptions::All(), &c).ok());
  REQUIRE(txn->Commit().ok());
  REQUIRE(f.db->Close().ok());  // the finished transaction object outlives the database
  f.db.reset();
  CHECK_FALSE(c->Valid());
  CHECK(c->status().IsClosed());
  CHECK(c->Seek(K(2)).IsClosed());
}

}  // namespace
}  // namespace sm
