// Table::SplitRange: the cuts lie strictly inside the range in ascending order, the parts they
// make cover the range's rows exactly once and are of about equal size, and bad arguments are
// refused.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"

namespace sm {
namespace {

std::string K(int i) { return test::NumberedKey(i); }

struct Fixture {
  io::FaultInjectionFileSystem fs{5};
  std::unique_ptr<Database> db;
  Table* table = nullptr;

  explicit Fixture(int rows) {
    Options o = test::SmallDbOptions(&fs);
    o.buffer_pool_bytes = 16u << 20;
    REQUIRE(Database::Open(o, &db).ok());
    REQUIRE(db->CreateTable("t", &table).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int i = 0; i < rows; ++i)
      REQUIRE(table->Insert(txn.get(), K(i), std::string(60, 'v')).ok());
    REQUIRE(txn->Commit().ok());
  }
  ~Fixture() { CHECK(db->Close().ok()); }

  // The rows of each part that `cuts` make of `range`, read by a cursor per part.
  std::vector<int> CountParts(Transaction* txn, const ScanOptions& range,
                              const std::vector<std::string>& cuts) {
    std::vector<int> counts;
    for (size_t p = 0; p <= cuts.size(); ++p) {
      ScanOptions part = range;
      if (p > 0) {
        part.lower = cuts[p - 1];
        part.has_lower = true;
        part.lower_inclusive = true;
      }
      if (p < cuts.size()) {
        part.upper = cuts[p];
        part.has_upper = true;
        part.upper_inclusive = false;
      }
      std::unique_ptr<Cursor> cursor;
      REQUIRE(table->NewCursor(txn, part, &cursor).ok());
      int n = 0;
      while (cursor->Valid()) {
        ++n;
        REQUIRE(cursor->Next().ok());
      }
      REQUIRE(cursor->status().ok());
      counts.push_back(n);
    }
    return counts;
  }
};

void CheckCutsInside(const std::vector<std::string>& cuts, const ScanOptions& range) {
  CHECK(std::is_sorted(cuts.begin(), cuts.end()));
  CHECK(std::adjacent_find(cuts.begin(), cuts.end()) == cuts.end());
  for (const std::string& c : cuts) {
    if (range.has_lower) CHECK(c > range.lower);
    if (range.has_upper) CHECK(c < range.upper);
  }
}

TEST_CASE("SplitRange cuts a table into even parts that cover it once", "[unit][api]") {
  const int rows = 60000;
  Fixture f(rows);
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  for (size_t parts : {2, 3, 8}) {
    CAPTURE(parts);
    std::vector<std::string> cuts;
    REQUIRE(f.table->SplitRange(txn.get(), ScanOptions::All(), parts, &cuts).ok());
    REQUIRE(cuts.size() == parts - 1);
    CheckCutsInside(cuts, ScanOptions::All());
    std::vector<int> counts = f.CountParts(txn.get(), ScanOptions::All(), cuts);
    int total = 0;
    for (int n : counts) {
      total += n;
      // Even to within half a part either way: the cuts are separators of one level.
      CHECK(n > rows / static_cast<int>(parts) / 2);
      CHECK(n < rows / static_cast<int>(parts) * 3 / 2);
    }
    CHECK(total == rows);
  }
  REQUIRE(txn->Commit().ok());
}

TEST_CASE("SplitRange keeps the cuts of a key range inside it", "[unit][api]") {
  Fixture f(60000);
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  ScanOptions range = ScanOptions::Range(K(10000), K(40000));
  range.upper_inclusive = true;
  std::vector<std::string> cuts;
  REQUIRE(f.table->SplitRange(txn.get(), range, 4, &cuts).ok());
  REQUIRE(cuts.size() == 3);
  CheckCutsInside(cuts, range);
  std::vector<int> counts = f.CountParts(txn.get(), range, cuts);
  int total = 0;
  for (int n : counts) {
    total += n;
    CHECK(n > 30001 / 8);
  }
  CHECK(total == 30001);
  // A prefix range: "k1" holds k10000 .. k19999.
  REQUIRE(f.table->SplitRange(txn.get(), ScanOptions::Prefix("k1"), 2, &cuts).ok());
  REQUIRE(cuts.size() == 1);
  CheckCutsInside(cuts, ScanOptions::Prefix("k1"));
  counts = f.CountParts(txn.get(), ScanOptions::Prefix("k1"), cuts);
  CHECK(counts[0] + counts[1] == 10000);
  REQUIRE(txn->Commit().ok());
}

TEST_CASE("SplitRange of a small table or range makes fewer parts", "[unit][api]") {
  Fixture f(20);  // one leaf: the root
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  std::vector<std::string> cuts = {"stale"};
  REQUIRE(f.table->SplitRange(txn.get(), ScanOptions::All(), 4, &cuts).ok());
  CHECK(cuts.empty());
  REQUIRE(f.table->SplitRange(txn.get(), ScanOptions::All(), 1, &cuts).ok());
  CHECK(cuts.empty());
  REQUIRE(txn->Commit().ok());
}

TEST_CASE("SplitRange refuses bad arguments", "[unit][api]") {
  Fixture f(100);
  std::unique_ptr<Transaction> txn;
  REQUIRE(f.db->Begin(&txn).ok());
  std::vector<std::string> cuts;
  CHECK(f.table->SplitRange(txn.get(), ScanOptions::All(), 0, &cuts).IsInvalidArgument());
  ScanOptions reverse;
  reverse.reverse = true;
  CHECK(f.table->SplitRange(txn.get(), reverse, 2, &cuts).IsInvalidArgument());
  CHECK(f.table->SplitRange(txn.get(), ScanOptions::All(), 2, nullptr).IsInvalidArgument());
  REQUIRE(txn->Commit().ok());
  CHECK(!f.table->SplitRange(txn.get(), ScanOptions::All(), 2, &cuts).ok());  // finished
}

}  // namespace
}  // namespace sm
