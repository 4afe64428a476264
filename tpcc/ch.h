// CH-benCHmark over the TPC-C database (Cole et al., DBTest 2011): its three extra tables
// (SUPPLIER, NATION, REGION), their loader, and the query layer's schemas of all twelve tables.
//
// Owns: the CH rows and keys, LoadCh (which adds the CH tables to a loaded TPC-C database),
// HasCh, and RegisterChCatalog (TableSchemas that read every TPC-C and CH row as it is stored,
// under the column names of the CH-benCHmark's SQL: w_id, ol_amount, su_suppkey, ...).
//
// The CH definition adds no stored columns to TPC-C's tables: a stock row's supplier is
// mod(s_w_id * s_i_id, 10000) and a customer's nation is ascii(substr(c_state, 1, 1)), computed
// by the queries. SUPPLIER has 10,000 rows with keys 0 to 9,999 (so that every stock row has
// its supplier); NATION has 62 rows keyed by the ASCII codes of '0'-'9', 'A'-'Z' and 'a'-'z'
// with the CH-benCHmark's nation names and regions; REGION has its 5 regions.
//
// Invariants:
//   1. The CH tables are complete exactly when the meta table holds the key kChMetaKey, which
//      the loader writes in its last transaction.
//   2. Row formats follow tpcc/rows.h's rules: packed little-endian structs, NUL-padded char
//      arrays, the last string stored without its unused tail.
//
// Thread/fiber safety: LoadCh is run by one thread while nothing else uses the database;
// the rest are pure or read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "query/schema.h"
#include "sm/sm.h"
#include "tpcc/rows.h"

namespace sm::tpcc {

#pragma pack(push, 1)
struct SupplierRow {
  int64_t acctbal_cents;
  uint8_t nationkey;
  char name[25], address[40], phone[15];
  char comment[101];  // variable length
};
struct NationRow {
  uint8_t regionkey;
  char name[25];
  char comment[152];  // variable length
};
struct RegionRow {
  char name[25];
  char comment[152];  // variable length
};
#pragma pack(pop)

template <>
struct RowTail<SupplierRow> {
  static constexpr size_t kFixedBytes = offsetof(SupplierRow, comment);
  static size_t VariableBytes(const SupplierRow& r) { return View(r.comment).size(); }
};
template <>
struct RowTail<NationRow> {
  static constexpr size_t kFixedBytes = offsetof(NationRow, comment);
  static size_t VariableBytes(const NationRow& r) { return View(r.comment).size(); }
};
template <>
struct RowTail<RegionRow> {
  static constexpr size_t kFixedBytes = offsetof(RegionRow, comment);
  static size_t VariableBytes(const RegionRow& r) { return View(r.comment).size(); }
};

inline constexpr uint32_t kChSuppliers = 10000;
inline constexpr int kChNations = 62;
inline constexpr int kChRegions = 5;
inline constexpr const char* kSupplierTable = "ch.supplier";
inline constexpr const char* kNationTable = "ch.nation";
inline constexpr const char* kRegionTable = "ch.region";
inline constexpr std::string_view kChMetaKey = "ch";

// Keys: SUPPLIER by su_suppkey (4 bytes), NATION by n_nationkey and REGION by r_regionkey (one
// byte each), big-endian as tpcc/keys.h writes them.
std::string SupplierKey(uint32_t suppkey);
std::string NationKey(uint8_t nationkey);
std::string RegionKey(uint8_t regionkey);

// True if the database holds complete CH tables.
[[nodiscard]] Status HasCh(Database* db, bool* has);

struct ChLoadResult {
  bool loaded = false;  // false: the tables were there already
  uint64_t rows = 0;
  double seconds = 0;
};
// Adds the CH tables to `db` (a loaded TPC-C database), or does nothing if they are complete.
// Tables left by an interrupted earlier attempt are dropped and loaded again.
[[nodiscard]] Status LoadCh(Database* db, uint64_t seed, ChLoadResult* result);

// The schemas of the nine TPC-C tables and, if the database has them, the three CH tables,
// named as the CH-benCHmark's SQL names them (warehouse, district, customer, history,
// new_order, oorder, order_line, item, stock, supplier, nation, region), with row estimates for
// `warehouses` warehouses of `scale`; and TPC-C's index of orders by customer as the table
// oorder_by_customer (key columns o_w_id, o_d_id, o_c_id; no value columns), which plans
// probe with an index join. ChTableNames() does not list it: it holds no data of its own.
[[nodiscard]] Status RegisterChCatalog(Database* db, uint32_t warehouses, const Scale& scale,
                                       query::Catalog* catalog);

// The table names RegisterChCatalog registers, in the order of the specification.
const std::vector<std::string>& ChTableNames();

}  // namespace sm::tpcc
