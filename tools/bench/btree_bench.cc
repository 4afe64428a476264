// Benchmark "btree": table throughput on N 8-byte keys with 100-byte values, each operation its
// own transaction, next to the same workload on the bare B-tree.
//
// Two ways of running one workload, written against one adapter interface (Insert, Lookup,
// Update, Scan), so that the operations, keys and counts are identical:
//   ApiStore  through the public API (sm/sm.h): a database in a fresh directory under --dir,
//             Options{buffer_pool_bytes, commit_mode = kAsync, workers, checkpoint_interval},
//             one table; every operation is Begin, the call, Commit (serializable, so key-range
//             locks are taken; every change logged; async commit). A retryable failure (deadlock,
//             lock timeout) aborts and runs the transaction again, counted as a retry. Fibers
//             run on the database's runtime (Database::Spawn).
//   RawStore  the B-tree core alone (index::BTree on its own volume, pool and threads::Runtime):
//             no transactions, no locks, no log. Its keys carry the infix _raw.
//
// The workload, for <w> = 1 and 2 workers (--workers), --fibers-per-worker fibers each (the work
// split among the fibers, keys drawn by a per-fiber seeded generator):
//   inserts_per_s[_raw]_<w>w     all N keys, in one random order, into an empty table
//   lookups_per_s[_raw]_<w>w     M point lookups of random present keys (M = --ops, default N)
//   updates_per_s[_raw]_<w>w     M / 2 updates of random present keys (same value size)
//   scan_rows_per_s[_raw]_<w>w   M rows read by cursors, 100 rows per cursor opened at a random
//                                key (for ApiStore one transaction per cursor)
// once with a buffer pool larger than the data and once (suffix _small_pool) with a pool of 10 %
// of the data as the first run (normally the 1-worker one) laid it out, with
// --small-pool-fibers-per-worker fibers each to keep reads in flight. The small-pool runs load
// 7/8 of the keys with the large pool (untimed; through the API one transaction per insert, as
// batches of random keys deadlock on each other's next-key locks), write everything back (the
// API: Close; raw: FlushAll), continue with the small pool (the API: reopen with the smaller
// buffer_pool_bytes), and then time the inserts of the last N / 8 keys and M / 4 of each other
// operation: a database larger than the pool without minutes of loading through a 10 % pool.
//
// Targets, pool larger than the data, 1 worker, per-operation transactions:
// lookups_per_s_1w >= 1 M and inserts_per_s_1w >= 500 K; the run prints whether they are met.
// Figures are wall time over the whole phase. Each configuration with the large pool runs
// --repeat times (default 3), each small-pool one --small-pool-repeat times (default 1: its
// timed inserts alone take minutes), every time on a fresh database; the figures and JSON keys
// are the medians, each run's figures are printed and kept under <key>_runs, and a target
// check says how many runs met it. On a shared machine runs of one binary spread widely (the
// <key>_runs show by how much): compare medians, or ratios within one run. --quick is a small
// configuration for smoke runs.
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "index/btree.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/io/file.h"
#include "sm/sm.h"
#include "sm/space/volume.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"

namespace {

using sm::Status;
using sm::bench::Median;
using sm::bench::NowSeconds;

constexpr size_t kValueBytes = 100;
constexpr uint64_t kScanRowsPerSeek = 100;
constexpr double kTargetLookups1w = 1e6;
constexpr double kTargetInserts1w = 5e5;

[[noreturn]] void Die(const char* what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(what, s);
}

// An 8-byte big-endian key, so that memcmp order is numeric order; no allocation.
class Key {
 public:
  explicit Key(uint64_t n) {
    for (int i = 7; i >= 0; --i, n >>= 8) bytes_[i] = static_cast<char>(n & 0xff);
  }
  std::string_view view() const { return {bytes_, sizeof bytes_}; }

