// Plan refinement (query/refine.h) on hand-built plans with given footprints: execution groups
// grow while their union fits the L1-I, buffers go above the groups that do not fit with their
// consumer, never above the root or a blocking operator, and operators at or below the
// cardinality threshold join no group. Also the checked-in footprint table.
#include <cmath>

#include "query/query.h"
#include "tests/query/query_test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

// Modules share function 2 (1,000 bytes), which a union counts once.
constexpr const char* kFootprints =
    "# hand-built\n"
    "function 0 10000 scan_f\n"
    "function 1 8000 predicate_f\n"
    "function 2 1000 shared_f\n"
    "function 3 6000 aggregate_f\n"
    "function 4 3000 sum_f\n"
    "function 5 4000 project_f\n"
    "function 6 2000 probe_f\n"
    "function 7 7000 build_f\n"
    "function 8 500 sort_f\n"
    "module scan 0 2\n"
    "module scan.predicate 0 1 2\n"
    "module hash_aggregate 3 2\n"
    "module aggregate.sum 3 4 2\n"
    "module project 5 2\n"
    "module hash_join.probe 6 2\n"
    "module hash_join.build 7 2\n"
    "module sort 8\n"
    "module sort.output 8\n";

FootprintTable Table() {
  FootprintTable t;
  REQUIRE(FootprintTable::Parse(kFootprints, "test", &t).ok());
  return t;
}

// The operator names of a tree in preorder, indented by depth.
std::string Shape(const Operator& op, int depth = 0) {
  std::string out = std::string(static_cast<size_t>(depth) * 2, ' ') + op.name() + "\n";
  for (const auto& c : op.children()) out += Shape(*c, depth + 1);
  return out;
}

std::string Refined(const Plan& plan, uint64_t l1i, double threshold, const FootprintTable& table) {
  std::unique_ptr<Operator> root;
  REQUIRE(plan.node()->Instantiate(&root).ok());
  BufferOptions o;
  o.mode = BufferMode::kAuto;
  o.tuples = 100;
  o.l1i_bytes = l1i;
  o.threshold_rows = threshold;
  o.footprints = &table;
  REQUIRE(PlaceBuffers(o, root.get()).ok());
  return Shape(*root);
}

