// Transactions through the public API (sm/sm.h, Transaction; sm/txn/txn_manager.h): abort and
// a dropped transaction undo their changes, commit and abort release every lock, a finished
// transaction object begins again in place and starts clean, and the transaction statistics
// count every worker and thread.
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"

namespace sm {
namespace {

Options TestOptions(io::FileSystem* fs) { return test::SmallDbOptions(fs); }

using test::MustOpen;

Table* MustCreateTable(Database* db, const std::string& name) {
  Table* table = nullptr;
  REQUIRE(db->CreateTable(name, &table).ok());
  return table;
}

// A database with one table, "t", whose lock waits time out after `lock_wait`.
std::unique_ptr<Database> OpenWithTable(io::FileSystem* fs, std::chrono::milliseconds lock_wait,
                                        Table** t) {
  Options o = TestOptions(fs);
  o.lock_wait_timeout = lock_wait;
  std::unique_ptr<Database> db = MustOpen(o);
  *t = MustCreateTable(db.get(), "t");
  return db;
}

// Runs work(txn) in a transaction of its own and commits it.
template <typename Work>
void RunCommitted(Database* db, Work work) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  work(txn.get());
  REQUIRE(txn->Commit().ok());
}

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%08d", i);
  return buf;
}

// The implementations behind the public handles, for the checks that look past the API.
api::TransactionImpl* Internals(Transaction* txn) {
  return static_cast<api::TransactionImpl*>(txn);
}
lock::LockOwner* LockOwnerOf(Transaction* txn) { return Internals(txn)->txn()->lock_owner(); }

TEST_CASE("abort and a dropped transaction undo their changes", "[unit][txn]") {
  io::FaultInjectionFileSystem fs(2);
  auto db = MustOpen(TestOptions(&fs));
  Table* t = MustCreateTable(db.get(), "t");
  RunCommitted(db.get(), [&](Transaction* setup) { REQUIRE(t->Insert(setup, "a", "1").ok()); });
  {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int i = 0; i < 500; ++i) REQUIRE(t->Insert(txn.get(), Key(i), std::string(100, 'x')).ok());
    REQUIRE(t->Update(txn.get(), "a", "2").ok());
    REQUIRE(txn->Abort().ok());
    CHECK_FALSE(txn->active());
    CHECK(t->Insert(txn.get(), "b", "x").IsTxnFinished());
  }
  {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Delete(txn.get(), "a").ok());
  }  // destroyed while active: rolled back
  RunCommitted(db.get(), [&](Transaction* check) {
    std::string value;
    REQUIRE(t->Get(check, "a", &value).ok());
    CHECK(value == "1");
    CHECK(t->Get(check, Key(7), &value).IsNotFound());
  });
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("commit and abort release every lock, a recycled transaction starts clean",
          "[unit][txn]") {
  io::FaultInjectionFileSystem fs(6);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(200), &t);
  for (bool commit : {true, false}) {
    INFO((commit ? "commit" : "abort"));
    std::unique_ptr<Transaction> a;
    REQUIRE(db->Begin(&a).ok());
    REQUIRE(t->Upsert(a.get(), "k", "v").ok());
    txn::Txn* raw = Internals(a.get())->txn();
    CHECK(raw->lock_owner()->lock_count() >= 3);  // database, table and key at least
    const uint64_t first_id = a->id();
    REQUIRE((commit ? a->Commit() : a->Abort()).ok());
    CHECK(raw->lock_owner()->lock_count() == 0);
    a.reset();  // hands the Txn back for reuse

    std::unique_ptr<Transaction> b;
    REQUIRE(db->Begin(&b).ok());
    CHECK(Internals(b.get())->txn() == raw);  // the same object, restarted
    CHECK(b->id() > first_id);
    CHECK(b->active());
    CHECK(LockOwnerOf(b.get())->lock_count() == 0);
    CHECK(Internals(b.get())->txn()->records_logged() == 0);
    // Nothing of `a` is still locked: another transaction writes k at once (a leftover X lock
    // would end in LockTimeout after 200 ms).
    std::unique_ptr<Transaction> c;
    REQUIRE(db->Begin(&c).ok());
    REQUIRE(t->Upsert(c.get(), "k", "w").ok());
    REQUIRE(c->Commit().ok());
    REQUIRE(b->Commit().ok());
  }
  REQUIRE(db->Close().ok());
}

