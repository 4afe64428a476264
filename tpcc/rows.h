// The TPC-C schema (specification revision 5.11, clause 1.3): rows as fixed-layout structs,
// the scale of a database, and the driver's metadata row.
//
// Owns: the value format of every table, the Scale knobs, and Meta (what a loaded database
// remembers about its load).
//
// Value format: the struct's bytes as laid out in memory (packed, no padding, little-endian
// integers: static_asserted below), with one exception that keeps rows compact: a row whose
// last member is a variable-length string (CUSTOMER.C_DATA, ITEM.I_DATA, STOCK.S_DATA,
// HISTORY.H_DATA) is stored without the unused tail of that string. Every string column is a
// char array padded with NUL bytes (never NUL-terminated when full); View() reads it back.
// Decoding copies the stored bytes and zero-fills the rest, and rejects a value longer than
// the struct or shorter than the fixed part.
//
// Units: money in cents (int64; exact sums for the consistency conditions), tax and discount
// rates in 1/10,000 (W_TAX 0.1234 is 1234), dates in microseconds since the Unix epoch, 0
// for NULL (O_CARRIER_ID and OL_DELIVERY_D).
//
// Keys: tpcc/keys.h. NEW-ORDER rows have an empty value; the index entries too.
//
// Thread/fiber safety: values.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "sm/common/assert.h"

namespace sm::tpcc {

static_assert(std::endian::native == std::endian::little,
              "rows are stored in the host's byte order, which must be little-endian");

inline constexpr int kDistrictsPerWarehouse = 10;
// Warehouse ids are 16-bit in every key (tpcc/keys.h).
inline constexpr uint32_t kMaxWarehouses = 65535;

// The size of a database. Standard() is the specification's; tests may load fewer items and
// customers (every other rule is scaled along: NEW-ORDER rows are the last 30 % of the orders
// of each district, as 900 of 3,000 are).
struct Scale {
  uint32_t items = 100000;                 // ITEM rows, and STOCK rows per warehouse
  uint32_t customers_per_district = 3000;  // CUSTOMER rows, and ORDER rows per district

