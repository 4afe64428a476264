// Crash points across the phases of the engine's life, through the public API on the
// fault-injecting file system: the n-th write or sync of the log or of the data volume fails
// (the engine must stop making progress, never continue as if it had succeeded), the process
// "dies" there (the log is killed, unsynced writes are dropped or torn), and the database is
// reopened - sometimes with a second crash point inside recovery itself. After every cycle the
// table must equal the acknowledged commits (the one commit whose outcome the failure left
// unknown may be either way) and the B-trees must verify.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

using Model = std::map<std::string, std::string>;

Options CrashOptions(io::FileSystem* fs) {
  Options o = test::SmallDbOptions(fs);
  o.buffer_pool_bytes = 1u << 20;  // small: page write-backs happen during the workload
  o.log_segment_bytes = 256u << 10;
  o.log_buffer_bytes = 64u << 10;
  return o;
}

std::string Key(uint64_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "key%06llu", static_cast<unsigned long long>(i));
  return buf;
}

Status ReadAll(Database* db, Model* out) {
  Table* t = nullptr;
  SM_TRY(db->OpenTable("t", &t));
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn));
  std::unique_ptr<Cursor> cursor;
  SM_TRY(t->NewCursor(txn.get(), ScanOptions::All(), &cursor));
  out->clear();
  while (cursor->Valid()) {
    (*out)[std::string(cursor->key())] = std::string(cursor->value());
    SM_TRY(cursor->Next());
  }
  return txn->Commit();
}

// The first few keys on which two table images differ, for a failure message ("{?}" tells
// nothing).
std::string DescribeDifference(const Model& found, const Model& expected) {
  std::string out;
  int shown = 0;
  auto note = [&](const std::string& key, const char* what) {
    if (shown++ < 8) out += key + ": " + what + "\n";
  };
  for (const auto& [key, value] : expected) {
    auto it = found.find(key);
    if (it == found.end()) note(key, "missing");
    else if (it->second != value) note(key, "wrong value");
  }
  for (const auto& [key, value] : found) {
    if (expected.count(key) == 0) note(key, "not expected");
  }
  return out + std::to_string(shown) + " key(s) differ";
}

// Runs transactions until an operation fails (the injected fault) or `count` are done.
// Acknowledged commits go into *model; a commit that failed leaves its changes in *uncertain.
// With large_every > 0, about one write in large_every writes a large value (sm/api/
// large_values.h: a stub in the leaf, chunks in the table's value tree) of up to 200 KB.
void RunUntilFailure(Database* db, std::mt19937_64& rng, int count, Model* model,
                     std::optional<Model>* uncertain, uint64_t key_space = 1500,
                     int large_every = 0) {
  Table* t = nullptr;
  REQUIRE(db->OpenTable("t", &t).ok());
  for (int n = 0; n < count; ++n) {
    std::unique_ptr<Transaction> txn;
    if (!db->Begin(&txn).ok()) return;
    Model changes = *model;
    int ops = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < ops; ++i) {
      std::string key = Key(rng() % key_space);
      Status s;
      if (rng() % 5 == 0) {
        s = t->Delete(txn.get(), key);
        if (s.ok()) changes.erase(key);
        if (s.IsNotFound()) s = Status::OK();
      } else {
        const bool large = large_every > 0 && rng() % large_every == 0;
        std::string value(large ? 2000 + rng() % 200000 : 8 + rng() % 200,
                          static_cast<char>('a' + rng() % 26));
        if (large) value[rng() % value.size()] = '!';  // the chunks differ from each other
        s = t->Upsert(txn.get(), key, value);
        if (s.ok()) changes[key] = value;
      }
      if (!s.ok()) return;  // the fault: the transaction dies with the process
    }
    if (rng() % 6 == 0) {
      if (!txn->Abort().ok()) return;
      continue;
    }
    if (rng() % 10 == 0 && !db->Checkpoint().ok()) return;
    Status s = txn->Commit();
    if (!s.ok()) {
      *uncertain = changes;
      return;
    }
    *model = changes;
  }
}

