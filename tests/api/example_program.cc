// The README's example. `example DIR write` creates a database in DIR, a table and three rows;
// `example DIR read` reopens it (recovering it if the writer crashed) and reads them back.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "sm/sm.h"

static int Fail(const char* what, const sm::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

int main(int argc, char** argv) {
  std::string_view mode = argc == 3 ? argv[2] : "";
  if (mode != "write" && mode != "read") {
    std::fprintf(stderr, "usage: %s DIR write|read\n", argv[0]);
    return 2;
  }
  sm::Options options;
  options.path = argv[1];
  options.buffer_pool_bytes = 16u << 20;
  std::unique_ptr<sm::Database> db;
  sm::OpenReport report;
  if (sm::Status s = sm::Database::Open(options, &db, &report); !s.ok()) return Fail("open", s);
  std::printf("%s\n", report.ToString().c_str());

  sm::Table* table = nullptr;
  bool write = mode == "write";
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
  if (s = txn->Commit(); !s.ok()) return Fail("commit", s);  // durable: synced to the log
  if (s = db->Close(); !s.ok()) return Fail("close", s);
  return write || found == 3 ? 0 : 1;
}
