// Benchmark "lock": the lock manager's fast path and lock-table throughput.
//
//   lock_release_ns          one uncontended key lock (X, precomputed LockId) plus its
//                            Release, from one fiber on one worker, the owner already holding
//                            the table and database intention locks
//   lockkey_release_ns       the same through LockKey(table, key bytes): key hashing and the
//                            parent intention checks included
//   locks_per_s_1w           key locks granted per second: 1 worker, 4 fibers, transactions
//                            of 10 X key locks then ReleaseAll, disjoint keys
//   locks_per_s_2w_disjoint  the same on 2 workers (8 fibers), disjoint keys
//   locks_per_s_2w_overlap   2 workers, 8 fibers sharing 1024 keys: 10 keys per transaction in
//                            ascending order (no deadlocks), 3/4 S and 1/4 X, so transactions
//                            wait for each other (duplicate picks are dropped)
//
// Figures are medians of --repeat runs. Workers are pinned, one per core.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sm/lock/lock_manager.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "threads/worker.h"
#include "tools/bench/bench_util.h"

using namespace sm;
using namespace sm::lock;
using sm::bench::Median;
using sm::bench::NowSeconds;

namespace {

constexpr TableId kTable = 1;
constexpr int kLocksPerTxn = 10;

std::unique_ptr<threads::Runtime> MakeRuntime(unsigned workers) {
  threads::RuntimeOptions options;
  options.workers = workers;
  options.pin_workers = true;
  std::unique_ptr<threads::Runtime> rt;
  if (!threads::Runtime::Create(options, &rt).ok()) std::abort();
  return rt;
}

std::string KeyBytes(uint64_t i) {
  std::string key(8, '\0');
  for (int b = 0; b < 8; ++b) key[b] = static_cast<char>(i >> (56 - 8 * b));  // big-endian
  return key;
}

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "lock failed: %s\n", s.ToString().c_str());
    std::abort();
  }
}

// ns per lock + release of one key on one fiber; `by_bytes` goes through LockKey.
double LockReleaseNs(long iterations, bool by_bytes) {
  constexpr size_t kKeys = 4096;
  std::vector<std::string> keys(kKeys);
  std::vector<LockId> ids(kKeys);
  for (size_t i = 0; i < kKeys; ++i) {
    keys[i] = KeyBytes(i);
    ids[i] = LockId::Key(kTable, keys[i]);
  }
  auto rt = MakeRuntime(1);
  LockManager lm;
  double ns = 0;
  threads::Baton done;
  rt->Spawn(
      [&] {
        LockOwner owner(&lm, TxnId(1));
        Check(lm.LockTable(&owner, kTable, LockMode::kIX));
        for (size_t i = 0; i < kKeys; ++i) {  // warm the pools and the bucket free lists
          Check(lm.Lock(&owner, ids[i], LockMode::kX));
          lm.Release(&owner, ids[i]);
        }
        double t0 = NowSeconds();
        for (long i = 0; i < iterations; ++i) {
          size_t k = static_cast<size_t>(i) & (kKeys - 1);
          if (by_bytes) {
            Check(lm.LockKey(&owner, kTable, keys[k], LockMode::kX));
          } else {
            Check(lm.Lock(&owner, ids[k], LockMode::kX));
          }
          lm.Release(&owner, ids[k]);
        }
        ns = (NowSeconds() - t0) * 1e9 / double(iterations);
        lm.ReleaseAll(&owner);
        done.Post();
      },
      0);
  done.Wait();
  rt->Shutdown();
  return ns;
}

struct ThroughputConfig {
  unsigned workers;
  int fibers_per_worker;
  bool overlap;  // all fibers share one key space of kSharedKeys keys
};

