// Key-range (next-key) locking at the lock level: the phantom scenarios of the protocol in
// lock_manager.h, with a table of keys {b, d} (table 9).
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
constexpr TableId kTable = 9;
const LockId kB = LockId::Key(kTable, "b");
const LockId kD = LockId::Key(kTable, "d");
const LockId kEnd = LockId::TableEnd(kTable);
}  // namespace

TEST_CASE("next-key locking: an insert into a scanned range waits for the scanner",
          "[unit][lock]") {
  auto rt = MakeRuntime(2);
  LockManager lm;
  LockOwner scanner(&lm, TxnId(1)), inserter(&lm, TxnId(2)), other(&lm, TxnId(3));
  // Serializable scan of [a, c]: returns b (S on b), then S on the next key beyond c: d.
  REQUIRE(lm.LockKey(&scanner, kTable, "b", LockMode::kS).ok());
  REQUIRE(lm.LockKeyRange(&scanner, kD, RangeOp::kScan).ok());
  CHECK(scanner.HeldMode(LockId::Table(kTable)) == LockMode::kIS);

  // Inserting c (next key d) is a phantom for the scanner: it must wait.
  FiberCall insert(rt.get(), 1, [&] {
    SM_TRY(lm.LockKeyRange(&inserter, kD, RangeOp::kInsert));
    return lm.LockKey(&inserter, kTable, "c", LockMode::kX);
  });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kD) == 1; }));
  // An insert of e outside the range (next key: end of table) does not wait.
  REQUIRE(lm.LockKeyRange(&other, kEnd, RangeOp::kInsert).ok());
  REQUIRE(lm.LockKey(&other, kTable, "e", LockMode::kX).ok());
  CHECK(other.HeldMode(kEnd) == LockMode::kNone);  // instant: nothing held on the range
  CHECK_FALSE(insert.finished());
  CHECK(lm.CheckInvariants());

  lm.ReleaseAll(&scanner);  // the scanner commits
  REQUIRE(insert.Join().ok());
  CHECK(inserter.HeldMode(kD) == LockMode::kNone);  // the range check was instant
  CHECK(inserter.HeldMode(LockId::Key(kTable, "c")) == LockMode::kX);
  CHECK(inserter.HeldMode(LockId::Table(kTable)) == LockMode::kIX);
  EndAll(lm, {&inserter, &other});
}

TEST_CASE("next-key locking: a scan to the end of the table blocks inserts past the end",
          "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner scanner(&lm, TxnId(1)), inserter1(&lm, TxnId(2)), inserter2(&lm, TxnId(3));
  // Scan [c, +inf): returns d, then the end-of-table lock.
  REQUIRE(lm.LockKey(&scanner, kTable, "d", LockMode::kS).ok());
  REQUIRE(lm.LockKeyRange(&scanner, kEnd, RangeOp::kScan).ok());
  FiberCall i1(rt.get(), 0, [&] { return lm.LockKeyRange(&inserter1, kEnd, RangeOp::kInsert); });
  FiberCall i2(rt.get(), 0, [&] { return lm.LockKeyRange(&inserter2, kEnd, RangeOp::kInsert); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kEnd) == 2; }));
  lm.ReleaseAll(&scanner);
  // Both inserters into the same gap proceed (IX is compatible with IX).
  REQUIRE(i1.Join().ok());
  REQUIRE(i2.Join().ok());
  EndAll(lm, {&inserter1, &inserter2});
}

TEST_CASE("next-key locking: a scan waits for an uncommitted delete's gap", "[unit][lock]") {
  auto rt = MakeRuntime(1);
  LockManager lm;
  LockOwner deleter(&lm, TxnId(1)), scanner(&lm, TxnId(2));
  // Delete b: X on b and X on its next key d, both to commit.
  REQUIRE(lm.LockKey(&deleter, kTable, "b", LockMode::kX).ok());
  REQUIRE(lm.LockKeyRange(&deleter, kD, RangeOp::kDelete).ok());
  // A scan of [a, c] no longer finds b; it stops at d, whose S lock must wait.
  FiberCall scan(rt.get(), 0, [&] { return lm.LockKeyRange(&scanner, kD, RangeOp::kScan); });
  REQUIRE(Eventually([&] { return lm.TEST_WaiterCount(kD) == 1; }));
  lm.ReleaseAll(&deleter);
  REQUIRE(scan.Join().ok());
  CHECK(scanner.HeldMode(kD) == LockMode::kS);
  EndAll(lm, {&scanner});
}

TEST_CASE("an inserter that already read the next key upgrades it", "[unit][lock]") {
  LockManager lm;
  LockOwner t(&lm, TxnId(1));
  REQUIRE(lm.LockKeyRange(&t, kD, RangeOp::kScan).ok());
  REQUIRE(lm.LockKeyRange(&t, kD, RangeOp::kInsert).ok());
  CHECK(t.HeldMode(kD) == LockMode::kSIX);  // instant on a held lock keeps the join
  EndAll(lm, {&t});
}

TEST_CASE("next-key locking: an insert passes a writer of the next key's record, not a deleter",
          "[unit][lock]") {
  LockManager lm;
  LockOwner writer(&lm, TxnId(1)), deleter(&lm, TxnId(2)), inserter(&lm, TxnId(3)),
      reader(&lm, TxnId(4));
  // The writer holds d's record (an update, a read for update, or its own insert of d): XK.
  REQUIRE(lm.LockKey(&writer, kTable, "d", LockMode::kXK).ok());
  // Inserting c (next key d) reads no gap the writer holds: no wait.
  REQUIRE(lm.LockKeyRange(&inserter, kD, RangeOp::kInsert, LockWait::kNoWait).ok());
  REQUIRE(lm.LockKey(&inserter, kTable, "c", LockMode::kXK, LockDuration::kCommit,
                     LockWait::kNoWait).ok());
  // A reader of d, and a scanner of the gap before d (S on d), still wait for the writer.
  CHECK(lm.LockKeyRange(&reader, kD, RangeOp::kScan, LockWait::kNoWait).code() ==
        Status::Code::kBusy);
  CHECK(lm.LockKey(&reader, kTable, "d", LockMode::kXK, LockDuration::kCommit,
                   LockWait::kNoWait).code() == Status::Code::kBusy);
  // A delete of b closes the gap (b, d) with X on d: it waits for the writer, and once it holds
  // X on d an insertion into that gap waits for it.
  lm.ReleaseAll(&writer);
  REQUIRE(lm.LockKey(&deleter, kTable, "b", LockMode::kXK).ok());
  REQUIRE(lm.LockKeyRange(&deleter, kD, RangeOp::kDelete).ok());
  CHECK(lm.LockKeyRange(&inserter, kD, RangeOp::kInsert, LockWait::kNoWait).code() ==
        Status::Code::kBusy);
  CHECK(lm.CheckInvariants());
  EndAll(lm, {&writer, &deleter, &inserter, &reader});
}
