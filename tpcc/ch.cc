// The CH-benCHmark tables, their loader and the query layer's schemas (contract in ch.h).
#include "tpcc/ch.h"

#include <chrono>
#include <cstdio>

#include "sm/common/assert.h"
#include "tpcc/engine.h"
#include "tpcc/keys.h"
#include "tpcc/random.h"

namespace sm::tpcc {

namespace {

using query::Encoding;
using query::TableSchema;
using query::Type;

// The CH-benCHmark's nations: key (an ASCII code), name, region.
struct NationDef {
  uint8_t key;
  const char* name;
  uint8_t region;
};
constexpr NationDef kNations[kChNations] = {
    {48, "Australia", 4},
    {49, "Belgium", 5},
    {50, "Cameroon", 1},
    {51, "Denmark", 5},
    {52, "Ecuador", 2},
    {53, "France", 5},
    {54, "Germany", 5},
    {55, "Hungary", 5},
    {56, "Italy", 5},
    {57, "Japan", 3},
    {65, "Kenya", 1},
    {66, "Lithuania", 5},
    {67, "Mexico", 2},
    {68, "Netherlands", 5},
    {69, "Oman", 1},
    {70, "Portugal", 5},
    {71, "Qatar", 1},
    {72, "Rwanda", 1},
    {73, "Serbia", 5},
    {74, "Togo", 1},
    {75, "United States", 2},
    {76, "Vietnam", 3},
    {77, "Singapore", 3},
    {78, "Cambodia", 3},
    {79, "Yemen", 1},
    {80, "Zimbabwe", 1},
    {81, "Argentina", 2},
    {82, "Bolivia", 2},
    {83, "Canada", 2},
    {84, "Dominican Republic", 2},
    {85, "Egypt", 1},
    {86, "Finnland", 5},
    {87, "Ghana", 1},
    {88, "Haiti", 2},
    {89, "India", 3},
    {90, "Jamaica", 4},
    {97, "Kazakhstan", 3},
    {98, "Luxembourg", 5},
    {99, "Morocco", 1},
    {100, "Norway", 5},
    {101, "Poland", 5},
    {102, "Peru", 2},
    {103, "Nicaragua", 2},
    {104, "Romania", 5},
    {105, "South Africa", 1},
    {106, "Thailand", 3},
    {107, "United Kingdom", 5},
    {108, "Venezuela", 2},
    {109, "Liechtenstein", 5},
    {110, "Austria", 5},
    {111, "Laos", 3},
    {112, "Zambia", 1},
    {113, "Switzerland", 5},
    {114, "China", 3},
    {115, "Papua New Guinea", 4},
    {116, "East Timor", 4},
    {117, "Bulgaria", 5},
    {118, "Brazil", 2},
    {119, "Albania", 5},
    {120, "Andorra", 5},
    {121, "Belize", 2},
    {122, "Botswana", 1},
};
constexpr const char* kRegionNames[kChRegions] = {"Africa", "America", "Asia", "Australia",
                                                  "Europe"};

Status Insert(Table* table, Transaction* txn, const std::string& key, std::string_view value) {
  return table->Insert(txn, key, value);
}

Status OpenOrCreate(Database* db, const char* name, Table** table) {
  Status s = db->OpenTable(name, table);
  if (s.IsNotFound()) return db->CreateTable(name, table);
  return s;
}

Status LoadNationsAndRegions(Database* db, Transaction* txn, Rng& rng, uint64_t* rows) {
  Table* regions = nullptr;
  Table* nations = nullptr;
  SM_TRY(OpenOrCreate(db, kRegionTable, &regions));
  SM_TRY(OpenOrCreate(db, kNationTable, &nations));
  for (int r = 0; r < kChRegions; ++r) {
    RegionRow row{};
    Set(row.name, kRegionNames[r]);
    Set(row.comment, AString(rng, 31, 152));
    SM_TRY(Insert(regions, txn, RegionKey(static_cast<uint8_t>(r + 1)), RowBytes(row)));
    ++*rows;
  }
  for (const NationDef& n : kNations) {
    NationRow row{};
    row.regionkey = n.region;
    Set(row.name, n.name);
    Set(row.comment, AString(rng, 31, 114));
    SM_TRY(Insert(nations, txn, NationKey(n.key), RowBytes(row)));
    ++*rows;
  }
  return Status::OK();
}

Status LoadSuppliers(Database* db, Transaction* txn, Rng& rng, uint64_t* rows) {
  Table* suppliers = nullptr;
  SM_TRY(OpenOrCreate(db, kSupplierTable, &suppliers));
  for (uint32_t key = 0; key < kChSuppliers; ++key) {
    SupplierRow row{};
    row.acctbal_cents = rng.Uniform(-99999, 999999);  // TPC-H's [-999.99, 9,999.99]
    row.nationkey = kNations[rng.Uniform(0, kChNations - 1)].key;
    char name[32];
    std::snprintf(name, sizeof(name), "Supplier#%09u", key);
    Set(row.name, name);
    Set(row.address, AString(rng, 10, 40));
    Set(row.phone, NString(rng, 15, 15));
    Set(row.comment, AString(rng, 25, 100));
    SM_TRY(Insert(suppliers, txn, SupplierKey(key), RowBytes(row)));
    ++*rows;
  }
  return Status::OK();
}

}  // namespace

std::string SupplierKey(uint32_t suppkey) { return KeyBuilder().U32(suppkey).Release(); }
std::string NationKey(uint8_t nationkey) { return KeyBuilder().U8(nationkey).Release(); }
std::string RegionKey(uint8_t regionkey) { return KeyBuilder().U8(regionkey).Release(); }

Status HasCh(Database* db, bool* has) {
  *has = false;
  Table* meta = nullptr;
  SM_TRY(db->OpenTable(TableName(TableId::kMeta), &meta));
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn, Isolation::kReadCommitted));
  std::string value;
  Status s = meta->Get(txn.get(), kChMetaKey, &value);
  if (!s.IsNotFound()) SM_TRY(s);
  *has = s.ok();
  return txn->Commit();
}