TEST_CASE("statistics count the transactions of every worker and thread", "[unit][txn]") {
  io::FaultInjectionFileSystem fs(7);
  Options o = TestOptions(&fs);
  o.workers = 2;
  std::unique_ptr<Database> db = MustOpen(o);
  Table* t = MustCreateTable(db.get(), "t");
  const DatabaseStats before = db->stats();
  const txn::TxnStats txn_before = static_cast<api::DatabaseImpl*>(db.get())->txns()->stats();
  // Per caller: a write committed, a read committed (read-only), a write aborted, and a
  // transaction dropped while active (rolled back). Returns the first failure: Catch's
  // assertions may only be used on the test's own thread, so the fibers' results are checked
  // there after they end.
  auto run = [&](const std::string& who) -> Status {
    std::unique_ptr<Transaction> txn;
    SM_TRY(db->Begin(&txn));
    SM_TRY(t->Insert(txn.get(), who + "/kept", "v"));
    SM_TRY(txn->Commit());
    SM_TRY(db->Begin(&txn));
    std::string value;
    SM_TRY(t->Get(txn.get(), who + "/kept", &value));
    SM_TRY(txn->Commit());
    SM_TRY(db->Begin(&txn));
    SM_TRY(t->Insert(txn.get(), who + "/aborted", "v"));
    SM_TRY(txn->Abort());
    SM_TRY(db->Begin(&txn));
    return t->Insert(txn.get(), who + "/dropped", "v");
  };
  REQUIRE(run("thread").ok());
  std::array<Status, 2> fiber_results;
  WaitGroup done;
  for (int worker = 0; worker < 2; ++worker) {
    REQUIRE(db->Spawn(
                  [&, worker] { fiber_results[worker] = run("fiber" + std::to_string(worker)); },
                  worker, &done)
                .ok());
  }
  done.Wait();
  for (const Status& s : fiber_results) REQUIRE(s.ok());
  const DatabaseStats after = db->stats();
  CHECK(after.txn_begun - before.txn_begun == 3 * 4);
  CHECK(after.txn_committed - before.txn_committed == 3 * 2);
  CHECK(after.txn_aborted - before.txn_aborted == 3 * 2);
  CHECK(after.txn_failed == before.txn_failed);
  const txn::TxnStats txn_after = static_cast<api::DatabaseImpl*>(db.get())->txns()->stats();
  CHECK(txn_after.read_only_commits - txn_before.read_only_commits == 3);
  CHECK(txn_after.active == 0);
  REQUIRE(db->Close().ok());
}

TEST_CASE("Begin on a finished transaction begins it again in place", "[unit][txn]") {
  io::FaultInjectionFileSystem fs(16);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(200), &t);
  std::unique_ptr<Transaction> a;
  REQUIRE(db->Begin(&a).ok());
  for (int i = 0; i < 10; ++i) REQUIRE(t->Insert(a.get(), Key(i), "v").ok());
  REQUIRE(a->Commit().ok());

  Transaction* const object = a.get();
  for (Isolation isolation : {Isolation::kSerializable, Isolation::kReadCommitted,
                              Isolation::kSerializable}) {
    std::unique_ptr<Cursor> stale;
    REQUIRE(db->Begin(&a, Isolation::kSerializable).ok());
    REQUIRE(t->NewCursor(a.get(), ScanOptions{}, &stale).ok());
    const uint64_t id = a->id();
    REQUIRE(a->Commit().ok());

    REQUIRE(db->Begin(&a, isolation).ok());
    CHECK(a.get() == object);  // no new object
    CHECK(a->id() > id);
    CHECK(a->active());
    CHECK(a->isolation() == isolation);
    // A cursor of the transaction before refuses to go on under this one.
    CHECK(stale->Next().IsTxnFinished());
    // The key-lock hooks start clean: the new transaction locks what it touches, and
    // another transaction waits for (here: times out on) its write.
    REQUIRE(t->Update(a.get(), Key(3), "w").ok());
    std::unique_ptr<Transaction> other;
    REQUIRE(db->Begin(&other).ok());
    CHECK(t->Update(other.get(), Key(3), "x").IsRetryable());
    REQUIRE(other->Abort().ok());
    REQUIRE(a->Abort().ok());
  }
  // An active transaction in *txn is replaced, which aborts it.
  REQUIRE(db->Begin(&a).ok());
  REQUIRE(t->Update(a.get(), Key(4), "lost").ok());
  REQUIRE(db->Begin(&a).ok());
  std::string value;
  REQUIRE(t->Get(a.get(), Key(4), &value).ok());
  CHECK(value == "v");
  REQUIRE(a->Commit().ok());
  REQUIRE(db->Close().ok());
}

// What the engine leaves of a transaction it rolled back after `code` (Deadlock or
// LockTimeout): not active, every later call returns that error (Commit too, every time)
// but Abort, which returns OK, and none of the keys it wrote is as it wrote them.
void CheckRolledBack(Database* db, Table* t, Transaction* victim, Status::Code code,
                     const std::vector<std::string>& written) {
  CHECK_FALSE(victim->active());
  std::string value;
  Status again = t->Get(victim, written.front(), &value);
  CHECK(again.code() == code);
  CHECK(again.ToString().find("was rolled back") != std::string::npos);
  CHECK(t->Insert(victim, "new", "v").code() == code);
  std::unique_ptr<Cursor> cursor;
  CHECK(t->NewCursor(victim, ScanOptions::All(), &cursor).code() == code);
  CHECK(victim->Commit().code() == code);
  CHECK(victim->Commit(CommitMode::kDurable).code() == code);
  CHECK(victim->Abort().ok());
  CHECK(victim->Abort().ok());
  RunCommitted(db, [&](Transaction* check) {
    for (const std::string& key : written) {
      Status found = t->Get(check, key, &value);
      INFO(key << ": " << found.ToString());
      CHECK((found.IsNotFound() || value != "victim"));
    }
    CHECK(t->Get(check, "new", &value).IsNotFound());
  });
}

