// Schemas: how a stored table's key and value bytes read as typed columns (TableSchema), the
// columns an operator produces (RowSchema), and the Catalog that maps table names to both the
// engine's tables and their schemas.
//
// Owns: Column, Encoding, TableSchema (with its validation and the column decoder), RowSchema
// (with name resolution) and Catalog.
//
// A table is read as it is stored: a Column names an encoding at a fixed offset of the key or
// the value, so a scan decodes only the columns its plan uses, straight from the bytes the
// engine returns, with no second copy of the table in another format.
//
// Invariants:
//   1. A TableSchema is valid (TableSchema::Validate) before a Catalog accepts it: column
//      names are unique and non-empty, every fixed-width column lies inside the part's fixed
//      bytes, and a kTailString column is the only one at or after its offset in its part.
//   2. A column's logical type matches its encoding: integer encodings read as kInt, kMoney,
//      kDate or kBool; kF64 as kDouble; kChar and kTailString as kString.
//   3. RowSchema names are unique up to qualification: "n1.n_name" and "n2.n_name" may share
//      the unqualified name "n_name", which is then ambiguous (Resolve says so).
//
// Thread/fiber safety: TableSchema and RowSchema are values. A Catalog is read-only once built
// (Register before sharing it); its methods are then safe from any number of threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "query/value.h"
#include "sm/common/status.h"
#include "sm/sm.h"

namespace sm::query {

// How a column's bytes are stored.
enum class Encoding : uint8_t {
  kI8,
  kI16,
  kI32,
  kI64,  // little-endian two's complement (a value's integers)
  kU8,
  kU16,
  kU32,
  kU64,  // little-endian unsigned
  kBigU8,
  kBigU16,
  kBigU32,
  kBigU64,      // big-endian unsigned (memcmp-ordered key columns)
  kF64,         // IEEE double, little-endian
  kChar,        // fixed char(width), NUL-padded, not NUL-terminated when full
  kTailString,  // the rest of the part's bytes, NUL-padded or shorter
};
const char* EncodingName(Encoding encoding);
// Bytes a fixed-width encoding occupies; 0 for kTailString; kChar has the column's width.
uint32_t FixedWidth(Encoding encoding);

enum class Part : uint8_t { kKey, kValue };

struct Column {
  std::string name;
  Type type = Type::kInt;
  Part part = Part::kValue;
  Encoding encoding = Encoding::kI64;
  uint32_t offset = 0;        // byte offset in the part
  uint32_t width = 0;         // kChar: n; otherwise FixedWidth(encoding) (Validate fills it in)
  bool null_if_zero = false;  // a stored 0 reads as NULL (TPC-C's nullable columns)
};

class TableSchema {
 public:
  TableSchema() = default;
  // `name`: what plans call the table; `table`: the engine's table behind it;
  // `fixed_*_bytes`: the key and value bytes every row has (a row's value may end early only
  // inside a kTailString column).
  TableSchema(std::string name, std::string table, uint32_t fixed_key_bytes,
              uint32_t fixed_value_bytes);

  TableSchema& Add(Column column);
  // Shorthands for the common columns.
  TableSchema& KeyColumn(std::string name, Type type, Encoding encoding, uint32_t offset);
  TableSchema& ValueColumn(std::string name, Type type, Encoding encoding, uint32_t offset);
  TableSchema& CharColumn(std::string name, uint32_t offset, uint32_t width);
  TableSchema& TailColumn(std::string name, uint32_t offset);
  TableSchema& NullIfZero();  // marks the last column added

  [[nodiscard]] Status Validate() const;

  const std::string& name() const { return name_; }
  const std::string& table() const { return table_; }
  const std::vector<Column>& columns() const { return columns_; }
  uint32_t fixed_key_bytes() const { return fixed_key_bytes_; }
  uint32_t fixed_value_bytes() const { return fixed_value_bytes_; }
  // Index of the column called `name`, or -1.
  int Find(std::string_view name) const;
  // The key columns in key order (by offset). InvalidArgument unless they are big-endian
  // integers that tile the key's first bytes without gaps (what a key prefix can be built
  // from).
  [[nodiscard]] Status KeyColumns(std::vector<const Column*>* out) const;
  // An estimate of the row count for EXPLAIN; 0 if unknown.
  uint64_t row_estimate() const { return row_estimate_; }
  void set_row_estimate(uint64_t rows) { row_estimate_ = rows; }

