// The other engines' adapters (tpcc/engines/) against the TPC-C tests our adapter passes: each
// transaction's effects and the consistency conditions on a tiny database, the adapter's
// answers (duplicates, missing rows, aborts, scans in both directions), and a short
// run of the mix on two workers followed by the conditions, after a close and reopen too.
//
// An engine whose library this build did not find is skipped: its cases print a line that
// ctest reads as a skip (tests/catch_tiers.cmake, SKIP_REGULAR_EXPRESSION) and pass.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"
#include "tests/tpcc/tpcc_test_util.h"
#include "tpcc/driver.h"
#include "tpcc/engines/engines.h"
#include "tpcc/engines/worker_threads.h"
#include "tpcc/keys.h"
#include "tpcc/transactions.h"

// The engines' libraries are not instrumented. TSan cannot see the synchronization inside them
// (SQLite's WAL index, RocksDB's write groups and memtables, LMDB's pages are published with
// their own barriers and atomics), so it would report their memcpy calls, and the inline
// std::string code they run from this binary, as races: only the accesses our code makes are
// checked, and a race with a library's frame on its stack is the library's. LSan would report
// the allocations the libraries keep until exit.
#if defined(SM_TSAN)
extern "C" const char* __tsan_default_options() { return "ignore_noninstrumented_modules=1"; }
extern "C" const char* __tsan_default_suppressions() {
  return "race:librocksdb.so\nrace:libwiredtiger.so\nrace:libdb-5.3.so\nrace:liblmdb.so\n"
         "race:libsqlite3.so\n";
}
#endif
#if defined(SM_ASAN)
extern "C" const char* __lsan_default_suppressions() {
  return "leak:librocksdb.so\nleak:libwiredtiger.so\nleak:libdb-5.3.so\nleak:liblmdb.so\n"
         "leak:libsqlite3.so\n";
}
#endif