 private:
  char bytes_[8];
};

struct BenchOptions {
  uint64_t keys = 10000000;
  uint64_t ops = 0;  // 0: keys
  unsigned fibers_per_worker = 4;
  // With the small pool most operations wait for a read: more fibers keep more reads in flight.
  unsigned small_pool_fibers_per_worker = 32;
  std::string dir = "/tmp";
  unsigned checkpoint_interval_ms =  // the API's defaults
      static_cast<unsigned>(sm::Options().checkpoint_interval.count());
  double checkpoint_spread = sm::Options().checkpoint_spread;
  bool verify = true;
  bool raw = true;
  bool api = true;
  bool small_pool = true;
  std::vector<unsigned> worker_counts = {1, 2};
  std::string steps = "off";  // the API runs' STEPS: off, on, or auto (Options::steps_adaptive)
  std::string ctx_placement;  // empty: the built-in placement
  uint32_t writer_quiet_ms = 5000;         // the API's default (Options::background_write_quiet)
  bool prefault_pool = true;               // as the TPC-C driver runs (Options::prefault_pool)
  std::string miss_interleaving = "auto";  // Options::miss_interleaving, both kinds of run
  unsigned repeat = 3;             // runs per large-pool configuration (medians reported)
  unsigned small_pool_repeat = 1;  // runs per small-pool configuration
};

struct Figures {
  double inserts = 0, lookups = 0, updates = 0, scan_rows = 0;
  uint64_t data_bytes = 0;         // of the tree's pages (raw) or the volume file (API)
  uint64_t reads = 0, writes = 0;  // buffer pool (raw; API: misses, writes)
  uint64_t switches = 0, remote_wakeups = 0, idle_sleeps = 0;  // raw: fiber scheduling
  uint64_t pessimistic = 0;                                    // raw: write restarts
  std::string untimed;  // where the rest of the configuration's wall time went
  // API only.
  uint64_t retries = 0;
  sm::DatabaseStats db;
};

// The figures of one configuration's runs: the medians of the rates; the counters and the
// untimed account of the last run.
Figures MedianOf(const std::vector<Figures>& runs) {
  auto median = [&runs](double Figures::*rate) {
    std::vector<double> values;
    for (const Figures& f : runs) values.push_back(f.*rate);
    return Median(std::move(values));
  };
  Figures m = runs.back();
  m.inserts = median(&Figures::inserts);
  m.lookups = median(&Figures::lookups);
  m.updates = median(&Figures::updates);
  m.scan_rows = median(&Figures::scan_rows);
  return m;
}

// How many operations each phase of a configuration runs.
struct Plan {
  uint64_t keys = 0;       // N
  uint64_t preloaded = 0;  // keys loaded untimed before the timed inserts (small pool)
  uint64_t ops = 0;        // lookups and scanned rows; updates are ops / 2
};

// Runs body(fiber, fibers) on `fibers` fibers spread over the workers with
// spawn(fn, worker); returns the wall time in seconds. Under callgrind the phase's cost (every
// thread's) is a part of its own, dumped with the description `label`; the part before it ends
// with "before <label>".
template <typename SpawnFn, typename Body>
double Phase(const std::string& label, SpawnFn spawn, unsigned workers, unsigned fibers,
             Body body) {
  const std::string before = "before " + label;  // outlives the client request
  CALLGRIND_DUMP_STATS_AT(before.c_str());
  sm::threads::WaitGroup done;
  done.Add(fibers);
  // Progress on stderr (the figures and the JSON line go to stdout at the end).
  std::fprintf(stderr, "  %s ...", label.c_str());
  double t0 = NowSeconds();
  for (unsigned f = 0; f < fibers; ++f) {
    spawn(
        [&, f] {
          body(f, fibers);
          done.Done();
        },
        static_cast<int>(f % workers));
  }
  done.Wait();
  double secs = NowSeconds() - t0;
  std::fprintf(stderr, " %.1f s\n", secs);
  CALLGRIND_DUMP_STATS_AT(label.c_str());
  return secs;
}

// The timed phases, identical for both stores. Store: NewSession() -> one fiber's handle with
// Insert(key, value), Lookup(key, *value), Update(key, value), Scan(key, rows) -> rows read;
// each dies on an unexpected error.
template <typename Store, typename SpawnFn>
void RunPhases(const std::string& label, Store& store, SpawnFn spawn, unsigned workers,
               unsigned fibers, const Plan& plan, const std::vector<uint64_t>& order,
               Figures* fig) {
  const std::string value(kValueBytes, 'v');
  double secs = Phase(label + " inserts", spawn, workers, fibers, [&](unsigned f, unsigned count) {
    auto&& session = store.NewSession();
    for (uint64_t i = plan.preloaded + f; i < plan.keys; i += count) {
      session.Insert(Key(order[i]).view(), value);
    }
  });
  fig->inserts = double(plan.keys - plan.preloaded) / secs;

  secs = Phase(label + " lookups", spawn, workers, fibers, [&](unsigned f, unsigned count) {
    std::mt19937_64 rng(1000 + f);
    std::string got;
    auto&& session = store.NewSession();
    for (uint64_t i = f; i < plan.ops; i += count) {
      session.Lookup(Key(rng() % plan.keys).view(), &got);
      if (got.size() != kValueBytes) Die("lookup", Status::Corruption("wrong value size"));
    }
  });
  fig->lookups = double(plan.ops) / secs;

  secs = Phase(label + " updates", spawn, workers, fibers, [&](unsigned f, unsigned count) {
    std::mt19937_64 rng(2000 + f);
    const std::string updated(kValueBytes, static_cast<char>('a' + f % 26));
    auto&& session = store.NewSession();
    for (uint64_t i = f; i < plan.ops / 2; i += count) {
      session.Update(Key(rng() % plan.keys).view(), updated);
    }
  });
  fig->updates = double(plan.ops / 2) / secs;

  std::atomic<uint64_t> rows{0};
  secs = Phase(label + " scans", spawn, workers, fibers, [&](unsigned f, unsigned count) {
    std::mt19937_64 rng(3000 + f);
    uint64_t mine = 0;
    auto&& session = store.NewSession();
    for (uint64_t i = f * kScanRowsPerSeek; i < plan.ops; i += count * kScanRowsPerSeek) {
      mine += session.Scan(Key(rng() % plan.keys).view(), kScanRowsPerSeek);
    }
    rows.fetch_add(mine, std::memory_order_relaxed);  // read after the phase's Wait
  });
  fig->scan_rows = double(rows.load(std::memory_order_relaxed)) / secs;
}

// "txn 1w", "raw 2w small pool": names a configuration's phases for callgrind.
std::string Label(const char* store, unsigned workers, bool small_pool) {
  return std::string(store) + " " + std::to_string(workers) + "w" +
         (small_pool ? " small pool" : "");
}

Plan MakePlan(const BenchOptions& options, bool small_pool) {
  Plan plan;
  plan.keys = options.keys;
  plan.ops = options.ops != 0 ? options.ops : options.keys;
  if (small_pool) {
    plan.preloaded = plan.keys - plan.keys / 8;
    plan.ops /= 4;  // to keep the run short; the rates are per operation either way
  }
  return plan;
}

// Appends "what N.N s" to *out for each lap (what == nullptr: a timed lap, not reported).
class Stopwatch {
 public:
  explicit Stopwatch(std::string* out) : out_(out), t0_(NowSeconds()) {}
  void Lap(const char* what) {
    double now = NowSeconds();
    if (what != nullptr) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.1f s", out_->empty() ? "" : ", ", what, now - t0_);
      *out_ += buf;
    }
    t0_ = now;
  }

