// The loader (clause 4.3): row counts, initial values, the twelve consistency conditions right
// after a load, determinism, reuse and refusal; and that the checker notices damage.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "tests/test_util.h"
#include "tests/tpcc/tpcc_test_util.h"
#include "tpcc/keys.h"
#include "tpcc/random.h"

namespace sm::tpcc::test {
namespace {

// Every row of a table as key -> value.
std::map<std::string, std::string> Dump(Engine* engine, TableId table) {
  std::map<std::string, std::string> rows;
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kReadCommitted).ok());
  REQUIRE(txn->Scan(table, {}, {}, false, [&](std::string_view k, std::string_view v) {
                rows.emplace(std::string(k), std::string(v));
                return true;
              }).ok());
  REQUIRE(txn->Commit().ok());
  return rows;
}

void CheckLoadedDatabase(TestDb& db, uint32_t W, const Scale& scale) {
  Engine* e = db.engine.get();
  const uint64_t C = scale.customers_per_district;
  CHECK(CountRows(e, TableId::kItem) == scale.items);
  CHECK(CountRows(e, TableId::kWarehouse) == W);
  CHECK(CountRows(e, TableId::kDistrict) == W * 10);
  CHECK(CountRows(e, TableId::kStock) == W * uint64_t(scale.items));
  CHECK(CountRows(e, TableId::kCustomer) == W * 10 * C);
  CHECK(CountRows(e, TableId::kCustomerByName) == W * 10 * C);
  CHECK(CountRows(e, TableId::kHistory) == W * 10 * C);
  CHECK(CountRows(e, TableId::kOrder) == W * 10 * C);
  CHECK(CountRows(e, TableId::kOrderByCustomer) == W * 10 * C);
  CHECK(CountRows(e, TableId::kNewOrder) == W * 10 * uint64_t(scale.new_orders_per_district()));
  const uint64_t lines = CountRows(e, TableId::kOrderLine);
  CHECK(lines >= W * 10 * C * 5);
  CHECK(lines <= W * 10 * C * 15);
  CHECK(db.load.rows == CountRows(e, TableId::kItem) + CountRows(e, TableId::kWarehouse) +
                            CountRows(e, TableId::kDistrict) + CountRows(e, TableId::kStock) +
                            3 * W * 10 * C + 2 * W * 10 * C + lines +
                            CountRows(e, TableId::kNewOrder));
  CHECK(FailedConditions(e, db.info, AllConditions()).empty());
}

