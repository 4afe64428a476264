// Isolation of concurrent transactions, checked on recorded histories (history_checker.h).
//
// Fibers on 2 workers run random transactions over a small table of keys, all present from the
// start, at one isolation level per run: point reads, short range scans, and read-modify-writes
// (Get, then Update; under serializable the Get's S lock must be upgraded to X, which is where
// deadlocks come from). Every write stores the version it creates and the version it read
// (EncodeVersionValue, padded to random sizes), so each read names the exact version it saw. Some
// transactions abort on purpose; deadlock victims and other retryable failures abort and run again
// as a new attempt with a new tag. Every attempt, committed or not, is recorded with its reads, its
// writes and ticks of one shared clock after each of them and before its end; after the run, the
// final state is read and the whole history is checked: serializable runs must have an acyclic
// ww/wr/rw graph and no lost update; read-committed runs no dirty read, no dirty write and no
// ww/wr cycle (and, as a control, must fail the serializable check).
//
// Phantoms. Versions of present keys cannot show a phantom, so the table also has a zone of
// slots that transactions insert and delete, in segments of kSlotsPerSegment, each with a
// count row: a toggle reads a slot, inserts or deletes it and read-modify-writes its segment's
// count in the same transaction; a count scan reads a segment's slots with a range scan whose
// upper bound is the next segment's first slot (present or not, so the next-key lock falls on
// a slot or on a later key) and then reads the count. Under serializable the count equals the
// rows the scan saw, and at the end every count equals its segment's rows; a phantom insert or
// delete between the scan and the count read breaks that. Under read committed neither holds
// (lost updates of a count are allowed there), so only the engine's own errors are checked.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/history_checker.h"
#include "tests/test_util.h"
#include "threads/baton.h"
#include "threads/sync.h"

namespace sm {
namespace {

using test::iso::Attempt;
using test::iso::History;
using test::iso::Level;
using test::iso::Outcome;
using test::iso::Version;

std::string Key(uint32_t key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%04u", key);
  return buf;
}

bool ParseKey(std::string_view text, uint32_t* key) {
  return text.size() == 5 && text[0] == 'k' &&
         std::sscanf(std::string(text).c_str(), "k%4u", key) == 1;
}

constexpr uint32_t kFibers = 16;
constexpr uint32_t kSegments = 4;
constexpr uint32_t kSlotsPerSegment = 8;

// Zone keys sort after every "k" key: "s<slot>" and the counts "c<segment>" (before "k").
std::string SlotKey(uint32_t slot) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "s%04u", slot);
  return buf;
}
std::string CountKey(uint32_t segment) { return "c" + std::to_string(segment); }

struct PlannedOp {
  enum Kind : uint8_t { kGet, kReadModifyWrite, kScan, kToggle, kCount } kind;
  uint32_t key;    // kToggle: a slot; kCount: a segment
  uint32_t count;  // kScan: keys in [key, key + count)
};

// One transaction as drawn from the seed; its retries run the same plan.
struct Plan {
  std::vector<PlannedOp> ops;
  bool abort = false;  // abort on purpose at the end
};

Plan DrawPlan(std::mt19937_64& rng, uint32_t keys) {
  Plan plan;
  const int ops = 1 + static_cast<int>(rng() % 5);
  for (int i = 0; i < ops; ++i) {
    const uint32_t key = static_cast<uint32_t>(rng() % keys);
    const uint32_t dice = static_cast<uint32_t>(rng() % 100);
    if (dice < 32) {
      plan.ops.push_back({PlannedOp::kGet, key, 1});
    } else if (dice < 72) {
      plan.ops.push_back({PlannedOp::kReadModifyWrite, key, 1});
    } else if (dice < 84) {
      plan.ops.push_back({PlannedOp::kScan, key, 2 + static_cast<uint32_t>(rng() % 5)});
    } else if (dice < 94) {
      const uint32_t slot = static_cast<uint32_t>(rng() % (kSegments * kSlotsPerSegment));
      plan.ops.push_back({PlannedOp::kToggle, slot, 1});
    } else {
      plan.ops.push_back({PlannedOp::kCount, static_cast<uint32_t>(rng() % kSegments), 1});
    }
  }
  plan.abort = rng() % 10 == 0;
  return plan;
}

