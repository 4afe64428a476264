// The public API (sm/sm.h): tables, transactions, persistence, recovery through Open, and the
// errors misuse must produce.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/common/counted.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/test_util.h"
#include "threads/fiber.h"
#include "threads/sync.h"

namespace sm {
namespace {

Options TestOptions(io::FileSystem* fs) { return test::SmallDbOptions(fs); }

std::unique_ptr<Database> MustOpen(const Options& o, OpenReport* report = nullptr) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(o, &db, report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return db;
}

Table* MustCreateTable(Database* db, const std::string& name) {
  Table* table = nullptr;
  REQUIRE(db->CreateTable(name, &table).ok());
  return table;
}

Table* MustOpenTable(Database* db, const std::string& name) {
  Table* table = nullptr;
  REQUIRE(db->OpenTable(name, &table).ok());
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

// Runs work(txn) in a transaction of its own and commits it: the loads and checks that are
// not themselves under test.
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

const char* IsolationName(Isolation isolation) {
  return isolation == Isolation::kSerializable ? "serializable" : "read committed";
}

// The implementations behind the public handles, for the checks that look past the API.
api::DatabaseImpl* Internals(Database* db) { return static_cast<api::DatabaseImpl*>(db); }
api::TransactionImpl* Internals(Transaction* txn) {
  return static_cast<api::TransactionImpl*>(txn);
}
lock::LockOwner* LockOwnerOf(Transaction* txn) { return Internals(txn)->txn()->lock_owner(); }

// Verifies the trees of `db` and that no allocated page is left in no tree (which only Open's
// sweep would give back).
void VerifyNoPageInNoTree(Database* db) {
  std::string report;
  REQUIRE(Internals(db)->VerifyWithReport(&report).ok());
  INFO(report);
  CHECK(report.find(" 0 in none") != std::string::npos);
}

// Writes `junk` over the start of file `path` (its header) and syncs it, as a damaged disk
// would leave it. Not direct I/O: that wants aligned buffers.
void OverwriteStart(io::FileSystem* fs, const std::string& path,
                    const std::array<char, 512>& junk) {
  std::unique_ptr<io::File> file;
  io::OpenOptions open;
  open.direct = false;
  REQUIRE(fs->Open(path, open, &file).ok());
  REQUIRE(file->Write(0, junk.data(), junk.size()).ok());
  REQUIRE(file->Sync().ok());
}

TEST_CASE("a table survives close and reopen", "[unit][api]") {
  io::FaultInjectionFileSystem fs(1);
  OpenReport report;
  {
    auto db = MustOpen(TestOptions(&fs), &report);
    CHECK(report.created);
    Table* t = MustCreateTable(db.get(), "accounts");
    RunCommitted(db.get(), [&](Transaction* txn) {
      for (int i = 0; i < 2000; ++i) REQUIRE(t->Insert(txn, Key(i), "v" + Key(i)).ok());
    });
    REQUIRE(db->Verify().ok());
    REQUIRE(db->Close().ok());
  }
  auto db = MustOpen(TestOptions(&fs), &report);
  CHECK_FALSE(report.created);
  CHECK_FALSE(report.recovered);
  CHECK(report.tables == 1);
  Table* t = MustOpenTable(db.get(), "accounts");
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  REQUIRE(t->Get(txn.get(), Key(1234), &value).ok());
  CHECK(value == "v" + Key(1234));
  std::unique_ptr<Cursor> cursor;
  REQUIRE(t->NewCursor(txn.get(), ScanOptions::Range(Key(10), Key(20)), &cursor).ok());
  int n = 0;
  while (cursor->Valid()) {
    CHECK(cursor->key() == Key(10 + n++));
    REQUIRE(cursor->Next().ok());
  }
  CHECK(n == 10);
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("misuse returns errors", "[unit][api]") {
  io::FaultInjectionFileSystem fs(3);
  Options o = TestOptions(&fs);
  o.create_if_missing = false;
  std::unique_ptr<Database> none;
  CHECK(Database::Open(o, &none).IsNotFound());
  o.create_if_missing = true;
  o.path = "";
  CHECK(Database::Open(o, &none).code() == Status::Code::kInvalidArgument);

  auto db = MustOpen(TestOptions(&fs));
  Table* t = MustCreateTable(db.get(), "t");
  Table* again = nullptr;
  CHECK(db->CreateTable("t", &again).code() == Status::Code::kDuplicate);
  CHECK(db->CreateTable("", &again).code() == Status::Code::kInvalidArgument);
  CHECK(db->OpenTable("nope", &again).IsNotFound());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  CHECK(t->Insert(txn.get(), std::string(2000, 'k'), "v").code() ==
        Status::Code::kInvalidArgument);
  CHECK(t->Insert(txn.get(), std::string(2000, 'k'), std::string(5000, 'v')).code() ==
        Status::Code::kInvalidArgument);  // a large value does not make a long key fit
  CHECK(t->Insert(nullptr, "k", "v").code() == Status::Code::kInvalidArgument);
  REQUIRE(t->Insert(txn.get(), "k", "v").ok());
  CHECK(t->Insert(txn.get(), "k", "v").code() == Status::Code::kDuplicate);
  CHECK(t->Update(txn.get(), "missing", "v").IsNotFound());
  CHECK(db->Close().code() == Status::Code::kInvalidArgument);  // a transaction is active
  REQUIRE(txn->Commit().ok());
  CHECK(txn->Commit().IsTxnFinished());  // the code sm.h's error list gives
  CHECK(txn->Abort().IsTxnFinished());
  std::string got;
  CHECK(t->Get(txn.get(), "k", &got).IsTxnFinished());
  CHECK(t->Insert(txn.get(), "k2", "v").IsTxnFinished());
  REQUIRE(db->DropTable("t").ok());
  std::unique_ptr<Transaction> after;
  REQUIRE(db->Begin(&after).ok());
  std::string value;
  CHECK(t->Get(after.get(), "k", &value).IsNotFound());
  CHECK(db->DropTable("t").IsNotFound());
  REQUIRE(after->Commit().ok());
  REQUIRE(db->Close().ok());
  CHECK(db->Close().code() == Status::Code::kClosed);
}

TEST_CASE("the open report says what Open did, and only that", "[unit][api]") {
  io::FaultInjectionFileSystem fs(24);
  Options o = TestOptions(&fs);
  o.create_if_missing = false;
  OpenReport report;
  std::unique_ptr<Database> db;
  CHECK(Database::Open(o, &db, &report).IsNotFound());
  CHECK_FALSE(report.opened);
  CHECK(report.ToString() == "did not open the database");
  o.create_if_missing = true;
  db = MustOpen(o, &report);
  CHECK(report.opened);
  CHECK(report.ToString() == "created a new database, 0 tables");
  MustCreateTable(db.get(), "t");
  REQUIRE(db->Close().ok());
  db = MustOpen(o, &report);
  CHECK(report.ToString() == "opened an existing database, 1 table; clean (nothing to recover)");
  // A report of an earlier Open does not speak for a failed one.
  std::unique_ptr<Database> second;
  CHECK(Database::Open(o, &second, &report).code() == Status::Code::kBusy);
  CHECK(report.ToString() == "did not open the database");
  Table* t = MustOpenTable(db.get(), "t");
  RunCommitted(db.get(), [&](Transaction* txn) { REQUIRE(t->Insert(txn, "k", "v").ok()); });
  Internals(db.get())->TEST_Crash();
  db.reset();
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  db = MustOpen(o, &report);
  CHECK(report.recovered);
  const std::string text = report.ToString();
  INFO(text);
  CHECK(text.rfind("opened an existing database, 1 table; recovery: ", 0) == 0);
  CHECK(text.find("recovery:") == text.rfind("recovery:"));  // named once
  REQUIRE(db->Close().ok());
}

TEST_CASE("a database is open in one handle at a time", "[unit][api]") {
  io::FaultInjectionFileSystem fs(3);
  std::unique_ptr<Database> db = MustOpen(TestOptions(&fs));
  std::unique_ptr<Database> second;
  Status busy = Database::Open(TestOptions(&fs), &second);
  INFO(busy.ToString());
  CHECK(busy.code() == Status::Code::kBusy);
  CHECK(second == nullptr);
  REQUIRE(db->Close().ok());
  db = MustOpen(TestOptions(&fs));  // Close released it
  // A crash ends the process that held the lock: recovery may start at once.
  Internals(db.get())->TEST_Crash();
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  std::unique_ptr<Database> after = MustOpen(TestOptions(&fs));
  REQUIRE(after->Close().ok());
}

// Every call on a transaction or cursor whose database has closed returns Closed, and the
// objects answer as inert ones.
void CheckInert(Transaction* txn, uint64_t id, Cursor* cursor) {
  CHECK_FALSE(txn->active());
  CHECK(txn->id() == id);
  CHECK(txn->Commit().IsClosed());
  CHECK(txn->Commit(CommitMode::kNone).IsClosed());
  CHECK(txn->Abort().IsClosed());
  CHECK_FALSE(cursor->Valid());
  CHECK(cursor->Next().IsClosed());
  size_t visited = 1;
  CHECK(cursor->NextBatch(10, [](std::string_view, std::string_view) { return true; },
                          &visited)
            .IsClosed());
  CHECK(visited == 0);
}

TEST_CASE("transactions and cursors outlive their database and return Closed", "[unit][api]") {
  io::FaultInjectionFileSystem fs(21);
  for (bool close : {true, false}) {
    INFO((close ? "Close, then the database destroyed" : "destroyed without Close"));
    std::unique_ptr<Database> db = MustOpen(TestOptions(&fs));
    Table* t = nullptr;
    Status opened = db->OpenTable("t", &t);
    if (opened.IsNotFound()) t = MustCreateTable(db.get(), "t");
    RunCommitted(db.get(), [&](Transaction* load) {
      for (int i = 0; i < 10; ++i) REQUIRE(t->Upsert(load, Key(i), "v").ok());
    });
    // One transaction finished, with a cursor; one active (if the database is closed: not
    // by Close, which refuses), with a write and a cursor.
    std::unique_ptr<Transaction> finished, active;
    std::unique_ptr<Cursor> finished_cursor, active_cursor;
    REQUIRE(db->Begin(&finished).ok());
    REQUIRE(t->NewCursor(finished.get(), ScanOptions::All(), &finished_cursor).ok());
    REQUIRE(finished->Commit().ok());
    REQUIRE(db->Begin(&active).ok());
    REQUIRE(t->Insert(active.get(), "lost", "v").ok());
    REQUIRE(t->NewCursor(active.get(), ScanOptions::All(), &active_cursor).ok());
    const uint64_t finished_id = finished->id(), active_id = active->id();
    if (close) {
      CHECK(db->Close().IsInvalidArgument());  // a transaction is active
      REQUIRE(active->Abort().ok());
      REQUIRE(db->Close().ok());
      CheckInert(finished.get(), finished_id, finished_cursor.get());
      CheckInert(active.get(), active_id, active_cursor.get());
      std::string value;
      CHECK(t->Get(finished.get(), Key(1), &value).IsClosed());
    }
    db.reset();  // aborts `active` if it is still active
    CheckInert(finished.get(), finished_id, finished_cursor.get());
    CheckInert(active.get(), active_id, active_cursor.get());
    // Destroyed in either order; one transaction before its cursor.
    active.reset();
    active_cursor.reset();
    finished_cursor.reset();

    // The next database has the committed rows only; a transaction object of the closed one
    // is replaced by Begin, and refused by its tables.
    db = MustOpen(TestOptions(&fs));
    t = MustOpenTable(db.get(), "t");
    std::string value;
    CHECK(t->Get(finished.get(), Key(1), &value).IsClosed());
    REQUIRE(db->Begin(&finished).ok());
    CHECK(t->Get(finished.get(), "lost", &value).IsNotFound());
    REQUIRE(t->Get(finished.get(), Key(1), &value).ok());
    REQUIRE(finished->Commit().ok());
    REQUIRE(db->Close().ok());
  }
}

TEST_CASE("a cursor outlives its transaction object, returning TxnFinished", "[unit][api]") {
  io::FaultInjectionFileSystem fs(22);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(200), &t);
  RunCommitted(db.get(), [&](Transaction* load) { REQUIRE(t->Insert(load, Key(1), "v").ok()); });
  std::unique_ptr<Cursor> cursor;
  {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
    CHECK(cursor->Valid());
  }  // destroyed while active: rolled back, and the cursor let go
  CHECK_FALSE(cursor->Valid());
  CHECK(cursor->Next().IsTxnFinished());
  // The cursor object serves a new transaction.
  Cursor* const object = cursor.get();
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  REQUIRE(t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  CHECK(cursor.get() == object);
  REQUIRE(cursor->Valid());
  CHECK(cursor->key() == Key(1));
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Close().ok());
  CHECK(cursor->Next().IsClosed());
}

TEST_CASE("Spawn's fibers are waited for with a WaitGroup, and Close waits for its own",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(25);
  Options o = TestOptions(&fs);
  o.workers = 2;
  std::unique_ptr<Database> db = MustOpen(o);
  Table* t = MustCreateTable(db.get(), "t");
  std::atomic<int> committed{0};
  WaitGroup group;
  for (int i = 0; i < 20; ++i) {
    REQUIRE(db->Spawn(
                  [&, i] {
                    std::unique_ptr<Transaction> txn;
                    if (db->Begin(&txn).ok() && t->Insert(txn.get(), Key(i), "v").ok() &&
                        txn->Commit().ok()) {
                      committed.fetch_add(1);
                    }
                  },
                  -1, &group)
                .ok());
  }
  group.Wait();
  CHECK(group.count() == 0);
  CHECK(committed.load() == 20);

  // A fiber waits for the fibers it spawns; the group serves again.
  std::atomic<int> inner_ran{0};
  REQUIRE(db->Spawn(
                [&] {
                  WaitGroup inner;
                  for (int i = 0; i < 5; ++i) {
                    if (db->Spawn([&] { inner_ran.fetch_add(1); }, i % 2, &inner).ok()) {
                      inner_ran.fetch_add(100);
                    }
                  }
                  inner.Wait();
                },
                0, &group)
              .ok());
  group.Wait();
  CHECK(inner_ran.load() == 505);

  // A spawn the kernel refuses a stack for is an error naming the limit; nothing is counted.
  threads::FiberStackAllocator::TEST_FailNextAllocations(1, /*guard_page=*/true, ENOMEM);
  bool refused_ran = false;
  Status refused = db->Spawn([&] { refused_ran = true; }, 0, &group);
  INFO(refused.ToString());
  CHECK(refused.IsIOError());
  CHECK(refused.ToString().find("vm.max_map_count") != std::string::npos);
  CHECK(group.count() == 0);

  // Close from one of the database's fibers is refused (it would wait for itself).
  Status from_fiber;
  REQUIRE(db->Spawn([&] { from_fiber = db->Close(); }, 0, &group).ok());
  group.Wait();
  CHECK(from_fiber.IsInvalidArgument());

  // Close waits for a fiber still running, whose calls meanwhile return Closed.
  std::atomic<bool> started{false};
  Status last;
  REQUIRE(db->Spawn(
                [&] {
                  started.store(true);
                  for (;;) {
                    Table* again = nullptr;
                    last = db->OpenTable("t", &again);
                    if (!last.ok()) break;
                    threads::SleepFor(std::chrono::milliseconds(1));
                  }
                },
                1, &group)
              .ok());
  while (!started.load()) std::this_thread::yield();
  REQUIRE(db->Close().ok());
  CHECK(group.count() == 0);  // it has returned
  CHECK(last.IsClosed());
  CHECK(db->Spawn([] {}, -1, &group).IsClosed());
  CHECK_FALSE(refused_ran);
}

// Collects the keys a cursor returns from where it stands.
std::vector<std::string> Drain(Cursor* cursor) {
  std::vector<std::string> keys;
  while (cursor->Valid()) {
    keys.emplace_back(cursor->key());
    REQUIRE(cursor->Next().ok());
  }
  return keys;
}

// A cursor of another implementation: NewCursor must replace it, not reuse it.
class ForeignCursor final : public Cursor {
 public:
  bool Valid() const override { return false; }
  Status status() const override { return Status::OK(); }
  std::string_view key() const override { return {}; }
  std::string_view value() const override { return {}; }
  Status Next() override { return Status::OK(); }
  Status Prev() override { return Status::OK(); }
  Status SeekToFirst() override { return Status::OK(); }
  Status SeekToLast() override { return Status::OK(); }
  Status Seek(std::string_view) override { return Status::OK(); }
  Status SeekForPrev(std::string_view) override { return Status::OK(); }
};

TEST_CASE("NewCursor on a cursor of ours makes it the new cursor in place", "[unit][api]") {
  io::FaultInjectionFileSystem fs(16);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(200), &t);
  Table* u = MustCreateTable(db.get(), "u");
  std::unique_ptr<Transaction> a;
  REQUIRE(db->Begin(&a).ok());
  for (int i = 0; i < 20; ++i) REQUIRE(t->Insert(a.get(), Key(i), "t").ok());
  for (int i = 100; i < 103; ++i) REQUIRE(u->Insert(a.get(), Key(i), "u").ok());
  REQUIRE(a->Commit().ok());

  REQUIRE(db->Begin(&a).ok());
  std::unique_ptr<Cursor> cursor;
  REQUIRE(t->NewCursor(a.get(), ScanOptions::Range(Key(5), Key(8)), &cursor).ok());
  Cursor* const object = cursor.get();
  CHECK(Drain(cursor.get()) == std::vector<std::string>{Key(5), Key(6), Key(7)});

  // Bounds, direction and inclusiveness are the new options', not the old cursor's.
  ScanOptions reverse = ScanOptions::Range(Key(12), Key(15));
  reverse.upper_inclusive = true;
  reverse.lower_inclusive = false;
  reverse.reverse = true;
  REQUIRE(t->NewCursor(a.get(), reverse, &cursor).ok());
  CHECK(cursor.get() == object);
  CHECK(Drain(cursor.get()) == std::vector<std::string>{Key(15), Key(14), Key(13)});
  REQUIRE(t->NewCursor(a.get(), ScanOptions::All(), &cursor).ok());
  CHECK(cursor.get() == object);
  CHECK(Drain(cursor.get()).size() == 20);
  REQUIRE(a->Commit().ok());

  // Another table under another transaction, to which it now belongs.
  std::unique_ptr<Transaction> b;
  REQUIRE(db->Begin(&b).ok());
  REQUIRE(u->NewCursor(b.get(), ScanOptions::All(), &cursor).ok());
  CHECK(cursor.get() == object);
  CHECK(cursor->key() == Key(100));
  CHECK(cursor->value() == "u");
  REQUIRE(b->Commit().ok());
  CHECK(cursor->Next().IsTxnFinished());

  // A failure leaves no cursor; a foreign cursor is replaced.
  CHECK(t->NewCursor(b.get(), ScanOptions::All(), &cursor).IsTxnFinished());
  CHECK(cursor == nullptr);
  CHECK(t->NewCursor(b.get(), ScanOptions::All(), nullptr).code() ==
        Status::Code::kInvalidArgument);
  cursor = std::make_unique<ForeignCursor>();
  REQUIRE(db->Begin(&b).ok());
  REQUIRE(t->NewCursor(b.get(), ScanOptions::Range(Key(18), Key(30)), &cursor).ok());
  CHECK(dynamic_cast<ForeignCursor*>(cursor.get()) == nullptr);
  CHECK(Drain(cursor.get()) == std::vector<std::string>{Key(18), Key(19)});
  REQUIRE(b->Commit().ok());
  cursor.reset();
  REQUIRE(db->Close().ok());
}

TEST_CASE("a transaction object serves tables of any id, transaction after transaction",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(17);
  Table* first = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(200), &first);
  std::vector<Table*> tables{first};
  while (tables.back()->id() < 40) {  // ids past the hooks kept inline
    tables.push_back(MustCreateTable(db.get(), "t" + std::to_string(tables.size())));
  }
  std::unique_ptr<Transaction> a;
  for (int round = 0; round < 3; ++round) {
    REQUIRE(db->Begin(&a).ok());
    for (Table* t : tables) REQUIRE(t->Upsert(a.get(), Key(round), "v").ok());
    REQUIRE(a->Commit().ok());
  }
  REQUIRE(db->Begin(&a).ok());
  for (Table* t : tables) REQUIRE(t->Update(a.get(), Key(1), "w").ok());
  for (Table* t : {tables.front(), tables.back()}) {
    std::unique_ptr<Transaction> other;
    REQUIRE(db->Begin(&other).ok());
    CHECK(t->Update(other.get(), Key(1), "x").IsRetryable());  // a's X lock holds
    REQUIRE(other->Abort().ok());
  }
  REQUIRE(a->Commit().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("a read for update and its update share the transaction's leaf hint for the table",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(19);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(200), &t);
  Table* u = MustCreateTable(db.get(), "u");
  std::unique_ptr<Transaction> a;
  REQUIRE(db->Begin(&a).ok());
  for (int i = 0; i < 5000; i += 2) REQUIRE(t->Insert(a.get(), Key(i), "v").ok());
  REQUIRE(a->Commit().ok());

  REQUIRE(db->Begin(&a).ok());
  const index::LeafHint* hint = Internals(a.get())->Hint(t->id());
  REQUIRE(hint != nullptr);
  REQUIRE(hint != Internals(a.get())->Hint(u->id()));  // one per table
  std::string value;
  const uint64_t hits = hint->hits;
  REQUIRE(t->Get(a.get(), Key(1000), &value).ok());  // the load's leaf is elsewhere: a miss
  REQUIRE(t->GetForUpdate(a.get(), Key(3000), &value).ok());
  REQUIRE(t->Update(a.get(), Key(3000), "w").ok());
  REQUIRE(hint->hits == hits + 1);
  REQUIRE(t->Insert(a.get(), Key(3001), "new").ok());  // the same leaf
  REQUIRE(hint->hits == hits + 2);
  REQUIRE(u->Upsert(a.get(), Key(3000), "other").ok());  // another table, another hint
  REQUIRE(hint->hits == hits + 2);
  REQUIRE(a->Commit().ok());

  // A transaction begun on the same object keeps the hint; it is checked on use.
  REQUIRE(db->Begin(&a).ok());
  REQUIRE(Internals(a.get())->Hint(t->id()) == hint);
  REQUIRE(t->GetForUpdate(a.get(), Key(3001), &value).ok());
  REQUIRE(value == "new");
  REQUIRE(hint->hits == hits + 3);
  REQUIRE(t->Get(a.get(), Key(3000), &value).ok());
  REQUIRE(value == "w");
  REQUIRE(u->Get(a.get(), Key(3000), &value).ok());
  REQUIRE(value == "other");
  REQUIRE(a->Commit().ok());
  REQUIRE(db->Close().ok());
}

// The outcome of each key of a GetMany: found (with the value) or not.
struct ManyRow {
  size_t index;
  bool found;
  std::string value;
  bool operator==(const ManyRow&) const = default;
};

std::vector<ManyRow> ReadMany(Table* t, Transaction* txn, const std::vector<std::string>& keys,
                              bool for_update, const std::function<bool(size_t)>& more = {}) {
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<ManyRow> rows;
  Status s = t->GetMany(txn, views, for_update,
                        [&](size_t index, const Status& found, std::string_view value) {
                          CHECK((found.ok() || found.IsNotFound()));
                          rows.push_back(ManyRow{index, found.ok(), std::string(value)});
                          return !more || more(index);
                        });
  INFO(s.ToString());
  CHECK(s.ok());
  return rows;
}

TEST_CASE("GetMany reads what Get reads, also from leaves that changed after it found them",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(7);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(100), &t);
  const std::string filler(120, 'v');  // a few dozen rows per leaf: many leaves
  RunCommitted(db.get(), [&](Transaction* load) {
    for (int i = 0; i < 4000; i += 2) REQUIRE(t->Insert(load, Key(i), filler + Key(i)).ok());
  });
  std::mt19937 rng(11);
  std::vector<std::string> keys;  // present and absent, in no order, some twice
  for (int n = 0; n < 600; ++n) keys.push_back(Key(static_cast<int>(rng() % 4100)));
  keys.push_back(keys.front());
  auto expected = [&](Transaction* txn, const std::vector<std::string>& ks) {
    std::vector<ManyRow> rows;
    for (size_t i = 0; i < ks.size(); ++i) {
      std::string value;
      Status s = t->Get(txn, ks[i], &value);
      REQUIRE((s.ok() || s.IsNotFound()));
      rows.push_back(ManyRow{i, s.ok(), s.ok() ? value : std::string()});
    }
    return rows;
  };

  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  CHECK(ReadMany(t, txn.get(), keys, false) == expected(txn.get(), keys));
  CHECK(ReadMany(t, txn.get(), {}, false).empty());
  // A table whose root is its only leaf: nothing to find ahead.
  Table* small = MustCreateTable(db.get(), "small");
  REQUIRE(small->Insert(txn.get(), "a", "1").ok());
  REQUIRE(small->Insert(txn.get(), "c", "3").ok());
  CHECK(ReadMany(small, txn.get(), {"c", "b", "a"}, true) ==
        std::vector<ManyRow>{{0, true, "3"}, {1, false, ""}, {2, true, "1"}});
  // A key the tree refuses is an error, not an absent row, met in key order: the rows before
  // it are read.
  const std::string present = Key(10), huge(100000, 'k');
  std::vector<std::string_view> too_long = {present, huge, present};
  size_t rows_read = 0;
  CHECK(t->GetMany(txn.get(), too_long, false, [&](size_t, const Status& found, std::string_view) {
           CHECK(found.ok());
           ++rows_read;
           return true;
         }).IsInvalidArgument());
  CHECK(rows_read == 1);
  // A row that ends the transaction ends the batch with the error the next read would meet.
  std::unique_ptr<Transaction> ended;
  REQUIRE(db->Begin(&ended).ok());
  rows_read = 0;
  CHECK(t->GetMany(ended.get(), std::vector<std::string_view>{present, present},
                   false, [&](size_t, const Status&, std::string_view) {
                     ++rows_read;
                     CHECK(ended->Commit().ok());
                     return true;
                   }).IsTxnFinished());
  CHECK(rows_read == 1);
  // Stopping: `row` returning false ends the batch after that row.
  CHECK(ReadMany(t, txn.get(), keys, false, [](size_t i) { return i < 5; }).size() == 6);
  REQUIRE(txn->Commit().ok());

