// Seeded stress of the lock manager against a serial-execution model.
//
// Many fibers on one or two workers run transactions over a small key space. A transaction
// locks a few keys in random order, each in S or X (an S is sometimes upgraded to X later),
// and now and then starts with a table S lock (a "table scan", which makes later key writes
// convert the table lock to SIX). Under X it increments the key's model counter (keeping an
// undo record); under S it checks the value does not change while it holds the lock. A
// deadlock victim undoes its writes, releases everything and retries under the same TxnId
// (so it ages and eventually wins). Checks: nothing hangs (watchdog), every transaction
// commits, no lock wait times out (the detector found every deadlock), the table is empty
// and its invariants hold at the end, and every counter equals the number of committed
// increments of its key (what a serial execution gives).
//
// With one worker the run is a deterministic function of the seed (fibers switch only when
// they wait or yield); with two, the seed fixes each transaction's plan but not the
// interleaving.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sm/lock/lock_manager.h"
#include "tests/lock/lock_test_util.h"
#include "tests/test_util.h"
#include "threads/sync.h"
#include "threads/worker.h"

using namespace sm;
using namespace sm::lock;

namespace {

constexpr TableId kTable = 4;

struct Config {
  unsigned workers;
  int fibers_per_worker;
  int txns_per_fiber;
  int keys;
  std::chrono::seconds watchdog;
};

struct Step {
  int key;
  LockMode mode;
  bool upgrade_later;  // an S that becomes X at the end of the transaction
};

struct Plan {
  bool table_scan = false;
  std::vector<Step> steps;
};

Plan MakePlan(std::mt19937_64& rng, int keys) {
  Plan plan;
  plan.table_scan = rng() % 20 == 0;
  std::vector<int> order(keys);
  for (int k = 0; k < keys; ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  int n = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    bool exclusive = rng() % 2 == 0;
    plan.steps.push_back(Step{order[i], exclusive ? LockMode::kX : LockMode::kS,
                              !exclusive && rng() % 3 == 0});
  }
  return plan;
}

std::string KeyName(int key) { return "key" + std::to_string(key); }

class Harness {
 public:
  Harness(const Config& config, uint64_t seed)
      : config_(config), seed_(seed), lm_(Options()), values_(config.keys, 0),
        committed_increments_(config.keys) {}

  void Run() {
    auto rt = sm::test::MakeRuntime(config_.workers);
    const int fibers = static_cast<int>(config_.workers) * config_.fibers_per_worker;
    remaining_ = fibers;
    for (int f = 0; f < fibers; ++f) {
      rt->Spawn([this, f] { FiberMain(f); }, f % static_cast<int>(config_.workers));
    }
    auto deadline = std::chrono::steady_clock::now() + config_.watchdog;
    if (!all_done_.WaitUntil(deadline)) {
      // Stop retrying and starting transactions; blocked waits end by lock timeout.
      gave_up_ = true;
      std::fprintf(stderr, "watchdog expired; lock table:\n%s", lm_.TEST_Dump().c_str());
      all_done_.Wait();
    }
    rt->Shutdown();
  }

  void Verify() {
    INFO("seed " << seed_);
    REQUIRE_FALSE(gave_up_.load());
    const LockStats stats = lm_.stats();
    std::printf("  %llu commits, %llu deadlock victims, %llu waits (avg %.1f us)\n",
                static_cast<unsigned long long>(commits_.load()),
                static_cast<unsigned long long>(victims_.load()),
                static_cast<unsigned long long>(stats.waits), stats.average_wait_us());
    CHECK(commits_.load() ==
          uint64_t(config_.workers) * config_.fibers_per_worker * config_.txns_per_fiber);
    CHECK(stats.deadlocks == victims_.load());
    CHECK(stats.timeouts == 0);
    CHECK(other_errors_.load() == 0);
    CHECK(isolation_errors_.load() == 0);
    CHECK(lm_.TEST_LockHeadCount() == 0);
    CHECK(lm_.CheckInvariants());
    for (int k = 0; k < config_.keys; ++k) {
      INFO("key " << k);
      CHECK(values_[k] == committed_increments_[k].load());
    }
  }

 private:
  static LockManagerOptions Options() {
    LockManagerOptions options;
    options.bucket_count = 1024;
    options.lock_wait_timeout = std::chrono::seconds(10);
    return options;
  }

