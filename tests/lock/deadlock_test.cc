// Deadlocks and timeouts: the conversion deadlock, a three-transaction cycle (one victim,
// the youngest, whether or not it closed the cycle), lock-wait timeouts that leave no trace,
// the timeout/grant race, and timeouts as the only way out when detection is off.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "sm/lock/lock_manager.h"
#include "tests/lock/lock_test_util.h"
#include "tests/test_util.h"
#include "threads/baton.h"

using namespace sm;
using namespace sm::lock;
using sm::lock::test::EndAll;
using sm::lock::test::Eventually;
using sm::lock::test::FiberCall;
using sm::test::MakeRuntime;

namespace {
const LockId kKey = LockId::Key(1, "k");

// Upgrades the owner's lock on kKey to X; if that fails, the transaction aborts (releases
// everything), as a deadlock victim or timed-out transaction would.
Status UpgradeOrAbort(LockManager& lm, LockOwner* owner) {
  Status s = lm.Lock(owner, kKey, LockMode::kX);
  if (!s.ok()) lm.ReleaseAll(owner);
  return s;
}
}  // namespace

TEST_CASE("two S holders both upgrading to X: exactly one deadlock victim", "[unit][lock]") {
  auto rt = MakeRuntime(2);
  LockManager lm;
  LockOwner older(&lm, TxnId(1)), younger(&lm, TxnId(2));
  REQUIRE(lm.Lock(&older, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&younger, kKey, LockMode::kS).ok());
  // Either order of arrival: the victim is the younger transaction, whether it closed the
  // cycle (and fails at once) or was already waiting (and is failed by the other's search).
  const bool younger_first = GENERATE(false, true);
  LockOwner* first = younger_first ? &younger : &older;
  LockOwner* second = younger_first ? &older : &younger;
  FiberCall call1(rt.get(), 0, [&] { return UpgradeOrAbort(lm, first); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  FiberCall call2(rt.get(), 1, [&] { return UpgradeOrAbort(lm, second); });
  Status s1 = call1.Join();
  Status s2 = call2.Join();
  Status& older_status = younger_first ? s2 : s1;
  Status& younger_status = younger_first ? s1 : s2;
  CHECK(older_status.ok());
  CHECK(younger_status.IsDeadlock());
  CHECK(younger_status.IsRetryable());
  CHECK(older.HeldMode(kKey) == LockMode::kX);
  CHECK(younger.lock_count() == 0);
  CHECK(younger.stats().deadlocks == 1);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&older});
  CHECK(lm.stats().deadlocks == 1);
}

TEST_CASE("a three-transaction cycle has exactly one victim, the youngest", "[unit][lock]") {
  auto rt = MakeRuntime(2);
  LockManager lm;
  // (ids of A, B, C): C closes the cycle; the victim is the largest id.
  struct Ids {
    uint64_t a, b, c;
  };
  const Ids ids = GENERATE(Ids{1, 2, 3}, Ids{3, 1, 2}, Ids{2, 3, 1});
  LockOwner a(&lm, TxnId(ids.a)), b(&lm, TxnId(ids.b)), c(&lm, TxnId(ids.c));
  const LockId ka = LockId::Key(1, "a"), kb = LockId::Key(1, "b"), kc = LockId::Key(1, "c");
  REQUIRE(lm.Lock(&a, ka, LockMode::kX).ok());
  REQUIRE(lm.Lock(&b, kb, LockMode::kX).ok());
  REQUIRE(lm.Lock(&c, kc, LockMode::kX).ok());
  // Each transaction "commits" (releases) when its lock call returns, or aborts as victim.
  auto run = [&](LockOwner* owner, const LockId& want) {
    Status s = lm.Lock(owner, want, LockMode::kX);
    lm.ReleaseAll(owner);
    return s;
  };
  FiberCall call_a(rt.get(), 0, [&] { return run(&a, kb); });  // A waits for B
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kb) == 1; }));
  FiberCall call_b(rt.get(), 1, [&] { return run(&b, kc); });  // B waits for C
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kc) == 1; }));
  CHECK(lm.CheckInvariants());
  FiberCall call_c(rt.get(), 0, [&] { return run(&c, ka); });  // C waits for A: cycle
  Status sa = call_a.Join(), sb = call_b.Join(), sc = call_c.Join();
  const uint64_t youngest = std::max({ids.a, ids.b, ids.c});
  CHECK(sa.IsDeadlock() == (ids.a == youngest));
  CHECK(sb.IsDeadlock() == (ids.b == youngest));
  CHECK(sc.IsDeadlock() == (ids.c == youngest));
  CHECK(int{sa.ok()} + int{sb.ok()} + int{sc.ok()} == 2);
  CHECK(lm.TEST_LockHeadCount() == 0);
  CHECK(lm.CheckInvariants());
  CHECK(lm.stats().deadlocks == 1);
}

