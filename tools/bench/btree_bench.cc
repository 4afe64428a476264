// Benchmark "btree": B+-tree throughput on N 8-byte keys with 100-byte values.
//
//   inserts_per_s_<w>w     inserts in random order: all N keys into an empty tree (large pool)
//   lookups_per_s_<w>w     M point lookups of random present keys
//   updates_per_s_<w>w     M / 2 updates of random present keys (same value size)
//   scan_rows_per_s_<w>w   M rows read by cursors, 100 rows per seek from a random key
// for <w> = 1 and 2 workers (threads::Runtime, --fibers-per-worker fibers each, the work split
// among the fibers), once with a buffer pool larger than the data (M = N) and once (suffix
// _small_pool) with a pool of 10 % of the data (--small-pool-fibers-per-worker fibers each to
// keep reads in flight), where descents evict and read pages from the volume file (under --dir,
// real I/O through the reactor). Each configuration builds its own tree. The small-pool runs
// load 7/8 of the keys with the large pool (untimed), write the pages back, switch to the small
// pool, and then time the inserts of the last N / 8 keys and M = N / 4 of each other operation:
// a database larger than memory, without minutes of loading through a 10 % pool. The
// background writer runs only with the small pool.
//
// The tree runs without locking and without logging (BTree core only: those are wired in
// later), which the output says. Figures are wall time over the whole phase, one run each:
// compare ratios within one run on a shared machine.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "index/btree.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/io/file.h"
#include "sm/space/volume.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"

using namespace sm;
using sm::bench::NowSeconds;

namespace {

constexpr size_t kValueBytes = 100;
constexpr uint64_t kScanRowsPerSeek = 100;

[[noreturn]] void Die(const char* what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

std::string Key(uint64_t n) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) key[i] = static_cast<char>(n & 0xff);
  return key;
}

struct Options {
  uint64_t keys = 1000000;
  unsigned fibers_per_worker = 4;
  // With the small pool most operations wait for a read: more fibers keep more reads in flight.
  unsigned small_pool_fibers_per_worker = 32;
  std::string dir = "/tmp";
  bool verify = true;
};

struct Figures {
  double inserts = 0, lookups = 0, updates = 0, scan_rows = 0;
  uint64_t pages = 0;
  uint32_t height = 0;
  uint64_t reads = 0, writes = 0;
  uint64_t switches = 0, remote_wakeups = 0, idle_sleeps = 0;  // fiber scheduling, all phases
  uint64_t pessimistic = 0;                                    // write restarts
};

// One database: a volume file in a fresh directory, a pool, a tree.
class Database {
 public:
  Database(const std::string& parent, size_t pool_bytes) {
    std::string tmpl = parent + "/sm-btree-bench-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) Die("mkdtemp", Status::IOError(parent, errno));
    dir_ = buf.data();
    space::VolumeOptions volume_options;
    volume_options.extent_pages = 4096;
    Status s = space::Volume::Create(io::FileSystem::Default(), dir_ + "/btree.vol", volume_options,
                                     &volume_);
    if (!s.ok()) Die("create volume", s);
    MakePool(pool_bytes);
    s = index::BTree::Create(pool_.get(), {}, &root_, &tree_);
    if (!s.ok()) Die("create tree", s);
  }
  ~Database() {
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
    Status s = pool_->FlushAll();
    if (!s.ok()) Die("flush", s);
    tree_.reset();
    pool_.reset();
    MakePool(pool_bytes);
    pool_->StartWriter(nullptr);
    s = index::BTree::Open(pool_.get(), root_, {}, &tree_);
    if (!s.ok()) Die("open tree", s);
  }

  index::BTree& tree() { return *tree_; }
  buffer::BufferPool& pool() { return *pool_; }

 private:
  void MakePool(size_t pool_bytes) {
    buffer::BufferPoolOptions pool_options;
    pool_options.pool_bytes = pool_bytes;
    Status s = buffer::BufferPool::Create(volume_.get(), pool_options, &pool_);
    if (!s.ok()) Die("create pool", s);
  }

  std::string dir_;
  std::unique_ptr<space::Volume> volume_;
  std::unique_ptr<buffer::BufferPool> pool_;
  PageId root_;
  std::unique_ptr<index::BTree> tree_;
};

// Runs body(fiber, fibers) on every fiber of the runtime; returns the wall time in seconds.
template <typename Body>
double Phase(threads::Runtime& runtime, unsigned fibers, Body body) {
  threads::WaitGroup done;
  done.Add(fibers);
  double t0 = NowSeconds();
  for (unsigned f = 0; f < fibers; ++f) {
    runtime.Spawn(
        [&, f] {
          body(f, fibers);
          done.Done();
        },
        static_cast<int>(f % runtime.worker_count()));
  }
  done.Wait();
  return NowSeconds() - t0;
}

