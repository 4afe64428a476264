// The consistency conditions of clause 3.3.2: see consistency.h.
#include "tpcc/consistency.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tpcc/keys.h"
#include "tpcc/rows.h"

namespace sm::tpcc {

const char* ConditionText(int condition) {
  switch (condition) {
    case 1: return "W_YTD = sum(D_YTD)";
    case 2: return "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)";
    case 3: return "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER)";
    case 4: return "sum(O_OL_CNT) = count(ORDER-LINE)";
    case 5: return "O_CARRIER_ID null <=> NEW-ORDER row exists";
    case 6: return "O_OL_CNT = count(ORDER-LINE) per order";
    case 7: return "OL_DELIVERY_D null <=> O_CARRIER_ID null";
    case 8: return "W_YTD = sum(H_AMOUNT)";
    case 9: return "D_YTD = sum(H_AMOUNT)";
    case 10: return "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)";
    case 11: return "count(ORDER) - count(NEW-ORDER) = 2100 (after load only)";
    case 12: return "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)";
  }
  return "?";
}

namespace {

constexpr int kDetailMax = 3;  // violations spelled out per condition

struct OrderInfo {
  bool present = false;
  bool has_new_order = false;
  uint8_t carrier_id = 0;
  uint8_t ol_cnt = 0;
  uint32_t c_id = 0;
  uint32_t lines = 0;
  uint32_t lines_delivered = 0;  // OL_DELIVERY_D not null
  int64_t delivered_cents = 0;
};

struct CustomerInfo {
  bool present = false;
  int64_t balance_cents = 0;
  int64_t ytd_payment_cents = 0;
  int64_t delivered_cents = 0;
  int64_t history_cents = 0;
};

struct DistrictInfo {
  bool present = false;
  int64_t ytd_cents = 0;
  uint32_t next_o_id = 0;
  uint32_t max_o_id = 0;
  uint64_t orders = 0;
  uint64_t sum_ol_cnt = 0;
  uint64_t order_lines = 0;
  uint64_t orphan_lines = 0;  // ORDER-LINE rows without their ORDER
  uint32_t new_orders = 0, min_no = 0, max_no = 0;
  uint64_t orphan_new_orders = 0;
  int64_t history_cents = 0;
  std::vector<OrderInfo> order;        // by O_ID
  std::vector<CustomerInfo> customer;  // by C_ID
};

struct WarehouseInfo {
  bool present = false;
  int64_t ytd_cents = 0;
  int64_t history_cents = 0;
};

// Everything the conditions need, gathered by scans.
class Gatherer {
 public:
  Gatherer(const DatabaseInfo& info, EngineTxn* txn)
      : info_(info), txn_(txn), warehouses_(info.warehouses + 1),
        districts_((info.warehouses + 1) * (kDistrictsPerWarehouse + 1)) {}

  Status Warehouses();
  Status Districts();
  Status Orders();
  Status NewOrders();
  Status OrderLines();
  Status History();
  Status Customers();

  DistrictInfo* District(uint32_t w, uint32_t d) {
    if (w < 1 || w > info_.warehouses || d < 1 || d > kDistrictsPerWarehouse) return nullptr;
    return &districts_[w * (kDistrictsPerWarehouse + 1) + d];
  }
  WarehouseInfo* Warehouse(uint32_t w) {
    return w >= 1 && w <= info_.warehouses ? &warehouses_[w] : nullptr;
  }
  uint64_t unknown_rows = 0;  // rows whose key names no warehouse or district of the load

 private:
  static OrderInfo* Order(DistrictInfo* d, uint32_t o, bool create) {
    if (o >= d->order.size()) {
      if (!create) return nullptr;
      d->order.resize(std::max<size_t>(o + 1, d->order.size() * 2));
    }
    return &d->order[o];
  }
  CustomerInfo* Customer(uint32_t w, uint32_t d, uint32_t c, bool create) {
    DistrictInfo* dist = District(w, d);
    if (dist == nullptr) return nullptr;
    if (c >= dist->customer.size()) {
      if (!create) return nullptr;
      dist->customer.resize(std::max<size_t>(c + 1, info_.scale.customers_per_district + 1));
    }
    return &dist->customer[c];
  }
  template <typename Fn>
  Status ScanAll(TableId table, Fn&& fn) {
    Status bad = Status::OK();
    SM_TRY(txn_->Scan(table, {}, {}, false, [&](std::string_view key, std::string_view value) {
      bad = fn(key, value);
      return bad.ok();
    }));
    return bad;
  }
  static Status BadRow(TableId table) {
    return Status::Corruption(std::string(TableName(table)) + ": a row or key of the wrong size");
  }