TEST_CASE("a lock-wait timeout returns LockTimeout and leaves no trace", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManagerOptions options;
  options.lock_wait_timeout = std::chrono::milliseconds(50);
  LockManager lm(options);
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.LockKey(&t1, 1, "k", LockMode::kX).ok());
  const size_t heads = lm.TEST_LockHeadCount();  // database, table, key
  CHECK(heads == 3);

  auto start = std::chrono::steady_clock::now();
  FiberCall wait(rt.get(), 0, [&] { return lm.LockKey(&t2, 1, "k", LockMode::kS); });
  Status s = wait.Join();
  CHECK(s.IsLockTimeout());
  CHECK(s.IsRetryable());
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(50));
  CHECK(t2.HeldMode(kKey) == LockMode::kNone);
  CHECK(t2.lock_count() == 2);  // the intention locks on database and table remain
  CHECK(lm.TEST_WaiterCount(kKey) == 0);
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK(lm.CheckInvariants());
  CHECK(t2.stats().timeouts == 1);

  // A timed-out conversion keeps the mode already held.
  lm.ReleaseAll(&t1);
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kS).ok());
  FiberCall upgrade(rt.get(), 0, [&] { return lm.Lock(&t2, kKey, LockMode::kX); });
  CHECK(upgrade.Join().IsLockTimeout());
  CHECK(t2.HeldMode(kKey) == LockMode::kS);
  CHECK(lm.TEST_WaiterCount(kKey) == 0);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1, &t2});
}

TEST_CASE("a timeout racing a grant: outcome and table always agree", "[unit][lock]") {
  auto rt = MakeRuntime(2);
  LockManagerOptions options;
  options.lock_wait_timeout = std::chrono::microseconds(300);
  LockManager lm(options);
  LockOwner holder(&lm, TxnId(1)), waiter(&lm, TxnId(2));
  std::mt19937_64 rng(sm::test::TestSeed("timeout race"));
  int granted = 0, timed_out = 0;
  for (int i = 0; i < 300; ++i) {
    REQUIRE(lm.Lock(&holder, kKey, LockMode::kX).ok());
    const auto hold = std::chrono::microseconds(rng() % 2000);
    FiberCall wait(rt.get(), 0, [&] { return lm.Lock(&waiter, kKey, LockMode::kX); });
    FiberCall release(rt.get(), 1, [&] {
      threads::SleepFor(hold);
      lm.ReleaseAll(&holder);
      return Status::OK();
    });
    Status s = wait.Join();
    REQUIRE(release.Join().ok());
    if (s.ok()) {
      ++granted;
      REQUIRE(waiter.HeldMode(kKey) == LockMode::kX);
      REQUIRE(lm.TEST_GrantedCount(kKey) == 1);
    } else {
      REQUIRE(s.IsLockTimeout());
      ++timed_out;
      REQUIRE(waiter.lock_count() == 0);
    }
    REQUIRE(lm.TEST_WaiterCount(kKey) == 0);
    REQUIRE(lm.CheckInvariants());
    lm.ReleaseAll(&waiter);
    REQUIRE(lm.TEST_LockHeadCount() == 0);
  }
  INFO("granted " << granted << ", timed out " << timed_out);
  CHECK(granted + timed_out == 300);
}

TEST_CASE("with detection off, a deadlock ends by timeout", "[unit][lock]") {
  auto rt = MakeRuntime(2);
  LockManagerOptions options;
  options.detect_deadlocks = false;
  options.lock_wait_timeout = std::chrono::milliseconds(100);
  LockManager lm(options);
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kS).ok());
  FiberCall c1(rt.get(), 0, [&] { return UpgradeOrAbort(lm, &t1); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  FiberCall c2(rt.get(), 1, [&] { return UpgradeOrAbort(lm, &t2); });
  Status s1 = c1.Join(), s2 = c2.Join();
  // The first to time out releases its S; the other is then granted X (or times out too).
  CHECK((s1.IsLockTimeout() || s2.IsLockTimeout()));
  CHECK_FALSE(s1.IsDeadlock());
  CHECK_FALSE(s2.IsDeadlock());
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1, &t2});
}