struct Run {
  Level level = Level::kSerializable;
  uint32_t keys = 0;
  Database* db = nullptr;
  Table* table = nullptr;
  std::atomic<uint64_t> clock{0};  // ticks; a fetch_add is ordered with every lock hand-over
  std::atomic<uint64_t> failures{0};
  std::string first_failure;
  threads::SpinLock failure_lock;

  uint32_t value_padding_max = 0;  // rows of up to this many filler bytes: several leaves

  uint64_t Tick() { return clock.fetch_add(1) + 1; }
  // A row's filler length, a function of the write so that replays are alike.
  size_t Padding(uint64_t a, uint64_t b) const {
    if (value_padding_max == 0) return 0;
    return ((a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)) % value_padding_max;
  }
  void Fail(const std::string& what) {
    std::lock_guard<threads::SpinLock> guard(failure_lock);
    if (failures.fetch_add(1) == 0) first_failure = what;
  }
};

// Decodes a row into the version it holds; a failure is the engine returning a value nobody
// wrote.
bool ReadVersion(Run* run, uint32_t key, std::string_view value, Version* version) {
  Version prev;
  if (test::iso::DecodeVersionValue(value, version, &prev)) return true;
  run->Fail("key " + Key(key) + " holds an undecodable value '" + std::string(value) + "'");
  return false;
}

Status DoGet(Run* run, Transaction* txn, uint32_t key, Attempt* attempt, Version* seen) {
  std::string value;
  SM_TRY(run->table->Get(txn, Key(key), &value));
  if (!ReadVersion(run, key, value, seen)) return Status::Corruption("undecodable value");
  attempt->Read(key, *seen, run->Tick());
  return Status::OK();
}

Status DoReadModifyWrite(Run* run, Transaction* txn, uint32_t key, Attempt* attempt) {
  Version seen;
  SM_TRY(DoGet(run, txn, key, attempt, &seen));
  const Version mine{attempt->tag, attempt->writes + 1};
  SM_TRY(run->table->Update(
      txn, Key(key),
      test::iso::EncodeVersionValue(mine, seen, run->Padding(mine.writer, mine.index))));
  // The write lock is held from before Update returned until after the finish tick.
  const Version recorded = attempt->Write(key, seen, run->Tick());
  if (!(recorded == mine)) return Status::Corruption("recorder out of step");
  return Status::OK();
}

Status DoScan(Run* run, Transaction* txn, const PlannedOp& op, Attempt* attempt) {
  std::unique_ptr<Cursor> cursor;
  SM_TRY(
      run->table->NewCursor(txn, ScanOptions::Range(Key(op.key), Key(op.key + op.count)), &cursor));
  uint32_t rows = 0;
  Status bad;
  auto read = [&](std::string_view k, std::string_view value) {
    uint32_t key = 0;
    Version seen;
    if (!ParseKey(k, &key)) {
      bad = Status::Corruption("scan: bad key");
      return false;
    }
    if (!ReadVersion(run, key, value, &seen)) {
      bad = Status::Corruption("bad value");
      return false;
    }
    attempt->Read(key, seen, run->Tick());
    ++rows;
    return true;
  };
  // Half the scans read through NextBatch, a few rows at a time, the rest row by row.
  const bool batched = op.key % 2 == 1;
  while (cursor->Valid()) {
    if (!read(cursor->key(), cursor->value())) return bad;
    if (batched) {
      size_t visited = 0;
      SM_TRY(cursor->NextBatch(1 + op.count % 4, read, &visited));
      SM_TRY(bad);
      if (!cursor->Valid()) break;
    }
    SM_TRY(cursor->Next());
  }
  // No key is ever inserted or deleted: the range always holds the same keys.
  const uint32_t expected = std::min(op.count, run->keys - std::min(op.key, run->keys));
  if (rows != expected)
    run->Fail("scan from " + Key(op.key) + " saw " + std::to_string(rows) + " rows");
  return Status::OK();
}

Status ReadCount(Run* run, Transaction* txn, uint32_t segment, int64_t* count) {
  std::string value;
  SM_TRY(run->table->Get(txn, CountKey(segment), &value));
  *count = std::stoll(value);
  return Status::OK();
}