  // The leaves of the next keys are found ahead of their reads; rows read first move them:
  // inserts just below them split their leaf until they lie in new leaves to its right, more
  // inserts split the leaves of the keys after them, a delete takes one key away.
  std::vector<std::string> sorted;
  for (int i = 1000; i < 1200; i += 2) sorted.push_back(Key(i));
  REQUIRE(db->Begin(&txn).ok());
  std::vector<ManyRow> rows = ReadMany(t, txn.get(), sorted, false, [&](size_t i) {
    if (i == 0) {
      for (int copy = 0; copy < 300; ++copy) {
        REQUIRE(t->Insert(txn.get(), Key(1001) + std::to_string(1000 + copy), filler).ok());
      }
      for (int k = 1003; k < 1200; k += 2) {
        for (int copy = 0; copy < 5; ++copy) {
          REQUIRE(t->Insert(txn.get(), Key(k) + std::to_string(copy), filler).ok());
        }
      }
      REQUIRE(t->Delete(txn.get(), sorted[2]).ok());
    }
    return true;
  });
  CHECK(rows == expected(txn.get(), sorted));
  REQUIRE(rows.size() == sorted.size());
  CHECK(!rows[2].found);
  CHECK(rows[3].found);
  REQUIRE(txn->Abort().ok());

