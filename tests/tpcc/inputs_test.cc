// Input generation (clause 2) against the audit bands of clause 9.2.2.5, the NURand C rule of
// clause 2.1.6.1, and the text rules of clause 4.3.2.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "tests/test_util.h"
#include "tpcc/inputs.h"
#include "tpcc/random.h"

namespace sm::tpcc {
namespace {

DatabaseInfo StandardInfo(uint32_t warehouses, Rng& rng) {
  DatabaseInfo info;
  info.warehouses = warehouses;
  info.scale = Scale::Standard();
  info.load_constants = NuConstants::ForLoad(rng);
  return info;
}

TEST_CASE("input generators stay within the audit bands of clause 9.2.2.5",
          "[random][tpcc]") {
  const uint64_t seed = ::sm::test::TestSeed("tpcc input audit bands");
  Rng setup(seed);
  const DatabaseInfo info = StandardInfo(10, setup);
  const NuConstants run = NuConstants::ForRun(info.load_constants, setup);
  InputGenerator gen(info, run, seed + 1);
  constexpr int kN = 200000;

  SECTION("New-Order") {
    int rollbacks = 0;
    uint64_t lines = 0, remote = 0;
    NewOrderInput in;
    for (int i = 0; i < kN; ++i) {
      const uint16_t w = static_cast<uint16_t>(1 + i % 10);
      gen.NewOrder(w, 0, &in);
      REQUIRE(in.w == w);
      REQUIRE(in.d >= 1);
      REQUIRE(in.d <= 10);
      REQUIRE(in.c >= 1);
      REQUIRE(in.c <= 3000);
      REQUIRE(in.ol_cnt >= 5);
      REQUIRE(in.ol_cnt <= 15);
      lines += in.ol_cnt;
      for (int l = 0; l < in.ol_cnt; ++l) {
        const auto& line = in.lines[l];
        REQUIRE(line.quantity >= 1);
        REQUIRE(line.quantity <= 10);
        if (line.i_id == gen.unused_item()) {
          REQUIRE(l == in.ol_cnt - 1);  // only the last line carries the unused id
          ++rollbacks;
        } else {
          REQUIRE(line.i_id >= 1);
          REQUIRE(line.i_id <= 100000);
        }
        REQUIRE(line.supply_w_id >= 1);
        REQUIRE(line.supply_w_id <= 10);
        remote += line.supply_w_id != w;
      }
    }
    const double rollback_pct = 100.0 * rollbacks / kN;
    const double per_order = double(lines) / kN;
    const double remote_pct = 100.0 * double(remote) / double(lines);
    INFO("rollbacks " << rollback_pct << "%, lines/order " << per_order << ", remote lines "
                      << remote_pct << "%");
    CHECK(rollback_pct >= 0.9);
    CHECK(rollback_pct <= 1.1);
    CHECK(per_order >= 9.5);
    CHECK(per_order <= 10.5);
    CHECK(remote_pct >= 0.95);
    CHECK(remote_pct <= 1.05);
  }

  SECTION("Payment") {
    int remote = 0, by_name = 0;
    PaymentInput in;
    for (int i = 0; i < kN; ++i) {
      gen.Payment(3, 0, &in);
      REQUIRE(in.w == 3);
      REQUIRE(in.amount_cents >= 100);
      REQUIRE(in.amount_cents <= 500000);
      if (in.c_w != 3) {
        ++remote;
      } else {
        REQUIRE(in.c_d == in.d);  // a home customer belongs to the paying district
      }
      if (in.by_name) {
        ++by_name;
        REQUIRE(in.c_last.size() >= 9);
      } else {
        REQUIRE(in.c >= 1);
        REQUIRE(in.c <= 3000);
      }
    }
    const double remote_pct = 100.0 * remote / kN, name_pct = 100.0 * by_name / kN;
    INFO("remote " << remote_pct << "%, by name " << name_pct << "%");
    CHECK(remote_pct >= 14);
    CHECK(remote_pct <= 16);
    CHECK(name_pct >= 57);
    CHECK(name_pct <= 63);
  }

  SECTION("Order-Status, Delivery, Stock-Level") {
    int by_name = 0;
    OrderStatusInput os;
    DeliveryInput dl;
    StockLevelInput sl;
    std::map<int, int> thresholds;
    for (int i = 0; i < kN; ++i) {
      gen.OrderStatus(4, &os);
      by_name += os.by_name;
      gen.Delivery(4, 0, &dl);
      REQUIRE(dl.carrier_id >= 1);
      REQUIRE(dl.carrier_id <= 10);
      gen.StockLevel(4, 7, &sl);
      REQUIRE(sl.d == 7);
      thresholds[sl.threshold]++;
    }
    const double name_pct = 100.0 * by_name / kN;
    CHECK(name_pct >= 57);
    CHECK(name_pct <= 63);
    CHECK(thresholds.size() == 11);
    CHECK(thresholds.begin()->first == 10);
    CHECK(thresholds.rbegin()->first == 20);
  }
}

TEST_CASE("with one warehouse nothing is remote", "[unit][tpcc]") {
  Rng setup(7);
  const DatabaseInfo info = StandardInfo(1, setup);
  InputGenerator gen(info, NuConstants::ForRun(info.load_constants, setup), 8);
  NewOrderInput no;
  PaymentInput p;
  for (int i = 0; i < 20000; ++i) {
    gen.NewOrder(1, 0, &no);
    for (int l = 0; l < no.ol_cnt; ++l) REQUIRE(no.lines[l].supply_w_id == 1);
    gen.Payment(1, 0, &p);
    REQUIRE(p.c_w == 1);
  }
}

TEST_CASE("NURand: ranges, skew, and the C-run rule for C_LAST", "[unit][tpcc]") {
  for (uint32_t load = 0; load <= 255; ++load) {
    Rng rng(load);
    NuConstants l;
    l.c_last = load;
    for (int i = 0; i < 20; ++i) {
      NuConstants r = NuConstants::ForRun(l, rng);
      const int delta = std::abs(int(r.c_last) - int(load));
      REQUIRE(delta >= 65);
      REQUIRE(delta <= 119);
      REQUIRE(delta != 96);
      REQUIRE(delta != 112);
      REQUIRE(r.c_id <= 1023);
      REQUIRE(r.ol_i_id <= 8191);
    }
  }
  CHECK(ValidCLastDelta(0, 65));
  CHECK_FALSE(ValidCLastDelta(0, 64));
  CHECK_FALSE(ValidCLastDelta(200, 104));  // delta 96
  CHECK_FALSE(ValidCLastDelta(0, 112));
  CHECK_FALSE(ValidCLastDelta(0, 120));

  // NURand is non-uniform: OR-ing a 0..A draw piles values up. The most frequent C_ID should
  // come up several times as often as the uniform 1/3000.
  Rng rng(99);
  std::map<int64_t, int> counts;
  for (int i = 0; i < 300000; ++i) {
    int64_t c = rng.NURand(kNuCId, 1, 3000, 123);
    REQUIRE(c >= 1);
    REQUIRE(c <= 3000);
    counts[c]++;
  }
  int most = 0;
  for (auto& [v, n] : counts) most = std::max(most, n);
  CHECK(most > 3 * 100);
}

TEST_CASE("text rules: last names, ORIGINAL, zip, strings", "[unit][tpcc]") {
  CHECK(LastName(0) == "BARBARBAR");
  CHECK(LastName(371) == "PRICALLYOUGHT");  // the example of clause 4.3.2.3
  CHECK(LastName(999) == "EINGEINGEING");
  Rng rng(5);
  int original = 0;
  for (int i = 0; i < 20000; ++i) {
    bool flag = false;
    std::string s = DataWithOriginal(rng, &flag);
    REQUIRE(s.size() >= 26);
    REQUIRE(s.size() <= 50);
    REQUIRE((s.find("ORIGINAL") != std::string::npos) == flag);
    original += flag;
    std::string zip = Zip(rng);
    REQUIRE(zip.size() == 9);
    REQUIRE(zip.substr(4) == "11111");
    std::string a = AString(rng, 8, 16);
    REQUIRE(a.size() >= 8);
    REQUIRE(a.size() <= 16);
  }
  CHECK(original > 1700);
  CHECK(original < 2300);
}

}  // namespace
}  // namespace sm::tpcc