// Inserts the slot if absent, else deletes it, and moves its segment's count by one.
Status DoToggle(Run* run, Transaction* txn, uint32_t slot) {
  const bool serializable = run->level == Level::kSerializable;
  std::string value;
  Status s = run->table->Get(txn, SlotKey(slot), &value);
  if (!s.ok() && !s.IsNotFound()) return s;
  const bool present = s.ok();
  s = present ? run->table->Delete(txn, SlotKey(slot))
              : run->table->Insert(txn, SlotKey(slot),
                                   "slot" + std::string(run->Padding(slot, txn->id()), 's'));
  if (s.IsNotFound() || s.IsDuplicate()) {
    // Under read committed another transaction may have toggled it since the read.
    if (serializable) run->Fail(SlotKey(slot) + " changed under a read lock: " + s.ToString());
    return Status::OK();
  }
  SM_TRY(s);
  const uint32_t segment = slot / kSlotsPerSegment;
  int64_t count = 0;
  SM_TRY(ReadCount(run, txn, segment, &count));
  return run->table->Update(txn, CountKey(segment), std::to_string(count + (present ? -1 : 1)));
}

// Scans a segment's slots, then reads its count: equal under serializable.
Status DoCount(Run* run, Transaction* txn, uint32_t segment) {
  std::unique_ptr<Cursor> cursor;
  const uint32_t first = segment * kSlotsPerSegment;
  SM_TRY(run->table->NewCursor(
      txn, ScanOptions::Range(SlotKey(first), SlotKey(first + kSlotsPerSegment)), &cursor));
  int64_t rows = 0;
  // Odd segments count through NextBatch, whose rows must be the same as Next's.
  while (cursor->Valid()) {
    ++rows;
    if (segment % 2 == 1) {
      size_t visited = 0;
      SM_TRY(cursor->NextBatch(
          kSlotsPerSegment, [&](std::string_view, std::string_view) { return ++rows, true; },
          &visited));
      break;
    }
    SM_TRY(cursor->Next());
  }
  int64_t count = 0;
  SM_TRY(ReadCount(run, txn, segment, &count));
  if (run->level == Level::kSerializable && rows != count) {
    run->Fail("phantom: segment " + std::to_string(segment) + " scan saw " + std::to_string(rows) +
              " slots, its count says " + std::to_string(count));
  }
  return Status::OK();
}

// *started: a tick taken before the last operation began.
Status RunOps(Run* run, Transaction* txn, const Plan& plan, Attempt* attempt, uint64_t* started) {
  for (const PlannedOp& op : plan.ops) {
    *started = run->Tick();
    Version seen;
    switch (op.kind) {
      case PlannedOp::kGet:
        SM_TRY(DoGet(run, txn, op.key, attempt, &seen));
        break;
      case PlannedOp::kReadModifyWrite:
        SM_TRY(DoReadModifyWrite(run, txn, op.key, attempt));
        break;
      case PlannedOp::kScan:
        SM_TRY(DoScan(run, txn, op, attempt));
        break;
      case PlannedOp::kToggle:
        SM_TRY(DoToggle(run, txn, op.key));
        break;
      case PlannedOp::kCount:
        SM_TRY(DoCount(run, txn, op.key));
        break;
    }
  }
  return Status::OK();
}

// One attempt of `plan`, recorded into *attempt. Returns true when the plan is done (committed
// or aborted on purpose), false when the attempt failed in a retryable way.
bool RunAttempt(Run* run, const Plan& plan, Attempt* attempt) {
  std::unique_ptr<Transaction> txn;
  const Isolation isolation =
      run->level == Level::kSerializable ? Isolation::kSerializable : Isolation::kReadCommitted;
  if (!run->db->Begin(&txn, isolation).ok()) return run->Fail("begin"), true;
  uint64_t last_op_started = 0;
  Status s = RunOps(run, txn.get(), plan, attempt, &last_op_started);
  // Before the locks go: before Commit or Abort, or, after a retryable error, before the
  // operation that met it, since the engine rolls the transaction back inside that call.
  attempt->finished_at = s.IsRetryable() ? last_op_started : run->Tick();
  if (s.ok() && !plan.abort) {
    s = txn->Commit();
    if (s.ok()) {
      attempt->outcome = Outcome::kCommitted;
      return true;
    }
    // A failed commit's outcome is unknown to the history, so it cannot be checked.
    run->Fail("commit: " + s.ToString());
    return true;
  }
  if (txn->active() && !txn->Abort().ok()) run->Fail("abort after " + s.ToString());
  if (s.ok()) return true;  // aborted on purpose
  if (!s.IsRetryable()) run->Fail("transaction: " + s.ToString());
  return !s.IsRetryable();
}

