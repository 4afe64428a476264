// Aggregation against a model: hash and sort strategies, every aggregate function, NULL
// inputs, empty inputs, and the errors of malformed aggregations.
#include <map>
#include <set>

#include "query/query.h"
#include "tests/query/query_test_util.h"
#include "tests/test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

struct Group {
  int64_t count_star = 0, count_maybe = 0, sum_cents = 0, sum_maybe = 0;
  double sum_d = 0;
  std::set<int32_t> distinct_maybe;
  std::string min_name, max_name;
  bool any_maybe = false;
};

std::vector<TextRow> Model(const std::vector<std::pair<uint32_t, TestRow>>& rows, bool grouped) {
  std::map<int64_t, Group> groups;
  if (!grouped) groups[0];
  for (const auto& [id, r] : rows) {
    Group& g = groups[grouped ? r.a : 0];
    std::string name = View(r.name);
    if (g.count_star == 0 || name < g.min_name) g.min_name = name;
    if (g.count_star == 0 || name > g.max_name) g.max_name = name;
    ++g.count_star;
    g.sum_cents += r.cents;
    g.sum_d += r.d;
    if (r.maybe != 0) {
      ++g.count_maybe;
      g.sum_maybe += r.maybe;
      g.distinct_maybe.insert(r.maybe);
      g.any_maybe = true;
    }
  }
  std::vector<TextRow> out;
  for (const auto& [key, g] : groups) {
    TextRow row;
    if (grouped) row.push_back(std::to_string(key));
    row.push_back(std::to_string(g.count_star));
    row.push_back(std::to_string(g.count_maybe));
    row.push_back(std::to_string(g.distinct_maybe.size()));
    row.push_back(g.count_star ? FormatMoney(g.sum_cents) : "");
    row.push_back(g.any_maybe ? std::to_string(g.sum_maybe) : "");
    row.push_back(g.count_star ? FormatDouble(g.sum_d) : "");
    row.push_back(g.any_maybe ? FormatDouble(static_cast<double>(g.sum_maybe) /
                                             static_cast<double>(g.count_maybe))
                              : "");
    row.push_back(g.count_star ? FormatDouble(static_cast<double>(g.sum_cents) / 100.0 /
                                              static_cast<double>(g.count_star))
                               : "");
    row.push_back(g.count_star ? g.min_name : "");
    row.push_back(g.count_star ? g.max_name : "");
    out.push_back(row);
  }
  return out;
}

std::vector<Agg> AllAggregates() {
  return {Count().As("n"),
          Count(Col("maybe")).As("n_maybe"),
          CountDistinct(Col("maybe")).As("distinct_maybe"),
          Sum(Col("cents")).As("sum_cents"),
          Sum(Col("maybe")).As("sum_maybe"),
          Sum(Col("d")).As("sum_d"),
          Avg(Col("maybe")).As("avg_maybe"),
          Avg(Col("cents")).As("avg_cents"),
          Min(Col("name")).As("min_name"),
          Max(Col("name")).As("max_name")};
}

TEST_CASE("hash and sort aggregation match the model", "[random][query]") {
  std::mt19937_64 rng(TestSeed("aggregation"));
  auto rows = RandomRows(&rng, 500, 30);
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t", rows);
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  Plan scan = Plan::Scan(catalog, "t", {"a", "cents", "maybe", "d", "name"});

  // Sums of doubles depend on the order of addition: the model adds in id order, as the scan
  // returns rows; the sort strategy is fed by a stable sort, which keeps that order per group.
  ResultRows hashed = Run(catalog, scan.Aggregate({{Col("a")}}, AllAggregates()).Sort({"a"}));
  CHECK(hashed.rows == Model(rows, true));
  ResultRows sorted =
      Run(catalog, scan.Sort({"a"}).Aggregate({{Col("a")}}, AllAggregates(), AggStrategy::kSort));
  CHECK(sorted.rows == Model(rows, true));
  for (AggStrategy strategy : {AggStrategy::kHash, AggStrategy::kSort}) {
    CHECK(Run(catalog, scan.Aggregate({}, AllAggregates(), strategy)).rows == Model(rows, false));
  }
}

TEST_CASE("aggregation over an empty input", "[unit][query]") {
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t", {});
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  Plan scan = Plan::Scan(catalog, "t", {"a", "cents", "maybe", "d", "name"});
  for (AggStrategy strategy : {AggStrategy::kHash, AggStrategy::kSort}) {
    // Without group keys: one row, counts 0 and the rest NULL.
    ResultRows one = Run(catalog, scan.Aggregate({}, AllAggregates(), strategy));
    REQUIRE(one.rows.size() == 1);
    CHECK(one.rows[0] == TextRow{"0", "0", "0", "", "", "", "", "", "", ""});
    CHECK(one.nulls[0][3]);
    // With group keys: no rows.
    CHECK(Run(catalog, scan.Aggregate({{Col("a")}}, AllAggregates(), strategy)).rows.empty());
  }
}

