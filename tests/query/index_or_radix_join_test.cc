// Index-or-radix joins: semi and anti joins into a table's whole key return what an index join
// returns, in the outer's order, whichever way they run (by their costs, forced to index
// probes, forced to the hash join), with NULL and negative keys, an empty outer, an empty
// table and keys that repeat; and the cost comparison picks the hash join for many outer rows
// against a small table and the probes for few rows against a large one.
#include <memory>
#include <string>

#include "query/query.h"
#include "tests/query/query_test_util.h"
#include "tests/test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

using Outcome = CursorRun;

Outcome RunWith(const Catalog& catalog, const Plan& plan, JoinChoice choice,
                uint32_t threads = 1) {
  QueryOptions options;
  options.index_or_radix = choice;
  options.threads = threads;
  return RunCursor(catalog, plan, options);
}

// The outer table "o" (`outer_rows` rows whose `a` is the probe key, repeating, some of it
// negative, and whose `maybe` is NULL for about a third) and the inner "t" (ids 0, 3, 6, ... up to
// `inner_rows` of them).
struct Fixture {
  ScratchDb scratch;
  Catalog catalog{nullptr};
  std::vector<std::pair<uint32_t, TestRow>> outer, inner;

  Fixture(uint64_t seed, uint32_t outer_rows, uint32_t inner_rows) {
    std::mt19937_64 rng(seed);
    const int key_range = static_cast<int>(3 * inner_rows + 10);
    outer = RandomRows(&rng, outer_rows, key_range);
    for (auto& [id, row] : outer) row.a -= 5;  // a few keys below the table's
    inner = RandomRows(&rng, inner_rows, 10);
    for (auto& [id, row] : inner) id = (id - 1) * 3;
    LoadTestTable(scratch.db(), "o", outer);
    LoadTestTable(scratch.db(), "t", inner);
    catalog = Catalog(scratch.db());
    REQUIRE(catalog.Register(TestSchema("o", "o")).ok());
    REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  }
  Plan Outer() const { return Plan::Scan(catalog, "o", {"id", "a", "maybe"}); }
  // In the outer's order: the rows whose key (the column `column`) is, or is not, in the table.
  std::vector<TextRow> Model(JoinType type, bool by_maybe) const {
    std::vector<TextRow> out;
    for (const auto& [id, row] : outer) {
      const int64_t key = by_maybe ? (row.maybe == 0 ? -1 : row.maybe) : row.a;
      const bool found = key >= 0 && key % 3 == 0 && key / 3 < static_cast<int64_t>(inner.size());
      if (found == (type == JoinType::kSemi)) {
        out.push_back({std::to_string(id), std::to_string(row.a),
                       row.maybe == 0 ? "" : std::to_string(row.maybe)});
      }
    }
    return out;
  }
};

constexpr JoinChoice kChoices[] = {JoinChoice::kCost, JoinChoice::kIndex, JoinChoice::kHash};

const char* ChoiceName(JoinChoice c) {
  return c == JoinChoice::kCost ? "cost" : c == JoinChoice::kIndex ? "index" : "hash";
}

TEST_CASE("index-or-radix joins return an index join's rows in the outer's order",
          "[random][query]") {
  const uint64_t seed = TestSeed("index-or-radix joins");
  for (uint32_t outer_rows : {1u, 100u, 2000u}) {
    Fixture f(seed + outer_rows, outer_rows, 300);
    for (JoinType type : {JoinType::kSemi, JoinType::kAnti}) {
      for (bool by_maybe : {false, true}) {
        const char* column = by_maybe ? "maybe" : "a";
        Plan joined = f.Outer().IndexOrRadixJoin(f.catalog, "t", {Col(column)}, type);
        Plan indexed = f.Outer().IndexJoin(f.catalog, "t", {Col(column)}, {}, type);
        const std::vector<TextRow> model = f.Model(type, by_maybe);
        for (JoinChoice choice : kChoices) {
          CAPTURE(outer_rows, JoinTypeName(type), column, ChoiceName(choice));
          Outcome o = RunWith(f.catalog, joined, choice);
          INFO(o.explain);
          CHECK(o.rows == model);
          CHECK(o.rows == RunWith(f.catalog, indexed, JoinChoice::kCost).rows);
          if (choice == JoinChoice::kHash) CHECK(o.explain.find("hash (forced)") != std::string::npos);
          if (choice == JoinChoice::kIndex && outer_rows > 128) {
            CHECK(o.explain.find("index (forced)") != std::string::npos);
          }
        }
      }
    }
  }
}

