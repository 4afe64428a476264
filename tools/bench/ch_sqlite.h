// The CH-benCHmark database in SQLite, for checking the query layer's answers and for comparing
// its speed: the twelve tables built from the query layer's own schemas, loaded from the CSV
// files that tpcc::ExportCsv writes, SQL results formatted as the query layer formats its own,
// and the comparison of two results.
//
// Owns: ChSqlite (one SQLite connection and the tables it created), the CSV reader, the
// conversion of SQLite values to query::FormatValue text, the splitting of a file of CH queries
// in SQL, and SameRows.
//
// Tables: one per TableSchema of the catalog (tpcc::RegisterChCatalog), with its columns in
// schema order: INTEGER for int and bool, INTEGER cents for money, REAL for double, TEXT for
// strings and dates ("YYYY-MM-DD HH:MM:SS.ffffff", which sorts and compares as the dates do).
// A column is NOT NULL unless the schema reads a stored 0 as NULL. A table with key columns is
// WITHOUT ROWID with those columns as its primary key, in key order; history has none and is a
// rowid table. TPC-C's two secondary indexes are added: customer by (c_w_id, c_d_id, c_last,
// c_first) and oorder by (o_w_id, o_d_id, o_c_id, o_id). LIKE is case-sensitive, as the query
// layer's is.
//
// CSV (RFC 4180, as ExportCsv writes it): a header line that must list the table's columns in
// schema order, then one record per row; a field may be quoted ("" is a quote inside), records
// end with LF or CRLF. An empty field is NULL, except in a string column, where it is the empty
// string (no stored string reads as NULL). Money is read from its decimal text exactly
// ("-12.34" is -1234 cents), never through a double. Each table loads in one transaction.
//
// The query file: queries in SQLite's dialect, each introduced by a line "-- Q<n>" and followed,
// before its text, by a line "-- order by: <column> [desc], ..." naming the ORDER BY columns by
// their result names ("-- order by:" with nothing after it for a query without ORDER BY).
//
// Invariants:
//   1. Every table is created from the catalog it is given, so its columns cannot drift from the
//      query layer's.
//   2. A result of Run has exactly the columns of the RowSchema it was given, with those types;
//      a value SQLite returns with another storage class (REAL cents, INTEGER text) is an error,
//      not a silent conversion, except an INTEGER where a double is expected.
//
// Thread/fiber safety: a ChSqlite is used by one thread at a time; the free functions keep no
// state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "query/query.h"
#include "sm/common/status.h"
#include "tpcc/ch_queries.h"

struct sqlite3;

namespace sm::bench {

struct ChSqliteOptions {
  std::string path = ":memory:";  // a database file (created if absent), or ":memory:"
  uint64_t cache_bytes = 0;       // SQLite's page cache; 0: its default
};

// Named parameters of a query (":far_future") and their text values.
using SqlParams = std::vector<std::pair<std::string, std::string>>;

using CsvProgress = std::function<void(const std::string& table, uint64_t rows, double seconds)>;

class ChSqlite {
 public:
  ~ChSqlite();
  ChSqlite(const ChSqlite&) = delete;
  ChSqlite& operator=(const ChSqlite&) = delete;

  [[nodiscard]] static Status Open(const ChSqliteOptions& options, std::unique_ptr<ChSqlite>* out);

  // Creates every table of tpcc::ChTableNames() that `catalog` holds (CreateTable).
  [[nodiscard]] Status CreateTables(const query::Catalog& catalog);
  // Creates one table (CreateTableSql) and remembers it for LoadCsv. InvalidArgument if it
  // exists already.
  [[nodiscard]] Status CreateTable(const query::TableSchema& schema);
  // Loads dir/<table>.csv into each table created; `done` (may be empty) after each.
  [[nodiscard]] Status LoadCsv(const std::string& dir, const CsvProgress& done);
  // Loads one CSV file into the table of `schema` in one transaction (rolled back on an error,
  // which names the file and line); *rows: the rows it holds.
  [[nodiscard]] Status LoadTableCsv(const query::TableSchema& schema, const std::string& path,
                                    uint64_t* rows);
  // Gathers the planner's statistics (ANALYZE).
  [[nodiscard]] Status Analyze();
  // Runs one SQL statement with `params` bound and returns its rows as text, each column
  // formatted as query::FormatValue formats a value of types[i].type (money from integer cents,
  // dates from their text). out->schema has SQLite's column names and the given types.
  [[nodiscard]] Status Run(const std::string& sql, const SqlParams& params,
                           const query::RowSchema& types, query::ResultRows* out);
  // Runs statements that return no rows.
  [[nodiscard]] Status Exec(const std::string& sql);

  sqlite3* handle() const { return db_; }

 private:
  explicit ChSqlite(sqlite3* db) : db_(db) {}
  Status InsertRows(const query::TableSchema& schema, const std::string& path, uint64_t* rows);

  sqlite3* db_;
  std::vector<query::TableSchema> tables_;  // those CreateTables made, in creation order
};

// The CREATE TABLE statement of a schema (and, for customer and oorder, their index).
std::string CreateTableSql(const query::TableSchema& schema);

// Reads "-12.34" (an optional sign, digits, optionally '.' and one or two digits) as -1234
// cents; false if the text is anything else or out of range.
bool ParseCents(std::string_view text, int64_t* cents);

// One query of the SQL file.
struct OrderKey {
  std::string column;  // a result column's name
  bool descending = false;
};
struct ChSql {
  int number = 0;  // n of its "-- Q<n>" line
  std::string sql;
  std::vector<OrderKey> order_by;  // empty: the result is compared as a multiset
};
// Splits a file of queries (format above). InvalidArgument naming the line if a query lacks its
// order-by line, a number repeats, or an order-by line is malformed.
[[nodiscard]] Status ParseChSql(std::string_view text, std::vector<ChSql>* out);
[[nodiscard]] Status ReadChSqlFile(const std::string& path, std::vector<ChSql>* out);

// The SQL parameters of tpcc::ChParams: ":far_future", the date that replaces the published
// upper bounds of Q6, Q12 and Q14, as its text.
SqlParams ChSqlParams(const tpcc::ChParams& params);

// True if `theirs` has the rows of `ours`: the same columns (names compared without a table
// qualifier), the same number of rows, and equal values: exact for ints, money, strings and
// dates; doubles within a relative 1e-9 (absolute 1e-9 near zero). With `order_by` the rows must
// come in the same order of those keys, sorted by them in their directions, and rows whose keys
// tie are compared as a multiset; without, all rows are. Otherwise *difference names `label`, the
// row and the column, and both values.
bool SameRows(const std::string& label, const query::ResultRows& ours,
              const query::ResultRows& theirs, const std::vector<OrderKey>& order_by,
              std::string* difference);

}  // namespace sm::bench
