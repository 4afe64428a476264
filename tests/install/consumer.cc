// Opens a database through the installed header and library, writes a row, reads it back.
#include <cstdio>
#include <memory>
#include <string>

#include "sm/sm.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  sm::Options options;
  options.path = argv[1];
  options.buffer_pool_bytes = 8u << 20;
  std::unique_ptr<sm::Database> db;
  sm::Table* table = nullptr;
  std::unique_ptr<sm::Transaction> txn;
  std::string value;
  sm::Status s = sm::Database::Open(options, &db);
  if (s.ok()) s = db->CreateTable("t", &table);
  if (s.ok()) s = db->Begin(&txn);
  if (s.ok()) s = table->Insert(txn.get(), "key", "value");
  if (s.ok()) s = table->Get(txn.get(), "key", &value);
  if (s.ok()) s = txn->Commit();
  if (s.ok()) s = db->Close();
  std::printf("%s %s\n", s.ToString().c_str(), value.c_str());
  return s.ok() && value == "value" ? 0 : 1;
}
