// TxnKeyLocks (index/btree_locks.h): the B-tree's key-range locking over the lock manager, on a
// tree without logging and with LockOwners made directly.
//
// Covered: the purpose -> lock mapping for both isolation levels, the intention locks and the
// per-call cost, phantom protection under serializable (a lookup of an absent key, a forward and
// a backward scan, the gap at the end of the index, an empty tree), phantoms allowed but dirty
// reads refused under read committed, deletes and the next key, writer/writer and reader/writer
// conflicts, sharing among readers, deadlocks (on keys and on gaps) reported to exactly one
// transaction, the order of an insert's locks (the gap before the key; a regression test), and
// an insert of a key another transaction is inserting (a duplicate is read, an insert that
// restarts searches again). Where waiting matters the blocked operation runs on a fiber and the
// other transactions continue on the same worker through the same leaf: a lock wait suspends the
// fiber and holds no latch. The [random] case runs serializable and read-committed transactions on
// fibers and checks repeatable reads without phantoms, no dirty reads, and that the tree ends
// equal to the committed writes.
#include "index/btree_locks.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "index/btree.h"
#include "sm/lock/lock_manager.h"
#include "tests/index/btree_test_util.h"
#include "tests/lock/lock_test_util.h"
#include "tests/test_util.h"
#include "threads/sync.h"
#include "threads/worker.h"

using namespace sm;
using index::BTree;
using index::Cursor;
using index::KeyLockPurpose;
using index::KeyLockRequest;
using index::OpContext;
using index::ScanBound;
using index::ScanRange;
using index::TxnKeyLocks;
using lock::LockId;
using lock::LockManager;
using lock::LockMode;
using lock::LockOwner;
using sm::lock::test::EndAll;
using sm::lock::test::Eventually;
using sm::lock::test::FiberCall;
using sm::test::MakeRuntime;
using sm::test::TreeEnv;
using txn::Isolation;

namespace {

constexpr lock::TableId kTable = 7;
constexpr Isolation kSer = Isolation::kSerializable;
constexpr Isolation kRc = Isolation::kReadCommitted;

LockId KeyId(std::string_view key) { return LockId::Key(kTable, key); }
const LockId kEnd = LockId::TableEnd(kTable);
const LockId kTableId = LockId::Table(kTable);

// One transaction's locks on the test table.
struct TestTxn {
  TestTxn(LockManager* lm, uint64_t id, Isolation isolation)
      : owner(lm, TxnId(id)), locks(lm, &owner, isolation, kTable) {}
  OpContext ctx() { return OpContext{nullptr, &locks}; }
  LockMode held(const LockId& id) const { return owner.HeldMode(id); }

  LockOwner owner;
  TxnKeyLocks locks;
};

// A tree holding `keys` (value "v-<key>") and a lock manager. Declared before the transactions
// of a test, so it outlives their owners.
struct Db {
  explicit Db(std::initializer_list<const char*> keys) : env(64) {
    for (const char* k : keys) REQUIRE(env.tree->Insert(k, std::string("v-") + k).ok());
  }
  BTree& tree() { return *env.tree; }
  bool Waiting(const LockId& id, size_t waiters = 1) {
    return Eventually([&] { return lm.TEST_WaiterCount(id) == waiters; });
  }

  TreeEnv env;
  LockManager lm;
};

ScanRange HalfOpen(std::string_view lo, std::string_view hi) {
  return ScanRange{ScanBound::Inclusive(lo), ScanBound::Exclusive(hi)};
}

// The keys of `range` in scan order: SeekToFirst/Next forward, SeekToLast/Prev backward.
Status ScanKeys(const BTree& tree, ScanRange range, OpContext ctx, bool forward,
                std::vector<std::string>* keys) {
  keys->clear();
  Cursor cursor(&tree, std::move(range), ctx);
  SM_TRY(forward ? cursor.SeekToFirst() : cursor.SeekToLast());
  while (cursor.Valid()) {
    keys->emplace_back(cursor.key());
    SM_TRY(forward ? cursor.Next() : cursor.Prev());
  }
  return Status::OK();
}

using Keys = std::vector<std::string>;

// On a fiber: OK iff `key` is absent (NotFound); any other answer is an error naming it.
Status ExpectAbsent(const BTree& tree, std::string_view key, OpContext ctx) {
  std::string value;
  Status s = tree.Lookup(key, &value, ctx);
  if (s.IsNotFound()) return Status::OK();
  SM_TRY(std::move(s));
  return Status::Corruption(std::string(key) + " is visible");
}

// Runs `fn` on a fiber on `worker` and returns its status (the caller is a plain thread).
Status OnFiber(threads::Runtime* rt, int worker, std::function<Status()> fn) {
  FiberCall call(rt, worker, std::move(fn));
  return call.Join();
}

}  // namespace

// ---- mapping ------------------------------------------------------------------------------------