namespace sm::tpcc::test {
namespace {

constexpr int64_t kDate = 1700000000000000;

bool Built(const std::string& name) {
  for (const std::string& n : ForeignEngineNames()) {
    if (n == name) return true;
  }
  return false;
}

// Prints the line ctest reads as a skip and leaves the test case.
#define SKIP_UNLESS_BUILT(name)                                                              \
  do {                                                                                       \
    if (!Built(name)) {                                                                      \
      std::printf("[engine skipped] the %s adapter is not in this build: its library was "  \
                  "not found at configure time\n", std::string(name).c_str());              \
      return;                                                                                \
    }                                                                                        \
  } while (0)

// A scratch directory for one engine's database, removed at the end.
struct Scratch {
  explicit Scratch(const std::string& engine)
      : path((std::filesystem::temp_directory_path() /
              ("sm_engines_test_" + engine + "_" + std::to_string(::getpid())))
                 .string()) {
    std::filesystem::remove_all(path);
  }
  ~Scratch() {
    std::error_code error;
    std::filesystem::remove_all(path, error);
  }
  std::string path;
};

std::unique_ptr<Engine> Open(const std::string& name, const std::string& path, bool create,
                             unsigned workers = 1) {
  ForeignEngineOptions o;
  o.path = path;
  o.create = create;
  o.cache_bytes = 16u << 20;
  o.commit = ForeignCommit::kAsync;
  o.workers = workers;
  o.lock_timeout_ms = 10000;
  std::unique_ptr<Engine> engine;
  Status s = OpenForeignEngine(name, o, &engine);
  INFO(s.ToString());
  REQUIRE(s.ok());
  bool created = false;
  s = engine->OpenSchema(create, &created);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return engine;
}

DatabaseInfo LoadTiny(Engine* engine, uint32_t warehouses) {
  LoadOptions lo;
  lo.warehouses = warehouses;
  lo.scale = TinyScale();
  lo.seed = 31;
  LoadResult result;
  Status s = Load(engine, lo, &result);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return result.info;
}

void Close(std::unique_ptr<Engine> engine) {
  Status s = engine->Close();
  INFO(s.ToString());
  REQUIRE(s.ok());
}

void Transactions(const std::string& name) {
  Scratch dir(name);
  std::unique_ptr<Engine> engine = Open(name, dir.path, /*create=*/true);
  Engine* e = engine.get();
  const DatabaseInfo info = LoadTiny(e, 2);
  REQUIRE(FailedConditions(e, info, AllConditions()).empty());
  std::unique_ptr<EngineTxn> txn = e->NewTxn();

  // New-Order: the district's counter, the order's rows, a remote stock row.
  const auto s8 = MustRead<StockRow>(e, TableId::kStock, StockKey(2, 8));
  NewOrderInput in;
  in.w = 1;
  in.d = 3;
  in.c = 5;
  in.ol_cnt = 3;
  in.lines[0] = {7, 1, 5};
  in.lines[1] = {8, 2, 3};
  in.lines[2] = {9, 1, 5};
  in.entry_d_us = kDate;
  NewOrderOutput no;
  REQUIRE(NewOrder(txn.get(), in, &no).ok());
  CHECK_FALSE(no.rolled_back);
  CHECK(no.o_id == 31);
  CHECK(MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 3)).next_o_id == 32);
  CHECK(MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 3, 31)).ol_cnt == 3);
  CHECK(Exists(e, TableId::kNewOrder, NewOrderKey(1, 3, 31)));
  CHECK(Exists(e, TableId::kOrderByCustomer, OrderByCustomerKey(1, 3, 5, 31)));
  CHECK(MustRead<StockRow>(e, TableId::kStock, StockKey(2, 8)).remote_cnt == s8.remote_cnt + 1);
  // An unused item rolls the order back and changes nothing.
  NewOrderInput bad = in;
  bad.ol_cnt = 2;
  bad.lines[1] = {101, 1, 1};
  REQUIRE(NewOrder(txn.get(), bad, &no).ok());
  CHECK(no.rolled_back);
  CHECK(MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 3)).next_o_id == 32);
  CHECK_FALSE(Exists(e, TableId::kOrder, OrderKey(1, 3, 32)));

  // Payment by name: the year-to-date sums and a history row.
  const auto w_before = MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(1));
  const auto c1 = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 2, 1));
  PaymentInput pay;
  pay.w = 1;
  pay.d = 2;
  pay.c_w = 1;
  pay.c_d = 2;
  pay.by_name = true;
  pay.c_last = std::string(View(c1.last));
  pay.amount_cents = 12345;
  pay.date_us = kDate;
  PaymentOutput po;
  REQUIRE(Payment(txn.get(), pay, &po).ok());
  CHECK(po.name_matches >= 1);
  CHECK(MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(1)).ytd_cents ==
        w_before.ytd_cents + 12345);

  // Order-Status of the customer who just ordered; Delivery; Stock-Level.
  OrderStatusInput os;
  os.w = 1;
  os.d = 3;
  os.c = 5;
  OrderStatusOutput oo;
  REQUIRE(OrderStatus(txn.get(), os, &oo).ok());
  CHECK(oo.o_id == 31);
  CHECK(oo.line_count == 3);
  DeliveryInput del;
  del.w = 1;
  del.carrier_id = 4;
  del.date_us = kDate;
  DeliveryOutput dout;
  REQUIRE(Delivery(txn.get(), del, &dout).ok());
  CHECK(dout.skipped == 0);
  CHECK(dout.delivered_o_id[0] == 22);  // the oldest NEW-ORDER row of district 1
  CHECK_FALSE(Exists(e, TableId::kNewOrder, NewOrderKey(1, 1, 22)));
  CHECK(MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 1, 22)).carrier_id == 4);
  StockLevelInput sl;
  sl.w = 1;
  sl.d = 3;
  sl.threshold = 101;  // every stock quantity is below: all the distinct items of 20 orders
  StockLevelOutput so;
  REQUIRE(StockLevel(txn.get(), sl, &so).ok());
  CHECK(so.low_stock > 0);
  txn.reset();
  CHECK(FailedConditions(e, info, RunConditions()).empty());
  Close(std::move(engine));
}

