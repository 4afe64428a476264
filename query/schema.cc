// Schemas, the column decoder and the catalog (contract in schema.h).
#include "query/schema.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "query/shared_scan.h"
#include "sm/common/assert.h"

namespace sm::query {

const char* EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kI8:
      return "i8";
    case Encoding::kI16:
      return "i16";
    case Encoding::kI32:
      return "i32";
    case Encoding::kI64:
      return "i64";
    case Encoding::kU8:
      return "u8";
    case Encoding::kU16:
      return "u16";
    case Encoding::kU32:
      return "u32";
    case Encoding::kU64:
      return "u64";
    case Encoding::kBigU8:
      return "big-endian u8";
    case Encoding::kBigU16:
      return "big-endian u16";
    case Encoding::kBigU32:
      return "big-endian u32";
    case Encoding::kBigU64:
      return "big-endian u64";
    case Encoding::kF64:
      return "f64";
    case Encoding::kChar:
      return "char";
    case Encoding::kTailString:
      return "tail string";
  }
  return "?";
}

uint32_t FixedWidth(Encoding encoding) {
  switch (encoding) {
    case Encoding::kI8:
    case Encoding::kU8:
    case Encoding::kBigU8:
      return 1;
    case Encoding::kI16:
    case Encoding::kU16:
    case Encoding::kBigU16:
      return 2;
    case Encoding::kI32:
    case Encoding::kU32:
    case Encoding::kBigU32:
      return 4;
    case Encoding::kI64:
    case Encoding::kU64:
    case Encoding::kBigU64:
    case Encoding::kF64:
      return 8;
    case Encoding::kChar:
    case Encoding::kTailString:
      return 0;
  }
  return 0;
}

namespace {

bool TypeFitsEncoding(Type type, Encoding encoding) {
  switch (encoding) {
    case Encoding::kF64:
      return type == Type::kDouble;
    case Encoding::kChar:
    case Encoding::kTailString:
      return type == Type::kString;
    default:
      return IsIntegral(type);
  }
}

}  // namespace

TableSchema::TableSchema(std::string name, std::string table, uint32_t fixed_key_bytes,
                         uint32_t fixed_value_bytes)
    : name_(std::move(name)),
      table_(std::move(table)),
      fixed_key_bytes_(fixed_key_bytes),
      fixed_value_bytes_(fixed_value_bytes) {}

TableSchema& TableSchema::Add(Column column) {
  if (column.encoding != Encoding::kChar) column.width = FixedWidth(column.encoding);
  columns_.push_back(std::move(column));
  return *this;
}

TableSchema& TableSchema::KeyColumn(std::string name, Type type, Encoding encoding,
                                    uint32_t offset) {
  return Add(Column{std::move(name), type, Part::kKey, encoding, offset, 0, false});
}

TableSchema& TableSchema::ValueColumn(std::string name, Type type, Encoding encoding,
                                      uint32_t offset) {
  return Add(Column{std::move(name), type, Part::kValue, encoding, offset, 0, false});
}

TableSchema& TableSchema::CharColumn(std::string name, uint32_t offset, uint32_t width) {
  return Add(
      Column{std::move(name), Type::kString, Part::kValue, Encoding::kChar, offset, width, false});
}

TableSchema& TableSchema::TailColumn(std::string name, uint32_t offset) {
  return Add(Column{std::move(name), Type::kString, Part::kValue, Encoding::kTailString, offset, 0,
                    false});
}

TableSchema& TableSchema::NullIfZero() {
  SM_ASSERT(!columns_.empty());
  columns_.back().null_if_zero = true;
  return *this;
}

