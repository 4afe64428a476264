// Each transaction's effects on a tiny database (2 warehouses, 100 items, 30 customers per
// district) against expectations worked out by hand from the rows before it ran.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "tests/tpcc/tpcc_test_util.h"
#include "tpcc/keys.h"
#include "tpcc/transactions.h"

namespace sm::tpcc::test {
namespace {

constexpr int64_t kDate = 1700000000000000;  // a fixed "now" for the inputs

void SetStockQuantity(Engine* e, uint16_t w, uint32_t i, int32_t quantity) {
  auto s = MustRead<StockRow>(e, TableId::kStock, StockKey(w, i));
  s.quantity = quantity;
  Put(e, TableId::kStock, StockKey(w, i), EncodeRow(s));
}

// Both access orders (transactions.h) must give the same outputs and effects.
TEST_CASE("New-Order: district counter, order rows, stock rules, total", "[unit][tpcc]") {
  const AccessOrder access = GENERATE(AccessOrder::kSpec, AccessOrder::kHotRowsLast);
  INFO(AccessOrderName(access));
  auto db = LoadTestDb(2, TinyScale(), 21);
  Engine* e = db->engine.get();
  SetStockQuantity(e, 1, 7, 12);  // 12 < 5 + 10: wraps to 12 - 5 + 91 = 98
  SetStockQuantity(e, 2, 8, 50);  // remote supplier: 50 - 3 = 47
  SetStockQuantity(e, 1, 9, 15);  // 15 >= 5 + 10: 15 - 5 = 10
  const auto w = MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(1));
  const auto d = MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 3));
  const auto c = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 3, 5));
  const auto s7 = MustRead<StockRow>(e, TableId::kStock, StockKey(1, 7));
  const auto s8 = MustRead<StockRow>(e, TableId::kStock, StockKey(2, 8));
  int32_t price[10];
  for (uint32_t i = 7; i <= 9; ++i) {
    price[i] = MustRead<ItemRow>(e, TableId::kItem, ItemKey(i)).price_cents;
  }
  REQUIRE(d.next_o_id == 31);

  NewOrderInput in;
  in.w = 1;
  in.d = 3;
  in.c = 5;
  in.ol_cnt = 3;
  in.lines[0] = {7, 1, 5};
  in.lines[1] = {8, 2, 3};
  in.lines[2] = {9, 1, 5};
  in.entry_d_us = kDate;
  NewOrderOutput out;
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  REQUIRE(NewOrder(txn.get(), in, &out, access).ok());

  CHECK_FALSE(out.rolled_back);
  CHECK(out.o_id == 31);
  CHECK_FALSE(out.all_local);
  CHECK(MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 3)).next_o_id == 32);
  auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 3, 31));
  CHECK(order.c_id == 5);
  CHECK(order.ol_cnt == 3);
  CHECK(order.carrier_id == 0);
  CHECK(order.all_local == 0);
  CHECK(order.entry_d_us == kDate);
  CHECK(Exists(e, TableId::kNewOrder, NewOrderKey(1, 3, 31)));
  CHECK(Exists(e, TableId::kOrderByCustomer, OrderByCustomerKey(1, 3, 5, 31)));

  const int64_t amount[3] = {5 * price[7], 3 * price[8], 5 * price[9]};
  for (uint8_t n = 1; n <= 3; ++n) {
    auto line = MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(1, 3, 31, n));
    CHECK(line.i_id == in.lines[n - 1].i_id);
    CHECK(line.supply_w_id == in.lines[n - 1].supply_w_id);
    CHECK(line.quantity == in.lines[n - 1].quantity);
    CHECK(line.amount_cents == amount[n - 1]);
    CHECK(line.delivery_d_us == 0);
    CHECK(out.lines[n - 1].amount_cents == amount[n - 1]);
  }
  // OL_DIST_INFO is S_DIST_03 of the supplying stock row.
  auto line2 = MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(1, 3, 31, 2));
  CHECK(std::string_view(line2.dist_info, 24) == std::string_view(s8.dist[2], 24));

  auto n7 = MustRead<StockRow>(e, TableId::kStock, StockKey(1, 7));
  auto n8 = MustRead<StockRow>(e, TableId::kStock, StockKey(2, 8));
  auto n9 = MustRead<StockRow>(e, TableId::kStock, StockKey(1, 9));
  CHECK(n7.quantity == 98);
  CHECK(n8.quantity == 47);
  CHECK(n9.quantity == 10);
  CHECK(n7.ytd == s7.ytd + 5);
  CHECK(n8.ytd == s8.ytd + 3);
  CHECK(n7.order_cnt == s7.order_cnt + 1);
  CHECK(n7.remote_cnt == s7.remote_cnt);
  CHECK(n8.remote_cnt == s8.remote_cnt + 1);
  CHECK(out.lines[0].s_quantity == 98);

  const double sum = double(amount[0] + amount[1] + amount[2]);
  const double total = sum * (1 - c.discount / 10000.0) * (1 + (w.tax + d.tax) / 10000.0);
  CHECK(std::llabs(out.total_cents - std::llround(total)) <= 1);
  CHECK(out.c_last == std::string(View(c.last)));
  CHECK(FailedConditions(e, db->info, RunConditions()).empty());

  SECTION("an unused item id rolls the order back and changes nothing") {
    const auto before7 = MustRead<StockRow>(e, TableId::kStock, StockKey(1, 7));
    NewOrderInput bad = in;
    bad.ol_cnt = 2;
    bad.lines[0] = {7, 1, 2};
    bad.lines[1] = {101, 1, 1};  // TinyScale has 100 items
    REQUIRE(NewOrder(txn.get(), bad, &out, access).ok());
    CHECK(out.rolled_back);
    CHECK(MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 3)).next_o_id == 32);
    CHECK_FALSE(Exists(e, TableId::kOrder, OrderKey(1, 3, 32)));
    CHECK_FALSE(Exists(e, TableId::kNewOrder, NewOrderKey(1, 3, 32)));
    CHECK_FALSE(Exists(e, TableId::kOrderLine, OrderLineKey(1, 3, 32, 1)));
    CHECK(MustRead<StockRow>(e, TableId::kStock, StockKey(1, 7)).quantity == before7.quantity);
    CHECK(FailedConditions(e, db->info, RunConditions()).empty());
  }
  SECTION("a missing item that is not the last line is damage, not a rollback") {
    NewOrderInput bad = in;
    bad.lines[0] = {101, 1, 1};
    CHECK(NewOrder(txn.get(), bad, &out, access).IsCorruption());
    CHECK(MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 3)).next_o_id == 32);
  }
}