TEST_CASE("a reduced-scale load has the populations and passes all twelve conditions",
          "[unit][tpcc]") {
  const Scale scale{2000, 300};
  auto db = LoadTestDb(2, scale, 11, /*workers=*/2);
  CheckLoadedDatabase(*db, 2, scale);
  Engine* e = db->engine.get();

  // Initial values of clause 4.3.3.1.
  auto w = MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(2));
  CHECK(w.ytd_cents == 3000000);  // 10.00 per customer's history row (300,000.00 at full scale)
  CHECK(w.tax >= 0);
  CHECK(w.tax <= 2000);
  CHECK(View(w.zip).substr(4) == "11111");
  auto d = MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 7));
  CHECK(d.ytd_cents == 300000);
  CHECK(d.next_o_id == 301);
  auto c1 = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 1, 1));
  CHECK(View(c1.last) == "BARBARBAR");  // customer 1 has name number 0
  auto c2 = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 1, 2));
  CHECK(View(c2.last) == "BARBAROUGHT");
  CHECK(c1.balance_cents == -1000);
  CHECK(c1.ytd_payment_cents == 1000);
  CHECK(c1.payment_cnt == 1);
  CHECK(c1.delivery_cnt == 0);
  CHECK(c1.credit_lim_cents == 5000000);
  CHECK(View(c1.middle) == "OE");
  CHECK(View(c1.data).size() >= 300);
  CHECK(View(c1.data).size() <= 500);

  // 10 % ORIGINAL and 10 % BC (within a few standard deviations of 2,000 and 6,000 draws).
  int original = 0;
  for (const auto& [k, v] : Dump(e, TableId::kItem)) {
    ItemRow item;
    REQUIRE(DecodeRow(v, &item));
    original += View(item.data).find("ORIGINAL") != std::string_view::npos;
    CHECK(item.price_cents >= 100);
    CHECK(item.price_cents <= 10000);
  }
  CHECK(original > 120);
  CHECK(original < 280);
  int bc = 0;
  for (const auto& [k, v] : Dump(e, TableId::kCustomer)) {
    CustomerRow c;
    REQUIRE(DecodeRow(v, &c));
    bc += View(c.credit) == "BC";
  }
  CHECK(bc > 450);
  CHECK(bc < 750);

  // Orders: O_C_ID is a permutation of the customers in each district; carriers and lines.
  std::set<uint32_t> customers;
  for (uint32_t o = 1; o <= 300; ++o) {
    auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(2, 4, o));
    customers.insert(order.c_id);
    CHECK(order.ol_cnt >= 5);
    CHECK(order.ol_cnt <= 15);
    if (o < 211) {
      CHECK(order.carrier_id >= 1);
      CHECK(order.carrier_id <= 10);
    } else {
      CHECK(order.carrier_id == 0);
    }
    auto line = MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(2, 4, o, 1));
    CHECK(line.quantity == 5);
    CHECK((o < 211 ? line.amount_cents == 0 : line.amount_cents > 0));
    CHECK((o < 211 ? line.delivery_d_us != 0 : line.delivery_d_us == 0));
  }
  CHECK(customers.size() == 300);
  CHECK(*customers.begin() == 1);
  CHECK(*customers.rbegin() == 300);

  // The load is recorded; the NURand constant of C_LAST is kept for the run's rule.
  DatabaseInfo info;
  REQUIRE(ReadDatabaseInfo(e, &info).ok());
  CHECK(info.warehouses == 2);
  CHECK(info.scale == scale);
  CHECK(info.load_constants.c_last == db->info.load_constants.c_last);
  CHECK(info.fresh());
}

TEST_CASE("a load is the same for a seed whatever the number of workers", "[unit][tpcc]") {
  const Scale scale{500, 60};
  auto one = LoadTestDb(1, scale, 42, 1);
  auto two = LoadTestDb(1, scale, 42, 2);
  for (TableId t : {TableId::kItem, TableId::kStock, TableId::kCustomer, TableId::kOrder,
                    TableId::kOrderLine, TableId::kCustomerByName}) {
    INFO(TableName(t));
    auto a = Dump(one->engine.get(), t);
    auto b = Dump(two->engine.get(), t);
    CHECK(a.size() == b.size());
    // Dates differ (the load time); everything else must not.
    if (t != TableId::kCustomer && t != TableId::kOrder && t != TableId::kOrderLine) {
      CHECK(a == b);
    }
  }
}

// A 16-bit warehouse counter wrapped at the largest count and never ended (memory growing
// without bound); the units are built without loading them.
TEST_CASE("the load units end at the largest warehouse count", "[unit][tpcc]") {
  const Scale scale = Scale::Standard();
  // Per warehouse: 10 order units, 10 stock chunks, 10 customer units, 1 warehouse unit; then
  // 10 item chunks once.
  const auto units = [&](uint32_t w) { return size_t(w) * (10 + 10 + 10 + 1) + 10; };
  CHECK(LoadUnitCount(1, scale) == units(1));
  CHECK(LoadUnitCount(kMaxWarehouses - 1, scale) == units(kMaxWarehouses - 1));
  CHECK(LoadUnitCount(kMaxWarehouses, scale) == units(kMaxWarehouses));
  // The estimate of the space a load takes grows with the warehouses, its log part bounded.
  CHECK(ExpectedLoadBytes(2, scale) > ExpectedLoadBytes(1, scale));
  CHECK(ExpectedLoadBytes(kMaxWarehouses, scale) <
        ExpectedRows(kMaxWarehouses, scale) * kDataBytesPerRow + kLogBytesMax + 1);
}

