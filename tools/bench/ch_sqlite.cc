// The CH-benCHmark database in SQLite (contract in ch_sqlite.h): tables, the CSV loader and
// queries. The query file and the comparison of results are in ch_compare.cc.
#include "tools/bench/ch_sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sm/common/assert.h"
#include "tpcc/ch.h"

namespace sm::bench {

namespace {

using query::Column;
using query::Type;

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

Status SqliteError(sqlite3* db, const std::string& what) {
  return Status::InvalidArgument(what + ": " + sqlite3_errmsg(db));
}

const char* SqlType(Type t) {
  switch (t) {
    case Type::kDouble:
      return "REAL";
    case Type::kString:
    case Type::kDate:
      return "TEXT";
    case Type::kBool:
    case Type::kInt:
    case Type::kMoney:
      return "INTEGER";
  }
  return "TEXT";
}

// The key columns in key order (by offset); none for a table whose key the schema does not read.
std::vector<const Column*> KeyColumnsOf(const query::TableSchema& schema) {
  std::vector<const Column*> keys;
  for (const Column& c : schema.columns()) {
    if (c.part == query::Part::kKey) keys.push_back(&c);
  }
  std::sort(keys.begin(), keys.end(),
            [](const Column* a, const Column* b) { return a->offset < b->offset; });
  return keys;
}

// TPC-C's secondary indexes (clause 1.4 leaves them to the implementation; these are the ones
// the transactions use: customers by name, a customer's latest order).
struct SecondaryIndex {
  const char* table;
  const char* name;
  const char* columns;
};
constexpr SecondaryIndex kSecondaryIndexes[] = {
    {"customer", "customer_name", "c_w_id, c_d_id, c_last, c_first"},
    {"oorder", "oorder_customer", "o_w_id, o_d_id, o_c_id, o_id"},
};

// ---- CSV ---------------------------------------------------------------------------------------

// Reads RFC 4180 records from a file, a buffer at a time.
class CsvReader {
 public:
  explicit CsvReader(FILE* file) : file_(file), buffer_(1u << 20) {}
  // *fields: the next record; *done: true (and no record) at the end of the file.
  Status Next(std::vector<std::string>* fields, bool* done);
  uint64_t line() const { return line_; }

 private:
  int Peek() {
    if (pos_ == end_) Fill();
    return pos_ == end_ ? EOF : static_cast<unsigned char>(buffer_[pos_]);
  }
  int Get() {
    int c = Peek();
    if (c != EOF) ++pos_;
    return c;
  }
  void Fill() {
    pos_ = 0;
    end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
  }
  Status Error(const std::string& what) const {
    return Status::Corruption("CSV line " + std::to_string(line_) + ": " + what);
  }
  // Reads a quoted field (the opening quote already read) and the byte after its closing quote.
  Status Quoted(std::string* field, int* after);

  FILE* file_;
  std::vector<char> buffer_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t line_ = 1;
};

Status CsvReader::Quoted(std::string* field, int* after) {
  for (;;) {
    int c = Get();
    if (c == EOF) return Error("a quoted field does not end");
    if (c == '"') {
      if (Peek() != '"') break;
      Get();
    } else if (c == '\n') {
      ++line_;
    }
    field->push_back(static_cast<char>(c));
  }
  *after = Get();
  if (*after != ',' && *after != '\n' && *after != '\r' && *after != EOF) {
    return Error("a quoted field is followed by more than a separator");
  }
  return Status::OK();
}

Status CsvReader::Next(std::vector<std::string>* fields, bool* done) {
  fields->clear();
  *done = Peek() == EOF;
  if (*done) return Status::OK();
  for (;;) {
    std::string field;
    int c = Get();
    if (c == '"') {
      SM_TRY(Quoted(&field, &c));
    } else {
      while (c != ',' && c != '\n' && c != '\r' && c != EOF) {
        if (c == '"') return Error("a quote inside an unquoted field");
        field.push_back(static_cast<char>(c));
        c = Get();
      }
    }
    fields->push_back(std::move(field));
    if (c == ',') continue;
    if (c == '\r' && Get() != '\n') return Error("a CR without an LF");
    if (c != EOF) ++line_;
    return Status::OK();
  }
}

bool ParseInt(std::string_view text, int64_t* v) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *v);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool ParseDouble(const std::string& text, double* v) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno == 0;
}

