// btree_internal::SplitPoints (index/btree_internal.h): the order in which a split tries its
// points, against the definition it implements: every point sorted stably by its imbalance in
// bytes (or by its distance to a target, ties to the higher point).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "index/btree_internal.h"
#include "tests/test_util.h"

namespace sm {
namespace {

using index::btree_internal::SplitPoints;

struct Expected {
  uint16_t point;
  size_t left_bytes;
  size_t right_bytes;
};

// The definition: every point with its halves' bytes, sorted.
std::vector<Expected> BySort(const std::vector<uint16_t>& needs, bool leaf, int skip, int target) {
  const size_t m = needs.size();
  std::vector<size_t> prefix(m + 1, 0);
  for (size_t i = 0; i < m; ++i) prefix[i + 1] = prefix[i] + needs[i];
  std::vector<Expected> out;
  for (size_t p = leaf ? 1 : 0; p < m; ++p) {
    if (!leaf && static_cast<int>(p) == skip) continue;
    const size_t right_from = leaf ? prefix[p] : prefix[p + 1];
    out.push_back({static_cast<uint16_t>(p), prefix[p], prefix[m] - right_from});
  }
  auto imbalance = [](const Expected& e) {
    return e.left_bytes > e.right_bytes ? e.left_bytes - e.right_bytes
                                        : e.right_bytes - e.left_bytes;
  };
  auto distance = [target](const Expected& e) { return std::abs(int{e.point} - target); };
  std::stable_sort(out.begin(), out.end(), [&](const Expected& a, const Expected& b) {
    if (target < 0) return imbalance(a) < imbalance(b);
    return distance(a) != distance(b) ? distance(a) < distance(b) : a.point > b.point;
  });
  return out;
}

std::vector<Expected> ByWalk(const std::vector<uint16_t>& needs, bool leaf, int skip,
                             int target) {
  SplitPoints points(needs.data(), static_cast<uint16_t>(needs.size()), leaf, skip, target);
  std::vector<Expected> out;
  SplitPoints::Point p;
  while (points.Next(&p)) out.push_back({p.point, p.left_bytes, p.right_bytes});
  return out;
}

void CheckSameOrder(const std::vector<uint16_t>& needs, bool leaf, int skip, int target) {
  const std::vector<Expected> want = BySort(needs, leaf, skip, target);
  const std::vector<Expected> got = ByWalk(needs, leaf, skip, target);
  INFO("entries " << needs.size() << ", leaf " << leaf << ", skip " << skip << ", target "
                  << target);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("position " << i);
    CHECK(got[i].point == want[i].point);
    CHECK(got[i].left_bytes == want[i].left_bytes);
    CHECK(got[i].right_bytes == want[i].right_bytes);
  }
}

TEST_CASE("split points: a balanced split tries the most balanced point first, then outward",
          "[unit][btree]") {
  // Equal entries: the middle first; equally balanced points on both sides, the lower first.
  const std::vector<uint16_t> equal(6, 20);
  const std::vector<Expected> order = ByWalk(equal, /*leaf=*/true, -1, -1);
  REQUIRE(order.size() == 5);
  CHECK(order[0].point == 3);
  CHECK(order[0].left_bytes == 60);
  CHECK(order[0].right_bytes == 60);
  CHECK(order[1].point == 2);
  CHECK(order[2].point == 4);
  CHECK(order[3].point == 1);
  CHECK(order[4].point == 5);
  // One big entry at the end: the balanced point moves right.
  CheckSameOrder({10, 10, 10, 10, 10, 200}, true, -1, -1);
  // A sequential insert at the end: the point nearest the target, ties to the higher one.
  const std::vector<Expected> seq = ByWalk(equal, true, -1, 6);
  CHECK(seq.front().point == 5);
  CHECK(seq.back().point == 1);
  CheckSameOrder(equal, true, -1, 3);
}

TEST_CASE("split points: an inner node never promotes the pending separator", "[unit][btree]") {
  const std::vector<uint16_t> needs = {24, 24, 30, 24, 24};
  for (int skip = 0; skip < 5; ++skip) {
    const std::vector<Expected> order = ByWalk(needs, /*leaf=*/false, skip, -1);
    CHECK(order.size() == 4);
    for (const Expected& e : order) CHECK(e.point != skip);
    CheckSameOrder(needs, false, skip, -1);
    CheckSameOrder(needs, false, skip, skip + 1);
  }
}

TEST_CASE("split points: the walk gives the sorted order for random nodes", "[unit][random][btree]") {
  const uint64_t seed = test::TestSeed("split points");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 3000; ++round) {
    const bool leaf = rng() % 2 == 0;
    const size_t m = 2 + rng() % (round % 10 == 0 ? 500 : 40);
    std::vector<uint16_t> needs(m);
    const bool uniform = rng() % 3 == 0;  // many ties
    for (uint16_t& n : needs) n = static_cast<uint16_t>(uniform ? 18 : 10 + rng() % 300);
    const int skip = leaf ? -1 : static_cast<int>(rng() % m);
    const int target = rng() % 2 == 0 ? -1 : static_cast<int>(rng() % (m + 1));
    CheckSameOrder(needs, leaf, skip, target);
  }
}

}  // namespace
}  // namespace sm
