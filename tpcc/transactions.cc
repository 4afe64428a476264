// The five TPC-C transactions: see transactions.h.
#include "tpcc/transactions.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "tpcc/keys.h"

namespace sm::tpcc {

const char* TxnTypeName(TxnType type) {
  switch (type) {
    case TxnType::kNewOrder: return "new_order";
    case TxnType::kPayment: return "payment";
    case TxnType::kOrderStatus: return "order_status";
    case TxnType::kDelivery: return "delivery";
    case TxnType::kStockLevel: return "stock_level";
  }
  return "?";
}

const char* AccessOrderName(AccessOrder order) {
  return order == AccessOrder::kSpec ? "spec" : "hot-last";
}

bool ParseAccessOrder(std::string_view name, AccessOrder* order) {
  if (name == "spec") {
    *order = AccessOrder::kSpec;
  } else if (name == "hot-last") {
    *order = AccessOrder::kHotRowsLast;
  } else {
    return false;
  }
  return true;
}

const char* YtdWriteName(YtdWrite ytd) { return ytd == YtdWrite::kAdd ? "add" : "update"; }

bool ParseYtdWrite(std::string_view name, YtdWrite* ytd) {
  if (name == "add") {
    *ytd = YtdWrite::kAdd;
  } else if (name == "update") {
    *ytd = YtdWrite::kUpdate;
  } else {
    return false;
  }
  return true;
}

const char* TxnTypeTitle(TxnType type) {
  switch (type) {
    case TxnType::kNewOrder: return "New-Order";
    case TxnType::kPayment: return "Payment";
    case TxnType::kOrderStatus: return "Order-Status";
    case TxnType::kDelivery: return "Delivery";
    case TxnType::kStockLevel: return "Stock-Level";
  }
  return "?";
}

namespace {

enum class Read : uint8_t { kShared, kForUpdate };

// The outcome of a read of a row the workload needs: NotFound or a row of another size is
// Corruption.
template <typename Row>
Status DecodeRead(TableId table, const Status& read, std::string_view value, Row* row) {
  if (read.IsNotFound()) {
    return Status::Corruption(std::string(TableName(table)) +
                              ": a row the workload needs is missing");
  }
  SM_TRY(read);
  if (!DecodeRow(value, row)) {
    return Status::Corruption(std::string(TableName(table)) + ": a row of the wrong size");
  }
  return Status::OK();
}

template <typename Row>
Status GetRow(EngineTxn* txn, TableId table, std::string_view key, Row* row,
              Read mode = Read::kShared) {
  std::string& value = *txn->value_buffer();
  Status s = mode == Read::kForUpdate ? txn->GetForUpdate(table, key, &value)
                                      : txn->Get(table, key, &value);
  return DecodeRead(table, s, value, row);
}

template <typename Row>
Status PutRow(EngineTxn* txn, TableId table, std::string_view key, const Row& row) {
  return txn->Update(table, key, RowBytes(row));
}

// Reads, changes and writes back the row at `key` in one operation (EngineTxn::Modify): fn
// changes the decoded row and must leave its size as it was. It may run more than once, so
// what it learns of the row it assigns, never accumulates.
template <typename Row, typename Fn>
Status EditRow(EngineTxn* txn, TableId table, std::string_view key, Fn&& fn) {
  bool bad = false;
  SM_TRY(txn->Modify(table, key, [&](char* bytes, size_t size) {
    Row row;
    bad = !DecodeRow(std::string_view(bytes, size), &row);
    if (bad) return;
    fn(&row);
    const std::string_view out = RowBytes(row);
    bad = out.size() != size;
    if (!bad) std::memcpy(bytes, out.data(), size);
  }));
  if (bad) return Status::Corruption(std::string(TableName(table)) + ": a row of the wrong size");
  return Status::OK();
}

// Runs body in a transaction: commit if it succeeds, abort (and return its status) if not.
template <typename Body>
Status InTransaction(EngineTxn* txn, TxnIsolation isolation, Body&& body) {
  SM_TRY(txn->Begin(isolation));
  Status s = body();
  if (!s.ok()) {
    if (txn->active()) txn->Abort().PermitUnchecked();
    return s;
  }
  return txn->Commit();
}

// The id of the customer of a by-name selection (clauses 2.5.2.2 and 2.6.2.2): of the n
// customers with that last name, sorted by C_FIRST, the one at position ceil(n / 2).
Status CustomerByName(EngineTxn* txn, uint16_t w, uint8_t d, std::string_view last, uint32_t* c,
                      uint32_t* matches) {
  std::string prefix = CustomerNamePrefix(w, d, last);
  // The matches in C_FIRST order (the index's). A district has about three customers of a last
  // name, so they fit inline and the usual Payment allocates nothing here.
  boost::container::small_vector<uint32_t, 16> ids;
  SM_TRY(txn->Scan(TableId::kCustomerByName, prefix, PrefixEnd(prefix), false,
                   [&](std::string_view key, std::string_view) {
                     KeyReader tail(key.substr(key.size() - 4));
                     uint32_t id = 0;
                     if (tail.U32(&id)) ids.push_back(id);
                     return true;
                   }));
  *matches = static_cast<uint32_t>(ids.size());
  if (ids.empty()) return Status::NotFound("no customer named " + std::string(last));
  *c = ids[(ids.size() + 1) / 2 - 1];  // the index is in C_FIRST order already
  return Status::OK();
}

// The visitor's error if it stopped the scan with one, else the scan's own status.
Status FirstError(Status visitor, Status scan) {
  if (!visitor.ok()) {
    scan.PermitUnchecked();
    return visitor;
  }
  return scan;
}

bool ContainsOriginal(std::string_view s) { return s.find("ORIGINAL") != std::string_view::npos; }

std::atomic<uint32_t> history_seq{1u << 24};  // relaxed: only needs distinct values

// ---- New-Order ----------------------------------------------------------------------------

// The item of line i from its read, or *rolled_back if it is the unused item id.
Status ItemOfLine(const NewOrderInput& in, int i, const Status& read, std::string_view value,
                  ItemRow* item, bool* rolled_back) {
  if (read.IsNotFound()) {
    // The unused item id, which only the last line may carry: the order is rolled back
    // (clause 2.4.2.3). Anywhere else a missing item is damage, not input.
    if (i != in.ol_cnt - 1) return Status::Corruption("tpcc.item: an item the order needs is missing");
    *rolled_back = true;
    return Status::OK();
  }
  SM_TRY(read);
  if (!DecodeRow(value, item)) return Status::Corruption("tpcc.item: a row of the wrong size");
  return Status::OK();
}

// Line i's stock row, read for update, changed and written back, and the order line it makes.
Status SellStock(EngineTxn* txn, const NewOrderInput& in, int i, const ItemRow& item,
                 std::string_view stock_key, StockRow* stock, OrderLineRow* ol,
                 NewOrderOutput::Line* result) {
  const NewOrderInput::Line& line = in.lines[i];
  if (stock->quantity >= line.quantity + 10) {
    stock->quantity -= line.quantity;
  } else {
    stock->quantity = stock->quantity - line.quantity + 91;
  }
  stock->ytd += line.quantity;
  stock->order_cnt += 1;
  if (line.supply_w_id != in.w) stock->remote_cnt += 1;
  SM_TRY(PutRow(txn, TableId::kStock, stock_key, *stock));

  *ol = OrderLineRow{};
  ol->i_id = line.i_id;
  ol->supply_w_id = line.supply_w_id;
  ol->delivery_d_us = 0;
  ol->quantity = line.quantity;
  ol->amount_cents = int64_t(line.quantity) * item.price_cents;
  std::memcpy(ol->dist_info, stock->dist[in.d - 1], sizeof ol->dist_info);
  result->i_price_cents = item.price_cents;
  result->amount_cents = ol->amount_cents;
  result->s_quantity = stock->quantity;
  result->brand_generic =
      ContainsOriginal(View(item.data)) && ContainsOriginal(View(stock->data)) ? 'B' : 'G';
  return Status::OK();
}

// One order line's item and stock work (clause 2.4.2.2), one read after the other: reads the
// item, updates the stock, and fills the order-line row to insert. Sets *rolled_back for the
// unused item id.
Status OrderLineWork(EngineTxn* txn, const NewOrderInput& in, int i, OrderLineRow* ol,
                     NewOrderOutput::Line* result, bool* rolled_back) {
  const NewOrderInput::Line& line = in.lines[i];
  std::string& value = *txn->value_buffer();
  ItemRow item;
  Status read = txn->Get(TableId::kItem, ItemKey(line.i_id), &value);
  SM_TRY(ItemOfLine(in, i, read, value, &item, rolled_back));
  if (*rolled_back) return Status::OK();
  const std::string stock_key = StockKey(line.supply_w_id, line.i_id);
  StockRow stock;
  SM_TRY(GetRow(txn, TableId::kStock, stock_key, &stock, Read::kForUpdate));
  return SellStock(txn, in, i, item, stock_key, &stock, ol, result);
}

// Every line's item and stock in two batched reads (their rows lie on as many leaves as there
// are lines): the items in line order, then the stock rows in the order `by_stock` gives.
Status OrderLinesBatched(EngineTxn* txn, const NewOrderInput& in, const int* by_stock,
                         OrderLineRow* lines, NewOrderOutput* out) {
  const int n = in.ol_cnt;
  std::string keys[kMaxOrderLines];
  std::vector<std::string_view> views(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) views[i] = keys[i] = ItemKey(in.lines[i].i_id);
  ItemRow items[kMaxOrderLines];
  bool read[kMaxOrderLines] = {};
  Status failed = Status::OK();
  SM_TRY(txn->GetMany(TableId::kItem, views, /*for_update=*/false,
                      [&](size_t i, std::string_view value) {
                        read[i] = true;
                        failed = ItemOfLine(in, static_cast<int>(i), Status::OK(), value,
                                            &items[i], &out->rolled_back);
                        return failed.ok();
                      }));
  SM_TRY(failed);
  for (int i = 0; i < n; ++i) {
    if (!read[i]) SM_TRY(ItemOfLine(in, i, Status::NotFound(""), {}, nullptr, &out->rolled_back));
  }
  if (out->rolled_back) return Status::OK();

  for (int k = 0; k < n; ++k) {
    const NewOrderInput::Line& line = in.lines[by_stock[k]];
    views[k] = keys[k] = StockKey(line.supply_w_id, line.i_id);
  }
  int sold = 0;
  SM_TRY(txn->GetMany(TableId::kStock, views, /*for_update=*/true,
                      [&](size_t k, std::string_view value) {
                        const int i = by_stock[k];
                        StockRow stock;
                        if (!DecodeRow(value, &stock)) {
                          failed = Status::Corruption("tpcc.stock: a row of the wrong size");
                        } else {
                          failed = SellStock(txn, in, i, items[i], views[k], &stock, &lines[i],
                                             &out->lines[i]);
                        }
                        ++sold;
                        return failed.ok();
                      }));
  SM_TRY(failed);
  if (sold != n) return Status::Corruption("tpcc.stock: a row the workload needs is missing");
  return Status::OK();
}

Status InsertOrderLine(EngineTxn* txn, const NewOrderInput& in, uint32_t o_id, int i,
                       const OrderLineRow& ol) {
  return txn->Insert(TableId::kOrderLine,
                     OrderLineKey(in.w, in.d, o_id, static_cast<uint8_t>(i + 1)), RowBytes(ol));
}

Status ReadWarehouseTax(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out) {
  WarehouseRow w;
  SM_TRY(GetRow(txn, TableId::kWarehouse, WarehouseKey(in.w), &w));
  out->w_tax = w.tax;
  return Status::OK();
}

// D_TAX and the district's next order id, taken and advanced.
Status TakeOrderId(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out) {
  const std::string district_key = DistrictKey(in.w, in.d);
  DistrictRow d;
  SM_TRY(GetRow(txn, TableId::kDistrict, district_key, &d, Read::kForUpdate));
  out->d_tax = d.tax;
  out->o_id = d.next_o_id;
  d.next_o_id = out->o_id + 1;
  return PutRow(txn, TableId::kDistrict, district_key, d);
}

Status ReadOrderCustomer(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out) {
  CustomerRow c;
  SM_TRY(GetRow(txn, TableId::kCustomer, CustomerKey(in.w, in.d, in.c), &c));
  out->c_discount = c.discount;
  out->c_last = View(c.last);
  out->c_credit = View(c.credit);
  return Status::OK();
}

Status InsertOrder(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out) {
  OrderRow order{};
  order.entry_d_us = in.entry_d_us;
  order.c_id = in.c;
  order.carrier_id = 0;
  order.ol_cnt = in.ol_cnt;
  order.all_local = 1;
  for (int i = 0; i < in.ol_cnt; ++i) order.all_local &= in.lines[i].supply_w_id == in.w;
  out->all_local = order.all_local != 0;
  SM_TRY(txn->Insert(TableId::kOrder, OrderKey(in.w, in.d, out->o_id), RowBytes(order)));
  SM_TRY(txn->Insert(TableId::kOrderByCustomer, OrderByCustomerKey(in.w, in.d, in.c, out->o_id), {}));
  return txn->Insert(TableId::kNewOrder, NewOrderKey(in.w, in.d, out->o_id), {});
}

// Clause 2.4.2.2 in the order it lists the steps: warehouse, district, customer, the order,
// then item, stock and order line for each line.
Status NewOrderInSpecOrder(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out) {
  SM_TRY(ReadWarehouseTax(txn, in, out));
  SM_TRY(TakeOrderId(txn, in, out));
  SM_TRY(ReadOrderCustomer(txn, in, out));
  SM_TRY(InsertOrder(txn, in, out));
  for (int i = 0; i < in.ol_cnt; ++i) {
    OrderLineRow ol;
    SM_TRY(OrderLineWork(txn, in, i, &ol, &out->lines[i], &out->rolled_back));
    if (out->rolled_back) return Status::OK();
    SM_TRY(InsertOrderLine(txn, in, out->o_id, i, ol));
  }
  return Status::OK();
}

// The same work with the hot rows last: the customer, items and stock first (in stock-key
// order; a rollback is decided before the district is touched), then district and
// warehouse, then the inserts that need the order id. District before warehouse, as Payment
// takes them in this order: the other order would let a New-Order's shared warehouse lock
// and a Payment's exclusive district lock deadlock.
Status NewOrderHotRowsLast(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out) {
  SM_TRY(ReadOrderCustomer(txn, in, out));
  // Stock rows are locked in (warehouse, item) order, so that New-Orders working on their
  // stock at the same time cannot deadlock (NURand makes some items hot). The sort is stable:
  // a repeated item is updated in line order, so every line's result is as in line order.
  int by_stock[kMaxOrderLines];
  std::iota(by_stock, by_stock + in.ol_cnt, 0);
  std::stable_sort(by_stock, by_stock + in.ol_cnt, [&in](int a, int b) {
    return std::pair(in.lines[a].supply_w_id, in.lines[a].i_id) <
           std::pair(in.lines[b].supply_w_id, in.lines[b].i_id);
  });
  OrderLineRow lines[kMaxOrderLines];
  SM_TRY(OrderLinesBatched(txn, in, by_stock, lines, out));
  if (out->rolled_back) return Status::OK();
  SM_TRY(TakeOrderId(txn, in, out));
  SM_TRY(ReadWarehouseTax(txn, in, out));
  SM_TRY(InsertOrder(txn, in, out));
  for (int i = 0; i < in.ol_cnt; ++i) SM_TRY(InsertOrderLine(txn, in, out->o_id, i, lines[i]));
  return Status::OK();
}

Status NewOrderBody(EngineTxn* txn, const NewOrderInput& in, AccessOrder order,
                    NewOrderOutput* out) {
  SM_TRY(order == AccessOrder::kSpec ? NewOrderInSpecOrder(txn, in, out)
                                     : NewOrderHotRowsLast(txn, in, out));
  if (out->rolled_back) return Status::OK();
  int64_t sum_cents = 0;
  for (int i = 0; i < in.ol_cnt; ++i) sum_cents += out->lines[i].amount_cents;
  // total = sum * (1 - discount) * (1 + w_tax + d_tax), rates in 1/10,000.
  double total = double(sum_cents) * (10000 - out->c_discount) / 10000.0 *
                 (10000 + out->w_tax + out->d_tax) / 10000.0;
  out->total_cents = std::llround(total);
  return Status::OK();
}

// ---- Payment ------------------------------------------------------------------------------

// Adds amount to the row's ytd_cents and reads the row (ytd then includes other Payments'
// uncommitted amounts; Payment uses only the names and addresses, which nothing changes).
template <typename Row>
Status AddToYtd(EngineTxn* txn, TableId table, std::string_view key, int64_t amount, Row* row,
                YtdWrite ytd) {
  if (ytd == YtdWrite::kUpdate) {
    SM_TRY(GetRow(txn, table, key, row, Read::kForUpdate));
    row->ytd_cents += amount;
    return PutRow(txn, table, key, *row);
  }
  std::string& value = *txn->value_buffer();
  Status s = txn->Add(table, key, offsetof(Row, ytd_cents), amount, &value);
  return DecodeRead(table, s, value, row);
}

Status PayWarehouse(EngineTxn* txn, const PaymentInput& in, WarehouseRow* w, YtdWrite ytd) {
  return AddToYtd(txn, TableId::kWarehouse, WarehouseKey(in.w), in.amount_cents, w, ytd);
}

Status PayDistrict(EngineTxn* txn, const PaymentInput& in, DistrictRow* d, YtdWrite ytd) {
  return AddToYtd(txn, TableId::kDistrict, DistrictKey(in.w, in.d), in.amount_cents, d, ytd);
}

// What a payment prepends to a bad-credit customer's C_DATA (clause 2.5.2.2): "C_ID C_D_ID
// C_W_ID D_ID W_ID H_AMOUNT|", the amount with two decimals. std::to_chars, not snprintf, whose
// format parsing would add instructions to every Payment that takes this branch (steps_bench's
// payment_instructions_per_txn_serial).
std::string BadCreditEntry(const PaymentInput& in, uint32_t c_id) {
  char entry[96];
  char* end = entry + sizeof entry;
  char* p = entry;
  const uint32_t fields[] = {c_id, in.c_d, in.c_w, in.d, in.w};
  for (uint32_t field : fields) {
    p = std::to_chars(p, end, field).ptr;
    *p++ = ' ';
  }
  const int64_t cents = in.amount_cents;
  p = std::to_chars(p, end, cents / 100).ptr;
  *p++ = '.';
  const int64_t fraction = cents % 100;
  *p++ = static_cast<char>('0' + fraction / 10);
  *p++ = static_cast<char>('0' + fraction % 10);
  *p++ = '|';
  return std::string(entry, p);
}

Status PayCustomer(EngineTxn* txn, const PaymentInput& in, PaymentOutput* out) {
  uint32_t c_id = in.c;
  if (in.by_name) SM_TRY(CustomerByName(txn, in.c_w, in.c_d, in.c_last, &c_id, &out->name_matches));
  out->c_id = c_id;
  const std::string customer_key = CustomerKey(in.c_w, in.c_d, c_id);
  CustomerRow c;
  SM_TRY(GetRow(txn, TableId::kCustomer, customer_key, &c, Read::kForUpdate));
  c.balance_cents -= in.amount_cents;
  c.ytd_payment_cents += in.amount_cents;
  c.payment_cnt += 1;
  out->bad_credit = View(c.credit) == "BC";
  if (out->bad_credit) {
    std::string data = BadCreditEntry(in, c_id);
    data += View(c.data);
    Set(c.data, data);  // truncated to 500 characters
  }
  out->c_balance_cents = c.balance_cents;
  return PutRow(txn, TableId::kCustomer, customer_key, c);
}

Status InsertHistory(EngineTxn* txn, const PaymentInput& in, const WarehouseRow& w,
                     const DistrictRow& d, uint32_t c_id) {
  HistoryRow h{};
  h.c_id = c_id;
  h.c_d_id = in.c_d;
  h.c_w_id = in.c_w;
  h.d_id = in.d;
  h.w_id = in.w;
  h.date_us = in.date_us;
  h.amount_cents = in.amount_cents;
  // W_NAME, four spaces, D_NAME (clause 2.5.2.2): assembled in place, it allocates nothing.
  char h_data[sizeof(w.name) + 4 + sizeof(d.name)];
  const std::string_view w_name = View(w.name), d_name = View(d.name);
  std::memcpy(h_data, w_name.data(), w_name.size());
  std::memset(h_data + w_name.size(), ' ', 4);
  std::memcpy(h_data + w_name.size() + 4, d_name.data(), d_name.size());
  Set(h.data, std::string_view(h_data, w_name.size() + 4 + d_name.size()));
  const std::string_view value = RowBytes(h);
  for (;;) {  // the history key only has to be unique
    uint32_t seq = history_seq.fetch_add(1, std::memory_order_relaxed);
    Status s = txn->Insert(TableId::kHistory, HistoryKey(in.w, in.d, in.date_us, seq), value);
    if (!s.IsDuplicate()) return s;
  }
}

// Spec order (clause 2.5.2.2): warehouse, district, customer, history. Hot rows last:
// customer, district, warehouse, history (which needs both names).
Status PaymentBody(EngineTxn* txn, const PaymentInput& in, AccessOrder order, YtdWrite ytd,
                   PaymentOutput* out) {
  WarehouseRow w;
  DistrictRow d;
  if (order == AccessOrder::kSpec) {
    SM_TRY(PayWarehouse(txn, in, &w, ytd));
    SM_TRY(PayDistrict(txn, in, &d, ytd));
    SM_TRY(PayCustomer(txn, in, out));
  } else {
    SM_TRY(PayCustomer(txn, in, out));
    SM_TRY(PayDistrict(txn, in, &d, ytd));
    SM_TRY(PayWarehouse(txn, in, &w, ytd));
  }
  return InsertHistory(txn, in, w, d, out->c_id);
}

Status OrderStatusBody(EngineTxn* txn, const OrderStatusInput& in, OrderStatusOutput* out) {
  uint32_t c_id = in.c;
  uint32_t matches = 0;
  if (in.by_name) SM_TRY(CustomerByName(txn, in.w, in.d, in.c_last, &c_id, &matches));
  out->c_id = c_id;
  CustomerRow c;
  SM_TRY(GetRow(txn, TableId::kCustomer, CustomerKey(in.w, in.d, c_id), &c));
  out->c_balance_cents = c.balance_cents;
  out->c_first = View(c.first);
  out->c_middle = View(c.middle);
  out->c_last = View(c.last);

  // The customer's most recent order: the last entry of the index under (w, d, c).
  const std::string prefix = OrderByCustomerPrefix(in.w, in.d, c_id);
  uint32_t o_id = 0;
  SM_TRY(txn->Scan(TableId::kOrderByCustomer, prefix, PrefixEnd(prefix), /*reverse=*/true,
                   [&](std::string_view key, std::string_view) {
                     KeyReader tail(key.substr(key.size() - 4));
                     return !tail.U32(&o_id);
                   }));
  out->o_id = o_id;
  if (o_id == 0) return Status::OK();
  OrderRow order{};
  SM_TRY(GetRow(txn, TableId::kOrder, OrderKey(in.w, in.d, o_id), &order));
  out->o_entry_d_us = order.entry_d_us;
  out->o_carrier_id = order.carrier_id;

  const std::string lines = OrderKey(in.w, in.d, o_id);
  Status bad = Status::OK();
  Status scan = txn->Scan(TableId::kOrderLine, lines, PrefixEnd(lines), false,
                   [&](std::string_view, std::string_view value) {
                     OrderLineRow ol;
                     if (!DecodeRow(value, &ol) || out->line_count == kMaxOrderLines) {
                       bad = Status::Corruption("tpcc.order_line: a bad row or too many lines");
                       return false;
                     }
                     OrderStatusOutput::Line& line = out->lines[out->line_count++];
                     line.i_id = ol.i_id;
                     line.supply_w_id = ol.supply_w_id;
                     line.quantity = ol.quantity;
                     line.amount_cents = ol.amount_cents;
                     line.delivery_d_us = ol.delivery_d_us;
                     return true;
                   });
  return FirstError(std::move(bad), std::move(scan));
}

Status DeliverDistrict(EngineTxn* txn, const DeliveryInput& in, uint8_t d, uint32_t* delivered) {
  *delivered = 0;
  // Deliveries of one district take turns: without this, two of them read the same oldest
  // NEW-ORDER row (a shared lock each) and then both upgrade to delete it, a deadlock every
  // time they overlap. The district row's exclusive lock orders them instead.
  const std::string prefix = DistrictKey(in.w, d);
  DistrictRow district;
  SM_TRY(GetRow(txn, TableId::kDistrict, prefix, &district, Read::kForUpdate));
  // The oldest undelivered order of the district.
  uint32_t o_id = 0;
  SM_TRY(txn->Scan(TableId::kNewOrder, prefix, PrefixEnd(prefix), false,
                   [&](std::string_view key, std::string_view) {
                     KeyReader tail(key.substr(key.size() - 4));
                     return !tail.U32(&o_id);
                   }));
  if (o_id == 0) return Status::OK();  // none: skipped (clause 2.7.4.2)
  SM_TRY(txn->Delete(TableId::kNewOrder, NewOrderKey(in.w, d, o_id)));

  // Each row is read, changed and written back in one operation (EditRow).
  OrderRow order;
  SM_TRY(EditRow<OrderRow>(txn, TableId::kOrder, OrderKey(in.w, d, o_id), [&](OrderRow* o) {
    o->carrier_id = in.carrier_id;
    order = *o;
  }));

  int64_t sum_cents = 0;
  for (uint8_t number = 1; number <= order.ol_cnt; ++number) {
    int64_t amount_cents = 0;
    SM_TRY(EditRow<OrderLineRow>(txn, TableId::kOrderLine, OrderLineKey(in.w, d, o_id, number),
                                 [&](OrderLineRow* ol) {
                                   ol->delivery_d_us = in.date_us;
                                   amount_cents = ol->amount_cents;
                                 }));
    sum_cents += amount_cents;
  }

  SM_TRY(EditRow<CustomerRow>(txn, TableId::kCustomer, CustomerKey(in.w, d, order.c_id),
                              [&](CustomerRow* c) {
                                c->balance_cents += sum_cents;
                                c->delivery_cnt += 1;
                              }));
  *delivered = o_id;
  return Status::OK();
}

Status StockLevelBody(EngineTxn* txn, const StockLevelInput& in, StockLevelOutput* out) {
  DistrictRow d;
  SM_TRY(GetRow(txn, TableId::kDistrict, DistrictKey(in.w, in.d), &d));
  const uint32_t next = d.next_o_id;
  const uint32_t first = next > 20 ? next - 20 : 1;
  std::vector<uint32_t> items;
  items.reserve(20 * kMaxOrderLines);
  Status bad = Status::OK();
  Status scan = txn->Scan(TableId::kOrderLine, OrderKey(in.w, in.d, first), OrderKey(in.w, in.d, next),
                   false, [&](std::string_view, std::string_view value) {
                     uint32_t i_id = 0;
                     if (!DecodeField(value, &OrderLineRow::i_id, &i_id)) {
                       bad = Status::Corruption("tpcc.order_line: a row of the wrong size");
                       return false;
                     }
                     items.push_back(i_id);
                     return true;
                   });
  SM_TRY(FirstError(std::move(bad), std::move(scan)));
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  // One batched read: the stock rows lie on as many leaves as there are items.
  std::vector<std::string> keys;
  keys.reserve(items.size());
  for (uint32_t i : items) keys.push_back(StockKey(in.w, i));
  std::vector<std::string_view> key_views(keys.begin(), keys.end());
  uint32_t low = 0;
  size_t read = 0;
  Status decode = Status::OK();
  SM_TRY(txn->GetMany(TableId::kStock, key_views, /*for_update=*/false,
                      [&](size_t, std::string_view value) {
                        int32_t quantity = 0;
                        if (!DecodeField(value, &StockRow::quantity, &quantity)) {
                          decode = Status::Corruption(std::string(TableName(TableId::kStock)) +
                                                      ": a row of the wrong size");
                          return false;
                        }
                        ++read;
                        if (quantity < in.threshold) ++low;
                        return true;
                      }));
  SM_TRY(decode);
  if (read != keys.size()) {
    return Status::Corruption(std::string(TableName(TableId::kStock)) +
                              ": a row the workload needs is missing");
  }
  out->low_stock = low;
  return Status::OK();
}

}  // namespace

Status NewOrder(EngineTxn* txn, const NewOrderInput& in, NewOrderOutput* out,
                AccessOrder order) {
  *out = NewOrderOutput();
  SM_TRY(txn->Begin(TxnIsolation::kSerializable));
  Status s = NewOrderBody(txn, in, order, out);
  if (!s.ok()) {
    if (txn->active()) txn->Abort().PermitUnchecked();  // the first error is the one to report
    return s;
  }
  if (out->rolled_back) return txn->Abort();
  return txn->Commit();
}

Status Payment(EngineTxn* txn, const PaymentInput& in, PaymentOutput* out, AccessOrder order,
               YtdWrite ytd) {
  *out = PaymentOutput();
  return InTransaction(txn, TxnIsolation::kSerializable,
                       [&] { return PaymentBody(txn, in, order, ytd, out); });
}

Status OrderStatus(EngineTxn* txn, const OrderStatusInput& in, OrderStatusOutput* out) {
  *out = OrderStatusOutput();
  return InTransaction(txn, TxnIsolation::kSerializable,
                       [&] { return OrderStatusBody(txn, in, out); });
}

Status Delivery(EngineTxn* txn, const DeliveryInput& in, DeliveryOutput* out) {
  *out = DeliveryOutput();
  return InTransaction(txn, TxnIsolation::kSerializable, [&]() -> Status {
    for (uint8_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      SM_TRY(DeliverDistrict(txn, in, d, &out->delivered_o_id[d - 1]));
      if (out->delivered_o_id[d - 1] == 0) ++out->skipped;
    }
    return Status::OK();
  });
}

Status StockLevel(EngineTxn* txn, const StockLevelInput& in, StockLevelOutput* out) {
  *out = StockLevelOutput();
  return InTransaction(txn, TxnIsolation::kReadCommitted,
                       [&] { return StockLevelBody(txn, in, out); });
}

}  // namespace sm::tpcc