TEST_CASE("btree locks: each purpose maps to its key-range lock", "[unit][locks]") {
  Db db({});
  TestTxn ser(&db.lm, 1, kSer), rc(&db.lm, 2, kRc);
  auto request = [](std::string_view key, KeyLockPurpose purpose) {
    return KeyLockRequest{key, false, purpose};
  };
  auto end = [](KeyLockPurpose purpose) { return KeyLockRequest{{}, true, purpose}; };

  // Serializable readers: S to commit on the key and on the next key (or end of index).
  REQUIRE(ser.locks.TryLockKey(request("r", KeyLockPurpose::kRead)).ok());
  REQUIRE(ser.locks.TryLockKey(request("n", KeyLockPurpose::kReadNext)).ok());
  REQUIRE(ser.locks.TryLockKey(end(KeyLockPurpose::kReadNext)).ok());
  CHECK(ser.held(KeyId("r")) == LockMode::kS);
  CHECK(ser.held(KeyId("n")) == LockMode::kS);
  CHECK(ser.held(kEnd) == LockMode::kS);
  CHECK(ser.held(kTableId) == LockMode::kIS);
  CHECK(ser.held(LockId::Database()) == LockMode::kIS);

  // Read committed: read locks are instant, so nothing stays.
  REQUIRE(rc.locks.TryLockKey(request("r2", KeyLockPurpose::kRead)).ok());
  REQUIRE(rc.locks.TryLockKey(request("n2", KeyLockPurpose::kReadNext)).ok());
  REQUIRE(rc.locks.TryLockKey(end(KeyLockPurpose::kReadNext)).ok());
  CHECK(rc.owner.lock_count() == 2);  // IS on the database and the table
  CHECK(rc.held(kTableId) == LockMode::kIS);

  // Writers (either level): X on the key, instant IX on the insert's next key, X on the
  // delete's next key. The table lock converts IS -> IX.
  REQUIRE(ser.locks.TryLockKey(request("w", KeyLockPurpose::kWrite)).ok());
  REQUIRE(ser.locks.LockKey(request("i", KeyLockPurpose::kInsertNext)).ok());
  REQUIRE(ser.locks.TryLockKey(request("d", KeyLockPurpose::kDeleteNext)).ok());
  REQUIRE(ser.locks.TryLockKey(end(KeyLockPurpose::kInsertNext)).ok());
  CHECK(ser.held(KeyId("w")) == LockMode::kXK);
  CHECK(ser.held(KeyId("d")) == LockMode::kX);
  CHECK(ser.held(kTableId) == LockMode::kIX);
  CHECK(ser.held(LockId::Database()) == LockMode::kIX);
  // "i" was granted by LockKey (without a wait here): kept as the pin until the next call,
  // which released it.
  CHECK(ser.held(KeyId("i")) == LockMode::kNone);
  CHECK(ser.held(kEnd) == LockMode::kSIX);  // instant IX on a held S: the manager keeps SIX
  CHECK_FALSE(ser.locks.TEST_pinned().valid());

  // Read committed writes as serializable does.
  REQUIRE(rc.locks.TryLockKey(request("w2", KeyLockPurpose::kWrite)).ok());
  CHECK(rc.held(KeyId("w2")) == LockMode::kXK);
  // Its instant S on "r" must see no writer: the serializable transaction holds only S there.
  REQUIRE(rc.locks.TryLockKey(request("r", KeyLockPurpose::kRead)).ok());
  CHECK(rc.locks.TryLockKey(request("w", KeyLockPurpose::kRead)).code() == Status::Code::kBusy);
  CHECK(rc.held(KeyId("w")) == LockMode::kNone);  // a refusal leaves no trace
  EndAll(db.lm, {&ser.owner, &rc.owner});
}

TEST_CASE("btree locks: a table lock that covers the keys makes key locks unnecessary",
          "[unit][locks]") {
  Db db({});
  TestTxn t(&db.lm, 1, kSer);
  REQUIRE(db.lm.LockTable(&t.owner, kTable, LockMode::kS).ok());  // a table scan
  REQUIRE(t.locks.TryLockKey(KeyLockRequest{"k", false, KeyLockPurpose::kRead}).ok());
  CHECK(t.held(KeyId("k")) == LockMode::kNone);
  REQUIRE(t.locks.TryLockKey(KeyLockRequest{"k", false, KeyLockPurpose::kWrite}).ok());
  CHECK(t.held(kTableId) == LockMode::kSIX);
  CHECK(t.held(KeyId("k")) == LockMode::kXK);
  EndAll(db.lm, {&t.owner});
}

TEST_CASE("btree locks: a database lock that covers the keys makes table and key locks "
          "unnecessary",
          "[unit][locks]") {
  Db db({"a"});
  TestTxn t(&db.lm, 1, kSer);
  REQUIRE(db.lm.Lock(&t.owner, LockId::Database(), LockMode::kX).ok());  // a whole-db operation
  const uint64_t before = t.owner.stats().requests;
  std::string value;
  REQUIRE(db.tree().Lookup("a", &value, t.ctx()).ok());
  REQUIRE(t.locks.TryLockKey(KeyLockRequest{"k", false, KeyLockPurpose::kWrite}).ok());
  REQUIRE(t.locks.LockKey(KeyLockRequest{"b", false, KeyLockPurpose::kInsertNext}).ok());
  CHECK(t.held(kTableId) == LockMode::kNone);
  CHECK(t.held(KeyId("a")) == LockMode::kNone);
  CHECK(t.held(KeyId("k")) == LockMode::kNone);
  // The database lock was looked at once; after it the hook knows the keys are covered.
  CHECK(t.owner.stats().requests == before + 1);
  EndAll(db.lm, {&t.owner});
}

TEST_CASE("btree locks: under a database SIX lock reads are covered and writes lock below it",
          "[unit][locks]") {
  Db db({"a"});
  TestTxn t(&db.lm, 1, kSer);
  REQUIRE(db.lm.Lock(&t.owner, LockId::Database(), LockMode::kSIX).ok());
  std::string value;
  REQUIRE(db.tree().Lookup("a", &value, t.ctx()).ok());
  CHECK(t.held(kTableId) == LockMode::kNone);
  CHECK(t.held(KeyId("a")) == LockMode::kNone);
  REQUIRE(t.locks.TryLockKey(KeyLockRequest{"a", false, KeyLockPurpose::kWrite}).ok());
  CHECK(t.held(kTableId) == LockMode::kIX);
  CHECK(t.held(KeyId("a")) == LockMode::kXK);
  EndAll(db.lm, {&t.owner});
}

TEST_CASE("btree locks: the intention lock is taken once, a key request is one lock call",
          "[unit][locks]") {
  Db db({"a", "b", "c"});
  TestTxn t(&db.lm, 1, kSer);
  REQUIRE(t.locks.LockTable(false).ok());
  CHECK(t.held(kTableId) == LockMode::kIS);
  uint64_t before = t.owner.stats().requests;
  REQUIRE(t.locks.LockTable(false).ok());
  CHECK(t.owner.stats().requests == before);  // held: no call at all
  std::string value;
  REQUIRE(db.tree().Lookup("a", &value, t.ctx()).ok());
  before = t.owner.stats().requests;
  REQUIRE(db.tree().Lookup("b", &value, t.ctx()).ok());
  REQUIRE(db.tree().Lookup("b", &value, t.ctx()).ok());
  CHECK(t.owner.stats().requests == before + 2);  // no ancestor walk per key
  REQUIRE(t.locks.LockTable(true).ok());
  CHECK(t.held(kTableId) == LockMode::kIX);
  CHECK(t.held(LockId::Database()) == LockMode::kIX);
  EndAll(db.lm, {&t.owner});
}