  // For update: each row is locked exclusively at its read, as by GetForUpdate.
  REQUIRE(db->Begin(&txn).ok());
  std::vector<std::string> few = {Key(10), Key(3000), Key(11)};
  rows = ReadMany(t, txn.get(), few, true);
  REQUIRE(rows.size() == 3);
  CHECK((rows[0].found && !rows[2].found));
  std::unique_ptr<Transaction> other;
  REQUIRE(db->Begin(&other).ok());
  std::string value;
  CHECK(t->Get(other.get(), Key(3000), &value).IsLockTimeout());
  REQUIRE(other->Abort().ok());
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("GetForUpdate locks the row exclusively at the read", "[unit][api]") {
  io::FaultInjectionFileSystem fs(7);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(100), &t);
  RunCommitted(db.get(), [&](Transaction* load) { REQUIRE(t->Insert(load, "k", "v1").ok()); });
  for (Isolation isolation : {Isolation::kSerializable, Isolation::kReadCommitted}) {
    INFO(IsolationName(isolation));
    // Two plain reads share the row.
    std::unique_ptr<Transaction> a, b;
    REQUIRE(db->Begin(&a, isolation).ok());
    REQUIRE(db->Begin(&b, isolation).ok());
    std::string value;
    REQUIRE(t->Get(a.get(), "k", &value).ok());
    REQUIRE(t->Get(b.get(), "k", &value).ok());
    REQUIRE(a->Commit().ok());
    REQUIRE(b->Commit().ok());

    // A read for update excludes other reads for update and serializable reads until it ends,
    // and its update takes no lock. A read-committed read returns the committed value until
    // the row's leaf holds the update, and waits after.
    REQUIRE(db->Begin(&a, isolation).ok());
    REQUIRE(t->GetForUpdate(a.get(), "k", &value).ok());
    CHECK(value == "v1");
    const size_t held = LockOwnerOf(a.get())->lock_count();
    REQUIRE(db->Begin(&b, isolation).ok());
    CHECK(t->GetForUpdate(b.get(), "k", &value).IsLockTimeout());
    REQUIRE(b->Abort().ok());
    REQUIRE(db->Begin(&b, isolation).ok());
    if (isolation == Isolation::kSerializable) {
      CHECK(t->Get(b.get(), "k", &value).IsLockTimeout());
    } else {
      REQUIRE(t->Get(b.get(), "k", &value).ok());
      CHECK(value == "v1");
    }
    REQUIRE(t->Update(a.get(), "k", "v2").ok());
    CHECK(LockOwnerOf(a.get())->lock_count() == held);
    if (isolation == Isolation::kReadCommitted) {
      CHECK(t->Get(b.get(), "k", &value).IsLockTimeout());
    }
    REQUIRE(b->Abort().ok());
    REQUIRE(a->Commit().ok());

    REQUIRE(db->Begin(&b, isolation).ok());
    REQUIRE(t->Get(b.get(), "k", &value).ok());
    CHECK(value == "v2");
    CHECK(t->GetForUpdate(b.get(), "absent", &value).IsNotFound());
    REQUIRE(t->Update(b.get(), "k", "v1").ok());
    REQUIRE(b->Commit().ok());
  }
  REQUIRE(db->Close().ok());
}

TEST_CASE("an update after a read for update is a covered request that still excludes others",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(8);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(100), &t);
  RunCommitted(db.get(), [&](Transaction* load) {
    REQUIRE(t->Insert(load, "a", "1").ok());
    REQUIRE(t->Insert(load, "b", "1").ok());
  });
  for (Isolation isolation : {Isolation::kSerializable, Isolation::kReadCommitted}) {
    INFO(IsolationName(isolation));
    std::unique_ptr<Transaction> a, b;
    std::string value;
    REQUIRE(db->Begin(&a, isolation).ok());
    REQUIRE(t->GetForUpdate(a.get(), "a", &value).ok());
    const lock::LockStats before = LockOwnerOf(a.get())->stats();
    const size_t held = LockOwnerOf(a.get())->lock_count();
    REQUIRE(t->Update(a.get(), "a", "2").ok());  // X on "a" again: covered
    const lock::LockStats after = LockOwnerOf(a.get())->stats();
    CHECK(after.covered - before.covered == 1);
    CHECK(after.requests - before.requests == 1);
    CHECK(after.immediate_grants == before.immediate_grants);
    CHECK(LockOwnerOf(a.get())->lock_count() == held);
    // Another key in between, then "a" again: no longer the last lock, still held and covered.
    REQUIRE(t->GetForUpdate(a.get(), "b", &value).ok());
    REQUIRE(t->Update(a.get(), "a", "3").ok());
    REQUIRE(t->Update(a.get(), "b", "3").ok());
    // The X on both keys still keeps others out.
    REQUIRE(db->Begin(&b, isolation).ok());
    CHECK(t->Get(b.get(), "a", &value).IsLockTimeout());
    REQUIRE(b->Abort().ok());
    REQUIRE(db->Begin(&b, isolation).ok());
    CHECK(t->Update(b.get(), "b", "4").IsLockTimeout());
    REQUIRE(b->Abort().ok());
    REQUIRE(a->Commit().ok());
    // Later transactions remember nothing of the old one's locks: an update asks the lock
    // manager, and a writer holding the key makes it wait.
    REQUIRE(db->Begin(&b, isolation).ok());
    REQUIRE(t->Update(b.get(), "a", "5").ok());
    REQUIRE(db->Begin(&a, isolation).ok());
    CHECK(t->Update(a.get(), "a", "6").IsLockTimeout());
    REQUIRE(a->Abort().ok());
    REQUIRE(b->Commit().ok());
  }
  REQUIRE(db->Close().ok());
}