void Answers(const std::string& name) {
  Scratch dir(name);
  std::unique_ptr<Engine> engine = Open(name, dir.path, /*create=*/true);
  Engine* e = engine.get();
  for (uint32_t i = 1; i <= 9; ++i) Put(e, TableId::kItem, ItemKey(i), "item" + std::to_string(i));
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kSerializable).ok());
  CHECK(txn->Insert(TableId::kItem, ItemKey(3), "again").IsDuplicate());
  CHECK(txn->Update(TableId::kItem, ItemKey(10), "none").IsNotFound());
  CHECK(txn->Delete(TableId::kItem, ItemKey(10)).IsNotFound());
  std::string value;
  CHECK(txn->Get(TableId::kItem, ItemKey(10), &value).IsNotFound());
  REQUIRE(txn->Insert(TableId::kItem, ItemKey(10), "ten").ok());
  REQUIRE(txn->Delete(TableId::kItem, ItemKey(1)).ok());
  REQUIRE(txn->Abort().ok());
  CHECK_FALSE(txn->active());
  CHECK_FALSE(Exists(e, TableId::kItem, ItemKey(10)));
  CHECK(Exists(e, TableId::kItem, ItemKey(1)));

  // Add: the little-endian int64 at an offset, in place.
  std::string row(16, '\0');
  Put(e, TableId::kWarehouse, WarehouseKey(1), row);
  REQUIRE(txn->Begin(TxnIsolation::kSerializable).ok());
  REQUIRE(txn->Add(TableId::kWarehouse, WarehouseKey(1), 8, 42, &value).ok());
  REQUIRE(txn->Add(TableId::kWarehouse, WarehouseKey(1), 8, -2, &value).ok());
  REQUIRE(txn->Commit().ok());
  int64_t sum = 0;
  std::memcpy(&sum, value.data() + 8, sizeof sum);
  CHECK(sum == 40);

  auto ids = [&](uint32_t from, uint32_t to, bool reverse) {
    std::vector<uint32_t> out;
    REQUIRE(txn->Scan(TableId::kItem, from ? ItemKey(from) : std::string(),
                      to ? ItemKey(to) : std::string(), reverse,
                      [&](std::string_view key, std::string_view) {
                        uint32_t id = 0;
                        REQUIRE(KeyReader(key).U32(&id));
                        out.push_back(id);
                        return out.size() < 5;
                      })
                .ok());
    return out;
  };
  REQUIRE(txn->Begin(TxnIsolation::kReadCommitted).ok());
  CHECK(ids(2, 5, false) == std::vector<uint32_t>{2, 3, 4});
  CHECK(ids(2, 5, true) == std::vector<uint32_t>{4, 3, 2});
  CHECK(ids(0, 0, false) == std::vector<uint32_t>{1, 2, 3, 4, 5});  // stopped by the visitor
  CHECK(ids(7, 0, true) == std::vector<uint32_t>{9, 8, 7});
  CHECK(ids(0, 3, true) == std::vector<uint32_t>{2, 1});
  REQUIRE(txn->Commit().ok());
  txn.reset();
  Close(std::move(engine));
}