// Inserts order[begin, end) from every fiber of the runtime; returns the seconds.
double InsertKeys(threads::Runtime& runtime, unsigned fibers, index::BTree& tree,
                  const std::vector<uint64_t>& order, uint64_t begin, uint64_t end) {
  const std::string value(kValueBytes, 'v');
  return Phase(runtime, fibers, [&](unsigned f, unsigned count) {
    for (uint64_t i = begin + f; i < end; i += count) {
      Status st = tree.Insert(Key(order[i]), value);
      if (!st.ok()) Die("insert", st);
    }
  });
}

// small_pool_bytes == 0: the whole run with a pool of large_pool_bytes. Else the first 7/8 of
// the keys are loaded (untimed) with the large pool, the pages written back, and the rest of
// the run (inserts of the last 1/8 included) uses a pool of small_pool_bytes.
Figures RunConfiguration(const Options& options, unsigned workers, size_t large_pool_bytes,
                         size_t small_pool_bytes, const std::vector<uint64_t>& order) {
  const bool small_pool = small_pool_bytes != 0;
  Database db(options.dir, large_pool_bytes);
  threads::RuntimeOptions runtime_options;
  runtime_options.workers = workers;
  std::unique_ptr<threads::Runtime> runtime;
  Status s = threads::Runtime::Create(runtime_options, &runtime);
  if (!s.ok()) Die("runtime", s);
  const unsigned fibers =
      workers * (small_pool ? options.small_pool_fibers_per_worker : options.fibers_per_worker);
  const uint64_t n = order.size();
  // Operations per phase after the load: with the small pool a quarter, to keep the run short
  // (the rates are per operation either way).
  const uint64_t ops = small_pool ? n / 4 : n;
  Figures fig;
  uint64_t preloaded = 0;
  if (small_pool) {
    preloaded = n - n / 8;
    InsertKeys(*runtime, fibers, db.tree(), order, 0, preloaded);
    db.ShrinkPool(small_pool_bytes);
  }
  index::BTree& tree = db.tree();
  double secs = InsertKeys(*runtime, fibers, tree, order, preloaded, n);
  fig.inserts = double(n - preloaded) / secs;

  secs = Phase(*runtime, fibers, [&](unsigned f, unsigned count) {
    std::mt19937_64 rng(1000 + f);
    std::string got;
    for (uint64_t i = f; i < ops; i += count) {
      Status st = tree.Lookup(Key(rng() % n), &got);
      if (!st.ok()) Die("lookup", st);
    }
  });
  fig.lookups = double(ops) / secs;

  secs = Phase(*runtime, fibers, [&](unsigned f, unsigned count) {
    std::mt19937_64 rng(2000 + f);
    std::string updated(kValueBytes, static_cast<char>('a' + f % 26));
    for (uint64_t i = f; i < ops / 2; i += count) {
      Status st = tree.Update(Key(rng() % n), updated);
      if (!st.ok()) Die("update", st);
    }
  });
  fig.updates = double(ops / 2) / secs;

  std::atomic<uint64_t> rows{0};
  secs = Phase(*runtime, fibers, [&](unsigned f, unsigned count) {
    std::mt19937_64 rng(3000 + f);
    uint64_t mine = 0;
    for (uint64_t i = f * kScanRowsPerSeek; i < ops; i += count * kScanRowsPerSeek) {
      index::Cursor cursor(&tree);
      Status st = cursor.Seek(Key(rng() % n));
      for (uint64_t r = 0; st.ok() && cursor.Valid() && r < kScanRowsPerSeek; ++r) {
        ++mine;
        st = cursor.Next();
      }
      if (!st.ok()) Die("scan", st);
    }
    rows.fetch_add(mine, std::memory_order_relaxed);
  });
  fig.scan_rows = double(rows.load()) / secs;
  for (unsigned w = 0; w < workers; ++w) {
    const threads::WorkerStats& ws = runtime->worker(w).stats();
    fig.switches += ws.scheduler_switches + ws.direct_switches;
    fig.remote_wakeups += ws.remote_wakeups;
    fig.idle_sleeps += ws.idle_sleeps;
  }
  fig.pessimistic = tree.counters().pessimistic_descents;
  runtime->Shutdown();

  index::BtreeStats stats;
  if (options.verify) {
    s = tree.Verify(&stats);
    if (!s.ok()) Die("verify", s);
    if (stats.records != n) Die("verify", Status::Corruption("record count differs"));
  } else {
    s = tree.GetStats(&stats);
    if (!s.ok()) Die("stats", s);
  }
  fig.pages = stats.pages();
  fig.height = stats.height;
  buffer::BufferPoolStats pool_stats = db.pool().stats();
  fig.reads = pool_stats.reads;
  fig.writes = pool_stats.writes;
  return fig;
}

