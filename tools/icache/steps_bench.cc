// steps_bench: the STEPS paper's index-fetch microbenchmark (Harizopoulos & Ailamaki, VLDB 2004,
// section 3.2, Figure 5) on our engine, measured with valgrind's cache and branch simulators.
//
// The table: --rows rows (default 100,000) of 25 integer columns (a 100-byte value) under a
// 4-byte big-endian key, in a database under --dir, made once natively and reused.
//
// A round, for N fibers on one worker (Options::workers = 1): every fiber begins a transaction
// (serializable: key locks are taken) and waits at a barrier; then each performs --fetches index
// fetches (Table::Get of a key from its own seeded stream, the same keys in both modes) and
// waits at a second barrier; then all commit. The measured region is from the first barrier's
// release to the second's last arrival: only the index fetches (and the switching among them).
//   serial  STEPS off: the fibers run one after another (each its whole run of fetches), as the
//           paper's Shore baseline does; the CTX sites cost a load and a branch.
//   steps   STEPS on (the default CTX placement or --ctx-placement): the fibers form a team per
//           fetch and switch at the enabled CTX sites.
// Every round runs twice and only the second is measured (warm caches, the paper's section
// 3.2.2 onward); the pool holds the whole table (a scan reads it in before the rounds).
//
// The program runs itself under valgrind --tool=callgrind once per cache geometry (--geometry,
// repeatable; default 32 KiB 8-way, then the paper's 16 KiB 4-way and 64 KiB 2-way), each round a
// dumped part (callgrind_parts.h), and prints per geometry and fiber count: L1-I misses, L1-D
// misses, instructions and mispredicted branches per fetch, serial and steps; the reduction; and
// the per-additional-fiber slope of L1-I misses ((misses(N) - misses(1)) / (N - 1) per fetch of
// a fiber) next to the serial one. The last line is JSON (keys in PrintJson).
//
// Targets: 10 fibers at 32 KiB 8-way: >= 85 % fewer L1-I misses than serial, and a
// per-additional-fiber slope <= 10 % of the serial one. The program says whether they are met.
#include <unistd.h>
#include <valgrind/callgrind.h>
#include <valgrind/valgrind.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sm/sm.h"
#include "steps/placement.h"
#include "threads/baton.h"
#include "threads/ctx_point.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"
#include "tools/icache/callgrind_parts.h"
#include "tools/icache/tpcc_runs.h"