TEST_CASE("a footprint is the union of the modules' functions", "[unit][query]") {
  FootprintTable t = Table();
  CHECK(t.Bytes({"scan"}) == 11000);
  CHECK(t.Bytes({"scan", "scan.predicate"}) == 19000);
  CHECK(t.Bytes({"scan.predicate", "hash_aggregate", "aggregate.sum"}) == 28000);
  std::vector<std::string> unknown;
  CHECK(t.Bytes({"scan", "no_such"}, &unknown) == 11000);
  CHECK(unknown == std::vector<std::string>{"no_such"});
  FootprintTable bad;
  CHECK(FootprintTable::Parse("module m 0\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("function 1 5 f\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("function 0 5 f\nfunction 1 5 f\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("table 1\n", "x", &bad).IsInvalidArgument());
}

TEST_CASE("refinement buffers a scan whose aggregation does not fit beside it", "[unit][query]") {
  PlanFixture f(100);
  const FootprintTable t = Table();
  Plan q = f.Scan().Filter(Col("a") > -1).Estimate(100).Aggregate({}, {Sum(Col("a")).As("s")});
  // Scan with predicate and the aggregation with SUM: 28,000 bytes, the shared function once.
  CHECK(Refined(q, 28000, 10, t) == "HashAggregate\n  TableScan\n");
  CHECK(Refined(q, 27999, 10, t) == "HashAggregate\n  Buffer\n    TableScan\n");
  // At or below the threshold the scan joins no group, so nothing is buffered.
  CHECK(Refined(q, 16384, 100, t) == "HashAggregate\n  TableScan\n");
  CHECK(Refined(q, 16384, 99, t) == "HashAggregate\n  Buffer\n    TableScan\n");
}

TEST_CASE("a footprint table's calibrated threshold is read, written and used", "[unit][query]") {
  FootprintTable none = Table();
  CHECK(none.threshold_rows() < 0);
  FootprintTable t;
  REQUIRE(FootprintTable::Parse(FootprintTable::WithThreshold(kFootprints, 250), "t", &t).ok());
  CHECK(t.threshold_rows() == 250);
  // Writing it again replaces the line; "none" reads as never.
  const std::string twice =
      FootprintTable::WithThreshold(FootprintTable::WithThreshold(kFootprints, 250), -1);
  CHECK(twice.find("threshold 250") == std::string::npos);
  REQUIRE(FootprintTable::Parse(twice, "t", &t).ok());
  CHECK(std::isinf(t.threshold_rows()));
  FootprintTable bad;
  CHECK(FootprintTable::Parse("threshold\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("threshold -3\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("threshold 5 rows\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("threshold 5x\n", "x", &bad).IsInvalidArgument());
  CHECK(FootprintTable::Parse("threshold 5\nthreshold 6\n", "x", &bad).IsInvalidArgument());

  // Refinement takes the table's threshold unless the options give one.
  PlanFixture f(100);
  Plan q = f.Scan().Filter(Col("a") > -1).Estimate(100).Aggregate({}, {Sum(Col("a")).As("s")});
  FootprintTable low, high, never;
  REQUIRE(FootprintTable::Parse(FootprintTable::WithThreshold(kFootprints, 99), "t", &low).ok());
  REQUIRE(FootprintTable::Parse(FootprintTable::WithThreshold(kFootprints, 100), "t", &high).ok());
  REQUIRE(FootprintTable::Parse(FootprintTable::WithThreshold(kFootprints, -1), "t", &never).ok());
  CHECK(Refined(q, 16384, -1, low) == "HashAggregate\n  Buffer\n    TableScan\n");
  CHECK(Refined(q, 16384, -1, high) == "HashAggregate\n  TableScan\n");
  CHECK(Refined(q, 16384, 10, high) == "HashAggregate\n  Buffer\n    TableScan\n");
  // A table that says buffering never paid: no buffers, even where the rows are not known.
  CHECK(Refined(q, 16384, -1, never) == "HashAggregate\n  TableScan\n");
  Plan unknown = f.Scan().Filter(Col("a") > -1).Aggregate({}, {Sum(Col("a")).As("s")});
  CHECK(Refined(unknown, 16384, -1, never) == "HashAggregate\n  TableScan\n");
}

TEST_CASE("EXPLAIN shows the execution groups, their footprints and the buffers", "[unit][query]") {
  PlanFixture f(100);
  const FootprintTable t = Table();
  Plan q = f.Scan().Filter(Col("a") > -1).Estimate(100).Aggregate({}, {Sum(Col("a")).As("s")});
  QueryOptions options;
  options.buffers.mode = BufferMode::kAuto;
  options.buffers.tuples = 100;
  options.buffers.l1i_bytes = 16384;
  options.buffers.threshold_rows = 10;
  options.buffers.footprints = &t;
  std::string text;
  REQUIRE(ExplainOperatorTree(q, options, &text).ok());
  INFO(text);
  CHECK(text.find("no group: blocking") != std::string::npos);  // the aggregation
  CHECK(text.find("group 19,000 B") != std::string::npos);      // the scan's predicate
  CHECK(text.find("Buffer 100 tuples; group below 19,000 B, with HashAggregate 28,000 B > "
                  "L1-I 16,384 B") != std::string::npos);
  options.buffers.threshold_rows = 100;
  REQUIRE(ExplainOperatorTree(q, options, &text).ok());
  CHECK(text.find("no group: rows <= threshold 100") != std::string::npos);
  CHECK(text.find("Buffer") == std::string::npos);
}

TEST_CASE("refinement grows groups through pipelined operators and splits them when full",
          "[unit][query]") {
  PlanFixture f(100);
  const FootprintTable t = Table();
  Plan q =
      f.Scan()
          .HashJoin(Plan::Scan(f.catalog, "u", {"id", "name"}, {}, "x"), {{Col("a"), Col("x.id")}})
          .Project({{Col("name")}, {Col("x.name")}});
  // Probe side: scan and probe, 13,000 bytes, then the project, 17,000 bytes. The build runs
  // in its own phase: its scan and the build, 18,000 bytes, checked alone.
  CHECK(Refined(q, 18000, 10, t) == "Project\n  HashJoin\n    TableScan\n    TableScan\n");
  CHECK(Refined(q, 15000, 10, t) ==
        "Project\n  Buffer\n    HashJoin\n      TableScan\n      Buffer\n        TableScan\n");
  // Smaller still: the probe's scan does not fit beside the probe, so the join's group is the
  // probe alone, which fits beside the project (7,000 bytes) and joins it.
  CHECK(Refined(q, 12000, 10, t) ==
        "Project\n"
        "  HashJoin\n"
        "    Buffer\n"
        "      TableScan\n"
        "    Buffer\n"
        "      TableScan\n");
}

TEST_CASE("refinement puts no buffer above the root or a blocking operator", "[unit][query]") {
  PlanFixture f(100);
  const FootprintTable t = Table();
  CHECK(Refined(f.Scan(), 1, 10, t) == "TableScan\n");
  // The sort is blocking: no buffer above it, however small the cache; one above the scan,
  // whose code does not fit beside the sort's.
  Plan q = f.Scan().Sort({"a"}).Project({{Col("a")}});
  CHECK(Refined(q, 1000, 10, t) == "Project\n  Sort\n    Buffer\n      TableScan\n");
  // Everything fits: no buffer anywhere.
  CHECK(Refined(q, 1 << 20, 10, t) == "Project\n  Sort\n    TableScan\n");
}

TEST_CASE("the checked-in footprints cover every operator module", "[unit][query]") {
  const FootprintTable& t = FootprintTable::Default();
  for (const char* m : {"scan",
                        "scan.predicate",
                        "filter",
                        "project",
                        "limit",
                        "buffer",
                        "hash_join.build",
                        "hash_join.probe",
                        "index_join",
                        "merge_join",
                        "hash_aggregate",
                        "hash_aggregate.output",
                        "aggregate.count_star",
                        "aggregate.count",
                        "aggregate.count_distinct",
                        "aggregate.sum",
                        "aggregate.avg",
                        "aggregate.min",
                        "aggregate.max",
                        "sort_aggregate",
                        "sort",
                        "sort.output",
                        "top_n",
                        "top_n.output",
                        "materialize",
                        "materialize.output"}) {
    INFO(m);
    CHECK(t.Has(m));
    CHECK(t.Bytes({m}) > 0);
  }
}

}  // namespace
}  // namespace sm::test
