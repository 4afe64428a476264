// CTX placement files: parsing, errors that name the file and line, applying exactly the
// listed sites, and the built-in default.
#include <catch2/catch.hpp>

#include "steps/placement.h"
#include "threads/ctx_point.h"

SM_DEFINE_CTX_SITE(kPlacementA, "test.placement.a");
SM_DEFINE_CTX_SITE(kPlacementB, "test.placement.b");

namespace sm::steps {
namespace {

TEST_CASE("a placement enables exactly its sites", "[unit][steps]") {
  Placement placement;
  REQUIRE(ParsePlacement("# comment\n\n test.placement.a   index fetch, 812 bytes\n", "p.txt",
                         &placement)
              .ok());
  REQUIRE(placement.sites == std::vector<std::string>{"test.placement.a"});
  kPlacementB.enabled.store(true);
  REQUIRE(ApplyPlacement(placement).ok());
  CHECK(kPlacementA.enabled.load());
  CHECK_FALSE(kPlacementB.enabled.load());
  REQUIRE(ApplyPlacement(Placement{}).ok());
  CHECK_FALSE(kPlacementA.enabled.load());
}

TEST_CASE("an unknown site names the file and line", "[unit][steps]") {
  Placement placement;
  Status s = ParsePlacement("test.placement.a\nno.such.site\n", "p.txt", &placement);
  CHECK(s.IsInvalidArgument());
  CHECK(s.ToString().find("p.txt:2") != std::string::npos);
  CHECK(ReadPlacement("/nonexistent/placement.txt", &placement).IsNotFound());
  kPlacementA.enabled.store(true);
  CHECK(ApplyPlacement(Placement{{"test.placement.b", "no.such.site"}}).IsInvalidArgument());
  CHECK(kPlacementA.enabled.load());  // nothing changed
  kPlacementA.enabled.store(false);
}

TEST_CASE("the default placement lists only sites of this binary", "[unit][steps]") {
  // This test binary links no B-tree or lock manager, so the default applies as empty here;
  // the engine's binaries get the full list (tests/api exercise it with STEPS on).
  Placement placement = DefaultPlacement();
  for (const std::string& name : placement.sites) CHECK(threads::FindCtxSite(name) != nullptr);
  CHECK(ApplyPlacement(placement).ok());
}

}  // namespace
}  // namespace sm::steps