namespace sm::icache {
namespace {

constexpr int kColumns = 25;
constexpr const char* kTable = "fetch25";
constexpr double kTargetReductionPct = 85;
constexpr double kTargetSlopePct = 10;

struct BenchOptions {
  std::string dir = "./data/icache-fetch";
  uint32_t rows = 100000;
  uint32_t fetches = 100;
  std::vector<unsigned> fibers = {1, 2, 4, 8, 10, 16, 20};
  std::vector<std::string> geometries;  // I1 geometries; empty: the three defaults
  std::string ctx_placement;
  uint32_t team_size = 32;
  bool keep = false;
  bool quick = false;
  bool fetch = true;  // the index-fetch microbenchmark (--no-fetch skips it)
  TpccRunOptions tpcc;  // with tpcc.tpcc set: also the TPC-C runs
  // TPC-C configurations, warehouses x users: the default (1 x 10; keys without a suffix),
  // the paper's (10 x 100; keys ending in _10wh), and the default's ten fibers spread
  // over ten warehouses (10 x 10; keys ending in _10wh_10u): teams of the same size with no
  // hot warehouse row, which shows what the lock conflicts of one warehouse cost STEPS.
  std::vector<std::string> tpcc_configs = {"1x10", "10x100", "10x10"};
  // L1-I geometries of the TPC-C runs: 32 KiB 8-way unless given (keys of another
  // end in its suffix, e.g. _32k512w). A fully associative one (32768,512,64) leaves out the
  // conflict misses, which move with the code layout whenever the code changes.
  std::vector<std::string> tpcc_geometries = {Geometry{}.i1};
  // TPC-C workloads by name (FindTpccWorkload): Payment, the standard mix and the paper's.
  std::vector<std::string> tpcc_workloads = {"payment", "mix", "mix_no_delivery"};
  int wall_repeat = 0;  // > 0: also the wall-clock comparison, this many alternating runs
  double wall_seconds = 3;
  // Internal: run the rounds (under valgrind) of these modes and operations.
  bool inner = false;
  std::vector<std::string> modes = {"serial", "steps"};
  std::vector<std::string> ops = {"fetch"};
  bool list_sites = false;  // print the CTX sites each operation reaches, in order
  bool list_ctx_points = false;  // print every CTX site compiled into the engine
  bool fragments = false;  // (under valgrind) dump each fragment between CTX points
  bool prepare_only = false;  // make the table and stop
};

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "steps_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

std::string Key(uint32_t n) {
  char b[4] = {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
  return std::string(b, 4);
}

std::string Row(uint32_t n) {
  std::string value(kColumns * 4, '\0');
  for (int c = 0; c < kColumns; ++c) {
    uint32_t v = n * kColumns + c;
    std::memcpy(&value[c * 4], &v, 4);
  }
  return value;
}

Options DbOptions(const BenchOptions& bo, bool steps) {
  Options o;
  o.path = bo.dir;
  o.workers = 1;
  o.commit_mode = CommitMode::kNone;  // nothing here waits for the log
  o.checkpoint_interval = std::chrono::milliseconds(0);
  o.buffer_pool_bytes = 64u << 20;  // the whole table stays resident
  // A round's log records stay far below a quarter of the log buffer (QuietLog) and within
  // one segment, so that the flusher never wakes during a round.
  o.log_buffer_bytes = 8u << 20;
  o.log_segment_bytes = 64ull << 20;
  o.background_write_interval = std::chrono::milliseconds(0);  // no timer-driven writes
  // Free space for every page the rounds' splits allocate: a fiber that grew the file would
  // wait for another thread, an I/O thread, and the rounds' counts would depend on when the
  // OS ran it.
  o.reserve_free_bytes = 64u << 20;
  // Miss interleaving's adaptive mode decides by the clock, which valgrind slows unevenly.
  o.miss_interleaving = MissInterleaving::kOff;
  o.steps = steps;
  o.steps_team_size = bo.team_size;
  o.ctx_placement = bo.ctx_placement;
  return o;
}

// Makes the table unless the database under --dir has it with --rows rows.
void Prepare(const BenchOptions& bo) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(DbOptions(bo, false), &db);
  if (!s.ok()) Die("open " + bo.dir, s);
  Table* t = nullptr;
  if (db->OpenTable(kTable, &t).ok()) {
    std::unique_ptr<Transaction> txn;
    std::string v;
    if (!db->Begin(&txn).ok()) Die("begin", Status::Busy("no transaction"));
    bool last = t->Get(txn.get(), Key(bo.rows - 1), &v).ok();
    bool beyond = t->Get(txn.get(), Key(bo.rows), &v).ok();
    txn->Commit().PermitUnchecked();
    if (last && !beyond) return;
    std::fprintf(stderr, "steps_bench: %s holds another table size: remove it or pick --dir\n",
                 bo.dir.c_str());
    std::exit(2);
  }
  std::printf("making %u rows of %d integer columns in %s ...\n", bo.rows, kColumns,
              bo.dir.c_str());
  if (Status c = db->CreateTable(kTable, &t); !c.ok()) Die("create table", c);
  for (uint32_t first = 0; first < bo.rows; first += 1000) {
    std::unique_ptr<Transaction> txn;
    if (Status b = db->Begin(&txn); !b.ok()) Die("begin", b);
    for (uint32_t n = first; n < std::min(bo.rows, first + 1000); ++n) {
      if (Status i = t->Insert(txn.get(), Key(n), Row(n)); !i.ok()) Die("insert", i);
    }
    if (Status c = txn->Commit(); !c.ok()) Die("commit", c);
  }
  if (Status c = db->Close(); !c.ok()) Die("close", c);
}

// Reads every page of the table into the pool.
void WarmPool(Database* db, Table* t) {
  std::unique_ptr<Transaction> txn;
  if (Status s = db->Begin(&txn); !s.ok()) Die("begin", s);
  std::unique_ptr<Cursor> cursor;
  if (Status s = t->NewCursor(txn.get(), ScanOptions::All(), &cursor); !s.ok()) Die("scan", s);
  while (cursor->Valid()) {
    if (Status s = cursor->Next(); !s.ok()) Die("scan", s);
  }
  cursor.reset();
  if (Status s = txn->Commit(); !s.ok()) Die("commit", s);
}

// The operations a round can measure (STEPS' operations on one table).
const std::vector<std::string> kOps = {"fetch", "insert", "update", "delete", "scan"};
constexpr uint32_t kScanRows = 10;

// A key that sorts just after row n's and before row n + 1's: inserts and deletes of these
// touch a gap no other fiber touches (unless two draw the same n), so they take no conflicting
// next-key locks.
std::string GapKey(uint32_t n) { return Key(n) + '\x01'; }

// Runs `count` operations `op` in `txn`, rows drawn from `rng`; `around`, if set, is called
// with true just before each operation and with false just after it.
void RunOps(const std::string& op, Table* t, Transaction* txn, std::mt19937& rng,
            uint32_t rows, uint32_t count, void (*around)(bool before) = nullptr) {
  std::string value;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t n = rng() % rows;
    Status s;
    if (around != nullptr) around(true);
    if (op == "fetch") {
      s = t->Get(txn, Key(n), &value);
    } else if (op == "update") {
      s = t->Update(txn, Key(n), Row(n + 1));
    } else if (op == "insert") {
      s = t->Insert(txn, GapKey(n), Row(n));
    } else if (op == "delete") {
      s = t->Delete(txn, GapKey(n));
    } else {  // scan
      std::unique_ptr<Cursor> cursor;
      s = t->NewCursor(txn, ScanOptions::Range(Key(n), Key(n + kScanRows)), &cursor);
      while (s.ok() && cursor->Valid()) s = cursor->Next();
    }
    if (around != nullptr) around(false);
    if (!s.ok()) Die(op, s);
  }
}

// A round's transaction, begun on the calling fiber; for a delete round the keys it will delete
// (the first `bo.fetches` of `seed`'s stream) are inserted first.
std::unique_ptr<Transaction> BeginRound(Database* db, Table* t, const BenchOptions& bo,
                                        const std::string& op, uint32_t seed) {
  std::unique_ptr<Transaction> txn;
  if (Status s = db->Begin(&txn); !s.ok()) Die("begin", s);
  if (op == "delete") {
    std::mt19937 rng(seed);
    RunOps("insert", t, txn.get(), rng, bo.rows, bo.fetches);
  }
  return txn;
}

// Ends it: an insert round's keys are deleted again, and the transaction commits.
void EndRound(Table* t, const BenchOptions& bo, const std::string& op, uint32_t seed,
              Transaction* txn) {
  if (op == "insert") {
    std::mt19937 again(seed);
    RunOps("delete", t, txn, again, bo.rows, bo.fetches);
  }
  if (Status s = txn->Commit(); !s.ok()) Die("commit", s);
}

// Makes the log's flusher idle, so that no other thread runs during a round: the measured
// counts are then the worker's alone (a flusher woken by the log's volume would run when the OS
// lets it, evicting the worker's code at a different point each time). A durable commit on the
// calling thread has the log written and synced to its end; the sleep lets the flusher finish
// its round and wait again. A round's own log records stay far below the volume that wakes the
// flusher (Options::log_buffer_bytes / 4).
void QuietLog(Database* db, Table* t) {
  std::unique_ptr<Transaction> txn;
  std::string value;
  if (Status s = db->Begin(&txn); !s.ok()) Die("begin", s);
  if (Status s = t->Get(txn.get(), Key(0), &value); !s.ok()) Die("quiet log", s);
  if (Status s = t->Update(txn.get(), Key(0), value); !s.ok()) Die("quiet log", s);
  if (Status s = txn->Commit(CommitMode::kDurable); !s.ok()) Die("quiet log", s);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Evicts everything from a simulated instruction cache of up to 128 KiB (any associativity):
// 128 KiB of straight-line code, every line of it executed once.
[[gnu::noinline]] void ScrubInstructionCache() {
  asm volatile(".rept 131072\n\tnop\n\t.endr" ::: "memory");
}

// Runs `body` on a fiber of the worker and waits for it, so that the measured counts are the
// same in every run, whatever the OS does with the other threads:
//  - the log is quiet (QuietLog), and the fiber sleeps a moment before it starts, so that the
//    calling thread has gone to sleep in its wait too: from then on only the worker runs;
//  - ScrubInstructionCache then leaves no trace of what ran before, on other threads in an
//    order the OS chose, in the simulated cache;
//  - a warm-up round and its measured round run in one `body`, with only the worker running
//    between them, and the fibers a round spawns are queued before any of them runs, so they
//    begin, and form teams, in the same order.
void OnWorker(Database* db, Table* t, const std::function<void()>& body) {
  QuietLog(db, t);
  threads::WaitGroup done;
  done.Add(1);
  Status spawned = db->Spawn(
      [&] {
        threads::SleepFor(std::chrono::milliseconds(20));
        ScrubInstructionCache();
        body();
        done.Done();
      },
      0);
  if (!spawned.ok()) Die("spawn", spawned);
  done.Wait();
}

// One round of N fibers (file comment) of operation `op`. A round leaves the table as it found
// it: the keys an insert round adds are deleted after the measured region, and those a delete
// round removes are inserted before it, in the same transactions. With `label`, the region is
// collected and dumped as a part with that description. Runs on a fiber of the worker
// (OnWorker).
void Round(Database* db, Table* t, const BenchOptions& bo, const std::string& op,
           unsigned fibers, const std::string& label) {
  threads::Event start, end;
  threads::WaitGroup done;
  int arrived = 0, finished = 0;  // fibers of one worker: no atomics needed
  done.Add(fibers);
  for (unsigned f = 0; f < fibers; ++f) {
    Status spawned = db->Spawn(
        [&, f] {
          const uint32_t seed = 1000 * fibers + f;
          std::unique_ptr<Transaction> txn = BeginRound(db, t, bo, op, seed);
          if (++arrived == int(fibers)) {
            if (!label.empty()) CALLGRIND_TOGGLE_COLLECT;
            start.Set();
          } else {
            start.Wait();
          }
          std::mt19937 rng(seed);
          RunOps(op, t, txn.get(), rng, bo.rows, bo.fetches);
          if (++finished == int(fibers)) {
            if (!label.empty()) {
              CALLGRIND_DUMP_STATS_AT(label.c_str());
              CALLGRIND_TOGGLE_COLLECT;
            }
            end.Set();
          } else {
            end.Wait();
          }
          EndRound(t, bo, op, seed, txn.get());
          done.Done();
        },
        0);
    if (!spawned.ok()) Die("spawn", spawned);
  }
  done.Wait();
}

std::string Label(bool steps, const std::string& op, unsigned fibers) {
  return std::string(steps ? "steps " : "serial ") + op + " " + std::to_string(fibers);
}

// Under valgrind: the modes asked for, every operation and fiber count, parts labelled
// "<mode> <op> <N>".
void RunInner(const BenchOptions& bo) {
  for (bool steps : {false, true}) {
    if (std::find(bo.modes.begin(), bo.modes.end(), steps ? "steps" : "serial") == bo.modes.end()) {
      continue;
    }
    std::unique_ptr<Database> db;
    if (Status s = Database::Open(DbOptions(bo, steps), &db); !s.ok()) Die("open", s);
    Table* t = nullptr;
    if (Status s = db->OpenTable(kTable, &t); !s.ok()) Die("open table", s);
    WarmPool(db.get(), t);
    for (const std::string& op : bo.ops) {
      for (unsigned n : bo.fibers) {
        OnWorker(db.get(), t, [&] {
          Round(db.get(), t, bo, op, n, "");  // warm-up
          Round(db.get(), t, bo, op, n, Label(steps, op, n));
        });
      }
    }
    if (Status s = db->Close(); !s.ok()) Die("close", s);
  }
}

// Natively: the CTX sites each operation passes, in the order it first reaches them (every
// site enabled, a recording handler installed, one operation of each kind on a plain thread).
std::vector<std::string> g_site_trace;
void RecordSite(threads::CtxSite& site) {
  if (std::find(g_site_trace.begin(), g_site_trace.end(), site.name) == g_site_trace.end()) {
    g_site_trace.push_back(site.name);
  }
}

void ListSites(const BenchOptions& bo) {
  std::unique_ptr<Database> db;
  if (Status s = Database::Open(DbOptions(bo, false), &db); !s.ok()) Die("open", s);
  Table* t = nullptr;
  if (Status s = db->OpenTable(kTable, &t); !s.ok()) Die("open table", s);
  threads::SetAllCtxSitesEnabled(true);
  threads::SetCtxHandler(&RecordSite);
  for (const std::string& op : bo.ops) {
    std::unique_ptr<Transaction> txn;
    if (Status s = db->Begin(&txn); !s.ok()) Die("begin", s);
    std::mt19937 rng(7), again(7);
    if (op == "delete") RunOps("insert", t, txn.get(), rng, bo.rows, 1);
    g_site_trace.clear();
    RunOps(op, t, txn.get(), op == "delete" ? again : rng, bo.rows, 1);
    for (const std::string& site : g_site_trace) std::printf("%s %s\n", op.c_str(), site.c_str());
    if (Status s = txn->Abort(); !s.ok()) Die("abort", s);
  }
  threads::SetCtxHandler(nullptr);
  threads::SetAllCtxSitesEnabled(false);
  if (Status s = db->Close(); !s.ok()) Die("close", s);
}

// Under valgrind (--fragments): the fragments of each operation between consecutive CTX points,
// each a dumped part. One fiber runs --fetches operations of each kind serially (STEPS off), a
// handler of its own installed at the enabled sites. Collection is on only during an operation;
// at each site the handler dumps the fragment that ends there, and the operation's end dumps
// the last one, labelled "frag <pass> <op> <from> <to>" (from "start", to "end"). Two passes:
// "whole" with no site enabled (each operation one fragment) and "placed" with the sites of
// --ctx-placement. Run with --dump-instr=yes, each part names the instruction-cache lines its
// fragment executed (ctx_place counts them as the footprint) and its L1-I misses.
struct FragmentTrace {
  std::string pass_op;  // "<pass> <op>" while an operation is measured, else empty
  std::string from;     // the site the current fragment started at
  std::thread::id worker;
};
FragmentTrace g_fragment;

void DumpFragment(const char* to) {
  const std::string label = "frag " + g_fragment.pass_op + " " + g_fragment.from + " " + to;
  CALLGRIND_DUMP_STATS_AT(label.c_str());
}

void OnFragmentCtx(threads::CtxSite& site) {
  if (g_fragment.pass_op.empty() || std::this_thread::get_id() != g_fragment.worker) return;
  DumpFragment(site.name);
  g_fragment.from = site.name;
}

void AroundFragmentOp(bool before) {
  if (before) {
    g_fragment.from = "start";
    CALLGRIND_TOGGLE_COLLECT;
  } else {
    DumpFragment("end");
    CALLGRIND_TOGGLE_COLLECT;
  }
}

// One fiber runs --fetches operations `op` (measured under `pass_op` unless empty), leaving the
// table as it found it (BeginRound, EndRound). Runs on a fiber of the worker (OnWorker).
void FragmentRound(Database* db, Table* t, const BenchOptions& bo, const std::string& op,
                   const std::string& pass_op) {
  const uint32_t seed = 4242;
  std::unique_ptr<Transaction> txn = BeginRound(db, t, bo, op, seed);
  g_fragment = {pass_op, "start", std::this_thread::get_id()};
  std::mt19937 rng(seed);
  RunOps(op, t, txn.get(), rng, bo.rows, bo.fetches,
         pass_op.empty() ? nullptr : &AroundFragmentOp);
  g_fragment.pass_op.clear();
  EndRound(t, bo, op, seed, txn.get());
}

void RunFragments(const BenchOptions& bo) {
  std::unique_ptr<Database> db;
  if (Status s = Database::Open(DbOptions(bo, false), &db); !s.ok()) Die("open", s);
  Table* t = nullptr;
  if (Status s = db->OpenTable(kTable, &t); !s.ok()) Die("open table", s);
  WarmPool(db.get(), t);
  steps::Placement placed;
  if (!bo.ctx_placement.empty()) {
    if (Status s = steps::ReadPlacement(bo.ctx_placement, &placed); !s.ok()) Die("placement", s);
  }
  threads::SetCtxHandler(&OnFragmentCtx);
  for (const auto& [pass, placement] : {std::pair{"whole", steps::Placement{}},
                                        std::pair{"placed", placed}}) {
    if (Status s = steps::ApplyPlacement(placement); !s.ok()) Die("placement", s);
    for (const std::string& op : bo.ops) {
      OnWorker(db.get(), t, [&] {
        FragmentRound(db.get(), t, bo, op, "");  // warm-up
        FragmentRound(db.get(), t, bo, op, std::string(pass) + " " + op);
      });
    }
  }
  threads::SetCtxHandler(nullptr);
  if (Status s = steps::ApplyPlacement(steps::Placement{}); !s.ok()) Die("placement", s);
  if (Status s = db->Close(); !s.ok()) Die("close", s);
}

struct GeometryResult {
  Geometry g;
  std::map<std::string, Counters> parts;
  const Counters& At(bool steps, unsigned n) const {
    static const Counters kEmpty;
    auto it = parts.find(Label(steps, "fetch", n));
    return it == parts.end() ? kEmpty : it->second;
  }
  // L1-I misses per additional fiber, per fetch of that fiber: (m(N) - m(1)) / (N - 1) / fetches.
  double Slope(bool steps, unsigned n, uint32_t fetches) const {
    if (n <= 1) return 0;
    double extra = double(At(steps, n).L1iMisses()) - double(At(steps, 1).L1iMisses());
    return extra / double(n - 1) / double(fetches);
  }
};

void PrintGeometry(const GeometryResult& r, const BenchOptions& bo) {
  std::printf("\nL1-I %s (--I1=%s --D1=%s --LL=%s), %u fetches per fiber, per fetch:\n",
              r.g.Name().c_str(), r.g.i1.c_str(), r.g.d1.c_str(), r.g.ll.c_str(), bo.fetches);
  std::printf("%7s | %9s %9s %7s | %9s %9s %7s | %8s %8s | %8s %8s | %9s\n", "fibers",
              "L1-I ser", "L1-I stp", "red %", "mispr ser", "mispr stp", "red %", "L1-D ser",
              "L1-D stp", "instr ser", "instr stp", "slope s/s");
  for (unsigned n : bo.fibers) {
    const Counters& a = r.At(false, n);
    const Counters& b = r.At(true, n);
    double k = double(n) * bo.fetches;
    std::printf("%7u | %9.1f %9.1f %7.1f | %9.1f %9.1f %7.1f | %8.1f %8.1f | %8.0f %8.0f |",
                n, a.L1iMisses() / k, b.L1iMisses() / k,
                ReductionPct(a.L1iMisses(), b.L1iMisses()), a.Mispredicts() / k,
                b.Mispredicts() / k, ReductionPct(a.Mispredicts(), b.Mispredicts()),
                a.L1dMisses() / k, b.L1dMisses() / k, a.Instructions() / k,
                b.Instructions() / k);
    if (n > 1) {
      std::printf(" %4.1f/%4.1f", r.Slope(false, n, bo.fetches), r.Slope(true, n, bo.fetches));
    }
    std::printf("\n");
  }
}

nlohmann::json Figures(const std::vector<GeometryResult>& results, const BenchOptions& bo,
                       unsigned n) {
  nlohmann::json j;
  for (const GeometryResult& r : results) {
    const Counters& a = r.At(false, n);
    const Counters& b = r.At(true, n);
    const std::string sfx = r.g.Suffix();
    double k = double(n) * bo.fetches;
    j["index_fetch_l1i_reduction_pct" + sfx] = ReductionPct(a.L1iMisses(), b.L1iMisses());
    double serial_slope = r.Slope(false, n, bo.fetches);
    j["index_fetch_per_extra_fiber_pct" + sfx] =
        serial_slope == 0 ? 0.0 : 100.0 * r.Slope(true, n, bo.fetches) / serial_slope;
    j["index_fetch_l1i_misses_per_fetch_serial" + sfx] = a.L1iMisses() / k;
    j["index_fetch_l1i_misses_per_fetch_steps" + sfx] = b.L1iMisses() / k;
    j["index_fetch_mispredict_reduction_pct" + sfx] = ReductionPct(a.Mispredicts(), b.Mispredicts());
    j["index_fetch_instructions_increase_pct" + sfx] =
        -ReductionPct(a.Instructions(), b.Instructions());
    j["index_fetch_l1d_increase_pct" + sfx] = -ReductionPct(a.L1dMisses(), b.L1dMisses());
  }
  j["index_fetch_fibers"] = n;
  j["index_fetch_fetches_per_fiber"] = bo.fetches;
  return j;
}

// The TPC-C targets, met or not, with the figures.
// JSON key suffix of a TPC-C configuration: none for 1 warehouse and 10 users, _<W>wh for the
// standard 10 users per warehouse, else _<W>wh_<U>u.
std::string ConfigSuffix(unsigned warehouses, unsigned users) {
  if (warehouses == 1 && users == 10) return "";
  std::string suffix = "_" + std::to_string(warehouses) + "wh";
  if (users != 10 * warehouses) suffix += "_" + std::to_string(users) + "u";
  return suffix;
}

void PrintTargets(const nlohmann::json& j) {
  auto say = [&](const char* what, const char* key, double target, bool at_least) {
    if (!j.contains(key)) return;
    double v = j[key];
    bool met = at_least ? v >= target : v <= target;
    std::printf("%-44s %7.1f %%  (target %s %.0f %%: %s)\n", what, v, at_least ? ">=" : "<=",
                target, met ? "met" : "NOT met");
  };
  std::printf("\n");
  say("Payment: fewer L1-I misses per transaction", "payment_l1i_reduction_pct", 60, true);
  say("Payment: fewer mispredicted branches", "payment_branch_mispredict_reduction_pct", 40, true);
  say("Payment: more instructions", "payment_instructions_increase_pct", 3, false);
  say("Mix: fewer L1-I misses per transaction", "mix_l1i_reduction_pct", 50, true);
  say("Payment, 10 warehouses x 10 users: fewer L1-I misses", "payment_l1i_reduction_pct_10wh_10u",
      60, true);
  // The paper's own mix, for comparison with its figure (not a target).
  auto paper = [&](const char* what, const char* key) {
    if (!j.contains(key)) return;
    std::printf("%-44s %7.1f %%  (the paper: 56 %% at 10 warehouses)\n", what, double(j[key]));
  };
  paper("Mix without Delivery: fewer L1-I misses", "mix_no_delivery_l1i_reduction_pct");
  paper("  the same, 10 warehouses x 100 users", "mix_no_delivery_l1i_reduction_pct_10wh");
}

// The microbenchmark at every geometry; adds its figures to *j.
bool RunFetch(const BenchOptions& bo, const char* self, nlohmann::json* j) {
  Prepare(bo);
  std::string fibers;
  for (unsigned n : bo.fibers) fibers += (fibers.empty() ? "" : ",") + std::to_string(n);
  std::string command = ShellQuote(self) + " --inner --dir " + ShellQuote(bo.dir) + " --rows " +
                        std::to_string(bo.rows) + " --fetches " + std::to_string(bo.fetches) +
                        " --fibers " + fibers + " --team-size " + std::to_string(bo.team_size);
  if (!bo.ctx_placement.empty()) command += " --ctx-placement " + ShellQuote(bo.ctx_placement);
  std::vector<GeometryResult> results;
  for (const std::string& i1 : bo.geometries) {
    GeometryResult r;
    r.g.i1 = i1;
    std::printf("running under callgrind, L1-I %s ...\n", r.g.Name().c_str());
    std::fflush(stdout);
    std::string error;
    std::string prefix = bo.dir + "/callgrind.fetch" + r.g.Suffix();
    if (!RunUnderCallgrind(command, r.g, prefix, bo.keep, &r.parts, &error)) {
      std::fprintf(stderr, "steps_bench: %s\n", error.c_str());
      return false;
    }
    PrintGeometry(r, bo);
    results.push_back(std::move(r));
  }
  unsigned n = 10;
  bool have10 = std::find(bo.fibers.begin(), bo.fibers.end(), 10u) != bo.fibers.end();
  if (!have10) n = bo.fibers.back();
  j->update(Figures(results, bo, n));
  // The first geometry's figures (the targets are for 32 KiB 8-way, the default
  // first; another first geometry has its keys suffixed).
  const std::string sfx = results.front().g.Suffix();
  double red = (*j)["index_fetch_l1i_reduction_pct" + sfx];
  double slope = (*j)["index_fetch_per_extra_fiber_pct" + sfx];
  std::printf("\n%u fibers, %s: L1-I misses %.1f %% fewer than serial (target >= %.0f %%: %s); "
              "per additional fiber %.1f %% of serial (target <= %.0f %%: %s)\n",
              n, results.front().g.Name().c_str(), red, kTargetReductionPct,
              red >= kTargetReductionPct ? "met" : "NOT met", slope, kTargetSlopePct,
              slope <= kTargetSlopePct ? "met" : "NOT met");
  return true;
}

int RunOuter(BenchOptions bo, const char* self) {
  for (const auto* list : {&bo.geometries, &bo.tpcc_geometries}) {
    for (const std::string& i1 : *list) {
      Geometry g;
      g.i1 = i1;
      if (g.Valid()) continue;
      std::fprintf(stderr,
                   "steps_bench: an L1-I geometry is SIZE,WAYS,LINE in bytes, not '%s'\n",
                   i1.c_str());
      return 2;
    }
  }
  std::vector<TpccWorkload> workloads;
  for (const std::string& name : bo.tpcc_workloads) {
    std::optional<TpccWorkload> w = FindTpccWorkload(name);
    if (!w.has_value()) {
      std::fprintf(stderr, "steps_bench: --tpcc-workloads takes %s, not '%s'\n",
                   TpccWorkloadNames().c_str(), name.c_str());
      return 2;
    }
    workloads.push_back(*w);
  }
  if (bo.quick) {
    bo.fibers = {1, 10};
    if (bo.geometries.empty()) bo.geometries = {Geometry{}.i1};
    bo.tpcc.transactions = std::min<uint64_t>(bo.tpcc.transactions, 200);
    bo.tpcc.warmup = std::min<uint64_t>(bo.tpcc.warmup, 100);
    bo.tpcc_configs = {"1x10"};
  }
  if (bo.geometries.empty()) bo.geometries = {"32768,8,64", "16384,4,64", "65536,2,64"};
  nlohmann::json j;
  if (bo.fetch && !RunFetch(bo, self, &j)) return 1;
  if (!bo.tpcc.tpcc.empty()) {
    bo.tpcc.ctx_placement = bo.ctx_placement;
    bo.tpcc.keep = bo.keep;
    for (const std::string& config : bo.tpcc_configs) {
      TpccRunOptions o = bo.tpcc;
      if (std::sscanf(config.c_str(), "%ux%u", &o.warehouses, &o.users) != 2 ||
          o.warehouses == 0 || o.users == 0) {
        std::fprintf(stderr, "steps_bench: --tpcc-config takes WAREHOUSESxUSERS, not '%s'\n",
                     config.c_str());
        return 2;
      }
      o.db = bo.tpcc.db + "-" + std::to_string(o.warehouses) + "w";
      const std::string suffix = ConfigSuffix(o.warehouses, o.users);
      for (const std::string& i1 : bo.tpcc_geometries) {
        Geometry geometry;
        geometry.i1 = i1;
        if (!RunTpccIcache(o, workloads, geometry, suffix, &j)) return 1;
      }
      if (bo.wall_repeat > 0 &&
          !RunTpccWallClock(o, workloads, bo.wall_repeat, bo.wall_seconds, suffix, &j)) {
        return 1;
      }
    }
    PrintTargets(j);
  }
  bench::PrintJsonLine(j);
  return 0;
}

}  // namespace
}  // namespace sm::icache