  void FiberMain(int fiber_index) {
    std::mt19937_64 rng(seed_ * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(fiber_index));
    LockOwner owner(&lm_, TxnId::Invalid());
    for (int t = 0; t < config_.txns_per_fiber && !gave_up_.load(); ++t) {
      Plan plan = MakePlan(rng, config_.keys);
      // A new transaction is younger than every running one; retries keep the id.
      owner.Reset(TxnId(next_txn_id_.fetch_add(1, std::memory_order_relaxed)));
      while (!gave_up_.load()) {
        Status s = RunOnce(&owner, plan, rng);
        if (s.ok()) break;
        if (s.IsDeadlock()) {
          victims_.fetch_add(1);
        } else {
          other_errors_.fetch_add(1);
          std::fprintf(stderr, "unexpected: %s\n", s.ToString().c_str());
        }
      }
    }
    if (remaining_.fetch_sub(1) == 1) all_done_.Set();
  }

  // One attempt: OK and committed, or an error after undoing and releasing everything.
  Status RunOnce(LockOwner* owner, const Plan& plan, std::mt19937_64& rng) {
    std::vector<std::pair<int, int64_t>> undo;
    std::vector<int> increments;
    Status s = Body(owner, plan, rng, &undo, &increments);
    if (!s.ok()) {
      for (auto it = undo.rbegin(); it != undo.rend(); ++it) values_[it->first] = it->second;
      lm_.ReleaseAll(owner);
      return s;
    }
    for (int k : increments) committed_increments_[k].fetch_add(1);
    commits_.fetch_add(1);
    lm_.ReleaseAll(owner);  // commit
    return Status::OK();
  }

  Status Body(LockOwner* owner, const Plan& plan, std::mt19937_64& rng,
              std::vector<std::pair<int, int64_t>>* undo, std::vector<int>* increments) {
    if (plan.table_scan) {
      SM_TRY(lm_.LockTable(owner, kTable, LockMode::kS));
      int64_t sum_before = 0, sum_after = 0;
      for (int64_t v : values_) sum_before += v;
      MaybeYield(rng);
      for (int64_t v : values_) sum_after += v;
      if (sum_before != sum_after) isolation_errors_.fetch_add(1);
    }
    for (const Step& step : plan.steps) {
      SM_TRY(Access(owner, step.key, step.mode, rng, undo, increments));
    }
    for (const Step& step : plan.steps) {
      if (step.upgrade_later) {
        SM_TRY(Access(owner, step.key, LockMode::kX, rng, undo, increments));
      }
    }
    return Status::OK();
  }

  Status Access(LockOwner* owner, int key, LockMode mode, std::mt19937_64& rng,
                std::vector<std::pair<int, int64_t>>* undo, std::vector<int>* increments) {
    SM_TRY(lm_.LockKey(owner, kTable, KeyName(key), mode));
    int64_t before = values_[key];
    MaybeYield(rng);
    if (mode == LockMode::kX) {
      undo->emplace_back(key, before);
      values_[key] = before + 1;
      increments->push_back(key);
    } else if (values_[key] != before) {
      isolation_errors_.fetch_add(1);  // changed under our S lock
    }
    return Status::OK();
  }

  static void MaybeYield(std::mt19937_64& rng) {
    if (rng() % 2 == 0) threads::Worker::Current()->Yield();
  }

  const Config config_;
  const uint64_t seed_;
  LockManager lm_;
  std::vector<int64_t> values_;  // key -> counter; written only under that key's X lock
  std::vector<std::atomic<int64_t>> committed_increments_;
  std::atomic<uint64_t> next_txn_id_{1};
  std::atomic<uint64_t> commits_{0}, victims_{0}, other_errors_{0}, isolation_errors_{0};
  std::atomic<int> remaining_{0};
  std::atomic<bool> gave_up_{false};
  threads::Event all_done_;
};

}  // namespace

TEST_CASE("random transactions on two workers match a serial execution", "[random][lock]") {
  const uint64_t seed = sm::test::TestSeed("lock random, 2 workers");
  Harness harness(Config{2, 16, 60, 8, std::chrono::seconds(120)}, seed);
  harness.Run();
  harness.Verify();
}

TEST_CASE("random transactions on one worker match a serial execution (replayable)",
          "[random][lock]") {
  const uint64_t seed = sm::test::TestSeed("lock random, 1 worker");
  Harness harness(Config{1, 24, 40, 6, std::chrono::seconds(120)}, seed);
  harness.Run();
  harness.Verify();
}