// ---- phantoms under serializable ----------------------------------------------------------------

TEST_CASE("btree locks: a lookup of an absent key blocks an insert into its gap", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c", "e"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kSer);
  std::string value;
  REQUIRE(db.tree().Lookup("b", &value, t1.ctx()).IsNotFound());
  CHECK(t1.held(KeyId("c")) == LockMode::kS);

  FiberCall insert(rt.get(), 0, [&] { return db.tree().Insert("b", "v-b", t2.ctx()); });
  REQUIRE(db.Waiting(KeyId("c")));
  // T1 on the same worker, through the same leaf: the waiting fiber holds no latch.
  REQUIRE(OnFiber(rt.get(), 0, [&] {
            SM_TRY(ExpectAbsent(db.tree(), "b", t1.ctx()));
            std::string v;
            return db.tree().Lookup("c", &v, t1.ctx());
          }).ok());
  // Another gap is free: d goes before e.
  REQUIRE(db.tree().Insert("d", "v-d", t3.ctx()).ok());
  CHECK_FALSE(insert.finished());

  db.lm.ReleaseAll(&t1.owner);  // T1 commits
  REQUIRE(insert.Join().ok());
  REQUIRE(db.tree().Lookup("b", &value).ok());
  CHECK(t2.held(KeyId("b")) == LockMode::kXK);
  CHECK(t2.held(KeyId("c")) == LockMode::kNone);  // the insert's range check was instant
  CHECK_FALSE(t2.locks.TEST_pinned().valid());    // the restart released the pin
  CHECK(db.tree().counters().lock_waits == 1);
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner});
}

TEST_CASE("btree locks: a scanned range takes no phantom until the scanner commits",
          "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c", "e"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer);
  Keys keys;
  REQUIRE(ScanKeys(db.tree(), HalfOpen("a", "c"), t1.ctx(), true, &keys).ok());
  REQUIRE(keys == Keys{"a"});
  CHECK(t1.held(KeyId("a")) == LockMode::kS);
  CHECK(t1.held(KeyId("c")) == LockMode::kS);  // the key after the range

  FiberCall insert(rt.get(), 0, [&] { return db.tree().Insert("b", "v-b", t2.ctx()); });
  REQUIRE(db.Waiting(KeyId("c")));
  Keys again;
  REQUIRE(OnFiber(rt.get(), 0, [&] {
            return ScanKeys(db.tree(), HalfOpen("a", "c"), t1.ctx(), true, &again);
          }).ok());
  CHECK(again == Keys{"a"});  // repeatable: no phantom b
  CHECK_FALSE(insert.finished());

  db.lm.ReleaseAll(&t1.owner);
  REQUIRE(insert.Join().ok());
  db.lm.ReleaseAll(&t2.owner);
  REQUIRE(ScanKeys(db.tree(), HalfOpen("a", "c"), {}, true, &keys).ok());
  CHECK(keys == Keys{"a", "b"});
  EndAll(db.lm, {&t1.owner, &t2.owner});
}

TEST_CASE("btree locks: the gap at the end of the index", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kSer);
  Keys keys;
  ScanRange to_end{ScanBound::Inclusive("b"), ScanBound::None()};
  REQUIRE(ScanKeys(db.tree(), to_end, t1.ctx(), true, &keys).ok());
  REQUIRE(keys == Keys{"c"});
  CHECK(t1.held(kEnd) == LockMode::kS);

  FiberCall insert(rt.get(), 0, [&] { return db.tree().Insert("d", "v-d", t2.ctx()); });
  REQUIRE(db.Waiting(kEnd));
  REQUIRE(OnFiber(rt.get(), 0, [&] { return ExpectAbsent(db.tree(), "z", t1.ctx()); }).ok());
  REQUIRE(db.tree().Insert("0", "v-0", t3.ctx()).ok());  // before a: not in T1's gaps
  CHECK_FALSE(insert.finished());

  db.lm.ReleaseAll(&t1.owner);
  REQUIRE(insert.Join().ok());
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner});
  REQUIRE(ScanKeys(db.tree(), {}, {}, true, &keys).ok());
  CHECK(keys == Keys{"0", "a", "c", "d"});
}

TEST_CASE("btree locks: an empty tree is one gap", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({});
  Keys keys;
  SECTION("serializable: the scan of nothing blocks every insert") {
    TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer);
    REQUIRE(ScanKeys(db.tree(), {}, t1.ctx(), true, &keys).ok());
    REQUIRE(keys.empty());
    CHECK(t1.held(kEnd) == LockMode::kS);
    FiberCall insert(rt.get(), 0, [&] { return db.tree().Insert("k", "v-k", t2.ctx()); });
    REQUIRE(db.Waiting(kEnd));
    REQUIRE(OnFiber(rt.get(), 0, [&] { return ExpectAbsent(db.tree(), "k", t1.ctx()); }).ok());
    CHECK_FALSE(insert.finished());
    db.lm.ReleaseAll(&t1.owner);
    REQUIRE(insert.Join().ok());
    EndAll(db.lm, {&t1.owner, &t2.owner});
  }
  SECTION("read committed: the insert proceeds at once") {
    TestTxn t1(&db.lm, 1, kRc), t2(&db.lm, 2, kSer);
    REQUIRE(ScanKeys(db.tree(), {}, t1.ctx(), true, &keys).ok());
    REQUIRE(keys.empty());
    CHECK(t1.held(kEnd) == LockMode::kNone);
    REQUIRE(db.tree().Insert("k", "v-k", t2.ctx()).ok());
    EndAll(db.lm, {&t1.owner, &t2.owner});
  }
}