namespace {
std::string Counters(int64_t first, int64_t second) {
  std::string value(16, '\0');
  std::memcpy(value.data(), &first, 8);
  std::memcpy(value.data() + 8, &second, 8);
  return value;
}
int64_t CounterAt(const std::string& value, size_t offset) {
  int64_t v = 0;
  REQUIRE(value.size() >= offset + 8);
  std::memcpy(&v, value.data() + offset, 8);
  return v;
}
}  // namespace

TEST_CASE("adders of one row share it, readers wait for them, an abort keeps the others' sums",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(8);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithTable(&fs, std::chrono::milliseconds(100), &t);
  RunCommitted(db.get(),
               [&](Transaction* load) { REQUIRE(t->Insert(load, "w", Counters(1000, 50)).ok()); });
  for (Isolation isolation : {Isolation::kSerializable, Isolation::kReadCommitted}) {
    INFO(IsolationName(isolation));
    std::unique_ptr<Transaction> a, b, reader;
    REQUIRE(db->Begin(&a, isolation).ok());
    REQUIRE(db->Begin(&b, isolation).ok());
    const uint64_t waits = db->stats().lock_waits;
    std::string value;
    REQUIRE(t->Add(a.get(), "w", 0, 5, &value).ok());
    CHECK(CounterAt(value, 0) == 1005);
    CHECK(CounterAt(value, 8) == 50);
    REQUIRE(t->Add(b.get(), "w", 0, 7, &value).ok());  // shares the row: no wait
    CHECK(CounterAt(value, 0) == 1012);                // a's uncommitted 5 included
    REQUIRE(t->Add(a.get(), "w", 8, -20).ok());
    CHECK(db->stats().lock_waits == waits);
    // A reader and a writer wait for the adders (here: until their timeout).
    REQUIRE(db->Begin(&reader, isolation).ok());
    CHECK(t->Get(reader.get(), "w", &value).IsLockTimeout());
    REQUIRE(reader->Abort().ok());
    REQUIRE(db->Begin(&reader, isolation).ok());
    CHECK(t->Update(reader.get(), "w", Counters(0, 0)).IsLockTimeout());
    REQUIRE(reader->Abort().ok());
    // a rolls back its 5 and its -20; b's 7 stays.
    REQUIRE(a->Abort().ok());
    REQUIRE(b->Commit().ok());
    REQUIRE(db->Begin(&reader, isolation).ok());
    REQUIRE(t->Get(reader.get(), "w", &value).ok());
    CHECK(value == Counters(1007, 50));
    // Bad input changes nothing: a counter outside the value, an overflow, an absent row.
    CHECK(t->Add(reader.get(), "w", 9, 1).IsInvalidArgument());
    CHECK(t->Add(reader.get(), "w", 0, INT64_MAX).IsInvalidArgument());
    CHECK(t->Add(reader.get(), "absent", 0, 1).IsNotFound());
    // An adder that reads the row holds it exclusively; the undo of its Add still subtracts.
    REQUIRE(t->Add(reader.get(), "w", 8, 1).ok());
    REQUIRE(t->Get(reader.get(), "w", &value).ok());
    CHECK(value == Counters(1007, 51));
    REQUIRE(db->Begin(&a, isolation).ok());
    CHECK(t->Add(a.get(), "w", 0, 1).IsLockTimeout());
    REQUIRE(a->Abort().ok());
    REQUIRE(reader->Abort().ok());
    // Reset for the next isolation level.
    REQUIRE(db->Begin(&a, isolation).ok());
    REQUIRE(t->Add(a.get(), "w", 0, -7).ok());
    REQUIRE(a->Commit().ok());
  }
  REQUIRE(db->Close().ok());
  // The committed sums survive a restart.
  db = MustOpen(TestOptions(&fs));
  t = MustOpenTable(db.get(), "t");
  RunCommitted(db.get(), [&](Transaction* check) {
    std::string value;
    REQUIRE(t->Get(check, "w", &value).ok());
    CHECK(value == Counters(1000, 50));
  });
  REQUIRE(db->Close().ok());
}

