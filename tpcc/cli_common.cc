// The options and helpers the `tpcc` driver's verbs share (contract in cli_common.h).
#include "tpcc/cli_common.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <mutex>
#include <thread>

#include "sm/common/assert.h"
#include "tpcc/consistency.h"
#include "tpcc/engines/engines.h"

namespace sm::tpcc {

using json = nlohmann::json;

bool Json(const CommonOptions& o) { return o.output == "json"; }
bool Csv(const CommonOptions& o) { return o.output == "csv"; }

void Say(const CommonOptions& o, const char* format, ...) {
  FILE* out = o.output == "plain" ? stdout : stderr;
  va_list args;
  va_start(args, format);
  std::vfprintf(out, format, args);
  va_end(args);
  std::fflush(out);
}

void Emit(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "tpcc: %s\n", message.c_str());
  return kExitUsage;
}

int Failure(const CommonOptions& o, const std::string& what, const Status& s) {
  std::fprintf(stderr, "tpcc: %s: %s\n", what.c_str(), s.ToString().c_str());
  if (Json(o)) {
    Emit(json{{"error", what + ": " + s.ToString()}}.dump() + "\n");
  }
  return s.IsInvalidArgument() ? kExitUsage : kExitFailed;
}

bool ParseBytes(std::string_view text, uint64_t* bytes) {
  uint64_t count = 0;
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, count);
  if (error != std::errc()) return false;
  std::string unit(at, end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // "KB", "KIB"
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();  // "KI" of "KIB"
  int shift = 0;
  if (unit == "K") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else if (!unit.empty() && unit != "B") {
    return false;
  }
  if (count > (UINT64_MAX >> shift)) return false;
  *bytes = count << shift;
  return true;
}

std::string BytesText(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  }
  return buf;
}

