// STEPS teams through the public API: a transaction that aborts while its teammates commit
// (the rollback runs inside the commit team and undoes only its own rows), and members that
// wait for a page read leave their team as strays for I/O and rejoin at their next operation.
#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "steps/steps.h"
#include "tests/api/api_test_util.h"
#include "tests/io/io_test_util.h"
#include "threads/fiber.h"

namespace sm {
namespace {

constexpr int kFibers = 6;

// The statistics of the team list named `name`, which the test must have used.
steps::TeamStats TeamRow(const std::string& name) {
  for (const steps::TeamStats& row : steps::Stats()) {
    if (row.name == name) return row;
  }
  FAIL("no team list " << name);
  return {};
}

// Runs body(i) on kFibers fibers of worker 0, spawned together by one fiber so that all are
// queued before the first runs (and so form teams); returns once all have finished.
template <typename Body>
void RunTeamOfFibers(Database* db, Body body) {
  WaitGroup done;
  std::atomic<int> refused{0};
  REQUIRE(db->Spawn(
                [&] {
                  for (int i = 0; i < kFibers; ++i) {
                    if (!db->Spawn([&, i] { body(i); }, 0, &done).ok()) refused.fetch_add(1);
                  }
                },
                0, &done)
              .ok());
  done.Wait();
  REQUIRE(refused.load() == 0);
}

std::string Key(int fiber, int row) {
  return "f" + std::to_string(fiber) + "-r" + std::to_string(row);
}

TEST_CASE("a transaction aborts inside a team while its teammates commit", "[unit][steps][api]") {
  io::FaultInjectionFileSystem fs(1);
  Options options = test::SmallDbOptions(&fs);
  options.steps = true;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->CreateTable("teams", &table).ok());
  steps::ResetStats();

  constexpr int kRows = 5;
  std::vector<std::string> failures(kFibers);
  RunTeamOfFibers(db.get(), [&](int i) {
    std::unique_ptr<Transaction> txn;
    Status s = db->Begin(&txn);
    for (int r = 0; s.ok() && r < kRows; ++r) {
      s = table->Insert(txn.get(), Key(i, r), "value of " + Key(i, r));
    }
    if (s.ok()) s = i % 2 == 1 ? txn->Abort() : txn->Commit();  // odd fibers abort
    if (!s.ok()) failures[i] = s.ToString();
  });
  for (int i = 0; i < kFibers; ++i) {
    INFO("fiber " << i);
    CHECK(failures[i].empty());
  }

  // The committed rows are there, the aborted ones are not.
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int i = 0; i < kFibers; ++i) {
    for (int r = 0; r < kRows; ++r) {
      std::string value;
      Status s = table->Get(txn.get(), Key(i, r), &value);
      INFO(Key(i, r) << ": " << s.ToString());
      if (i % 2 == 0) {
        REQUIRE(s.ok());
        CHECK(value == "value of " + Key(i, r));
      } else {
        CHECK(s.IsNotFound());
      }
    }
  }
  REQUIRE(txn->Commit().ok());
  REQUIRE(db->Verify().ok());

  // The work ran in teams: every insert, and commit and abort in one team list.
  const steps::TeamStats insert = TeamRow("insert (teams)");
  CHECK(insert.entered == kFibers * kRows);
  CHECK(insert.AverageTeamSize() > 1.0);
  CHECK(insert.strays() == 0);
  const steps::TeamStats commit = TeamRow("commit");
  CHECK(commit.entered >= kFibers);
  CHECK(commit.AverageTeamSize() > 1.0);
  REQUIRE(db->Close().ok());
}

// The cold table's k-th key.
std::string ColdKey(int k) { return "k" + std::to_string(100000 + k); }

TEST_CASE("members that wait for a page read go stray for I/O and rejoin their team",
          "[unit][steps][api]") {
  // A real directory: the POSIX file system reads through the worker's reactor, where a fiber
  // waits for the device (WaitReason::kIo).
  test::ScratchDir dir;
  Options options;
  options.path = dir / "db";
  options.workers = 1;
  options.buffer_pool_bytes = 2u << 20;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  options.commit_mode = CommitMode::kAsync;
  options.miss_interleaving = MissInterleaving::kOff;  // a miss waits for its read
  options.prefault_pool = false;
  constexpr int kRows = 8000;  // about 1.5 MiB of rows, on a few hundred leaves
  const std::string filler(150, 'x');
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(options, &db).ok());
    Table* table = nullptr;
    REQUIRE(db->CreateTable("cold", &table).ok());
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int k = 0; k < kRows; ++k) {
      REQUIRE(table->Insert(txn.get(), ColdKey(k), filler).ok());
    }
    REQUIRE(txn->Commit().ok());
    REQUIRE(db->Close().ok());
  }
  // Reopened, the pool holds none of the leaves: the fetches read them.
  options.steps = true;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->OpenTable("cold", &table).ok());
  steps::ResetStats();

  constexpr int kFetches = 20;
  std::vector<int> found(kFibers, 0);
  std::vector<bool> committed(kFibers, false);
  RunTeamOfFibers(db.get(), [&](int i) {
    std::unique_ptr<Transaction> txn;
    if (!db->Begin(&txn).ok()) return;
    for (int f = 0; f < kFetches; ++f) {
      // Each fiber reads rows far apart, on leaves no teammate has read.
      const int k = (i * kFetches + f) * (kRows / (kFibers * kFetches));
      std::string value;
      if (table->Get(txn.get(), ColdKey(k), &value).ok() && value == filler) {
        ++found[i];
      }
    }
    committed[i] = txn->Commit().ok();
  });
  for (int i = 0; i < kFibers; ++i) {
    INFO("fiber " << i);
    CHECK(found[i] == kFetches);
    CHECK(committed[i]);
  }
  const steps::TeamStats fetch = TeamRow("index fetch (cold)");
  INFO("strays by cause: " << fetch.StrayReasons());
  CHECK(fetch.stray[static_cast<int>(threads::WaitReason::kIo)] > 0);
  // Every fetch entered the team list, including the strays' next ones: they rejoined.
  CHECK(fetch.entered == kFibers * kFetches);
  CHECK(fetch.completed + fetch.strays() == fetch.entered);
  CHECK(fetch.AverageTeamSize() > 1.0);
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

}  // namespace
}  // namespace sm