Status LoadCh(Database* db, uint64_t seed, ChLoadResult* result) {
  *result = ChLoadResult();
  auto start = std::chrono::steady_clock::now();
  bool has = false;
  SM_TRY(HasCh(db, &has));
  if (has) return Status::OK();
  // Tables of an attempt that did not finish: start again from nothing.
  for (const char* name : {kSupplierTable, kNationTable, kRegionTable}) {
    Status s = db->DropTable(name);
    if (!s.IsNotFound()) SM_TRY(s);
  }
  Table* meta = nullptr;
  SM_TRY(db->OpenTable(TableName(TableId::kMeta), &meta));
  Rng rng(DeriveSeed(seed, 0xC4));
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn));
  SM_TRY(LoadNationsAndRegions(db, txn.get(), rng, &result->rows));
  SM_TRY(LoadSuppliers(db, txn.get(), rng, &result->rows));
  std::string marker(reinterpret_cast<const char*>(&seed), sizeof(seed));
  SM_TRY(meta->Insert(txn.get(), kChMetaKey, marker));
  SM_TRY(txn->Commit(CommitMode::kDurable));
  result->loaded = true;
  result->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Status::OK();
}

const std::vector<std::string>& ChTableNames() {
  static const std::vector<std::string> kNames = {"warehouse", "district", "customer",   "history",
                                                  "new_order", "oorder",   "order_line", "item",
                                                  "stock",     "supplier", "nation",     "region"};
  return kNames;
}