// Adds customers with one last name to district (w, d): ids from 101 on, first names as given.
// They have no orders and no payments, so C_BALANCE = C_YTD_PAYMENT = 0 keeps conditions 10
// and 12.
void AddNamesakes(Engine* e, uint16_t w, uint8_t d, const std::vector<std::string>& firsts) {
  uint32_t id = 101;
  for (const std::string& first : firsts) {
    auto c = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(w, d, 1));
    Set(c.first, first);
    Set(c.last, "TESTNAME");
    c.balance_cents = 0;
    c.ytd_payment_cents = 0;
    Put(e, TableId::kCustomer, CustomerKey(w, d, id), EncodeRow(c));
    Put(e, TableId::kCustomerByName, CustomerNameKey(w, d, "TESTNAME", first, id), "");
    ++id;
  }
}

TEST_CASE("Payment: year-to-date sums, customer balance, history, bad credit", "[unit][tpcc]") {
  const AccessOrder order = GENERATE(AccessOrder::kSpec, AccessOrder::kHotRowsLast);
  const YtdWrite ytd = GENERATE(YtdWrite::kAdd, YtdWrite::kUpdate);
  INFO(AccessOrderName(order) << ", ytd " << YtdWriteName(ytd));
  auto db = LoadTestDb(2, TinyScale(), 22);
  Engine* e = db->engine.get();
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  const auto w = MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(1));
  const auto d = MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 2));

  SECTION("by id, a good-credit customer of another warehouse") {
    auto c = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(2, 9, 7));
    Set(c.credit, "GC");
    Put(e, TableId::kCustomer, CustomerKey(2, 9, 7), EncodeRow(c));
    PaymentInput in;
    in.w = 1;
    in.d = 2;
    in.c_w = 2;
    in.c_d = 9;
    in.c = 7;
    in.amount_cents = 12345;
    in.date_us = kDate;
    PaymentOutput out;
    REQUIRE(Payment(txn.get(), in, &out, order, ytd).ok());
    CHECK(out.c_id == 7);
    CHECK_FALSE(out.bad_credit);
    CHECK(MustRead<WarehouseRow>(e, TableId::kWarehouse, WarehouseKey(1)).ytd_cents ==
          w.ytd_cents + 12345);
    CHECK(MustRead<DistrictRow>(e, TableId::kDistrict, DistrictKey(1, 2)).ytd_cents ==
          d.ytd_cents + 12345);
    auto after = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(2, 9, 7));
    CHECK(after.balance_cents == c.balance_cents - 12345);
    CHECK(out.c_balance_cents == after.balance_cents);
    CHECK(after.ytd_payment_cents == c.ytd_payment_cents + 12345);
    CHECK(after.payment_cnt == c.payment_cnt + 1);
    CHECK(View(after.data) == View(c.data));
    // The history row is filed under the paying district, for the customer of warehouse 2.
    bool found = false;
    std::unique_ptr<EngineTxn> scan = e->NewTxn();
    REQUIRE(scan->Begin(TxnIsolation::kReadCommitted).ok());
    std::string prefix = KeyBuilder().U16(1).U8(2).U64(kDate).Release();
    REQUIRE(scan->Scan(TableId::kHistory, prefix, PrefixEnd(prefix), false,
                       [&](std::string_view, std::string_view v) {
                         HistoryRow h;
                         REQUIRE(DecodeRow(v, &h));
                         found = h.c_id == 7 && h.c_w_id == 2 && h.c_d_id == 9 &&
                                 h.amount_cents == 12345 && h.w_id == 1 && h.d_id == 2;
                         CHECK(View(h.data) == std::string(View(w.name)) + "    " +
                                                   std::string(View(d.name)));
                         return false;
                       }).ok());
    REQUIRE(scan->Commit().ok());
    CHECK(found);
  }

  SECTION("bad credit prepends the payment to C_DATA, truncated to 500") {
    auto c = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 2, 3));
    Set(c.credit, "BC");
    Put(e, TableId::kCustomer, CustomerKey(1, 2, 3), EncodeRow(c));
    PaymentInput in;
    in.w = 1;
    in.d = 2;
    in.c_w = 1;
    in.c_d = 2;
    in.c = 3;
    in.amount_cents = 100005;  // 1000.05
    in.date_us = kDate;
    PaymentOutput out;
    REQUIRE(Payment(txn.get(), in, &out, order, ytd).ok());
    CHECK(out.bad_credit);
    auto after = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, 2, 3));
    const std::string entry = "3 2 1 2 1 1000.05|";
    std::string expected = entry + std::string(View(c.data));
    expected.resize(std::min<size_t>(expected.size(), 500));
    CHECK(View(after.data) == expected);
  }

  SECTION("by last name: the customer at position ceil(n / 2) by first name") {
    AddNamesakes(e, 1, 2, {"DORA", "ALMA", "CARL", "BEN"});  // ids 101..104
    PaymentInput in;
    in.w = 1;
    in.d = 2;
    in.c_w = 1;
    in.c_d = 2;
    in.by_name = true;
    in.c_last = "TESTNAME";
    in.amount_cents = 500;
    in.date_us = kDate;
    PaymentOutput out;
    REQUIRE(Payment(txn.get(), in, &out, order, ytd).ok());
    CHECK(out.name_matches == 4);
    CHECK(out.c_id == 104);  // ALMA, BEN, CARL, DORA: the 2nd is BEN
    AddNamesakes(e, 1, 5, {"X", "Y", "Z"});
    in.d = 5;
    in.c_d = 5;
    REQUIRE(Payment(txn.get(), in, &out, order, ytd).ok());
    CHECK(out.name_matches == 3);
    CHECK(out.c_id == 102);  // X, Y, Z: the 2nd is Y
    // More namesakes than the lookup keeps inline (16): the 20th of 40 is F19, id 120.
    std::vector<std::string> firsts;
    for (int i = 0; i < 40; ++i) firsts.push_back((i < 10 ? "F0" : "F") + std::to_string(i));
    AddNamesakes(e, 1, 7, firsts);
    in.d = 7;
    in.c_d = 7;
    REQUIRE(Payment(txn.get(), in, &out, order, ytd).ok());
    CHECK(out.name_matches == 40);
    CHECK(out.c_id == 120);
    in.c_last = "NOSUCHNAME";
    CHECK(Payment(txn.get(), in, &out, order, ytd).IsNotFound());
  }
  CHECK(FailedConditions(e, db->info, RunConditions()).empty());
}

