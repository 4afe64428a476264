// Plans as a whole: the tuple lifetime contract (a parent may hold a window of tuples), scalar
// subqueries, materialized subqueries run once, key ranges, EXPLAIN, errors that travel up a
// chain of builder calls, and a query beside a transaction that aborts.
#include <thread>

#include "query/query.h"
#include "tests/query/query_test_util.h"
#include "tests/test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

TEST_CASE("a parent may hold the window of tuples it asked for", "[unit][query]") {
  PlanFixture f;
  std::vector<std::pair<const char*, Plan>> plans = {
      {"scan", f.Scan()},
      {"filtered scan", f.Scan().Filter(Col("a") > 3)},
      {"filter", f.Scan().Project({{Col("tail")}, {Col("a")}}).Filter(Col("a") < 20)},
      {"project", f.Scan().Project({{Substr(Col("tail"), 2, 5), "s"}, {Col("name")}})},
      {"limit", f.Scan().Limit(100)},
      {"hash join", f.Scan().HashJoin(Plan::Scan(f.catalog, "u", {"id", "tail"}, {}, "x"),
                                      {{Col("a"), Col("x.id")}})},
      {"semi join", f.Scan().HashJoin(Plan::Scan(f.catalog, "u", {"b"}), {{Col("a"), Col("b")}},
                                      JoinType::kSemi)},
      {"index join", f.Scan().IndexJoin(f.catalog, "u", {Col("a")}, {"name", "tail"},
                                        JoinType::kLeftOuter, Expr(), "x")},
      {"merge join",
       f.Scan().MergeJoin(Plan::Scan(f.catalog, "u", {"id", "tail"}, {}, "x"), {{"id", "x.id"}})},
      {"sort aggregate", f.Scan().Sort({"name"}).Aggregate(
                             {{Col("name")}}, {Min(Col("tail")).As("m")}, AggStrategy::kSort)},
      {"hash aggregate", f.Scan().Aggregate({{Col("name")}}, {Max(Col("tail")).As("m")})},
      {"sort", f.Scan().Sort({"tail"})},
  };
  for (auto& [name, plan] : plans) {
    for (uint32_t window : {1u, 2u, 64u, 1000u}) {
      INFO(name << ", window " << window);
      CHECK(CheckWindow(f.catalog, plan, window) > 0);
    }
  }
}

TEST_CASE("a scalar subquery runs once and acts as a constant", "[unit][query]") {
  PlanFixture f;
  int64_t total = 0, count = 0;
  for (const auto& [id, r] : f.rows) {
    total += r.a;
    ++count;
  }
  Plan avg = f.Scan().Aggregate({}, {Avg(Col("a")).As("avg_a")});
  Plan above = f.Scan().Filter(ToDouble(Col("a")) > Scalar(avg)).Aggregate({}, {Count()});
  double mean = static_cast<double>(total) / static_cast<double>(count);
  int64_t expected = 0;
  for (const auto& [id, r] : f.rows) expected += static_cast<double>(r.a) > mean;
  CHECK(Run(f.catalog, above).rows[0][0] == std::to_string(expected));
  // Shapes a scalar subquery may not have.
  CHECK(f.Scan().Filter(Col("a") > Scalar(f.Scan())).status().IsInvalidArgument());
  ResultRows rows;
  Status many = RunToRows(
      f.catalog, f.Scan().Filter(Col("a") > Scalar(f.Scan().Project({{Col("a")}}))), {}, &rows);
  CHECK(many.IsInvalidArgument());
  // No row: NULL, so the comparison is never true.
  Plan none = f.Scan().Filter(Col("a") < 0).Project({{Col("a")}});
  CHECK(Run(f.catalog, f.Scan().Filter(Col("a") > Scalar(none))).rows.empty());
}

TEST_CASE("a materialized plan is computed once for all its readers", "[unit][query]") {
  PlanFixture f;
  Plan per_name = f.Scan().Aggregate({{Col("name")}}, {Count().As("n")}).Materialize();
  Plan busiest = per_name.Aggregate({}, {Max(Col("n")).As("top")});
  Plan q = per_name.Filter(Col("n") == Scalar(busiest));
  std::unique_ptr<ResultCursor> cursor;
  QueryOptions options;
  options.analyze = true;
  REQUIRE(ResultCursor::Open(f.catalog, q, options, &cursor).ok());
  const Value* row = nullptr;
  size_t n = 0;
  while (cursor->Next(&row).ok() && row != nullptr) ++n;
  CHECK(n >= 1);
  std::string explain = cursor->ExplainAnalyze();
  INFO(explain);
  CHECK(explain.find("(shared)") != std::string::npos);  // the second reader read, not ran
  REQUIRE(cursor->Close().ok());
}