int TableSchema::Find(std::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Status TableSchema::Validate() const {
  if (name_.empty() || table_.empty()) {
    return Status::InvalidArgument("a table schema needs a name and an engine table");
  }
  std::set<std::string_view> names;
  for (const Column& c : columns_) {
    std::string where = "table " + name_ + ", column '" + c.name + "': ";
    if (c.name.empty() || !names.insert(c.name).second) {
      return Status::InvalidArgument(where + "names must be unique and non-empty");
    }
    if (!TypeFitsEncoding(c.type, c.encoding)) {
      return Status::InvalidArgument(where + TypeName(c.type) + " cannot be read from " +
                                     EncodingName(c.encoding));
    }
    if (c.null_if_zero && !IsIntegral(c.type)) {
      return Status::InvalidArgument(where + "only an integer column can read 0 as NULL");
    }
    uint32_t fixed = c.part == Part::kKey ? fixed_key_bytes_ : fixed_value_bytes_;
    if (c.encoding == Encoding::kTailString) {
      for (const Column& other : columns_) {
        if (&other != &c && other.part == c.part && other.offset + other.width > c.offset) {
          return Status::InvalidArgument(where + "a tail string must be last in its part");
        }
      }
      if (c.offset > fixed) return Status::InvalidArgument(where + "starts past the fixed bytes");
      continue;
    }
    if (c.width == 0) return Status::InvalidArgument(where + "has no width");
    if (c.offset + c.width > fixed) {
      return Status::InvalidArgument(where + "bytes [" + std::to_string(c.offset) + ", " +
                                     std::to_string(c.offset + c.width) +
                                     ") lie outside the fixed " + std::to_string(fixed) +
                                     " bytes of the " + (c.part == Part::kKey ? "key" : "value"));
    }
  }
  return Status::OK();
}

Status TableSchema::KeyColumns(std::vector<const Column*>* out) const {
  out->clear();
  for (const Column& c : columns_) {
    if (c.part == Part::kKey) out->push_back(&c);
  }
  std::sort(out->begin(), out->end(),
            [](const Column* a, const Column* b) { return a->offset < b->offset; });
  uint32_t next = 0;
  for (const Column* c : *out) {
    bool big_endian = c->encoding == Encoding::kBigU8 || c->encoding == Encoding::kBigU16 ||
                      c->encoding == Encoding::kBigU32 || c->encoding == Encoding::kBigU64;
    if (!big_endian || c->offset != next) {
      return Status::InvalidArgument("table " + name_ + ": key column " + c->name +
                                     " is not a big-endian integer right after the one before");
    }
    next += c->width;
  }
  return Status::OK();
}

bool AppendKeyValue(const Column& c, const Value& v, std::string* out) {
  SM_ASSERT(!v.null);
  int bytes = static_cast<int>(c.width);
  if (v.i < 0 || (bytes < 8 && static_cast<uint64_t>(v.i) >> (8 * bytes) != 0)) return false;
  char buf[8];
  for (int i = 0; i < bytes; ++i) buf[i] = static_cast<char>(v.i >> (8 * (bytes - 1 - i)));
  out->append(buf, static_cast<size_t>(bytes));
  return true;
}

Status RowSchema::Resolve(std::string_view name, size_t* index) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) {
      *index = i;
      return Status::OK();
    }
  }
  int found = -1;
  for (size_t i = 0; i < columns_.size(); ++i) {
    std::string_view n = columns_[i].name;
    size_t dot = n.rfind('.');
    if (dot == std::string_view::npos || n.substr(dot + 1) != name) continue;
    if (found >= 0) {
      return Status::InvalidArgument(
          "column '" + std::string(name) +
          "' is ambiguous: " + columns_[static_cast<size_t>(found)].name + " or " + std::string(n));
    }
    found = static_cast<int>(i);
  }
  if (found < 0) {
    return Status::InvalidArgument("no column '" + std::string(name) + "' among " + ToString());
  }
  *index = static_cast<size_t>(found);
  return Status::OK();
}

std::string RowSchema::ToString() const {
  std::string out;
  for (const OutputColumn& c : columns_) {
    if (!out.empty()) out += ", ";
    out += c.name + ":" + TypeName(c.type);
  }
  return out;
}

Catalog::Catalog(Database* db) : db_(db), shared_scans_(std::make_shared<SharedScans>()) {}

Status Catalog::Register(TableSchema schema) {
  SM_TRY(schema.Validate());
  if (tables_.count(schema.name()) != 0) {
    return Status::InvalidArgument("table " + schema.name() + " is registered already");
  }
  Table* table = nullptr;
  SM_TRY(db_->OpenTable(schema.table(), &table));
  std::string name = schema.name();
  tables_.emplace(std::move(name), Entry{std::move(schema), table});
  return Status::OK();
}

Status Catalog::Lookup(std::string_view name, const TableSchema** schema, Table** table) const {
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return Status::InvalidArgument("no table '" + std::string(name) + "' in the catalog");
  }
  *schema = &it->second.schema;
  *table = it->second.table;
  return Status::OK();
}

}  // namespace sm::query