TEST_CASE("btree locks: a backward scan protects its range", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c", "e"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kSer);
  ScanRange closed{ScanBound::Inclusive("b"), ScanBound::Inclusive("d")};
  Keys keys;
  REQUIRE(ScanKeys(db.tree(), closed, t1.ctx(), false, &keys).ok());
  REQUIRE(keys == Keys{"c"});
  CHECK(t1.held(KeyId("e")) == LockMode::kS);  // taken first, at the upper end
  CHECK(t1.held(KeyId("c")) == LockMode::kS);

  FiberCall insert(rt.get(), 0, [&] { return db.tree().Insert("d", "v-d", t2.ctx()); });
  REQUIRE(db.Waiting(KeyId("e")));
  Keys again;
  REQUIRE(OnFiber(rt.get(), 0, [&] {
            return ScanKeys(db.tree(), closed, t1.ctx(), false, &again);
          }).ok());
  CHECK(again == Keys{"c"});
  REQUIRE(db.tree().Insert("f", "v-f", t3.ctx()).ok());  // after e: outside every locked gap
  CHECK_FALSE(insert.finished());

  db.lm.ReleaseAll(&t1.owner);
  REQUIRE(insert.Join().ok());
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner});
}

// ---- read committed -----------------------------------------------------------------------------

TEST_CASE("btree locks: read committed allows phantoms but reads no uncommitted insert",
          "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c", "e"});
  TestTxn t1(&db.lm, 1, kRc), t2(&db.lm, 2, kSer);
  Keys keys;
  REQUIRE(ScanKeys(db.tree(), HalfOpen("a", "c"), t1.ctx(), true, &keys).ok());
  REQUIRE(keys == Keys{"a"});
  CHECK(t1.held(KeyId("a")) == LockMode::kNone);
  CHECK(t1.held(KeyId("c")) == LockMode::kNone);
  REQUIRE(db.tree().Insert("b", "v-b", t2.ctx()).ok());  // at once: the phantom is allowed

  // T2 has not committed: the re-scan waits for b rather than read it.
  Keys again;
  FiberCall rescan(rt.get(), 0,
                   [&] { return ScanKeys(db.tree(), HalfOpen("a", "c"), t1.ctx(), true, &again); });
  REQUIRE(db.Waiting(KeyId("b")));
  CHECK_FALSE(rescan.finished());
  db.lm.ReleaseAll(&t2.owner);  // T2 commits
  REQUIRE(rescan.Join().ok());
  CHECK(again == Keys{"a", "b"});
  CHECK(t1.held(KeyId("a")) == LockMode::kNone);  // the pinned read lock went at the restart
  CHECK(t1.held(KeyId("b")) == LockMode::kNone);
  EndAll(db.lm, {&t1.owner, &t2.owner});
}

TEST_CASE("btree locks: a read waits for an uncommitted delete of its key, at either level",
          "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "b", "c"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kRc), t4(&db.lm, 4, kSer);
  REQUIRE(db.tree().Delete("b", t2.ctx()).ok());
  CHECK(t2.held(KeyId("b")) == LockMode::kXK);
  CHECK(t2.held(KeyId("c")) == LockMode::kX);  // the delete's next key, to commit

  Keys keys;
  std::string value;
  FiberCall scan(rt.get(), 0,
                 [&] { return ScanKeys(db.tree(), HalfOpen("a", "c"), t1.ctx(), true, &keys); });
  REQUIRE(db.Waiting(KeyId("c")));
  FiberCall lookup(rt.get(), 0, [&] { return db.tree().Lookup("b", &value, t3.ctx()); });
  REQUIRE(db.Waiting(KeyId("c"), 2));
  // A reader of a shares the leaf and the key with the waiting scan.
  REQUIRE(OnFiber(rt.get(), 0, [&] {
            std::string v;
            return db.tree().Lookup("a", &v, t4.ctx());
          }).ok());
  CHECK_FALSE(scan.finished());
  CHECK_FALSE(lookup.finished());

  SECTION("the delete commits: b is gone for both") {
    db.lm.ReleaseAll(&t2.owner);
    REQUIRE(scan.Join().ok());
    CHECK(keys == Keys{"a"});
    CHECK(lookup.Join().IsNotFound());
  }
  SECTION("the delete rolls back: both see b") {
    // What a rollback does: restore b under the transaction's locks, then release them.
    REQUIRE(db.tree().Insert("b", "v-b").ok());
    db.lm.ReleaseAll(&t2.owner);
    REQUIRE(scan.Join().ok());
    CHECK(keys == Keys{"a", "b"});
    REQUIRE(lookup.Join().ok());
    CHECK(value == "v-b");
  }
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner, &t4.owner});
}

// ---- deletes and the next key -------------------------------------------------------------------

TEST_CASE("btree locks: deletes wait for readers of the gaps they widen", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c", "e"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer);
  std::string value;
  SECTION("the key that ends a gap read empty") {
    REQUIRE(db.tree().Lookup("b", &value, t1.ctx()).IsNotFound());  // S on c
    FiberCall del(rt.get(), 0, [&] { return db.tree().Delete("c", t2.ctx()); });
    REQUIRE(db.Waiting(KeyId("c")));
    REQUIRE(OnFiber(rt.get(), 0, [&] { return ExpectAbsent(db.tree(), "b", t1.ctx()); }).ok());
    CHECK_FALSE(del.finished());
    db.lm.ReleaseAll(&t1.owner);
    REQUIRE(del.Join().ok());
  }
  SECTION("the key before a gap read empty: the delete's next-key lock") {
    REQUIRE(db.tree().Lookup("d", &value, t1.ctx()).IsNotFound());  // S on e
    FiberCall del(rt.get(), 0, [&] { return db.tree().Delete("c", t2.ctx()); });
    REQUIRE(db.Waiting(KeyId("e")));
    REQUIRE(OnFiber(rt.get(), 0, [&] {
              std::string v;
              SM_TRY(db.tree().Lookup("a", &v, t1.ctx()));
              return db.tree().Lookup("e", &v, t1.ctx());
            }).ok());
    CHECK_FALSE(del.finished());
    db.lm.ReleaseAll(&t1.owner);
    REQUIRE(del.Join().ok());
    CHECK(t2.held(KeyId("c")) == LockMode::kXK);
    CHECK(t2.held(KeyId("e")) == LockMode::kX);
  }
  EndAll(db.lm, {&t1.owner, &t2.owner});
  REQUIRE(db.tree().Lookup("c", &value).IsNotFound());
}

