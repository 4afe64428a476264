// The I/O-fault matrix at the level of the whole database: a transactional workload on several
// fibers over the fault-injecting file system, with one injected fault per run - a failed write,
// a short (torn) write or a failed sync - on the data volume, the log segments or the log's
// control file, at a seeded trigger point spread over the run's I/O. Every run then crashes
// (unsynced writes dropped or torn), reopens without faults and checks:
//   1. every API call returned OK or an error; nothing crashed or hung (the workload is bounded
//      and a watchdog aborts a run that does not finish);
//   2. after a failed log write or sync, or a failed volume sync, no commit that started later
//      is acknowledged, and the database refuses commits from then on (the sticky fatal state;
//      a failed fsync is never retried as if it could succeed);
//   3. recovery succeeds, every acknowledged commit is there with its last acknowledged value,
//      no aborted or failed transaction left anything, and a commit that returned an error is
//      all or nothing (every value names its transaction, and each fiber owns its keys, so a
//      fiber's keys must equal its acknowledged image or that image plus the uncertain commit);
//   4. Database::Verify passes.
// Also here: Close under each fault (it must report the failure, never a clean close), faults
// while the database is being created (the meta file), read faults (an error, never wrong
// data), and regressions for the failed state (a failed rollback, a failed volume sync, pages
// with a reverted change after the log failed).
//
// Replay: the matrix prints its seed (SM_SEED replays the plan; the fibers on two workers make
// the interleaving, and so the exact I/O counts, vary). A failing run names itself as
// SM_FAULT_RUN="..." for the hidden case "I/O fault matrix, one run"; SM_FAULT_VERBOSE=1 prints
// every run's plan and outcome.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/api/io_fault_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

using test::CountingFileSystem;
using test::FileTarget;
using test::TableImage;

constexpr io::FaultOp kWriteFaultKinds[] = {io::FaultOp::kWrite, io::FaultOp::kShortWrite,
                                            io::FaultOp::kSync};

const char* KindName(io::FaultOp op) {
  switch (op) {
    case io::FaultOp::kRead:
      return "read";
    case io::FaultOp::kWrite:
      return "write";
    case io::FaultOp::kShortWrite:
      return "short write";
    case io::FaultOp::kSync:
      return "sync";
  }
  return "?";
}

Options FaultOptions(io::FileSystem* fs) {
  Options o = test::SmallDbOptions(fs);
  o.buffer_pool_bytes = 128u << 10;  // 16 frames: pages are evicted and written back
  o.background_write_interval = std::chrono::milliseconds(2);
  o.log_segment_bytes = 128u << 10;  // segments roll over and are truncated by checkpoints
  o.log_buffer_bytes = 64u << 10;
  o.checkpoint_interval = std::chrono::milliseconds(0);  // the fibers ask for checkpoints
  o.workers = 2;
  o.lock_wait_timeout = std::chrono::milliseconds(2000);
  return o;
}

// --- The workload ---------------------------------------------------------------------------

constexpr int kFibers = 4;
constexpr int kKeysPerFiber = 400;

std::string FiberKey(int fiber, int i) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "f%d/k%04d", fiber, i);
  return buf;
}

// A value naming its transaction (fiber, sequence), padded to a seeded length so that pages
// fill and split.
std::string TxnValue(int fiber, int txn_seq, std::mt19937_64& rng) {
  std::string v = "f" + std::to_string(fiber) + "t" + std::to_string(txn_seq) + "#";
  v.append(8 + rng() % 400, static_cast<char>('a' + txn_seq % 26));
  return v;
}

// What one fiber did, for the main thread's checks (REQUIRE is not used off the test thread).
struct FiberResult {
  TableImage acked;                  // its keys as of its last acknowledged commit
  std::optional<TableImage> uncertain;  // the image had the failed commit taken effect
  uint64_t commits = 0, aborts = 0, errors = 0;
  uint64_t acked_after_fault = 0;  // commits that began after a log failure or volume sync
                                   // failure (CountingFileSystem::sticky_fault_seen)
  std::string violation;           // a wrong answer seen by the fiber (empty: none)
};

struct Workload {
  int txns_per_fiber = 12;
  uint64_t seed = 0;
};