void ShortRun(const std::string& name) {
  Scratch dir(name);
  const uint64_t seed = ::sm::test::TestSeed("tpcc engines run");
  std::unique_ptr<Engine> engine = Open(name, dir.path, /*create=*/true, /*workers=*/2);
  const DatabaseInfo info = LoadTiny(engine.get(), 2);
  RunOptions options;
  options.users = 2;
  options.duration_s = ::sm::test::kSanitized ? 2 : 0.5;
  options.seed = seed;
  RunResult r;
  Status s = Run(engine.get(), info, options, nullptr, &r);
  INFO(s.ToString());
  REQUIRE(s.ok());
  INFO("completed " << r.completed << ", deadlock retries " << r.deadlock_retries
                    << ", lock timeouts " << r.lock_timeout_retries);
  CHECK(r.workers == 2);
  CHECK(r.completed > 10);
  CHECK(r.engine.txn_committed > 0);
  CHECK(FailedConditions(engine.get(), info, RunConditions()).empty());
  REQUIRE(engine->Verify().ok());
  Close(std::move(engine));
  // What the run committed is there after a close and reopen.
  engine = Open(name, dir.path, /*create=*/false);
  DatabaseInfo reread;
  REQUIRE(ReadDatabaseInfo(engine.get(), &reread).ok());
  CHECK(reread.warehouses == 2);
  CHECK(FailedConditions(engine.get(), info, RunConditions()).empty());
  Close(std::move(engine));
}

#define ENGINE_TESTS(name)                                                                    \
  TEST_CASE(name ": the five transactions and the conditions", "[unit][tpcc][engines]") {   \
    SKIP_UNLESS_BUILT(name);                                                                  \
    Transactions(name);                                                                       \
  }                                                                                           \
  TEST_CASE(name ": duplicates, missing rows, aborts, Add and scans", "[unit][tpcc][engines]") { \
    SKIP_UNLESS_BUILT(name);                                                                  \
    Answers(name);                                                                            \
  }                                                                                           \
  TEST_CASE(name ": a short run on two workers keeps the conditions", "[random][tpcc][engines]") { \
    SKIP_UNLESS_BUILT(name);                                                                  \
    ShortRun(name);                                                                           \
  }

ENGINE_TESTS("sqlite")
ENGINE_TESTS("lmdb")
ENGINE_TESTS("rocksdb")
ENGINE_TESTS("bdb")
ENGINE_TESTS("wiredtiger")

TEST_CASE("worker threads run one worker's functions one at a time, all before Stop returns",
          "[unit][tpcc][engines]") {
  WorkerThreads threads(2);
  std::atomic<int> running[2] = {0, 0};
  std::atomic<int> overlaps{0}, ran{0};
  for (int i = 0; i < 40; ++i) {
    const int w = i % 2;
    REQUIRE(threads
                .Spawn(
                    [&, w] {
                      if (running[w].fetch_add(1) != 0) overlaps.fetch_add(1);
                      std::this_thread::sleep_for(std::chrono::microseconds(100));
                      running[w].fetch_sub(1);
                      ran.fetch_add(1);
                    },
                    w)
                .ok());
  }
  // A function may spawn more on its own worker: they run after it.
  std::atomic<bool> inner_spawned{false};  // Catch2's assertions are for the test's thread
  std::atomic<bool> outer_ran{false};
  REQUIRE(threads
              .Spawn(
                  [&] {
                    inner_spawned = threads.Spawn([&] { ran.fetch_add(1); }, 0).ok();
                    outer_ran = true;
                  },
                  0)
              .ok());
  CHECK(threads.Spawn([] {}, 2).IsInvalidArgument());
  // Once Stop has begun, a Spawn fails (Closed): let the outer function run first.
  while (!outer_ran.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  threads.Stop();
  CHECK(inner_spawned.load());
  CHECK(overlaps.load() == 0);
  CHECK(ran.load() == 41);
  CHECK(threads.Spawn([] {}, 0).IsClosed());
}

TEST_CASE("an engine that is not built or not known is refused by name", "[unit][tpcc][engines]") {
  std::unique_ptr<Engine> engine;
  ForeignEngineOptions o;
  o.path = "/nonexistent";
  CHECK(OpenForeignEngine("nosuch", o, &engine).IsInvalidArgument());
  for (const std::string& name : KnownForeignEngineNames()) {
    if (Built(name)) continue;
    Status s = OpenForeignEngine(name, o, &engine);
    CHECK(s.code() == Status::Code::kNotSupported);
    CHECK(s.ToString().find(name) != std::string::npos);
  }
}

}  // namespace
}  // namespace sm::tpcc::test
