// Parallel aggregation: a hash aggregation over a scan's pipeline, run on 2 to 4 threads over
// parts of the scan's key range, returns what it returns on one thread (grouped and not, over
// filters, projections, hash, index and merge joins, key ranges, an empty range, few groups),
// reads every row once, cuts merge joins on leading key columns at the same keys on both sides,
// merges the values COUNT(DISTINCT) saw in each part, and runs on one thread where it must
// (serializable, a caller's transaction, a merge join's input in another order).
#include <memory>
#include <string>

#include "query/query.h"
#include "tests/query/query_test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

constexpr uint32_t kRows = 4000;  // about fifty leaves: SplitRange finds cuts for 4 parts

using Outcome = CursorRun;

Outcome RunWith(const Catalog& catalog, const Plan& plan, const QueryOptions& options) {
  return RunCursor(catalog, plan, options);
}

bool RanInParallel(const Outcome& o) {
  return o.root_detail.find("parts in parallel") != std::string::npos;
}

// Runs `plan` on 1 thread and on 2, 3 and 4: the same rows (in the same order, for a plan that
// orders them) and rows read each time, and (if `parallel`) the operator at the root split on
// more than one thread.
void CheckSameOnThreads(const Catalog& catalog, const Plan& plan, bool parallel,
                        bool ordered = false) {
  Outcome serial = RunWith(catalog, plan, {});
  if (!ordered) serial.rows = Sorted(std::move(serial.rows));
  CHECK(!RanInParallel(serial));
  for (uint32_t threads : {2u, 3u, 4u}) {
    CAPTURE(threads);
    QueryOptions options;
    options.threads = threads;
    Outcome par = RunWith(catalog, plan, options);
    if (!ordered) par.rows = Sorted(std::move(par.rows));
    CHECK(par.rows == serial.rows);
    CHECK(par.rows_read == serial.rows_read);
    CHECK(RanInParallel(par) == parallel);
  }
}

std::vector<Agg> EveryMergeableAgg() {
  return {Count().As("n"),
          Count(Col("maybe")).As("n_maybe"),
          Sum(Col("cents")).As("sc"),
          Sum(Col("maybe")).As("sm"),
          Sum(Col("d")).As("sd"),
          Avg(Col("maybe")).As("am"),
          Min(Col("name")).As("lo"),
          Max(Col("tail")).As("hi")};
}

Plan ScanAll(const PlanFixture& f, const char* table = "t", KeyRange range = {}) {
  return Plan::Scan(f.catalog, table, {"id", "a", "name", "d", "cents", "maybe", "tail"},
                    std::move(range));
}

