// Options::read_only: a clean database opens without recovery and is read in full while
// nothing in its directory changes (bytes, sizes, modification times; and, where permissions
// hold, from a directory the process may not write); every change is refused with an error; a
// database that needs recovery, and a missing one, are refused.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/fs_util.h"
#include "tests/io/io_test_util.h"

namespace sm {
namespace {

constexpr int kRows = 600;

std::string Key(int i) { return "key" + std::to_string(100000 + i); }
std::string Value(int i) { return std::string(40 + i % 50, static_cast<char>('a' + i % 26)); }

std::unique_ptr<Database> MustOpen(const Options& o, OpenReport* report = nullptr) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(o, &db, report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return db;
}

// Creates table "t" (kRows rows) and index "i" (one entry per row), and a dropped table.
void Populate(Database* db) {
  Table* t = nullptr;
  Table* i = nullptr;
  Table* gone = nullptr;
  REQUIRE(db->CreateTable("t", &t).ok());
  REQUIRE(db->CreateIndex("i", &i).ok());
  REQUIRE(db->CreateTable("gone", &gone).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int k = 0; k < kRows; ++k) {
    REQUIRE(t->Insert(txn.get(), Key(k), Value(k)).ok());
    REQUIRE(i->Insert(txn.get(), IndexKey(Value(k), Key(k)), "").ok());
    REQUIRE(gone->Insert(txn.get(), Key(k), "x").ok());
  }
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->DropTable("gone").ok());
}

// Reads every row of "t" by key and by scans, and the index by a scan.
void ReadAll(Database* db) {
  Table* t = nullptr;
  Table* i = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  REQUIRE(db->OpenTable("i", &i).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int k = 0; k < kRows; ++k) {
    std::string value;
    REQUIRE(t->Get(txn.get(), Key(k), &value).ok());
    REQUIRE(value == Value(k));
  }
  std::string value;
  REQUIRE(t->Get(txn.get(), Key(kRows), &value).IsNotFound());
  REQUIRE(t->GetForUpdate(txn.get(), Key(0), &value).ok());  // a lock, not a write
  std::unique_ptr<Cursor> cursor;
  REQUIRE(t->NewCursor(txn.get(), ScanOptions::All(), &cursor).ok());
  int seen = 0;
  for (; cursor->Valid(); ++seen) {
    REQUIRE(cursor->key() == Key(seen));
    REQUIRE(cursor->Next().ok());
  }
  CHECK(seen == kRows);
  ScanOptions reverse;
  reverse.reverse = true;
  REQUIRE(i->NewCursor(txn.get(), reverse, &cursor).ok());
  seen = 0;
  for (; cursor->Valid(); ++seen) REQUIRE(cursor->Next().ok());
  CHECK(seen == kRows);
  cursor.reset();
  REQUIRE(txn->Commit().ok());  // a transaction that read commits as usual
}

// Every change is refused, naming the call and read-only, and the transaction stays usable.
void CheckWritesRefused(Database* db) {
  auto refused = [](const Status& s, const char* call) {
    INFO(call << ": " << s.ToString());
    CHECK(s.IsInvalidArgument());
    CHECK(s.ToString().find(call) != std::string::npos);
    CHECK(s.ToString().find("read-only") != std::string::npos);
  };
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  refused(t->Insert(txn.get(), "new", "v"), "Insert");
  refused(t->Update(txn.get(), Key(1), "v"), "Update");
  refused(t->Upsert(txn.get(), Key(1), "v"), "Upsert");
  refused(t->Delete(txn.get(), Key(1)), "Delete");
  refused(t->Add(txn.get(), Key(1), 0, 1), "Add");
  CHECK(txn->active());
  std::string value;
  REQUIRE(t->Get(txn.get(), Key(1), &value).ok());
  CHECK(value == Value(1));
  REQUIRE(txn->Commit().ok());
  Table* table = nullptr;
  refused(db->CreateTable("u", &table), "CreateTable");
  refused(db->CreateIndex("u", &table), "CreateIndex");
  refused(db->DropTable("t"), "DropTable");
  refused(db->Checkpoint(), "Checkpoint");
  CHECK(db->TableNames() == std::vector<std::string>{"i", "t"});
}

// Each file under `dir`: its bytes, size and modification time.
struct FileState {
  std::string bytes;
  uintmax_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileState&) const = default;
};
std::map<std::string, FileState> Snapshot(const std::string& dir) {
  std::map<std::string, FileState> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st;
    REQUIRE(::stat(entry.path().c_str(), &st) == 0);
    FileState& f = files[entry.path().string()];
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (!entry.is_regular_file()) continue;
    f.size = entry.file_size();
    std::string bytes;
    REQUIRE(test::ReadWholeFile(io::FileSystem::Default(), entry.path().string(), &bytes).ok());
    f.bytes = std::move(bytes);
  }
  return files;
}