TEST_CASE("Order-Status: the customer's latest order and its lines", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 23);
  Engine* e = db->engine.get();
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  // The loader gave customer 11 of district 4 exactly one order; find it.
  uint32_t loaded_order = 0;
  for (uint32_t o = 1; o <= 30; ++o) {
    if (MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 4, o)).c_id == 11) loaded_order = o;
  }
  REQUIRE(loaded_order != 0);
  OrderStatusInput in;
  in.w = 1;
  in.d = 4;
  in.c = 11;
  OrderStatusOutput out;
  REQUIRE(OrderStatus(txn.get(), in, &out).ok());
  CHECK(out.o_id == loaded_order);
  auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 4, loaded_order));
  CHECK(out.line_count == order.ol_cnt);
  CHECK(out.o_carrier_id == order.carrier_id);
  auto line = MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(1, 4, loaded_order, 2));
  CHECK(out.lines[1].i_id == line.i_id);
  CHECK(out.lines[1].amount_cents == line.amount_cents);

  // A new order for the customer becomes the latest.
  NewOrderInput no;
  no.w = 1;
  no.d = 4;
  no.c = 11;
  no.ol_cnt = 5;
  for (int i = 0; i < 5; ++i) no.lines[i] = {static_cast<uint32_t>(20 + i), 1, 1};
  no.entry_d_us = kDate;
  NewOrderOutput no_out;
  REQUIRE(NewOrder(txn.get(), no, &no_out).ok());
  REQUIRE(OrderStatus(txn.get(), in, &out).ok());
  CHECK(out.o_id == 31);
  CHECK(out.line_count == 5);
  CHECK(out.o_carrier_id == 0);
  CHECK(out.o_entry_d_us == kDate);
  CHECK(out.lines[4].i_id == 24);
  CHECK(out.lines[4].delivery_d_us == 0);

  // By last name: customer 11 has name number 10, BAROUGHTBAR, unique at this scale.
  OrderStatusInput by_name;
  by_name.w = 1;
  by_name.d = 4;
  by_name.by_name = true;
  by_name.c_last = "BAROUGHTBAR";
  REQUIRE(OrderStatus(txn.get(), by_name, &out).ok());
  CHECK(out.c_id == 11);
  CHECK(out.c_last == "BAROUGHTBAR");
  CHECK(out.o_id == 31);
}