// One transaction's operations on the fiber's own keys; false if an operation failed (the
// caller aborts). Reads check the transaction's own view.
bool RunOps(Table* table, Transaction* txn, int fiber, int txn_seq, std::mt19937_64& rng,
            TableImage* draft, FiberResult* result) {
  int ops = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < ops; ++i) {
    std::string key = FiberKey(fiber, static_cast<int>(rng() % kKeysPerFiber));
    bool present = draft->count(key) != 0;
    Status s;
    switch (rng() % 4) {
      case 0: {  // read back what this transaction sees
        std::string value;
        s = table->Get(txn, key, &value);
        if (s.ok() && (!present || value != (*draft)[key])) {
          result->violation = "Get(" + key + ") returned a value the transaction did not write";
        } else if (s.IsNotFound() && present) {
          result->violation = "Get(" + key + ") lost the transaction's own row";
        }
        if (s.IsNotFound()) s = Status::OK();
        break;
      }
      case 1:
        if (present) {
          s = table->Delete(txn, key);
          if (s.ok()) draft->erase(key);
        } else {
          std::string value = TxnValue(fiber, txn_seq, rng);
          s = table->Insert(txn, key, value);
          if (s.ok()) (*draft)[key] = value;
        }
        break;
      default: {
        std::string value = TxnValue(fiber, txn_seq, rng);
        s = present ? table->Update(txn, key, value) : table->Insert(txn, key, value);
        if (s.ok()) (*draft)[key] = value;
        break;
      }
    }
    if (!s.ok()) {
      if ((s.IsDuplicate() && !present) || (s.IsNotFound() && present)) {
        result->violation = "an operation on " + key + " disagreed with the model: " +
                            s.ToString();
      }
      ++result->errors;
      return false;
    }
  }
  return true;
}

// Transactions on the fiber's keys until txns_per_fiber are done or a commit fails (its
// outcome is then unknown, so nothing after it could be checked).
void RunFiber(Database* db, Table* table, const CountingFileSystem* counting,
              const Workload& w, int fiber, FiberResult* result) {
  std::mt19937_64 rng(w.seed * 131 + fiber);
  for (int seq = 1; seq <= w.txns_per_fiber; ++seq) {
    std::unique_ptr<Transaction> txn;
    if (!db->Begin(&txn).ok()) {  // refused: the database is in its failed state
      ++result->errors;
      return;
    }
    TableImage draft = result->acked;
    bool ops_ok = RunOps(table, txn.get(), fiber, seq, rng, &draft, result);
    if (!ops_ok || rng() % 8 == 0) {
      // Its changes must vanish whether or not the rollback itself succeeds.
      if (!txn->Abort().ok()) ++result->errors;
      ++result->aborts;
      continue;
    }
    bool after_fault = counting->sticky_fault_seen();
    Status s = txn->Commit();
    if (!s.ok()) {
      ++result->errors;
      result->uncertain = draft;
      return;
    }
    ++result->commits;
    if (after_fault) ++result->acked_after_fault;
    result->acked = std::move(draft);
    if (rng() % 10 == 0 && !db->Checkpoint().ok()) ++result->errors;
  }
}

// Runs the fibers and waits for them; a run that does not finish in a minute is a hang, which
// no later check could report (the fibers would block the database's destruction).
void RunWorkload(Database* db, Table* table, const CountingFileSystem* counting,
                 const Workload& w, std::vector<FiberResult>* results) {
  results->assign(kFibers, FiberResult{});
  // Shared with the fibers: the last one may still be inside its decrement when this thread
  // sees zero and returns. release/acquire: the fibers' results are complete when it does.
  auto running = std::make_shared<std::atomic<int>>(kFibers);
  for (int f = 0; f < kFibers; ++f) {
    REQUIRE(db->Spawn(
                  [db, table, counting, &w, results, running, f] {
                    RunFiber(db, table, counting, w, f, &(*results)[f]);
                    running->fetch_sub(1, std::memory_order_release);
                  },
                  f % 2)
                .ok());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (running->load(std::memory_order_acquire) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "I/O fault workload hung (seed %llu)\n",
                   static_cast<unsigned long long>(w.seed));
      std::abort();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// --- One run of the matrix ------------------------------------------------------------------

struct Plan {
  FileTarget target = FileTarget::kLog;
  io::FaultOp kind = io::FaultOp::kWrite;
  uint64_t nth = 0;  // 0: no fault (calibration)
  io::CrashMode crash = io::CrashMode::kDropUnsynced;
};

enum class Outcome : uint8_t { kNotReached, kAbsorbed, kErrorReturned, kFatal };

struct RunResult {
  Outcome outcome = Outcome::kNotReached;
  uint64_t writes = 0, syncs = 0;  // of the target, for calibration
  io::FaultCounters faults;
};

// Whether a commit that began after the failure must have been refused: the log's failure
// stops every later commit (none can become durable), while a failed volume sync latches the
// failed state a moment after the sync returns, so a commit in between may still be
// acknowledged - durably, through the log - and only the probe after the workload checks it.
bool RefusesLaterCommits(const Plan& plan) { return plan.target == FileTarget::kLog; }

// A commit by the test thread after the workload: refused in the failed state.
Status ProbeCommit(Database* db, TableImage* probe) {
  Table* table = nullptr;
  SM_TRY(db->OpenTable("t", &table));
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn));
  SM_TRY(table->Upsert(txn.get(), "probe", "probe-value"));
  SM_TRY(txn->Commit());
  (*probe)["probe"] = "probe-value";
  return Status::OK();
}

