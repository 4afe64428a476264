// The other engines' adapters (tpcc/engines/) against the TPC-C tests our adapter passes: each
// transaction's effects and the consistency conditions on a tiny database, the adapter's
// answers (duplicates, missing rows, aborts, scans in both directions), and a short
// run of the mix on two workers followed by the conditions, after a close and reopen too. Then
// the YCSB-like workload (tpcc/ycsb.h) on every engine, ours included: a small load, direct
// reads and writes, and each workload for a fraction of a second with its checks.
//
// An engine whose library this build did not find is skipped: its cases print a line that
// ctest reads as a skip (tests/catch_tiers.cmake, SKIP_REGULAR_EXPRESSION) and pass.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
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
#include "tpcc/ycsb.h"

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

// The engine, with no table open yet.
std::unique_ptr<Engine> OpenEngine(const std::string& name, const std::string& path, bool create,
                                   unsigned workers) {
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
  return engine;
}

std::unique_ptr<Engine> Open(const std::string& name, const std::string& path, bool create,
                             unsigned workers = 1) {
  std::unique_ptr<Engine> engine = OpenEngine(name, path, create, workers);
  bool created = false;
  Status s = engine->OpenSchema(Schema::kTpcc, create, &created);
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

// ---- YCSB ----------------------------------------------------------------------------------

constexpr uint64_t kYcsbRecords = 2000;

// Our engine (on the in-memory file system) or another (in a scratch directory), two workers.
struct YcsbDb {
  explicit YcsbDb(const std::string& name) : name(name), dir(name), fs(7) {}
  std::unique_ptr<Engine> Open() {
    if (name != "sm") return OpenEngine(name, dir.path, /*create=*/true, 2);
    std::unique_ptr<SmEngine> ours;
    Status s = SmEngine::Open(TestEngineOptions(&fs, 2), &ours);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return ours;
  }
  std::string name;
  Scratch dir;
  io::FaultInjectionFileSystem fs;
};

void Require(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Every record in key order: ascending, each with a value of its record. Returns the count.
uint64_t ScanAll(Engine* e) {
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  Require(txn->Begin(TxnIsolation::kReadCommitted));
  uint64_t count = 0, previous = 0;
  bool ordered = true, values = true;
  auto visit = [&](std::string_view k, std::string_view v) {
    const uint64_t n = YcsbRecordOf(k);
    ordered = ordered && k.size() == kYcsbKeyBytes && (count == 0 || n > previous);
    values = values && YcsbValueMatches(n, v);
    previous = n;
    ++count;
    return true;
  };
  Require(txn->Scan(TableId::kUsertable, {}, {}, false, visit));
  Require(txn->Commit());
  CHECK(ordered);
  CHECK(values);
  return count;
}

// Runs one operation in its own transaction; its status.
template <typename Op>
Status InOwnTxn(Engine* e, Op&& op) {
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  Require(txn->Begin(TxnIsolation::kSerializable));
  Status s = op(txn.get());
  if (s.ok()) return txn->Commit();
  txn->Abort().PermitUnchecked();
  return s;
}

std::string ReadRecord(Engine* e, uint64_t record) {
  std::string value;
  Require(InOwnTxn(
      e, [&](EngineTxn* t) { return t->Get(TableId::kUsertable, YcsbKey(record), &value); }));
  return value;
}

// Reads, an update, an insert and a scan at the end of the table, through the adapter.
void YcsbAnswers(Engine* e) {
  CHECK(ScanAll(e) == kYcsbRecords);
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{977}, kYcsbRecords - 1}) {
    std::string expected;
    YcsbValue(n, 0, &expected);
    CHECK(ReadRecord(e, n) == expected);
  }
  std::string updated;
  YcsbValue(17, 7, &updated);
  Require(InOwnTxn(
      e, [&](EngineTxn* t) { return t->Update(TableId::kUsertable, YcsbKey(17), updated); }));
  CHECK(ReadRecord(e, 17) == updated);
  CHECK(YcsbValueMatches(17, updated));
  CHECK_FALSE(YcsbValueMatches(18, updated));
  std::string inserted;
  YcsbValue(kYcsbRecords, 0, &inserted);
  Require(InOwnTxn(e, [&](EngineTxn* t) {
    return t->Insert(TableId::kUsertable, YcsbKey(kYcsbRecords), inserted);
  }));
  CHECK(ReadRecord(e, kYcsbRecords) == inserted);
  Status again = InOwnTxn(e, [&](EngineTxn* t) {
    return t->Insert(TableId::kUsertable, YcsbKey(kYcsbRecords), inserted);
  });
  CHECK(again.IsDuplicate());
  std::vector<uint64_t> scanned;
  Require(InOwnTxn(e, [&](EngineTxn* t) {
    return t->Scan(TableId::kUsertable, YcsbKey(kYcsbRecords - 10), {}, false,
                   [&](std::string_view k, std::string_view) {
                     scanned.push_back(YcsbRecordOf(k));
                     return scanned.size() < 100;
                   });
  }));
  REQUIRE(scanned.size() == 11);  // the table ends: 10 loaded records and the inserted one
  for (size_t i = 0; i < scanned.size(); ++i) CHECK(scanned[i] == kYcsbRecords - 10 + i);
}

