// What the query layer's tests share: a scratch database with tables of known rows, their
// schemas in a Catalog, and helpers to run a plan into text rows.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "query/query.h"
#include "sm/sm.h"

namespace sm::test {

// A database in a fresh directory under the system's temporary directory, removed at the end.
class ScratchDb {
 public:
  ScratchDb() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sm_query_test_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
    Options o;
    o.path = dir_ + "/db";
    o.buffer_pool_bytes = 8u << 20;
    o.log_segment_bytes = 1u << 20;
    o.log_buffer_bytes = 256u << 10;
    o.checkpoint_interval = std::chrono::milliseconds(0);
    o.workers = 1;
    o.direct_io = false;
    o.prefault_pool = false;
    REQUIRE(Database::Open(o, &db_).ok());
  }
  ~ScratchDb() {
    if (db_) db_->Close().PermitUnchecked();
    db_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Database* db() { return db_.get(); }

 private:
  std::string dir_;
  std::unique_ptr<Database> db_;
};

// A big-endian key of one 4-byte id (the tests' tables are keyed by it).
inline std::string IdKey(uint32_t id) {
  std::string k(4, '\0');
  for (int i = 0; i < 4; ++i) k[i] = static_cast<char>(id >> (8 * (3 - i)));
  return k;
}

// The tests' row: every fixed-width encoding, a nullable column and a tail string.
#pragma pack(push, 1)
struct TestRow {
  int64_t a;
  int32_t b;
  char name[8];
  double d;
  int64_t cents;
  int64_t when_us;
  int32_t maybe;  // 0 reads as NULL
  char tail[40];
};
#pragma pack(pop)
inline constexpr uint32_t kTestRowFixedBytes = offsetof(TestRow, tail);

inline std::string EncodeTestRow(const TestRow& r) {
  size_t tail = strnlen(r.tail, sizeof(r.tail));
  return std::string(reinterpret_cast<const char*>(&r), kTestRowFixedBytes + tail);
}

// The schema of a table of TestRows, called `name` in plans.
inline query::TableSchema TestSchema(const std::string& name, const std::string& table) {
  using query::Encoding;
  using query::Type;
  query::TableSchema s(name, table, 4, kTestRowFixedBytes);
  s.KeyColumn("id", Type::kInt, Encoding::kBigU32, 0)
      .ValueColumn("a", Type::kInt, Encoding::kI64, offsetof(TestRow, a))
      .ValueColumn("b", Type::kInt, Encoding::kI32, offsetof(TestRow, b))
      .CharColumn("name", offsetof(TestRow, name), 8)
      .ValueColumn("d", Type::kDouble, Encoding::kF64, offsetof(TestRow, d))
      .ValueColumn("cents", Type::kMoney, Encoding::kI64, offsetof(TestRow, cents))
      .ValueColumn("when", Type::kDate, Encoding::kI64, offsetof(TestRow, when_us))
      .ValueColumn("maybe", Type::kInt, Encoding::kI32, offsetof(TestRow, maybe))
      .NullIfZero()
      .TailColumn("tail", offsetof(TestRow, tail));
  return s;
}

// Creates table `table` and commits `rows` (keyed by their ids) into it.
inline void LoadTestTable(Database* db, const std::string& table,
                          const std::vector<std::pair<uint32_t, TestRow>>& rows) {
  Table* t = nullptr;
  REQUIRE(db->CreateTable(table, &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (const auto& [id, row] : rows)
    REQUIRE(t->Insert(txn.get(), IdKey(id), EncodeTestRow(row)).ok());
  REQUIRE(txn->Commit().ok());
}

inline TestRow MakeRow(int64_t a, int32_t b, const char* name, double d, int64_t cents,
                       int64_t when_us, int32_t maybe, const char* tail) {
  TestRow r{};
  r.a = a;
  r.b = b;
  std::memcpy(r.name, name, strnlen(name, sizeof(r.name)));
  r.d = d;
  r.cents = cents;
  r.when_us = when_us;
  r.maybe = maybe;
  std::memcpy(r.tail, tail, strnlen(tail, sizeof(r.tail)));
  return r;
}

inline query::ResultRows Run(const query::Catalog& catalog, const query::Plan& plan,
                             const query::QueryOptions& options = {}) {
  INFO(plan.Explain());
  query::ResultRows rows;
  Status s = query::RunToRows(catalog, plan, options, &rows);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return rows;
}

// A NUL-padded char column as a string.
template <size_t N>
std::string View(const char (&column)[N]) {
  return std::string(column, strnlen(column, N));
}

// A row of the model the tests check results against: the table's columns as the query layer
// formats them (FormatValue), "" for NULL.
using TextRow = std::vector<std::string>;

inline std::vector<TextRow> Sorted(std::vector<TextRow> rows) {
  std::sort(rows.begin(), rows.end());
  return rows;
}

// What a query run through a ResultCursor gave: its rows as text, the rows it read, the root
// operator's EXPLAIN detail and EXPLAIN ANALYZE, both taken after the run.
struct CursorRun {
  std::vector<TextRow> rows;
  uint64_t rows_read = 0;
  std::string root_detail;
  std::string explain;
};

inline CursorRun RunCursor(const query::Catalog& catalog, const query::Plan& plan,
                           const query::QueryOptions& options) {
  INFO(plan.Explain());
  REQUIRE(plan.status().ok());
  std::unique_ptr<query::ResultCursor> cursor;
  Status s = query::ResultCursor::Open(catalog, plan, options, &cursor);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CursorRun out;
  for (;;) {
    const query::Value* row = nullptr;
    REQUIRE(cursor->Next(&row).ok());
    if (row == nullptr) break;
    TextRow text;
    for (size_t i = 0; i < cursor->schema().size(); ++i) {
      text.push_back(row[i].null ? "" : query::FormatValue(row[i], cursor->schema()[i].type));
    }
    out.rows.push_back(std::move(text));
  }
  out.rows_read = cursor->rows_read();
  out.root_detail = cursor->operators().detail();
  out.explain = cursor->ExplainAnalyze();
  REQUIRE(cursor->Close().ok());
  return out;
}

// Random rows for tables t1 and t2 of the join and aggregation tests: `a` in [0, keys) with
// duplicates, `maybe` NULL for about a third, names from a small set, cents of either sign.
inline std::vector<std::pair<uint32_t, TestRow>> RandomRows(std::mt19937_64* rng, uint32_t n,
                                                            int keys) {
  static const char* kNames[] = {"ant", "bee", "cat", "dog", "eel"};
  std::vector<std::pair<uint32_t, TestRow>> rows;
  for (uint32_t id = 1; id <= n; ++id) {
    int64_t a = static_cast<int64_t>((*rng)() % static_cast<uint64_t>(keys));
    int32_t b = static_cast<int32_t>((*rng)() % 100) - 50;
    const char* name = kNames[(*rng)() % 5];
    double d = static_cast<double>((*rng)() % 1000) / 8.0;
    int64_t cents = static_cast<int64_t>((*rng)() % 200001) - 100000;
    int64_t when = static_cast<int64_t>((*rng)() % (3650ULL * 86400)) * 1000000;
    int32_t maybe = (*rng)() % 3 == 0 ? 0 : static_cast<int32_t>((*rng)() % 7) + 1;
    std::string tail = "row " + std::to_string(id);
    rows.push_back({id, MakeRow(a, b, name, d, cents, when, maybe, tail.c_str())});
  }
  return rows;
}

// Tables t and u of the same random rows.
struct PlanFixture {
  ScratchDb scratch;
  query::Catalog catalog{nullptr};
  std::vector<std::pair<uint32_t, TestRow>> rows;
  explicit PlanFixture(uint32_t n = 300) {
    std::mt19937_64 rng(42);
    rows = RandomRows(&rng, n, 25);
    LoadTestTable(scratch.db(), "t", rows);
    LoadTestTable(scratch.db(), "u", rows);
    catalog = query::Catalog(scratch.db());
    REQUIRE(catalog.Register(TestSchema("t", "t")).ok());
    REQUIRE(catalog.Register(TestSchema("u", "u")).ok());
  }
  query::Plan Scan(const char* table = "t") const {
    return query::Plan::Scan(catalog, table, {"id", "a", "name", "tail", "maybe"});
  }
};

// Pulls every tuple of `plan` with a window of `window` requested, holding the last `window`
// tuples by pointer, and checks each held tuple still reads as it did when it arrived until it
// leaves the window. Returns the tuples seen.
inline size_t CheckWindow(const query::Catalog& catalog, const query::Plan& plan,
                          uint32_t window) {
  REQUIRE(plan.status().ok());
  std::unique_ptr<query::Operator> op;
  REQUIRE(plan.node()->Instantiate(&op).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(catalog.db()->Begin(&txn, Isolation::kReadCommitted).ok());
  query::ExecContext ctx;
  ctx.db = catalog.db();
  ctx.txn = txn.get();
  op->RequestWindow(window);
  REQUIRE(op->Open(&ctx).ok());
  CHECK(op->window() >= window);
  const query::RowSchema& schema = op->schema();
  auto text = [&](const query::Value* row) {
    std::string out;
    for (size_t i = 0; i < schema.size(); ++i) {
      out += query::FormatValue(row[i], schema[i].type) + "|";
    }
    return out;
  };
  std::vector<std::pair<const query::Value*, std::string>> held;
  size_t seen = 0;
  for (;;) {
    const query::Value* row = nullptr;
    REQUIRE(op->Next(&row).ok());
    if (row == nullptr) break;
    ++seen;
    held.emplace_back(row, text(row));
    if (held.size() > window) held.erase(held.begin());
    for (const auto& [ptr, snapshot] : held) REQUIRE(text(ptr) == snapshot);
  }
  op->Close();
  REQUIRE(txn->Commit().ok());
  return seen;
}

}  // namespace sm::test