void CheckRecovered(io::FaultInjectionFileSystem* fs, const std::vector<FiberResult>& results,
                    const TableImage& probe) {
  std::unique_ptr<Database> db;
  OpenReport report;
  Status s = Database::Open(FaultOptions(fs), &db, &report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  INFO(report.ToString());
  Status verified = db->Verify();
  INFO(verified.ToString());
  REQUIRE(verified.ok());
  TableImage found;
  REQUIRE(test::ReadTable(db.get(), "t", &found).ok());
  for (int f = 0; f < kFibers; ++f) {
    const std::string prefix = "f" + std::to_string(f) + "/";
    TableImage mine;
    for (const auto& [key, value] : found) {
      if (key.compare(0, prefix.size(), prefix) == 0) mine[key] = value;
    }
    const FiberResult& r = results[f];
    bool as_acked = mine == r.acked;
    bool as_uncertain = r.uncertain.has_value() && mine == *r.uncertain;
    INFO("fiber " << f << ": " << test::DescribeDifference(mine, r.acked));
    REQUIRE((as_acked || as_uncertain));
  }
  TableImage probe_found;
  if (found.count("probe") != 0) probe_found["probe"] = found["probe"];
  if (!probe.empty()) REQUIRE(probe_found == probe);
  REQUIRE(db->Close().ok());
}

RunResult RunOnce(const Plan& plan, const Workload& w) {
  INFO("target " << test::TargetName(plan.target) << ", " << KindName(plan.kind) << " fault #"
                 << plan.nth << ", seed " << w.seed << "; replay: SM_FAULT_RUN=\""
                 << static_cast<int>(plan.target) << " " << static_cast<int>(plan.kind) << " "
                 << plan.nth << " " << w.seed << " " << static_cast<int>(plan.crash) << "\"");
  io::FaultInjectionFileSystem fault_fs(w.seed);
  CountingFileSystem fs(&fault_fs);
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(FaultOptions(&fs), &db).ok());
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  REQUIRE(db->Checkpoint().ok());

  fault_fs.SetFaultFilter(test::TargetFilter(plan.target));
  if (plan.nth != 0) fault_fs.FailNth(plan.kind, plan.nth);
  uint64_t writes_before = fs.counts(plan.target).writes.load();
  uint64_t syncs_before = fs.counts(plan.target).syncs.load();
  std::vector<FiberResult> results;
  RunWorkload(db.get(), table, &fs, w, &results);

  RunResult out;
  out.writes = fs.counts(plan.target).writes.load() - writes_before;
  out.syncs = fs.counts(plan.target).syncs.load() - syncs_before;
  out.faults = fault_fs.counters();
  const bool reached =
      out.faults.write_faults + out.faults.short_writes + out.faults.sync_faults > 0;
  const bool sticky = fs.sticky_fault_seen();
  fault_fs.ClearFaults();
  uint64_t errors = 0;
  for (const FiberResult& r : results) {
    INFO(r.violation);
    REQUIRE(r.violation.empty());
    errors += r.errors;
    if (sticky && RefusesLaterCommits(plan)) REQUIRE(r.acked_after_fault == 0);
  }
  TableImage probe;
  Status probed = ProbeCommit(db.get(), &probe);
  probed.PermitUnchecked();
  if (sticky) {
    INFO("a commit after the fault: " << probed.ToString());
    REQUIRE_FALSE(probed.ok());
    // Sticky: a second attempt is refused as well, never retried into success.
    TableImage again;
    REQUIRE_FALSE(ProbeCommit(db.get(), &again).ok());
  }
  if (!probed.ok()) {
    out.outcome = Outcome::kFatal;
  } else if (errors > 0) {
    out.outcome = Outcome::kErrorReturned;
  } else {
    out.outcome = reached ? Outcome::kAbsorbed : Outcome::kNotReached;
  }

  static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
  db.reset();
  fault_fs.SimulateCrash(plan.crash);
  CheckRecovered(&fault_fs, results, probe);
  return out;
}