int OpenEngine(const CommonOptions& o, bool create, std::unique_ptr<SmEngine>* engine,
               bool read_only) {
  if (o.warehouses == 0 || o.warehouses > kMaxWarehouses) {
    return UsageError("--warehouses takes a number in 1.." + std::to_string(kMaxWarehouses) +
                      ", not " + std::to_string(o.warehouses));
  }
  SmEngineOptions options;
  options.db.path = o.db;
  options.db.create_if_missing = create;
  options.db.read_only = read_only;
  uint64_t pool = 0;
  if (!ParseBytes(o.buffer_pool, &pool) || pool < (8u << 20)) {
    return UsageError("--buffer-pool takes a size of at least 8M such as 512M or 2G, not '" +
                      o.buffer_pool + "'");
  }
  options.db.buffer_pool_bytes = pool;
  uint64_t log_buffer = 0;
  if (!ParseBytes(o.log_buffer, &log_buffer) || log_buffer < (16u << 10) ||
      log_buffer > (4ull << 30) || log_buffer % 4096 != 0) {
    return UsageError("--log-buffer takes a multiple of 4K from 16K to 4G such as 8M, not '" +
                      o.log_buffer + "'");
  }
  options.db.log_buffer_bytes = log_buffer;
  // A server's settings rather than the embedded defaults: segments that a run at many
  // warehouses does not switch every few hundred milliseconds, spares for a checkpoint
  // interval of them, and a pool backed ahead of use so that no transaction waits for the
  // kernel to zero its memory.
  options.db.log_segment_bytes = 64ull << 20;
  options.db.log_spare_bytes = 1ull << 30;
  options.db.prefault_pool = true;
  if (!ParseBytes(o.reserve_free, &options.db.reserve_free_bytes)) {
    return UsageError("--reserve-free takes a size such as 0, 64M or 1G, not '" + o.reserve_free +
                      "'");
  }
  options.db.background_write_interval = std::chrono::milliseconds(o.writer_interval_ms);
  options.db.background_write_quiet = std::chrono::milliseconds(o.writer_quiet_ms);
  if (!sm::ParseMissInterleaving(o.miss_interleaving, &options.db.miss_interleaving)) {
    return UsageError("--miss-interleaving takes off, on or auto, not '" + o.miss_interleaving +
                      "'");
  }
  options.db.checkpoint_interval = std::chrono::milliseconds(o.checkpoint_interval_ms);
  options.db.checkpoint_spread = o.checkpoint_spread;
  options.db.lock_wait_timeout = std::chrono::milliseconds(o.lock_timeout_ms);
  if (o.commit == "durable") {
    options.db.commit_mode = CommitMode::kDurable;
  } else if (o.commit == "async") {
    options.db.commit_mode = CommitMode::kAsync;
  } else if (o.commit == "none") {
    options.db.commit_mode = CommitMode::kNone;
  } else {
    return UsageError("--commit takes durable, async or none, not '" + o.commit + "'");
  }
  if (o.read_for_update == "lock") {
    options.read_for_update = ReadForUpdate::kLock;
  } else if (o.read_for_update == "plain") {
    options.read_for_update = ReadForUpdate::kPlain;
  } else {
    return UsageError("--read-for-update takes lock or plain, not '" + o.read_for_update + "'");
  }
  options.db.steps = o.steps;
  options.db.steps_adaptive = o.steps_adaptive;
  options.db.steps_team_size = o.team_size;
  options.db.steps_max_pass_overs = o.max_pass_overs;
  options.db.ctx_placement = o.ctx_placement;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  options.db.workers = o.workers == 0 ? cores : o.workers;
  if (!create) {
    // Refuse a path that is not a database before Open would make a directory there.
    if (::access((o.db + "/sm.meta").c_str(), F_OK) != 0) {
      std::fprintf(stderr,
                   "tpcc: no database at %s: run `tpcc load` first (--db to choose another)\n",
                   o.db.c_str());
      return kExitFailed;
    }
  } else {
    // Parent directories of the default path (./data) are made here; Open makes the last one.
    std::string parent = o.db.substr(0, o.db.find_last_of('/'));
    if (!parent.empty() && parent != o.db) {
      std::string cmd_path;
      for (size_t i = 0; i <= parent.size(); ++i) {
        if (i == parent.size() || parent[i] == '/') {
          cmd_path = parent.substr(0, i);
          if (!cmd_path.empty()) ::mkdir(cmd_path.c_str(), 0755);
        }
      }
    }
  }
  sm::OpenReport report;
  Status s = SmEngine::Open(options, engine, &report);
  if (!s.ok() && report.needs_recovery) {
    // Not bad usage: the database is as the last run left it, and recovery is one command away.
    Failure(o, "cannot open the database at " + o.db + " read-only", s);
    std::fprintf(stderr,
                 "tpcc: the last run did not close it cleanly; `tpcc check --recover --db %s` "
                 "recovers it (a read-write open), then checks it\n",
                 o.db.c_str());
    return kExitFailed;
  }
  if (!s.ok()) {
    const int rc = Failure(o, "cannot open the database at " + o.db, s);
    // A database of another on-disk format version: nothing here converts it; a new load is
    // the way on.
    if (s.code() == Status::Code::kNotSupported) {
      std::fprintf(stderr, "tpcc: remove %s (or choose another --db) and load again\n",
                   o.db.c_str());
    }
    return rc;
  }
  if (report.recovered) Say(o, "%s\n", report.recovery.c_str());  // "recovery: ..."
  return 0;
}

std::string EngineDirectory(const CommonOptions& o) {
  return o.engine == "sm" ? o.db : o.db + "/" + o.engine;
}

int Prewarm(const CommonOptions& o, Engine* engine, nlohmann::json* out) {
  auto* ours = dynamic_cast<SmEngine*>(engine);
  if (ours == nullptr) {
    engine->Close().PermitUnchecked();
    return UsageError("--prewarm is our engine's (Database::Prewarm); --engine " + o.engine +
                      " has none");
  }
  uint64_t pages = 0;
  if (Status s = ours->database()->Prewarm(&pages); !s.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "prewarm", s);
  }
  Say(o, "prewarmed the buffer pool: %llu pages (%.0f MiB)\n",
      static_cast<unsigned long long>(pages), double(pages) * 8192 / (1 << 20));  // 8 KiB pages (sm.h)
  (*out)["prewarmed_pages"] = pages;
  return 0;
}