  const DatabaseInfo& info_;
  EngineTxn* const txn_;
  std::vector<WarehouseInfo> warehouses_;
  std::vector<DistrictInfo> districts_;
};

Status Gatherer::Warehouses() {
  return ScanAll(TableId::kWarehouse, [&](std::string_view key, std::string_view value) {
    KeyReader k(key);
    uint16_t w = 0;
    WarehouseRow row;
    if (!k.U16(&w) || !DecodeRow(value, &row)) return BadRow(TableId::kWarehouse);
    WarehouseInfo* info = Warehouse(w);
    if (info == nullptr) return ++unknown_rows, Status::OK();
    info->present = true;
    info->ytd_cents = row.ytd_cents;
    return Status::OK();
  });
}

Status Gatherer::Districts() {
  return ScanAll(TableId::kDistrict, [&](std::string_view key, std::string_view value) {
    KeyReader k(key);
    uint16_t w = 0;
    uint8_t d = 0;
    DistrictRow row;
    if (!k.U16(&w) || !k.U8(&d) || !DecodeRow(value, &row)) return BadRow(TableId::kDistrict);
    DistrictInfo* info = District(w, d);
    if (info == nullptr) return ++unknown_rows, Status::OK();
    info->present = true;
    info->ytd_cents = row.ytd_cents;
    info->next_o_id = row.next_o_id;
    return Status::OK();
  });
}

Status Gatherer::Orders() {
  return ScanAll(TableId::kOrder, [&](std::string_view key, std::string_view value) {
    KeyReader k(key);
    uint16_t w = 0;
    uint8_t d = 0;
    uint32_t o = 0;
    OrderRow row;
    if (!k.U16(&w) || !k.U8(&d) || !k.U32(&o) || !DecodeRow(value, &row)) {
      return BadRow(TableId::kOrder);
    }
    DistrictInfo* dist = District(w, d);
    if (dist == nullptr) return ++unknown_rows, Status::OK();
    OrderInfo* order = Order(dist, o, true);
    order->present = true;
    order->carrier_id = row.carrier_id;
    order->ol_cnt = row.ol_cnt;
    order->c_id = row.c_id;
    dist->orders += 1;
    dist->sum_ol_cnt += row.ol_cnt;
    dist->max_o_id = std::max(dist->max_o_id, o);
    return Status::OK();
  });
}

Status Gatherer::NewOrders() {
  return ScanAll(TableId::kNewOrder, [&](std::string_view key, std::string_view) {
    KeyReader k(key);
    uint16_t w = 0;
    uint8_t d = 0;
    uint32_t o = 0;
    if (!k.U16(&w) || !k.U8(&d) || !k.U32(&o)) return BadRow(TableId::kNewOrder);
    DistrictInfo* dist = District(w, d);
    if (dist == nullptr) return ++unknown_rows, Status::OK();
    if (dist->new_orders == 0) dist->min_no = o;  // key order: the first is the smallest
    dist->max_no = o;
    dist->new_orders += 1;
    OrderInfo* order = Order(dist, o, false);
    if (order != nullptr && order->present) {
      order->has_new_order = true;
    } else {
      dist->orphan_new_orders += 1;
    }
    return Status::OK();
  });
}

Status Gatherer::OrderLines() {
  return ScanAll(TableId::kOrderLine, [&](std::string_view key, std::string_view value) {
    KeyReader k(key);
    uint16_t w = 0;
    uint8_t d = 0, number = 0;
    uint32_t o = 0;
    OrderLineRow row;
    if (!k.U16(&w) || !k.U8(&d) || !k.U32(&o) || !k.U8(&number) || !DecodeRow(value, &row)) {
      return BadRow(TableId::kOrderLine);
    }
    DistrictInfo* dist = District(w, d);
    if (dist == nullptr) return ++unknown_rows, Status::OK();
    dist->order_lines += 1;
    OrderInfo* order = Order(dist, o, false);
    if (order == nullptr || !order->present) {
      dist->orphan_lines += 1;
      return Status::OK();
    }
    order->lines += 1;
    if (row.delivery_d_us != 0) {
      order->lines_delivered += 1;
      order->delivered_cents += row.amount_cents;
    }
    return Status::OK();
  });
}

Status Gatherer::History() {
  return ScanAll(TableId::kHistory, [&](std::string_view, std::string_view value) {
    HistoryRow row;
    if (!DecodeRow(value, &row)) return BadRow(TableId::kHistory);
    WarehouseInfo* w = Warehouse(row.w_id);
    DistrictInfo* d = District(row.w_id, row.d_id);
    CustomerInfo* c = Customer(row.c_w_id, row.c_d_id, row.c_id, true);
    if (w == nullptr || d == nullptr || c == nullptr) return ++unknown_rows, Status::OK();
    w->history_cents += row.amount_cents;
    d->history_cents += row.amount_cents;
    c->history_cents += row.amount_cents;
    return Status::OK();
  });
}

Status Gatherer::Customers() {
  SM_TRY(ScanAll(TableId::kCustomer, [&](std::string_view key, std::string_view value) {
    KeyReader k(key);
    uint16_t w = 0;
    uint8_t d = 0;
    uint32_t c = 0;
    CustomerRow row;
    if (!k.U16(&w) || !k.U8(&d) || !k.U32(&c) || !DecodeRow(value, &row)) {
      return BadRow(TableId::kCustomer);
    }
    CustomerInfo* info = Customer(w, d, c, true);
    if (info == nullptr) return ++unknown_rows, Status::OK();
    info->present = true;
    info->balance_cents = row.balance_cents;
    info->ytd_payment_cents = row.ytd_payment_cents;
    return Status::OK();
  }));
  // The delivered amounts, from the orders gathered before.
  for (uint32_t w = 1; w <= info_.warehouses; ++w) {
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      for (const OrderInfo& order : District(w, d)->order) {
        if (!order.present) continue;
        CustomerInfo* c = Customer(w, d, order.c_id, true);
        if (c != nullptr) c->delivered_cents += order.delivered_cents;
      }
    }
  }
  return Status::OK();
}

// Collects one condition's verdict.
class Verdict {
 public:
  explicit Verdict(int condition) { result_.condition = condition; }
  // Counts a check; `ok` false records a violation described by the printf-style arguments.
  template <typename... Args>
  void Check(bool ok, const char* format, Args... args) {
    result_.checked += 1;
    if (ok) return;
    if (result_.violations++ < kDetailMax) {
      char line[256];
      std::snprintf(line, sizeof line, format, args...);
      if (!result_.detail.empty()) result_.detail += "; ";
      result_.detail += line;
    }
  }
  ConditionResult Done() {
    result_.passed = result_.violations == 0;
    if (result_.violations > kDetailMax) {
      result_.detail += "; ... " + std::to_string(result_.violations) + " in all";
    }
    return result_;
  }