TEST_CASE("a loaded database is refused a second load and a different warehouse count",
          "[unit][tpcc]") {
  auto db = LoadTestDb(1, Scale{100, 30}, 3);
  LoadOptions again;
  again.scale = Scale{100, 30};
  LoadResult result;
  Status s = Load(db->engine.get(), again, &result);
  CHECK(s.IsInvalidArgument());
  DatabaseInfo info;
  CHECK(OpenLoaded(db->engine.get(), 1, &info).ok());
  CHECK(OpenLoaded(db->engine.get(), 0, &info).ok());
  s = OpenLoaded(db->engine.get(), 2, &info);
  CHECK(s.IsInvalidArgument());
  CHECK(s.ToString().find("loaded with 1 warehouses") != std::string::npos);
  LoadOptions zero;
  zero.warehouses = 0;
  CHECK(Load(db->engine.get(), zero, &result).IsInvalidArgument());
  // Nothing changed.
  CHECK(FailedConditions(db->engine.get(), db->info, AllConditions()).empty());
}

TEST_CASE("a database survives close and reopen with its load", "[unit][tpcc]") {
  auto fs = std::make_unique<io::FaultInjectionFileSystem>(5);
  SmEngineOptions options = TestEngineOptions(fs.get(), 1);
  {
    std::unique_ptr<SmEngine> engine;
    REQUIRE(SmEngine::Open(options, &engine).ok());
    LoadOptions lo;
    lo.scale = Scale{100, 30};
    LoadResult result;
    REQUIRE(Load(engine.get(), lo, &result).ok());
    REQUIRE(engine->Close().ok());
  }
  std::unique_ptr<SmEngine> engine;
  REQUIRE(SmEngine::Open(options, &engine).ok());
  DatabaseInfo info;
  REQUIRE(OpenLoaded(engine.get(), 1, &info).ok());
  CHECK(info.scale == (Scale{100, 30}));
  CHECK(FailedConditions(engine.get(), info, AllConditions()).empty());
  REQUIRE(RecordRunStart(engine.get(), &info).ok());
  CHECK_FALSE(info.fresh());
  DatabaseInfo again;
  REQUIRE(ReadDatabaseInfo(engine.get(), &again).ok());
  CHECK(again.runs == 1);
  REQUIRE(engine->Close().ok());
}

TEST_CASE("a database with a half-finished load is refused", "[unit][tpcc]") {
  auto fs = std::make_unique<io::FaultInjectionFileSystem>(6);
  std::unique_ptr<SmEngine> engine;
  REQUIRE(SmEngine::Open(TestEngineOptions(fs.get(), 1), &engine).ok());
  bool created = false;
  REQUIRE(engine->OpenSchema(Schema::kTpcc, true, &created).ok());
  CHECK(created);
  Put(engine.get(), TableId::kItem, ItemKey(1), "x");
  LoadOptions lo;
  lo.scale = Scale{100, 30};
  LoadResult result;
  Status s = Load(engine.get(), lo, &result);
  CHECK(s.IsInvalidArgument());
  CHECK(s.ToString().find("did not finish") != std::string::npos);
  DatabaseInfo info;
  CHECK(OpenLoaded(engine.get(), 1, &info).IsNotFound());
  REQUIRE(engine->Close().ok());
}

TEST_CASE("the consistency checker finds damage", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 8);
  Engine* e = db->engine.get();
  auto w = MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(1));
  w.ytd_cents += 1;
  Put(e, TableId::kWarehouse, WarehouseKey(1), EncodeRow(w));
  CHECK(FailedConditions(e, db->info, AllConditions()) == std::vector<int>{1, 8});
  w.ytd_cents -= 1;
  Put(e, TableId::kWarehouse, WarehouseKey(1), EncodeRow(w));

  Remove(e, TableId::kOrderLine, OrderLineKey(1, 2, 5, 1));  // a delivered order's line
  CHECK(FailedConditions(e, db->info, AllConditions()) == std::vector<int>{4, 6});

  Remove(e, TableId::kNewOrder, NewOrderKey(1, 3, 25));  // a hole in the middle
  CHECK(FailedConditions(e, db->info, {3, 5, 11}) == std::vector<int>{3, 5, 11});

  auto c = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 4, 9));
  c.balance_cents += 100;
  Put(e, TableId::kCustomer, CustomerKey(1, 4, 9), EncodeRow(c));
  CHECK(FailedConditions(e, db->info, {10, 12}) == std::vector<int>{10, 12});

  auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 5, 3));
  order.carrier_id = 0;
  Put(e, TableId::kOrder, OrderKey(1, 5, 3), EncodeRow(order));
  CHECK(FailedConditions(e, db->info, {5, 7}) == std::vector<int>{5, 7});

  auto d = MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 6));
  d.next_o_id += 1;
  Put(e, TableId::kDistrict, DistrictKey(1, 6), EncodeRow(d));
  CHECK(FailedConditions(e, db->info, {2}) == std::vector<int>{2});
}