// Binds one CSV field to parameter `index` as column `c` stores it.
Status BindField(sqlite3_stmt* stmt, int index, const Column& c, const std::string& field) {
  if (field.empty() && c.type != Type::kString) return Status::OK();  // cleared to NULL
  int64_t i = 0;
  double d = 0;
  bool ok = true;
  int rc = SQLITE_OK;
  switch (c.type) {
    case Type::kInt:
      ok = ParseInt(field, &i);
      if (ok) rc = sqlite3_bind_int64(stmt, index, i);
      break;
    case Type::kBool:
      ok = field == "true" || field == "false";
      if (ok) rc = sqlite3_bind_int64(stmt, index, field == "true" ? 1 : 0);
      break;
    case Type::kMoney:
      ok = ParseCents(field, &i);
      if (ok) rc = sqlite3_bind_int64(stmt, index, i);
      break;
    case Type::kDouble:
      ok = ParseDouble(field, &d);
      if (ok) rc = sqlite3_bind_double(stmt, index, d);
      break;
    case Type::kDate: {
      // Canonical text, so that every date compares as text the way the dates compare.
      ok = query::ParseTimestamp(field, &i);
      std::string text = query::FormatTimestamp(i);
      if (ok) {
        rc = sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()),
                               SQLITE_TRANSIENT);
      }
      break;
    }
    case Type::kString:
      rc = sqlite3_bind_text(stmt, index, field.data(), static_cast<int>(field.size()),
                             SQLITE_STATIC);  // the field outlives the step
      break;
  }
  if (!ok) {
    return Status::Corruption("column " + c.name + ": '" + field + "' is not a " +
                              query::TypeName(c.type));
  }
  if (rc != SQLITE_OK) return Status::InvalidArgument("column " + c.name + ": cannot bind");
  return Status::OK();
}

std::string InsertSql(const query::TableSchema& schema) {
  std::string names, marks;
  for (size_t i = 0; i < schema.columns().size(); ++i) {
    names += (i ? ", " : "") + schema.columns()[i].name;
    marks += i ? ", ?" : "?";
  }
  return "INSERT INTO " + schema.name() + " (" + names + ") VALUES (" + marks + ")";
}

Status CheckHeader(const query::TableSchema& schema, const std::vector<std::string>& header) {
  std::string expected, found;
  for (const Column& c : schema.columns()) expected += (expected.empty() ? "" : ",") + c.name;
  for (const std::string& h : header) found += (found.empty() ? "" : ",") + h;
  if (expected == found) return Status::OK();
  return Status::Corruption("the header of " + schema.name() + " is '" + found +
                            "', not the catalog's '" + expected + "'");
}

// ---- results ------------------------------------------------------------------------------------

const char* StorageClassName(int storage) {
  switch (storage) {
    case SQLITE_INTEGER:
      return "INTEGER";
    case SQLITE_FLOAT:
      return "REAL";
    case SQLITE_TEXT:
      return "TEXT";
    case SQLITE_BLOB:
      return "BLOB";
    default:
      return "NULL";
  }
}

std::string ColumnText(sqlite3_stmt* stmt, int i) {
  const unsigned char* text = sqlite3_column_text(stmt, i);
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
}

// The text query::FormatValue gives a value of `type` that SQLite holds in column i.
Status FormatColumn(sqlite3_stmt* stmt, int i, Type type, std::string* text, bool* null) {
  int storage = sqlite3_column_type(stmt, i);
  *null = storage == SQLITE_NULL;
  text->clear();
  if (*null) return Status::OK();
  query::Value v;
  bool ok = true;
  switch (type) {
    case Type::kInt:
    case Type::kBool:
    case Type::kMoney:
      ok = storage == SQLITE_INTEGER;
      v = query::Value::Int(sqlite3_column_int64(stmt, i));
      if (type == Type::kBool) ok = ok && (v.i == 0 || v.i == 1);
      break;
    case Type::kDouble:
      ok = storage == SQLITE_FLOAT || storage == SQLITE_INTEGER;
      v = query::Value::Double(sqlite3_column_double(stmt, i));
      break;
    case Type::kDate:
      ok = storage == SQLITE_TEXT && query::ParseTimestamp(ColumnText(stmt, i), &v.i);
      break;
    case Type::kString:
      ok = storage == SQLITE_TEXT;
      *text = ColumnText(stmt, i);
      if (ok) return Status::OK();
      break;
  }
  if (!ok) {
    return Status::InvalidArgument(std::string("column ") + sqlite3_column_name(stmt, i) +
                                   ": SQLite gave " + StorageClassName(storage) + " '" +
                                   ColumnText(stmt, i) + "' where a " + query::TypeName(type) +
                                   " belongs");
  }
  *text = query::FormatValue(v, type);
  return Status::OK();
}

