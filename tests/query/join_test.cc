// Joins against a model: hash, index nested-loop and merge joins of every type, with duplicate
// keys, NULL keys, residual predicates, and the errors of malformed joins.
#include <algorithm>
#include <map>

#include "query/query.h"
#include "tests/query/query_test_util.h"
#include "tests/test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

// t1 (left / probe / outer) and t2 (right / build / inner), random with duplicate `a` values;
// t2's ids are t1's ids scaled, so that index joins on id find some rows and miss others.
struct JoinFixture {
  ScratchDb scratch;
  Catalog catalog{nullptr};
  std::vector<std::pair<uint32_t, TestRow>> r1, r2;

  explicit JoinFixture(uint64_t seed) {
    std::mt19937_64 rng(seed);
    r1 = RandomRows(&rng, 300, 40);
    r2 = RandomRows(&rng, 200, 60);
    for (auto& [id, row] : r2) id = id * 2;  // even ids only
    LoadTestTable(scratch.db(), "t1", r1);
    LoadTestTable(scratch.db(), "t2", r2);
    catalog = Catalog(scratch.db());
    REQUIRE(catalog.Register(TestSchema("t1", "t1")).ok());
    REQUIRE(catalog.Register(TestSchema("t2", "t2")).ok());
  }
  Plan Left() const { return Plan::Scan(catalog, "t1", {"id", "a", "maybe", "name"}, {}, "l"); }
  Plan Right() const { return Plan::Scan(catalog, "t2", {"id", "a", "maybe", "cents"}, {}, "r"); }
};

std::string MaybeText(int32_t v) { return v == 0 ? "" : std::to_string(v); }

// The model of a join on l.a = r.a (or, with on_maybe, l.maybe = r.maybe, NULLs never
// matching) with the residual r.id > l.id, sorted (or, with in_order, in the order of r1, then
// of r2).
std::vector<TextRow> ModelJoin(const JoinFixture& f, JoinType type, bool on_maybe, bool residual,
                               bool in_order = false) {
  std::vector<TextRow> out;
  for (const auto& [lid, l] : f.r1) {
    TextRow left{std::to_string(lid), std::to_string(l.a), MaybeText(l.maybe), View(l.name)};
    bool matched = false;
    for (const auto& [rid, r] : f.r2) {
      bool keys = on_maybe ? (l.maybe != 0 && l.maybe == r.maybe) : l.a == r.a;
      if (!keys || (residual && !(rid > lid))) continue;
      matched = true;
      if (type == JoinType::kInner || type == JoinType::kLeftOuter) {
        TextRow row = left;
        for (auto& v : TextRow{std::to_string(rid), std::to_string(r.a), MaybeText(r.maybe),
                               FormatMoney(r.cents)}) {
          row.push_back(v);
        }
        out.push_back(row);
      }
    }
    if ((type == JoinType::kSemi && matched) || (type == JoinType::kAnti && !matched)) {
      out.push_back(left);
    }
    if (type == JoinType::kLeftOuter && !matched) {
      TextRow row = left;
      row.insert(row.end(), 4, "");
      out.push_back(row);
    }
  }
  return in_order ? out : Sorted(out);
}

// The two ways a hash join probes: a row at a time (a table the cache holds), and in
// prefetched batches (a larger table; forced here with a threshold of one byte).
const QueryOptions kProbeModes[] = {QueryOptions{}, [] {
                                      QueryOptions o;
                                      o.hash_join_batch_bytes = 1;
                                      return o;
                                    }()};