TEST_CASE("Delivery: the oldest new order of every district, then skips", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 24);
  Engine* e = db->engine.get();
  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  // Before: order 22 (the oldest undelivered) of each district, its customer and line sum.
  struct Expect {
    uint32_t c_id;
    uint8_t ol_cnt;
    int64_t sum_cents;
    CustomerRow customer;
  } expect[11];
  for (uint8_t d = 1; d <= 10; ++d) {
    auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, d, 22));
    REQUIRE(order.carrier_id == 0);
    Expect& x = expect[d];
    x.c_id = order.c_id;
    x.ol_cnt = order.ol_cnt;
    x.sum_cents = 0;
    for (uint8_t n = 1; n <= order.ol_cnt; ++n) {
      x.sum_cents += MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(1, d, 22, n)).amount_cents;
    }
    x.customer = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, d, order.c_id));
  }
  DeliveryInput in;
  in.w = 1;
  in.carrier_id = 7;
  in.date_us = kDate;
  DeliveryOutput out;
  REQUIRE(Delivery(txn.get(), in, &out).ok());
  CHECK(out.skipped == 0);
  for (uint8_t d = 1; d <= 10; ++d) {
    INFO("district " << int(d));
    CHECK(out.delivered_o_id[d - 1] == 22);
    CHECK_FALSE(Exists(e, TableId::kNewOrder, NewOrderKey(1, d, 22)));
    CHECK(Exists(e, TableId::kNewOrder, NewOrderKey(1, d, 23)));
    auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, d, 22));
    CHECK(order.carrier_id == 7);
    for (uint8_t n = 1; n <= order.ol_cnt; ++n) {
      CHECK(MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(1, d, 22, n)).delivery_d_us ==
            kDate);
    }
    auto c = MustRead<CustomerRow>(e, TableId::kCustomer, CustomerKey(1, d, expect[d].c_id));
    CHECK(c.balance_cents == expect[d].customer.balance_cents + expect[d].sum_cents);
    CHECK(c.delivery_cnt == expect[d].customer.delivery_cnt + 1);
  }
  CHECK(FailedConditions(e, db->info, RunConditions()).empty());
  // Eight more deliver orders 23..30; the tenth finds nothing in any district.
  for (int i = 0; i < 8; ++i) REQUIRE(Delivery(txn.get(), in, &out).ok());
  CHECK(out.delivered_o_id[0] == 30);
  CHECK(out.skipped == 0);
  REQUIRE(Delivery(txn.get(), in, &out).ok());
  CHECK(out.skipped == 10);
  CHECK(CountRows(e, TableId::kNewOrder) == 0);
  CHECK(FailedConditions(e, db->info, RunConditions()).empty());
}