 private:
  ConditionResult result_;
};

using ll = long long;

ConditionResult Evaluate(int n, Gatherer& g, const DatabaseInfo& info) {
  Verdict v(n);
  const uint32_t W = info.warehouses;
  const uint32_t expected_11 = info.scale.customers_per_district - info.scale.new_orders_per_district();
  for (uint32_t w = 1; w <= W; ++w) {
    WarehouseInfo* wh = g.Warehouse(w);
    if (n == 1 || n == 8) {
      if (!wh->present) {
        v.Check(false, "warehouse %u is missing", w);
        continue;
      }
    }
    int64_t sum_d_ytd = 0;
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      DistrictInfo* di = g.District(w, d);
      sum_d_ytd += di->ytd_cents;
      switch (n) {
        case 2: {
          bool ok = di->present && di->next_o_id - 1 == di->max_o_id &&
                    (di->new_orders == 0 || di->max_no == di->max_o_id);
          v.Check(ok, "w%u d%u: D_NEXT_O_ID-1=%u max(O_ID)=%u max(NO_O_ID)=%u", w, d,
                  di->next_o_id - 1, di->max_o_id, di->new_orders ? di->max_no : 0u);
          break;
        }
        case 3:
          v.Check(di->new_orders == 0 || di->max_no - di->min_no + 1 == di->new_orders,
                  "w%u d%u: max(NO_O_ID)-min(NO_O_ID)+1=%u count=%u", w, d,
                  di->max_no - di->min_no + 1, di->new_orders);
          break;
        case 4:
          v.Check(di->sum_ol_cnt == di->order_lines, "w%u d%u: sum(O_OL_CNT)=%llu count(OL)=%llu",
                  w, d, ll(di->sum_ol_cnt), ll(di->order_lines));
          break;
        case 5:
          v.Check(di->orphan_new_orders == 0, "w%u d%u: %llu NEW-ORDER rows without an ORDER", w,
                  d, ll(di->orphan_new_orders));
          for (uint32_t o = 1; o < di->order.size(); ++o) {
            const OrderInfo& order = di->order[o];
            if (!order.present) continue;
            v.Check((order.carrier_id == 0) == order.has_new_order,
                    "w%u d%u o%u: O_CARRIER_ID=%u, NEW-ORDER row %s", w, d, o,
                    unsigned(order.carrier_id), order.has_new_order ? "present" : "absent");
          }
          break;
        case 6:
          v.Check(di->orphan_lines == 0, "w%u d%u: %llu ORDER-LINE rows without an ORDER", w, d,
                  ll(di->orphan_lines));
          for (uint32_t o = 1; o < di->order.size(); ++o) {
            const OrderInfo& order = di->order[o];
            if (!order.present) continue;
            v.Check(order.ol_cnt == order.lines, "w%u d%u o%u: O_OL_CNT=%u, %u lines", w, d, o,
                    unsigned(order.ol_cnt), order.lines);
          }
          break;
        case 7:
          for (uint32_t o = 1; o < di->order.size(); ++o) {
            const OrderInfo& order = di->order[o];
            if (!order.present) continue;
            bool ok = order.carrier_id == 0 ? order.lines_delivered == 0
                                            : order.lines_delivered == order.lines;
            v.Check(ok, "w%u d%u o%u: O_CARRIER_ID=%u, %u of %u lines delivered", w, d, o,
                    unsigned(order.carrier_id), order.lines_delivered, order.lines);
          }
          break;
        case 9:
          v.Check(di->present && di->ytd_cents == di->history_cents,
                  "w%u d%u: D_YTD=%lld sum(H_AMOUNT)=%lld (cents)", w, d, ll(di->ytd_cents),
                  ll(di->history_cents));
          break;
        case 10:
        case 12:
          for (uint32_t c = 1; c < di->customer.size(); ++c) {
            const CustomerInfo& ci = di->customer[c];
            if (!ci.present) {
              v.Check(ci.history_cents == 0 && ci.delivered_cents == 0,
                      "w%u d%u c%u: payments or orders of a missing customer", w, d, c);
              continue;
            }
            if (n == 10) {
              v.Check(ci.balance_cents == ci.delivered_cents - ci.history_cents,
                      "w%u d%u c%u: C_BALANCE=%lld delivered=%lld history=%lld (cents)", w, d, c,
                      ll(ci.balance_cents), ll(ci.delivered_cents), ll(ci.history_cents));
            } else {
              v.Check(ci.balance_cents + ci.ytd_payment_cents == ci.delivered_cents,
                      "w%u d%u c%u: C_BALANCE+C_YTD_PAYMENT=%lld delivered=%lld (cents)", w, d, c,
                      ll(ci.balance_cents + ci.ytd_payment_cents), ll(ci.delivered_cents));
            }
          }
          break;
        case 11:
          v.Check(di->orders - di->new_orders == expected_11,
                  "w%u d%u: count(ORDER)-count(NEW-ORDER)=%lld, expected %u", w, d,
                  ll(di->orders) - ll(di->new_orders), expected_11);
          break;
        default:
          break;
      }
    }
    if (n == 1) {
      v.Check(wh->ytd_cents == sum_d_ytd, "w%u: W_YTD=%lld sum(D_YTD)=%lld (cents)", w,
              ll(wh->ytd_cents), ll(sum_d_ytd));
    }
    if (n == 8) {
      v.Check(wh->ytd_cents == wh->history_cents, "w%u: W_YTD=%lld sum(H_AMOUNT)=%lld (cents)", w,
              ll(wh->ytd_cents), ll(wh->history_cents));
    }
  }
  if (n == 1 || n == 8) {
    v.Check(g.unknown_rows == 0, "%llu rows name a warehouse or district outside the load",
            ll(g.unknown_rows));
  }
  return v.Done();
}

