// An application of the installed package: stock per (warehouse, item) under composite keys
// built with sm::KeyEncoder, read back by a prefix scan of one warehouse and decoded with
// sm::KeyDecoder. `inventory DIR` creates a database in DIR and prints warehouse 2's stock.
#include <cstdio>
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
  std::printf("storage manager %s\n", sm::Version());
  sm::Options options;
  options.path = argv[1];
  options.buffer_pool_bytes = 8u << 20;
  std::unique_ptr<sm::Database> db;
  sm::Table* stock = nullptr;
  std::unique_ptr<sm::Transaction> txn;
  sm::Status s = sm::Database::Open(options, &db);
  if (s.ok()) s = db->CreateTable("stock", &stock);
  if (s.ok()) s = db->Begin(&txn);
  if (!s.ok()) return Fail("open", s);

  struct Row { uint32_t warehouse; const char* item; const char* quantity; };
  const Row rows[] = {{1, "bolt", "40"}, {2, "nut", "7"}, {2, "bolt", "12"}, {10, "nut", "3"}};
  for (const Row& row : rows) {
    std::string key = sm::KeyEncoder().AppendU32(row.warehouse).AppendString(row.item).Release();
    if (s = stock->Insert(txn.get(), key, row.quantity); !s.ok()) return Fail("insert", s);
  }

  // Every key of warehouse 2, in key order (bolt before nut).
  std::unique_ptr<sm::Cursor> cursor;
  std::string prefix = sm::KeyEncoder().AppendU32(2).Release();
  s = stock->NewCursor(txn.get(), sm::ScanOptions::Prefix(prefix), &cursor);
  int found = 0;
  for (; s.ok() && cursor->Valid(); s = cursor->Next()) {
    sm::KeyDecoder decoder(cursor->key());
    uint32_t warehouse = 0;
    std::string item;
    if (s = decoder.ReadU32(&warehouse); s.ok()) s = decoder.ReadString(&item);
    if (!s.ok()) return Fail("decode", s);
    std::printf("warehouse %u: %s %.*s\n", warehouse, item.c_str(),
                static_cast<int>(cursor->value().size()), cursor->value().data());
    ++found;
  }
  if (!s.ok()) return Fail("scan", s);
  cursor.reset();
  if (s = txn->Commit(); !s.ok()) return Fail("commit", s);
  txn.reset();
  if (s = db->Close(); !s.ok()) return Fail("close", s);
  return found == 2 ? 0 : 1;
}