struct FiberLog {
  std::vector<Attempt> attempts;
  uint64_t committed = 0, aborted = 0, retried = 0;
  uint64_t longest_retry_chain = 0;  // failed attempts of one plan in a row
};

// Retries are immediate at first, for the most contention. After kRetriesBeforeBackoff failures
// in a row the fiber sleeps a random while, doubling up to 64 x kBackoffUnit: without it a
// livelock shows up now and then under read committed: an old transaction reading an absent
// slot waits for S on the next key, which a younger transaction has just inserted; that one,
// the youngest of the cycle, is the deadlock victim, and its rollback moves the next key, so
// when the old transaction is granted and restarts its lookup the next key is the fresh
// uncommitted insert of another fiber's immediate retry, and so on, for up to hundreds of
// thousands of deadlocks.
constexpr uint64_t kRetriesBeforeBackoff = 3;
constexpr std::chrono::microseconds kBackoffUnit{20};

void BackOff(uint64_t failures_in_a_row, std::mt19937_64& rng) {
  if (failures_in_a_row < kRetriesBeforeBackoff) return;
  const uint64_t doublings = std::min<uint64_t>(failures_in_a_row - kRetriesBeforeBackoff, 6);
  const uint64_t units = 1 + rng() % (uint64_t{1} << doublings);
  threads::SleepFor(kBackoffUnit * units);
}

// A fiber: `transactions` plans, each run until it commits or aborts on purpose.
void RunFiber(Run* run, uint32_t fiber, uint64_t seed, uint64_t transactions, FiberLog* log) {
  std::mt19937_64 rng(seed * 1000003 + fiber);
  std::mt19937_64 backoff_rng(seed ^ fiber);  // apart, so that plans replay from the seed
  uint64_t counter = 0;
  for (uint64_t t = 0; t < transactions && run->failures.load() == 0; ++t) {
    const Plan plan = DrawPlan(rng, run->keys);
    for (uint64_t failures_in_a_row = 0;; ++failures_in_a_row) {
      Attempt attempt;
      attempt.tag = uint64_t{fiber + 1} * 1000000000ull + ++counter;  // unique per attempt
      const bool done = RunAttempt(run, plan, &attempt);
      log->committed += attempt.committed();
      log->aborted += done && !attempt.committed();
      log->retried += !done;
      log->attempts.push_back(std::move(attempt));
      if (done) {
        log->longest_retry_chain = std::max(log->longest_retry_chain, failures_in_a_row);
        break;
      }
      BackOff(failures_in_a_row + 1, backoff_rng);
    }
  }
}

void LoadKeys(Database* db, Table* table, uint32_t keys) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (uint32_t k = 0; k < keys; ++k) {
    const std::string initial =
        test::iso::EncodeVersionValue(test::iso::kInitialVersion, test::iso::kInitialVersion);
    REQUIRE(table->Insert(txn.get(), Key(k), initial).ok());
  }
  for (uint32_t segment = 0; segment < kSegments; ++segment) {
    REQUIRE(table->Insert(txn.get(), CountKey(segment), "0").ok());
  }
  REQUIRE(txn->Commit().ok());
}

// After a serializable run every segment's count equals the slots present in it.
void CheckCounts(Database* db, Table* table) {
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (uint32_t segment = 0; segment < kSegments; ++segment) {
    int64_t rows = 0;
    for (uint32_t i = 0; i < kSlotsPerSegment; ++i) {
      std::string value;
      const Status s = table->Get(txn.get(), SlotKey(segment * kSlotsPerSegment + i), &value);
      REQUIRE((s.ok() || s.IsNotFound()));
      rows += s.ok();
    }
    std::string count;
    REQUIRE(table->Get(txn.get(), CountKey(segment), &count).ok());
    INFO("segment " << segment);
    CHECK(std::stoll(count) == rows);
  }
  REQUIRE(txn->Commit().ok());
}