// The crash-point cycles of the tests below: `cycles` of them (fewer under the sanitizers).
void RunCrashPoints(const char* name, int cycles, int large_every) {
  uint64_t seed = test::TestSeed(name);
  std::mt19937_64 rng(seed);
  io::FaultInjectionFileSystem fs(seed);
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(CrashOptions(&fs), &db).ok());
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    REQUIRE(db->Close().ok());
  }
  Model model;
  int recovery_crashes = 0, faults_hit = 0;
  const int kCycles = test::kSanitized ? cycles * 3 / 10 : cycles;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    INFO("cycle " << cycle << " seed " << seed);
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(CrashOptions(&fs), &db).ok());
    // Arm one fault: a write or a sync, of the log or of the volume, a few operations ahead.
    bool on_log = rng() % 2 == 0;
    fs.SetFaultFilter(on_log ? "/db/log/" : "/db/data.sm");
    fs.FailNth(rng() % 4 == 0 ? io::FaultOp::kSync : io::FaultOp::kWrite, 1 + rng() % 40);
    std::optional<Model> uncertain;
    RunUntilFailure(db.get(), rng, 25, &model, &uncertain, 1500, large_every);
    faults_hit += fs.counters().write_faults + fs.counters().sync_faults > 0;
    fs.ClearFaults();
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    db.reset();
    fs.SimulateCrash(rng() % 2 == 0 ? io::CrashMode::kDropUnsynced : io::CrashMode::kTearUnsynced);

    if (rng() % 3 == 0) {  // a second crash, inside recovery (redo page writes, CLRs, checkpoint)
      fs.FailNth(io::FaultOp::kWrite, 1 + rng() % 20);
      Status s = Database::Open(CrashOptions(&fs), &db);
      fs.ClearFaults();
      if (!s.ok()) {
        ++recovery_crashes;
      } else {
        static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
      }
      db.reset();
      fs.SimulateCrash(io::CrashMode::kDropUnsynced);
    }
    Status s = Database::Open(CrashOptions(&fs), &db);
    INFO(s.ToString());
    REQUIRE(s.ok());
    s = db->Verify();
    INFO(s.ToString());
    REQUIRE(s.ok());
    Model found;
    REQUIRE(ReadAll(db.get(), &found).ok());
    if (uncertain.has_value() && found == *uncertain) model = *uncertain;
    INFO(DescribeDifference(found, model));
    bool same_as_model = found == model;  // (the maps print as "{?}")
    REQUIRE(same_as_model);
    REQUIRE(db->Close().ok());
  }
  // The plan must actually reach the phases it claims to test.
  CHECK(faults_hit > kCycles / 2);
  CHECK(recovery_crashes > 0);
  std::printf("%s: %d cycles, %d faults hit, %d crashes inside recovery\n", name, kCycles,
              faults_hit, recovery_crashes);
}

// 200 cycles in the optimized build (the default tier's crash-point count).
TEST_CASE("crash points in normal operation, checkpoints, write-back and recovery",
          "[crash][api]") {
  RunCrashPoints("crash points", 200, 0);
}

TEST_CASE("crash points with large values", "[crash][api]") {
  RunCrashPoints("crash points with large values", 100, 8);
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

// Power loss tears page writes (some 512-byte sectors of an 8 KiB write reach the disk, others
// not). A small pool makes the workload write pages back between checkpoints; after each
// crash the torn pages must be rebuilt from the full images logged since the last checkpoint.
TEST_CASE("pages torn by a crash are rebuilt from full-page images", "[crash][api]") {
  uint64_t seed = test::TestSeed("torn pages");
  std::mt19937_64 rng(seed);
  io::FaultInjectionFileSystem fs(seed);
  Options options = CrashOptions(&fs);
  options.buffer_pool_bytes = 128u << 10;  // 16 frames: constant write-back
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(options, &db).ok());
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    REQUIRE(db->Close().ok());
  }
  Model model;
  uint64_t repaired = 0, torn_writes = 0;
  const int kCycles = test::kSanitized ? 8 : 30;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    INFO("cycle " << cycle << " seed " << seed);
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(options, &db).ok());
    std::optional<Model> uncertain;
    RunUntilFailure(db.get(), rng, 40, &model, &uncertain, /*key_space=*/50000);
    REQUIRE_FALSE(uncertain.has_value());  // no faults injected: every commit is acknowledged
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    db.reset();
    io::CrashReport crash = fs.SimulateCrash(io::CrashMode::kTearUnsynced);
    torn_writes += crash.ops_torn;
    OpenReport report;
    Status s = Database::Open(options, &db, &report);
    INFO(s.ToString());
    REQUIRE(s.ok());
    repaired += report.torn_pages_repaired;
    REQUIRE(db->Verify().ok());
    Model found;
    REQUIRE(ReadAll(db.get(), &found).ok());
    INFO(report.ToString());
    INFO(DescribeDifference(found, model));
    bool same_as_model = found == model;  // (the maps print as "{?}")
    REQUIRE(same_as_model);
    REQUIRE(db->Close().ok());
  }
  std::printf("torn pages: %llu torn writes, %llu pages rebuilt from full-page images in %d crashes\n",
              static_cast<unsigned long long>(torn_writes), static_cast<unsigned long long>(repaired),
              kCycles);
  CHECK(repaired > 0);  // the test must actually tear pages
}

}  // namespace
}  // namespace sm