  static Scale Standard() { return Scale{}; }
  // The orders that are still undelivered after the load: the last 30 %.
  uint32_t new_orders_per_district() const { return customers_per_district * 3 / 10; }
  // O_ID of the first undelivered order (2101 at the standard scale).
  uint32_t first_new_order() const {
    return customers_per_district - new_orders_per_district() + 1;
  }
  bool standard() const { return items == 100000 && customers_per_district == 3000; }
  bool operator==(const Scale&) const = default;
};

// A NUL-padded string column read back.
template <size_t N>
inline std::string_view View(const char (&column)[N]) {
  return std::string_view(column, strnlen(column, N));
}
template <size_t N>
inline void Set(char (&column)[N], std::string_view value) {
  size_t n = value.size() < N ? value.size() : N;
  std::memcpy(column, value.data(), n);
  std::memset(column + n, 0, N - n);
}

#pragma pack(push, 1)

struct WarehouseRow {
  int64_t ytd_cents;
  int32_t tax;  // 1/10,000
  char name[10], street_1[20], street_2[20], city[20], state[2], zip[9];
};

struct DistrictRow {
  int64_t ytd_cents;
  int32_t tax;  // 1/10,000
  uint32_t next_o_id;
  char name[10], street_1[20], street_2[20], city[20], state[2], zip[9];
};

struct CustomerRow {
  int64_t credit_lim_cents;
  int64_t balance_cents;
  int64_t ytd_payment_cents;
  int64_t since_us;
  int32_t discount;  // 1/10,000
  uint32_t payment_cnt;
  uint32_t delivery_cnt;
  char first[16], middle[2], last[16], street_1[20], street_2[20], city[20], state[2], zip[9];
  char phone[16], credit[2];
  char data[500];  // variable length: stored without its unused tail
};

struct HistoryRow {
  int64_t amount_cents;
  int64_t date_us;
  uint32_t c_id;
  uint16_t c_w_id;
  uint8_t c_d_id;
  uint16_t w_id;
  uint8_t d_id;
  char data[24];  // variable length
};

struct OrderRow {
  int64_t entry_d_us;
  uint32_t c_id;
  uint8_t carrier_id;  // 0: NULL
  uint8_t ol_cnt;
  uint8_t all_local;
};

struct OrderLineRow {
  int64_t delivery_d_us;  // 0: NULL
  int64_t amount_cents;
  uint32_t i_id;
  uint16_t supply_w_id;
  uint8_t quantity;
  char dist_info[24];
};

struct ItemRow {
  int32_t price_cents;
  uint32_t im_id;
  char name[24];
  char data[50];  // variable length
};

struct StockRow {
  int32_t quantity;
  uint32_t ytd;
  uint32_t order_cnt;
  uint32_t remote_cnt;
  char dist[kDistrictsPerWarehouse][24];
  char data[50];  // variable length
};

// The driver's metadata, one row under key "tpcc" in the meta table. Written last by the
// loader (in the transaction that makes the load durable), so its presence means the load
// completed.
struct MetaRow {
  uint32_t format_version;
  uint32_t warehouses;
  uint32_t items;
  uint32_t customers_per_district;
  uint32_t c_last_load;  // the NURand C constants of the load (clause 2.1.6)
  uint32_t c_id_load;
  uint32_t ol_i_id_load;
  uint64_t load_seed;
  int64_t loaded_at_us;
  uint32_t runs;  // `tpcc run`s started since the load (condition 11 holds only before the first)
};

#pragma pack(pop)

inline constexpr uint32_t kMetaFormatVersion = 1;
inline constexpr std::string_view kMetaKey = "tpcc";

// Which rows end in a variable-length string, and where it starts.
template <typename Row>
struct RowTail {
  static constexpr size_t kFixedBytes = sizeof(Row);
  static size_t VariableBytes(const Row&) { return 0; }
};
#define SM_TPCC_VARIABLE_TAIL(Row, member)                                      \
  template <>                                                                   \
  struct RowTail<Row> {                                                         \
    static constexpr size_t kFixedBytes = offsetof(Row, member);                \
    static size_t VariableBytes(const Row& r) { return View(r.member).size(); } \
  }
SM_TPCC_VARIABLE_TAIL(CustomerRow, data);
SM_TPCC_VARIABLE_TAIL(HistoryRow, data);
SM_TPCC_VARIABLE_TAIL(ItemRow, data);
SM_TPCC_VARIABLE_TAIL(StockRow, data);
#undef SM_TPCC_VARIABLE_TAIL

// The stored value of `row`: a view of its own bytes (valid while the row is), so a write
// needs no copy.
template <typename Row>
inline std::string_view RowBytes(const Row& row) {
  static_assert(std::is_trivially_copyable_v<Row>);
  static_assert(std::has_unique_object_representations_v<Row>, "a row must have no padding");
  return std::string_view(reinterpret_cast<const char*>(&row),
                          RowTail<Row>::kFixedBytes + RowTail<Row>::VariableBytes(row));
}
template <typename Row>
inline void EncodeRow(const Row& row, std::string* out) {
  out->assign(RowBytes(row));
}
template <typename Row>
inline std::string EncodeRow(const Row& row) {
  std::string out;
  EncodeRow(row, &out);
  return out;
}
// False if `bytes` cannot be a Row.
template <typename Row>
[[nodiscard]] inline bool DecodeRow(std::string_view bytes, Row* row) {
  if (bytes.size() < RowTail<Row>::kFixedBytes || bytes.size() > sizeof(Row)) return false;
  std::memcpy(row, bytes.data(), bytes.size());
  std::memset(reinterpret_cast<char*>(row) + bytes.size(), 0, sizeof(Row) - bytes.size());
  return true;
}

// One field of the fixed part of a stored Row, read without copying the rest of the row: for a
// reader that keeps only that field. False if `bytes` cannot be a Row (as DecodeRow).
template <typename Row, typename Field>
[[nodiscard]] inline bool DecodeField(std::string_view bytes, Field Row::*member, Field* field) {
  static_assert(std::is_trivially_copyable_v<Row>);
  if (bytes.size() < RowTail<Row>::kFixedBytes || bytes.size() > sizeof(Row)) return false;
  Row layout;  // only its members' addresses are taken: the offset folds to a constant
  const size_t offset = static_cast<size_t>(reinterpret_cast<const char*>(&(layout.*member)) -
                                            reinterpret_cast<const char*>(&layout));
  SM_DASSERT(offset + sizeof(Field) <= RowTail<Row>::kFixedBytes);
  std::memcpy(field, bytes.data() + offset, sizeof(Field));
  return true;
}

}  // namespace sm::tpcc