bool Needs(const std::vector<int>& conditions, std::initializer_list<int> any_of) {
  for (int c : conditions) {
    for (int a : any_of) {
      if (c == a) return true;
    }
  }
  return false;
}

}  // namespace

Status CheckConsistency(Engine* engine, const DatabaseInfo& info,
                        const std::vector<int>& conditions, std::vector<ConditionResult>* results) {
  results->clear();
  for (int c : conditions) {
    if (c < 1 || c > kConditionCount) {
      return Status::InvalidArgument("no consistency condition " + std::to_string(c));
    }
  }
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  SM_TRY(txn->Begin(TxnIsolation::kReadCommitted));
  Gatherer g(info, txn.get());
  Status s = Status::OK();
  auto step = [&](bool needed, Status (Gatherer::*fn)()) {
    if (s.ok() && needed) s = (g.*fn)();
  };
  step(Needs(conditions, {1, 8}), &Gatherer::Warehouses);
  step(Needs(conditions, {1, 2, 9}), &Gatherer::Districts);
  step(Needs(conditions, {2, 4, 5, 6, 7, 10, 11, 12}), &Gatherer::Orders);
  step(Needs(conditions, {2, 3, 5, 11}), &Gatherer::NewOrders);
  step(Needs(conditions, {4, 6, 7, 10, 12}), &Gatherer::OrderLines);
  step(Needs(conditions, {8, 9, 10}), &Gatherer::History);
  step(Needs(conditions, {10, 12}), &Gatherer::Customers);
  if (!s.ok()) {
    txn->Abort().PermitUnchecked();
    return s;
  }
  SM_TRY(txn->Commit());
  for (int c : conditions) results->push_back(Evaluate(c, g, info));
  return Status::OK();
}

}  // namespace sm::tpcc