struct MatrixSummary {
  uint64_t runs = 0, write_faults = 0, short_writes = 0, sync_faults = 0;
  uint64_t outcomes[4] = {};  // by Outcome
  uint64_t recovered = 0;

  void Add(const RunResult& r) {
    ++runs;
    write_faults += r.faults.write_faults;
    short_writes += r.faults.short_writes;
    sync_faults += r.faults.sync_faults;
    ++outcomes[static_cast<int>(r.outcome)];
    ++recovered;  // RunOnce returns only after recovery was checked
  }
  void Print(const char* name) const {
    std::printf(
        "%s: %llu runs; faults injected: %llu write, %llu short write, %llu sync; outcomes: "
        "%llu error returned, %llu fatal state, %llu absorbed (page kept dirty and written "
        "again), %llu not reached; %llu recovered OK\n",
        name, static_cast<unsigned long long>(runs),
        static_cast<unsigned long long>(write_faults),
        static_cast<unsigned long long>(short_writes),
        static_cast<unsigned long long>(sync_faults),
        static_cast<unsigned long long>(outcomes[static_cast<int>(Outcome::kErrorReturned)]),
        static_cast<unsigned long long>(outcomes[static_cast<int>(Outcome::kFatal)]),
        static_cast<unsigned long long>(outcomes[static_cast<int>(Outcome::kAbsorbed)]),
        static_cast<unsigned long long>(outcomes[static_cast<int>(Outcome::kNotReached)]),
        static_cast<unsigned long long>(recovered));
    std::fflush(stdout);
  }
};

// For every target and fault kind: one calibration run without faults counts the target's
// writes and syncs, then `points` runs place the fault at seeded trigger points spread over that
// range (one per equal slice), alternating dropped and torn unsynced writes at the crash.
void RunMatrix(const char* name, int points, int txns_per_fiber, uint64_t seed) {
  std::mt19937_64 rng(seed);
  MatrixSummary summary;
  for (FileTarget target : test::kFileTargets) {
    Workload w{txns_per_fiber, rng()};
    RunResult calibration = RunOnce(Plan{target, io::FaultOp::kWrite, 0}, w);
    for (io::FaultOp kind : kWriteFaultKinds) {
      uint64_t range = kind == io::FaultOp::kSync ? calibration.syncs : calibration.writes;
      range = std::max<uint64_t>(range, 1);
      for (int p = 0; p < points; ++p) {
        Plan plan;
        plan.target = target;
        plan.kind = kind;
        uint64_t slice_lo = range * p / points, slice_hi = range * (p + 1) / points;
        plan.nth = 1 + slice_lo + rng() % std::max<uint64_t>(slice_hi - slice_lo, 1);
        plan.crash = p % 2 == 0 ? io::CrashMode::kDropUnsynced : io::CrashMode::kTearUnsynced;
        RunResult r = RunOnce(plan, Workload{txns_per_fiber, rng()});
        summary.Add(r);
        if (std::getenv("SM_FAULT_VERBOSE") != nullptr) {
          std::printf("  %s %s #%llu of ~%llu: outcome %d\n", test::TargetName(target),
                      KindName(kind), static_cast<unsigned long long>(plan.nth),
                      static_cast<unsigned long long>(range), static_cast<int>(r.outcome));
        }
      }
    }
  }
  summary.Print(name);
  // The plan must reach the engine in most runs, or the matrix tests little.
  CHECK(summary.write_faults + summary.short_writes + summary.sync_faults > summary.runs / 2);
  CHECK(summary.outcomes[static_cast<int>(Outcome::kFatal)] > 0);
}