 private:
  std::string name_;
  std::string table_;
  uint32_t fixed_key_bytes_ = 0;
  uint32_t fixed_value_bytes_ = 0;
  uint64_t row_estimate_ = 0;
  std::vector<Column> columns_;
};

namespace detail {
template <typename T>
inline T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
inline uint64_t LoadBigEndian16(const char* p) { return __builtin_bswap16(Load<uint16_t>(p)); }
inline uint64_t LoadBigEndian32(const char* p) { return __builtin_bswap32(Load<uint32_t>(p)); }
inline uint64_t LoadBigEndian64(const char* p) { return __builtin_bswap64(Load<uint64_t>(p)); }
}  // namespace detail

// Decodes column `c` of a row whose parts are `key` and `value`. The caller has checked that
// the parts are at least the schema's fixed sizes (a kTailString reads what is there).
// String values point into the parts. Inline: a scan calls it for every column of every row.
[[gnu::always_inline]] inline Value DecodeColumn(const Column& c, std::string_view key,
                                                 std::string_view value) {
  using detail::Load;
  std::string_view part = c.part == Part::kKey ? key : value;
  const char* p = part.data() + c.offset;
  Value v;
  switch (c.encoding) {
    case Encoding::kI8:
      v.i = Load<int8_t>(p);
      break;
    case Encoding::kI16:
      v.i = Load<int16_t>(p);
      break;
    case Encoding::kI32:
      v.i = Load<int32_t>(p);
      break;
    case Encoding::kI64:
      v.i = Load<int64_t>(p);
      break;
    case Encoding::kU8:
      v.i = Load<uint8_t>(p);
      break;
    case Encoding::kU16:
      v.i = Load<uint16_t>(p);
      break;
    case Encoding::kU32:
      v.i = Load<uint32_t>(p);
      break;
    case Encoding::kU64:
      v.i = static_cast<int64_t>(Load<uint64_t>(p));
      break;
    case Encoding::kBigU8:
      v.i = static_cast<uint8_t>(*p);
      break;
    case Encoding::kBigU16:
      v.i = static_cast<int64_t>(detail::LoadBigEndian16(p));
      break;
    case Encoding::kBigU32:
      v.i = static_cast<int64_t>(detail::LoadBigEndian32(p));
      break;
    case Encoding::kBigU64:
      v.i = static_cast<int64_t>(detail::LoadBigEndian64(p));
      break;
    case Encoding::kF64:
      v.d = Load<double>(p);
      break;
    case Encoding::kChar:
      v.s = p;
      v.len = static_cast<uint32_t>(strnlen(p, c.width));
      return v;
    case Encoding::kTailString: {
      size_t available = part.size() > c.offset ? part.size() - c.offset : 0;
      v.s = p;
      v.len = static_cast<uint32_t>(strnlen(p, available));
      return v;
    }
  }
  v.null = c.null_if_zero && v.i == 0;
  return v;
}

// Appends `v` (not NULL) in key column `c`'s encoding; false if no key can hold it (a negative
// value, or one wider than the column).
bool AppendKeyValue(const Column& c, const Value& v, std::string* out);

// The columns an operator produces.
struct OutputColumn {
  std::string name;  // possibly qualified: "n1.n_name"
  Type type;
};

class RowSchema {
 public:
  RowSchema() = default;
  explicit RowSchema(std::vector<OutputColumn> columns) : columns_(std::move(columns)) {}
  size_t size() const { return columns_.size(); }
  const OutputColumn& operator[](size_t i) const { return columns_[i]; }
  const std::vector<OutputColumn>& columns() const { return columns_; }
  void Append(OutputColumn c) { columns_.push_back(std::move(c)); }
  // The index of the column that `name` names: an exact match, else the one column whose
  // unqualified name is `name`. InvalidArgument if none or several.
  [[nodiscard]] Status Resolve(std::string_view name, size_t* index) const;
  std::string ToString() const;  // "a:int, b:string"

 private:
  std::vector<OutputColumn> columns_;
};

// Table names to engine tables and their schemas.
class SharedScans;

class Catalog {
 public:
  explicit Catalog(Database* db);
  // Validates the schema and opens its engine table (NotFound if the database lacks it);
  // InvalidArgument if a schema of that name is registered already.
  [[nodiscard]] Status Register(TableSchema schema);
  // InvalidArgument (naming the table) if it was never registered.
  [[nodiscard]] Status Lookup(std::string_view name, const TableSchema** schema,
                              Table** table) const;
  Database* db() const { return db_; }
  // The scans of whole tables in progress that queries over this catalog may share
  // (shared_scan.h); copies of a catalog share them. Safe from any number of threads.
  SharedScans* shared_scans() const { return shared_scans_.get(); }

 private:
  struct Entry {
    TableSchema schema;
    Table* table;
  };
  Database* db_;
  std::shared_ptr<SharedScans> shared_scans_;
  std::map<std::string, Entry, std::less<>> tables_;
};

}  // namespace sm::query