// Takes write permission from the directory tree (or gives it back).
void SetWritable(const std::string& dir, bool writable) {
  namespace fs = std::filesystem;
  const fs::perm_options how = writable ? fs::perm_options::add : fs::perm_options::remove;
  const fs::perms write = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  std::vector<fs::path> paths = {dir};
  for (const auto& entry : fs::recursive_directory_iterator(dir)) paths.push_back(entry.path());
  for (const fs::path& p : paths) fs::permissions(p, write, how);
}

TEST_CASE("a read-only open reads a clean database and changes no file", "[unit][api]") {
  test::ScratchDir scratch;
  Options o;
  o.path = scratch / "db";
  o.buffer_pool_bytes = 4u << 20;
  o.log_segment_bytes = 1u << 20;
  o.log_buffer_bytes = 256u << 10;
  o.checkpoint_interval = std::chrono::milliseconds(0);
  o.background_write_interval = std::chrono::milliseconds(1);
  o.workers = 1;
  {
    std::unique_ptr<Database> db = MustOpen(o);
    Populate(db.get());
    // The dropped table's pages are not given back while a transaction that may read them
    // runs: the close leaves its pending drop to the next read-write open (which a read-only
    // one must leave alone).
    api::DatabaseImpl* impl = static_cast<api::DatabaseImpl*>(db.get());
    impl->TEST_KeepDroppedPages();
    REQUIRE(db->Close().ok());
  }
  const auto before = Snapshot(o.path);
  REQUIRE(before.size() >= 4);  // LOCK, data.sm, sm.meta, log/ and its files
  const bool root = ::geteuid() == 0;
  if (root) {
    WARN(
        "running as root: permissions do not stop writes, so only the files' bytes, sizes "
        "and modification times show that nothing was written");
  } else {
    SetWritable(o.path, false);
  }

  Options ro = o;
  ro.read_only = true;
  ro.reserve_free_bytes = 64u << 20;  // ignored: a read-only volume does not grow
  OpenReport report;
  std::unique_ptr<Database> db = MustOpen(ro, &report);
  CHECK(report.opened);
  CHECK(report.read_only);
  CHECK_FALSE(report.recovered);
  CHECK_FALSE(report.needs_recovery);
  const std::string text = report.ToString();
  CHECK(text == "opened an existing database read-only, 2 tables; clean (nothing to recover)");
  // One directory, one Database, read-only or not.
  std::unique_ptr<Database> second;
  CHECK(Database::Open(ro, &second).code() == Status::Code::kBusy);
  CHECK(Database::Open(o, &second).code() == Status::Code::kBusy);

  ReadAll(db.get());
  CheckWritesRefused(db.get());
  std::string verify;
  Status verified = static_cast<api::DatabaseImpl*>(db.get())->VerifyWithReport(&verify);
  INFO(verify);
  INFO(verified.ToString());
  CHECK(verified.ok());
  uint64_t prewarmed = 0;
  CHECK(db->Prewarm(&prewarmed).ok());
  CHECK(prewarmed > 0);
  CHECK(db->stats().pool_dirty_pages == 0);
  REQUIRE(db->Close().ok());
  db.reset();

  if (!root) SetWritable(o.path, true);
  const auto after = Snapshot(o.path);
  CHECK(after.size() == before.size());
  for (const auto& [path, state] : before) {
    INFO(path);
    auto it = after.find(path);
    REQUIRE(it != after.end());
    CHECK(it->second.size == state.size);
    CHECK(it->second.mtime_ns == state.mtime_ns);
    CHECK(it->second.bytes == state.bytes);
  }

  // A read-write open afterwards finds the database as it was, and may change it.
  db = MustOpen(o, &report);
  CHECK_FALSE(report.recovered);
  ReadAll(db.get());
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  REQUIRE(t->Insert(txn.get(), "new", "v").ok());
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Close().ok());
}

// The bytes of every file under `dir` on `fs`.
std::map<std::string, std::string> FaultFsFiles(io::FileSystem* fs, const std::string& dir) {
  std::map<std::string, std::string> files;
  std::vector<std::string> names;
  REQUIRE(fs->ListDir(dir, &names).ok());
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    if (test::IsDirectory(fs, path)) {
      files.merge(FaultFsFiles(fs, path));
      continue;
    }
    REQUIRE(test::ReadWholeFile(fs, path, &files[path]).ok());
  }
  return files;
}

