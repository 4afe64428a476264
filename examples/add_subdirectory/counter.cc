// An application that builds the library as a subproject: `counter DIR` opens (or creates) a
// database in DIR, adds one to a counter in one transaction and prints it, so each run prints
// one more than the last.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "sm/sm.h"

static int Fail(const char* what, const sm::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  sm::Options options;
  options.path = argv[1];
  options.buffer_pool_bytes = 8u << 20;
  std::unique_ptr<sm::Database> db;
  if (sm::Status s = sm::Database::Open(options, &db); !s.ok()) return Fail("open", s);

  sm::Table* counters = nullptr;
  sm::Status s = db->OpenTable("counters", &counters);
  if (s.IsNotFound()) s = db->CreateTable("counters", &counters);
  if (!s.ok()) return Fail("table", s);

  std::unique_ptr<sm::Transaction> txn;
  if (s = db->Begin(&txn); !s.ok()) return Fail("begin", s);
  std::string value;
  s = counters->Get(txn.get(), "runs", &value);
  // The first run creates the row: a little-endian int64_t, as Table::Add reads it.
  if (s.IsNotFound()) s = counters->Insert(txn.get(), "runs", std::string(sizeof(int64_t), '\0'));
  if (s.ok()) s = counters->Add(txn.get(), "runs", 0, 1, &value);
  if (s.ok()) s = txn->Commit();
  if (!s.ok()) return Fail("add", s);
  txn.reset();
  int64_t runs = 0;
  std::memcpy(&runs, value.data(), sizeof(runs));
  std::printf("runs: %lld\n", static_cast<long long>(runs));
  if (s = db->Close(); !s.ok()) return Fail("close", s);
  return 0;
}
