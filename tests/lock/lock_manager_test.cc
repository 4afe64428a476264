// Lock manager: granting, conversions, the hierarchy helper, FIFO fairness, wake-up order,
// waits across workers and on plain threads, no-wait and instant requests, single release,
// and statistics.
#include "sm/lock/lock_manager.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/lock/lock_test_util.h"
#include "threads/sync.h"
#include "threads/worker.h"

using namespace sm;
using namespace sm::lock;
using sm::lock::test::EndAll;
using sm::lock::test::Eventually;
using sm::lock::test::FiberCall;
using sm::test::MakeRuntime;

namespace {
const LockId kKey = LockId::Key(1, "k");
}  // namespace

TEST_CASE("an uncontended lock is granted at once and released", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kX).ok());
  CHECK(t1.HeldMode(kKey) == LockMode::kX);
  CHECK(t1.lock_count() == 1);
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK(lm.CheckInvariants());
  CHECK(lm.Release(&t1, kKey));
  CHECK_FALSE(lm.Release(&t1, kKey));  // not held any more
  CHECK(t1.lock_count() == 0);
  CHECK(lm.TEST_LockHeadCount() == 0);
  CHECK(lm.CheckInvariants());
}

TEST_CASE("compatible holders share a lock, many locks grow the owner's hash", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kIS).ok());
  CHECK(lm.TEST_GrantedCount(kKey) == 2);
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(lm.Lock(&t1, LockId::Key(2, std::to_string(i)), LockMode::kX).ok());
  }
  CHECK(t1.lock_count() == 1001);
  for (int i = 0; i < 1000; ++i) {
    CHECK(t1.HeldMode(LockId::Key(2, std::to_string(i))) == LockMode::kX);
  }
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1, &t2});
}

TEST_CASE("re-requests in covered modes are no-ops, stronger modes convert", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kIS).ok());
  CHECK(t1.stats().covered == 2);
  SECTION("S -> X when alone is granted at once") {
    REQUIRE(lm.Lock(&t1, kKey, LockMode::kX).ok());
    CHECK(t1.HeldMode(kKey) == LockMode::kX);
  }
  SECTION("S + IX = SIX") {
    REQUIRE(lm.Lock(&t1, kKey, LockMode::kIX).ok());
    CHECK(t1.HeldMode(kKey) == LockMode::kSIX);
    REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());  // covered by SIX
    CHECK(t1.HeldMode(kKey) == LockMode::kSIX);
  }
  CHECK(t1.stats().conversions == 1);
  CHECK(t1.lock_count() == 1);  // one request per lock, whatever the number of calls
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1});
}

TEST_CASE("the hierarchy helper takes intention locks on table and database", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.LockKey(&t1, 3, "a", LockMode::kS).ok());
  CHECK(t1.HeldMode(LockId::Database()) == LockMode::kIS);
  CHECK(t1.HeldMode(LockId::Table(3)) == LockMode::kIS);
  CHECK(t1.HeldMode(LockId::Key(3, "a")) == LockMode::kS);
  REQUIRE(lm.LockKey(&t1, 3, "b", LockMode::kX).ok());  // IS -> IX on both parents
  CHECK(t1.HeldMode(LockId::Database()) == LockMode::kIX);
  CHECK(t1.HeldMode(LockId::Table(3)) == LockMode::kIX);
  CHECK(t1.lock_count() == 4);

  // A table S lock covers key reads below it: no key lock is taken.
  REQUIRE(lm.LockTable(&t2, 4, LockMode::kS).ok());
  REQUIRE(lm.LockKey(&t2, 4, "a", LockMode::kS).ok());
  CHECK(t2.HeldMode(LockId::Key(4, "a")) == LockMode::kNone);
  // Writing below it converts the table lock to SIX and takes the key lock.
  REQUIRE(lm.LockKey(&t2, 4, "b", LockMode::kX).ok());
  CHECK(t2.HeldMode(LockId::Table(4)) == LockMode::kSIX);
  CHECK(t2.HeldMode(LockId::Key(4, "b")) == LockMode::kX);
  // A table X lock covers everything below it.
  REQUIRE(lm.LockTable(&t2, 5, LockMode::kX).ok());
  REQUIRE(lm.LockKey(&t2, 5, "z", LockMode::kX).ok());
  CHECK(t2.HeldMode(LockId::Key(5, "z")) == LockMode::kNone);
  // t1's IX on table 3 conflicts with a table S request.
  CHECK(lm.LockTable(&t2, 3, LockMode::kS, LockWait::kNoWait).code() == Status::Code::kBusy);
  CHECK(t2.HeldMode(LockId::Table(3)) == LockMode::kNone);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1, &t2});
}