TEST_CASE("key ranges scan the keys that start with their bounds", "[unit][query]") {
  PlanFixture f;
  ResultRows rows = Run(f.catalog, Plan::Scan(f.catalog, "t", {"id"}, KeyRange{{10}, {19}}));
  REQUIRE(rows.rows.size() == 10);
  CHECK(rows.rows.front()[0] == "10");
  CHECK(rows.rows.back()[0] == "19");
  CHECK(Run(f.catalog, Plan::Scan(f.catalog, "t", {"id"}, KeyRange{{295}, {}})).rows.size() == 6);
  CHECK(Plan::Scan(f.catalog, "t", {"id"}, KeyRange{{-1}, {}}).status().IsInvalidArgument());
  CHECK(Plan::Scan(f.catalog, "t", {"id"}, KeyRange{{1, 2}, {}}).status().IsInvalidArgument());
}

TEST_CASE("EXPLAIN shows the tree, ANALYZE adds rows and times", "[unit][query]") {
  PlanFixture f;
  Plan q = f.Scan().Filter(Col("a") > 3).Aggregate({{Col("name")}}, {Count()}).Sort({"name"});
  std::string plan = q.Explain();
  INFO(plan);
  CHECK(plan.find("Sort name") != std::string::npos);
  CHECK(plan.find("HashAggregate group by name") != std::string::npos);
  CHECK(plan.find("TableScan t [id, a, name, tail, maybe] filter (a > 3)") != std::string::npos);
  std::unique_ptr<ResultCursor> cursor;
  QueryOptions options;
  options.analyze = true;
  REQUIRE(ResultCursor::Open(f.catalog, q, options, &cursor).ok());
  const Value* row = nullptr;
  while (cursor->Next(&row).ok() && row != nullptr) {
  }
  std::string analyzed = cursor->ExplainAnalyze();
  INFO(analyzed);
  CHECK(analyzed.find("rows 5,") != std::string::npos);  // five names
  CHECK(analyzed.find(" ms") != std::string::npos);
  REQUIRE(cursor->Close().ok());
}

// The slots of a profiled run, in preorder from the root: slot k is the k-th operator met.
void CollectSlots(const Operator& op, std::vector<uint32_t>* slots) {
  slots->push_back(op.profile_slot());
  for (const auto& c : op.children()) CollectSlots(*c, slots);
}

TEST_CASE("a profiled run numbers operators in preorder and returns the same rows",
          "[unit][query]") {
  PlanFixture f;
  // A tree deeper than the slots last: a join over two chains of limits that pass every row.
  Plan left = f.Scan();
  for (int i = 0; i < 40; ++i) left = left.Limit(100000 + i);
  Plan right = f.Scan("u").Project({{Col("id"), "uid"}});
  for (int i = 0; i < 40; ++i) right = right.Limit(100000 + i);
  Plan q = left.HashJoin(right, {{Col("id"), Col("uid")}}).Aggregate({{Col("name")}}, {Count().As("n")});
  REQUIRE(q.status().ok());
  ResultRows plain = Run(f.catalog, q);
  for (bool analyze : {false, true}) {
    QueryOptions options;
    options.profile_operators = true;
    options.analyze = analyze;
    std::unique_ptr<ResultCursor> cursor;
    REQUIRE(ResultCursor::Open(f.catalog, q, options, &cursor).ok());
    const Value* row = nullptr;
    size_t n = 0;
    while (cursor->Next(&row).ok() && row != nullptr) ++n;
    CHECK(n == plain.rows.size());
    std::vector<uint32_t> slots;
    CollectSlots(cursor->operators(), &slots);
    REQUIRE(slots.size() > kProfileSlots);
    for (size_t i = 0; i < slots.size(); ++i) {
      CHECK(slots[i] == (i < kProfileSlots ? i : kNoProfileSlot));
    }
    CHECK(cursor->operators().stats().rows == plain.rows.size());
    // The join's probe input: all of t.
    const Operator& join = *cursor->operators().children()[0];
    CHECK(join.children()[0]->stats().rows == f.rows.size());
    CHECK((cursor->ExplainAnalyze().find(" ms") != std::string::npos) == analyze);
    REQUIRE(cursor->Close().ok());
  }
}