TEST_CASE("hash joins of every type match the model", "[random][query]") {
  JoinFixture f(TestSeed("hash joins"));
  for (const QueryOptions& mode : kProbeModes) {
    for (JoinType type :
         {JoinType::kInner, JoinType::kLeftOuter, JoinType::kSemi, JoinType::kAnti}) {
      for (bool on_maybe : {false, true}) {
        for (bool residual : {false, true}) {
          INFO(JoinTypeName(type) << (on_maybe ? " on maybe" : " on a")
                                  << (residual ? " with residual" : "")
                                  << (mode.hash_join_batch_bytes ? ", batched" : ""));
          Expr key_l = on_maybe ? Col("l.maybe") : Col("l.a");
          Expr key_r = on_maybe ? Col("r.maybe") : Col("r.a");
          Plan join = f.Left().HashJoin(f.Right(), {{key_l, key_r}}, type,
                                        residual ? Col("r.id") > Col("l.id") : Expr());
          CHECK(Sorted(Run(f.catalog, join, mode).rows) ==
                ModelJoin(f, type, on_maybe, residual));
        }
      }
    }
  }
}

TEST_CASE("a hash join keeps probe order, and build order among a row's matches", "[unit][query]") {
  JoinFixture f(TestSeed("hash join order"));
  auto by_id = [](const auto& x, const auto& y) { return x.first < y.first; };
  std::sort(f.r1.begin(), f.r1.end(), by_id);  // the scans' order
  std::sort(f.r2.begin(), f.r2.end(), by_id);
  for (const QueryOptions& mode : kProbeModes) {
    for (JoinType type :
         {JoinType::kInner, JoinType::kLeftOuter, JoinType::kSemi, JoinType::kAnti}) {
      INFO(JoinTypeName(type) << (mode.hash_join_batch_bytes ? ", batched" : ""));
      Plan join = f.Left().HashJoin(f.Right(), {{Col("l.a"), Col("r.a")}}, type);
      CHECK(Run(f.catalog, join, mode).rows == ModelJoin(f, type, false, false, true));
    }
  }
}

TEST_CASE("a hash join on several keys, one of them computed, matches the model",
          "[unit][query]") {
  // Keys that are build columns are not stored twice; a computed one is stored after them.
  JoinFixture f(TestSeed("hash join keys"));
  for (const QueryOptions& mode : kProbeModes) {
    for (JoinType type : {JoinType::kInner, JoinType::kSemi}) {
      INFO(JoinTypeName(type) << (mode.hash_join_batch_bytes ? ", batched" : ""));
      Plan join = f.Left().HashJoin(
          f.Right(), {{Col("l.a"), Col("r.a")}, {Col("l.id") % 7, (Col("r.id") / 2) % 7}}, type);
      std::vector<TextRow> model;
      for (const auto& [lid, l] : f.r1) {
        TextRow left{std::to_string(lid), std::to_string(l.a), MaybeText(l.maybe), View(l.name)};
        bool matched = false;
        for (const auto& [rid, r] : f.r2) {
          if (l.a != r.a || lid % 7 != (rid / 2) % 7) continue;
          matched = true;
          if (type == JoinType::kInner) {
            TextRow row = left;
            for (auto& v : TextRow{std::to_string(rid), std::to_string(r.a), MaybeText(r.maybe),
                                   FormatMoney(r.cents)}) {
              row.push_back(v);
            }
            model.push_back(row);
          }
        }
        if (type == JoinType::kSemi && matched) model.push_back(left);
      }
      CHECK(Sorted(Run(f.catalog, join, mode).rows) == Sorted(model));
    }
  }
}

TEST_CASE("merge joins of sorted inputs match the model", "[random][query]") {
  JoinFixture f(TestSeed("merge joins"));
  for (JoinType type : {JoinType::kInner, JoinType::kLeftOuter}) {
    for (bool on_maybe : {false, true}) {
      INFO(JoinTypeName(type) << (on_maybe ? " on maybe" : " on a"));
      std::string lk = on_maybe ? "l.maybe" : "l.a", rk = on_maybe ? "r.maybe" : "r.a";
      Plan join = f.Left().Sort({lk}).MergeJoin(f.Right().Sort({rk}), {{lk, rk}}, type);
      CHECK(Sorted(Run(f.catalog, join).rows) == ModelJoin(f, type, on_maybe, false));
    }
  }
}