TEST_CASE("a deadlock victim is rolled back: it cannot commit, every later call fails",
          "[unit][txn]") {
  io::FaultInjectionFileSystem fs(18);
  Table* t = nullptr;
  // Long lock waits: the deadlock detector, not a timeout, ends the wait.
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::seconds(60), &t);
  RunCommitted(db.get(), [&](Transaction* load) {
    REQUIRE(t->Insert(load, Key(1), "1").ok());
    REQUIRE(t->Insert(load, Key(2), "2").ok());
  });
  const DatabaseStats before = db->stats();
  // The victim of a cycle is its youngest member (sm/lock/lock_manager.h).
  std::unique_ptr<Transaction> older, victim;
  REQUIRE(db->Begin(&older).ok());
  REQUIRE(db->Begin(&victim).ok());
  REQUIRE(t->Update(older.get(), Key(1), "older").ok());
  REQUIRE(t->Update(victim.get(), Key(2), "victim").ok());
  REQUIRE(t->Insert(victim.get(), Key(3), "victim").ok());
  std::unique_ptr<Cursor> cursor;  // made before the deadlock, refused after it
  REQUIRE(t->NewCursor(victim.get(), ScanOptions::Range(Key(2), Key(3)), &cursor).ok());
  // Each waits for the other, whichever asks first; the victim's rollback lets `older` on.
  Status older_wait;
  std::thread waiter([&] { older_wait = t->Update(older.get(), Key(2), "older"); });
  Status victim_wait = t->Update(victim.get(), Key(1), "victim");
  waiter.join();
  INFO(victim_wait.ToString());
  REQUIRE(victim_wait.IsDeadlock());
  REQUIRE(older_wait.ok());
  CHECK(cursor->Next().IsDeadlock());
  REQUIRE(older->Commit().ok());
  CheckRolledBack(db.get(), t, victim.get(), Status::Code::kDeadlock, {Key(2), Key(3)});
  RunCommitted(db.get(), [&](Transaction* check) {
    std::string value;
    REQUIRE(t->Get(check, Key(1), &value).ok());
    CHECK(value == "older");
    REQUIRE(t->Get(check, Key(2), &value).ok());
    CHECK(value == "older");
    CHECK(t->Get(check, Key(3), &value).IsNotFound());
  });
  const DatabaseStats after = db->stats();
  CHECK(after.deadlocks - before.deadlocks == 1);
  CHECK(after.txn_aborted - before.txn_aborted == 1);
  REQUIRE(db->Close().ok());
}

TEST_CASE("a transaction whose lock wait timed out is rolled back and can run again",
          "[unit][txn]") {
  io::FaultInjectionFileSystem fs(19);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(100), &t);
  RunCommitted(db.get(), [&](Transaction* load) { REQUIRE(t->Insert(load, Key(1), "1").ok()); });
  std::unique_ptr<Transaction> holder, victim;
  REQUIRE(db->Begin(&holder).ok());
  REQUIRE(t->Update(holder.get(), Key(1), "holder").ok());
  REQUIRE(db->Begin(&victim).ok());
  REQUIRE(t->Insert(victim.get(), Key(5), "victim").ok());
  REQUIRE(t->Upsert(victim.get(), Key(6), "victim").ok());
  Status timed_out = t->Update(victim.get(), Key(1), "victim");
  INFO(timed_out.ToString());
  REQUIRE(timed_out.IsLockTimeout());
  CheckRolledBack(db.get(), t, victim.get(), Status::Code::kLockTimeout, {Key(5), Key(6)});
  REQUIRE(holder->Commit().ok());
  // The same object runs the transaction again, from a clean start.
  REQUIRE(db->Begin(&victim).ok());
  REQUIRE(t->Insert(victim.get(), Key(5), "retried").ok());
  REQUIRE(t->Update(victim.get(), Key(1), "retried").ok());
  REQUIRE(victim->Commit().ok());
  CHECK(victim->Commit().IsTxnFinished());
  RunCommitted(db.get(), [&](Transaction* check) {
    std::string value;
    REQUIRE(t->Get(check, Key(5), &value).ok());
    CHECK(value == "retried");
    CHECK(t->Get(check, Key(6), &value).IsNotFound());
  });
  REQUIRE(db->Close().ok());
}

}  // namespace
}  // namespace sm