TEST_CASE("the hierarchy helper reports the mode held or implied on the target",
          "[unit][lock]") {
  LockManager lm;
  // Asks for `mode` on `table` and returns the mode the owner has there now.
  auto lock_table = [&lm](LockOwner* owner, TableId table, LockMode mode) {
    LockMode effective = LockMode::kNone;
    REQUIRE(lm.LockTable(owner, table, mode, LockWait::kBlock, &effective).ok());
    return effective;
  };
  LockOwner t1(&lm, TxnId(1));
  CHECK(lock_table(&t1, 3, LockMode::kIS) == LockMode::kIS);
  CHECK(lock_table(&t1, 3, LockMode::kIX) == LockMode::kIX);
  REQUIRE(lm.LockTable(&t1, 4, LockMode::kS).ok());
  CHECK(lock_table(&t1, 4, LockMode::kIS) == LockMode::kS);  // stronger than asked: what is held
  EndAll(lm, {&t1});

  // A database lock that covers the request: nothing is locked below it, and the mode it
  // implies on the table is reported. SIX implies S only: a write intention below it is a
  // lock of its own.
  LockOwner t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t2, LockId::Database(), LockMode::kSIX).ok());
  CHECK(lock_table(&t2, 3, LockMode::kIS) == LockMode::kS);
  CHECK(t2.HeldMode(LockId::Table(3)) == LockMode::kNone);
  CHECK(lock_table(&t2, 3, LockMode::kIX) == LockMode::kIX);
  CHECK(t2.HeldMode(LockId::Table(3)) == LockMode::kIX);
  EndAll(lm, {&t2});

  LockOwner t3(&lm, TxnId(3));
  REQUIRE(lm.Lock(&t3, LockId::Database(), LockMode::kX).ok());
  CHECK(lock_table(&t3, 3, LockMode::kIX) == LockMode::kX);
  CHECK(t3.HeldMode(LockId::Table(3)) == LockMode::kNone);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t3});
}

TEST_CASE("kNoWait returns Busy and leaves no trace", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kX).ok());
  Status s = lm.Lock(&t2, kKey, LockMode::kS, LockDuration::kCommit, LockWait::kNoWait);
  CHECK(s.code() == Status::Code::kBusy);
  CHECK(t2.lock_count() == 0);
  CHECK(lm.TEST_WaiterCount(kKey) == 0);
  lm.ReleaseAll(&t1);
  // A conversion that would wait is refused too, and the old mode stays.
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kS).ok());
  s = lm.Lock(&t2, kKey, LockMode::kX, LockDuration::kCommit, LockWait::kNoWait);
  CHECK(s.code() == Status::Code::kBusy);
  CHECK(t2.HeldMode(kKey) == LockMode::kS);
  CHECK(t2.stats().refusals == 2);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1, &t2});
}

TEST_CASE("increment locks share a key with each other and with nothing else", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2)), t3(&lm, TxnId(3));
  REQUIRE(lm.LockKey(&t1, 1, "k", LockMode::kInc).ok());
  REQUIRE(lm.LockKey(&t2, 1, "k", LockMode::kInc, LockDuration::kCommit, LockWait::kNoWait).ok());
  CHECK(t1.HeldMode(LockId::Table(1)) == LockMode::kIX);  // an adder intends to write
  // A reader and a writer would wait for the adders.
  CHECK(lm.LockKey(&t3, 1, "k", LockMode::kS, LockDuration::kCommit, LockWait::kNoWait)
            .code() == Status::Code::kBusy);
  CHECK(lm.LockKey(&t3, 1, "k", LockMode::kX, LockDuration::kCommit, LockWait::kNoWait)
            .code() == Status::Code::kBusy);
  // An adder that also reads the key needs X, which the other adder holds off.
  CHECK(lm.Lock(&t1, kKey, LockMode::kS, LockDuration::kCommit, LockWait::kNoWait).code() ==
        Status::Code::kBusy);
  CHECK(t1.HeldMode(kKey) == LockMode::kInc);
  CHECK(lm.CheckInvariants());
  lm.ReleaseAll(&t2);
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS, LockDuration::kCommit, LockWait::kNoWait).ok());
  CHECK(t1.HeldMode(kKey) == LockMode::kX);
  CHECK(lm.LockKey(&t3, 1, "k", LockMode::kInc, LockDuration::kCommit, LockWait::kNoWait)
            .code() == Status::Code::kBusy);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&t1, &t2, &t3});
}