TEST_CASE("index joins probe the inner B-tree per outer row", "[random][query]") {
  JoinFixture f(TestSeed("index joins"));
  std::map<uint32_t, TestRow> inner(f.r2.begin(), f.r2.end());
  for (JoinType type : {JoinType::kInner, JoinType::kLeftOuter, JoinType::kSemi, JoinType::kAnti}) {
    INFO(JoinTypeName(type));
    // Point lookups: t1's id probes t2's key; the residual keeps r.a < 30.
    Plan join =
        Plan::Scan(f.catalog, "t1", {"id", "a"})
            .IndexJoin(f.catalog, "t2", {Col("id")}, {"a", "cents"}, type, Col("r.a") < 30, "r");
    std::vector<TextRow> model;
    for (const auto& [lid, l] : f.r1) {
      auto it = inner.find(lid);
      bool match = it != inner.end() && it->second.a < 30;
      TextRow left{std::to_string(lid), std::to_string(l.a)};
      if (match && (type == JoinType::kInner || type == JoinType::kLeftOuter)) {
        model.push_back(
            {left[0], left[1], std::to_string(it->second.a), FormatMoney(it->second.cents)});
      } else if (!match && type == JoinType::kLeftOuter) {
        model.push_back({left[0], left[1], "", ""});
      } else if (match == (type == JoinType::kSemi) &&
                 (type == JoinType::kSemi || type == JoinType::kAnti)) {
        model.push_back(left);
      }
    }
    CHECK(Sorted(Run(f.catalog, join).rows) == Sorted(model));
  }
}

TEST_CASE("an index join with a negative or NULL key finds nothing", "[unit][query]") {
  JoinFixture f(1);
  Plan join = Plan::Scan(f.catalog, "t1", {"id", "maybe"})
                  .Project({{Col("id")}, {Col("maybe") - 100, "k"}})
                  .IndexJoin(f.catalog, "t2", {Col("k")}, {"a"}, JoinType::kLeftOuter);
  ResultRows rows = Run(f.catalog, join);
  REQUIRE(rows.rows.size() == f.r1.size());
  for (const TextRow& r : rows.rows) CHECK(r[2].empty());
}

TEST_CASE("malformed joins are refused with the reason", "[unit][query]") {
  JoinFixture f(2);
  Status types = f.Left().HashJoin(f.Right(), {{Col("l.a"), Col("r.cents")}}).status();
  CHECK(types.IsInvalidArgument());
  CHECK(types.ToString().find("different types") != std::string::npos);
  CHECK(f.Left().HashJoin(f.Right(), {}).status().IsInvalidArgument());
  CHECK(f.Left().HashJoin(f.Right(), {{Col("l.a"), Col("r.nope")}}).status().IsInvalidArgument());
  CHECK(f.Left().MergeJoin(f.Right(), {{"l.name", "r.a"}}).status().IsInvalidArgument());
  CHECK(f.Left()
            .MergeJoin(f.Right(), {{"l.a", "r.a"}}, JoinType::kSemi)
            .status()
            .IsInvalidArgument());
  CHECK(f.Left().IndexJoin(f.catalog, "t2", {Col("l.name")}, {"a"}).status().IsInvalidArgument());
  CHECK(f.Left()
            .IndexJoin(f.catalog, "t2", {Col("l.id"), Col("l.a")}, {"a"})
            .status()
            .IsInvalidArgument());
  CHECK(f.Left().IndexJoin(f.catalog, "nope", {Col("l.id")}, {"a"}).status().IsInvalidArgument());
  // Unqualified names that both sides have are ambiguous after the join.
  Plan both = f.Left().HashJoin(f.Right(), {{Col("l.a"), Col("r.a")}});
  CHECK(both.Filter(Col("a") > 1).status().IsInvalidArgument());
  CHECK(both.Filter(Col("cents") > 1).status().ok());
}

}  // namespace
}  // namespace sm::test