TEST_CASE("groups on expressions and NULL keys", "[unit][query]") {
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t",
                {{1, MakeRow(1, 0, "Ohio", 0, 100, 0, 0, "")},
                 {2, MakeRow(2, 0, "Oregon", 0, 200, 0, 0, "")},
                 {3, MakeRow(3, 0, "Texas", 0, 300, 0, 5, "")},
                 {4, MakeRow(4, 0, "Utah", 0, 400, 0, 5, "")}});
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  Plan scan = Plan::Scan(catalog, "t", {"name", "cents", "maybe"});
  ResultRows by_letter = Run(catalog, scan.Aggregate({{Substr(Col("name"), 1, 1), "letter"}},
                                                     {Sum(Col("cents")).As("total")})
                                          .Sort({"letter"}));
  CHECK(by_letter.rows == std::vector<TextRow>{{"O", "3.00"}, {"T", "3.00"}, {"U", "4.00"}});
  ResultRows by_maybe =
      Run(catalog, scan.Aggregate({{Col("maybe")}}, {Count().As("n")}).Sort({"maybe"}));
  CHECK(by_maybe.rows == std::vector<TextRow>{{"", "2"}, {"5", "2"}});  // NULLs group together
}

TEST_CASE("COUNT DISTINCT of strings, doubles and ints, per group and over many values",
          "[unit][query]") {
  ScratchDb scratch;
  // Group a=1: names x, x, y; doubles 0.0, -0.0 (equal), 1.5; group a=2: name x, double 1.5.
  std::vector<std::pair<uint32_t, TestRow>> rows = {
      {1, MakeRow(1, 0, "x", 0.0, 0, 0, 0, "")},
      {2, MakeRow(1, 0, "x", -0.0, 0, 0, 0, "")},
      {3, MakeRow(1, 0, "y", 1.5, 0, 0, 0, "")},
      {4, MakeRow(2, 0, "x", 1.5, 0, 0, 0, "")}};
  // Group a=3: 5,000 rows with 1,000 distinct b values, enough to grow the set many times.
  for (uint32_t i = 0; i < 5000; ++i) {
    rows.push_back({100 + i, MakeRow(3, static_cast<int32_t>(i % 1000), "z", 2.0, 0, 0, 0, "")});
  }
  LoadTestTable(scratch.db(), "t", rows);
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  Plan scan = Plan::Scan(catalog, "t", {"a", "b", "name", "d"});
  std::vector<Agg> aggs = {CountDistinct(Col("name")).As("names"),
                           CountDistinct(Col("d")).As("doubles"),
                           CountDistinct(Col("b")).As("bs")};
  std::vector<TextRow> want = {{"1", "2", "2", "1"}, {"2", "1", "1", "1"}, {"3", "1", "1", "1000"}};
  CHECK(Run(catalog, scan.Aggregate({{Col("a")}}, aggs).Sort({"a"})).rows == want);
  CHECK(Run(catalog, scan.Aggregate({{Col("a")}}, aggs, AggStrategy::kSort)).rows == want);
}

TEST_CASE("malformed aggregations are refused", "[unit][query]") {
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t", {});
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  Plan scan = Plan::Scan(catalog, "t", {"a", "name", "when"});
  CHECK(scan.Aggregate({}, {Sum(Col("name"))}).status().IsInvalidArgument());
  CHECK(scan.Aggregate({}, {Avg(Col("when"))}).status().IsInvalidArgument());
  CHECK(scan.Aggregate({}, {}).status().IsInvalidArgument());
  CHECK(scan.Aggregate({{Col("zz")}}, {Count()}).status().IsInvalidArgument());
}

TEST_CASE("a sum that leaves int64 is an error, not a wrapped value", "[unit][query]") {
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t",
                {{1, MakeRow(INT64_MAX - 1, 0, "a", 0, 0, 0, 0, "")},
                 {2, MakeRow(5, 0, "a", 0, 0, 0, 0, "")}});
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  ResultRows rows;
  Status s =
      RunToRows(catalog, Plan::Scan(catalog, "t", {"a"}).Aggregate({}, {Sum(Col("a"))}), {}, &rows);
  CHECK(s.IsInvalidArgument());
  CHECK(s.ToString().find("overflow") != std::string::npos);
}

}  // namespace
}  // namespace sm::test
