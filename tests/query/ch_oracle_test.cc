// The 22 CH-benCHmark plans (tpcc/ch_queries.cc) against SQLite as the oracle: a small TPC-C
// database with the CH tables, after a run of the transaction mix, is exported as CSV, loaded
// into SQLite (tools/bench/ch_sqlite.h), and every query runs both as our plan and as the
// published SQL (tests/query/ch_queries.sql); the results must be equal, and every query must
// return rows. Also the oracle's own parts: the CSV reader and money parser, the query file, and
// the comparison, which must fail where the results differ.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "query/query.h"
#include "tests/tpcc/tpcc_test_util.h"
#include "tools/bench/ch_sqlite.h"
#include "tpcc/ch.h"
#include "tpcc/ch_queries.h"
#include "tpcc/driver.h"
#include "tpcc/keys.h"
#include "tpcc/rows.h"

namespace sm::bench {
namespace {

using query::ResultRows;
using query::RowSchema;
using query::Type;

// The database: 2 warehouses of 10,000 items and 300 customers per district (90 undelivered
// orders each), then 6,000 transactions of the mix on one worker: some 2,700 New-Orders add
// orders, and some 240 Deliveries deliver about 120 orders per district, so the load's
// undelivered orders (whose lines have nonzero amounts) and some of the run's get delivery
// dates; then the orders of 20 customers are removed (PurgeOrdersOfRichestCustomers). The seed
// is fixed so that the data every query filters on exists (CheckCoverage) and every query
// returns rows (Q20 needs a German supplier of a stock row of an item 'co%').
constexpr uint32_t kWarehouses = 2;
constexpr tpcc::Scale kScale{10000, 300};
constexpr uint64_t kSeed = 6;
constexpr uint64_t kTransactions = 6000;

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// A fresh directory under the system's temporary directory, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sm_ch_oracle_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The single integer an SQL query returns.
int64_t Count(ChSqlite* sqlite, const std::string& sql) {
  ResultRows rows;
  Status s = sqlite->Run(sql, {}, RowSchema({{"n", Type::kInt}}), &rows);
  INFO(sql << ": " << s.ToString());
  REQUIRE(s.ok());
  REQUIRE(rows.rows.size() == 1);
  return std::strtoll(rows.rows[0][0].c_str(), nullptr, 10);
}

// What the queries' filters need to find at this scale, so that each does real work.
void CheckCoverage(ChSqlite* sqlite) {
  const char* const kNonEmpty[] = {
      "SELECT count(*) FROM item WHERE i_data LIKE '%b'",             // Q2, Q8, Q17
      "SELECT count(*) FROM item WHERE i_data LIKE '%bb'",            // Q9
      "SELECT count(*) FROM item WHERE i_data LIKE 'co%'",            // Q20
      "SELECT count(*) FROM item WHERE i_data LIKE 'PR%'",            // Q14
      "SELECT count(*) FROM item WHERE i_data LIKE 'zz%'",            // Q16 (excluded)
      "SELECT count(*) FROM supplier WHERE su_comment LIKE '%bad%'",  // Q16
      "SELECT count(*) FROM customer WHERE c_state LIKE 'A%'",        // Q3
      "SELECT count(*) FROM order_line WHERE ol_i_id < 1000",         // Q8
      "SELECT count(*) FROM oorder WHERE o_carrier_id > 8",           // Q13
      // Orders the run delivered: lines with a delivery date and a nonzero amount, and lines
      // of orders the run both entered and delivered (the load's lines all have quantity 5).
      "SELECT count(*) FROM order_line WHERE ol_delivery_d IS NOT NULL AND ol_amount > 0",
      "SELECT count(*) FROM order_line WHERE ol_delivery_d IS NOT NULL AND ol_quantity <> 5",
      // Orders still undelivered (Q3 reads new_order).
      "SELECT count(*) FROM new_order",
  };
  for (const char* sql : kNonEmpty) {
    int64_t n = Count(sqlite, sql);
    INFO(sql << " = " << n);
    CHECK(n > 0);
  }
  // Q19's arms select warehouses 1 to 5: this database has warehouses 1 and 2.
  CHECK(Count(sqlite,
              "SELECT count(DISTINCT ol_w_id) FROM order_line WHERE ol_w_id IN "
              "(1, 2, 3, 4, 5)") == kWarehouses);
}

// TPC-C gives every customer an order, so Q22 (customers without one) would find none: this
// removes the orders (with their lines, NEW-ORDER rows and index entries) of the kPurged
// customers with the highest balances among the phone numbers Q22 selects, as if they had been
// purged, so that Q22 finds them.
constexpr size_t kPurged = 20;

struct PurgedCustomer {
  int64_t balance_cents;
  uint16_t w;
  uint8_t d;
  uint32_t c;
};

// (No REQUIRE inside a scan's visitor: its exception would unwind through the engine.)
std::vector<PurgedCustomer> RichestCustomers(tpcc::EngineTxn* txn) {
  std::vector<PurgedCustomer> all;
  bool decoded = true;
  Status s = txn->Scan(
      tpcc::TableId::kCustomer, {}, {}, false, [&](std::string_view key, std::string_view value) {
        tpcc::CustomerRow row{};
        PurgedCustomer p{};
        tpcc::KeyReader reader(key);
        decoded =
            reader.U16(&p.w) && reader.U8(&p.d) && reader.U32(&p.c) && tpcc::DecodeRow(value, &row);
        p.balance_cents = row.balance_cents;
        if (row.phone[0] >= '1' && row.phone[0] <= '7') all.push_back(p);
        return decoded;
      });
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(decoded);
  std::sort(all.begin(), all.end(), [](const PurgedCustomer& a, const PurgedCustomer& b) {
    return a.balance_cents > b.balance_cents;
  });
  REQUIRE(all.size() > kPurged);
  all.resize(kPurged);
  return all;
}

void DeleteOrder(tpcc::EngineTxn* txn, const PurgedCustomer& p, uint32_t o) {
  std::string value;
  REQUIRE(txn->Get(tpcc::TableId::kOrder, tpcc::OrderKey(p.w, p.d, o), &value).ok());
  tpcc::OrderRow order{};
  REQUIRE(tpcc::DecodeRow(value, &order));
  for (uint8_t n = 1; n <= order.ol_cnt; ++n) {
    REQUIRE(txn->Delete(tpcc::TableId::kOrderLine, tpcc::OrderLineKey(p.w, p.d, o, n)).ok());
  }
  Status s = txn->Delete(tpcc::TableId::kNewOrder, tpcc::NewOrderKey(p.w, p.d, o));
  REQUIRE((s.ok() || s.IsNotFound()));
  REQUIRE(txn->Delete(tpcc::TableId::kOrder, tpcc::OrderKey(p.w, p.d, o)).ok());
  REQUIRE(txn->Delete(tpcc::TableId::kOrderByCustomer, tpcc::OrderByCustomerKey(p.w, p.d, p.c, o))
              .ok());
}

void PurgeOrdersOfRichestCustomers(tpcc::Engine* engine) {
  std::unique_ptr<tpcc::EngineTxn> txn = engine->NewTxn();
  REQUIRE(txn->Begin(tpcc::TxnIsolation::kSerializable).ok());
  for (const PurgedCustomer& p : RichestCustomers(txn.get())) {
    std::vector<uint32_t> orders;
    std::string prefix = tpcc::OrderByCustomerPrefix(p.w, p.d, p.c);
    Status s = txn->Scan(tpcc::TableId::kOrderByCustomer, prefix, tpcc::PrefixEnd(prefix), false,
                         [&](std::string_view key, std::string_view) {
                           uint32_t o = 0;
                           tpcc::KeyReader reader(key.substr(key.size() - 4));
                           if (reader.U32(&o)) orders.push_back(o);
                           return true;
                         });
    REQUIRE(s.ok());
    REQUIRE(!orders.empty());
    for (uint32_t o : orders) DeleteOrder(txn.get(), p, o);
  }
  REQUIRE(txn->Commit().ok());
}

// Loads the database, runs the mix, exports it into `dir` and loads that into *sqlite.
void BuildDatabases(const std::string& dir, std::unique_ptr<tpcc::test::TestDb>* db,
                    query::Catalog* catalog, std::unique_ptr<ChSqlite>* sqlite) {
  auto start = std::chrono::steady_clock::now();
  *db = tpcc::test::LoadTestDb(kWarehouses, kScale, kSeed, /*workers=*/1, 128u << 20);
  tpcc::ChLoadResult ch;
  Status s = tpcc::LoadCh((*db)->engine->database(), kSeed, &ch);
  INFO(s.ToString());
  REQUIRE(s.ok());
  tpcc::RunOptions run;
  run.users = 4;
  run.transactions = kTransactions;
  run.seed = kSeed;
  run.interval_s = 0;
  tpcc::RunResult result;
  s = tpcc::Run((*db)->engine.get(), (*db)->info, run, nullptr, &result);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(result.types[static_cast<int>(tpcc::TxnType::kDelivery)].completed > 0);
  PurgeOrdersOfRichestCustomers((*db)->engine.get());
  std::printf("loaded and ran %llu transactions in %.0f ms\n",
              static_cast<unsigned long long>(result.completed), MillisSince(start));
  *catalog = query::Catalog((*db)->engine->database());
  s = tpcc::RegisterChCatalog((*db)->engine->database(), kWarehouses, kScale, catalog);
  INFO(s.ToString());
  REQUIRE(s.ok());
  start = std::chrono::steady_clock::now();
  s = tpcc::ExportCsv(*catalog, dir, nullptr);
  INFO(s.ToString());
  REQUIRE(s.ok());
  s = ChSqlite::Open(ChSqliteOptions(), sqlite);
  if (s.ok()) s = (*sqlite)->CreateTables(*catalog);
  if (s.ok()) s = (*sqlite)->LoadCsv(dir, nullptr);
  if (s.ok()) s = (*sqlite)->Analyze();
  INFO(s.ToString());
  REQUIRE(s.ok());
  std::printf("exported and loaded into SQLite in %.0f ms\n", MillisSince(start));
}

std::vector<ChSql> ReadQueries() {
  std::vector<ChSql> queries;
  Status s = ReadChSqlFile(std::string(SM_SOURCE_DIR) + "/tests/query/ch_queries.sql", &queries);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(queries.size() == static_cast<size_t>(tpcc::kChQueries));
  for (size_t i = 0; i < queries.size(); ++i) REQUIRE(queries[i].number == static_cast<int>(i + 1));
  return queries;
}

// Runs query q both ways; CHECKs that both run and agree. Returns false if they do not;
// *rows: the rows of our result.
bool Compare(const query::Catalog& catalog, ChSqlite* sqlite, const ChSql& q,
             const tpcc::ChParams& params, size_t* rows) {
  std::string label = "Q" + std::to_string(q.number);
  query::Plan plan;
  Status s = tpcc::ChQuery(q.number, catalog, params, &plan);
  tpcc::ChRun ours;
  if (s.ok()) s = tpcc::RunChQuery(catalog, plan, {}, &ours);
  INFO(label << " (ours): " << s.ToString());
  CHECK(s.ok());
  if (!s.ok()) return false;
  // Runs the plan with `options` (described as `how`): the same rows in the same order.
  auto same_as_ours = [&](const query::QueryOptions& options, const char* how) {
    tpcc::ChRun run;
    Status st = tpcc::RunChQuery(catalog, plan, options, &run);
    INFO(label << " (ours, " << how << "): " << st.ToString());
    CHECK(st.ok());
    CHECK(run.rows.rows == ours.rows.rows);
  };
  // With a buffer above every operator one may go above, and where refinement puts them for a
  // small L1-I (small buffers, so that they refill often).
  for (query::BufferMode mode : {query::BufferMode::kOn, query::BufferMode::kAuto}) {
    query::QueryOptions buffered;
    buffered.buffers.mode = mode;
    buffered.buffers.tuples = 7;
    buffered.buffers.l1i_bytes = 8192;
    buffered.buffers.threshold_rows = 1;
    same_as_ours(buffered, mode == query::BufferMode::kOn ? "buffers on" : "buffers auto");
  }
  // With the stock joins forced to index probes and to the hash join.
  for (query::JoinChoice choice : {query::JoinChoice::kIndex, query::JoinChoice::kHash}) {
    query::QueryOptions forced;
    forced.index_or_radix = choice;
    same_as_ours(forced, choice == query::JoinChoice::kHash ? "joins by hash" : "joins by index");
  }
  // On 3 threads (parallel aggregations over parts of their scans): the same rows, up to the
  // last digits of double sums, which add in another order.
  query::QueryOptions threaded;
  threaded.threads = 3;
  tpcc::ChRun on_threads;
  s = tpcc::RunChQuery(catalog, plan, threaded, &on_threads);
  INFO(label << " (ours, 3 threads): " << s.ToString());
  CHECK(s.ok());
  std::string threads_difference;
  bool same_on_threads = SameRows(label + " on 3 threads", on_threads.rows, ours.rows, q.order_by,
                                  &threads_difference);
  INFO(threads_difference);
  CHECK(same_on_threads);
  auto start = std::chrono::steady_clock::now();
  ResultRows theirs;
  s = sqlite->Run(q.sql, ChSqlParams(params), ours.rows.schema, &theirs);
  double sqlite_ms = MillisSince(start);
  INFO(label << " (SQLite): " << s.ToString());
  CHECK(s.ok());
  if (!s.ok()) return false;
  *rows = ours.rows.rows.size();
  std::printf("%-3s ours %5zu rows %8.1f ms | SQLite %5zu rows %8.1f ms\n", label.c_str(),
              ours.rows.rows.size(), ours.ms, theirs.rows.size(), sqlite_ms);
  std::string difference;
  bool same = SameRows(label, ours.rows, theirs, q.order_by, &difference);
  INFO(difference);
  CHECK(same);
  return same;
}

TEST_CASE("the 22 CH-benCHmark plans agree with SQLite", "[unit][query]") {
  auto start = std::chrono::steady_clock::now();
  ScratchDir dir;
  std::unique_ptr<tpcc::test::TestDb> db;
  query::Catalog catalog(nullptr);
  std::unique_ptr<ChSqlite> sqlite;
  BuildDatabases(dir.path() + "/csv", &db, &catalog, &sqlite);
  CheckCoverage(sqlite.get());
  std::vector<ChSql> queries = ReadQueries();
  tpcc::ChParams params = tpcc::ChParams::Now();
  std::vector<int> failed;
  for (const ChSql& q : queries) {
    size_t rows = 0;
    if (!Compare(catalog, sqlite.get(), q, params, &rows)) failed.push_back(q.number);
    INFO("Q" << q.number << " returns no rows at this scale and seed");
    CHECK(rows > 0);
  }
  std::string list;
  for (int n : failed) list += " Q" + std::to_string(n);
  std::printf("%zu of %zu queries agree%s%s; %.0f ms in all\n", queries.size() - failed.size(),
              queries.size(), failed.empty() ? "" : "; differ:", list.c_str(), MillisSince(start));
}

// ---- the oracle's own parts ---------------------------------------------------------------------

TEST_CASE("money text reads as exact cents", "[unit][query]") {
  int64_t cents = 0;
  CHECK((ParseCents("-12.34", &cents) && cents == -1234));
  CHECK((ParseCents("0.07", &cents) && cents == 7));
  CHECK((ParseCents("5", &cents) && cents == 500));
  CHECK((ParseCents("3.1", &cents) && cents == 310));
  CHECK((ParseCents("92233720368547758.07", &cents) && cents == INT64_MAX));
  CHECK((ParseCents("-92233720368547758.08", &cents) && cents == INT64_MIN));
  for (const char* bad :
       {"", "-", ".5", "1.", "1.234", "1e3", "12a", "92233720368547758.08", " 1", "+1"}) {
    INFO(bad);
    CHECK_FALSE(ParseCents(bad, &cents));
  }
}

query::TableSchema LoaderSchema() {
  query::TableSchema schema("t", "t", 4, 25);
  schema.KeyColumn("id", Type::kInt, query::Encoding::kBigU32, 0);
  schema.ValueColumn("amount", Type::kMoney, query::Encoding::kI64, 0);
  schema.ValueColumn("at", Type::kDate, query::Encoding::kI64, 8);
  schema.ValueColumn("carrier", Type::kInt, query::Encoding::kU8, 16).NullIfZero();
  schema.ValueColumn("ratio", Type::kDouble, query::Encoding::kF64, 17);
  schema.TailColumn("note", 25);
  REQUIRE(schema.Validate().ok());
  return schema;
}

RowSchema Types(const query::TableSchema& schema) {
  RowSchema types;
  for (const query::Column& c : schema.columns()) types.Append({c.name, c.type});
  return types;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

TEST_CASE("the CSV loader reads quoted fields, NULLs, dates and money exactly", "[unit][query]") {
  ScratchDir dir;
  std::unique_ptr<ChSqlite> sqlite;
  ChSqliteOptions options;
  options.cache_bytes = 8u << 20;
  REQUIRE(ChSqlite::Open(options, &sqlite).ok());
  CHECK(Count(sqlite.get(), "PRAGMA cache_size") == -8192);  // KiB
  CHECK(Count(sqlite.get(), "SELECT 'a' LIKE 'A'") == 0);    // case-sensitive
  query::TableSchema schema = LoaderSchema();
  std::string create = CreateTableSql(schema);
  CHECK(create.find("PRIMARY KEY (id)) WITHOUT ROWID") != std::string::npos);
  CHECK(create.find("carrier INTEGER,") != std::string::npos);  // NULL if zero: nullable
  CHECK(create.find("amount INTEGER NOT NULL") != std::string::npos);
  REQUIRE(sqlite->CreateTable(schema).ok());
  std::string path = dir.path() + "/t.csv";
  WriteFile(path,
            "id,amount,at,carrier,ratio,note\r\n"
            "1,-12.34,2024-01-02 03:04:05.000006,,0.1,\"a, \"\"quoted\"\"\nnote\"\r\n"
            "2,0.10,2024-01-02,7,1e+100,\n"
            "3,92233720368547758.07,2024-01-02 00:00:00.000000,1,3,last");  // no final newline
  uint64_t rows = 0;
  Status s = sqlite->LoadTableCsv(schema, path, &rows);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(rows == 3);
  ResultRows got;
  REQUIRE(sqlite->Run("SELECT * FROM t ORDER BY id", {}, Types(schema), &got).ok());
  REQUIRE(got.rows.size() == 3);
  CHECK(got.rows[0] == std::vector<std::string>{"1", "-12.34", "2024-01-02 03:04:05.000006", "",
                                                "0.1", "a, \"quoted\"\nnote"});
  CHECK(got.nulls[0] == std::vector<bool>{false, false, false, true, false, false});
  // A date's text is made canonical; an empty string stays a string, not NULL.
  CHECK(got.rows[1] ==
        std::vector<std::string>{"2", "0.10", "2024-01-02 00:00:00.000000", "7", "1e+100", ""});
  CHECK(got.nulls[1][5] == false);
  CHECK(got.rows[2][1] == "92233720368547758.07");
  // Money is stored as integer cents.
  CHECK(Count(sqlite.get(), "SELECT sum(amount) FROM t WHERE id < 3") == -1224);
  CHECK(Count(sqlite.get(), "SELECT count(*) FROM t WHERE typeof(amount) = 'integer'") == 3);

  SECTION("a malformed file loads nothing and names its line") {
    REQUIRE(sqlite->Exec("DELETE FROM t").ok());
    for (const char* bad : {"id,amount,at,carrier,ratio,note\n1,1.00,2024-01-01,,1,x\n"
                            "2,1.234,2024-01-01,,1,x\n",
                            "id,amount,at,carrier,ratio,note\n1,1.00,2024-01-01,,1,x\n"
                            "2,1.00,2024-01-01,,1\n",
                            "id,amount,at,carrier,ratio,note\n1,1.00,2024-01-01,,1,x\n"
                            "2,1.00,2024-01-01,,1,\"open\n",
                            "id,amount,at,carrier,ratio,note\n1,1.00,2024-01-01,,1,x\n"
                            "2,1.00,2024-13-01,,1,x\n",
                            "id,amount,at,carrier,ratio,note\n1,1.00,2024-01-01,,1,x\n"
                            "2,,2024-01-01,,1,x\n",
                            "id,amount,at,ratio,carrier,note\n"}) {
      INFO(bad);
      WriteFile(path, bad);
      s = sqlite->LoadTableCsv(schema, path, &rows);
      INFO(s.ToString());
      CHECK_FALSE(s.ok());
      CHECK(Count(sqlite.get(), "SELECT count(*) FROM t") == 0);
    }
    s = sqlite->LoadTableCsv(schema, path, &rows);
    CHECK(s.ToString().find("header") != std::string::npos);
    WriteFile(path, "id,amount,at,carrier,ratio,note\n1,1.00,2024-01-01,,1,x\n2,1.234,x,,1,x\n");
    s = sqlite->LoadTableCsv(schema, path, &rows);
    CHECK(s.ToString().find("line 3") != std::string::npos);
  }
  SECTION("a value of another storage class than the result type is an error") {
    ResultRows bad;
    CHECK_FALSE(
        sqlite->Run("SELECT amount / 100.0 FROM t", {}, RowSchema({{"a", Type::kMoney}}), &bad)
            .ok());
    CHECK_FALSE(sqlite->Run("SELECT note FROM t", {}, RowSchema({{"n", Type::kInt}}), &bad).ok());
    CHECK_FALSE(sqlite->Run("SELECT id, id FROM t", {}, RowSchema({{"n", Type::kInt}}), &bad).ok());
    CHECK_FALSE(
        sqlite->Run("SELECT id FROM t WHERE id = :x", {}, RowSchema({{"n", Type::kInt}}), &bad)
            .ok());
    REQUIRE(sqlite
                ->Run("SELECT id FROM t WHERE note = :x", {{":x", "last"}},
                      RowSchema({{"n", Type::kInt}}), &bad)
                .ok());
    CHECK(bad.rows == std::vector<std::vector<std::string>>{{"3"}});
  }
}

// Rows as SameRows takes them: a schema and text cells ("~" for NULL).
ResultRows Rows(std::vector<query::OutputColumn> columns,
                std::vector<std::vector<std::string>> cells) {
  ResultRows r;
  r.schema = RowSchema(std::move(columns));
  for (auto& row : cells) {
    std::vector<bool> nulls;
    for (auto& cell : row) {
      nulls.push_back(cell == "~");
      if (cell == "~") cell.clear();
    }
    r.rows.push_back(std::move(row));
    r.nulls.push_back(std::move(nulls));
  }
  return r;
}

TEST_CASE("SameRows compares tied rows as multisets and finds every difference", "[unit][query]") {
  std::vector<query::OutputColumn> columns = {{"n1.k", Type::kInt},
                                              {"name", Type::kString},
                                              {"amount", Type::kMoney},
                                              {"share", Type::kDouble}};
  ResultRows ours = Rows(columns, {{"3", "a", "1.00", "0.5"},
                                   {"3", "b", "2.00", "0.25"},
                                   {"1", "c", "-0.01", "~"},
                                   {"0", "d", "0.00", "1e-12"}});
  std::vector<OrderKey> by_k_desc = {{"k", true}};
  std::string difference;
  auto same = [&](const ResultRows& theirs, const std::vector<OrderKey>& order_by) {
    return SameRows("Qx", ours, theirs, order_by, &difference);
  };
  // Tied rows swapped, a qualified name unqualified, doubles within 1e-9.
  CHECK(same(Rows({{"k", Type::kInt}, columns[1], columns[2], columns[3]},
                  {{"3", "b", "2.00", "0.25000000000001"},
                   {"3", "a", "1.00", "0.5"},
                   {"1", "c", "-0.01", "~"},
                   {"0", "d", "0.00", "0"}}),
             by_k_desc));
  INFO(difference);
  // Untied rows out of order.
  CHECK_FALSE(same(Rows(columns, {{"3", "a", "1.00", "0.5"},
                                  {"1", "c", "-0.01", "~"},
                                  {"3", "b", "2.00", "0.25"},
                                  {"0", "d", "0.00", "1e-12"}}),
                   by_k_desc));
  CHECK(difference.find("Qx: row 2, ORDER BY column n1.k: ours '3' vs theirs '1'") == 0);
  // Both in the same order, but not the declared one.
  CHECK_FALSE(same(ours, {{"k", false}}));
  CHECK(difference.find("sorts before") != std::string::npos);
  // Without ORDER BY any order is fine.
  CHECK(same(Rows(columns, {{"0", "d", "0.00", "1e-12"},
                            {"1", "c", "-0.01", "~"},
                            {"3", "b", "2.00", "0.25"},
                            {"3", "a", "1.00", "0.5"}}),
             {}));
  // A value that differs inside a tie, a double beyond 1e-9, a NULL, a missing row.
  CHECK_FALSE(same(Rows(columns, {{"3", "b", "2.00", "0.25"},
                                  {"3", "a", "1.01", "0.5"},
                                  {"1", "c", "-0.01", "~"},
                                  {"0", "d", "0.00", "1e-12"}}),
                   by_k_desc));
  CHECK(difference.find("column amount: ours '1.00' vs theirs '1.01'") != std::string::npos);
  CHECK(difference.find("tie on the ORDER BY keys") != std::string::npos);
  CHECK_FALSE(same(Rows(columns, {{"3", "a", "1.00", "0.5000001"},
                                  {"3", "b", "2.00", "0.25"},
                                  {"1", "c", "-0.01", "~"},
                                  {"0", "d", "0.00", "1e-12"}}),
                   by_k_desc));
  CHECK(difference.find("column share") != std::string::npos);
  CHECK_FALSE(same(Rows(columns, {{"3", "a", "1.00", "0.5"},
                                  {"3", "b", "2.00", "0.25"},
                                  {"1", "c", "-0.01", "0"},
                                  {"0", "d", "0.00", "1e-12"}}),
                   by_k_desc));
  CHECK(difference.find("ours NULL vs theirs '0'") != std::string::npos);
  CHECK_FALSE(
      same(Rows(columns,
                {{"3", "a", "1.00", "0.5"}, {"1", "c", "-0.01", "~"}, {"0", "d", "0.00", "1e-12"}}),
           by_k_desc));
  CHECK(difference.find("4 rows in ours, 3 in theirs; only ours has ('3', 'b', '2.00', '0.25')") !=
        std::string::npos);
  // Columns by name and type.
  CHECK_FALSE(same(Rows({columns[0], {"nom", Type::kString}, columns[2], columns[3]}, {}), {}));
  CHECK(difference.find("column 2") != std::string::npos);
  CHECK_FALSE(same(ours, {{"nope", false}}));
}

TEST_CASE("the query file splits into numbered queries with their ORDER BY keys", "[unit][query]") {
  std::vector<ChSql> queries;
  Status s = ParseChSql(
      "-- header, ignored\n"
      "-- Q1\n-- order by: a DESC, b\nSELECT a, b FROM t\nORDER BY a DESC, b;\n\n"
      "-- Q2\n-- order by:\nSELECT count(*) AS n FROM t;\n",
      &queries);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(queries.size() == 2);
  CHECK(queries[0].number == 1);
  REQUIRE(queries[0].order_by.size() == 2);
  CHECK((queries[0].order_by[0].column == "a" && queries[0].order_by[0].descending));
  CHECK((queries[0].order_by[1].column == "b" && !queries[0].order_by[1].descending));
  CHECK(queries[0].sql == "SELECT a, b FROM t\nORDER BY a DESC, b;\n\n");
  CHECK(queries[1].order_by.empty());
  for (const char* bad :
       {"-- Q1\nSELECT 1;\n",                                  // no keys line
        "-- Q1\n-- order by:\nSELECT a FROM t ORDER BY a;\n",  // keys missing
        "-- Q1\n-- order by: a\nSELECT a FROM t;\n",           // not sorted
        "-- Q1\n-- order by: a sideways\nSELECT a FROM t ORDER BY a;\n",
        "-- Q1\n-- order by:\nSELECT 1;\n-- Q1\n-- order by:\nSELECT 1;\n", "SELECT 1;\n"}) {
    INFO(bad);
    CHECK_FALSE(ParseChSql(bad, &queries).ok());
  }
}

}  // namespace
}  // namespace sm::bench