int OpenAnyEngine(const CommonOptions& o, bool create, std::unique_ptr<Engine>* engine,
                  bool read_only) {
  if (o.engine == "sm") {
    std::unique_ptr<SmEngine> sm_engine;
    if (int rc = OpenEngine(o, create, &sm_engine, read_only); rc != 0) return rc;
    *engine = std::move(sm_engine);
    return 0;
  }
  if (o.warehouses == 0 || o.warehouses > kMaxWarehouses) {
    return UsageError("--warehouses takes a number in 1.." + std::to_string(kMaxWarehouses) +
                      ", not " + std::to_string(o.warehouses));
  }
  ForeignEngineOptions options;
  options.path = EngineDirectory(o);
  options.create = create;
  options.read_only = read_only;
  if (!ParseBytes(o.buffer_pool, &options.cache_bytes) || options.cache_bytes < (8u << 20)) {
    return UsageError("--buffer-pool takes a size of at least 8M such as 512M or 2G, not '" +
                      o.buffer_pool + "'");
  }
  if (o.commit == "durable") {
    options.commit = ForeignCommit::kDurable;
  } else if (o.commit == "async") {
    options.commit = ForeignCommit::kAsync;
  } else if (o.commit == "none") {
    options.commit = ForeignCommit::kNone;
  } else {
    return UsageError("--commit takes durable, async or none, not '" + o.commit + "'");
  }
  if (o.steps) {
    return UsageError("--steps is our engine's (STEPS teams); --engine " + o.engine +
                      " has no such thing");
  }
  options.workers = o.workers == 0 ? std::max(1u, std::thread::hardware_concurrency()) : o.workers;
  options.lock_timeout_ms = o.lock_timeout_ms;
  Status s = OpenForeignEngine(o.engine, options, engine);
  if (s.IsNotFound() && !create) {
    std::fprintf(stderr, "tpcc: no %s database at %s: run `tpcc load --engine %s` first (--db to "
                 "choose another)\n", o.engine.c_str(), options.path.c_str(), o.engine.c_str());
    return kExitFailed;
  }
  if (s.code() == Status::Code::kNotSupported || s.IsInvalidArgument()) return UsageError(s.ToString());
  if (!s.ok()) return Failure(o, "cannot open the " + o.engine + " database at " + options.path, s);
  return 0;
}

void AddCommon(CLI::App* app, CommonOptions* o) {
  std::string engines = "sm (ours)";
  for (const std::string& name : ForeignEngineNames()) engines += ", " + name;
  app->add_option("--engine", o->engine,
                  "the storage engine: " + engines + " (load, run and check; another engine's "
                  "database is the directory <db>/<engine>)")
      ->capture_default_str();
  app->add_option("--db", o->db, "database directory")->capture_default_str();
  app->add_option_function<uint32_t>(
      "-w,--warehouses",
      [o](const uint32_t& w) {
        o->warehouses = w;
        o->warehouses_given = true;
      },
      "warehouses (load: how many to load, default 1; run/check: must match the load)")
      ->check(NumberIn(1u, kMaxWarehouses));
  app->add_option("--workers", o->workers, "worker threads (default, 0: all cores)")
      ->check(NumberIn(0u, 1024u));
  app->add_option("--buffer-pool", o->buffer_pool, "buffer pool size, e.g. 512M, 2G")
      ->capture_default_str();
  app->add_option("--log-buffer", o->log_buffer,
                  "the log's in-memory buffer; the log is written once a quarter of it fills "
                  "(runs under valgrind raise it: a flusher thread woken mid-run makes their "
                  "counts vary)")
      ->capture_default_str();
  app->add_option("--reserve-free", o->reserve_free,
                  "at open, grow the data file until this much of it is free, so that no "
                  "transaction waits for it to grow (runs under valgrind set it for that reason)")
      ->capture_default_str();
  app->add_option("--writer-interval-ms", o->writer_interval_ms,
                  "the buffer pool's background writer period (0: only for eviction)")
      ->check(NumberIn(0u, kMaxMs))
      ->capture_default_str();
  app->add_option("--miss-interleaving", o->miss_interleaving,
                  "B-tree descents prefetch the leaf and let other fibers run while it arrives: "
                  "off, on, or auto (each worker measures whether it pays)")
      ->capture_default_str();
  app->add_option("--writer-quiet-ms", o->writer_quiet_ms,
                  "the writer writes a page early only once it has not changed for this long "
                  "(0: regardless; eviction and checkpoints write pages regardless)")
      ->check(NumberIn(0u, kMaxMs))
      ->capture_default_str();
  app->add_option("--checkpoint-interval-ms", o->checkpoint_interval_ms,
                  "background checkpoints (0: none; loading and closing checkpoint anyway)")
      ->check(NumberIn(0u, kMaxMs))
      ->capture_default_str();
  app->add_option("--checkpoint-spread", o->checkpoint_spread,
                  "a background checkpoint spreads its page writes over this fraction of the "
                  "interval (0: at once)")
      ->check(NumberIn(0.0, 0.99))
      ->capture_default_str();
  app->add_option("--lock-timeout-ms", o->lock_timeout_ms,
                  "lock wait timeout (runs under valgrind raise it: a wall-clock timeout makes "
                  "their counts vary)")
      ->check(NumberIn<uint64_t>(1, kMaxMs))
      ->capture_default_str();
  app->add_option("--commit", o->commit, "commit mode: durable, async or none")
      ->capture_default_str();
  app->add_option("--seed", o->seed, "random seed (the load and the run replay with it)")
      ->check(NumberIn<uint64_t>(0, UINT64_MAX))
      ->capture_default_str();
  app->add_option("--output", o->output,
                  "plain; json (stdout: one JSON object, the lines for people on stderr); csv "
                  "(run: a row per --interval on stdout)")
      ->capture_default_str()
      ->check(CLI::IsMember({"plain", "json", "csv"}));
  app->add_option("--interval", o->interval_s, "seconds between progress lines (0: none)")
      ->check(NumberIn(0.0, 3600.0))
      ->capture_default_str();
  app->add_option("--checks", o->checks,
                  "consistency checks: load runs 1-12 after loading, run 1-4 before and after")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app->add_option("--read-for-update", o->read_for_update,
                  "rows read for update: lock (exclusively, Table::GetForUpdate) or plain (a "
                  "shared lock, upgraded by the update; deadlock-prone)")
      ->capture_default_str();
}

