// Keys (memcmp order equals tuple order), row encoding, the latency histogram and --mix.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/test_util.h"
#include "tpcc/driver.h"
#include "tpcc/histogram.h"
#include "tpcc/keys.h"
#include "tpcc/rows.h"

namespace sm::tpcc {
namespace {

int Sign(int x) { return (x > 0) - (x < 0); }
int Compare(const std::string& a, const std::string& b) {
  int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return Sign(c);
  return Sign(static_cast<int>(a.size()) - static_cast<int>(b.size()));
}

TEST_CASE("key order is tuple order", "[random][tpcc]") {
  const uint64_t seed = ::sm::test::TestSeed("tpcc key order");
  std::mt19937_64 rng(seed);
  auto small_string = [&] {
    std::string s(rng() % 4, 'a');
    for (char& c : s) c = "a\0b\xff"[rng() % 4];
    return s;
  };
  using Tuple = std::tuple<uint16_t, uint8_t, std::string, std::string, uint32_t>;
  for (int i = 0; i < 20000; ++i) {
    Tuple a{uint16_t(rng() % 3 * 300), uint8_t(rng() % 3), small_string(), small_string(),
            uint32_t(rng() % 3 * 70000)};
    Tuple b{uint16_t(rng() % 3 * 300), uint8_t(rng() % 3), small_string(), small_string(),
            uint32_t(rng() % 3 * 70000)};
    auto key = [](const Tuple& t) {
      return CustomerNameKey(std::get<0>(t), std::get<1>(t), std::get<2>(t), std::get<3>(t),
                             std::get<4>(t));
    };
    int expected = a < b ? -1 : b < a ? 1 : 0;
    REQUIRE(Compare(key(a), key(b)) == expected);
  }
  // Composite numeric keys: the order of (w, d, o, n).
  CHECK(OrderLineKey(1, 2, 3, 15) < OrderLineKey(1, 2, 4, 1));
  CHECK(OrderLineKey(1, 10, 1, 1) > OrderLineKey(1, 9, 99999, 15));
  CHECK(OrderLineKey(256, 1, 1, 1) > OrderLineKey(255, 10, 1, 1));
  CHECK(StockKey(1, 100000) < StockKey(2, 1));
}

TEST_CASE("prefix scans: every entry of a secondary key and nothing else", "[unit][tpcc]") {
  const std::string prefix = CustomerNamePrefix(1, 2, "ABLE");
  CHECK(CustomerNameKey(1, 2, "ABLE", "ZED", 7).compare(0, prefix.size(), prefix) == 0);
  CHECK(CustomerNameKey(1, 2, "ABLEX", "A", 7).compare(0, prefix.size(), prefix) != 0);
  CHECK(CustomerNameKey(1, 2, "ABLE", "ZED", 7) < PrefixEnd(prefix));
  CHECK(CustomerNameKey(1, 2, "ABLEX", "A", 7) > prefix);
  CHECK(PrefixEnd(std::string("\x01\xff\xff", 3)) == std::string("\x02"));
  CHECK(PrefixEnd(std::string("\xff", 1)).empty());
  std::string order_key = OrderByCustomerKey(3, 4, 5, 77);
  KeyReader r(std::string_view(order_key).substr(order_key.size() - 4));
  uint32_t o = 0;
  CHECK(r.U32(&o));
  CHECK(o == 77);
  // A zero byte in a string is escaped as 0x00 0xFF; the string ends with 0x00 0x01.
  CHECK(CustomerNamePrefix(1, 2, std::string("a\0b", 3)) ==
        std::string("\x00\x01\x02" "a\x00\xff" "b\x00\x01", 9));
  const std::string name_key = CustomerNameKey(1, 2, std::string("a\0b", 3), "c", 9);
  KeyReader s(name_key);
  uint16_t w = 0;
  uint8_t d = 0;
  CHECK(s.U16(&w));
  CHECK(s.U8(&d));
  CHECK(s.SkipString());
  CHECK(s.SkipString());
  uint16_t w2 = 0;
  CHECK(s.U16(&w2));
  CHECK(w2 == 1);
}

TEST_CASE("rows round trip and drop the unused tail of their last string", "[unit][tpcc]") {
  CustomerRow c{};
  c.balance_cents = -1000;
  Set(c.last, "BARBARBAR");
  Set(c.data, std::string(300, 'x'));
  std::string bytes = EncodeRow(c);
  CHECK(bytes.size() == offsetof(CustomerRow, data) + 300);
  CustomerRow back;
  std::memset(&back, 0x5a, sizeof back);
  REQUIRE(DecodeRow(bytes, &back));
  CHECK(std::memcmp(&back, &c, sizeof c) == 0);
  CHECK(View(back.last) == "BARBARBAR");
  CHECK(View(back.data).size() == 300);
  CHECK_FALSE(DecodeRow(bytes.substr(0, 10), &back));
  CHECK_FALSE(DecodeRow(bytes + std::string(sizeof c, 'y'), &back));
  OrderRow o{};
  CHECK(EncodeRow(o).size() == sizeof(OrderRow));
  Set(c.first, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");  // truncated to the column's 16
  CHECK(View(c.first) == "ABCDEFGHIJKLMNOP");
}

TEST_CASE("a row's field reads as in the decoded row, and only from a valid row", "[unit][tpcc]") {
  StockRow s{};
  s.quantity = -17;
  s.ytd = 123456;
  Set(s.data, "ORIGINAL stock");
  const std::string bytes = EncodeRow(s);
  int32_t quantity = 0;
  REQUIRE(DecodeField(bytes, &StockRow::quantity, &quantity));
  CHECK(quantity == -17);
  uint32_t ytd = 0;
  REQUIRE(DecodeField(bytes, &StockRow::ytd, &ytd));
  CHECK(ytd == 123456);
  OrderLineRow ol{};
  ol.i_id = 98765;
  ol.supply_w_id = 3;
  uint32_t i_id = 0;
  REQUIRE(DecodeField(EncodeRow(ol), &OrderLineRow::i_id, &i_id));
  CHECK(i_id == 98765);
  CHECK_FALSE(DecodeField(bytes.substr(0, 10), &StockRow::quantity, &quantity));
  CHECK_FALSE(DecodeField(bytes + std::string(sizeof s, 'y'), &StockRow::quantity, &quantity));
}

TEST_CASE("histogram percentiles are within 1/16 of the exact ones", "[random][tpcc]") {
  const uint64_t seed = ::sm::test::TestSeed("tpcc histogram");
  std::mt19937_64 rng(seed);
  Histogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = rng() % 1000000 + (rng() % 100 == 0 ? 50000000 : 0);
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  Histogram::Snapshot s = h.Read();
  CHECK(s.count == values.size());
  CHECK(s.max == values.back());
  for (double q : {0.5, 0.9, 0.95, 0.99}) {
    const double exact = double(values[size_t(q * values.size()) - 1]);
    const double got = double(s.Quantile(q));
    INFO("q " << q << " exact " << exact << " got " << got);
    CHECK(std::abs(got - exact) <= exact / 16 + 1);
  }
  for (int b = 0; b < Histogram::kBuckets - 1; ++b) {
    REQUIRE(Histogram::LowerBound(b) + Histogram::Width(b) == Histogram::LowerBound(b + 1));
    REQUIRE(Histogram::BucketOf(Histogram::LowerBound(b)) == b);
  }
  CHECK(Histogram::BucketOf(~uint64_t(0)) == Histogram::kBuckets - 1);
}

TEST_CASE("the --mix option parses weights and single transactions, and refuses the rest", "[unit][tpcc]") {
  Mix mix;
  REQUIRE(Mix::Parse("45,43,4,4,4", &mix).ok());
  CHECK(mix.total() == 100);
  REQUIRE(Mix::Parse("10,10,1,1,1", &mix).ok());
  CHECK(mix.ToString() == "10,10,1,1,1");
  for (const char* name : {"payment", "order-status", "orderstatus", "stock_level"}) {
    INFO(name);
    REQUIRE(Mix::Parse(name, &mix).ok());
    CHECK(mix.total() == 1);
  }
  REQUIRE(Mix::Parse("new_order", &mix).ok());
  CHECK(mix.weights[0] == 1);
  for (const char* bad : {"", "1,2,3", "1,2,3,4,5,6", "a,b,c,d,e", "0,0,0,0,0", "45,43,4,4,",
                          "paymentx", "-1,1,1,1,1"}) {
    INFO(bad);
    CHECK(Mix::Parse(bad, &mix).IsInvalidArgument());
  }
}

}  // namespace
}  // namespace sm::tpcc