TEST_CASE("a read-only open refuses a database that needs recovery", "[unit][crash][api]") {
  // Committed changes a crash left only in the log (redo), and a transaction it cut short
  // (undo): each alone needs recovery.
  const bool with_loser = GENERATE(false, true);
  INFO("with a loser: " << with_loser);
  io::FaultInjectionFileSystem fs(7);
  Options o = test::SmallDbOptions(&fs);
  {
    std::unique_ptr<Database> db = MustOpen(o);
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    REQUIRE(db->Checkpoint().ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int k = 0; k < 50; ++k) REQUIRE(t->Insert(txn.get(), Key(k), Value(k)).ok());
    REQUIRE(txn->Commit().ok());
    if (with_loser) {
      // Everything so far reaches the disk, so that only the loser is left to recover.
      REQUIRE(db->Checkpoint().ok());
      REQUIRE(db->Begin(&txn).ok());
      REQUIRE(t->Insert(txn.get(), "loser", "v").ok());
      // Its record must reach the log for recovery to find a loser: a durable commit of
      // another transaction flushes it.
      std::unique_ptr<Transaction> other;
      REQUIRE(db->Begin(&other).ok());
      REQUIRE(t->Insert(other.get(), "winner", "v").ok());
      REQUIRE(other->Commit().ok());
    }
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    txn.reset();
    db.reset();
    fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  }
  const auto before = FaultFsFiles(&fs, o.path);
  Options ro = o;
  ro.read_only = true;
  OpenReport report;
  std::unique_ptr<Database> db;
  Status s = Database::Open(ro, &db, &report);
  INFO(s.ToString());
  CHECK(s.IsInvalidArgument());
  CHECK(s.ToString().find("needs recovery") != std::string::npos);
  CHECK(s.ToString().find("read-write") != std::string::npos);
  CHECK(db == nullptr);
  CHECK_FALSE(report.opened);
  CHECK(report.needs_recovery);
  CHECK(report.ToString() == "did not open the database read-only: it needs recovery");
  CHECK(FaultFsFiles(&fs, o.path) == before);

  // A read-write open recovers; afterwards a read-only one is welcome.
  db = MustOpen(o, &report);
  CHECK(report.recovered);
  CHECK_FALSE(report.needs_recovery);
  REQUIRE(db->Close().ok());
  db = MustOpen(ro, &report);
  CHECK_FALSE(report.recovered);
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::string value;
  CHECK(t->Get(txn.get(), "loser", &value).IsNotFound());
  CHECK(t->Get(txn.get(), Key(49), &value).ok());
  CHECK(t->Get(txn.get(), "winner", &value).code() ==
        (with_loser ? Status::Code::kOk : Status::Code::kNotFound));
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("a read-only open creates no database", "[unit][api]") {
  io::FaultInjectionFileSystem fs(9);
  Options o = test::SmallDbOptions(&fs);
  o.read_only = true;
  o.create_if_missing = true;  // does not apply
  OpenReport report;
  std::unique_ptr<Database> db;
  Status missing = Database::Open(o, &db, &report);
  INFO(missing.ToString());
  CHECK(missing.IsNotFound());
  CHECK(missing.ToString().find("read-only") != std::string::npos);
  CHECK_FALSE(report.opened);
  CHECK_FALSE(report.needs_recovery);
  bool exists = true;
  REQUIRE(fs.Exists(o.path, &exists).ok());
  CHECK_FALSE(exists);

  // A directory that is no database stays as it was.
  REQUIRE(fs.CreateDir(o.path).ok());
  Status empty = Database::Open(o, &db, &report);
  INFO(empty.ToString());
  CHECK(empty.IsNotFound());
  CHECK(empty.ToString().find("not a database") != std::string::npos);
  std::vector<std::string> names;
  REQUIRE(fs.ListDir(o.path, &names).ok());
  CHECK(names.empty());
  // Not even with a lock file (a directory some other program locks).
  {
    std::unique_ptr<io::FileLock> lock;
    REQUIRE(fs.LockFile(api::LockPath(o.path), &lock).ok());
  }
  empty = Database::Open(o, &db, &report);
  INFO(empty.ToString());
  CHECK(empty.IsNotFound());
  CHECK(empty.ToString().find("no sm.meta") != std::string::npos);
  REQUIRE(fs.Exists(api::VolumePath(o.path), &exists).ok());
  CHECK_FALSE(exists);
  REQUIRE(fs.Exists(api::LogDir(o.path), &exists).ok());
  CHECK_FALSE(exists);
}

}  // namespace
}  // namespace sm
