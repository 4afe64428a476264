// Shared scans (query/shared_scan.h): queries whose scans of a whole table attach to one in
// progress each get exactly the rows an unshared run gives them, whether they attach mid-scan
// (and wrap around), stop early (LIMIT, a cursor destroyed), fall a window behind (and go on
// alone), scan an empty table, or run on threads beside writers committing (read committed:
// every row committed before the query began and never deleted, no row twice).
//
// The single-threaded cases interleave the cursors' Next calls in one thread, so they are
// deterministic; the random one prints its seed and replays it.
#include "query/shared_scan.h"

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "query/query.h"
#include "tests/query/query_test_util.h"
#include "tests/test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

TestRow RowFor(uint32_t id) {
  return MakeRow(id % 7, static_cast<int32_t>(id), "n", id * 0.5, id, 0, 1, "tail");
}

// A table "t" of ids 0..rows-1 in a catalog whose shared scans use small batches and windows,
// so that a few thousand rows reach wraps and detaches. With one thread pulling every cursor, a
// reader behind can only move once the driver gives up waiting: stall_ms 0 detaches it at once.
struct Fixture {
  explicit Fixture(uint32_t rows, SharedScans::Limits limits = {8, 4, 0}) {
    std::vector<std::pair<uint32_t, TestRow>> data;
    for (uint32_t id = 0; id < rows; ++id) data.emplace_back(id, RowFor(id));
    LoadTestTable(scratch.db(), "t", data);
    REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
    catalog.shared_scans()->TEST_SetLimits(limits);
  }
  ScratchDb scratch;
  Catalog catalog{scratch.db()};
};

Plan ScanIds(const Catalog& catalog) { return Plan::Scan(catalog, "t", {"id", "a"}); }

