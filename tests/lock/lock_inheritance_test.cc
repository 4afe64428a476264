// Lock manager: inheritance of intention locks between an owner's transactions (claiming,
// dropping unused ones, revocation by conflicting new requests and conversions, no keeping
// under a waiter, giving them up on destruction).
#include <catch2/catch.hpp>

#include "sm/lock/lock_manager.h"
#include "tests/lock/lock_test_util.h"

using namespace sm;
using namespace sm::lock;
using sm::lock::test::EndAll;
using sm::lock::test::Eventually;
using sm::lock::test::FiberCall;
using sm::test::MakeRuntime;

namespace {

const LockId kDb = LockId::Database();
const LockId kTable1 = LockId::Table(1);
const LockId kTable2 = LockId::Table(2);

// Ends the owner's transaction keeping its intention locks, and starts its next one.
void Commit(LockManager& lm, LockOwner* owner, TxnId next) {
  lm.ReleaseAll(owner, Inherit::kIntentions);
  owner->Reset(next);
}

}  // namespace

TEST_CASE("an owner's next transaction claims the intention locks it kept", "[unit][lock]") {
  LockManager lm;
  LockOwner t(&lm, TxnId(1));
  REQUIRE(lm.LockKey(&t, 1, "k", LockMode::kS).ok());
  Commit(lm, &t, TxnId(2));
  CHECK(t.lock_count() == 0);
  CHECK(t.inherited_count() == 2);  // IS on the database and the table; the key S is gone
  CHECK(lm.TEST_GrantedCount(kDb) == 1);
  CHECK(lm.TEST_GrantedCount(kTable1) == 1);
  CHECK(lm.TEST_GrantedCount(LockId::Key(1, "k")) == 0);
  CHECK(t.HeldMode(kTable1) == LockMode::kNone);  // not the new transaction's until claimed
  CHECK(lm.CheckInvariants());

  REQUIRE(lm.LockKey(&t, 1, "k", LockMode::kX).ok());  // claims both, converts them to IX
  CHECK(t.stats().inherited == 2);
  CHECK(t.inherited_count() == 0);
  CHECK(t.lock_count() == 3);
  CHECK(t.HeldMode(kTable1) == LockMode::kIX);
  CHECK(lm.TEST_GrantedCount(kTable1) == 1);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t});
  CHECK(lm.stats().inherited == 2);
}

TEST_CASE("an inherited lock the next transaction does not use is released at its end",
          "[unit][lock]") {
  LockManager lm;
  LockOwner t(&lm, TxnId(1));
  REQUIRE(lm.LockKey(&t, 1, "k", LockMode::kS).ok());
  Commit(lm, &t, TxnId(2));
  REQUIRE(lm.LockKey(&t, 2, "k", LockMode::kS).ok());
  Commit(lm, &t, TxnId(3));
  CHECK(lm.TEST_GrantedCount(kTable1) == 0);
  CHECK(lm.TEST_GrantedCount(kTable2) == 1);
  CHECK(lm.TEST_GrantedCount(kDb) == 1);
  CHECK(t.inherited_count() == 2);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t});
}

TEST_CASE("a conflicting request revokes an idle owner's inherited lock", "[unit][lock]") {
  LockManager lm;
  LockOwner idle(&lm, TxnId(1)), other(&lm, TxnId(2));
  REQUIRE(lm.LockKey(&idle, 1, "k", LockMode::kX).ok());
  Commit(lm, &idle, TxnId(3));  // keeps IX on the database and table 1

  SECTION("a new request") {
    // Without revocation the idle owner's IX would refuse this no-wait X.
    REQUIRE(lm.LockTable(&other, 1, LockMode::kX, LockWait::kNoWait).ok());
  }
  SECTION("a conversion") {
    REQUIRE(lm.LockTable(&other, 1, LockMode::kIS).ok());
    REQUIRE(lm.LockTable(&other, 1, LockMode::kS, LockWait::kNoWait).ok());
  }
  CHECK(other.stats().revocations == 1);  // the database IX is compatible and stays
  CHECK(lm.TEST_GrantedCount(kDb) == 2);
  CHECK(lm.TEST_GrantedCount(kTable1) == 1);
  CHECK(idle.inherited_count() == 2);  // it finds out when it next looks
  CHECK(lm.CheckInvariants());

  // The idle owner's next transaction must now wait like anyone else.
  CHECK(lm.LockTable(&idle, 1, LockMode::kIX, LockWait::kNoWait).code() == Status::Code::kBusy);
  CHECK(idle.stats().inherited == 1);  // the database lock
  CHECK(idle.inherited_count() == 0);
  CHECK(idle.lock_count() == 1);
  CHECK(lm.CheckInvariants());
  lm.ReleaseAll(&other);
  REQUIRE(lm.LockTable(&idle, 1, LockMode::kIX, LockWait::kNoWait).ok());
  EndAll(lm, {&idle});
}

TEST_CASE("a lock with a waiter is released, not kept", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner t(&lm, TxnId(1)), waiter(&lm, TxnId(2));
  REQUIRE(lm.LockKey(&t, 1, "k", LockMode::kX).ok());
  FiberCall s(rt.get(), 0, [&] { return lm.LockTable(&waiter, 1, LockMode::kS); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kTable1) == 1; }));
  Commit(lm, &t, TxnId(3));
  REQUIRE(s.Join().ok());
  CHECK(t.inherited_count() == 1);  // the database IX only
  CHECK(waiter.HeldMode(kTable1) == LockMode::kS);
  CHECK(lm.TEST_GrantedCount(kTable1) == 1);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t, &waiter});
}

TEST_CASE("a destroyed owner gives up its inherited locks", "[unit][lock]") {
  LockManager lm;
  {
    LockOwner t(&lm, TxnId(1));
    REQUIRE(lm.LockKey(&t, 1, "k", LockMode::kS).ok());
    lm.ReleaseAll(&t, Inherit::kIntentions);
    CHECK(lm.TEST_LockHeadCount() == 2);
  }
  CHECK(lm.TEST_LockHeadCount() == 0);
  CHECK(lm.CheckInvariants());
}
