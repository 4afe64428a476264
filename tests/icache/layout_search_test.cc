// The code-layout search's parts: the relink command it runs for each candidate order, and the
// choice among the measured candidates.
#include "tools/icache/layout_search.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace sm::icache {
namespace {

TEST_CASE("the relink command names the candidate's order and binary in quotes", "[unit]") {
  const std::string command = RelinkCommand(
      "cd build && c++ -Wl,--section-ordering-file={order} a.o -o {binary} && nm {binary}",
      "/tmp/it's/order.txt", "/tmp/tpcc-1");
  CHECK(command ==
        "cd build && c++ -Wl,--section-ordering-file='/tmp/it'\\''s/order.txt' a.o -o "
        "'/tmp/tpcc-1' && nm '/tmp/tpcc-1'");
}

TEST_CASE("a relink command without both placeholders is refused", "[unit]") {
  CHECK(RelinkCommand("c++ -o {binary}", "o", "b").empty());
  CHECK(RelinkCommand("c++ --section-ordering-file={order}", "o", "b").empty());
  CHECK(RelinkCommand("", "o", "b").empty());
}

LayoutCandidate Measured(const std::string& name, double a, double b, double c, double d) {
  LayoutCandidate candidate{name, "", ""};
  candidate.misses[0] = a;
  candidate.misses[1] = b;
  candidate.misses[2] = c;
  candidate.misses[3] = d;
  return candidate;
}

TEST_CASE("the layout with the fewest misses summed is chosen", "[unit]") {
  // The second has the lowest sum although the third has the lowest serial Payment and the
  // first the largest reduction by STEPS: the score weighs no mode above the other.
  const std::vector<LayoutCandidate> candidates = {Measured("current", 900, 100, 1300, 700),
                                                   Measured("8 KiB", 800, 180, 1100, 750),
                                                   Measured("16 KiB", 700, 300, 1200, 900)};
  CHECK(candidates[1].Score() == 2830);
  CHECK(BestLayout(candidates, 0.005) == 1);
}

TEST_CASE("the current order stays against one that only draws level", "[unit]") {
  // 2,830 against 2,840: 0.35 % fewer, inside a margin of 0.5 % but not of 0.1 %.
  const std::vector<LayoutCandidate> candidates = {Measured("current", 800, 170, 1110, 760),
                                                   Measured("16 KiB", 800, 170, 1100, 760),
                                                   Measured("32 KiB", 800, 170, 1100, 760)};
  CHECK(BestLayout(candidates, 0.005) == 0);
  CHECK(BestLayout(candidates, 0.001) == 1);  // the earlier of two equals
  CHECK(BestLayout(candidates, 0.0) == 1);
  CHECK(BestLayout({}, 0.005) == -1);
}

}  // namespace
}  // namespace sm::icache
