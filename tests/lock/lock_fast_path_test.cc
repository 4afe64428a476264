// Lock manager fast paths: covered re-requests and granted instant requests leave no new
// lock-table entry yet still conflict for others; lock heads recycled through the owners'
// pools (a head emptied by an owner other than the one that created it, many times over).
#include <catch2/catch.hpp>

#include "sm/lock/lock_manager.h"
#include "tests/lock/lock_test_util.h"

using namespace sm;
using namespace sm::lock;
using sm::lock::test::EndAll;

namespace {
const LockId kKey = LockId::Key(1, "k");
}  // namespace

TEST_CASE("a covered re-request adds no table entry and still conflicts", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kX).ok());
  const LockStats before = t1.stats();
  for (LockMode m : {LockMode::kS, LockMode::kIX, LockMode::kSIX, LockMode::kX}) {
    REQUIRE(lm.Lock(&t1, kKey, m).ok());
    REQUIRE(lm.Lock(&t1, kKey, m, LockDuration::kInstant).ok());
  }
  CHECK(t1.stats().covered - before.covered == 8);
  CHECK(t1.stats().immediate_grants == before.immediate_grants);
  CHECK(t1.lock_count() == 1);
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK(lm.TEST_LockHeadCount() == 1);
  CHECK(t1.HeldMode(kKey) == LockMode::kX);
  // Others still see the X.
  CHECK(lm.Lock(&t2, kKey, LockMode::kIS, LockDuration::kCommit, LockWait::kNoWait).code() ==
        Status::Code::kBusy);
  CHECK(lm.Lock(&t2, kKey, LockMode::kS, LockDuration::kInstant, LockWait::kNoWait).code() ==
        Status::Code::kBusy);
  CHECK(lm.TEST_WaiterCount(kKey) == 0);
  CHECK(t2.lock_count() == 0);
  EndAll(lm, {&t1, &t2});
}

TEST_CASE("a granted instant request adds nothing to a held lock and still conflicts",
          "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kIX).ok());
  // Compatible with IX: granted, and nothing of t2's stays on the head.
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kIX, LockDuration::kInstant, LockWait::kNoWait).ok());
  CHECK(t2.lock_count() == 0);
  CHECK(t2.HeldMode(kKey) == LockMode::kNone);
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK(lm.TEST_LockHeadCount() == 1);
  // Incompatible with IX: refused, without a trace.
  CHECK(lm.Lock(&t2, kKey, LockMode::kS, LockDuration::kInstant, LockWait::kNoWait).code() ==
        Status::Code::kBusy);
  CHECK(lm.TEST_WaiterCount(kKey) == 0);
  CHECK(lm.CheckInvariants());
  // Once t1 is gone, the same instant S is granted and leaves the table empty.
  lm.ReleaseAll(&t1);
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kS, LockDuration::kInstant, LockWait::kNoWait).ok());
  CHECK(lm.TEST_LockHeadCount() == 0);
  EndAll(lm, {&t1, &t2});
}

TEST_CASE("lock heads move between owners' pools without leaks or stale heads",
          "[unit][lock]") {
  LockManager lm;
  LockOwner creator(&lm, TxnId(1)), last(&lm, TxnId(2));
  // The creator takes a head for every key, the other owner empties it: heads pile up in one
  // pool (beyond its cap: deleted) while the other allocates. Several rounds' worth.
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 400; ++i) {
      const LockId id = LockId::Key(1, "key" + std::to_string(i));
      REQUIRE(lm.Lock(&creator, id, LockMode::kS).ok());
      REQUIRE(lm.Lock(&last, id, LockMode::kS).ok());
    }
    lm.ReleaseAll(&creator);
    CHECK(lm.TEST_LockHeadCount() == 400);
    lm.ReleaseAll(&last);
    REQUIRE(lm.TEST_LockHeadCount() == 0);
    REQUIRE(lm.CheckInvariants());
  }
  // Recycled heads start empty: a fresh X on a recycled key is alone on its head.
  REQUIRE(lm.Lock(&last, LockId::Key(1, "key7"), LockMode::kX).ok());
  CHECK(lm.TEST_GrantedCount(LockId::Key(1, "key7")) == 1);
  EndAll(lm, {&creator, &last});
}
