// Benchmark "log": the write-ahead log on this machine's disk (a temporary directory in /tmp,
// O_DIRECT segment files through the reactor).
//
//   insert_mb_per_s_1w / _2w   log insert throughput of 1 KiB records from 4 fibers on each of
//                              1 or 2 workers; no commit waits (commit mode async), so it
//                              measures reserve + copy + publish while the flusher writes
//                              behind (a truncator retires old segments every 20 ms so the run
//                              does not fill the disk). Also records/s for 64-byte records.
//   durable_commits_per_s      commit records from --fibers fibers on 2 workers, each waiting
//                              until its record is durable (commit mode durable): group commit
//                              on a real fdatasync. Also the figure for a single committer.
//   recovery_mb_per_s          restart recovery of a database (sm/sm.h on the in-memory
//                              fault-injecting file system, so the figure is the engine's CPU
//                              cost, not the disk's): --recovery-txns transactions of 10 B-tree
//                              updates each (100-byte values), committed asynchronously with no
//                              checkpoint, then a simulated crash that drops every unsynced page
//                              write; Open's analysis + redo + undo, divided into the log bytes
//                              redo scanned.
//   scan_mb_per_s              a LogReader scanning a --recovery-mb log from its start
//                              (reading, checking every record's CRC32C): recovery's floor.
//
// Figures are medians of --repeat runs; the last line is a JSON object of them.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "log/log_manager.h"
#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "log/log_reader.h"
#include "sm/io/file.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"

using namespace sm;
using namespace sm::log;
using sm::bench::Median;
using sm::bench::NowSeconds;