int main(int argc, char** argv) {
  sm::icache::BenchOptions bo;
  CLI::App app{"STEPS index-fetch microbenchmark under valgrind's cache simulator"};
  app.add_option("--dir", bo.dir, "database directory (made once, reused)");
  app.add_option("--rows", bo.rows, "rows in the table")->check(CLI::Range(2u, 10000000u));
  app.add_option("--fetches", bo.fetches, "index fetches per fiber per round")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--fibers", bo.fibers, "fiber counts (team sizes), comma-separated")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1000u));
  app.add_option("--geometry", bo.geometries, "L1-I geometry size,ways,line (repeatable)");
  app.add_option("--ctx-placement", bo.ctx_placement, "CTX placement file (default: built-in)");
  app.add_option("--team-size", bo.team_size, "STEPS team-size cap")->check(CLI::Range(1u, 1000u));
  app.add_flag("--keep", bo.keep, "keep the callgrind output files under --dir");
  app.add_flag("--quick", bo.quick, "1 and 10 fibers, 32 KiB 8-way only");
  app.add_flag("--inner", bo.inner, "(internal) run the rounds; used under valgrind");
  app.add_option("--modes", bo.modes, "(with --inner) serial and/or steps")->delimiter(',');
  app.add_option("--ops", bo.ops,
                 "(with --inner, --fragments or --list-sites) operations: fetch, insert, "
                 "update, delete, scan")->delimiter(',')->check(CLI::IsMember(sm::icache::kOps));
  app.add_flag("--prepare", bo.prepare_only, "make the table under --dir (if needed) and stop");
  app.add_flag("--list-sites", bo.list_sites,
               "print the CTX sites each operation reaches, in order (makes the table if needed)");
  app.add_flag("--list-ctx-points", bo.list_ctx_points,
               "print every CTX site compiled into the engine, one name a line, and stop");
  app.add_flag("--fragments", bo.fragments,
               "(internal, under valgrind --dump-instr=yes) dump every fragment between the "
               "CTX sites of --ctx-placement, one fiber, --fetches operations of each --ops");
  app.add_flag("!--no-fetch", bo.fetch, "skip the index-fetch microbenchmark");
  app.add_option("--tpcc", bo.tpcc.tpcc, "the tpcc binary: also measure TPC-C Payment and the mix");
  app.add_option("--tpcc-db", bo.tpcc.db,
                 "TPC-C databases DIR-<W>w, copied for each run (loaded if absent)");
  app.add_option("--tpcc-config", bo.tpcc_configs,
                 "TPC-C configurations WAREHOUSESxUSERS, comma-separated (default 1x10,10x100,10x10)")
      ->delimiter(',');
  app.add_option("--tpcc-geometry", bo.tpcc_geometries,
                 "L1-I geometry size,ways,line of the TPC-C runs (repeatable; default "
                 "32768,8,64; 32768,512,64 is fully associative)");
  app.add_option("--tpcc-workloads", bo.tpcc_workloads,
                 "TPC-C workloads, comma-separated: payment, mix (45,43,4,4,4), mix_no_delivery "
                 "(45,43,4,0,4, the paper's) (default: all three)")
      ->delimiter(',');
  app.add_option("--wall-clock", bo.wall_repeat,
                 "also compare wall clock natively: this many alternating runs per mode")
      ->check(CLI::Range(1, 99));
  app.add_option("--wall-seconds", bo.wall_seconds, "seconds per wall-clock run")
      ->check(CLI::Range(0.5, 600.0));
  app.add_option("--tpcc-transactions", bo.tpcc.transactions, "measured transactions per run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{10000000}));
  app.add_option("--tpcc-warmup", bo.tpcc.warmup, "transactions run before measuring");
  CLI11_PARSE(app, argc, argv);
  if (bo.list_ctx_points) {
    for (const sm::threads::CtxSite* site : sm::threads::ListCtxSites()) {
      std::printf("%s\n", site->name);
    }
    return 0;
  }
  if (bo.prepare_only) {
    sm::icache::Prepare(bo);
    return 0;
  }
  if (bo.list_sites) {
    sm::icache::Prepare(bo);
    sm::icache::ListSites(bo);
    return 0;
  }
  if (bo.fragments) {
    sm::icache::RunFragments(bo);
    return 0;
  }
  if (bo.inner) {
    if (!RUNNING_ON_VALGRIND) {
      std::fprintf(stderr, "steps_bench: --inner is meant to run under valgrind\n");
    }
    sm::icache::RunInner(bo);
    return 0;
  }
  return sm::icache::RunOuter(bo, argv[0]);
}