// ---- conflicts, sharing, deadlocks --------------------------------------------------------------

TEST_CASE("btree locks: writers of one key conflict, readers queue behind them", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kSer);
  REQUIRE(db.tree().Update("a", "t1", t1.ctx()).ok());
  FiberCall update(rt.get(), 0, [&] { return db.tree().Update("a", "t2", t2.ctx()); });
  REQUIRE(db.Waiting(KeyId("a")));
  std::string value;
  FiberCall read(rt.get(), 0, [&] { return db.tree().Lookup("a", &value, t3.ctx()); });
  REQUIRE(db.Waiting(KeyId("a"), 2));  // no barging past the waiting writer
  REQUIRE(OnFiber(rt.get(), 0, [&] { return db.tree().Upsert("c", "t1", t1.ctx()); }).ok());
  CHECK_FALSE(update.finished());
  CHECK_FALSE(read.finished());

  db.lm.ReleaseAll(&t1.owner);
  REQUIRE(update.Join().ok());
  REQUIRE(db.Waiting(KeyId("a")));  // the reader now waits for T2
  CHECK_FALSE(read.finished());
  db.lm.ReleaseAll(&t2.owner);
  REQUIRE(read.Join().ok());
  CHECK(value == "t2");
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner});
}

TEST_CASE("btree locks: readers share keys and gaps, a writer waits for all of them",
          "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kSer), rc(&db.lm, 4, kRc);
  std::string value;
  Keys keys;
  for (TestTxn* t : {&t1, &t2}) {
    REQUIRE(db.tree().Lookup("a", &value, t->ctx()).ok());
    REQUIRE(db.tree().Lookup("b", &value, t->ctx()).IsNotFound());
    REQUIRE(ScanKeys(db.tree(), {}, t->ctx(), true, &keys).ok());
    REQUIRE(keys == Keys{"a", "c"});
    REQUIRE(ScanKeys(db.tree(), {}, t->ctx(), false, &keys).ok());
    CHECK(t->owner.stats().waits == 0);
  }
  // A read-committed reader keeps nothing: writers pass it.
  REQUIRE(db.tree().Lookup("c", &value, rc.ctx()).ok());
  FiberCall update(rt.get(), 0, [&] { return db.tree().Update("a", "t3", t3.ctx()); });
  REQUIRE(db.Waiting(KeyId("a")));
  db.lm.ReleaseAll(&t1.owner);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(update.finished());  // T2 still holds S on a
  db.lm.ReleaseAll(&t2.owner);
  REQUIRE(update.Join().ok());
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner, &rc.owner});
}