void Print(const char* name, unsigned workers, const Figures& f) {
  std::printf(
      "  %-12s %uw  inserts %10.0f/s  lookups %10.0f/s  updates %10.0f/s  "
      "scan %11.0f rows/s\n",
      name, workers, f.inserts, f.lookups, f.updates, f.scan_rows);
  std::printf(
      "  %-12s     height %u, %llu pages, %llu reads, %llu writes; %llu pessimistic "
      "writes; %llu fiber switches, %llu cross-worker wake-ups, %llu idle sleeps\n",
      "", f.height, static_cast<unsigned long long>(f.pages),
      static_cast<unsigned long long>(f.reads), static_cast<unsigned long long>(f.writes),
      static_cast<unsigned long long>(f.pessimistic), static_cast<unsigned long long>(f.switches),
      static_cast<unsigned long long>(f.remote_wakeups),
      static_cast<unsigned long long>(f.idle_sleeps));
  std::fflush(stdout);
}

void AddJson(nlohmann::json& json, const std::string& suffix, const Figures& f) {
  json["lookups_per_s" + suffix] = f.lookups;
  json["inserts_per_s" + suffix] = f.inserts;
  json["updates_per_s" + suffix] = f.updates;
  json["scan_rows_per_s" + suffix] = f.scan_rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"B+-tree benchmark: inserts, lookups, updates, scans"};
  Options options;
  app.add_option("--keys", options.keys, "number of 8-byte keys (the issue's size: 10000000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--fibers-per-worker", options.fibers_per_worker, "fibers on each worker")
      ->check(CLI::PositiveNumber);
  app.add_option("--small-pool-fibers-per-worker", options.small_pool_fibers_per_worker,
                 "fibers on each worker with the small pool")
      ->check(CLI::PositiveNumber);
  app.add_option("--dir", options.dir, "directory for the volume files");
  bool no_verify = false;
  bool skip_small_pool = false;
  app.add_flag("--no-verify", no_verify, "skip the Verify after each configuration");
  app.add_flag("--skip-small-pool", skip_small_pool, "only the pool larger than the data");
  CLI11_PARSE(app, argc, argv);
  options.verify = !no_verify;

  std::vector<uint64_t> order(options.keys);
  for (uint64_t i = 0; i < options.keys; ++i) order[i] = i;
  std::mt19937_64 rng(42);
  std::shuffle(order.begin(), order.end(), rng);

  std::printf(
      "btree benchmark: %llu keys of 8 bytes, %zu-byte values, %u fibers per worker "
      "(%u with the small pool)\n",
      static_cast<unsigned long long>(options.keys), kValueBytes, options.fibers_per_worker,
      options.small_pool_fibers_per_worker);
  std::printf(
      "  no locking and no logging yet: B-tree core only (OpContext without hooks, "
      "no BtreeLogger)\n");
  std::fflush(stdout);
  // Pool larger than the data: random inserts leave leaves ~70 % full, so 2x the raw bytes.
  size_t raw_bytes = options.keys * (8 + kValueBytes + 2 + 4);
  size_t large_pool = std::max<size_t>(3 * raw_bytes, 64 << 20);
  nlohmann::json json;
  Figures large[2];
  for (unsigned w = 1; w <= 2; ++w) {
    large[w - 1] = RunConfiguration(options, w, large_pool, 0, order);
    Print("large pool", w, large[w - 1]);
    AddJson(json, "_" + std::to_string(w) + "w", large[w - 1]);
  }
  // 10 % of the data as the 1-worker run laid it out.
  size_t small_pool = std::max<size_t>(large[0].pages * kPageBytes / 10,
                                       buffer::BufferPool::kMinFrames * 4 * kPageBytes);
  std::printf("  small pool: %zu MiB for %llu MiB of pages\n", small_pool >> 20,
              static_cast<unsigned long long>(large[0].pages * kPageBytes >> 20));
  for (unsigned w = 1; w <= 2 && !skip_small_pool; ++w) {
    Figures f = RunConfiguration(options, w, large_pool, small_pool, order);
    Print("small pool", w, f);
    AddJson(json, "_" + std::to_string(w) + "w_small_pool", f);
  }
  json["keys"] = options.keys;
  json["value_bytes"] = kValueBytes;
  json["locking"] = false;
  json["logging"] = false;
  sm::bench::PrintJsonLine(json);
  return 0;
}
