// The checked-in CTX placement (steps/ctx_placement.txt, written by tools/icache/ctx_place)
// against the sites compiled into the engine: a site renamed or removed in the code fails here
// instead of silently dropping out of the default (DefaultPlacement skips unknown names so that
// binaries without some layers can still apply it).
#include <catch2/catch.hpp>

#include "sm/sm.h"
#include "steps/placement.h"
#include "threads/ctx_point.h"

namespace sm {
namespace {

TEST_CASE("every site of the checked-in placement exists in the engine", "[unit][steps]") {
  steps::Placement placement;
  Status s = steps::ReadPlacement(SM_SOURCE_DIR "/steps/ctx_placement.txt", &placement);
  INFO(s.ToString());
  REQUIRE(s.ok());  // InvalidArgument naming the line if a site is unknown
  CHECK_FALSE(placement.sites.empty());
  for (const std::string& name : placement.sites) {
    INFO(name);
    CHECK(threads::FindCtxSite(name) != nullptr);
  }
  // The compiled-in default is the same list.
  CHECK(steps::DefaultPlacement().sites == placement.sites);
}

}  // namespace
}  // namespace sm
