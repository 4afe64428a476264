// Sort, TopN and Limit against std::stable_sort, with NULLs and descending keys.
#include "query/query.h"
#include "tests/query/query_test_util.h"
#include "tests/test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

TEST_CASE("sort and top-N match a stable sort", "[random][query]") {
  std::mt19937_64 rng(TestSeed("sort"));
  auto rows = RandomRows(&rng, 400, 20);
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t", rows);
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  // Model: by maybe (NULL first) descending... here: a ascending, maybe descending (NULLs last
  // when descending), ties in id order.
  auto model = rows;
  std::stable_sort(model.begin(), model.end(), [](const auto& x, const auto& y) {
    if (x.second.a != y.second.a) return x.second.a < y.second.a;
    int32_t mx = x.second.maybe, my = y.second.maybe;  // 0 is NULL, which sorts last descending
    if ((mx == 0) != (my == 0)) return my == 0;
    return mx > my;
  });
  std::vector<TextRow> expected;
  for (const auto& [id, r] : model) {
    expected.push_back(
        {std::to_string(id), std::to_string(r.a), r.maybe == 0 ? "" : std::to_string(r.maybe)});
  }
  Plan scan = Plan::Scan(catalog, "t", {"id", "a", "maybe"});
  std::vector<SortKey> keys = {"a", Desc("maybe")};
  CHECK(Run(catalog, scan.Sort(keys)).rows == expected);
  for (uint64_t n : {1, 7, 399, 400, 1000}) {
    INFO("n " << n);
    std::vector<TextRow> top(expected.begin(),
                             expected.begin() + std::min<size_t>(n, expected.size()));
    CHECK(Run(catalog, scan.TopN(keys, n)).rows == top);
    CHECK(Run(catalog, scan.Sort(keys).Limit(n)).rows == top);
  }
  CHECK(Run(catalog, scan.Limit(0)).rows.empty());
  CHECK(scan.TopN(keys, 0).status().IsInvalidArgument());
  CHECK(scan.Sort({}).status().IsInvalidArgument());
  CHECK(scan.Sort({"nope"}).status().IsInvalidArgument());
}

}  // namespace
}  // namespace sm::test