namespace sm {
namespace {

// An Open whose recovery fails part way (a page write fails while redo evicts, while the
// pages are written at its end, or at its checkpoint) must leave the files as the failure found
// them: the next Open recovers from the same starting point. Closing the half-recovered
// database instead would checkpoint it as whole, and the loser's changes and the redo it did
// not finish would be lost to every later recovery.
TEST_CASE("an Open whose recovery fails leaves the database for the next Open to recover",
          "[crash][api]") {
  uint64_t seed = test::TestSeed("failed recovery");
  std::mt19937_64 rng(seed);
  io::FaultInjectionFileSystem fs(seed);
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(CrashOptions(&fs), &db).ok());
    Table* t = nullptr;
    REQUIRE(db->CreateTable("t", &t).ok());
    REQUIRE(db->Close().ok());
  }
  Model model;
  int failed_opens = 0;
  // No background writer during the workload: pages it wrote before the crash would need no
  // redo, so how many pages recovery writes (where the faults are meant to land) would depend
  // on how fast the workload ran (slower under a sanitizer, or beside other tests).
  Options workload_options = CrashOptions(&fs);
  workload_options.background_write_interval = std::chrono::milliseconds(0);
  for (int cycle = 0; cycle < 12; ++cycle) {
    INFO("cycle " << cycle << " seed " << seed);
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(workload_options, &db).ok());
    // Rows of up to 1,900 bytes: redo touches more pages than the 1 MiB pool holds.
    Table* t = nullptr;
    REQUIRE(db->OpenTable("t", &t).ok());
    for (int n = 0; n < 20; ++n) {
      std::unique_ptr<Transaction> txn;
      REQUIRE(db->Begin(&txn).ok());
      Model changes = model;
      for (int i = 0; i < 20; ++i) {
        std::string key = Key(rng() % 1500);
        std::string value(8 + rng() % 1900, static_cast<char>('a' + rng() % 26));
        REQUIRE(t->Upsert(txn.get(), key, value).ok());
        changes[key] = value;
      }
      REQUIRE(txn->Commit().ok());
      model = std::move(changes);
    }
    std::unique_ptr<Transaction> loser;  // left active: recovery rolls it back
    REQUIRE(db->Begin(&loser).ok());
    for (int i = 0; i < 20; ++i) {
      REQUIRE(t->Upsert(loser.get(), Key(rng() % 1500), std::string(1000, 'L')).ok());
    }
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    loser.reset();
    db.reset();
    fs.SimulateCrash(io::CrashMode::kDropUnsynced);
    // Recovery fails at one of its page writes, the process dies there, and again later.
    for (int attempt = 0; attempt < 2; ++attempt) {
      fs.SetFaultFilter("/db/data.sm");
      fs.FailNth(io::FaultOp::kWrite, 1 + rng() % 6);
      Status s = Database::Open(CrashOptions(&fs), &db);
      fs.ClearFaults();
      if (!s.ok()) {
        ++failed_opens;
      } else {
        static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
      }
      db.reset();
      fs.SimulateCrash(io::CrashMode::kDropUnsynced);
    }
    Status s = Database::Open(CrashOptions(&fs), &db);
    INFO(s.ToString());
    REQUIRE(s.ok());
    s = db->Verify();
    INFO(s.ToString());
    REQUIRE(s.ok());
    Model found;
    REQUIRE(ReadAll(db.get(), &found).ok());
    INFO(DescribeDifference(found, model));
    bool same_as_model = found == model;  // (the maps print as "{?}")
    REQUIRE(same_as_model);
    REQUIRE(db->Close().ok());
  }
  std::printf("failed recovery: %d of 24 opens failed at a page write\n", failed_opens);
  CHECK(failed_opens > 2);  // the faults must land inside recovery (most do)
}

}  // namespace
}  // namespace sm