 private:
  std::string* const out_;
  double t0_;
};

std::string MakeTempDir(const std::string& parent) {
  std::string tmpl = parent + "/sm-btree-bench-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) Die("mkdtemp", Status::IOError(parent, errno));
  return buf.data();
}

// ---- through the public API ------------------------------------------------------------------

// Every operation its own transaction. Each fiber has a session, whose transaction object
// begins again for every operation (Database::Begin reuses a finished one).
class ApiStore {
 public:
  ApiStore(sm::Database* db, sm::Table* table) : db_(db), table_(table) {}

  class Session {
   public:
    explicit Session(ApiStore* store) : store_(store) {}
    void Insert(std::string_view key, std::string_view value) {
      InTxn("insert",
            [&](sm::Transaction* txn) { return store_->table_->Insert(txn, key, value); });
    }
    void Lookup(std::string_view key, std::string* value) {
      InTxn("lookup", [&](sm::Transaction* txn) { return store_->table_->Get(txn, key, value); });
    }
    void Update(std::string_view key, std::string_view value) {
      InTxn("update",
            [&](sm::Transaction* txn) { return store_->table_->Update(txn, key, value); });
    }
    uint64_t Scan(std::string_view key, uint64_t rows) {
      uint64_t n = 0;
      sm::ScanOptions range;
      range.lower = std::string(key);
      range.has_lower = true;
      InTxn("scan", [&](sm::Transaction* txn) -> Status {
        n = 0;
        std::unique_ptr<sm::Cursor> cursor;
        SM_TRY(store_->table_->NewCursor(txn, range, &cursor));
        for (; cursor->Valid() && n < rows; ++n) SM_TRY(cursor->Next());
        return Status::OK();
      });
      return n;
    }

   private:
    // Begin, body, Commit; a retryable failure aborts and runs it all again.
    template <typename Body>
    void InTxn(const char* what, Body body) {
      for (;;) {
        Check(store_->db_->Begin(&txn_), "begin");
        Status s = body(txn_.get());
        if (s.ok()) s = txn_->Commit();
        if (s.ok()) return;
        if (!s.IsRetryable()) Die(what, s);
        if (txn_->active()) txn_->Abort().PermitUnchecked();       // retried below in any case
        store_->retries_.fetch_add(1, std::memory_order_relaxed);  // a statistic only
      }
    }

    ApiStore* const store_;
    std::unique_ptr<sm::Transaction> txn_;
  };

  Session NewSession() { return Session(this); }
  uint64_t retries() const { return retries_.load(std::memory_order_relaxed); }

 private:
  sm::Database* const db_;
  sm::Table* const table_;
  std::atomic<uint64_t> retries_{0};
};

constexpr const char* kTableName = "bench";

// --miss-interleaving (its values are checked when parsed).
sm::MissInterleaving Interleaving(const BenchOptions& options) {
  sm::MissInterleaving mode = sm::MissInterleaving::kOff;
  if (!sm::ParseMissInterleaving(options.miss_interleaving, &mode)) {
    Die("--miss-interleaving", Status::InvalidArgument(options.miss_interleaving));
  }
  return mode;
}