namespace {

struct Config {
  double seconds = 0.5;
  int repeat = 3;
  int fibers = 64;
  int insert_fibers_per_worker = 4;
  uint64_t segment_mb = 64;
  uint64_t buffer_mb = 8;
  uint64_t recovery_mb = 128;
  uint64_t recovery_txns = 20000;
  bool pin = false;
};

void Check(const char* what, const Status& s) {
  if (s.ok()) return;
  std::fprintf(stderr, "log bench: %s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

std::unique_ptr<threads::Runtime> MakeRuntime(const Config& config, unsigned workers) {
  threads::RuntimeOptions options;
  options.workers = workers;
  options.pin_workers = config.pin;
  std::unique_ptr<threads::Runtime> rt;
  Check("runtime", threads::Runtime::Create(options, &rt));
  return rt;
}

// A fresh log directory under /tmp, removed (with its files) when the scope ends.
class TempLog {
 public:
  explicit TempLog(const Config& config, log::CommitMode mode) {
    char tmpl[] = "/tmp/sm-logbench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir_ = tmpl;
    options_.segment_bytes = config.segment_mb << 20;
    options_.buffer_bytes = config.buffer_mb << 20;
    options_.commit_mode = mode;
    Check("open log", LogManager::Open(fs(), dir_, options_, &log_));
  }
  ~TempLog() {
    if (log_ != nullptr) Check("close log", log_->Close());
    std::vector<std::string> names;
    if (fs()->ListDir(dir_, &names).ok()) {
      for (const std::string& n : names) fs()->Delete(dir_ + "/" + n).PermitUnchecked();
    }
    fs()->Delete(dir_).PermitUnchecked();
  }
  static io::FileSystem* fs() { return io::FileSystem::Default(); }
  LogManager* log() { return log_.get(); }
  const std::string& dir() const { return dir_; }
  void Close() {
    Check("close log", log_->Close());
    log_.reset();
  }

 private:
  std::string dir_;
  LogOptions options_;
  std::unique_ptr<LogManager> log_;
};

// Retires old segments while a run writes: marks a record, makes it durable, truncates there.
class Truncator {
 public:
  explicit Truncator(LogManager* log) : log_(log), thread_([this] { Run(); }) {}
  ~Truncator() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }

 private:
  void Run() {
    while (!stop_.load(std::memory_order_relaxed)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      LogRecord mark;
      Lsn lsn, end;
      Check("truncator insert", log_->Insert(mark, &lsn, &end));
      Check("truncator flush", log_->Flush(end));
      Check("truncate", log_->Truncate(lsn));
    }
  }
  LogManager* log_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Runs `body(fiber_index, stop)` in `fibers` fibers spread over the runtime's workers, all
// released together and stopped after `seconds`; each body loops until `stop` and returns how
// many operations it did. Returns the elapsed seconds; *ops is the sum.
template <typename Body>
double TimedFibers(threads::Runtime* rt, int fibers, double seconds, Body body, uint64_t* ops) {
  std::atomic<bool> go{false}, stop{false};
  std::atomic<uint64_t> total{0};
  threads::WaitGroup wg;
  wg.Add(fibers);
  for (int f = 0; f < fibers; ++f) {
    rt->Spawn(
        [&, f] {
          while (!go.load(std::memory_order_acquire)) threads::Worker::Current()->Yield();
          total.fetch_add(body(f, stop));
          wg.Done();
        },
        static_cast<int>(f % rt->worker_count()));
  }
  double t0 = NowSeconds();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  wg.Wait();
  *ops = total.load();
  return NowSeconds() - t0;
}

struct Rate {
  double records_per_s = 0;
  double mb_per_s = 0;
};

// Inserts records of `record_bytes` (total, header included) for config.seconds.
Rate InsertRun(const Config& config, unsigned workers, size_t record_bytes) {
  TempLog t(config, log::CommitMode::kAsync);
  auto rt = MakeRuntime(config, workers);
  std::string payload(record_bytes - kRecordHeaderBytes, 'x');
  Truncator truncator(t.log());
  uint64_t records = 0;
  auto insert = [&](int f, const std::atomic<bool>& stop) {
    LogRecord r;
    r.txn = TxnId(f + 1);
    r.payload = payload;
    Lsn lsn;
    uint64_t n = 0;
    for (; !stop.load(std::memory_order_relaxed); ++n) Check("insert", t.log()->Insert(r, &lsn));
    return n;
  };
  double seconds =
      TimedFibers(rt.get(), static_cast<int>(workers) * config.insert_fibers_per_worker,
                  config.seconds, insert, &records);
  rt->Shutdown();
  Rate rate;
  rate.records_per_s = records / seconds;
  rate.mb_per_s = rate.records_per_s * record_bytes / 1e6;
  return rate;
}

struct CommitRun {
  double commits_per_s = 0;
  double commits_per_sync = 0;
};

// `fibers` committers on 2 workers, each: commit record, wait until durable, repeat.
CommitRun DurableCommits(const Config& config, int fibers) {
  TempLog t(config, log::CommitMode::kDurable);
  auto rt = MakeRuntime(config, 2);
  auto commit = [&](int f, const std::atomic<bool>& stop) {
    Lsn prev, lsn;
    uint64_t n = 0;
    for (; !stop.load(std::memory_order_relaxed); ++n) {
      Check("commit", t.log()->Commit(TxnId(f + 1), prev, &lsn));
      prev = lsn;
    }
    return n;
  };
  uint64_t syncs_before = t.log()->stats().syncs;
  uint64_t commits = 0;
  double seconds = TimedFibers(rt.get(), fibers, config.seconds, commit, &commits);
  rt->Shutdown();
  uint64_t syncs = t.log()->stats().syncs - syncs_before;
  CommitRun run;
  run.commits_per_s = commits / seconds;
  run.commits_per_sync = syncs == 0 ? 0 : double(commits) / double(syncs);
  return run;
}

// Writes a log of config.recovery_mb of 1 KiB records, then times a reader over all of it.
double RecoveryScanMbPerS(const Config& config) {
  TempLog t(config, log::CommitMode::kAsync);
  std::string payload(1024 - kRecordHeaderBytes, 'r');
  LogRecord r;
  r.txn = TxnId(1);
  r.payload = payload;
  Lsn lsn;
  uint64_t records = (config.recovery_mb << 20) / 1024;
  for (uint64_t i = 0; i < records; ++i) Check("insert", t.log()->Insert(r, &lsn));
  t.Close();
  std::unique_ptr<LogReader> reader;
  Check("open reader", LogReader::Open(TempLog::fs(), t.dir(), &reader));
  Check("seek", reader->Seek(Lsn(kFirstLsn)));
  double t0 = NowSeconds();
  LogRecordView view;
  uint64_t bytes = 0, seen = 0;
  Status s;
  while ((s = reader->Next(&view)).ok()) {
    bytes += view.length;
    ++seen;
  }
  double seconds = NowSeconds() - t0;
  if (!s.IsNotFound() || seen != records) {
    std::fprintf(stderr, "log bench: scan read %llu of %llu records: %s\n",
                 static_cast<unsigned long long>(seen), static_cast<unsigned long long>(records),
                 s.ToString().c_str());
    std::exit(1);
  }
  return bytes / seconds / 1e6;
}

// Builds a database with config.recovery_txns update transactions after its last checkpoint,
// crashes it (unsynced writes dropped), and times the Open that recovers it.
struct RestartRun {
  double mb_per_s = 0;
  double seconds = 0;
  uint64_t redo_bytes = 0;
  uint64_t redo_records = 0;
};

RestartRun RestartRecovery(const Config& config) {
  io::FaultInjectionFileSystem fs(7);
  sm::Options options;
  options.path = "/db";
  options.file_system = &fs;
  options.buffer_pool_bytes = 512u << 20;
  options.commit_mode = sm::CommitMode::kAsync;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  options.workers = 1;
  constexpr uint64_t kKeys = 50000;
  auto key = [](uint64_t k) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, k >>= 8) s[i] = static_cast<char>(k & 0xff);
    return s;
  };
  std::unique_ptr<sm::Database> db;
  Check("open", sm::Database::Open(options, &db));
  sm::Table* table = nullptr;
  Check("create table", db->CreateTable("t", &table));
  std::string value(100, 'v');
  std::unique_ptr<sm::Transaction> txn;
  Check("begin", db->Begin(&txn));
  for (uint64_t k = 0; k < kKeys; ++k) Check("load", table->Insert(txn.get(), key(k), value));
  Check("commit", txn->Commit());
  Check("checkpoint", db->Checkpoint());
  uint64_t x = 88172645463325252ull;
  for (uint64_t t = 0; t < config.recovery_txns; ++t) {
    Check("begin", db->Begin(&txn));
    for (int i = 0; i < 10; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      value[i % 100] = static_cast<char>('a' + x % 26);
      Check("update", table->Update(txn.get(), key(x % kKeys), value));
    }
    // The last commit is durable, and with it every record before it: the crash below drops
    // only what was never synced, and recovery must find all of this run's records.
    const bool last = t + 1 == config.recovery_txns;
    Check("commit", last ? txn->Commit(sm::CommitMode::kDurable) : txn->Commit());
  }
  txn.reset();
  static_cast<sm::api::DatabaseImpl*>(db.get())->TEST_Crash();
  db.reset();
  fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  sm::OpenReport report;
  double t0 = NowSeconds();
  Check("reopen", sm::Database::Open(options, &db, &report));
  RestartRun run;
  run.seconds = NowSeconds() - t0;  // the whole Open, recovery's closing checkpoint included
  Check("close", db->Close());
  if (report.redo_records < config.recovery_txns * 10) {
    std::fprintf(stderr, "log bench: recovery redid %llu records, expected at least %llu\n",
                 static_cast<unsigned long long>(report.redo_records),
                 static_cast<unsigned long long>(config.recovery_txns * 10));
    std::exit(1);
  }
  run.redo_bytes = report.redo_bytes;
  run.redo_records = report.redo_records;
  run.mb_per_s = report.redo_bytes / report.recovery_seconds / 1e6;
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write-ahead log benchmark (insert, group commit, recovery scan)"};
  Config config;
  app.add_option("--seconds", config.seconds, "duration of each timed run");
  app.add_option("--repeat", config.repeat, "runs per figure (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--fibers", config.fibers, "durable committers (on 2 workers)")
      ->check(CLI::PositiveNumber);
  app.add_option("--segment-mb", config.segment_mb, "log segment size");
  app.add_option("--buffer-mb", config.buffer_mb, "log buffer size");
  app.add_option("--recovery-mb", config.recovery_mb, "log size for the recovery scan");
  app.add_option("--recovery-txns", config.recovery_txns,
                 "update transactions replayed by the restart-recovery run");
  app.add_flag("--pin", config.pin, "pin workers to cores");
  CLI11_PARSE(app, argc, argv);

  std::vector<double> ins_1w, ins_2w, rec64_1w, rec64_2w, commits, commits_1, per_sync, scan;
  std::vector<double> restart, restart_open;
  RestartRun last_restart;
  for (int r = 0; r < config.repeat; ++r) {
    ins_1w.push_back(InsertRun(config, 1, 1024).mb_per_s);
    ins_2w.push_back(InsertRun(config, 2, 1024).mb_per_s);
    rec64_1w.push_back(InsertRun(config, 1, 64).records_per_s);
    rec64_2w.push_back(InsertRun(config, 2, 64).records_per_s);
    CommitRun group = DurableCommits(config, config.fibers);
    commits.push_back(group.commits_per_s);
    per_sync.push_back(group.commits_per_sync);
    commits_1.push_back(DurableCommits(config, 1).commits_per_s);
    scan.push_back(RecoveryScanMbPerS(config));
    last_restart = RestartRecovery(config);
    restart.push_back(last_restart.mb_per_s);
    restart_open.push_back(last_restart.seconds);
  }
  double m_ins_1w = Median(ins_1w), m_ins_2w = Median(ins_2w);
  double m_rec64_1w = Median(rec64_1w), m_rec64_2w = Median(rec64_2w);
  double m_commits = Median(commits), m_commits_1 = Median(commits_1);
  double m_per_sync = Median(per_sync), m_scan = Median(scan);
  double m_restart = Median(restart), m_restart_open = Median(restart_open);
  std::printf(
      "log benchmark: %d runs, median; log in /tmp (O_DIRECT), %llu MiB segments, "
      "%llu MiB buffer\n",
      config.repeat, static_cast<unsigned long long>(config.segment_mb),
      static_cast<unsigned long long>(config.buffer_mb));
  std::printf("  insert, commit mode async, 1 KiB records, 1 worker   %9.1f MB/s  (%.0f rec/s)\n",
              m_ins_1w, m_ins_1w * 1e6 / 1024);
  std::printf("  insert, commit mode async, 1 KiB records, 2 workers  %9.1f MB/s  (%.0f rec/s)\n",
              m_ins_2w, m_ins_2w * 1e6 / 1024);
  std::printf("  insert, commit mode async, 64 B records, 1 worker    %9.0f rec/s (%.1f MB/s)\n",
              m_rec64_1w, m_rec64_1w * 64 / 1e6);
  std::printf("  insert, commit mode async, 64 B records, 2 workers   %9.0f rec/s (%.1f MB/s)\n",
              m_rec64_2w, m_rec64_2w * 64 / 1e6);
  std::printf(
      "  commit mode durable, %d fibers on 2 workers          %9.0f commits/s "
      "(%.1f commits per sync)\n",
      config.fibers, m_commits, m_per_sync);
  std::printf("  commit mode durable, 1 fiber                         %9.0f commits/s\n",
              m_commits_1);
  std::printf("  log scan (read + CRC32C), %llu MiB                   %9.1f MB/s\n",
              static_cast<unsigned long long>(config.recovery_mb), m_scan);
  std::printf(
      "  restart recovery, %llu txns (%llu records, %.1f MB)   %9.1f MB/s  (Open: %.2f s)\n",
      static_cast<unsigned long long>(config.recovery_txns),
      static_cast<unsigned long long>(last_restart.redo_records), last_restart.redo_bytes / 1e6,
      m_restart, m_restart_open);
  sm::bench::PrintJsonLine({{"insert_mb_per_s_1w", m_ins_1w},
                            {"insert_mb_per_s_2w", m_ins_2w},
                            {"insert_records_per_s_64b_1w", m_rec64_1w},
                            {"insert_records_per_s_64b_2w", m_rec64_2w},
                            {"insert_commit_mode", log::CommitModeName(log::CommitMode::kAsync)},
                            {"durable_commits_per_s", m_commits},
                            {"durable_commits_per_s_1fiber", m_commits_1},
                            {"commits_per_sync", m_per_sync},
                            {"commit_mode", log::CommitModeName(log::CommitMode::kDurable)},
                            {"committer_fibers", config.fibers},
                            {"recovery_mb_per_s", m_restart},
                            {"recovery_open_seconds", m_restart_open},
                            {"scan_mb_per_s", m_scan},
                            {"repeat", config.repeat}});
  return 0;
}
