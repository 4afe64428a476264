// Concurrent random transactions through the public API on 2 workers, checked against a model.
//
// Fibers (several per worker) run serializable transactions of three kinds on one table:
//   - private writes: inserts, updates and deletes of keys in the fiber's own key range (the
//     ranges interleave, so fibers share leaves and split each other's pages), committed or
//     aborted at random; the fiber keeps a std::map model of its range's committed state;
//   - transfers: move an amount between two of a few shared account keys (read, then update
//     both); deadlock victims abort and retry. The sum over all accounts never changes;
//   - audits: scan every account and check the sum (serializable: no transfer is seen half done).
// At the end every fiber's range equals its model, the sum is intact, and the tree verifies;
// then the database is reopened and checked again. It runs with STEPS off, on (the checked-in
// CTX placement), and on with every CTX site compiled into the engine enabled: each site must
// be a point where a switch to a teammate is harmless (threads/ctx_point.h).
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "steps/steps.h"
#include "tests/test_util.h"
#include "threads/ctx_point.h"
#include "threads/sync.h"

namespace sm {
namespace {

constexpr int kAccounts = 8;
constexpr int64_t kInitialBalance = 1000;

std::string PrivateKey(int fiber, int fibers, int n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "p%07d", n * fibers + fiber);  // ranges interleave
  return buf;
}
std::string AccountKey(int a) { return "acct" + std::to_string(a); }

int64_t Balance(std::string_view value) { return std::stoll(std::string(value)); }

struct Shared {
  Table* table = nullptr;
  std::atomic<uint64_t> commits{0}, aborts{0}, retries{0}, audits{0}, failures{0};
  std::string first_failure;
  threads::SpinLock failure_lock;
  void Fail(const std::string& what) {
    std::lock_guard<threads::SpinLock> guard(failure_lock);
    if (failures.fetch_add(1) == 0) first_failure = what;
  }
};

bool Retryable(const Status& s) { return s.IsDeadlock() || s.IsLockTimeout(); }

// One transfer; returns false on a retryable failure (the caller retries).
bool Transfer(Database* db, Shared* shared, std::mt19937_64& rng) {
  int from = static_cast<int>(rng() % kAccounts), to = static_cast<int>(rng() % kAccounts);
  if (from == to) return true;
  std::unique_ptr<Transaction> txn;
  if (!db->Begin(&txn).ok()) return shared->Fail("begin"), true;
  std::string a, b;
  Status s = shared->table->Get(txn.get(), AccountKey(from), &a);
  if (s.ok()) s = shared->table->Get(txn.get(), AccountKey(to), &b);
  int64_t amount = static_cast<int64_t>(rng() % 50);
  if (s.ok())
    s = shared->table->Update(txn.get(), AccountKey(from), std::to_string(Balance(a) - amount));
  if (s.ok())
    s = shared->table->Update(txn.get(), AccountKey(to), std::to_string(Balance(b) + amount));
  if (s.ok()) s = txn->Commit();
  if (s.ok()) return true;
  if (txn->active() && !txn->Abort().ok()) shared->Fail("abort after " + s.ToString());
  if (!Retryable(s)) shared->Fail("transfer: " + s.ToString());
  return !Retryable(s);
}

bool Audit(Database* db, Shared* shared) {
  std::unique_ptr<Transaction> txn;
  if (!db->Begin(&txn).ok()) return shared->Fail("begin"), true;
  std::unique_ptr<Cursor> cursor;
  Status s = shared->table->NewCursor(txn.get(), ScanOptions::Prefix("acct"), &cursor);
  int64_t sum = 0;
  int n = 0;
  while (s.ok() && cursor->Valid()) {
    sum += Balance(cursor->value());
    ++n;
    s = cursor->Next();
  }
  cursor.reset();
  if (s.ok()) s = txn->Commit();
  if (s.ok()) {
    if (n != kAccounts || sum != kAccounts * kInitialBalance) {
      shared->Fail("audit saw " + std::to_string(n) + " accounts summing to " +
                   std::to_string(sum));
    }
    shared->audits.fetch_add(1);
    return true;
  }
  if (txn->active() && !txn->Abort().ok()) shared->Fail("abort after " + s.ToString());
  if (!Retryable(s)) shared->Fail("audit: " + s.ToString());
  return !Retryable(s);
}

void PrivateWrites(Database* db, Shared* shared, int fiber, int fibers, std::mt19937_64& rng,
                   std::map<std::string, std::string>* model) {
  std::unique_ptr<Transaction> txn;
  if (!db->Begin(&txn).ok()) return shared->Fail("begin");
  std::map<std::string, std::string> next = *model;
  int ops = 1 + static_cast<int>(rng() % 12);
  for (int i = 0; i < ops; ++i) {
    std::string key = PrivateKey(fiber, fibers, static_cast<int>(rng() % 400));
    std::string value(1 + rng() % 150, static_cast<char>('a' + rng() % 26));
    Status s;
    switch (rng() % 3) {
      case 0:
        s = shared->table->Insert(txn.get(), key, value);
        if (s.ok()) next[key] = value;
        if (s.IsDuplicate() && next.count(key) == 1) s = Status::OK();
        break;
      case 1:
        s = shared->table->Update(txn.get(), key, value);
        if (s.ok()) next[key] = value;
        if (s.IsNotFound() && next.count(key) == 0) s = Status::OK();
        break;
      default:
        s = shared->table->Delete(txn.get(), key);
        if (s.ok()) next.erase(key);
        if (s.IsNotFound() && next.count(key) == 0) s = Status::OK();
        break;
    }
    if (!s.ok()) {
      // Private keys conflict with nobody; gap locks on neighbours can still deadlock.
      if (!Retryable(s)) shared->Fail("private write: " + s.ToString());
      if (!txn->Abort().ok()) shared->Fail("abort");
      shared->retries.fetch_add(1);
      return;
    }
  }
  if (rng() % 4 == 0) {
    if (!txn->Abort().ok()) shared->Fail("abort");
    shared->aborts.fetch_add(1);
    return;
  }
  Status s = txn->Commit();
  if (!s.ok()) return shared->Fail("commit: " + s.ToString());
  *model = std::move(next);
  shared->commits.fetch_add(1);
}

void CheckModels(Database* db, Table* table, int fibers,
                 const std::vector<std::map<std::string, std::string>>& models) {
  std::map<std::string, std::string> expected;
  for (const auto& m : models) expected.insert(m.begin(), m.end());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  std::unique_ptr<Cursor> cursor;
  REQUIRE(table->NewCursor(txn.get(), ScanOptions::Prefix("p"), &cursor).ok());
  auto it = expected.begin();
  while (cursor->Valid()) {
    REQUIRE(it != expected.end());
    REQUIRE(cursor->key() == it->first);
    REQUIRE(cursor->value() == it->second);
    ++it;
    REQUIRE(cursor->Next().ok());
  }
  CHECK(it == expected.end());
  cursor.reset();
  REQUIRE(txn->Commit().ok());
}

enum class StepsMode { kOff, kOn, kEverySite };

const char* ModeName(StepsMode mode) {
  switch (mode) {
    case StepsMode::kOff:
      return "off";
    case StepsMode::kOn:
      return "on";
    case StepsMode::kEverySite:
      return "on, every CTX site enabled";
  }
  return "?";
}

// A placement file that enables every CTX site of this binary, removed at scope exit.
class EverySitePlacement {
 public:
  explicit EverySitePlacement(uint64_t seed)
      : path_((std::filesystem::temp_directory_path() /
               ("sm-every-site-" + std::to_string(seed) + "-" + std::to_string(getpid())))
                  .string()) {
    std::FILE* f = std::fopen(path_.c_str(), "w");
    REQUIRE(f != nullptr);
    for (const threads::CtxSite* site : threads::ListCtxSites())
      std::fprintf(f, "%s\n", site->name);
    REQUIRE(std::fclose(f) == 0);
  }
  ~EverySitePlacement() { std::remove(path_.c_str()); }
  EverySitePlacement(const EverySitePlacement&) = delete;
  EverySitePlacement& operator=(const EverySitePlacement&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void RunConcurrentRandom(StepsMode mode, int rounds, uint64_t seed) {
  INFO("STEPS " << ModeName(mode) << ", seed " << seed);
  const bool use_steps = mode != StepsMode::kOff;
  io::FaultInjectionFileSystem fs(seed);
  Options options;
  options.path = "/db";
  options.file_system = &fs;
  options.buffer_pool_bytes = 2u << 20;  // evictions happen
  options.commit_mode = CommitMode::kAsync;
  options.checkpoint_interval = std::chrono::milliseconds(50);
  options.workers = 2;
  options.lock_wait_timeout = std::chrono::milliseconds(5000);
  options.steps = use_steps;
  std::unique_ptr<EverySitePlacement> every_site;
  if (mode == StepsMode::kEverySite) {
    every_site = std::make_unique<EverySitePlacement>(seed);
    options.ctx_placement = every_site->path();
  }
  steps::ResetStats();  // the statistics below are this run's
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Shared shared;
  REQUIRE(db->CreateTable("t", &shared.table).ok());
  {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    for (int a = 0; a < kAccounts; ++a) {
      REQUIRE(shared.table->Insert(txn.get(), AccountKey(a), std::to_string(kInitialBalance)).ok());
    }
    REQUIRE(txn->Commit().ok());
  }
  const int kFibers = 8;
  const int kRounds = rounds;
  std::vector<std::map<std::string, std::string>> models(kFibers);
  WaitGroup done;
  for (int f = 0; f < kFibers; ++f) {
    REQUIRE(db->Spawn(
        [&, f] {
          std::mt19937_64 rng(seed * 31 + f);
          for (int round = 0; round < kRounds; ++round) {
            switch (rng() % 4) {
              case 0:
                while (!Transfer(db.get(), &shared, rng)) shared.retries.fetch_add(1);
                break;
              case 1:
                while (!Audit(db.get(), &shared)) shared.retries.fetch_add(1);
                break;
              default:
                PrivateWrites(db.get(), &shared, f, kFibers, rng, &models[f]);
                break;
            }
          }
        },
        f % 2, &done).ok());
  }
  done.Wait();
  INFO(shared.first_failure);
  REQUIRE(shared.failures.load() == 0);
  if (use_steps) {
    uint64_t entered = 0, switches = 0;
    for (const steps::TeamStats& st : steps::Stats()) {
      entered += st.entered;
      switches += st.ctx_switches;
    }
    CHECK(entered > 0);  // operations really ran in teams
    // Every site enabled: several switches per operation (about a third of one with the
    // checked-in placement).
    if (mode == StepsMode::kEverySite) CHECK(switches > entered);
    std::printf("api random with STEPS: %llu team entries, %llu CTX switches\n",
                static_cast<unsigned long long>(entered),
                static_cast<unsigned long long>(switches));
  }
  std::printf("api random: %llu commits, %llu aborts, %llu retries, %llu audits\n",
              static_cast<unsigned long long>(shared.commits.load()),
              static_cast<unsigned long long>(shared.aborts.load()),
              static_cast<unsigned long long>(shared.retries.load()),
              static_cast<unsigned long long>(shared.audits.load()));
  REQUIRE(db->Verify().ok());
  CheckModels(db.get(), shared.table, kFibers, models);
  REQUIRE(Audit(db.get(), &shared));
  REQUIRE(db->Close().ok());
  db.reset();
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->OpenTable("t", &table).ok());
  shared.table = table;
  REQUIRE(db->Verify().ok());
  CheckModels(db.get(), table, kFibers, models);
  REQUIRE(Audit(db.get(), &shared));
  REQUIRE(shared.failures.load() == 0);
  REQUIRE(db->Close().ok());
}

// About 15,000 operations per configuration.
TEST_CASE("concurrent random transactions on 2 workers match the model", "[random][api]") {
  const StepsMode mode = GENERATE(StepsMode::kOff, StepsMode::kOn, StepsMode::kEverySite);
  RunConcurrentRandom(mode, 300, test::TestSeed("api concurrent random"));
}

// The slow tier (tools/run test --slow): about 2.5 million operations.
TEST_CASE("concurrent random transactions, millions of operations", "[random][api][.slow]") {
  const StepsMode mode = GENERATE(StepsMode::kOff, StepsMode::kOn, StepsMode::kEverySite);
  RunConcurrentRandom(mode, 50000, test::TestSeed("api concurrent random slow"));
}

}  // namespace
}  // namespace sm