sm::Options ApiOptions(const BenchOptions& options, const std::string& path, unsigned workers,
                       size_t pool_bytes) {
  sm::Options o;
  o.path = path;
  o.buffer_pool_bytes = pool_bytes;
  o.commit_mode = sm::CommitMode::kAsync;
  o.workers = workers;
  o.checkpoint_interval = std::chrono::milliseconds(options.checkpoint_interval_ms);
  o.checkpoint_spread = options.checkpoint_spread;
  o.steps = options.steps != "off";
  o.steps_adaptive = options.steps == "auto";
  o.ctx_placement = options.ctx_placement;
  o.background_write_quiet = std::chrono::milliseconds(options.writer_quiet_ms);
  o.prefault_pool = options.prefault_pool;
  o.miss_interleaving = Interleaving(options);
  // The TPC-C driver's log settings, not the embedded defaults: a load writes hundreds of MiB.
  o.log_segment_bytes = 64ull << 20;
  o.log_spare_bytes = 1ull << 30;
  o.log_buffer_bytes = 8u << 20;
  return o;
}

template <typename Fn>
double ApiPhase(const std::string& label, sm::Database& db, unsigned fibers, Fn body) {
  return Phase(
      label,
      [&](std::function<void()> fn, int worker) {
        Check(db.Spawn(std::move(fn), worker), "spawn");
      },
      db.workers(), fibers, body);
}

// Inserts order[0, end), each its own transaction like the timed inserts (untimed preload).
// Larger transactions of random keys would deadlock on each other's next-key locks, and
// every deadlock victim's rollback reads its records back from the log.
void ApiLoad(sm::Database& db, ApiStore& store, unsigned fibers, const std::vector<uint64_t>& order,
             uint64_t end) {
  const std::string value(kValueBytes, 'v');
  ApiPhase("txn load", db, fibers, [&](unsigned f, unsigned count) {
    auto session = store.NewSession();
    for (uint64_t i = f; i < end; i += count) session.Insert(Key(order[i]).view(), value);
  });
}

// Counts the rows with one read-committed cursor (no key locks held).
uint64_t ApiCountRows(sm::Database& db, sm::Table* table) {
  std::unique_ptr<sm::Transaction> txn;
  Check(db.Begin(&txn, sm::Isolation::kReadCommitted), "begin");
  uint64_t rows = 0;
  {
    std::unique_ptr<sm::Cursor> cursor;
    Check(table->NewCursor(txn.get(), sm::ScanOptions::All(), &cursor), "count");
    for (; cursor->Valid(); ++rows) Check(cursor->Next(), "count");
  }
  Check(txn->Commit(), "commit");
  return rows;
}

// small_pool_bytes == 0: the whole run with a pool of large_pool_bytes. Else 7/8 of the keys
// are loaded (untimed) with the large pool, the database closed and reopened with a pool of
// small_pool_bytes for the timed phases.
Figures RunApi(const BenchOptions& options, unsigned workers, size_t large_pool_bytes,
               size_t small_pool_bytes, const std::vector<uint64_t>& order) {
  const bool small_pool = small_pool_bytes != 0;
  const Plan plan = MakePlan(options, small_pool);
  const unsigned fibers =
      workers * (small_pool ? options.small_pool_fibers_per_worker : options.fibers_per_worker);
  const std::string dir = MakeTempDir(options.dir);
  const std::string path = dir + "/db";
  Figures fig;
  Stopwatch watch(&fig.untimed);
  std::unique_ptr<sm::Database> db;
  Check(sm::Database::Open(ApiOptions(options, path, workers, large_pool_bytes), &db), "open");
  sm::Table* table = nullptr;
  Check(db->CreateTable(kTableName, &table), "create table");
  watch.Lap("open");
  if (small_pool) {
    // With the large pool the load needs no more fibers than the large-pool runs.
    ApiStore loader(db.get(), table);
    ApiLoad(*db, loader, workers * options.fibers_per_worker, order, plan.preloaded);
    watch.Lap("load");
    Check(db->Close(), "close");
    db.reset();
    watch.Lap("close");
    Check(sm::Database::Open(ApiOptions(options, path, workers, small_pool_bytes), &db), "reopen");
    Check(db->OpenTable(kTableName, &table), "open table");
    watch.Lap("reopen");
  }
  ApiStore store(db.get(), table);
  RunPhases(
      Label("txn", workers, small_pool), store,
      [&](std::function<void()> fn, int worker) {
        Check(db->Spawn(std::move(fn), worker), "spawn");
      },
      workers,
      fibers, plan, order, &fig);
  watch.Lap(nullptr);
  fig.retries = store.retries();
  fig.db = db->stats();
  fig.reads = fig.db.pool_misses;
  fig.writes = fig.db.pool_writes;
  if (options.verify) {
    Check(db->Verify(), "verify");
    uint64_t rows = ApiCountRows(*db, table);
    if (rows != plan.keys) Die("verify", Status::Corruption("row count differs"));
    watch.Lap("verify");
  }
  Check(db->Close(), "close");
  db.reset();
  watch.Lap("close");
  std::error_code ec;
  fig.data_bytes = std::filesystem::file_size(path + "/data.sm", ec);
  std::filesystem::remove_all(dir, ec);
  return fig;
}

// ---- the B-tree core alone -------------------------------------------------------------------