namespace {

// Two calls that wait for each other: exactly one returns Deadlock (retryable); after its
// transaction releases its locks (aborts), the other returns OK.
void RequireOneVictim(LockManager& lm, FiberCall& call1, LockOwner& owner1, FiberCall& call2,
                      LockOwner& owner2) {
  REQUIRE(Eventually([&] { return call1.finished() || call2.finished(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(call1.finished() != call2.finished());
  FiberCall& victim = call1.finished() ? call1 : call2;
  FiberCall& survivor = call1.finished() ? call2 : call1;
  LockOwner& victim_owner = call1.finished() ? owner1 : owner2;
  Status s = victim.Join();
  INFO(s.ToString());
  REQUIRE(s.IsDeadlock());
  REQUIRE(s.IsRetryable());
  CHECK(victim_owner.txn_id() == TxnId(2));  // the younger transaction
  lm.ReleaseAll(&victim_owner);
  REQUIRE(survivor.Join().ok());
}

}  // namespace

TEST_CASE("btree locks: a deadlock is reported to exactly one transaction", "[unit][locks]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "b", "c", "e"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer);
  SECTION("two writers, two keys") {
    REQUIRE(db.tree().Update("a", "t1", t1.ctx()).ok());
    REQUIRE(db.tree().Update("c", "t2", t2.ctx()).ok());
    FiberCall call1(rt.get(), 0, [&] { return db.tree().Update("c", "t1", t1.ctx()); });
    REQUIRE(db.Waiting(KeyId("c")));
    FiberCall call2(rt.get(), 1, [&] { return db.tree().Update("a", "t2", t2.ctx()); });
    RequireOneVictim(db.lm, call1, t1.owner, call2, t2.owner);
    std::string value;
    REQUIRE(db.tree().Lookup("c", &value).ok());
    CHECK(value == "t1");
  }
  SECTION("two inserters, each into the gap the other read") {
    std::string value;
    REQUIRE(db.tree().Lookup("bb", &value, t1.ctx()).IsNotFound());  // S on c
    REQUIRE(db.tree().Lookup("d", &value, t2.ctx()).IsNotFound());   // S on e
    FiberCall call1(rt.get(), 0, [&] { return db.tree().Insert("d", "t1", t1.ctx()); });
    REQUIRE(db.Waiting(KeyId("e")));
    FiberCall call2(rt.get(), 1, [&] { return db.tree().Insert("bb", "t2", t2.ctx()); });
    RequireOneVictim(db.lm, call1, t1.owner, call2, t2.owner);
    REQUIRE(db.tree().Lookup("d", &value).ok());
    CHECK(value == "t1");
  }
  EndAll(db.lm, {&t1.owner, &t2.owner});
}

// Regression test: BTree::Write took an insert's X on the key (kWrite) before the descent, and
// the instant IX on the next key (kInsertNext) only at the leaf, where the protocol of
// lock_manager.h checks the gap first. A reader of the gap that then inserted the same key
// deadlocked with an inserter that waited for the gap while holding the key, and the inserter
// was the victim. With the protocol's order the inserter waits without holding the key, the
// reader's insert converts its S on the next key to SIX (no other holder) and takes the key,
// and the inserter later finds a duplicate, which it reads (S), not writes.
TEST_CASE("btree locks: an insert holding its key while it waits for the gap deadlocks",
          "[unit][locks][locks_insert_order]") {
  auto rt = MakeRuntime(2);
  Db db({"a", "c"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer);
  std::string value;
  REQUIRE(db.tree().Lookup("b", &value, t1.ctx()).IsNotFound());  // S on c
  FiberCall insert2(rt.get(), 0, [&] { return db.tree().Insert("b", "t2", t2.ctx()); });
  REQUIRE(db.Waiting(KeyId("c")));
  CHECK(t2.held(KeyId("b")) == LockMode::kNone);  // the gap first: T2 waits holding nothing
  FiberCall insert1(rt.get(), 1, [&] { return db.tree().Insert("b", "t1", t1.ctx()); });
  REQUIRE(Eventually([&] { return insert1.finished() || insert2.finished(); }));
  // The bug: T1 waits for T2's X on b, T2 for T1's S on c, and T2 is the deadlock victim.
  CHECK_FALSE(insert2.finished());
  if (insert2.finished()) db.lm.ReleaseAll(&t2.owner);  // T2 aborts: T1 goes on
  Status s1 = insert1.Join();
  INFO(s1.ToString());
  CHECK(s1.ok());
  CHECK(t1.held(KeyId("b")) == LockMode::kXK);
  CHECK(t1.held(KeyId("c")) == LockMode::kSIX);  // its S, and the instant IX the manager keeps
  CHECK_FALSE(insert2.finished());               // T2 still waits for the gap
  db.lm.ReleaseAll(&t1.owner);
  Status s2 = insert2.Join();
  INFO(s2.ToString());
  CHECK(s2.IsDuplicate());
  CHECK(t2.held(KeyId("b")) == LockMode::kS);     // a duplicate is read, not written
  CHECK(t2.held(KeyId("c")) == LockMode::kNone);  // the restart released the pin
  CHECK_FALSE(t2.locks.TEST_pinned().valid());
  REQUIRE(db.tree().Lookup("b", &value).ok());
  CHECK(value == "t1");
  EndAll(db.lm, {&t1.owner, &t2.owner});
}

TEST_CASE("btree locks: an insert before a key another transaction writes does not wait for it",
          "[unit][locks]") {
  auto rt = MakeRuntime(1);
  Db db({"a", "c", "e"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, kSer), t3(&db.lm, 3, kSer);
  // T1 updates c and inserts d, uncommitted: XK on both (the records, not the gaps).
  REQUIRE(db.tree().Update("c", "t1", t1.ctx()).ok());
  REQUIRE(db.tree().Insert("d", "t1", t1.ctx()).ok());
  // T2 inserts b (next key c) and cc (next key d) at once.
  FiberCall inserts(rt.get(), 0, [&] {
    SM_TRY(db.tree().Insert("b", "t2", t2.ctx()));
    return db.tree().Insert("cc", "t2", t2.ctx());
  });
  CHECK(Eventually([&] { return inserts.finished(); }));
  // But T2 waits to read c, and T3 to insert into a gap T1's delete closed.
  REQUIRE(db.tree().Delete("e", t1.ctx()).ok());  // X on the end of the table
  FiberCall read(rt.get(), 0, [&] {
    std::string value;
    return db.tree().Lookup("c", &value, t2.ctx());
  });
  REQUIRE(db.Waiting(KeyId("c")));
  FiberCall insert_f(rt.get(), 0, [&] { return db.tree().Insert("f", "t3", t3.ctx()); });
  REQUIRE(db.Waiting(LockId::TableEnd(kTable)));
  db.lm.ReleaseAll(&t1.owner);
  REQUIRE(inserts.Join().ok());
  REQUIRE(read.Join().ok());
  REQUIRE(insert_f.Join().ok());
  EndAll(db.lm, {&t1.owner, &t2.owner, &t3.owner});
}

TEST_CASE("btree locks: an insert of a key another transaction is inserting waits for its outcome",
          "[unit][locks]") {
  const Isolation isolation = GENERATE(kSer, kRc);  // of the second inserter
  auto rt = MakeRuntime(2);
  Db db({"a", "c"});
  TestTxn t1(&db.lm, 1, kSer), t2(&db.lm, 2, isolation);
  REQUIRE(db.tree().Insert("b", "t1", t1.ctx()).ok());  // not committed yet
  FiberCall insert2(rt.get(), 0, [&] { return db.tree().Insert("b", "t2", t2.ctx()); });
  REQUIRE(db.Waiting(KeyId("b")));  // the duplicate must be read, and T1 holds X on it
  std::string value;
  SECTION("the first insert commits: Duplicate") {
    db.lm.ReleaseAll(&t1.owner);
    REQUIRE(insert2.Join().IsDuplicate());
    // Serializable: S to commit; read committed: instant, so nothing stays.
    CHECK(t2.held(KeyId("b")) == (isolation == kSer ? LockMode::kS : LockMode::kNone));
    REQUIRE(db.tree().Lookup("b", &value).ok());
    CHECK(value == "t1");
  }
  SECTION("the first insert rolls back: the restart finds the key absent and inserts") {
    REQUIRE(db.tree().Delete("b").ok());  // the rollback, under T1's locks
    db.lm.ReleaseAll(&t1.owner);
    REQUIRE(insert2.Join().ok());
    // Serializable: the S its wait for the duplicate took stays, and S + XK is X.
    CHECK(t2.held(KeyId("b")) == (isolation == kSer ? LockMode::kX : LockMode::kXK));
    REQUIRE(db.tree().Lookup("b", &value).ok());
    CHECK(value == "t2");
  }
  CHECK_FALSE(t2.locks.TEST_pinned().valid());
  EndAll(db.lm, {&t1.owner, &t2.owner});
}

// ---- random -------------------------------------------------------------------------------------

namespace {

// Serializable and read-committed transactions on fibers over a small key space. Every value
// names the attempt that wrote it. Checks, while running: a read never returns a value of an
// attempt that has not committed (other than the reader's own); a serializable attempt's reads
// agree with everything it read or wrote before (repeatable reads, no phantoms: a key seen
// absent stays absent). At the end: the tree equals the committed writes. Deadlock victims
// undo their writes (without locks, as a rollback does, while still holding theirs), release
// everything and retry under the same TxnId.
class RandomHarness {
 public:
  struct Config {
    unsigned workers;
    int fibers_per_worker;
    int txns_per_fiber;
    int keys;
  };

  RandomHarness(const Config& config, uint64_t seed)
      : config_(config), seed_(seed), env_(256), committed_(new std::atomic<bool>[kMaxAttempts]) {
    for (int k = 0; k < config_.keys; k += 2) {
      std::string value = Value(0);
      REQUIRE(env_.tree->Insert(Key(k), value).ok());
      model_[Key(k)] = value;
    }
    for (size_t i = 0; i < kMaxAttempts; ++i) committed_[i] = false;
    committed_[0] = true;  // the initial load
  }

  void Run() {
    auto rt = MakeRuntime(config_.workers);
    const int fibers = static_cast<int>(config_.workers) * config_.fibers_per_worker;
    remaining_ = fibers;
    for (int f = 0; f < fibers; ++f) {
      rt->Spawn([this, f] { FiberMain(f); }, f % static_cast<int>(config_.workers));
    }
    if (!all_done_.WaitUntil(std::chrono::steady_clock::now() + std::chrono::seconds(120))) {
      gave_up_ = true;
      std::fprintf(stderr, "watchdog expired; lock table:\n%s", lm_.TEST_Dump().c_str());
      all_done_.Wait();
    }
    rt->Shutdown();
  }

  void Verify() {
    INFO("seed " << seed_);
    std::printf("  %llu commits, %llu deadlock victims, %llu lock waits in the tree\n",
                static_cast<unsigned long long>(commits_.load()),
                static_cast<unsigned long long>(victims_.load()),
                static_cast<unsigned long long>(env_.tree->counters().lock_waits));
    REQUIRE_FALSE(gave_up_.load());
    CHECK(errors_.load() == 0);
    CHECK(dirty_reads_.load() == 0);
    CHECK(inconsistent_reads_.load() == 0);
    CHECK(commits_.load() ==
          uint64_t(config_.workers) * config_.fibers_per_worker * config_.txns_per_fiber);
    CHECK(lm_.stats().timeouts == 0);
    CHECK(lm_.TEST_LockHeadCount() == 0);
    CHECK(lm_.CheckInvariants());
    sm::test::RequireSameAsModel(*env_.tree, model_);
  }

 private:
  static constexpr size_t kMaxAttempts = 1 << 16;
  // What an attempt knows of a key: unknown, absent, or present with a value.
  using Known = std::optional<std::optional<std::string>>;

  struct Attempt {
    uint64_t id = 0;
    Isolation isolation = kSer;
    std::vector<Known> known;                                        // by key number
    std::vector<std::pair<int, std::optional<std::string>>> undo;    // before-images
    std::vector<std::pair<int, std::optional<std::string>>> writes;  // final states
  };

  static Known Absent() { return Known(std::in_place, std::nullopt); }
  static Known Present(std::string value) { return Known(std::in_place, std::move(value)); }

  static std::string Key(int k) { return sm::test::Key64(static_cast<uint64_t>(k)); }
  // ~500 bytes, so that the keys span several leaves.
  static std::string Value(uint64_t attempt) {
    std::string v = "w" + std::to_string(attempt) + ":";
    v.resize(500, 'x');
    return v;
  }
  static uint64_t WriterOf(std::string_view value) {
    return std::stoull(std::string(value.substr(1, value.find(':') - 1)));
  }

  void FiberMain(int fiber_index) {
    std::mt19937_64 rng(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(fiber_index));
    LockOwner owner(&lm_, TxnId::Invalid());
    TxnKeyLocks locks(&lm_, &owner, kSer, kTable);
    for (int t = 0; t < config_.txns_per_fiber && !gave_up_.load(); ++t) {
      const Isolation isolation = rng() % 4 == 0 ? kRc : kSer;
      owner.Reset(TxnId(next_txn_id_.fetch_add(1)));
      while (!gave_up_.load()) {
        locks.Reset(isolation);
        Attempt attempt;
        attempt.id = next_attempt_.fetch_add(1);
        attempt.isolation = isolation;
        attempt.known.assign(config_.keys, std::nullopt);
        if (attempt.id >= kMaxAttempts) {
          errors_.fetch_add(1);
          gave_up_ = true;
          break;
        }
        Status s = Body(&attempt, OpContext{nullptr, &locks}, rng);
        if (s.ok()) {
          Commit(attempt, &owner);
          break;
        }
        Abort(attempt, &owner);
        if (s.IsDeadlock()) {
          victims_.fetch_add(1);
        } else {
          errors_.fetch_add(1);
          std::fprintf(stderr, "unexpected: %s\n", s.ToString().c_str());
          break;
        }
      }
    }
    if (remaining_.fetch_sub(1) == 1) all_done_.Set();
  }

  void Commit(const Attempt& attempt, LockOwner* owner) {
    {
      std::lock_guard<std::mutex> guard(model_mutex_);
      for (const auto& [k, state] : attempt.writes) {
        if (state) {
          model_[Key(k)] = *state;
        } else {
          model_.erase(Key(k));
        }
      }
    }
    // The commit point, before the locks go: whoever reads these values after acquiring a
    // lock this release grants sees the flag (the lock table's latches order the two).
    committed_[attempt.id].store(true, std::memory_order_release);
    commits_.fetch_add(1);
    lm_.ReleaseAll(owner);
  }

  // Undoes the attempt's writes newest first, under its locks and without new ones.
  void Abort(const Attempt& attempt, LockOwner* owner) {
    for (auto it = attempt.undo.rbegin(); it != attempt.undo.rend(); ++it) {
      Status s = it->second ? env_.tree->Upsert(Key(it->first), *it->second)
                            : env_.tree->Delete(Key(it->first));
      if (!s.ok()) errors_.fetch_add(1);
    }
    lm_.ReleaseAll(owner);
  }

  Status Body(Attempt* a, OpContext ctx, std::mt19937_64& rng) {
    const int ops = 2 + static_cast<int>(rng() % 6);
    for (int i = 0; i < ops; ++i) {
      const int k = static_cast<int>(rng() % config_.keys);
      switch (rng() % 6) {
        case 0:
        case 1: {
          int hi = std::min(config_.keys, k + 1 + static_cast<int>(rng() % 12));
          SM_TRY(Scan(a, ctx, k, hi, rng() % 2 == 0));
          break;
        }
        case 2: {
          std::string value;
          Status s = env_.tree->Lookup(Key(k), &value, ctx);
          if (!s.ok() && !s.IsNotFound()) return s;
          Observe(a, k, s.ok() ? Present(value) : Absent());
          break;
        }
        case 3:
          SM_TRY(Insert(a, ctx, k));
          break;
        default:
          SM_TRY(UpdateOrDelete(a, ctx, k, rng() % 2 == 0));
          break;
      }
      if (rng() % 2 == 0) threads::Worker::Current()->Yield();
    }
    return Status::OK();
  }

  Status Scan(Attempt* a, OpContext ctx, int lo, int hi, bool forward) {
    ScanRange range = HalfOpen(Key(lo), Key(hi));
    Cursor cursor(env_.tree.get(), range, ctx);
    std::vector<Known> seen(hi - lo, Absent());  // until the scan returns the key
    SM_TRY(forward ? cursor.SeekToFirst() : cursor.SeekToLast());
    while (cursor.Valid()) {
      const std::string_view key = cursor.key();
      int k = 0;
      for (char c : key) k = k * 256 + static_cast<uint8_t>(c);
      if (k < lo || k >= hi) {
        inconsistent_reads_.fetch_add(1);
      } else {
        seen[k - lo] = Present(std::string(cursor.value()));
      }
      SM_TRY(forward ? cursor.Next() : cursor.Prev());
    }
    for (int k = lo; k < hi; ++k) Observe(a, k, seen[k - lo]);
    return Status::OK();
  }

  // A read of key k gave `state`: check it against the attempt's knowledge and record it.
  void Observe(Attempt* a, int k, const Known& state) {
    if (*state) {
      uint64_t writer = WriterOf(**state);
      if (writer != a->id && !committed_[writer].load(std::memory_order_acquire)) {
        dirty_reads_.fetch_add(1);
        std::fprintf(stderr, "attempt %llu read key %d of uncommitted attempt %llu\n",
                     static_cast<unsigned long long>(a->id), k,
                     static_cast<unsigned long long>(writer));
      }
    }
    if (a->isolation == kSer && a->known[k] && *a->known[k] != *state) {
      inconsistent_reads_.fetch_add(1);
      std::fprintf(stderr, "attempt %llu: key %d changed (%s) under serializable\n",
                   static_cast<unsigned long long>(a->id), k,
                   *state ? "now present" : "now absent");
    }
    a->known[k] = state;
  }

  void Wrote(Attempt* a, int k, const std::optional<std::string>& before,
             const std::optional<std::string>& after) {
    a->undo.emplace_back(k, before);
    a->writes.emplace_back(k, after);
    a->known[k] = after;
  }

  Status Insert(Attempt* a, OpContext ctx, int k) {
    std::string value = Value(a->id);
    Status s = env_.tree->Insert(Key(k), value, ctx);
    if (s.IsDuplicate()) {
      // The key is present (and read-locked by us now): what we knew must agree.
      if (a->isolation == kSer && a->known[k] && !*a->known[k]) inconsistent_reads_.fetch_add(1);
      return Status::OK();
    }
    SM_TRY(std::move(s));
    if (a->isolation == kSer && a->known[k] && *a->known[k]) inconsistent_reads_.fetch_add(1);
    Wrote(a, k, std::nullopt, value);
    return Status::OK();
  }

  // Locks the key for writing, reads it (the before-image, exact under the X lock at either
  // level), then updates or deletes it if present.
  Status UpdateOrDelete(Attempt* a, OpContext ctx, int k, bool update) {
    SM_TRY(ctx.locks->LockKey(KeyLockRequest{Key(k), false, KeyLockPurpose::kWrite}));
    std::string before;
    Status s = env_.tree->Lookup(Key(k), &before, ctx);
    if (s.IsNotFound()) {
      Observe(a, k, Absent());
      return Status::OK();
    }
    SM_TRY(std::move(s));
    Observe(a, k, Present(before));
    if (update) {
      std::string value = Value(a->id);
      SM_TRY(env_.tree->Update(Key(k), value, ctx));
      Wrote(a, k, before, value);
    } else {
      SM_TRY(env_.tree->Delete(Key(k), ctx));
      Wrote(a, k, before, std::nullopt);
    }
    return Status::OK();
  }

  const Config config_;
  const uint64_t seed_;
  TreeEnv env_;
  LockManager lm_;
  std::mutex model_mutex_;
  sm::test::Model model_;  // the committed state; GUARDED_BY(model_mutex_) while running
  std::unique_ptr<std::atomic<bool>[]> committed_;  // by attempt id
  std::atomic<uint64_t> next_txn_id_{1}, next_attempt_{1};
  std::atomic<uint64_t> commits_{0}, victims_{0}, errors_{0}, dirty_reads_{0},
      inconsistent_reads_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> gave_up_{false};
  threads::Event all_done_;
};

}  // namespace

TEST_CASE("btree locks: random transactions on two workers", "[random][locks]") {
  const uint64_t seed = sm::test::TestSeed("btree locks random, 2 workers");
  RandomHarness harness(RandomHarness::Config{2, 6, 30, 48}, seed);
  harness.Run();
  harness.Verify();
}

TEST_CASE("btree locks: random transactions on one worker (replayable)", "[random][locks]") {
  const uint64_t seed = sm::test::TestSeed("btree locks random, 1 worker");
  RandomHarness harness(RandomHarness::Config{1, 8, 30, 48}, seed);
  harness.Run();
  harness.Verify();
}