// Replays one run of the matrix: SM_FAULT_RUN="<target 0-2> <kind 1-3> <nth> <workload seed>
// <crash 1 drop, 2 tear>" (the numbers of FileTarget, io::FaultOp and io::CrashMode).
TEST_CASE("I/O fault matrix, one run", "[crash][api][.]") {
  const char* spec = std::getenv("SM_FAULT_RUN");
  if (spec == nullptr) return;
  unsigned target = 0, kind = 0, crash = 0;
  unsigned long long nth = 0, seed = 0;
  REQUIRE(std::sscanf(spec, "%u %u %llu %llu %u", &target, &kind, &nth, &seed, &crash) == 5);
  Plan plan{static_cast<FileTarget>(target), static_cast<io::FaultOp>(kind), nth,
            static_cast<io::CrashMode>(crash)};
  RunResult r = RunOnce(plan, Workload{100, seed});
  std::printf("outcome %d\n", static_cast<int>(r.outcome));
}

TEST_CASE("I/O fault matrix: write, short write and sync failures on volume, log and control "
          "file",
          "[crash][random][api]") {
  RunMatrix("I/O fault matrix", test::kSanitized ? 3 : 12, test::kSanitized ? 25 : 100,
            test::TestSeed("io fault matrix"));
}

TEST_CASE("I/O fault matrix, a larger sweep", "[crash][random][api][.slow]") {
  RunMatrix("I/O fault matrix (slow)", 60, 300, test::TestSeed("io fault matrix slow"));
}

// --- Close under a fault -------------------------------------------------------------------

// Loads rows and leaves pages dirty (no background writes), so that Close has pages to write,
// a checkpoint to take and the log's control file to update.
void LoadDirty(Database* db, int rows, TableImage* acked) {
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (int i = 0; i < rows; ++i) {
    std::string key = test::KeyOf(i), value = "close-" + std::to_string(i) + std::string(100, 'c');
    REQUIRE(table->Insert(txn.get(), key, value).ok());
    (*acked)[key] = value;
  }
  REQUIRE(txn->Commit().ok());
}

TEST_CASE("Close under a write or sync fault reports it and never claims a clean close",
          "[crash][api]") {
  const FileTarget target =
      GENERATE(FileTarget::kVolume, FileTarget::kLog, FileTarget::kControl);
  const io::FaultOp kind =
      GENERATE(io::FaultOp::kWrite, io::FaultOp::kShortWrite, io::FaultOp::kSync);
  INFO("target " << test::TargetName(target) << ", " << KindName(kind));
  io::FaultInjectionFileSystem fs(7);
  Options options = FaultOptions(&fs);
  options.buffer_pool_bytes = 4u << 20;  // everything stays resident and dirty until Close
  options.background_write_interval = std::chrono::milliseconds(0);
  // No next log segment is made ahead during the test (that starts at half a segment): a failed
  // sync of a segment being made, which holds no record yet, is no failure of Close - the
  // flusher makes the segment again when it needs it - and the fault must hit Close's own I/O.
  options.log_segment_bytes = 4u << 20;
  TableImage acked;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  LoadDirty(db.get(), 300, &acked);

  fs.SetFaultFilter(test::TargetFilter(target));
  fs.FailNth(kind, 1);
  Status closed = db->Close();
  INFO(closed.ToString());
  REQUIRE(fs.counters().write_faults + fs.counters().short_writes + fs.counters().sync_faults ==
          1);
  REQUIRE_FALSE(closed.ok());
  REQUIRE(db->Close().IsClosed());  // closed either way: the handles are released
  fs.ClearFaults();
  db.reset();
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);

  db = test::RequireReopensTo(options, acked);
  REQUIRE(db->Close().ok());
}

// --- Faults while a database is created -------------------------------------------------------

