// Table scans: decoding every encoding, NULLs, tail strings, key ranges and fused filters.
#include "query/query.h"
#include "tests/query/query_test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

TEST_CASE("a scan decodes each column as stored", "[unit][query]") {
  ScratchDb scratch;
  LoadTestTable(scratch.db(), "t",
                {{1, MakeRow(-5, 7, "abc", 1.5, 1234, 86400LL * 1000000, 0, "tail one")},
                 {2, MakeRow(9, -3, "fullname", -0.25, -5, 0, 42, "")}});
  Catalog catalog(scratch.db());
  REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
  ResultRows rows = Run(
      catalog,
      Plan::Scan(catalog, "t", {"id", "a", "b", "name", "d", "cents", "when", "maybe", "tail"}));
  REQUIRE(rows.rows.size() == 2);
  CHECK(rows.rows[0] == std::vector<std::string>{"1", "-5", "7", "abc", "1.5", "12.34",
                                                 "1970-01-02 00:00:00.000000", "", "tail one"});
  CHECK(rows.nulls[0][7]);
  CHECK(rows.rows[1] == std::vector<std::string>{"2", "9", "-3", "fullname", "-0.25", "-0.05",
                                                 "1970-01-01 00:00:00.000000", "42", ""});
  CHECK_FALSE(rows.nulls[1][7]);
}

}  // namespace
}  // namespace sm::test
