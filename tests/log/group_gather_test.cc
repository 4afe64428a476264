// GroupGather: the flusher's rule for holding a sync until its group has gathered, on a clock
// the test drives.
#include "log/group_gather.h"

#include <catch2/catch.hpp>

using sm::log::GroupGather;

namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;

}  // namespace

TEST_CASE("group gather: the first sync, and a lone committer, never wait", "[unit][log]") {
  GroupGather g;
  REQUIRE(g.HoldUntil(5 * kMs, 5 * kMs, 1) == 0);  // no sync timed yet
  g.Synced(4 * kMs, 1);
  REQUIRE(g.sync_ns() == 4 * kMs);
  REQUIRE(g.HoldUntil(10 * kMs, 10 * kMs, 1) == 0);  // the one committer of the round waits
}

TEST_CASE("group gather: a hold lasts until the round's committers wait", "[unit][log]") {
  GroupGather g;
  g.Synced(4 * kMs, 8);  // a round of eight
  // The first comes back at t = 10 ms: hold for a quiet gap of L/8 = 500 us.
  REQUIRE(g.HoldUntil(10 * kMs, 10 * kMs, 1) == 10 * kMs + 500 * kUs);
  // Each later request moves the end of the quiet gap.
  REQUIRE(g.HoldUntil(10 * kMs + 200 * kUs, 10 * kMs + 200 * kUs, 2) == 10 * kMs + 700 * kUs);
  // All eight wait: sync now.
  REQUIRE(g.HoldUntil(11 * kMs, 11 * kMs, 8) == 0);
}

TEST_CASE("group gather: a quiet gap or half a sync ends a hold", "[unit][log]") {
  GroupGather g;
  g.Synced(4 * kMs, 8);
  REQUIRE(g.HoldUntil(10 * kMs, 10 * kMs, 3) != 0);
  // No request for 500 us: the others are not coming.
  REQUIRE(g.HoldUntil(10 * kMs + 500 * kUs, 10 * kMs, 3) == 0);

  g.Synced(4 * kMs, 8);
  // Requests keep coming, but never all eight: the hold ends L/2 = 2 ms after it began.
  int64_t t = 20 * kMs;
  REQUIRE(g.HoldUntil(t, t, 1) != 0);
  for (int i = 1; i < 9; ++i) {
    t += 300 * kUs;
    const int64_t until = g.HoldUntil(t, t, 1 + i % 3);
    if (t < 22 * kMs) {
      REQUIRE(until != 0);
      REQUIRE(until <= 22 * kMs);
    } else {
      REQUIRE(until == 0);
    }
  }
}

TEST_CASE("group gather: the gap stays within its bounds as the disk's latency moves",
          "[unit][log]") {
  GroupGather fast;
  fast.Synced(400 * kUs, 4);  // a fast disk: no hold
  REQUIRE(fast.HoldUntil(kMs, kMs, 1) == 0);
  GroupGather short_gap;
  short_gap.Synced(GroupGather::kMinHeldSyncNs, 4);  // L/8 of the shortest held sync
  REQUIRE(short_gap.HoldUntil(kMs, kMs, 1) == kMs + GroupGather::kMinHeldSyncNs / 8);
  GroupGather slow;
  slow.Synced(40 * kMs, 4);  // L/8 would be 5 ms: at most 1 ms
  REQUIRE(slow.HoldUntil(kMs, kMs, 1) == 2 * kMs);
  // The latency is a moving average: a quarter of the newest sync.
  slow.Synced(8 * kMs, 4);
  REQUIRE(slow.sync_ns() == 32 * kMs);
}