TEST_CASE("FIFO: an X waiter makes later S requests wait (no barging)", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner t0(&lm, TxnId(1)), t1(&lm, TxnId(2)), t2(&lm, TxnId(3));
  REQUIRE(lm.Lock(&t0, kKey, LockMode::kS).ok());
  threads::Baton t1_may_release;
  FiberCall x(rt.get(), 0, [&] {
    Status s = lm.Lock(&t1, kKey, LockMode::kX);
    t1_may_release.Wait();
    lm.ReleaseAll(&t1);
    return s;
  });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  FiberCall s(rt.get(), 0, [&] { return lm.Lock(&t2, kKey, LockMode::kS); });
  // S is compatible with the granted S, but an X waiter is queued ahead of it.
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 2; }));
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK(lm.CheckInvariants());
  lm.ReleaseAll(&t0);  // X is granted; the S request still waits behind it
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  CHECK(lm.TEST_GrantedCount(kKey) == 1);
  CHECK_FALSE(s.finished());
  t1_may_release.Post();
  REQUIRE(x.Join().ok());
  REQUIRE(s.Join().ok());
  CHECK(t2.HeldMode(kKey) == LockMode::kS);
  EndAll(lm, {&t2});
}

TEST_CASE("an upgrade is queued ahead of earlier plain waiters", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2)), t3(&lm, TxnId(3));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kS).ok());
  std::string order;
  FiberCall waiter(rt.get(), 0, [&] {
    Status s = lm.Lock(&t3, kKey, LockMode::kX);
    order += "3";
    lm.ReleaseAll(&t3);
    return s;
  });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  FiberCall upgrade(rt.get(), 0, [&] {
    Status s = lm.Lock(&t2, kKey, LockMode::kX);  // waits for t1's S only
    order += "2";
    lm.ReleaseAll(&t2);
    return s;
  });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 2; }));
  CHECK(lm.CheckInvariants());
  lm.ReleaseAll(&t1);
  REQUIRE(upgrade.Join().ok());
  REQUIRE(waiter.Join().ok());
  CHECK(order == "23");
  CHECK(lm.TEST_LockHeadCount() == 0);
}

TEST_CASE("ReleaseAll wakes waiters in FIFO order, compatible ones together", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner t0(&lm, TxnId(1));
  REQUIRE(lm.Lock(&t0, kKey, LockMode::kX).ok());
  struct Step {
    char tag;
    LockMode mode;
  };
  const Step steps[] = {{'a', LockMode::kX}, {'b', LockMode::kS}, {'c', LockMode::kS},
                        {'d', LockMode::kX}};
  std::vector<std::unique_ptr<LockOwner>> owners;
  std::vector<std::unique_ptr<FiberCall>> calls;
  std::string order;
  for (const Step& step : steps) {
    owners.push_back(std::make_unique<LockOwner>(&lm, TxnId(2 + owners.size())));
    LockOwner* owner = owners.back().get();
    calls.push_back(std::make_unique<FiberCall>(rt.get(), 0, [&, owner, step] {
      Status s = lm.Lock(owner, kKey, step.mode);
      order += step.tag;
      threads::Worker::Current()->Yield();  // stay inside so that sharing shows
      order += static_cast<char>(step.tag - 32);
      lm.ReleaseAll(owner);
      return s;
    }));
    size_t queued = calls.size();
    REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == queued; }));
  }
  CHECK(lm.CheckInvariants());
  lm.ReleaseAll(&t0);
  for (auto& call : calls) REQUIRE(call->Join().ok());
  CHECK(order == "aAbcBCdD");
  CHECK(lm.TEST_LockHeadCount() == 0);
}

TEST_CASE("a waiter on worker 0 is woken by a release on worker 1", "[unit][lock]") {
  auto rt = MakeRuntime(2);
  LockManager lm;
  LockOwner holder(&lm, TxnId(1)), waiter(&lm, TxnId(2));
  threads::Baton held, release;
  FiberCall hold(rt.get(), 1, [&] {
    Status s = lm.Lock(&holder, kKey, LockMode::kX);
    held.Post();
    release.Wait();  // suspends this fiber; worker 1 idles
    lm.ReleaseAll(&holder);
    return s;
  });
  held.Wait();
  std::atomic<int> waiter_worker_before{-1}, waiter_worker_after{-1};
  FiberCall wait(rt.get(), 0, [&] {
    waiter_worker_before = threads::Worker::Current()->index();
    Status s = lm.Lock(&waiter, kKey, LockMode::kX);
    waiter_worker_after = threads::Worker::Current()->index();
    lm.ReleaseAll(&waiter);
    return s;
  });
  // While the waiter is blocked, worker 0 keeps running its other fibers.
  std::atomic<bool> stop{false};
  std::atomic<long> ticks{0};
  threads::Baton ticker_done;
  rt->Spawn(
      [&] {
        while (!stop.load()) {
          ticks.fetch_add(1);
          threads::SleepFor(std::chrono::microseconds(100));
        }
        ticker_done.Post();
      },
      0);
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  long before = ticks.load();
  REQUIRE(Eventually([&] { return ticks.load() > before + 10; }));
  CHECK_FALSE(wait.finished());
  release.Post();
  REQUIRE(hold.Join().ok());
  REQUIRE(wait.Join().ok());
  stop = true;
  ticker_done.Wait();
  CHECK(waiter_worker_before.load() == 0);
  CHECK(waiter_worker_after.load() == 0);  // fibers never migrate
  CHECK(waiter.stats().waits == 1);
  CHECK(lm.TEST_LockHeadCount() == 0);
}

