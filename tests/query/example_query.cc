// An example of the query layer: a table of orders is written through the storage manager's
// API, described as typed columns, and queried - revenue per region of the orders above a date,
// largest first, with the plan printed before it runs.
//
//   sm_query_example DIR   creates the database in DIR (which must not exist), prints the result
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "query/query.h"
#include "sm/sm.h"

namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

#pragma pack(push, 1)
struct OrderRow {  // the stored value: packed, little-endian
  int64_t amount_cents;
  int64_t placed_us;  // microseconds since 1970
  char region[8];     // NUL-padded
};
#pragma pack(pop)

std::string Key(uint32_t id) {  // big-endian, so keys sort by id
  std::string key(4, '\0');
  for (int i = 0; i < 4; ++i) key[i] = static_cast<char>(id >> (8 * (3 - i)));
  return key;
}

int Fail(const char* what, const sm::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  sm::Options options;
  options.path = argv[1];
  options.error_if_exists = true;
  options.buffer_pool_bytes = 16u << 20;
  std::unique_ptr<sm::Database> db;
  if (sm::Status s = sm::Database::Open(options, &db); !s.ok()) return Fail("open", s);

  // Write 1,000 orders.
  sm::Table* orders = nullptr;
  if (sm::Status s = db->CreateTable("orders", &orders); !s.ok()) return Fail("create", s);
  std::unique_ptr<sm::Transaction> txn;
  if (sm::Status s = db->Begin(&txn); !s.ok()) return Fail("begin", s);
  const char* regions[] = {"north", "south", "east", "west"};
  int64_t day0 = 0;
  ParseTimestamp("2024-01-01", &day0);
  for (uint32_t id = 1; id <= 1000; ++id) {
    OrderRow row{};
    row.amount_cents = 100 + (id * 7919) % 10000;
    row.placed_us = day0 + (id % 60) * kMicrosPerDay;
    std::strncpy(row.region, regions[id % 4], sizeof(row.region) - 1);
    std::string_view value(reinterpret_cast<const char*>(&row), sizeof(row));
    if (sm::Status s = orders->Insert(txn.get(), Key(id), value); !s.ok()) return Fail("insert", s);
  }
  if (sm::Status s = txn->Commit(); !s.ok()) return Fail("commit", s);

  // Describe the stored bytes as typed columns.
  TableSchema schema("orders", "orders", /*fixed_key_bytes=*/4, sizeof(OrderRow));
  schema.KeyColumn("id", Type::kInt, Encoding::kBigU32, 0)
      .ValueColumn("amount", Type::kMoney, Encoding::kI64, offsetof(OrderRow, amount_cents))
      .ValueColumn("placed", Type::kDate, Encoding::kI64, offsetof(OrderRow, placed_us))
      .CharColumn("region", offsetof(OrderRow, region), sizeof(OrderRow::region));
  Catalog catalog(db.get());
  if (sm::Status s = catalog.Register(schema); !s.ok()) return Fail("register", s);

  // SELECT region, count(*), sum(amount) FROM orders WHERE placed >= '2024-02-01'
  // GROUP BY region ORDER BY revenue DESC
  Plan plan = Plan::Scan(catalog, "orders", {"region", "amount", "placed"})
                  .Filter(Col("placed") >= Date("2024-02-01"))
                  .Aggregate({{Col("region")}},
                             {Count().As("orders"), Sum(Col("amount")).As("revenue")})
                  .Sort({Desc("revenue")});
  if (sm::Status s = plan.status(); !s.ok()) return Fail("plan", s);
  std::printf("%s\n", plan.Explain().c_str());
  ResultRows rows;
  if (sm::Status s = RunToRows(catalog, plan, QueryOptions(), &rows); !s.ok()) {
    return Fail("query", s);
  }
  std::printf("%s", FormatTable(rows).c_str());
  if (sm::Status s = db->Close(); !s.ok()) return Fail("close", s);
  return 0;
}