Status BindParams(sqlite3* db, sqlite3_stmt* stmt, const SqlParams& params) {
  int count = sqlite3_bind_parameter_count(stmt);
  for (int i = 1; i <= count; ++i) {
    const char* name = sqlite3_bind_parameter_name(stmt, i);
    if (name == nullptr) return Status::InvalidArgument("a query has an unnamed parameter");
    auto it =
        std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.first == name; });
    if (it == params.end()) {
      return Status::InvalidArgument(std::string("no value for the parameter ") + name);
    }
    if (sqlite3_bind_text(stmt, i, it->second.data(), static_cast<int>(it->second.size()),
                          SQLITE_TRANSIENT) != SQLITE_OK) {
      return SqliteError(db, std::string("binding ") + name);
    }
  }
  return Status::OK();
}

Status Prepare(sqlite3* db, const std::string& sql, Stmt* out) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, &tail) != SQLITE_OK) {
    return SqliteError(db, "SQL does not compile");
  }
  out->reset(raw);
  if (raw == nullptr) return Status::InvalidArgument("the SQL holds no statement");
  if (std::string_view(tail).find_first_not_of(" \t\r\n;") != std::string_view::npos) {
    return Status::InvalidArgument("the SQL holds more than one statement");
  }
  return Status::OK();
}

}  // namespace

ChSqlite::~ChSqlite() {
  int rc = sqlite3_close(db_);
  SM_ASSERT(rc == SQLITE_OK);  // every statement is finalized when its function returns
}

Status ChSqlite::Open(const ChSqliteOptions& options, std::unique_ptr<ChSqlite>* out) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(options.path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                           nullptr);
  if (rc != SQLITE_OK) {
    Status s = Status::IOError("cannot open SQLite database " + options.path + ": " +
                               (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close(db);
    return s;
  }
  out->reset(new ChSqlite(db));
  // Our LIKE is case-sensitive; SQLite's is not unless asked.
  SM_TRY((*out)->Exec("PRAGMA case_sensitive_like = ON"));
  if (options.cache_bytes > 0) {
    // A negative cache_size is in KiB.
    SM_TRY((*out)->Exec("PRAGMA cache_size = -" + std::to_string(options.cache_bytes / 1024)));
  }
  return Status::OK();
}

Status ChSqlite::Exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    return Status::InvalidArgument(message + " in: " + sql);
  }
  return Status::OK();
}

std::string CreateTableSql(const query::TableSchema& schema) {
  std::string sql = "CREATE TABLE " + schema.name() + " (";
  for (const Column& c : schema.columns()) {
    sql += c.name + " " + SqlType(c.type) + (c.null_if_zero ? "" : " NOT NULL") + ", ";
  }
  std::vector<const Column*> keys = KeyColumnsOf(schema);
  if (keys.empty()) {
    sql.resize(sql.size() - 2);
    sql += ");";
  } else {
    sql += "PRIMARY KEY (";
    for (size_t i = 0; i < keys.size(); ++i) sql += (i ? ", " : "") + keys[i]->name;
    sql += ")) WITHOUT ROWID;";
  }
  for (const SecondaryIndex& index : kSecondaryIndexes) {
    if (schema.name() != index.table) continue;
    sql += std::string("\nCREATE INDEX ") + index.name + " ON " + index.table + " (" +
           index.columns + ");";
  }
  return sql;
}

Status ChSqlite::CreateTables(const query::Catalog& catalog) {
  for (const std::string& name : tpcc::ChTableNames()) {
    const query::TableSchema* schema = nullptr;
    Table* table = nullptr;
    if (!catalog.Lookup(name, &schema, &table).ok()) continue;  // no CH tables
    SM_TRY(CreateTable(*schema));
  }
  if (tables_.empty()) return Status::InvalidArgument("the catalog has none of the CH tables");
  return Status::OK();
}

Status ChSqlite::CreateTable(const query::TableSchema& schema) {
  SM_TRY(Exec(CreateTableSql(schema)));
  tables_.push_back(schema);
  return Status::OK();
}