TEST_CASE("plain OS threads wait by blocking", "[unit][lock]") {
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kX).ok());
  std::atomic<bool> granted{false};
  std::thread waiter([&] {
    REQUIRE(lm.Lock(&t2, kKey, LockMode::kS).ok());
    granted = true;
    lm.ReleaseAll(&t2);
  });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  CHECK_FALSE(granted.load());
  lm.ReleaseAll(&t1);
  waiter.join();
  CHECK(granted.load());
  CHECK(lm.TEST_LockHeadCount() == 0);
}

TEST_CASE("Release of one lock (read committed) wakes its waiters", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner reader(&lm, TxnId(1)), writer(&lm, TxnId(2));
  const LockId other = LockId::Key(1, "other");
  REQUIRE(lm.Lock(&reader, kKey, LockMode::kS).ok());
  REQUIRE(lm.Lock(&reader, other, LockMode::kS).ok());
  FiberCall write(rt.get(), 0, [&] { return lm.Lock(&writer, kKey, LockMode::kX); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  CHECK(lm.Release(&reader, kKey));
  REQUIRE(write.Join().ok());
  CHECK(reader.HeldMode(other) == LockMode::kS);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&reader, &writer});
}

TEST_CASE("an instant-duration lock waits until grantable and holds nothing", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2)), t3(&lm, TxnId(3));
  REQUIRE(lm.Lock(&t2, kKey, LockMode::kX, LockDuration::kInstant).ok());  // free: no trace
  CHECK(t2.lock_count() == 0);
  CHECK(lm.TEST_LockHeadCount() == 0);
  REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());
  FiberCall instant(rt.get(), 0,
                    [&] { return lm.Lock(&t2, kKey, LockMode::kX, LockDuration::kInstant); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
  FiberCall later(rt.get(), 0, [&] { return lm.Lock(&t3, kKey, LockMode::kS); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 2; }));
  lm.ReleaseAll(&t1);
  REQUIRE(instant.Join().ok());
  REQUIRE(later.Join().ok());  // the instant X was released at once, so S follows
  CHECK(t2.lock_count() == 0);
  CHECK(t3.HeldMode(kKey) == LockMode::kS);
  EndAll(lm, {&t3});
}

TEST_CASE("statistics count requests, grants, waits and wait time", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  {
    LockOwner t1(&lm, TxnId(1)), t2(&lm, TxnId(2));
    REQUIRE(lm.Lock(&t1, kKey, LockMode::kX).ok());
    REQUIRE(lm.Lock(&t1, kKey, LockMode::kS).ok());  // covered
    FiberCall wait(rt.get(), 0, [&] { return lm.Lock(&t2, kKey, LockMode::kS); });
    REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kKey) == 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    lm.ReleaseAll(&t1);
    REQUIRE(wait.Join().ok());
    CHECK(t2.stats().waits == 1);
    CHECK(t2.stats().wait_ns >= 5'000'000);
    lm.ReleaseAll(&t2);
  }
  LockStats s = lm.stats();
  CHECK(s.requests == 3);
  CHECK(s.covered == 1);
  CHECK(s.immediate_grants == 1);
  CHECK(s.waits == 1);
  CHECK(s.deadlocks == 0);
  CHECK(s.timeouts == 0);
  CHECK(s.average_wait_us() >= 5000.0);
}

TEST_CASE("NoOtherWriter sees other owners' write intentions on the table or database",
          "[unit][lock]") {
  LockManager lm;
  LockOwner reader(&lm, TxnId(1));
  LockOwner writer(&lm, TxnId(2));
  CHECK(lm.NoOtherWriter(&reader, 1));
  REQUIRE(lm.Lock(&writer, LockId::Table(1), LockMode::kIS).ok());
  CHECK(lm.NoOtherWriter(&reader, 1));  // a reader's intention writes nothing
  REQUIRE(lm.Lock(&writer, LockId::Table(2), LockMode::kIX).ok());
  CHECK(lm.NoOtherWriter(&reader, 1));  // another table
  CHECK_FALSE(lm.NoOtherWriter(&reader, 2));
  CHECK(lm.NoOtherWriter(&writer, 2));  // its own intention
  EndAll(lm, {&writer});
  CHECK(lm.NoOtherWriter(&reader, 2));
  REQUIRE(lm.Lock(&writer, LockId::Database(), LockMode::kX).ok());  // writes any table
  CHECK_FALSE(lm.NoOtherWriter(&reader, 1));
  EndAll(lm, {&writer});
  CHECK(lm.NoOtherWriter(&reader, 1));
}