TEST_CASE("Stock-Level: distinct items of the last 20 orders below the threshold",
          "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 25);
  Engine* e = db->engine.get();
  // Orders 11..30 are the last 20 of district 6 (D_NEXT_O_ID 31). Collect their items, and one
  // item that only order 10 or older has.
  std::set<uint32_t> window, older;
  for (uint32_t o = 1; o <= 30; ++o) {
    auto order = MustRead<OrderRow>(e, TableId::kOrder, OrderKey(1, 6, o));
    for (uint8_t n = 1; n <= order.ol_cnt; ++n) {
      auto line = MustRead<OrderLineRow>(e, TableId::kOrderLine, OrderLineKey(1, 6, o, n));
      (o >= 11 ? window : older).insert(line.i_id);
    }
  }
  uint32_t outside = 0;
  for (uint32_t i : older) {
    if (window.count(i) == 0) outside = i;
  }
  for (uint32_t i = 1; i <= 100; ++i) SetStockQuantity(e, 1, i, 50);
  auto it = window.begin();
  const uint32_t low[3] = {*it++, *it++, *it++};
  SetStockQuantity(e, 1, low[0], 5);
  SetStockQuantity(e, 1, low[1], 9);
  SetStockQuantity(e, 1, low[2], 14);  // below 15, not below 10
  if (outside != 0) SetStockQuantity(e, 1, outside, 1);

  std::unique_ptr<EngineTxn> txn = e->NewTxn();
  StockLevelInput in;
  in.w = 1;
  in.d = 6;
  in.threshold = 10;
  StockLevelOutput out;
  REQUIRE(StockLevel(txn.get(), in, &out).ok());
  CHECK(out.low_stock == 2);
  in.threshold = 15;
  REQUIRE(StockLevel(txn.get(), in, &out).ok());
  CHECK(out.low_stock == 3);
  in.threshold = 51;
  REQUIRE(StockLevel(txn.get(), in, &out).ok());
  CHECK(out.low_stock == window.size());
}

// The engine keeps one cursor for a transaction's scans and hands a forward scan's visitor the
// rows of a leaf under its latch, so a scan that a visitor starts is refused (the adapter's
// contract), and the scan it was called from goes on undisturbed.
TEST_CASE("an engine transaction's scans, one after another, and a nested one refused",
          "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 22);
  std::unique_ptr<EngineTxn> txn = db->engine->NewTxn();
  REQUIRE(txn->Begin(TxnIsolation::kSerializable).ok());
  std::vector<uint32_t> ids;
  auto scan_items = [&](uint32_t from, uint32_t to, bool reverse) {  // to 0: to the end
    ids.clear();
    return txn->Scan(TableId::kItem, ItemKey(from), to == 0 ? std::string() : ItemKey(to), reverse,
                     [&](std::string_view key, std::string_view value) {
                       uint32_t id = 0;
                       REQUIRE(KeyReader(key).U32(&id));
                       ItemRow row;
                       REQUIRE(DecodeRow(value, &row));
                       ids.push_back(id);
                       return true;
                     });
  };
  REQUIRE(scan_items(1, 4, false).ok());
  CHECK(ids == std::vector<uint32_t>{1, 2, 3});
  REQUIRE(scan_items(50, 52, true).ok());
  CHECK(ids == std::vector<uint32_t>{51, 50});
  for (bool reverse : {false, true}) {
    CAPTURE(reverse);
    std::vector<uint8_t> districts;
    std::vector<Status> nested;
    REQUIRE(txn->Scan(TableId::kDistrict, DistrictKey(1, 1), DistrictKey(1, 4), reverse,
                      [&](std::string_view key, std::string_view) {
                        KeyReader reader(key);
                        uint16_t w = 0;
                        uint8_t d = 0;
                        REQUIRE((reader.U16(&w) && reader.U8(&d)));
                        districts.push_back(d);
                        nested.push_back(scan_items(1, 3, false));
                        return true;
                      })
                .ok());
    CHECK(districts == (reverse ? std::vector<uint8_t>{3, 2, 1} : std::vector<uint8_t>{1, 2, 3}));
    REQUIRE(nested.size() == 3);
    for (const Status& s : nested) CHECK(s.IsInvalidArgument());
  }
  // A long scan crosses leaves batch by batch: every item, in order.
  REQUIRE(scan_items(1, 0, false).ok());
  REQUIRE(!ids.empty());
  for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == i + 1);
  REQUIRE(txn->Commit().ok());
}

}  // namespace
}  // namespace sm::tpcc::test