TEST_CASE("a parallel hash aggregation returns the serial result", "[unit][query]") {
  PlanFixture f(kRows);
  SECTION("grouped, every mergeable aggregate") {
    CheckSameOnThreads(f.catalog, ScanAll(f).Aggregate({Col("a")}, EveryMergeableAgg()), true);
  }
  SECTION("no group keys, under a filter and a projection") {
    Plan p = ScanAll(f)
                 .Filter(Col("a") < Int(7))
                 .Project({Col("a"), Col("name"), Col("d"), Col("cents"), Col("maybe"),
                           NamedExpr(Col("tail"), "tail")})
                 .Aggregate({}, EveryMergeableAgg());
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("COUNT(DISTINCT): the parts' values merged, ints, doubles and strings") {
    // Values repeat within a part and across parts: a count that added the parts' counts
    // would be too high.
    Plan p = ScanAll(f).Aggregate({Col("name")}, {CountDistinct(Col("a")).As("na"),
                                                  CountDistinct(Col("d")).As("nd"),
                                                  CountDistinct(Col("tail")).As("nt"),
                                                  CountDistinct(Col("maybe")).As("nm"),
                                                  Count().As("n")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("COUNT(DISTINCT) without group keys, and one distinct value") {
    Plan p = ScanAll(f).Aggregate({}, {CountDistinct(Col("a")).As("na"),
                                       CountDistinct(Col("name")).As("nn"),
                                       CountDistinct(Int(7)).As("one")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("few groups: one value of a string key per part") {
    CheckSameOnThreads(f.catalog, ScanAll(f).Aggregate({Col("name")}, {Count().As("n")}), true);
  }
  SECTION("the probe side of a hash join") {
    Plan build = Plan::Scan(f.catalog, "u", {"id", "b"}).Filter(Col("b") > Int(0));
    Plan p = ScanAll(f)
                 .HashJoin(build, {{Col("a"), Col("b")}})
                 .Aggregate({Col("name")}, {Count().As("n"), Sum(Col("cents")).As("sc")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("the outer side of an index join") {
    Plan p = ScanAll(f)
                 .IndexJoin(f.catalog, "u", {Col("a")}, {"b"}, JoinType::kLeftOuter)
                 .Aggregate({Col("b")}, {Count().As("n"), Max(Col("id")).As("top")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("a merge join on the leading key columns of both tables") {
    Plan right = Plan::Scan(f.catalog, "u", {"id", "b"}, KeyRange{{Int(500)}, {Int(15000)}}, "r")
                     .Filter(Col("r.b") > Int(-20));
    Plan p = ScanAll(f)
                 .MergeJoin(right, {{"id", "r.id"}}, JoinType::kLeftOuter)
                 .Aggregate({Col("name")}, {Count().As("n"), Sum(Col("r.b")).As("sb")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("a merge join with a sort aggregation on the leading key column") {
    Plan right = Plan::Scan(f.catalog, "u", {"id", "b"}, {}, "r")
                     .Aggregate({NamedExpr(Col("r.id"), "rid")}, {Sum(Col("r.b")).As("sb")},
                                AggStrategy::kSort);
    Plan p = ScanAll(f)
                 .MergeJoin(right, {{"id", "rid"}})
                 .Aggregate({Col("name")}, {Count().As("n"), Sum(Col("sb")).As("total")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("a sort aggregation on the leading key column") {
    Plan p = ScanAll(f)
                 .Aggregate({Col("id")}, {Sum(Col("cents")).As("sc")}, AggStrategy::kSort)
                 .Aggregate({}, {Count().As("n"), Sum(Col("sc")).As("total")});
    CheckSameOnThreads(f.catalog, p, true);
  }
  SECTION("a key range of the scan, and an empty one") {
    CheckSameOnThreads(f.catalog,
                       ScanAll(f, "t", KeyRange{{Int(3000)}, {Int(17000)}})
                           .Aggregate({Col("a")}, {Count().As("n"), Sum(Col("cents")).As("sc")}),
                       true);
    Outcome empty = RunWith(
        f.catalog, ScanAll(f, "t", KeyRange{{Int(kRows + 1)}, {}}).Aggregate({}, {Count()}), [] {
          QueryOptions o;
          o.threads = 2;
          return o;
        }());
    REQUIRE(empty.rows.size() == 1);
    CHECK(empty.rows[0][0] == "0");
  }
}

TEST_CASE("a sort and a materialized subquery collect their input on several threads",
          "[unit][query]") {
  PlanFixture f(kRows);
  SECTION("a sort: each part sorted on its thread, merged so that equal keys keep their order") {
    Plan build = Plan::Scan(f.catalog, "u", {"id", "b"}).Filter(Col("b") > Int(0));
    Plan p = ScanAll(f)
                 .Filter(Col("maybe") > Int(2))
                 .HashJoin(build, {{Col("a"), Col("b")}})
                 .Project({Col("id"), Col("a"), Col("name")})
                 .Sort({{"a"}, {"name"}});
    CheckSameOnThreads(f.catalog, p, true, /*ordered=*/true);
  }
  SECTION("a sort on a key most rows share, ascending and descending") {
    CheckSameOnThreads(f.catalog, ScanAll(f).Project({Col("id"), Col("a")}).Sort({{"a"}}), true,
                       /*ordered=*/true);
    CheckSameOnThreads(f.catalog,
                       ScanAll(f).Project({Col("id"), Col("maybe")}).Sort({Desc("maybe")}), true,
                       /*ordered=*/true);
  }
  SECTION("a materialized view read twice") {
    Plan view = ScanAll(f).Filter(Col("a") < Int(10)).Project({Col("id"), Col("a")}).Materialize();
    Plan p =
        view.HashJoin(view.Filter(Col("a") < Int(3)), {{Col("id"), Col("id")}}, JoinType::kSemi)
            .Aggregate({}, {Count().As("n"), Sum(Col("a")).As("sa")});
    Outcome serial = RunWith(f.catalog, p, {});
    QueryOptions options;
    options.threads = 3;
    Outcome par = RunWith(f.catalog, p, options);
    CHECK(par.rows == serial.rows);
    CHECK(par.rows_read == serial.rows_read);
    INFO(par.explain);
    CHECK(par.explain.find("Materialize 3 parts in parallel") != std::string::npos);
    CHECK(serial.explain.find("parts in parallel") == std::string::npos);
  }
}

TEST_CASE("a hash aggregation runs on one thread where it must", "[unit][query]") {
  PlanFixture f(kRows);
  SECTION("a merge join whose right input is not in the scan's key order") {
    Plan right = Plan::Scan(f.catalog, "u", {"id", "b"}, {}, "r").Sort({{"r.id"}});
    Plan p = ScanAll(f).MergeJoin(right, {{"id", "r.id"}}).Aggregate({}, {Count().As("n")});
    CheckSameOnThreads(f.catalog, p, false);
  }
  SECTION("a sort aggregation whose groups are not runs of leading key columns") {
    Plan p = ScanAll(f)
                 .Aggregate({Col("a")}, {Count().As("c")}, AggStrategy::kSort)
                 .Aggregate({}, {Count().As("n")});
    CheckSameOnThreads(f.catalog, p, false);
  }
  SECTION("an input that is not a pipeline over a scan") {
    Plan p = ScanAll(f).Sort({{"a"}}).Aggregate({Col("a")}, {Count().As("n")});
    CheckSameOnThreads(f.catalog, p, false);
  }
  QueryOptions options;
  options.threads = 2;
  Plan p = ScanAll(f).Aggregate({Col("a")}, {Count().As("n")});
  SECTION("serializable: one transaction keeps the locks") {
    options.isolation = Isolation::kSerializable;
    CHECK(!RanInParallel(RunWith(f.catalog, p, options)));
  }
  SECTION("the caller's transaction, whose writes only it sees") {
    std::unique_ptr<Transaction> txn;
    REQUIRE(f.scratch.db()->Begin(&txn, Isolation::kReadCommitted).ok());
    Table* t = nullptr;
    REQUIRE(f.scratch.db()->OpenTable("t", &t).ok());
    REQUIRE(t->Insert(txn.get(), IdKey(kRows + 5), EncodeTestRow(f.rows[0].second)).ok());
    options.txn = txn.get();
    Outcome o = RunWith(f.catalog, ScanAll(f).Aggregate({}, {Count()}), options);
    CHECK(!RanInParallel(o));
    CHECK(o.rows[0][0] == std::to_string(kRows + 1));
    REQUIRE(txn->Abort().ok());
  }
  SECTION("a thread count out of range is refused") {
    std::unique_ptr<ResultCursor> cursor;
    options.threads = 0;
    CHECK(ResultCursor::Open(f.catalog, p, options, &cursor).IsInvalidArgument());
    options.threads = kMaxQueryThreads + 1;
    CHECK(ResultCursor::Open(f.catalog, p, options, &cursor).IsInvalidArgument());
  }
}

}  // namespace
}  // namespace sm::test