// Creation writes the volume, the log's first control block and segment, a checkpoint, and
// last the meta file (sm/api/catalog.cc); a directory without the meta file is an unfinished
// creation that the next Open starts over.
TEST_CASE("a fault while the database is created fails Open, and the next Open creates it",
          "[crash][api]") {
  const char* filter = GENERATE("/sm.meta", "/data.sm", "/log/log.0", "/log/log.control");
  const io::FaultOp kind =
      GENERATE(io::FaultOp::kWrite, io::FaultOp::kShortWrite, io::FaultOp::kSync);
  INFO(filter << ", " << KindName(kind));
  io::FaultInjectionFileSystem fs(8);
  fs.SetFaultFilter(filter);
  fs.FailNth(kind, 1);
  std::unique_ptr<Database> db;
  Status s = Database::Open(FaultOptions(&fs), &db);
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  REQUIRE(db == nullptr);
  fs.ClearFaults();
  fs.SimulateCrash(io::CrashMode::kTearUnsynced);

  OpenReport report;
  s = Database::Open(FaultOptions(&fs), &db, &report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(report.created);
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

// --- Read faults ------------------------------------------------------------------------------

TEST_CASE("read faults return errors, never wrong data", "[crash][random][api]") {
  uint64_t seed = test::TestSeed("read faults");
  std::mt19937_64 rng(seed);
  io::FaultInjectionFileSystem fs(seed);
  Options options = FaultOptions(&fs);
  options.workers = 1;
  TableImage model;
  {
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(options, &db).ok());
    LoadDirty(db.get(), 2000, &model);  // ~40 leaves: most are not resident in 16 frames
    REQUIRE(db->Close().ok());
  }
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->OpenTable("t", &table).ok());
  fs.SetFaultFilter("/data.sm");
  uint64_t errors = 0, reads_ok = 0;
  const int kRounds = test::kSanitized ? 100 : 400;
  for (int round = 0; round < kRounds; ++round) {
    fs.FailNth(io::FaultOp::kRead, 1 + rng() % 4);
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    if (rng() % 4 == 0) {  // a range scan: every row it returns is right, in order
      int from = static_cast<int>(rng() % 2000);
      std::unique_ptr<Cursor> cursor;
      Status s = table->NewCursor(
          txn.get(), ScanOptions::Range(test::KeyOf(from), test::KeyOf(from + 200)), &cursor);
      auto expected = model.lower_bound(test::KeyOf(from));
      while (s.ok() && cursor->Valid()) {
        REQUIRE(expected != model.end());
        REQUIRE(cursor->key() == expected->first);
        REQUIRE(cursor->value() == expected->second);
        ++expected;
        s = cursor->Next();
      }
      if (s.ok()) {
        ++reads_ok;
      } else {
        INFO(s.ToString());
        REQUIRE(s.IsIOError());
        ++errors;
      }
    } else {
      std::string key = test::KeyOf(static_cast<int>(rng() % 2000)), value;
      Status s = table->Get(txn.get(), key, &value);
      if (s.ok()) {
        REQUIRE(value == model[key]);
        ++reads_ok;
      } else {
        INFO(s.ToString());
        REQUIRE(s.IsIOError());  // never NotFound for a row that is there
        ++errors;
      }
    }
    REQUIRE(txn->Commit().ok());  // read-only: a read error does not poison the database
  }
  fs.ClearFaults();
  std::printf("read faults: %llu injected, %llu reads returned an error, %llu read right\n",
              static_cast<unsigned long long>(fs.counters().read_faults),
              static_cast<unsigned long long>(errors), static_cast<unsigned long long>(reads_ok));
  CHECK(errors > 0);
  REQUIRE(db->Verify().ok());
  TableImage found;
  REQUIRE(test::ReadTable(db.get(), "t", &found).ok());
  REQUIRE(found == model);
  REQUIRE(db->Close().ok());
}

// --- Failed rollbacks ---------------------------------------------------------------------------

// Opens a database with 200 rows in table "t" (recorded in *acked), all checkpointed.
std::unique_ptr<Database> OpenCheckpointed(const Options& options, TableImage* acked,
                                           Table** table) {
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  LoadDirty(db.get(), 200, acked);
  REQUIRE(db->OpenTable("t", table).ok());
  REQUIRE(db->Checkpoint().ok());
  return db;
}