// Key locks granted per second over `seconds`.
double LocksPerSecond(const ThroughputConfig& config, double seconds, uint64_t seed) {
  constexpr uint64_t kSharedKeys = 1024;
  constexpr uint64_t kPrivateKeys = 1 << 16;  // per fiber, disjoint ranges
  auto rt = MakeRuntime(config.workers);
  LockManager lm;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> locks{0};
  const int fibers = static_cast<int>(config.workers) * config.fibers_per_worker;
  threads::WaitGroup wg;
  wg.Add(fibers);
  for (int f = 0; f < fibers; ++f) {
    rt->Spawn(
        [&, f] {
          std::mt19937_64 rng(seed + static_cast<uint64_t>(f));
          LockOwner owner(&lm, TxnId(0));
          uint64_t txn = 0, granted = 0, next_private = 0;
          uint64_t base = (static_cast<uint64_t>(f) + 1) << 32;
          std::vector<uint64_t> picks(kLocksPerTxn);
          while (!stop.load(std::memory_order_relaxed)) {
            // A fresh id per transaction, unique across fibers (age = start order per fiber).
            owner.Reset(TxnId(++txn * 64 + static_cast<uint64_t>(f)));
            for (int i = 0; i < kLocksPerTxn; ++i) {
              picks[i] = config.overlap ? rng() % kSharedKeys
                                        : base + (next_private++ % kPrivateKeys);
            }
            size_t count = picks.size();
            if (config.overlap) {  // ascending and distinct: no upgrades, no deadlocks
              std::sort(picks.begin(), picks.end());
              count = std::unique(picks.begin(), picks.end()) - picks.begin();
            }
            for (size_t i = 0; i < count; ++i) {
              LockMode mode =
                  config.overlap && rng() % 4 != 0 ? LockMode::kS : LockMode::kX;
              Status s = lm.LockKey(&owner, kTable, KeyBytes(picks[i]), mode);
              if (!s.ok()) {  // cannot happen in this workload; tolerate it as an abort
                if (!s.IsRetryable()) Check(s);
                break;
              }
              ++granted;
            }
            lm.ReleaseAll(&owner);
            threads::Worker::Current()->Yield();  // let the worker's other fibers in
          }
          locks.fetch_add(granted);
          wg.Done();
        },
        f % static_cast<int>(config.workers));
  }
  double t0 = NowSeconds();
  while (NowSeconds() - t0 < seconds) threads::SleepFor(std::chrono::milliseconds(5));
  stop = true;
  wg.Wait();
  double elapsed = NowSeconds() - t0;
  rt->Shutdown();
  return double(locks.load()) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lock manager micro-benchmark"};
  int repeat = 5;
  long iterations = 5000000;
  double seconds = 0.5;
  app.add_option("--repeat", repeat, "runs per figure (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "lock+release pairs per fast-path run")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "duration of each throughput run")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::vector<double> raw, by_bytes, tput1, tput2d, tput2o;
  for (int r = 0; r < repeat; ++r) {
    raw.push_back(LockReleaseNs(iterations, false));
    by_bytes.push_back(LockReleaseNs(iterations, true));
    tput1.push_back(LocksPerSecond({1, 4, false}, seconds, 100 + r));
    tput2d.push_back(LocksPerSecond({2, 4, false}, seconds, 200 + r));
    tput2o.push_back(LocksPerSecond({2, 4, true}, seconds, 300 + r));
  }
  double raw_ns = Median(raw), bytes_ns = Median(by_bytes);
  double t1 = Median(tput1), t2d = Median(tput2d), t2o = Median(tput2o);
  std::printf("lock benchmark: %d runs, median\n", repeat);
  std::printf("  key lock + release (LockId)            %7.1f ns   (target <= 60 ns)\n", raw_ns);
  std::printf("  key lock + release (LockKey, bytes)    %7.1f ns\n", bytes_ns);
  std::printf("  throughput, 1 worker, disjoint keys    %7.2f M locks/s\n", t1 / 1e6);
  std::printf("  throughput, 2 workers, disjoint keys   %7.2f M locks/s\n", t2d / 1e6);
  std::printf("  throughput, 2 workers, 1024 shared     %7.2f M locks/s\n", t2o / 1e6);
  sm::bench::PrintJsonLine({{"lock_release_ns", raw_ns},
                            {"lockkey_release_ns", bytes_ns},
                            {"locks_per_s_1w", t1},
                            {"locks_per_s_2w_disjoint", t2d},
                            {"locks_per_s_2w_overlap", t2o},
                            {"repeat", repeat}});
  return 0;
}
