// DestroyDatabase: a database directory goes, whole; anything else stays, untouched.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"

namespace sm::test {
namespace {

void MakeDatabase(const Options& options) {
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  REQUIRE(db->Close().ok());
}

void WriteFile(io::FileSystem* fs, const std::string& path) {
  std::unique_ptr<io::File> file;
  REQUIRE(fs->Open(path, io::OpenOptions{.create = true, .direct = false}, &file).ok());
}

bool Exists(io::FileSystem* fs, const std::string& path) {
  bool exists = false;
  REQUIRE(fs->Exists(path, &exists).ok());
  return exists;
}

TEST_CASE("DestroyDatabase removes a database and refuses anything else", "[unit][api]") {
  io::FaultInjectionFileSystem fs(23);
  const Options options = SmallDbOptions(&fs);
  MakeDatabase(options);
  REQUIRE(Exists(&fs, "/db/sm.meta"));

  SECTION("a database goes, and a second call finds nothing") {
    Status s = DestroyDatabase(options);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK_FALSE(Exists(&fs, "/db"));
    CHECK(DestroyDatabase(options).IsNotFound());
    // The path can hold a new database.
    MakeDatabase(options);
  }
  SECTION("an open database is refused") {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(options, &db).ok());
    CHECK(DestroyDatabase(options).code() == Status::Code::kBusy);
    REQUIRE(db->Close().ok());
    db.reset();
    CHECK(DestroyDatabase(options).ok());
  }
  SECTION("a database directory that holds another file is left whole") {
    WriteFile(&fs, "/db/notes.txt");
    Status s = DestroyDatabase(options);
    CHECK(s.IsInvalidArgument());
    CHECK(s.ToString().find("notes.txt") != std::string::npos);
    CHECK(Exists(&fs, "/db/sm.meta"));
    CHECK(Exists(&fs, "/db/data.sm"));
  }
  SECTION("a directory that is not a database is left whole") {
    REQUIRE(fs.CreateDir("/other").ok());
    WriteFile(&fs, "/other/data.sm");
    Options other = options;
    other.path = "/other";
    CHECK(DestroyDatabase(other).IsInvalidArgument());
    CHECK(Exists(&fs, "/other/data.sm"));
  }
}

}  // namespace
}  // namespace sm::test