// Every workload with both distributions for a fraction of a second: the run's own checks (every
// read finds its value, scans ascend with the right count, inserts land) must all hold.
void YcsbWorkloads(Engine* e, const YcsbInfo& info) {
  for (YcsbWorkload w : kYcsbWorkloads) {
    for (YcsbDistribution d : kYcsbDistributions) {
      const uint64_t before = ScanAll(e);
      YcsbRunOptions ro;
      ro.workload = w;
      ro.distribution = d;
      ro.users = 2;
      ro.duration_s = 0.1;
      ro.interval_s = 0;
      YcsbRunResult r;
      INFO(YcsbWorkloadName(w) << " " << YcsbDistributionName(d));
      Require(YcsbRun(e, info, ro, {}, &r));
      CHECK(r.ops > 0);
      const std::array<uint32_t, kYcsbOpCount> mix = YcsbMix(w);
      for (int op = 0; op < kYcsbOpCount; ++op) {
        if (mix[op] == 0) CHECK(r.ops_by_type[op] == 0);
      }
      const uint64_t after = ScanAll(e);
      if (w == YcsbWorkload::kE) {
        CHECK(r.scanned_records >= r.ops_by_type[static_cast<int>(YcsbOp::kScan)]);
        CHECK(after >= before + r.ops_by_type[static_cast<int>(YcsbOp::kInsert)]);
      } else {
        CHECK(after == before);
      }
    }
  }
}

void Ycsb(const std::string& name) {
  YcsbDb db(name);
  std::unique_ptr<Engine> engine = db.Open();
  YcsbInfo info;
  CHECK(OpenYcsb(engine.get(), &info).IsNotFound());
  YcsbLoadOptions lo;
  lo.records = kYcsbRecords;
  lo.batch = 128;
  YcsbLoadResult load;
  Require(YcsbLoad(engine.get(), lo, &load));
  CHECK(load.records == kYcsbRecords);
  CHECK(YcsbLoad(engine.get(), lo, &load).IsInvalidArgument());  // loaded already
  YcsbAnswers(engine.get());
  Require(engine->Close());
  engine = db.Open();
  Require(OpenYcsb(engine.get(), &info));
  CHECK(info.records == kYcsbRecords);
  DatabaseInfo tpcc;
  CHECK(OpenLoaded(engine.get(), 0, &tpcc).IsNotFound());  // a YCSB database holds no TPC-C
  YcsbWorkloads(engine.get(), info);
  Require(engine->Close());
}

#define YCSB_TESTS(name)                                                                      \
  TEST_CASE(name ": a YCSB load, its answers and every workload", "[random][tpcc][engines]") { \
    SKIP_UNLESS_BUILT(name);                                                                  \
    Ycsb(name);                                                                               \
  }

TEST_CASE("sm: a YCSB load, its answers and every workload", "[random][tpcc][engines]") {
  Ycsb("sm");
}
YCSB_TESTS("sqlite")
YCSB_TESTS("lmdb")
YCSB_TESTS("rocksdb")
YCSB_TESTS("bdb")
YCSB_TESTS("wiredtiger")

TEST_CASE("ycsb: keys in number order, values per record, the request distributions",
          "[unit][tpcc][engines]") {
  CHECK(YcsbKey(0x0102030405060708ull) == std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  for (uint64_t n : {uint64_t{0}, uint64_t{255}, uint64_t{256}, uint64_t{1} << 40}) {
    CHECK(YcsbRecordOf(YcsbKey(n)) == n);
    CHECK(YcsbKey(n) < YcsbKey(n + 1));  // memcmp order is number order
  }
  std::string v;
  YcsbValue(5, 9, &v);
  CHECK(v.size() == kYcsbValueBytes);
  CHECK(YcsbValueMatches(5, v));
  v[50] ^= 1;
  CHECK_FALSE(YcsbValueMatches(5, v));
  for (YcsbWorkload w : kYcsbWorkloads) {
    const std::array<uint32_t, kYcsbOpCount> mix = YcsbMix(w);
    CHECK(mix[0] + mix[1] + mix[2] + mix[3] == 100);
  }
  // Zipfian: in range, skewed (the hottest record draws far more than its uniform share), and
  // the hottest records are not all at the start of the key space.
  constexpr uint64_t kRecords = 10000;
  constexpr int kDraws = 200000;
  Rng rng(3);
  YcsbKeyChooser zipf(YcsbDistribution::kZipfian, kRecords);
  std::vector<int> hits(kRecords);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t n = zipf.Next(rng);
    REQUIRE(n < kRecords);
    ++hits[n];
  }
  const auto hottest = std::max_element(hits.begin(), hits.end()) - hits.begin();
  CHECK(hits[hottest] > 50 * kDraws / static_cast<int>(kRecords));
  int hot_in_first_tenth = 0, hot = 0;
  for (uint64_t n = 0; n < kRecords; ++n) {
    if (hits[n] <= 10 * kDraws / static_cast<int>(kRecords)) continue;
    ++hot;
    if (n < kRecords / 10) ++hot_in_first_tenth;
  }
  CHECK(hot > 0);
  CHECK(hot_in_first_tenth < hot);
  YcsbKeyChooser uniform(YcsbDistribution::kUniform, kRecords);
  for (int i = 0; i < 1000; ++i) CHECK(uniform.Next(rng) < kRecords);
}

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