// A volume file in a fresh directory, a pool, a tree without logger or key locks.
class RawDatabase {
 public:
  RawDatabase(const std::string& parent, size_t pool_bytes, sm::MissInterleaving interleaving)
      : dir_(MakeTempDir(parent)) {
    sm::space::VolumeOptions volume_options;
    volume_options.extent_pages = 4096;
    Check(sm::space::Volume::Create(sm::io::FileSystem::Default(), dir_ + "/btree.vol",
                                    volume_options, &volume_),
          "create volume");
    MakePool(pool_bytes);
    sm::index::BtreeOptions tree_options;
    tree_options.miss_interleaving = static_cast<sm::index::MissInterleaving>(interleaving);
    Check(sm::index::BTree::Create(pool_.get(), tree_options, &root_, &tree_), "create tree");
  }
  ~RawDatabase() {
    tree_.reset();
    pool_->StopWriter();
    pool_.reset();
    volume_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Writes every page back and continues with a pool of pool_bytes (smaller than the data:
  // with the background writer, which a pool larger than the data does without, as it would
  // only write pages nobody needs evicted, on the benchmark's cores).
  void ShrinkPool(size_t pool_bytes) {
    Check(pool_->FlushAll(), "flush");
    tree_.reset();
    pool_.reset();
    MakePool(pool_bytes);
    pool_->StartWriter(nullptr);
    Check(sm::index::BTree::Open(pool_.get(), root_, {}, &tree_), "open tree");
  }

  sm::index::BTree& tree() { return *tree_; }
  sm::buffer::BufferPool& pool() { return *pool_; }

 private:
  void MakePool(size_t pool_bytes) {
    sm::buffer::BufferPoolOptions pool_options;
    pool_options.pool_bytes = pool_bytes;
    Check(sm::buffer::BufferPool::Create(volume_.get(), pool_options, &pool_), "create pool");
  }

  const std::string dir_;
  std::unique_ptr<sm::space::Volume> volume_;
  std::unique_ptr<sm::buffer::BufferPool> pool_;
  sm::PageId root_;
  std::unique_ptr<sm::index::BTree> tree_;
};

class RawStore {
 public:
  explicit RawStore(sm::index::BTree* tree) : tree_(tree) {}
  RawStore& NewSession() { return *this; }  // no per-fiber state
  void Insert(std::string_view key, std::string_view value) {
    Check(tree_->Insert(key, value), "insert");
  }
  void Lookup(std::string_view key, std::string* value) {
    Check(tree_->Lookup(key, value), "lookup");
  }
  void Update(std::string_view key, std::string_view value) {
    Check(tree_->Update(key, value), "update");
  }
  uint64_t Scan(std::string_view key, uint64_t rows) {
    sm::index::Cursor cursor(tree_);
    Status st = cursor.Seek(key);
    uint64_t n = 0;
    for (; st.ok() && cursor.Valid() && n < rows; ++n) st = cursor.Next();
    Check(st, "scan");
    return n;
  }

 private:
  sm::index::BTree* const tree_;
};

// As RunApi, on the bare tree; the small-pool runs write every page back instead of closing.
Figures RunRaw(const BenchOptions& options, unsigned workers, size_t large_pool_bytes,
               size_t small_pool_bytes, const std::vector<uint64_t>& order) {
  const bool small_pool = small_pool_bytes != 0;
  const Plan plan = MakePlan(options, small_pool);
  const unsigned fibers =
      workers * (small_pool ? options.small_pool_fibers_per_worker : options.fibers_per_worker);
  Figures fig;
  Stopwatch watch(&fig.untimed);
  RawDatabase db(options.dir, large_pool_bytes, Interleaving(options));
  sm::threads::RuntimeOptions runtime_options;
  runtime_options.workers = workers;
  std::unique_ptr<sm::threads::Runtime> runtime;
  Check(sm::threads::Runtime::Create(runtime_options, &runtime), "runtime");
  auto spawn = [&](std::function<void()> fn, int worker) { runtime->Spawn(std::move(fn), worker); };
  if (small_pool) {
    const std::string value(kValueBytes, 'v');
    RawStore loader(&db.tree());
    Phase("raw load", spawn, workers, fibers, [&](unsigned f, unsigned count) {
      for (uint64_t i = f; i < plan.preloaded; i += count) {
        loader.Insert(Key(order[i]).view(), value);
      }
    });
    watch.Lap("load");
    db.ShrinkPool(small_pool_bytes);
    watch.Lap("flush");
  }
  RawStore store(&db.tree());
  watch.Lap(nullptr);
  RunPhases(Label("raw", workers, small_pool), store, spawn, workers, fibers, plan, order, &fig);
  watch.Lap(nullptr);
  for (unsigned w = 0; w < workers; ++w) {
    const sm::threads::WorkerStats& ws = runtime->worker(w).stats();
    fig.switches += ws.scheduler_switches + ws.direct_switches;
    fig.remote_wakeups += ws.remote_wakeups;
    fig.idle_sleeps += ws.idle_sleeps;
  }
  fig.pessimistic = db.tree().counters().pessimistic_descents;
  runtime->Shutdown();

  sm::index::BtreeStats stats;
  if (options.verify) {
    Check(db.tree().Verify(&stats), "verify");
    if (stats.records != plan.keys) Die("verify", Status::Corruption("record count differs"));
    watch.Lap("verify");
  } else {
    Check(db.tree().GetStats(&stats), "stats");
  }
  fig.data_bytes = stats.pages() * sm::kPageBytes;
  sm::buffer::BufferPoolStats pool_stats = db.pool().stats();
  fig.reads = pool_stats.reads;
  fig.writes = pool_stats.writes;
  return fig;
}

// ---- output ----------------------------------------------------------------------------------

void Print(const char* store, const char* pool, unsigned workers, const Figures& f) {
  std::printf(
      "  %-4s %-10s %uw  inserts %10.0f/s  lookups %10.0f/s  updates %10.0f/s  "
      "scan %11.0f rows/s\n",
      store, pool, workers, f.inserts, f.lookups, f.updates, f.scan_rows);
  const unsigned long long mib = f.data_bytes >> 20;
  if (f.db.txn_begun != 0) {
    // The database's counters since it was (re)opened: the timed phases, and for the pool
    // larger than the data also the CreateTable transaction.
    const double txns = std::max<double>(1, double(f.db.txn_committed));
    std::printf(
        "  %-4s %-10s     %llu MiB volume; %llu txns committed, %llu retries; %llu lock "
        "requests (%.1f per txn), %llu lock waits, %llu deadlocks; log %llu MiB in %llu syncs; "
        "%llu checkpoints; pool %llu misses, %llu writes\n",
        "", "", mib, static_cast<unsigned long long>(f.db.txn_committed),
        static_cast<unsigned long long>(f.retries),
        static_cast<unsigned long long>(f.db.lock_requests), double(f.db.lock_requests) / txns,
        static_cast<unsigned long long>(f.db.lock_waits),
        static_cast<unsigned long long>(f.db.deadlocks),
        static_cast<unsigned long long>(f.db.log_bytes >> 20),
        static_cast<unsigned long long>(f.db.log_syncs),
        static_cast<unsigned long long>(f.db.checkpoints), static_cast<unsigned long long>(f.reads),
        static_cast<unsigned long long>(f.writes));
  } else {
    std::printf(
        "  %-4s %-10s     %llu MiB of pages, %llu reads, %llu writes; %llu pessimistic writes; "
        "%llu fiber switches, %llu cross-worker wake-ups, %llu idle sleeps\n",
        "", "", mib, static_cast<unsigned long long>(f.reads),
        static_cast<unsigned long long>(f.writes), static_cast<unsigned long long>(f.pessimistic),
        static_cast<unsigned long long>(f.switches),
        static_cast<unsigned long long>(f.remote_wakeups),
        static_cast<unsigned long long>(f.idle_sleeps));
  }
  std::printf("  %-4s %-10s     untimed: %s\n", "", "", f.untimed.c_str());
  std::fflush(stdout);
}

// Transactions, locks and log against the bare tree: how many times slower.
void PrintCost(const char* pool, unsigned workers, const Figures& api, const Figures& raw) {
  auto ratio = [](double raw_rate, double api_rate) {
    return api_rate > 0 ? raw_rate / api_rate : 0.0;
  };
  std::printf(
      "  cost %-10s %uw  raw/txn time ratio: inserts %.2fx, lookups %.2fx, updates %.2fx, "
      "scans %.2fx\n",
      pool, workers, ratio(raw.inserts, api.inserts), ratio(raw.lookups, api.lookups),
      ratio(raw.updates, api.updates), ratio(raw.scan_rows, api.scan_rows));
  std::fflush(stdout);
}

// One run of a repeated configuration, a line of its rates.
void PrintRun(const char* store, const char* pool, unsigned workers, size_t run, size_t runs,
              const Figures& f) {
  std::printf(
      "  %-4s %-10s %uw  run %zu/%zu: inserts %10.0f/s  lookups %10.0f/s  updates %10.0f/s  "
      "scan %11.0f rows/s\n",
      store, pool, workers, run + 1, runs, f.inserts, f.lookups, f.updates, f.scan_rows);
  std::fflush(stdout);
}

// A configuration's runs and their medians (MedianOf), computed once.
struct Repeated {
  std::vector<Figures> runs;
  Figures median;
};

// The rates of a configuration: the medians under the headline keys, every run under
// <key>_runs.
void AddJson(nlohmann::json& json, const std::string& infix, const std::string& suffix,
             const Repeated& repeated) {
  const std::vector<Figures>& runs = repeated.runs;
  const Figures& median = repeated.median;
  auto add = [&](const char* name, double Figures::*rate) {
    const std::string key = name + infix + suffix;
    json[key] = median.*rate;
    nlohmann::json all = nlohmann::json::array();
    for (const Figures& f : runs) all.push_back(f.*rate);
    json[key + "_runs"] = std::move(all);
  };
  add("lookups_per_s", &Figures::lookups);
  add("inserts_per_s", &Figures::inserts);
  add("updates_per_s", &Figures::updates);
  add("scan_rows_per_s", &Figures::scan_rows);
}

// Runs a configuration `repeat` times (run() makes a fresh database each time), prints
// every run and the medians, and adds them to the JSON.
template <typename RunFn>
Repeated RunRepeated(unsigned repeat, const char* store, const char* pool, unsigned workers,
                     const std::string& infix, const std::string& suffix, nlohmann::json& json,
                     RunFn run) {
  Repeated repeated;
  for (unsigned r = 0; r < repeat; ++r) {
    repeated.runs.push_back(run());
    if (repeat > 1) PrintRun(store, pool, workers, r, repeat, repeated.runs.back());
  }
  if (repeat > 1) std::printf("  %-4s %-10s %uw  median of %u runs:\n", store, pool, workers, repeat);
  repeated.median = MedianOf(repeated.runs);
  Print(store, pool, workers, repeated.median);
  AddJson(json, infix, suffix, repeated);
  return repeated;
}

// A target against the median of the runs, and how many runs met it.
bool PrintTarget(const char* what, const Repeated& repeated, double Figures::*rate,
                 double target) {
  const double figure = repeated.median.*rate;
  const std::vector<Figures>& runs = repeated.runs;
  size_t met = 0;
  for (const Figures& f : runs) met += f.*rate >= target;
  std::printf(
      "  target %-8s 1w large pool, a transaction per operation: %10.0f/s (median) vs >= "
      "%.0f/s: %s (%.0f %%; %zu of %zu runs at or above)\n",
      what, figure, target, figure >= target ? "met" : "MISSED", 100 * figure / target, met,
      runs.size());
  std::fflush(stdout);
  return figure >= target;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"B+-tree benchmark: inserts, lookups, updates, scans; per-op transactions"};
  BenchOptions options;
  app.add_option("--keys", options.keys, "number of 8-byte keys (default: 10000000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ops", options.ops,
                 "lookups and scanned rows per phase, updates half of it (default: --keys; "
                 "a quarter with the small pool)");
  app.add_option("--fibers-per-worker", options.fibers_per_worker, "fibers on each worker")
      ->check(CLI::PositiveNumber);
  app.add_option("--small-pool-fibers-per-worker", options.small_pool_fibers_per_worker,
                 "fibers on each worker with the small pool")
      ->check(CLI::PositiveNumber);
  app.add_option("--dir", options.dir, "directory for the database directories");
  app.add_option("--workers", options.worker_counts, "worker counts to run (default: 1 2)")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--checkpoint-interval-ms", options.checkpoint_interval_ms,
                 "background checkpoints of the API runs (0: none)");
  app.add_option("--checkpoint-spread", options.checkpoint_spread,
                 "a background checkpoint spreads its page writes over this fraction of the "
                 "interval (0: at once)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--steps", options.steps,
                 "STEPS execution teams for the API runs: off, on, or auto (default: off)")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  app.add_option("--ctx-placement", options.ctx_placement,
                 "CTX placement file for --steps (default: the built-in one)")
      ->check(CLI::ExistingFile);
  app.add_option("--miss-interleaving", options.miss_interleaving,
                 "B-tree descents prefetch the leaf and let other fibers run while it arrives: "
                 "off, on, or auto (Options::miss_interleaving; default: auto, the engine's)")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  app.add_option("--writer-quiet-ms", options.writer_quiet_ms,
                 "the background writer writes a page early only once it has not changed for "
                 "this long (0: regardless; default 5000)");
  app.add_option("--prefault-pool", options.prefault_pool,
                 "the API runs back the pool's memory ahead of use (Options::prefault_pool; "
                 "default: true)");
  app.add_option("--repeat", options.repeat,
                 "runs of every configuration with the large pool, each on a fresh database; "
                 "the figures are their medians (default 3)")
      ->check(CLI::Range(1u, 100u));
  app.add_option("--small-pool-repeat", options.small_pool_repeat,
                 "the same for the small-pool configurations (default 1)")
      ->check(CLI::Range(1u, 100u));
  bool quick = false;
  bool no_verify = false;
  bool skip_small_pool = false;
  bool skip_raw = false;
  bool skip_api = false;
  app.add_flag("--quick", quick, "a small configuration for smoke runs (100000 keys)");
  app.add_flag("--no-verify", no_verify, "skip the Verify and row count after each run");
  app.add_flag("--skip-small-pool", skip_small_pool, "only the pool larger than the data");
  app.add_flag("--skip-raw", skip_raw, "only the API runs (no _raw keys)");
  app.add_flag("--skip-api", skip_api, "only the bare-tree runs (no headline keys)");
  CLI11_PARSE(app, argc, argv);
  if (quick && app.count("--keys") == 0) options.keys = 100000;
  options.verify = !no_verify;
  options.small_pool = !skip_small_pool;
  options.raw = !skip_raw;
  options.api = !skip_api;