// One query's cursor, pulled a few rows at a time; it keeps the ids it got.
struct Puller {
  Puller(const Catalog& catalog, const Plan& plan, bool share = true) {
    QueryOptions options;
    options.share_scans = share;
    Status s = ResultCursor::Open(catalog, plan, options, &cursor);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  // Pulls up to n rows; false at the end.
  bool Pull(size_t n) {
    for (size_t i = 0; i < n && !done; ++i) {
      const Value* row = nullptr;
      REQUIRE(cursor->Next(&row).ok());
      if (row == nullptr) {
        done = true;
        REQUIRE(cursor->Close().ok());
      } else {
        ids.push_back(row[0].i);
      }
    }
    return !done;
  }
  void Finish() {
    while (Pull(64)) {
    }
  }
  std::vector<int64_t> SortedIds() const {
    std::vector<int64_t> out = ids;
    std::sort(out.begin(), out.end());
    return out;
  }
  std::unique_ptr<ResultCursor> cursor;
  std::vector<int64_t> ids;
  bool done = false;
};

std::vector<int64_t> Expected(const Catalog& catalog, const Plan& plan) {
  Puller alone(catalog, plan, /*share=*/false);
  alone.Finish();
  return alone.SortedIds();
}

bool NoDuplicates(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

TEST_CASE("a shared scan that attaches mid-scan wraps around and gets every row once",
          "[unit][query]") {
  Fixture f(3000);
  const Plan plan = ScanIds(f.catalog);
  const std::vector<int64_t> expected = Expected(f.catalog, plan);
  REQUIRE(expected.size() == 3000);
  Puller first(f.catalog, plan);
  first.Pull(1000);
  Puller second(f.catalog, plan);  // attaches about a third of the way in
  while (!first.done || !second.done) {
    first.Pull(3);
    second.Pull(3);
  }
  CHECK(first.SortedIds() == expected);
  CHECK(second.SortedIds() == expected);
  CHECK(second.ids.front() > 0);  // it began where the scan was, not at the start
  const SharedScanStats stats = f.catalog.shared_scans()->stats();
  CHECK(stats.scans == 1);
  CHECK(stats.attaches == 1);
  CHECK(stats.laps == 1);
  CHECK(stats.detaches == 0);
  CHECK(stats.batches > 0);
}

TEST_CASE("a shared scan's reader that falls a window behind goes on alone", "[unit][query]") {
  Fixture f(2000);
  const Plan plan = ScanIds(f.catalog);
  const std::vector<int64_t> expected = Expected(f.catalog, plan);
  SECTION("it has taken nothing yet") {
    Puller fast(f.catalog, plan), slow(f.catalog, plan);
    fast.Finish();
    slow.Finish();
    CHECK(fast.SortedIds() == expected);
    CHECK(slow.SortedIds() == expected);
  }
  SECTION("it attached mid-scan and stops in its first lap") {
    Puller fast(f.catalog, plan);
    fast.Pull(500);
    Puller slow(f.catalog, plan);
    slow.Pull(100);
    fast.Finish();
    slow.Finish();
    CHECK(fast.SortedIds() == expected);
    CHECK(slow.SortedIds() == expected);
  }
  SECTION("it falls behind in its second lap") {
    Puller fast(f.catalog, plan);
    fast.Pull(1500);
    Puller slow(f.catalog, plan);
    slow.Pull(900);                 // past the end of the first lap, into the second
    Puller third(f.catalog, plan);  // keeps the scan going into another lap
    third.Finish();
    fast.Finish();
    slow.Finish();
    CHECK(fast.SortedIds() == expected);
    CHECK(slow.SortedIds() == expected);
    CHECK(third.SortedIds() == expected);
  }
  CHECK(f.catalog.shared_scans()->stats().detaches >= 1);
}

TEST_CASE("a shared scan stopped early leaves the others whole", "[unit][query]") {
  Fixture f(2000);
  const Plan plan = ScanIds(f.catalog);
  const std::vector<int64_t> expected = Expected(f.catalog, plan);
  SECTION("a LIMIT") {
    Puller full(f.catalog, plan);
    full.Pull(300);
    Puller limited(f.catalog, plan.Limit(50));
    while (!full.done || !limited.done) {
      full.Pull(5);
      limited.Pull(1);
    }
    CHECK(full.SortedIds() == expected);
    CHECK(limited.ids.size() == 50);
    CHECK(NoDuplicates(limited.ids));
  }
  SECTION("a cursor destroyed mid-scan, while it drives and while it lags") {
    Puller full(f.catalog, plan);
    auto early = std::make_unique<Puller>(f.catalog, plan);
    early->Pull(700);
    full.Pull(10);
    early.reset();
    auto lagging = std::make_unique<Puller>(f.catalog, plan);
    lagging->Pull(1);
    full.Pull(100);
    lagging.reset();
    full.Finish();
    CHECK(full.SortedIds() == expected);
  }
  SECTION("a filter that keeps few rows") {
    const Plan sparse = plan.Filter(Col("a") == Int(3));
    const std::vector<int64_t> expected_sparse = Expected(f.catalog, sparse);
    Puller full(f.catalog, plan);
    full.Pull(600);
    Puller filtered(f.catalog, sparse);
    while (!full.done || !filtered.done) {
      full.Pull(4);
      filtered.Pull(1);
    }
    CHECK(full.SortedIds() == expected);
    CHECK(filtered.SortedIds() == expected_sparse);
  }
}

// A shared scan may begin mid-table, so a scan whose order an operator above it needs reads
// alone; one under a sort or a hash aggregation shares.
TEST_CASE("only scans whose order nothing relies on share", "[unit][query]") {
  Fixture f(1500);
  const Plan plan = ScanIds(f.catalog);
  Puller running(f.catalog, plan);
  running.Pull(500);
  SECTION("a merge join needs its inputs in key order") {
    const Plan right = Plan::Scan(f.catalog, "t", {"id", "b"}, {}, "r");
    const Plan join = plan.MergeJoin(right, {{"id", "r.id"}});
    const std::vector<int64_t> expected = Expected(f.catalog, join);
    Puller joined(f.catalog, join);
    joined.Finish();
    CHECK(joined.ids == expected);  // in key order, every id
    CHECK(f.catalog.shared_scans()->stats().attaches == 0);
  }
  SECTION("a sort aggregation needs its input grouped") {
    const Plan agg = plan.Aggregate({Col("id")}, {Count().As("n")}, AggStrategy::kSort);
    const std::vector<int64_t> expected = Expected(f.catalog, agg);
    Puller grouped(f.catalog, agg);
    grouped.Finish();
    CHECK(grouped.ids == expected);
    CHECK(f.catalog.shared_scans()->stats().attaches == 0);
  }
  SECTION("a sort does not") {
    const Plan sorted = plan.Sort({{"id"}});
    const std::vector<int64_t> expected = Expected(f.catalog, sorted);
    Puller ordered(f.catalog, sorted);
    ordered.Finish();
    CHECK(ordered.ids == expected);  // in key order again, after the sort
    CHECK(f.catalog.shared_scans()->stats().attaches == 1);
  }
  SECTION("a hash aggregation over a filter does not") {
    const Plan agg = plan.Filter(Col("a") > Int(2)).Aggregate({Col("id")}, {Count().As("n")});
    const std::vector<int64_t> expected = Expected(f.catalog, agg);
    Puller grouped(f.catalog, agg);
    grouped.Finish();
    CHECK(grouped.SortedIds() == expected);
    CHECK(f.catalog.shared_scans()->stats().attaches == 1);
  }
  running.Finish();
  CHECK(running.ids.size() == 1500);
}

TEST_CASE("a scan that needs key order shares from the start of a lap only", "[unit][query]") {
  Fixture f(1500);
  const Plan plan = ScanIds(f.catalog);
  const Plan right = Plan::Scan(f.catalog, "t", {"id", "b"}, {}, "r");
  const Plan join = plan.MergeJoin(right, {{"id", "r.id"}});
  const std::vector<int64_t> expected = Expected(f.catalog, join);
  Puller ordered(f.catalog, join);  // both its scans begin laps: the second attaches
  ordered.Pull(300);
  Puller unordered(f.catalog, plan);  // attaches mid-lap and wraps
  while (!ordered.done || !unordered.done) {
    ordered.Pull(2);
    unordered.Pull(2);
  }
  CHECK(ordered.ids == expected);  // in key order, every id
  CHECK(unordered.SortedIds() == Expected(f.catalog, plan));
  const SharedScanStats stats = f.catalog.shared_scans()->stats();
  CHECK(stats.scans == 1);
  CHECK(stats.attaches == 2);
}

TEST_CASE("shared scans of an empty table return nothing", "[unit][query]") {
  Fixture f(0);
  const Plan plan = ScanIds(f.catalog);
  Puller a(f.catalog, plan), b(f.catalog, plan);
  a.Finish();
  b.Finish();
  CHECK(a.ids.empty());
  CHECK(b.ids.empty());
  Puller c(f.catalog, plan);
  c.Finish();
  CHECK(c.ids.empty());
}

TEST_CASE("queries starting and stopping at random points share scans exactly", "[random][query]") {
  const uint64_t seed = TestSeed("shared scans at random points");
  for (uint64_t round = 0; round < 6; ++round) {
    std::mt19937_64 rng(seed + round);
    INFO("round " << round);
    const uint32_t rows = 200 + static_cast<uint32_t>(rng() % 2000);
    Fixture f(rows,
              {1 + static_cast<uint32_t>(rng() % 16), 1 + static_cast<uint32_t>(rng() % 6), 0});
    const std::vector<Plan> plans = {ScanIds(f.catalog),
                                     ScanIds(f.catalog).Filter(Col("a") < Int(3)),
                                     ScanIds(f.catalog).Limit(rows / 3)};
    std::vector<std::vector<int64_t>> expected;
    for (const Plan& p : plans) expected.push_back(Expected(f.catalog, p));
    struct Query {
      size_t plan = 0;
      std::unique_ptr<Puller> puller;
    };
    std::vector<Query> queries;
    uint32_t started = 0, checked = 0;
    while (started < 12 || !queries.empty()) {
      const uint64_t action = rng() % 100;
      if (started < 12 && (queries.empty() || (action < 5 && queries.size() < 5))) {
        Query q;
        q.plan = rng() % plans.size();
        q.puller = std::make_unique<Puller>(f.catalog, plans[q.plan]);
        queries.push_back(std::move(q));
        ++started;
        continue;
      }
      const size_t i = rng() % queries.size();
      Query& q = queries[i];
      if (action == 5) {  // stops early: destroyed mid-scan
        CHECK(NoDuplicates(q.puller->ids));
        queries.erase(queries.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      q.puller->Pull(1 + rng() % 40);
      if (!q.puller->done) continue;
      if (q.plan == 2) {
        CHECK(q.puller->ids.size() == expected[2].size());
        CHECK(NoDuplicates(q.puller->ids));
      } else {
        CHECK(q.puller->SortedIds() == expected[q.plan]);
      }
      ++checked;
      queries.erase(queries.begin() + static_cast<std::ptrdiff_t>(i));
    }
    CHECK(checked > 0);
  }
}

// Threads run shared scans while writers insert new ids and delete old ones, each change in a
// transaction of its own. A query must return every id that was committed before it began and
// never deleted, and no id twice.
TEST_CASE("shared scans beside committing writers read committed rows once", "[unit][query]") {
  constexpr uint32_t kRows = 3000;
  constexpr uint32_t kDeletable = 500;  // ids below this may be deleted
  Fixture f(kRows, {16, 8, 5});
  Table* table = nullptr;
  {
    const TableSchema* schema = nullptr;
    REQUIRE(f.catalog.Lookup("t", &schema, &table).ok());
  }
  std::atomic<uint32_t> inserted{0};  // release: ids kRows..kRows+inserted-1 are committed
  std::atomic<bool> stop{false};      // relaxed: a flag polled by the writer
  std::atomic<bool> writer_ok{true};  // relaxed: read after join
  std::thread writer([&] {
    std::unique_ptr<Transaction> txn;
    std::mt19937 rng(7);
    for (uint32_t n = 0; !stop.load(std::memory_order_relaxed) && n < 20000; ++n) {
      if (!f.scratch.db()->Begin(&txn, Isolation::kReadCommitted).ok()) {
        writer_ok = false;
        return;
      }
      Status s;
      const uint32_t next = inserted.load(std::memory_order_relaxed);
      if (n % 3 == 0) {
        s = table->Delete(txn.get(), IdKey(rng() % kDeletable));
        if (s.IsNotFound()) s = Status::OK();
      } else {
        s = table->Insert(txn.get(), IdKey(kRows + next), EncodeTestRow(RowFor(kRows + next)));
      }
      if (s.ok()) s = txn->Commit();
      if (!s.ok()) {
        txn->Abort().PermitUnchecked();
        continue;  // a lock timeout or deadlock: try another change
      }
      if (n % 3 != 0) inserted.store(next + 1, std::memory_order_release);
    }
  });
  const Plan plan = ScanIds(f.catalog);
  std::atomic<int> failures{0};  // relaxed: read after join
  auto reader = [&](uint32_t seed) {
    std::mt19937 rng(seed);
    for (int q = 0; q < 4; ++q) {
      const uint32_t committed = inserted.load(std::memory_order_acquire);
      QueryOptions options;
      options.share_scans = true;
      std::unique_ptr<ResultCursor> cursor;
      if (!ResultCursor::Open(f.catalog, plan, options, &cursor).ok()) {
        failures.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      std::vector<int64_t> ids;
      for (;;) {
        const Value* row = nullptr;
        if (!cursor->Next(&row).ok()) {
          failures.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        if (row == nullptr) break;
        ids.push_back(row[0].i);
        if (rng() % 500 == 0) std::this_thread::yield();  // vary who drives
      }
      if (!cursor->Close().ok()) failures.fetch_add(1, std::memory_order_relaxed);
      std::sort(ids.begin(), ids.end());
      const bool unique = std::adjacent_find(ids.begin(), ids.end()) == ids.end();
      bool whole = true;
      for (uint32_t id = kDeletable; id < kRows + committed && whole; ++id) {
        whole = std::binary_search(ids.begin(), ids.end(), int64_t{id});
      }
      if (!unique || !whole) failures.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> readers;
  for (uint32_t r = 0; r < 3; ++r) readers.emplace_back(reader, 100 + r);
  for (std::thread& t : readers) t.join();
  stop.store(true, std::memory_order_relaxed);
  writer.join();
  CHECK(writer_ok.load());
  CHECK(failures.load() == 0);
  CHECK(inserted.load() > 0);
}

}  // namespace
}  // namespace sm::test
