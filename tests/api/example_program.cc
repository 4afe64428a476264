// The README's example: open (or create) a database, create a table, run a transaction, and
// read the rows back - after a restart when run a second time.
//
//   sm_example DIR write   creates DIR, a table "greetings", and commits three rows
//   sm_example DIR read    reopens DIR and prints the rows (exit status 1 if any is missing)
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "sm/sm.h"

namespace {

int Fail(const char* what, const sm::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[2], "write") != 0 && std::strcmp(argv[2], "read") != 0)) {
    std::fprintf(stderr, "usage: %s DIR write|read\n", argv[0]);
    return 2;
  }
  bool write = std::strcmp(argv[2], "write") == 0;
  sm::Options options;
  options.path = argv[1];
  options.buffer_pool_bytes = 16u << 20;
  std::unique_ptr<sm::Database> db;
  sm::OpenReport report;
  if (sm::Status s = sm::Database::Open(options, &db, &report); !s.ok()) return Fail("open", s);
  std::printf("%s\n", report.ToString().c_str());

  sm::Table* table = nullptr;
  sm::Status s = write ? db->CreateTable("greetings", &table) : db->OpenTable("greetings", &table);
  if (!s.ok()) return Fail("table", s);

  std::unique_ptr<sm::Transaction> txn;
  if (s = db->Begin(&txn); !s.ok()) return Fail("begin", s);
  const char* rows[][2] = {{"en", "hello"}, {"fr", "bonjour"}, {"sv", "hej"}};
  int found = 0;
  for (const auto& row : rows) {
    if (write) {
      if (s = table->Insert(txn.get(), row[0], row[1]); !s.ok()) return Fail("insert", s);
    } else {
      std::string value;
      if (s = table->Get(txn.get(), row[0], &value); !s.ok()) return Fail("get", s);
      std::printf("%s = %s\n", row[0], value.c_str());
      found += value == row[1];
    }
  }
  if (s = txn->Commit(); !s.ok()) return Fail("commit", s);
  if (s = db->Close(); !s.ok()) return Fail("close", s);
  return write || found == 3 ? 0 : 1;
}