// Begins a transaction that updates keys 0-49 and leaves it open for the caller to roll back.
// A rollback reads its records from the log buffer while they are there: another transaction
// then commits more log than the buffer holds (recorded in *acked), so that this one's
// rollback must read the log file, where a read fault can stop it.
std::unique_ptr<Transaction> BeginDoomed(Database* db, Table* table, TableImage* acked) {
  std::unique_ptr<Transaction> doomed;
  REQUIRE(db->Begin(&doomed).ok());
  for (int i = 0; i < 50; ++i) {
    REQUIRE(table->Update(doomed.get(), test::KeyOf(i), "doomed").ok());
  }
  std::unique_ptr<Transaction> filler;
  REQUIRE(db->Begin(&filler).ok());
  for (int round = 0; round < 4; ++round) {
    for (int i = 100; i < 200; ++i) {
      std::string key = test::KeyOf(i);
      std::string value = "filler-" + std::to_string(round) + std::string(200, 'f');
      REQUIRE(table->Update(filler.get(), key, value).ok());
      (*acked)[key] = value;
    }
  }
  REQUIRE(filler->Commit().ok());
  return doomed;
}

// Regression: a rollback that failed half way (here: the log record to undo could not be read
// back) released the transaction's locks and took it off the active list while its changes
// stayed in the pages; the database carried on, a later checkpoint no longer named the
// transaction, and a clean Close made its changes permanent. A failed rollback must latch the
// failed state: later commits and checkpoints are refused, and recovery undoes the rest.
TEST_CASE("a rollback that fails leaves the database refusing changes until recovery",
          "[crash][api]") {
  io::FaultInjectionFileSystem fs(9);
  Options options = FaultOptions(&fs);
  options.workers = 1;
  TableImage acked;
  Table* table = nullptr;
  std::unique_ptr<Database> db = OpenCheckpointed(options, &acked, &table);
  std::unique_ptr<Transaction> doomed = BeginDoomed(db.get(), table, &acked);
  fs.SetFaultFilter("/log/log.0");
  fs.FailNth(io::FaultOp::kRead, 1);  // the rollback reads the records back from the log
  Status aborted = doomed->Abort();
  INFO(aborted.ToString());
  REQUIRE_FALSE(aborted.ok());
  fs.ClearFaults();

  std::unique_ptr<Transaction> later;
  Status begun = db->Begin(&later);
  INFO(begun.ToString());
  REQUIRE(begun.IsFatal());
  REQUIRE(db->Checkpoint().IsFatal());
  Status closed = db->Close();
  INFO(closed.ToString());
  REQUIRE_FALSE(closed.ok());  // the checkpoint of a clean close would forget the transaction
  doomed.reset();
  db.reset();

  OpenReport report;
  db = test::RequireReopensTo(options, acked, &report);
  INFO(report.ToString());
  REQUIRE(report.losers == 1);
  REQUIRE(db->Close().ok());
}

// Regression: a checkpoint checked the failed state only when it began. A rollback that failed
// while the checkpoint wrote its pages latched the failed state and took its transaction off
// the active list; the checkpoint's snapshot then lacked it, and the checkpoint was recorded
// all the same: recovery started there, skipped the undo of the half-rolled-back transaction
// (its changes stayed) or met its records below the truncated start of the log. The fault
// matrix hit it once the buffer pool wrote back in batches (a rollback failed to get a frame).
TEST_CASE("a rollback that fails during a checkpoint's page writes fails the checkpoint",
          "[crash][api]") {
  io::FaultInjectionFileSystem fs(11);
  test::GatedWriteFileSystem gated(&fs, "/data.sm");
  Options options = FaultOptions(&gated);
  options.workers = 1;
  options.buffer_pool_bytes = 4u << 20;  // every page stays resident: no eviction writes
  options.background_write_interval = std::chrono::milliseconds(0);
  TableImage acked;
  Table* table = nullptr;
  std::unique_ptr<Database> db = OpenCheckpointed(options, &acked, &table);
  std::unique_ptr<Transaction> doomed = BeginDoomed(db.get(), table, &acked);
  // One dirty page for the next checkpoint: each page write checks the failed state first, so
  // the rollback must fail during the write of the last (here: only) page to go unnoticed.
  REQUIRE(db->Checkpoint().ok());
  {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(table->Update(txn.get(), test::KeyOf(150), "one dirty page").ok());
    REQUIRE(txn->Commit().ok());
    acked[test::KeyOf(150)] = "one dirty page";
  }

  gated.arm();  // the checkpoint's page write waits until the rollback has failed
  Status checkpointed;
  std::thread checkpointer([&] { checkpointed = db->Checkpoint(); });
  while (!gated.held()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  fs.SetFaultFilter("/log/log.0");
  fs.FailNth(io::FaultOp::kRead, 1);
  Status aborted = doomed->Abort();
  fs.ClearFaults();
  gated.release();
  checkpointer.join();
  INFO(aborted.ToString());
  REQUIRE_FALSE(aborted.ok());
  INFO(checkpointed.ToString());
  REQUIRE(checkpointed.IsFatal());
  REQUIRE_FALSE(db->Close().ok());
  doomed.reset();
  db.reset();
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);

  OpenReport report;
  db = test::RequireReopensTo(options, acked, &report);
  INFO(report.ToString());
  REQUIRE(report.losers == 1);
  REQUIRE(db->Close().ok());
}