TEST_CASE("a damaged meta file is reported", "[unit][api]") {
  io::FaultInjectionFileSystem fs(4);
  { REQUIRE(MustOpen(TestOptions(&fs))->Close().ok()); }
  OverwriteStart(&fs, "/db/sm.meta", {1, 2, 3});
  std::unique_ptr<Database> db;
  CHECK(Database::Open(TestOptions(&fs), &db).code() == Status::Code::kCorruption);
}

TEST_CASE("a damaged data volume is reported, not opened", "[unit][api]") {
  io::FaultInjectionFileSystem fs(5);
  { REQUIRE(MustOpen(TestOptions(&fs))->Close().ok()); }
  std::array<char, 512> junk;
  junk.fill(0x5a);
  OverwriteStart(&fs, "/db/data.sm", junk);  // the volume header
  std::unique_ptr<Database> db;
  Status s = Database::Open(TestOptions(&fs), &db);
  INFO(s.ToString());
  CHECK_FALSE(s.ok());
  CHECK((s.IsCorruption() || s.IsInvalidArgument()));
}

// Crash through the public API: durable commits survive, in-flight work is undone, the trees
// verify; repeated with unsynced writes dropped and torn.
TEST_CASE("crash recovery through Open", "[crash][api]") {
  uint64_t seed = test::TestSeed("crash recovery through Open");
  std::mt19937_64 rng(seed);
  io::FaultInjectionFileSystem fs(seed);
  std::map<std::string, std::string> model;
  { REQUIRE(MustOpen(TestOptions(&fs))->Close().ok()); }
  for (int round = 0; round < 12; ++round) {
    INFO("round " << round);
    auto db = MustOpen(TestOptions(&fs));
    Table* t = nullptr;
    if (!db->OpenTable("t", &t).ok()) REQUIRE(db->CreateTable("t", &t).ok());
    std::unique_ptr<Transaction> in_flight;
    for (int n = 0; n < 20; ++n) {
      std::unique_ptr<Transaction> txn;
      REQUIRE(db->Begin(&txn).ok());
      std::map<std::string, std::string> changes;
      for (int i = 0; i < 40; ++i) {
        std::string key = Key(static_cast<int>(rng() % 3000));
        std::string value = std::string(1 + rng() % 120, static_cast<char>('a' + rng() % 26));
        REQUIRE(t->Upsert(txn.get(), key, value).ok());
        changes[key] = value;
      }
      int fate = static_cast<int>(rng() % 4);
      if (fate == 0) {
        REQUIRE(txn->Abort().ok());
      } else {
        REQUIRE(txn->Commit().ok());
        for (auto& [k, v] : changes) model[k] = v;
      }
    }
    REQUIRE(db->Begin(&in_flight).ok());
    for (int i = 0; i < 200; ++i) {
      REQUIRE(t->Upsert(in_flight.get(), Key(static_cast<int>(rng() % 3000)), "lost").ok());
    }
    if (rng() % 2 == 0) REQUIRE(db->Checkpoint().ok());
    Internals(db.get())->TEST_Crash();
    in_flight.reset();
    db.reset();
    fs.SimulateCrash(rng() % 2 == 0 ? io::CrashMode::kDropUnsynced : io::CrashMode::kTearUnsynced);

    OpenReport report;
    db = MustOpen(TestOptions(&fs), &report);
    CHECK(report.recovered);
    CHECK(report.orphan_sweep_skipped.empty());
    VerifyNoPageInNoTree(db.get());  // Open gave back what splits left
    t = MustOpenTable(db.get(), "t");
    std::unique_ptr<Transaction> check;
    REQUIRE(db->Begin(&check).ok());
    std::unique_ptr<Cursor> cursor;
    REQUIRE(t->NewCursor(check.get(), ScanOptions::All(), &cursor).ok());
    auto expected = model.begin();
    while (cursor->Valid()) {
      REQUIRE(expected != model.end());
      REQUIRE(cursor->key() == expected->first);
      REQUIRE(cursor->value() == expected->second);
      REQUIRE(cursor->Next().ok());
      ++expected;
    }
    CHECK(expected == model.end());
    REQUIRE(check->Commit().ok());
    REQUIRE(db->Close().ok());
  }
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

// Prewarm reads the pages in, so that reading every row afterwards misses nothing; with a pool
// smaller than the data it stops at nine tenths of the pool.
// The data file's size in bytes.
uint64_t VolumeBytes(io::FileSystem* fs, const std::string& dir) {
  std::unique_ptr<io::File> file;
  REQUIRE(fs->Open(dir + "/data.sm", io::OpenOptions{}, &file).ok());
  uint64_t bytes = 0;
  REQUIRE(file->Size(&bytes).ok());
  return bytes;
}

TEST_CASE("reserve_free_bytes grows the data file at open", "[unit][api]") {
  io::FaultInjectionFileSystem fs(7);
  Options options = TestOptions(&fs);
  { auto db = MustOpen(options); }
  const uint64_t plain = VolumeBytes(&fs, options.path);
  options.reserve_free_bytes = plain + (16u << 20);
  {
    auto db = MustOpen(options);
    Table* t = MustCreateTable(db.get(), "t");
    RunCommitted(db.get(), [&](Transaction* txn) { REQUIRE(t->Insert(txn, Key(1), "v").ok()); });
    REQUIRE(db->Close().ok());
  }
  const uint64_t reserved = VolumeBytes(&fs, options.path);
  CHECK(reserved >= options.reserve_free_bytes + kPageBytes);  // the free space and the header
  { auto db = MustOpen(options); }  // the space is still free: nothing grows
  CHECK(VolumeBytes(&fs, options.path) == reserved);
  options.reserve_free_bytes = uint64_t{1} << 62;  // beyond any volume
  std::unique_ptr<Database> db;
  Status s = Database::Open(options, &db);
  CHECK(s.IsInvalidArgument());
  CHECK(VolumeBytes(&fs, options.path) == reserved);
}

TEST_CASE("a bad checkpoint spread is refused and paced checkpoints meet Checkpoint and Close",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(8);
  Options options = TestOptions(&fs);
  for (double bad : {-0.1, 1.0, 2.0}) {
    options.checkpoint_spread = bad;
    std::unique_ptr<Database> db;
    CAPTURE(bad);
    CHECK(Database::Open(options, &db).IsInvalidArgument());
  }
  // A background checkpoint every 50 ms that spreads its writes over 49.5 ms: explicit
  // checkpoints and Close meet paced ones in progress (which they hurry: the buffer pool's
  // test checks that), and the database closes clean.
  options.checkpoint_interval = std::chrono::milliseconds(50);
  options.checkpoint_spread = 0.99;
  auto db = MustOpen(options);
  Table* t = MustCreateTable(db.get(), "t");
  for (int round = 0; round < 20; ++round) {
    RunCommitted(db.get(), [&](Transaction* txn) {
      for (int k = 0; k < 200; ++k) REQUIRE(t->Upsert(txn, Key(k * 37 + round), "v").ok());
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (round % 5 == 4) REQUIRE(db->Checkpoint().ok());
  }
  REQUIRE(db->stats().checkpoints >= 4);
  REQUIRE(db->Close().ok());
  db = MustOpen(options);  // a clean close: nothing to recover
  REQUIRE(db->Verify().ok());
}

// Table "t" with keys 0-4999 (100-byte values), then keys 1000-3999 deleted: about 40 leaves
// emptied, and all but a few retired.
void FillThenDeleteMiddle(Database* db) {
  Table* t = MustCreateTable(db, "t");
  RunCommitted(db, [&](Transaction* txn) {
    for (int k = 0; k < 5000; ++k) REQUIRE(t->Insert(txn, Key(k), std::string(100, 'v')).ok());
  });
  RunCommitted(db, [&](Transaction* txn) {
    for (int k = 1000; k < 4000; ++k) REQUIRE(t->Delete(txn, Key(k)).ok());
  });
}

TEST_CASE("Close gives back the pages of the leaves deletes retired", "[unit][api]") {
  io::FaultInjectionFileSystem fs(9);
  Options options = TestOptions(&fs);
  uint64_t allocated_before_close = 0;
  {
    auto db = MustOpen(options);
    FillThenDeleteMiddle(db.get());
    allocated_before_close = db->stats().volume_pages_allocated;
    REQUIRE(db->Close().ok());
  }
  auto db = MustOpen(options);
  // About 40 leaves held the deleted rows; all but a few left the tree and went back.
  CHECK(db->stats().volume_pages_allocated + 30 < allocated_before_close);
  VerifyNoPageInNoTree(db.get());
}

// The retired leaves a tree keeps for its splits are in memory only: a crash leaves them
// allocated in no tree, and the next Open gives them back.
TEST_CASE("Open gives back the pages a crash left in no tree", "[crash][api]") {
  io::FaultInjectionFileSystem fs(10);
  Options options = TestOptions(&fs);
  uint64_t allocated_at_crash = 0;
  {
    auto db = MustOpen(options);
    FillThenDeleteMiddle(db.get());  // durable commits
    allocated_at_crash = db->stats().volume_pages_allocated;
    Internals(db.get())->TEST_Crash();
    fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  }
  OpenReport report;
  auto db = MustOpen(options, &report);
  INFO(report.ToString());
  CHECK(report.orphan_sweep_skipped.empty());
  // About 40 leaves held the deleted rows; all but a few left the tree before the crash.
  CHECK(report.orphan_pages_freed > 30);
  CHECK(report.ToString().find(Counted(report.orphan_pages_freed, "page") +
                               " in no tree given back") != std::string::npos);
  CHECK(db->stats().volume_pages_allocated + report.orphan_pages_freed == allocated_at_crash);
  VerifyNoPageInNoTree(db.get());
  Table* t = MustOpenTable(db.get(), "t");
  RunCommitted(db.get(), [&](Transaction* txn) {
    std::string value;
    for (int k = 0; k < 5000; ++k) {
      Status s = t->Get(txn, Key(k), &value);
      if (k >= 1000 && k < 4000) {
        REQUIRE(s.IsNotFound());
      } else {
        REQUIRE(s.ok());
      }
    }
    // The freed pages are the volume's again: new rows reuse them before the file grows.
    for (int k = 1000; k < 4000; ++k) {
      REQUIRE(t->Insert(txn, Key(k), std::string(100, 'w')).ok());
    }
  });
  CHECK(db->stats().volume_pages_allocated <= allocated_at_crash + 10);
  REQUIRE(db->Verify().ok());
  // A second Open finds nothing more to give back.
  REQUIRE(db->Close().ok());
  OpenReport again;
  db = MustOpen(options, &again);
  CHECK(again.orphan_pages_freed == 0);
}

TEST_CASE("prewarm fills the buffer pool", "[unit][api]") {
  io::FaultInjectionFileSystem fs(7);
  Options options = TestOptions(&fs);
  const int kRows = 20000;
  {
    auto db = MustOpen(options);
    Table* t = MustCreateTable(db.get(), "t");
    RunCommitted(db.get(), [&](Transaction* txn) {
      for (int i = 0; i < kRows; ++i) REQUIRE(t->Insert(txn, Key(i), std::string(100, 'v')).ok());
    });
    REQUIRE(db->Close().ok());
  }
  {
    auto db = MustOpen(options);  // 4 MiB: the data (about 2.5 MiB) fits
    uint64_t pages = 0;
    REQUIRE(db->Prewarm(&pages).ok());
    CHECK(pages > 250);
    uint64_t misses_before = db->stats().pool_misses;
    Table* t = MustOpenTable(db.get(), "t");
    RunCommitted(db.get(), [&](Transaction* txn) {
      std::string value;
      for (int i = 0; i < kRows; ++i) REQUIRE(t->Get(txn, Key(i), &value).ok());
    });
    CHECK(db->stats().pool_misses == misses_before);
    REQUIRE(db->Close().ok());
  }
  options.buffer_pool_bytes = 1u << 20;  // 128 frames: smaller than the data
  auto db = MustOpen(options);
  uint64_t pages = 0;
  REQUIRE(db->Prewarm(&pages).ok());
  CHECK(pages == 128 * 9 / 10);
  REQUIRE(db->Close().ok());
  CHECK(db->Prewarm(&pages).IsClosed());
}

}  // namespace
}  // namespace sm