std::vector<Version> ReadFinalState(Database* db, Table* table, uint32_t keys) {
  std::vector<Version> state(keys);
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (uint32_t k = 0; k < keys; ++k) {
    std::string value;
    REQUIRE(table->Get(txn.get(), Key(k), &value).ok());
    Version prev;
    INFO(Key(k) << " = " << value);
    REQUIRE(test::iso::DecodeVersionValue(value, &state[k], &prev));
  }
  REQUIRE(txn->Commit().ok());
  return state;
}

// What the fibers did, merged.
struct Totals {
  uint64_t committed = 0, aborted = 0, retried = 0, longest_retry_chain = 0, deadlocks = 0;
  double run_seconds = 0;
};

struct Config {
  Level level = Level::kSerializable;
  bool steps = false;  // run every operation in STEPS teams (another interleaving of fibers)
  uint64_t transactions_per_fiber = 0;
  uint64_t min_committed = 0;
};

const char* LevelName(Level level) {
  return level == Level::kSerializable ? "serializable" : "read committed";
}

std::unique_ptr<Database> OpenDatabase(const Config& config, io::FileSystem* fs) {
  Options options;
  options.path = "/db";
  options.file_system = fs;
  options.buffer_pool_bytes = 4u << 20;
  // Durability is not under test here and the history is checked in memory: no commit waits
  // for a log flush, so more transactions interleave per second.
  options.commit_mode = CommitMode::kNone;
  options.checkpoint_interval = std::chrono::milliseconds(200);  // keeps the log short
  options.workers = 2;
  options.lock_wait_timeout = std::chrono::milliseconds(5000);
  options.steps = config.steps;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  return db;
}

// Runs kFibers fibers, alternating between the two workers, and merges their logs into
// history->attempts.
Totals RunFibers(Run* run, const Config& config, uint64_t seed, History* history) {
  const DatabaseStats before = run->db->stats();
  const auto start = std::chrono::steady_clock::now();
  std::vector<FiberLog> logs(kFibers);
  WaitGroup done;
  for (uint32_t f = 0; f < kFibers; ++f) {
    REQUIRE(run->db->Spawn(
        [&, f] { RunFiber(run, f, seed, config.transactions_per_fiber, &logs[f]); },
        static_cast<int>(f % 2), &done).ok());
  }
  done.Wait();
  Totals totals;
  totals.run_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  totals.deadlocks = run->db->stats().deadlocks - before.deadlocks;
  for (FiberLog& log : logs) {
    totals.committed += log.committed;
    totals.aborted += log.aborted;
    totals.retried += log.retried;
    totals.longest_retry_chain = std::max(totals.longest_retry_chain, log.longest_retry_chain);
    for (Attempt& a : log.attempts) history->attempts.push_back(std::move(a));
  }
  return totals;
}

void PrintSummary(const Config& config, uint32_t keys, const Totals& totals,
                  const test::iso::CheckResult& result, double check_seconds) {
  auto u = [](uint64_t n) { return static_cast<unsigned long long>(n); };
  std::printf(
      "isolation (%s, STEPS %s, %u keys, %u fibers): %llu committed, %llu aborted on purpose, "
      "%llu retried (at most %llu in a row), %llu deadlocks; %llu reads, %llu writes; edges ww "
      "%llu wr %llu rw %llu; run %.2f s, check %.2f s; %s: %s\n",
      LevelName(config.level), config.steps ? "on" : "off", keys, kFibers, u(totals.committed),
      u(totals.aborted), u(totals.retried), u(totals.longest_retry_chain), u(totals.deadlocks),
      u(result.reads), u(result.writes), u(result.ww_edges), u(result.wr_edges), u(result.rw_edges),
      totals.run_seconds, check_seconds, LevelName(config.level), result.ok() ? "yes" : "NO");
  std::fflush(stdout);
}