TEST_CASE("an error travels up a chain of builder calls", "[unit][query]") {
  PlanFixture f;
  Plan bad = Plan::Scan(f.catalog, "nope", {"a"}).Filter(Col("a") > 1).Sort({"a"}).Limit(3);
  CHECK(bad.status().IsInvalidArgument());
  CHECK(bad.status().ToString().find("nope") != std::string::npos);
  CHECK(bad.Explain().find("invalid plan") != std::string::npos);
  std::unique_ptr<ResultCursor> cursor;
  CHECK(ResultCursor::Open(f.catalog, bad, {}, &cursor).IsInvalidArgument());
  CHECK(Plan::Scan(f.catalog, "t", {"zz"}).status().IsInvalidArgument());
  CHECK(Plan::Scan(f.catalog, "t", {}).status().IsInvalidArgument());
  CHECK(f.Scan().Project({}).status().IsInvalidArgument());
  CHECK(Plan().status().IsInvalidArgument());
}

TEST_CASE("schemas are validated when registered", "[unit][query]") {
  PlanFixture f;
  Catalog catalog(f.scratch.db());
  TableSchema overlap("x", "t", 4, 8);
  overlap.ValueColumn("a", Type::kInt, Encoding::kI64, 4);
  CHECK(catalog.Register(overlap).IsInvalidArgument());  // past the fixed bytes
  TableSchema dup("x", "t", 4, 8);
  dup.ValueColumn("a", Type::kInt, Encoding::kI32, 0)
      .ValueColumn("a", Type::kInt, Encoding::kI32, 4);
  CHECK(catalog.Register(dup).IsInvalidArgument());
  TableSchema type("x", "t", 4, 8);
  type.ValueColumn("a", Type::kString, Encoding::kI64, 0);
  CHECK(catalog.Register(type).IsInvalidArgument());
  CHECK(catalog.Register(TestSchema("x", "no_such_table")).IsNotFound());
  REQUIRE(catalog.Register(TestSchema("x", "t")).ok());
  CHECK(catalog.Register(TestSchema("x", "t")).IsInvalidArgument());
}

TEST_CASE("a row shorter than its schema is corruption, not a crash", "[unit][query]") {
  ScratchDb scratch;
  Table* t = nullptr;
  REQUIRE(scratch.db()->CreateTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(scratch.db()->Begin(&txn).ok());
  REQUIRE(t->Insert(txn.get(), IdKey(1), "short").ok());
  REQUIRE(txn->Commit().ok());
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  ResultRows rows;
  CHECK(RunToRows(catalog, Plan::Scan(catalog, "t", {"a"}), {}, &rows).IsCorruption());
}

TEST_CASE("a read-committed query never sees a write that aborts", "[unit][query]") {
  PlanFixture f(50);
  Table* table = nullptr;
  REQUIRE(f.scratch.db()->OpenTable("t", &table).ok());
  std::unique_ptr<Transaction> writer;
  REQUIRE(f.scratch.db()->Begin(&writer).ok());
  REQUIRE(table
              ->Insert(writer.get(), IdKey(25000),
                       EncodeTestRow(MakeRow(1, 1, "ghost", 0, 0, 0, 0, "x")))
              .ok());
  REQUIRE(
      table->Update(writer.get(), IdKey(7), EncodeTestRow(MakeRow(-1, 1, "ghost", 0, 0, 0, 0, "x")))
          .ok());
  // The scan waits at the writer's rows until it ends; abort it from another thread.
  // Catch2's assertions are not thread-safe: the thread keeps its result for the main thread.
  Status aborted;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    aborted = writer->Abort();
  });
  ResultRows rows = Run(f.catalog, f.Scan().Filter(Col("name") == Str("ghost")));
  aborter.join();
  CHECK(aborted.ok());
  CHECK(rows.rows.empty());
  CHECK(Run(f.catalog, f.Scan()).rows.size() == 50);
}

}  // namespace
}  // namespace sm::test