  std::vector<uint64_t> order(options.keys);
  for (uint64_t i = 0; i < options.keys; ++i) order[i] = i;
  std::mt19937_64 rng(42);
  std::shuffle(order.begin(), order.end(), rng);

  const uint64_t ops = options.ops != 0 ? options.ops : options.keys;
  std::printf(
      "btree benchmark: %llu keys of 8 bytes, %zu-byte values, %llu ops per phase, %u fibers "
      "per worker (%u with the small pool), %u runs of each configuration (%u with the small "
      "pool)\n"
      "  txn: public API, every operation its own serializable transaction (key-range locks, "
      "logged, async commit, STEPS %s); raw: the B-tree core alone; miss interleaving %s\n",
      static_cast<unsigned long long>(options.keys), kValueBytes,
      static_cast<unsigned long long>(ops), options.fibers_per_worker,
      options.small_pool_fibers_per_worker, options.repeat, options.small_pool_repeat,
      options.steps.c_str(),
      options.miss_interleaving.c_str());
  std::fflush(stdout);
  // Pool larger than the data: random inserts leave leaves ~70 % full, so 2x the raw bytes.
  const size_t raw_bytes = options.keys * (8 + kValueBytes + 2 + 4);
  const size_t large_pool = std::max<size_t>(3 * raw_bytes, 64 << 20);
  nlohmann::json json;
  uint64_t data_bytes = 0;  // as the first run laid the data out
  for (unsigned w : options.worker_counts) {
    const std::string suffix = "_" + std::to_string(w) + "w";
    Repeated api, raw;
    if (options.api) {
      api = RunRepeated(options.repeat, "txn", "large pool", w, "", suffix, json,
                        [&] { return RunApi(options, w, large_pool, 0, order); });
      if (data_bytes == 0) data_bytes = api.runs.front().data_bytes;
    }
    if (options.raw) {
      raw = RunRepeated(options.repeat, "raw", "large pool", w, "_raw", suffix, json,
                        [&] { return RunRaw(options, w, large_pool, 0, order); });
      if (data_bytes == 0) data_bytes = raw.runs.front().data_bytes;
    }
    if (options.api && options.raw) PrintCost("large pool", w, api.median, raw.median);
    if (w == 1 && options.api) {
      json["lookups_target_met_1w"] =
          PrintTarget("lookups", api, &Figures::lookups, kTargetLookups1w);
      json["inserts_target_met_1w"] =
          PrintTarget("inserts", api, &Figures::inserts, kTargetInserts1w);
    }
  }
  // At least kFramesPerFiber frames per fiber: every fiber fixes a path's worth of pages (a
  // cursor a leaf and its sibling), and a pool with every frame fixed refuses with Busy. Only
  // tiny --keys reach this floor.
  constexpr size_t kFramesPerFiber = 4;
  const unsigned max_workers =
      *std::max_element(options.worker_counts.begin(), options.worker_counts.end());
  const size_t min_small_pool =
      std::max<size_t>(size_t{max_workers} * options.small_pool_fibers_per_worker * kFramesPerFiber,
                       sm::buffer::BufferPool::kMinFrames * 4) *
      sm::kPageBytes;
  const size_t small_pool = std::max<size_t>(data_bytes / 10, min_small_pool);
  if (options.small_pool) {
    std::printf("  small pool: %zu KiB for %llu MiB of data%s\n", small_pool >> 10,
                static_cast<unsigned long long>(data_bytes >> 20),
                small_pool > data_bytes / 10 ? " (raised to 4 frames per fiber)" : "");
  }
  for (unsigned w : options.worker_counts) {
    if (!options.small_pool) break;
    const std::string suffix = "_" + std::to_string(w) + "w_small_pool";
    Repeated api, raw;
    if (options.api) {
      api = RunRepeated(options.small_pool_repeat, "txn", "small pool", w, "", suffix, json,
                        [&] { return RunApi(options, w, large_pool, small_pool, order); });
    }
    if (options.raw) {
      raw = RunRepeated(options.small_pool_repeat, "raw", "small pool", w, "_raw", suffix, json,
                        [&] { return RunRaw(options, w, large_pool, small_pool, order); });
    }
    if (options.api && options.raw) {
      PrintCost("small pool", w, api.median, raw.median);
    }
  }
  json["keys"] = options.keys;
  json["repeat"] = options.repeat;
  json["small_pool_repeat"] = options.small_pool_repeat;
  json["ops"] = ops;
  json["value_bytes"] = kValueBytes;
  json["small_pool_bytes"] = options.small_pool ? small_pool : 0;
  json["txn_per_op"] = options.api;
  json["locking"] = options.api;
  json["logging"] = options.api;
  json["commit_mode"] = sm::CommitModeName(sm::CommitMode::kAsync);
  json["steps"] = options.steps;
  json["miss_interleaving"] = options.miss_interleaving;
  sm::bench::PrintJsonLine(json);
  return 0;
}
