// The five TPC-C transactions (clause 2.4 - 2.8) over the engine adapter: their inputs, what
// they return to the terminal, and their database work.
//
// Owns: the reads and writes of each transaction profile and their order. Input generation is
// tpcc/inputs.h; retries and timing are the driver's (tpcc/driver.h).
//
// Each function begins a transaction on `txn`, does the work and commits. On an error it
// aborts and returns the status (Status::IsRetryable: the caller may run the same input
// again). A New-Order whose last item is the unused item id rolls back (clause 2.4.2.3) and
// returns OK with `rolled_back` set: that is a completed transaction.
//
// Isolation: New-Order, Payment, Order-Status and Delivery run serializable; Stock-Level runs
// read committed, which clause 3.4.0.1 allows for it (it needs no protection from phantoms or
// non-repeatable reads).
//
// Access order: clause 2.4.2.2 and 2.5.2.2 list each profile's steps in an order that takes
// the hot rows first (Payment updates its warehouse row first, New-Order its district row
// second), so under two-phase locking every Payment of a warehouse holds that row's
// exclusive lock for its whole run and the rest of its work is serialized behind it.
// AccessOrder::kHotRowsLast (the default) does the same reads and writes with the hot rows
// last: Payment customer, district, warehouse, history; New-Order customer, items and stock,
// then warehouse and district, then the inserts that need the order id. Outputs and database
// effects are the same (serializable transactions; the reordered steps do not read what the
// moved ones write); only lock hold times change. This is the reordering QURO (Yan and
// Cheung, VLDB 2016) applies to these transactions. kSpec keeps the listed order.
//
// Rows that are read and then updated are read with GetForUpdate (warehouse, district,
// customer, stock, order, order-line), so engines that can lock them exclusively at once avoid
// shared-to-exclusive upgrade deadlocks.
//
// Thread/fiber safety: the functions keep no state; `txn` is the calling terminal's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/rows.h"

namespace sm::tpcc {

enum class TxnType : uint8_t { kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel };
inline constexpr int kTxnTypeCount = 5;
const char* TxnTypeName(TxnType type);   // "new_order", "payment", ...
const char* TxnTypeTitle(TxnType type);  // "New-Order", "Payment", ...

inline constexpr int kMaxOrderLines = 15;

enum class AccessOrder : uint8_t { kSpec, kHotRowsLast };
const char* AccessOrderName(AccessOrder order);  // "spec", "hot-last"
[[nodiscard]] bool ParseAccessOrder(std::string_view name, AccessOrder* order);

// How Payment adds its amount to the warehouse's and district's year-to-date sums (W_YTD,
// D_YTD). kAdd (the default): EngineTxn::Add under an increment lock, which Payments of one
// warehouse and district share, reading the rest of the row (name, address) in the same call.
// kUpdate: read the row for update, write it back: every Payment of a warehouse holds its row
// exclusively to the end. The database effects and outputs are the same.
enum class YtdWrite : uint8_t { kAdd, kUpdate };
const char* YtdWriteName(YtdWrite ytd);  // "add", "update"
[[nodiscard]] bool ParseYtdWrite(std::string_view name, YtdWrite* ytd);

// ---- New-Order (clause 2.4) ----------------------------------------------------------------

struct NewOrderInput {
  uint16_t w = 0;
  uint8_t d = 0;
  uint32_t c = 0;
  uint8_t ol_cnt = 0;
  struct Line {
    uint32_t i_id = 0;
    uint16_t supply_w_id = 0;
    uint8_t quantity = 0;
  } lines[kMaxOrderLines];
  int64_t entry_d_us = 0;
};

struct NewOrderOutput {
  bool rolled_back = false;
  uint32_t o_id = 0;
  bool all_local = true;
  int32_t w_tax = 0, d_tax = 0, c_discount = 0;  // 1/10,000
  std::string c_last, c_credit;
  int64_t total_cents = 0;  // sum(OL_AMOUNT) * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), rounded
  struct Line {
    int32_t i_price_cents = 0;
    int64_t amount_cents = 0;
    int32_t s_quantity = 0;  // after the update
    char brand_generic = 'G';
  } lines[kMaxOrderLines];
};

[[nodiscard]] Status NewOrder(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out,
                              AccessOrder order = AccessOrder::kHotRowsLast);

// ---- Payment (clause 2.5) ------------------------------------------------------------------

struct PaymentInput {
  uint16_t w = 0;
  uint8_t d = 0;
  uint16_t c_w = 0;
  uint8_t c_d = 0;
  bool by_name = false;
  uint32_t c = 0;      // when !by_name
  std::string c_last;  // when by_name
  int64_t amount_cents = 0;
  int64_t date_us = 0;
};

struct PaymentOutput {
  uint32_t c_id = 0;
  int64_t c_balance_cents = 0;  // after the payment
  bool bad_credit = false;
  uint32_t name_matches = 0;  // customers with that last name (by_name)
};

[[nodiscard]] Status Payment(EngineTxn* txn, const PaymentInput& in, PaymentOutput* out,
                             AccessOrder order = AccessOrder::kHotRowsLast,
                             YtdWrite ytd = YtdWrite::kAdd);

// ---- Order-Status (clause 2.6) -------------------------------------------------------------

struct OrderStatusInput {
  uint16_t w = 0;
  uint8_t d = 0;
  bool by_name = false;
  uint32_t c = 0;
  std::string c_last;
};

struct OrderStatusOutput {
  uint32_t c_id = 0;
  int64_t c_balance_cents = 0;
  std::string c_first, c_middle, c_last;
  uint32_t o_id = 0;  // 0: the customer has no order
  int64_t o_entry_d_us = 0;
  uint8_t o_carrier_id = 0;
  uint8_t line_count = 0;
  struct Line {
    uint32_t i_id = 0;
    uint16_t supply_w_id = 0;
    uint8_t quantity = 0;
    int64_t amount_cents = 0;
    int64_t delivery_d_us = 0;
  } lines[kMaxOrderLines];
};

[[nodiscard]] Status OrderStatus(EngineTxn* txn, const OrderStatusInput& in,
                                 OrderStatusOutput* out);

// ---- Delivery (clause 2.7): all ten districts in one transaction ----------------------------

struct DeliveryInput {
  uint16_t w = 0;
  uint8_t carrier_id = 0;
  int64_t date_us = 0;
};

struct DeliveryOutput {
  uint32_t delivered_o_id[kDistrictsPerWarehouse] = {};  // 0: none to deliver (skipped)
  int skipped = 0;
};

[[nodiscard]] Status Delivery(EngineTxn* txn, const DeliveryInput& in, DeliveryOutput* out);

// ---- Stock-Level (clause 2.8) --------------------------------------------------------------

struct StockLevelInput {
  uint16_t w = 0;
  uint8_t d = 0;
  int32_t threshold = 0;
};

struct StockLevelOutput {
  uint32_t low_stock = 0;
};

[[nodiscard]] Status StockLevel(EngineTxn* txn, const StockLevelInput& in,
                                StockLevelOutput* out);

}  // namespace sm::tpcc