// Regression: after a failed fdatasync of the volume (a checkpoint's), commits were still
// acknowledged although sm/sm.h promises that the database refuses changes once the volume
// failed to write; the volume's fatal state reached only page writes and allocations.
TEST_CASE("after a failed volume sync the database refuses commits", "[crash][api]") {
  io::FaultInjectionFileSystem fs(10);
  Options options = FaultOptions(&fs);
  options.workers = 1;
  TableImage acked;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  LoadDirty(db.get(), 100, &acked);
  Table* table = nullptr;
  REQUIRE(db->OpenTable("t", &table).ok());

  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  REQUIRE(table->Update(txn.get(), test::KeyOf(1), "started before").ok());
  fs.SetFaultFilter("/data.sm");
  fs.FailNth(io::FaultOp::kSync, 1);
  Status checkpointed = db->Checkpoint();
  INFO(checkpointed.ToString());
  REQUIRE(checkpointed.IsFatal());
  fs.ClearFaults();
  REQUIRE(txn->Commit().IsFatal());  // outcome unknown: recovery decides (it has no commit)
  std::unique_ptr<Transaction> later;
  REQUIRE(db->Begin(&later).IsFatal());
  REQUIRE(db->Checkpoint().IsFatal());
  REQUIRE_FALSE(db->Close().ok());
  txn.reset();
  db.reset();
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);

  db = test::RequireReopensTo(options, acked);
  REQUIRE(db->Close().ok());
}

// Regression: once the log had failed, an operation whose record could not be logged reverted
// its change but left the page dirty, with no full image logged for it since the checkpoint,
// and its page LSN still durable - so the background writer wrote it. A crash that tore
// that write left a page recovery could not repair (it had no record to redo), found by Verify
// or by the next reader as a checksum mismatch. In the failed state no page is written.
TEST_CASE("after the log failed, pages with a reverted change are not written back",
          "[crash][api]") {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    io::FaultInjectionFileSystem fs(seed);
    Options options = FaultOptions(&fs);
    options.workers = 1;
    options.buffer_pool_bytes = 4u << 20;  // every page stays resident
    TableImage acked;
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(options, &db).ok());
    LoadDirty(db.get(), 2000, &acked);  // ~40 leaves
    Table* table = nullptr;
    REQUIRE(db->OpenTable("t", &table).ok());
    REQUIRE(db->Checkpoint().ok());  // every page clean and durable; a new full-image epoch

    std::unique_ptr<Transaction> survivor;  // begun before the log fails
    REQUIRE(db->Begin(&survivor).ok());
    fs.SetFaultFilter("/log/log.0");
    fs.FailNth(io::FaultOp::kWrite, 1);
    {
      std::unique_ptr<Transaction> txn;
      REQUIRE(db->Begin(&txn).ok());
      REQUIRE(table->Update(txn.get(), test::KeyOf(0), "lost").ok());
      REQUIRE(txn->Commit().IsFatal());
    }
    fs.ClearFaults();
    // A change on every leaf, each refused by the logger and reverted on its page (the record
    // re-inserted elsewhere in the page: the page's bytes differ from the durable copy).
    for (int i = 1; i < 2000; i += 50) {
      Status s = table->Delete(survivor.get(), test::KeyOf(i));  // reverted by re-inserting
      INFO(s.ToString());
      REQUIRE(s.IsFatal());
    }
    survivor.reset();
    // The background writer's rounds (2 ms) would write them; the crash tears what it wrote.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    db.reset();
    fs.SimulateCrash(io::CrashMode::kTearUnsynced);

    db = test::RequireReopensTo(options, acked);
    REQUIRE(db->Close().ok());
  }
}

}  // namespace
}  // namespace sm