// The run exercised what the test claims to check.
void RequireCoverage(const Config& config, const Totals& totals,
                     const test::iso::CheckResult& result) {
  REQUIRE(result.committed == totals.committed);
  REQUIRE(totals.committed == kFibers * config.transactions_per_fiber - totals.aborted);
  REQUIRE(totals.committed >= config.min_committed);
  REQUIRE(result.timed_writes == result.writes);  // every write entered the dirty-write check
  REQUIRE(result.writes > 0);
  REQUIRE(result.wr_edges > 0);
  REQUIRE(result.ww_edges > 0);
  if (config.level == Level::kSerializable) REQUIRE(result.rw_edges > 0);
  REQUIRE(totals.deadlocks > 0);  // the retry path ran
  REQUIRE(totals.retried > 0);
}

// A read-committed history is not serializable: checked as such it must show anomalies (lost
// updates and cycles with rw edges), or the serializable verdicts would mean little.
void CheckReadCommittedIsNotSerializable(const History& history) {
  const test::iso::CheckResult strict = test::iso::Check(history, Level::kSerializable);
  const auto cycle = std::find_if(strict.anomalies.begin(), strict.anomalies.end(),
                                  [](const std::string& a) { return a.find("cycle") != a.npos; });
  std::printf("  the same read-committed history checked as serializable: %s; e.g. %s\n",
              strict.Counts().c_str(),
              cycle != strict.anomalies.end() ? cycle->c_str()
              : strict.anomalies.empty()      ? "none"
                                              : strict.anomalies.front().c_str());
  CHECK_FALSE(strict.ok());
}

void RunIsolation(const Config& config, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Run run;
  run.level = config.level;
  run.keys = 8u << (rng() % 4);  // 8..64 keys: small enough for conflicts and deadlocks
  // Rows of up to ~1.5 KB: the larger key spaces and the slot zone span several leaves, so
  // updates that grow rows and inserts also split leaves, and deletes can empty them.
  run.value_padding_max = 1500;
  INFO(LevelName(config.level) << ", STEPS " << (config.steps ? "on" : "off") << ", " << run.keys
                               << " keys, seed " << seed);
  io::FaultInjectionFileSystem fs(seed);
  std::unique_ptr<Database> db = OpenDatabase(config, &fs);
  REQUIRE(db->CreateTable("iso", &run.table).ok());
  run.db = db.get();
  LoadKeys(db.get(), run.table, run.keys);

  History history;
  const Totals totals = RunFibers(&run, config, seed, &history);
  INFO(run.first_failure);
  REQUIRE(run.failures.load() == 0);
  history.final_state = ReadFinalState(db.get(), run.table, run.keys);
  if (config.level == Level::kSerializable) CheckCounts(db.get(), run.table);
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());

  const auto check_start = std::chrono::steady_clock::now();
  const test::iso::CheckResult result = test::iso::Check(history, config.level);
  const double check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - check_start).count();
  PrintSummary(config, run.keys, totals, result, check_seconds);
  INFO(result.Report());
  REQUIRE(result.ok());
  RequireCoverage(config, totals, result);
  if (config.level == Level::kReadCommitted) CheckReadCommittedIsNotSerializable(history);
}

// 32,000 transactions per level and STEPS setting in an optimized build, 3,200 under the
// sanitizers.
TEST_CASE("concurrent transactions produce serializable or read-committed histories",
          "[random][isolation]") {
  Config config;
  config.level = GENERATE(Level::kSerializable, Level::kReadCommitted);
  config.steps = GENERATE(false, true);
  config.transactions_per_fiber = test::kSanitized ? 200 : 2000;
  config.min_committed = config.transactions_per_fiber * kFibers * 3 / 4;
  RunIsolation(config, test::TestSeed("isolation"));
}

// The slow tier (tools/run test --slow): 160,000 transactions per level, of which at least
// 130,000 commit (about 10 % abort on purpose).
TEST_CASE("isolation over more than 100,000 transactions", "[random][isolation][.slow]") {
  Config config;
  config.level = GENERATE(Level::kSerializable, Level::kReadCommitted);
  config.transactions_per_fiber = 10000;
  config.min_committed = 130000;
  RunIsolation(config, test::TestSeed("isolation slow"));
}

}  // namespace
}  // namespace sm