// Regression for a buffer-pool race seen as stale pages after a clean close: a checkpoint's
// write-back of a page (FlushAll) and the background writer's write-back of an older copy of
// the same page can both be in flight, and the older one can reach the file last, leaving the
// frame clean over a stale page. The loader checkpoints at its end while the writer runs, so a
// load, close and reopen showed it as missing rows and a B-tree whose fences disagree with its
// parent's separators (about 1 in 150 loads of this size on a loaded two-core machine). Fixed
// by one write-back per frame at a time (BufferPool invariant 7; the deterministic regression
// is in tests/storage/buffer_pool_test.cc); this loop stays as the end-to-end check.
TEST_CASE("checkpoint racing the background writer leaves no stale page", "[.slow][tpcc]") {
  const uint64_t seed = ::sm::test::TestSeed("checkpoint racing the background writer");
  for (int iter = 0; iter < 300; ++iter) {
    INFO("iteration " << iter);
    io::FaultInjectionFileSystem fs(seed + iter);
    SmEngineOptions options = TestEngineOptions(&fs, 2);
    DatabaseInfo info;
    {
      std::unique_ptr<SmEngine> engine;
      REQUIRE(SmEngine::Open(options, &engine).ok());
      LoadOptions lo;
      lo.scale = Scale{1000, 300};
      lo.seed = seed + iter;
      LoadResult loaded;
      REQUIRE(Load(engine.get(), lo, &loaded).ok());
      info = loaded.info;
      REQUIRE(engine->Verify().ok());
      REQUIRE(engine->Close().ok());
    }
    std::unique_ptr<SmEngine> engine;
    REQUIRE(SmEngine::Open(options, &engine).ok());
    REQUIRE(OpenLoaded(engine.get(), 1, &info).ok());
    Status verify = engine->Verify();
    INFO(verify.ToString());
    CHECK(verify.ok());
    CHECK(FailedConditions(engine.get(), info, AllConditions()).empty());
    REQUIRE(engine->Close().ok());
  }
}

// The full standard load of one warehouse (clause 4.3.3.1: 100,000 items and stock, 30,000
// customers, orders and history rows, ~300,000 order lines) on the in-memory file system.
TEST_CASE("a full one-warehouse load passes all twelve conditions", "[unit][tpcc][full]") {
  if (::sm::test::kSanitized) {
    WARN("skipped under the sanitizers (the reduced-scale load test covers the same code)");
    return;
  }
  auto start = std::chrono::steady_clock::now();
  auto db = LoadTestDb(1, Scale::Standard(), 1, /*workers=*/2, /*pool_bytes=*/512u << 20);
  std::printf("[full load] %llu rows in %.2f s\n",
              static_cast<unsigned long long>(db->load.rows), db->load.seconds);
  CheckLoadedDatabase(*db, 1, Scale::Standard());
  auto c = MustRead<CustomerRow>(db->engine.get(), TableId::kCustomer, CustomerKey(1, 10, 1000));
  CHECK(View(c.last) == LastName(999));
  // The initial values of clause 4.3.3.1 at the standard scale.
  CHECK(MustRead<WarehouseRow>(db->engine.get(), TableId::kWarehouse, WarehouseKey(1)).ytd_cents ==
        30000000);
  auto d = MustRead<DistrictRow>(db->engine.get(), TableId::kDistrict, DistrictKey(1, 10));
  CHECK(d.ytd_cents == 3000000);
  CHECK(d.next_o_id == 3001);
  std::printf("[full load] load and checks: %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace
}  // namespace sm::tpcc::test