json LatencyJson(const LatencySummary& l) {
  return {{"count", l.count},   {"mean_ms", l.mean_ms}, {"p50_ms", l.p50_ms}, {"p90_ms", l.p90_ms},
          {"p95_ms", l.p95_ms}, {"p99_ms", l.p99_ms},   {"max_ms", l.max_ms}};
}

json ConditionsJson(const std::vector<ConditionResult>& results) {
  json out = json::array();
  for (const ConditionResult& r : results) {
    out.push_back({{"condition", r.condition},
                   {"passed", r.passed},
                   {"checked", r.checked},
                   {"violations", r.violations},
                   {"detail", r.detail}});
  }
  return out;
}

// Runs and prints the conditions; false if any failed (or they could not run: *error set).
bool RunChecks(const CommonOptions& o, Engine* engine, const DatabaseInfo& info,
               const std::vector<int>& conditions, const char* when,
               std::vector<ConditionResult>* results, Status* error) {
  auto start = std::chrono::steady_clock::now();
  *error = CheckConsistency(engine, info, conditions, results);
  if (!error->ok()) return false;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool all = AllPassed(*results);
  Say(o, "consistency %s: %s (%.2f s)\n", when, all ? "pass" : "FAIL", seconds);
  for (const ConditionResult& r : *results) {
    Say(o, "  %-2d %-58s %s", r.condition, ConditionText(r.condition), r.passed ? "pass" : "FAIL");
    if (!r.passed) Say(o, "  %s", r.detail.c_str());
    Say(o, "\n");
  }
  if (!all) {
    std::fprintf(
        stderr, "tpcc: CONSISTENCY FAILURE %s: the database does not satisfy clause 3.3.2\n", when);
  }
  return all;
}

// ---- signals -------------------------------------------------------------------------------

namespace {

std::mutex stop_mu;
std::atomic<bool>* stop_flag = nullptr;  // GUARDED_BY(stop_mu)
// Written by the signal thread under stop_mu, read by the run's thread after the run.
std::atomic<int> stop_signal{0};  // relaxed: the run's thread reads it after Run returned

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

void SignalThread() {
  const sigset_t set = StopSignals();
  for (;;) {
    int signal = 0;
    if (sigwait(&set, &signal) != 0) continue;
    std::lock_guard<std::mutex> guard(stop_mu);
    if (stop_flag == nullptr || stop_signal.load(std::memory_order_relaxed) != 0) {
      ExitBySignal(signal);  // not in a run, or the second signal: as if not handled
    }
    stop_signal.store(signal, std::memory_order_relaxed);
    stop_flag->store(true, std::memory_order_relaxed);
    std::fprintf(stderr, "\ntpcc: %s: ending the run; its summary and checks follow (again to "
                 "quit at once)\n", sigabbrev_np(signal));
  }
}

}  // namespace

void StartSignalThread() {
  const sigset_t set = StopSignals();
  SM_ASSERT(pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0);
  std::thread(SignalThread).detach();  // lives until the process ends
}

void SetStopFlag(std::atomic<bool>* flag) {
  std::lock_guard<std::mutex> guard(stop_mu);
  stop_flag = flag;
}

int StopSignal() { return stop_signal.load(std::memory_order_relaxed); }

void ExitBySignal(int signal) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::signal(signal, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signal);  // unblocked in this thread with the default action: the process ends here
  std::_Exit(128 + signal);
}

}  // namespace sm::tpcc
