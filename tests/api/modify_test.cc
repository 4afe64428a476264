// Table::Modify: a row edited in place under its exclusive lock, as GetForUpdate then Update
// would change it: the edit is kept, rolled back by Abort, survives a reopen; it waits for
// another writer and then edits the bytes that writer committed; absent keys, large values, a
// missing edit and a read-only database are refused.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"

namespace sm {
namespace {

// Adds `delta` to the first byte of the row (a counter the tests read back).
Table::ValueEdit AddToFirstByte(int delta, int* calls = nullptr) {
  return [delta, calls](char* value, size_t size) {
    REQUIRE(size > 0);
    value[0] = static_cast<char>(value[0] + delta);
    if (calls != nullptr) ++*calls;
  };
}

std::string Read(Database* db, Table* t, const std::string& key) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  REQUIRE(t->Get(txn.get(), key, &value).ok());
  REQUIRE(txn->Commit().ok());
  return value;
}

TEST_CASE("Modify edits a row in place, rolls back with Abort and survives a reopen",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(81);
  const Options options = test::SmallDbOptions(&fs);
  {
    std::unique_ptr<Database> db = test::MustOpen(options);
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Insert(txn.get(), "k", std::string("\x01rest of the row", 16)).ok());
    REQUIRE(txn->Commit().ok());

    REQUIRE(db->Begin(&txn).ok());
    int calls = 0;
    REQUIRE(t->Modify(txn.get(), "k", AddToFirstByte(4, &calls)).ok());
    CHECK(calls == 1);
    std::string value;
    REQUIRE(t->Get(txn.get(), "k", &value).ok());
    CHECK(value == std::string("\x05rest of the row", 16));  // its own edit, the size kept
    REQUIRE(txn->Abort().ok());
    CHECK(Read(db.get(), t, "k") == std::string("\x01rest of the row", 16));

    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Modify(txn.get(), "k", AddToFirstByte(2)).ok());
    REQUIRE(t->Modify(txn.get(), "k", AddToFirstByte(2)).ok());
    REQUIRE(txn->Commit().ok());
    REQUIRE(db->Close().ok());
  }
  std::unique_ptr<Database> db = test::MustOpen(options);
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  CHECK(Read(db.get(), t, "k") == std::string("\x05rest of the row", 16));
  REQUIRE(db->Verify().ok());
}

TEST_CASE("Modify waits for another writer, then edits what it committed", "[unit][api]") {
  io::FaultInjectionFileSystem fs(82);
  std::unique_ptr<Database> db = test::MustOpen(test::SmallDbOptions(&fs));
  Table* t = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  std::unique_ptr<Transaction> writer;
  REQUIRE(db->Begin(&writer).ok());
  REQUIRE(t->Insert(writer.get(), "k", std::string(8, '\x10')).ok());
  REQUIRE(writer->Commit().ok());

  REQUIRE(db->Begin(&writer).ok());
  REQUIRE(t->Update(writer.get(), "k", std::string(8, '\x20')).ok());  // holds the row's X
  // Catch2's assertions are for the test's own thread: the editor keeps its outcome.
  Status edited = Status::OK();
  std::thread editor([&] {
    std::unique_ptr<Transaction> txn;
    edited = db->Begin(&txn);
    if (edited.ok()) {
      edited = t->Modify(txn.get(), "k", [](char* value, size_t) { ++value[0]; });
    }
    if (edited.ok()) edited = txn->Commit();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(writer->Commit().ok());
  editor.join();
  INFO(edited.ToString());
  REQUIRE(edited.ok());
  CHECK(Read(db.get(), t, "k") == std::string("\x21") + std::string(7, '\x20'));
}

TEST_CASE("Modify refuses an absent key, a large value, no edit and a read-only database",
          "[unit][api]") {
  io::FaultInjectionFileSystem fs(83);
  Options options = test::SmallDbOptions(&fs);
  {
    std::unique_ptr<Database> db = test::MustOpen(options);
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    CHECK(t->Modify(txn.get(), "absent", AddToFirstByte(1)).IsNotFound());
    const std::string large(100000, 'x');
    REQUIRE(t->Insert(txn.get(), "large", large).ok());
    CHECK(t->Modify(txn.get(), "large", AddToFirstByte(1)).code() == Status::Code::kNotSupported);
    REQUIRE(t->Insert(txn.get(), "k", "v").ok());
    CHECK(t->Modify(txn.get(), "k", Table::ValueEdit()).IsInvalidArgument());
    REQUIRE(txn->Commit().ok());
    std::string value;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Get(txn.get(), "large", &value).ok());
    CHECK(value == large);
    REQUIRE(txn->Commit().ok());
    REQUIRE(db->Close().ok());
  }
  options.read_only = true;
  std::unique_ptr<Database> db = test::MustOpen(options);
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  CHECK(!t->Modify(txn.get(), "k", AddToFirstByte(1)).ok());
  REQUIRE(txn->Commit().ok());
}

}  // namespace
}  // namespace sm