Status ChSqlite::InsertRows(const query::TableSchema& schema, const std::string& path,
                            uint64_t* rows) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return Status::IOError("cannot read " + path, errno);
  std::unique_ptr<FILE, int (*)(FILE*)> closer(file, std::fclose);
  CsvReader reader(file);
  std::vector<std::string> fields;
  bool done = false;
  SM_TRY(reader.Next(&fields, &done));
  if (done) return Status::Corruption(path + " has no header line");
  SM_TRY(CheckHeader(schema, fields));
  Stmt insert;
  SM_TRY(Prepare(db_, InsertSql(schema), &insert));
  const std::vector<Column>& columns = schema.columns();
  for (;;) {
    uint64_t line = reader.line();
    Status s = reader.Next(&fields, &done);
    if (!s.ok()) return Status::Corruption(path + ": " + std::string(s.message()));
    if (done) return Status::OK();
    std::string where = path + " line " + std::to_string(line);
    if (fields.size() != columns.size()) {
      return Status::Corruption(where + ": " + std::to_string(fields.size()) + " fields, not " +
                                std::to_string(columns.size()));
    }
    sqlite3_reset(insert.get());
    sqlite3_clear_bindings(insert.get());
    for (size_t i = 0; i < columns.size(); ++i) {
      s = BindField(insert.get(), static_cast<int>(i + 1), columns[i], fields[i]);
      if (!s.ok()) return Status::Corruption(where + ": " + std::string(s.message()));
    }
    if (sqlite3_step(insert.get()) != SQLITE_DONE) return SqliteError(db_, where);
    ++*rows;
  }
}

Status ChSqlite::LoadTableCsv(const query::TableSchema& schema, const std::string& path,
                              uint64_t* rows) {
  *rows = 0;
  SM_TRY(Exec("BEGIN"));
  Status s = InsertRows(schema, path, rows);
  if (!s.ok()) {
    Exec("ROLLBACK").PermitUnchecked();
    *rows = 0;
    return s;
  }
  return Exec("COMMIT");
}

Status ChSqlite::LoadCsv(const std::string& dir, const CsvProgress& done) {
  for (const query::TableSchema& schema : tables_) {
    auto start = std::chrono::steady_clock::now();
    uint64_t rows = 0;
    SM_TRY(LoadTableCsv(schema, dir + "/" + schema.name() + ".csv", &rows));
    if (done) {
      done(schema.name(), rows,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  return Status::OK();
}

Status ChSqlite::Analyze() { return Exec("ANALYZE"); }

Status ChSqlite::Run(const std::string& sql, const SqlParams& params, const query::RowSchema& types,
                     query::ResultRows* out) {
  Stmt stmt;
  SM_TRY(Prepare(db_, sql, &stmt));
  SM_TRY(BindParams(db_, stmt.get(), params));
  int width = sqlite3_column_count(stmt.get());
  if (static_cast<size_t>(width) != types.size()) {
    return Status::InvalidArgument("the SQL returns " + std::to_string(width) +
                                   " columns, the result " + std::to_string(types.size()) + " (" +
                                   types.ToString() + ")");
  }
  out->schema = query::RowSchema();
  for (int i = 0; i < width; ++i) {
    out->schema.Append({sqlite3_column_name(stmt.get(), i), types[i].type});
  }
  out->rows.clear();
  out->nulls.clear();
  for (;;) {
    int rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) return Status::OK();
    if (rc != SQLITE_ROW) return SqliteError(db_, "SQL failed");
    std::vector<std::string> fields(width);
    std::vector<bool> nulls(width);
    for (int i = 0; i < width; ++i) {
      bool null = false;
      SM_TRY(FormatColumn(stmt.get(), i, types[i].type, &fields[i], &null));
      nulls[i] = null;
    }
    out->rows.push_back(std::move(fields));
    out->nulls.push_back(std::move(nulls));
  }
}

bool ParseCents(std::string_view text, int64_t* cents) {
  bool negative = !text.empty() && text[0] == '-';
  if (negative) text.remove_prefix(1);
  size_t point = text.find('.');
  std::string_view units = text.substr(0, point);
  std::string_view fraction = point == std::string_view::npos ? "" : text.substr(point + 1);
  if (units.empty() || (point != std::string_view::npos && fraction.empty()) ||
      fraction.size() > 2) {
    return false;
  }
  uint64_t magnitude = 0;
  for (std::string_view digits : {units, fraction}) {
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      if (__builtin_mul_overflow(magnitude, 10u, &magnitude) ||
          __builtin_add_overflow(magnitude, static_cast<uint64_t>(c - '0'), &magnitude)) {
        return false;
      }
    }
  }
  for (size_t i = fraction.size(); i < 2; ++i) {
    if (__builtin_mul_overflow(magnitude, 10u, &magnitude)) return false;
  }
  uint64_t limit = static_cast<uint64_t>(INT64_MAX) + (negative ? 1 : 0);
  if (magnitude > limit) return false;
  *cents = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

SqlParams ChSqlParams(const tpcc::ChParams& params) {
  return {{":far_future", query::FormatTimestamp(params.far_future_us)}};
}

}  // namespace sm::bench
