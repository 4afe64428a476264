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

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "threads/sync.h"

namespace sm {
namespace {

Options TestOptions(io::FileSystem* fs) { return test::SmallDbOptions(fs); }

std::unique_ptr<Database> MustOpen(const Options& o) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(o, &db);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return db;
}

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
  threads::WaitGroup done;
  done.Add(2);
  for (int worker = 0; worker < 2; ++worker) {
    db->Spawn(
        [&, worker] {
          fiber_results[worker] = run("fiber" + std::to_string(worker));
          done.Done();
        },
        worker);
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

}  // namespace
}  // namespace sm