TEST_CASE("an index-or-radix join of an empty outer or into an empty table", "[unit][query]") {
  Fixture f(1, 500, 0);
  for (JoinChoice choice : kChoices) {
    CAPTURE(ChoiceName(choice));
    Plan semi = f.Outer().IndexOrRadixJoin(f.catalog, "t", {Col("a")}, JoinType::kSemi);
    Plan anti = f.Outer().IndexOrRadixJoin(f.catalog, "t", {Col("a")}, JoinType::kAnti);
    CHECK(RunWith(f.catalog, semi, choice).rows.empty());
    CHECK(RunWith(f.catalog, anti, choice).rows.size() == f.outer.size());
    Plan none = f.Outer().Filter(Col("a") > 1000000).IndexOrRadixJoin(f.catalog, "o", {Col("a")},
                                                                        JoinType::kAnti);
    CHECK(RunWith(f.catalog, none, choice).rows.empty());
  }
}

TEST_CASE("an index-or-radix join runs on parts of its outer on several threads",
          "[random][query]") {
  Fixture f(TestSeed("index-or-radix threads"), 4000, 500);
  Plan plan = f.Outer()
                  .IndexOrRadixJoin(f.catalog, "t", {Col("a")}, JoinType::kSemi)
                  .Aggregate({{Col("maybe")}}, {Count().As("n"), Sum(Col("a")).As("s")});
  for (JoinChoice choice : kChoices) {
    CAPTURE(ChoiceName(choice));
    const std::vector<TextRow> serial = Sorted(RunWith(f.catalog, plan, choice).rows);
    Outcome parallel = RunWith(f.catalog, plan, choice, 2);
    INFO(parallel.explain);
    CHECK(parallel.explain.find("parts in parallel") != std::string::npos);
    CHECK(Sorted(parallel.rows) == serial);
  }
}

TEST_CASE("an index-or-radix join chooses by the costs it measured", "[unit][query]") {
  SECTION("many outer rows against a small table: the hash join") {
    Fixture f(2, 5000, 200);
    Outcome o = RunWith(f.catalog, f.Outer().IndexOrRadixJoin(f.catalog, "t", {Col("a")},
                                                                JoinType::kSemi),
                        JoinChoice::kCost);
    INFO(o.explain);
    CHECK(o.explain.find("; hash: 5000 outer rows") != std::string::npos);
    CHECK(o.rows == f.Model(JoinType::kSemi, false));
  }
  SECTION("few outer rows against a large table: index probes") {
    Fixture f(3, 300, 30000);
    TableSchema schema = TestSchema("t", "t");
    schema.set_row_estimate(30000);
    Catalog catalog(f.scratch.db());
    REQUIRE(catalog.Register(TestSchema("o", "o")).ok());
    REQUIRE(catalog.Register(schema).ok());
    Plan plan = Plan::Scan(catalog, "o", {"id", "a", "maybe"})
                    .IndexOrRadixJoin(catalog, "t", {Col("a")}, JoinType::kSemi);
    Outcome o = RunWith(catalog, plan, JoinChoice::kCost);
    INFO(o.explain);
    CHECK(o.explain.find("; index: 300 outer rows") != std::string::npos);
    CHECK(o.rows == f.Model(JoinType::kSemi, false));
  }
}

TEST_CASE("an index-or-radix join needs a whole key and a semi or anti join", "[unit][query]") {
  Fixture f(4, 10, 10);
  CHECK(f.Outer()
            .IndexOrRadixJoin(f.catalog, "t", {Col("a")}, JoinType::kInner)
            .status()
            .IsInvalidArgument());
  CHECK(f.Outer()
            .IndexOrRadixJoin(f.catalog, "t", {Col("a"), Col("a")}, JoinType::kSemi)
            .status()
            .IsInvalidArgument());
  CHECK(f.Outer().IndexOrRadixJoin(f.catalog, "t", {}, JoinType::kSemi).status().IsInvalidArgument());
}

}  // namespace
}  // namespace sm::test