namespace {

// Columns of a packed row struct: CHAR is NUL-padded char(n); money in cents; dates in
// microseconds; rates (tax, discount) as integers in 1/10,000.
#define SM_COL(schema, Row, member, name, type, encoding) \
  (schema).ValueColumn(name, type, encoding, offsetof(Row, member))
#define SM_CHAR(schema, Row, member, name) \
  (schema).CharColumn(name, offsetof(Row, member), sizeof(Row::member))

TableSchema Warehouse() {
  TableSchema s("warehouse", TableName(TableId::kWarehouse), 2, sizeof(WarehouseRow));
  s.KeyColumn("w_id", Type::kInt, Encoding::kBigU16, 0);
  SM_CHAR(s, WarehouseRow, name, "w_name");
  SM_CHAR(s, WarehouseRow, street_1, "w_street_1");
  SM_CHAR(s, WarehouseRow, street_2, "w_street_2");
  SM_CHAR(s, WarehouseRow, city, "w_city");
  SM_CHAR(s, WarehouseRow, state, "w_state");
  SM_CHAR(s, WarehouseRow, zip, "w_zip");
  SM_COL(s, WarehouseRow, tax, "w_tax", Type::kInt, Encoding::kI32);
  SM_COL(s, WarehouseRow, ytd_cents, "w_ytd", Type::kMoney, Encoding::kI64);
  return s;
}

TableSchema District() {
  TableSchema s("district", TableName(TableId::kDistrict), 3, sizeof(DistrictRow));
  s.KeyColumn("d_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("d_id", Type::kInt, Encoding::kBigU8, 2);
  SM_CHAR(s, DistrictRow, name, "d_name");
  SM_CHAR(s, DistrictRow, street_1, "d_street_1");
  SM_CHAR(s, DistrictRow, street_2, "d_street_2");
  SM_CHAR(s, DistrictRow, city, "d_city");
  SM_CHAR(s, DistrictRow, state, "d_state");
  SM_CHAR(s, DistrictRow, zip, "d_zip");
  SM_COL(s, DistrictRow, tax, "d_tax", Type::kInt, Encoding::kI32);
  SM_COL(s, DistrictRow, ytd_cents, "d_ytd", Type::kMoney, Encoding::kI64);
  SM_COL(s, DistrictRow, next_o_id, "d_next_o_id", Type::kInt, Encoding::kU32);
  return s;
}

TableSchema Customer() {
  TableSchema s("customer", TableName(TableId::kCustomer), 7, RowTail<CustomerRow>::kFixedBytes);
  s.KeyColumn("c_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("c_d_id", Type::kInt, Encoding::kBigU8, 2);
  s.KeyColumn("c_id", Type::kInt, Encoding::kBigU32, 3);
  SM_CHAR(s, CustomerRow, first, "c_first");
  SM_CHAR(s, CustomerRow, middle, "c_middle");
  SM_CHAR(s, CustomerRow, last, "c_last");
  SM_CHAR(s, CustomerRow, street_1, "c_street_1");
  SM_CHAR(s, CustomerRow, street_2, "c_street_2");
  SM_CHAR(s, CustomerRow, city, "c_city");
  SM_CHAR(s, CustomerRow, state, "c_state");
  SM_CHAR(s, CustomerRow, zip, "c_zip");
  SM_CHAR(s, CustomerRow, phone, "c_phone");
  SM_COL(s, CustomerRow, since_us, "c_since", Type::kDate, Encoding::kI64);
  SM_CHAR(s, CustomerRow, credit, "c_credit");
  SM_COL(s, CustomerRow, credit_lim_cents, "c_credit_lim", Type::kMoney, Encoding::kI64);
  SM_COL(s, CustomerRow, discount, "c_discount", Type::kInt, Encoding::kI32);
  SM_COL(s, CustomerRow, balance_cents, "c_balance", Type::kMoney, Encoding::kI64);
  SM_COL(s, CustomerRow, ytd_payment_cents, "c_ytd_payment", Type::kMoney, Encoding::kI64);
  SM_COL(s, CustomerRow, payment_cnt, "c_payment_cnt", Type::kInt, Encoding::kU32);
  SM_COL(s, CustomerRow, delivery_cnt, "c_delivery_cnt", Type::kInt, Encoding::kU32);
  s.TailColumn("c_data", offsetof(CustomerRow, data));
  return s;
}

TableSchema History() {
  // The key (w, d, date, sequence) repeats columns of the value; the value is read.
  TableSchema s("history", TableName(TableId::kHistory), 15, RowTail<HistoryRow>::kFixedBytes);
  SM_COL(s, HistoryRow, c_id, "h_c_id", Type::kInt, Encoding::kU32);
  SM_COL(s, HistoryRow, c_d_id, "h_c_d_id", Type::kInt, Encoding::kU8);
  SM_COL(s, HistoryRow, c_w_id, "h_c_w_id", Type::kInt, Encoding::kU16);
  SM_COL(s, HistoryRow, d_id, "h_d_id", Type::kInt, Encoding::kU8);
  SM_COL(s, HistoryRow, w_id, "h_w_id", Type::kInt, Encoding::kU16);
  SM_COL(s, HistoryRow, date_us, "h_date", Type::kDate, Encoding::kI64);
  SM_COL(s, HistoryRow, amount_cents, "h_amount", Type::kMoney, Encoding::kI64);
  s.TailColumn("h_data", offsetof(HistoryRow, data));
  return s;
}

TableSchema NewOrder() {
  TableSchema s("new_order", TableName(TableId::kNewOrder), 7, 0);
  s.KeyColumn("no_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("no_d_id", Type::kInt, Encoding::kBigU8, 2);
  s.KeyColumn("no_o_id", Type::kInt, Encoding::kBigU32, 3);
  return s;
}

TableSchema Order() {
  TableSchema s("oorder", TableName(TableId::kOrder), 7, sizeof(OrderRow));
  s.KeyColumn("o_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("o_d_id", Type::kInt, Encoding::kBigU8, 2);
  s.KeyColumn("o_id", Type::kInt, Encoding::kBigU32, 3);
  SM_COL(s, OrderRow, c_id, "o_c_id", Type::kInt, Encoding::kU32);
  SM_COL(s, OrderRow, entry_d_us, "o_entry_d", Type::kDate, Encoding::kI64);
  SM_COL(s, OrderRow, carrier_id, "o_carrier_id", Type::kInt, Encoding::kU8).NullIfZero();
  SM_COL(s, OrderRow, ol_cnt, "o_ol_cnt", Type::kInt, Encoding::kU8);
  SM_COL(s, OrderRow, all_local, "o_all_local", Type::kInt, Encoding::kU8);
  return s;
}

// The index entry is OrderByCustomerKey: (w, d, c), then the order's own key (w, d, o), which
// no plan reads.
TableSchema OrderByCustomer() {
  TableSchema s("oorder_by_customer", TableName(TableId::kOrderByCustomer), 14, 0);
  s.KeyColumn("o_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("o_d_id", Type::kInt, Encoding::kBigU8, 2);
  s.KeyColumn("o_c_id", Type::kInt, Encoding::kBigU32, 3);
  return s;
}

TableSchema OrderLine() {
  TableSchema s("order_line", TableName(TableId::kOrderLine), 8, sizeof(OrderLineRow));
  s.KeyColumn("ol_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("ol_d_id", Type::kInt, Encoding::kBigU8, 2);
  s.KeyColumn("ol_o_id", Type::kInt, Encoding::kBigU32, 3);
  s.KeyColumn("ol_number", Type::kInt, Encoding::kBigU8, 7);
  SM_COL(s, OrderLineRow, i_id, "ol_i_id", Type::kInt, Encoding::kU32);
  SM_COL(s, OrderLineRow, supply_w_id, "ol_supply_w_id", Type::kInt, Encoding::kU16);
  SM_COL(s, OrderLineRow, delivery_d_us, "ol_delivery_d", Type::kDate, Encoding::kI64).NullIfZero();
  SM_COL(s, OrderLineRow, quantity, "ol_quantity", Type::kInt, Encoding::kU8);
  SM_COL(s, OrderLineRow, amount_cents, "ol_amount", Type::kMoney, Encoding::kI64);
  SM_CHAR(s, OrderLineRow, dist_info, "ol_dist_info");
  return s;
}

TableSchema Item() {
  TableSchema s("item", TableName(TableId::kItem), 4, RowTail<ItemRow>::kFixedBytes);
  s.KeyColumn("i_id", Type::kInt, Encoding::kBigU32, 0);
  SM_COL(s, ItemRow, im_id, "i_im_id", Type::kInt, Encoding::kU32);
  SM_CHAR(s, ItemRow, name, "i_name");
  SM_COL(s, ItemRow, price_cents, "i_price", Type::kMoney, Encoding::kI32);
  s.TailColumn("i_data", offsetof(ItemRow, data));
  return s;
}

TableSchema Stock() {
  TableSchema s("stock", TableName(TableId::kStock), 6, RowTail<StockRow>::kFixedBytes);
  s.KeyColumn("s_w_id", Type::kInt, Encoding::kBigU16, 0);
  s.KeyColumn("s_i_id", Type::kInt, Encoding::kBigU32, 2);
  SM_COL(s, StockRow, quantity, "s_quantity", Type::kInt, Encoding::kI32);
  for (int d = 0; d < kDistrictsPerWarehouse; ++d) {
    char name[16];
    std::snprintf(name, sizeof(name), "s_dist_%02d", d + 1);
    s.CharColumn(name, static_cast<uint32_t>(offsetof(StockRow, dist) + 24 * d), 24);
  }
  SM_COL(s, StockRow, ytd, "s_ytd", Type::kInt, Encoding::kU32);
  SM_COL(s, StockRow, order_cnt, "s_order_cnt", Type::kInt, Encoding::kU32);
  SM_COL(s, StockRow, remote_cnt, "s_remote_cnt", Type::kInt, Encoding::kU32);
  s.TailColumn("s_data", offsetof(StockRow, data));
  return s;
}

TableSchema Supplier() {
  TableSchema s("supplier", kSupplierTable, 4, RowTail<SupplierRow>::kFixedBytes);
  s.KeyColumn("su_suppkey", Type::kInt, Encoding::kBigU32, 0);
  SM_CHAR(s, SupplierRow, name, "su_name");
  SM_CHAR(s, SupplierRow, address, "su_address");
  SM_COL(s, SupplierRow, nationkey, "su_nationkey", Type::kInt, Encoding::kU8);
  SM_CHAR(s, SupplierRow, phone, "su_phone");
  SM_COL(s, SupplierRow, acctbal_cents, "su_acctbal", Type::kMoney, Encoding::kI64);
  s.TailColumn("su_comment", offsetof(SupplierRow, comment));
  return s;
}

TableSchema Nation() {
  TableSchema s("nation", kNationTable, 1, RowTail<NationRow>::kFixedBytes);
  s.KeyColumn("n_nationkey", Type::kInt, Encoding::kBigU8, 0);
  SM_CHAR(s, NationRow, name, "n_name");
  SM_COL(s, NationRow, regionkey, "n_regionkey", Type::kInt, Encoding::kU8);
  s.TailColumn("n_comment", offsetof(NationRow, comment));
  return s;
}

TableSchema Region() {
  TableSchema s("region", kRegionTable, 1, RowTail<RegionRow>::kFixedBytes);
  s.KeyColumn("r_regionkey", Type::kInt, Encoding::kBigU8, 0);
  SM_CHAR(s, RegionRow, name, "r_name");
  s.TailColumn("r_comment", offsetof(RegionRow, comment));
  return s;
}

#undef SM_COL
#undef SM_CHAR

}  // namespace

Status RegisterChCatalog(Database* db, uint32_t warehouses, const Scale& scale,
                         query::Catalog* catalog) {
  uint64_t w = warehouses;
  uint64_t districts = w * kDistrictsPerWarehouse;
  uint64_t orders = districts * scale.customers_per_district;
  std::vector<std::pair<TableSchema, uint64_t>> tables = {
      {Warehouse(), w},
      {District(), districts},
      {Customer(), orders},
      {History(), orders},
      {NewOrder(), districts * scale.new_orders_per_district()},
      {Order(), orders},
      {OrderByCustomer(), orders},
      {OrderLine(), orders * 10},
      {Item(), scale.items},
      {Stock(), w * scale.items},
  };
  bool has = false;
  SM_TRY(HasCh(db, &has));
  if (has) {
    tables.emplace_back(Supplier(), kChSuppliers);
    tables.emplace_back(Nation(), kChNations);
    tables.emplace_back(Region(), kChRegions);
  }
  for (auto& [schema, rows] : tables) {
    schema.set_row_estimate(rows);
    SM_TRY(catalog->Register(std::move(schema)));
  }
  return Status::OK();
}

}  // namespace sm::tpcc
