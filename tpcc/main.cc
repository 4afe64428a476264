// tpcc: the TPC-C driver over our storage manager.
//
//   tpcc load  [-w N] [--db PATH] ...   populate a database (or reuse one loaded with N)
//   tpcc run   [-w N] [--users U] ...   run the mix; conditions 1-4 before and after
//   tpcc check [-w N] [--conditions L]  the consistency conditions of clause 3.3.2
//   tpcc query N|all [--format F] ...   CH-benCHmark queries (tables from `tpcc load --ch`)
//   tpcc htap [--query-streams S] ...  the mix and query streams at once, and each alone
//   tpcc export DIR                     every table as CSV (dates ISO 8601, money decimal)
//   tpcc crash-test [--cycles N] ...    SIGKILL and recover, cycle after cycle; acknowledged
//                                       New-Orders and the conditions are the oracle
//                                       (tpcc/crash_torture.h)
//
// `tpcc <verb> --help` lists the options. Exit status: 0 success; 1 the work failed (engine
// error, a consistency condition failed); 2 bad options. With --output json the last line of
// the output is one JSON object.
//
// Figures are tpmC-like, not TPC-C results: nothing here is audited, so New-Orders per minute
// are reported as "NOPM, not an audited tpmC".
#include <sys/stat.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sm/sm.h"
#include "steps/steps.h"
#include "tpcc/ch_commands.h"
#include "tpcc/cli_common.h"
#include "tpcc/consistency.h"
#include "tpcc/crash_torture.h"
#include "tpcc/driver.h"
#include "tpcc/loader.h"
#include "tpcc/sm_engine.h"

namespace sm::tpcc {
namespace {

using json = nlohmann::json;

struct RunCliOptions {
  uint32_t users = 0;  // 0: 10 per warehouse
  double duration_s = 10;
  double warmup_s = 0;
  std::string mix = "45,43,4,4,4";
  std::string think_time = "0";
  std::string access_order = "hot-last";
  std::string ytd = "add";
  std::string steps = "off";
  uint32_t team_size = 0;       // 0: not given (the engine's default, 32)
  uint32_t max_pass_overs = 0;  // 0: not given (the engine's default)
  std::string ctx_placement;
  uint64_t transactions = 0;  // > 0: count mode (RunOptions::transactions)
  uint64_t warmup_transactions = 0;
  bool callgrind_window = false;
  bool prewarm = false;
};

struct CheckCliOptions {
  std::string conditions;  // empty: all that apply
};

// "1-4", "1,2,11", "all".
bool ParseConditions(const std::string& text, std::vector<int>* out) {
  out->clear();
  if (text == "all") {
    for (int c = 1; c <= kConditionCount; ++c) out->push_back(c);
    return true;
  }
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    std::string part = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    size_t dash = part.find('-');
    try {
      int lo = std::stoi(part.substr(0, dash));
      int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      if (lo < 1 || hi > kConditionCount || lo > hi) return false;
      for (int c = lo; c <= hi; ++c) out->push_back(c);
    } catch (...) {
      return false;
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return !out->empty();
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

std::vector<int> DefaultConditions(const DatabaseInfo& info) {
  std::vector<int> c;
  for (int n = 1; n <= kConditionCount; ++n) {
    if (n != 11 || info.fresh()) c.push_back(n);
  }
  return c;
}

// ---- load ----------------------------------------------------------------------------------

int LoadCommand(const CommonOptions& o) {
  std::unique_ptr<SmEngine> engine;
  if (int rc = OpenEngine(o, /*create=*/true, &engine); rc != 0) return rc;
  bool created = false;
  if (Status s = engine->OpenSchema(/*create=*/true, &created); !s.ok()) {
    return Failure(o, "schema", s);
  }
  DatabaseInfo info;
  Status s = ReadDatabaseInfo(engine.get(), &info);
  json out = {{"command", "load"}, {"db", o.db}, {"git_revision", GitRevision()}};
  bool reused = s.ok();
  double load_s = 0;
  uint64_t rows = 0;
  if (reused) {
    if (o.warehouses_given && info.warehouses != o.warehouses) {
      std::fprintf(stderr,
                   "tpcc: the database at %s was loaded with %u warehouses, not %u: remove it or "
                   "choose another --db\n",
                   o.db.c_str(), info.warehouses, o.warehouses);
      engine->Close().PermitUnchecked();
      return kExitUsage;
    }
    Say(o, "reusing the database at %s: %u warehouses, loaded earlier, %u runs since\n",
        o.db.c_str(), info.warehouses, info.runs);
  } else if (!s.IsNotFound()) {
    return Failure(o, "reading the database", s);
  } else {
    LoadOptions lo;
    lo.warehouses = o.warehouses;
    lo.seed = o.seed;
    lo.fibers_per_worker = o.load_fibers;
    lo.progress_interval = std::chrono::milliseconds(
        static_cast<int64_t>((o.interval_s > 0 ? o.interval_s : 1) * 1000));
    if (o.interval_s > 0) {
      lo.progress = [&](const LoadProgress& p) {
        double pct = p.rows_total ? 100.0 * p.rows_done / p.rows_total : 0;
        Say(o, "load [%6.1fs] %5.1f%% %10llu rows %8.0f rows/s\n", p.seconds, std::min(pct, 100.0),
            static_cast<unsigned long long>(p.rows_done),
            p.seconds > 0 ? p.rows_done / p.seconds : 0);
      };
    }
    Say(o, "loading %u warehouses into %s on %u workers (%s)\n", o.warehouses, o.db.c_str(),
        engine->workers(), engine->Describe().c_str());
    LoadResult result;
    if (Status l = sm::tpcc::Load(engine.get(), lo, &result); !l.ok()) return Failure(o, "load", l);
    info = result.info;
    load_s = result.seconds;
    rows = result.rows;
    Say(o, "loaded %llu rows in %.2f s (%.0f rows/s; %llu batches retried)\n",
        static_cast<unsigned long long>(rows), load_s, load_s > 0 ? rows / load_s : 0,
        static_cast<unsigned long long>(result.retried_batches));
  }
  if (o.ch) {
    if (int rc = LoadChTables(o, engine.get()); rc != 0) return rc;
  }
  out["reused"] = reused;
  out["warehouses"] = info.warehouses;
  out["load_seconds"] = load_s;
  out["rows"] = rows;
  out["workers"] = engine->workers();
  bool ok = true;
  if (o.checks == "on") {
    std::vector<ConditionResult> results;
    Status error;
    ok = RunChecks(o, engine.get(), info, DefaultConditions(info), "after load", &results, &error);
    if (!error.ok()) return Failure(o, "consistency check", error);
    out["consistency"] = ok ? "pass" : "fail";
    out["conditions"] = ConditionsJson(results);
  }
  auto close_start = std::chrono::steady_clock::now();
  if (Status c = engine->Close(); !c.ok()) return Failure(o, "close", c);
  out["close_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - close_start).count();
  if (Json(o)) std::printf("%s\n", out.dump().c_str());
  return ok ? 0 : kExitFailed;
}

// ---- check ---------------------------------------------------------------------------------

int CheckCommand(const CommonOptions& o, const CheckCliOptions& c) {
  std::unique_ptr<SmEngine> engine;
  if (int rc = OpenEngine(o, /*create=*/false, &engine); rc != 0) return rc;
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine.get(), o.warehouses_given ? o.warehouses : 0, &info); !s.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "check", s);
  }
  std::vector<int> conditions = DefaultConditions(info);
  if (!c.conditions.empty() && !ParseConditions(c.conditions, &conditions)) {
    engine->Close().PermitUnchecked();
    return UsageError("--conditions takes numbers and ranges in 1..12 such as 1-4,6 or all, not '" +
                      c.conditions + "'");
  }
  if (!info.fresh() && std::find(conditions.begin(), conditions.end(), 11) != conditions.end()) {
    Say(o, "note: condition 11 holds only right after the load; %u runs happened since\n",
        info.runs);
  }
  std::vector<ConditionResult> results;
  Status error;
  bool ok = RunChecks(o, engine.get(), info, conditions, "check", &results, &error);
  if (!error.ok()) return Failure(o, "consistency check", error);
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);
  if (Json(o)) {
    json out = {{"command", "check"},
                {"db", o.db},
                {"warehouses", info.warehouses},
                {"consistency", ok ? "pass" : "fail"},
                {"conditions", ConditionsJson(results)},
                {"git_revision", GitRevision()}};
    std::printf("%s\n", out.dump().c_str());
  }
  return ok ? 0 : kExitFailed;
}

// ---- run -----------------------------------------------------------------------------------

json LatencyJson(const LatencySummary& l) {
  return {{"count", l.count},   {"mean_ms", l.mean_ms}, {"p50_ms", l.p50_ms}, {"p90_ms", l.p90_ms},
          {"p95_ms", l.p95_ms}, {"p99_ms", l.p99_ms},   {"max_ms", l.max_ms}};
}

void PrintSummary(const CommonOptions& o, const RunCliOptions& r, const Mix& mix,
                  const RunResult& res, const SmEngine& engine, uint32_t users) {
  Say(o, "\n== TPC-C-like run (not an audited TPC-C result) ==\n");
  Say(o, "engine:      %s\n", engine.Describe().c_str());
  Say(o,
      "setup:       %u users, commit %s, mix %s, think time %s, access order %s, ytd %s, "
      "STEPS %s\n",
      users, o.commit.c_str(), mix.ToString().c_str(), r.think_time.c_str(), r.access_order.c_str(),
      r.ytd.c_str(), r.steps.c_str());
  Say(o, "measured:    %.2f s (warm-up %.1f s)\n", res.measured_s, r.warmup_s);
  Say(o,
      "throughput:  %.0f tx/s, %.0f NOPM (New-Orders per minute, rollbacks included; NOPM, not an "
      "audited tpmC)\n",
      res.tx_per_s, res.nopm);
  Say(o, "%-13s %10s %7s %9s %9s %9s %9s %9s %8s %8s\n", "transaction", "count", "mix%", "p50 ms",
      "p95 ms", "p99 ms", "max ms", "mean ms", "deadlk", "timeout");
  for (int t = 0; t < kTxnTypeCount; ++t) {
    const TypeResult& tr = res.types[t];
    Say(o, "%-13s %10llu %6.2f%% %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %8llu\n",
        TxnTypeTitle(static_cast<TxnType>(t)), static_cast<unsigned long long>(tr.completed),
        res.mix_percent[t], tr.latency.p50_ms, tr.latency.p95_ms, tr.latency.p99_ms,
        tr.latency.max_ms, tr.latency.mean_ms, static_cast<unsigned long long>(tr.deadlock_retries),
        static_cast<unsigned long long>(tr.lock_timeout_retries));
  }
  Say(o, "%-13s %10llu %6.2f%% %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %8llu\n", "all",
      static_cast<unsigned long long>(res.completed), 100.0, res.latency.p50_ms, res.latency.p95_ms,
      res.latency.p99_ms, res.latency.max_ms, res.latency.mean_ms,
      static_cast<unsigned long long>(res.deadlock_retries),
      static_cast<unsigned long long>(res.lock_timeout_retries));
  Say(o,
      "aborts:      %llu deadlock victims, %llu lock timeouts (all retried); %llu New-Order "
      "rollbacks (completed)\n",
      static_cast<unsigned long long>(res.deadlock_retries),
      static_cast<unsigned long long>(res.lock_timeout_retries),
      static_cast<unsigned long long>(res.types[0].rolled_back));
  Say(o,
      "input audit: rollbacks %.2f%% [0.9-1.1], lines/order %.2f [9.5-10.5], remote lines %.2f%% "
      "[0.95-1.05], "
      "remote payments %.2f%% [14-16], payment by name %.2f%% [57-63], order-status by name %.2f%% "
      "[57-63]\n",
      res.new_order_rollback_percent, res.order_lines_per_order, res.remote_order_line_percent,
      res.remote_payment_percent, res.payment_by_name_percent, res.order_status_by_name_percent);
  Say(o, "delivery:    %llu districts skipped (no undelivered order)\n",
      static_cast<unsigned long long>(res.delivery_skipped_districts));
  const EngineStats& e = res.engine;
  uint64_t fixes = e.pool_hits + e.pool_misses;
  Say(o,
      "buffer pool: %llu hits (%.1f%% through frame hints), %llu misses (%.3f%% miss), %llu "
      "writes, %llu dirty at the end\n",
      static_cast<unsigned long long>(e.pool_hits),
      e.pool_hits ? 100.0 * e.pool_hinted_hits / e.pool_hits : 0.0,
      static_cast<unsigned long long>(e.pool_misses), fixes ? 100.0 * e.pool_misses / fixes : 0.0,
      static_cast<unsigned long long>(e.pool_writes),
      static_cast<unsigned long long>(e.pool_dirty_pages));
  Say(o, "locks:       %llu requests, %llu waits, %llu deadlocks, %llu timeouts\n",
      static_cast<unsigned long long>(e.lock_requests),
      static_cast<unsigned long long>(e.lock_waits), static_cast<unsigned long long>(e.deadlocks),
      static_cast<unsigned long long>(e.lock_timeouts));
  Say(o,
      "log:         %s written, %llu syncs, %.1f commits/sync, %llu waits for buffer space; "
      "%llu checkpoints\n",
      BytesText(e.log_bytes).c_str(), static_cast<unsigned long long>(e.log_syncs),
      e.commits_per_sync, static_cast<unsigned long long>(e.log_space_waits),
      static_cast<unsigned long long>(e.checkpoints));
}

// STEPS team statistics per operation (the paper's Table 4): printed, and returned as JSON.
json PrintTeams(const CommonOptions& o, bool steps, const std::vector<steps::TeamStats>& teams) {
  json out = json::array();
  if (!steps) return out;
  Say(o, "STEPS teams (run and warm-up):\n%-32s %9s %11s %11s %9s %10s %12s %11s %8s  %s\n",
      "operation", "teams", "entered", "completed", "strays", "avg size", "CTX switches",
      "CTX latched", "forced", "strays by cause");
  for (const steps::TeamStats& t : teams) {
    Say(o, "%-32s %9llu %11llu %11llu %9llu %10.2f %12llu %11llu %8llu  %s\n", t.name.c_str(),
        static_cast<unsigned long long>(t.teams), static_cast<unsigned long long>(t.entered),
        static_cast<unsigned long long>(t.completed), static_cast<unsigned long long>(t.strays()),
        t.AverageTeamSize(), static_cast<unsigned long long>(t.ctx_switches),
        static_cast<unsigned long long>(t.ctx_skipped_latch),
        static_cast<unsigned long long>(t.forced_turns), t.StrayReasons().c_str());
    out.push_back({{"operation", t.name},
                   {"teams", t.teams},
                   {"entered", t.entered},
                   {"completed", t.completed},
                   {"strays", t.strays()},
                   {"strays_by_cause", t.StrayReasons()},
                   {"average_team_size", t.AverageTeamSize()},
                   {"ctx_switches", t.ctx_switches},
                   {"ctx_skipped_latch", t.ctx_skipped_latch},
                   {"forced_turns", t.forced_turns}});
  }
  return out;
}

// --steps auto: what the workers' probes found and chose.
json PrintAdaptive(const CommonOptions& o) {
  const steps::AdaptiveStats a = steps::GetAdaptiveStats();
  std::string ratios;
  for (double r : a.last_ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.3f", ratios.empty() ? "" : ", ", r);
    ratios += buf;
  }
  Say(o,
      "STEPS auto:  %llu probes chose teams %llu times, no teams %llu times; epochs with "
      "teams %llu, without %llu; last rate ratio (teams / none) per worker: %s\n",
      static_cast<unsigned long long>(a.probes), static_cast<unsigned long long>(a.chose_teams),
      static_cast<unsigned long long>(a.chose_serial),
      static_cast<unsigned long long>(a.epochs_teams),
      static_cast<unsigned long long>(a.epochs_serial), ratios.empty() ? "-" : ratios.c_str());
  return {{"probes", a.probes},
          {"chose_teams", a.chose_teams},
          {"chose_no_teams", a.chose_serial},
          {"epochs_teams", a.epochs_teams},
          {"epochs_no_teams", a.epochs_serial},
          {"last_rate_ratio", a.last_ratio}};
}

int RunCommand(const CommonOptions& o, const RunCliOptions& r) {
  Mix mix;
  if (Status s = Mix::Parse(r.mix, &mix); !s.ok()) return UsageError(std::string(s.message()));
  RunOptions ro;
  ro.mix = mix;
  ro.duration_s = r.duration_s;
  ro.warmup_s = r.warmup_s;
  ro.seed = o.seed;
  ro.interval_s = o.interval_s;
  ro.transactions = r.transactions;
  ro.warmup_transactions = r.warmup_transactions;
  if (r.callgrind_window) {
    if (r.transactions == 0) return UsageError("--callgrind-window needs --transactions");
    // Under valgrind --tool=callgrind --collect-atstart=no: collect the measured transactions
    // only (tools/icache). Outside valgrind the client requests do nothing.
    ro.on_window = [](bool open) {
      if (open) {
        CALLGRIND_TOGGLE_COLLECT;
      } else {
        CALLGRIND_DUMP_STATS_AT("tpcc window");
        CALLGRIND_TOGGLE_COLLECT;
      }
    };
  }
  if (r.transactions > 0 && r.warmup_s > 0) {
    return UsageError("with --transactions, warm up by --warmup-transactions, not --warmup");
  }
  if (r.think_time == "spec") {
    ro.spec_think_times = true;
  } else {
    char* end = nullptr;
    ro.think_time_s = std::strtod(r.think_time.c_str(), &end);
    if (end == r.think_time.c_str() || *end != '\0' || ro.think_time_s < 0) {
      return UsageError(
          "--think-time takes seconds (the mean think time, e.g. 0 or 0.5) or "
          "'spec' (the keying and think times of clause 5.2.5), not '" +
          r.think_time + "'");
    }
  }
  if (!ParseAccessOrder(r.access_order, &ro.access_order)) {
    return UsageError("--access-order takes spec or hot-last, not '" + r.access_order + "'");
  }
  if (!ParseYtdWrite(r.ytd, &ro.ytd_write)) {
    return UsageError("--ytd takes add or update, not '" + r.ytd + "'");
  }
  if (!(r.duration_s > 0)) return UsageError("--duration must be positive");
  if (r.warmup_s < 0) return UsageError("--warmup must not be negative");
  if (r.steps != "on" && r.steps != "off" && r.steps != "auto") {
    return UsageError("--steps takes on, off or auto, not '" + r.steps + "'");
  }
  const bool steps = r.steps != "off";
  if ((r.team_size != 0 || r.max_pass_overs != 0 || !r.ctx_placement.empty()) && !steps) {
    return UsageError("--team-size, --max-pass-overs and --ctx-placement need --steps on or auto");
  }
  CommonOptions with_steps = o;
  with_steps.steps = steps;
  with_steps.steps_adaptive = r.steps == "auto";
  if (r.team_size != 0) with_steps.team_size = r.team_size;
  if (r.max_pass_overs != 0) with_steps.max_pass_overs = r.max_pass_overs;
  with_steps.ctx_placement = r.ctx_placement;

  std::unique_ptr<SmEngine> engine;
  if (int rc = OpenEngine(with_steps, /*create=*/false, &engine); rc != 0) return rc;
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine.get(), o.warehouses_given ? o.warehouses : 0, &info); !s.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "run", s);
  }
  ro.users = r.users != 0 ? r.users : 10 * info.warehouses;

  json out = {{"command", "run"},
              {"git_revision", GitRevision()},
              {"db", o.db},
              {"engine", engine->Describe()},
              {"warehouses", info.warehouses},
              {"users", ro.users},
              {"workers", engine->workers()},
              {"commit_mode", o.commit},
              {"buffer_pool", o.buffer_pool},
              {"log_buffer", o.log_buffer},
              {"reserve_free", o.reserve_free},
              {"steps", r.steps},
              {"miss_interleaving", o.miss_interleaving},
              {"mix", mix.ToString()},
              {"read_for_update", o.read_for_update},
              {"interval_s", o.interval_s},
              {"think_time", r.think_time},
              {"access_order", r.access_order},
              {"ytd", r.ytd},
              {"duration_s", r.duration_s},
              {"warmup_s", r.warmup_s},
              {"run_transactions", r.transactions},
              {"warmup_transactions", r.warmup_transactions},
              {"seed", o.seed}};
  if (steps) {
    out["team_size"] = with_steps.team_size;
    out["max_pass_overs"] = with_steps.max_pass_overs;
    out["ctx_placement"] = r.ctx_placement.empty() ? "built-in default" : r.ctx_placement;
  }

  const std::vector<int> before_after = {1, 2, 3, 4};
  bool consistent = true;
  std::vector<ConditionResult> before, after;
  Status error;
  if (o.checks == "on") {
    consistent = RunChecks(o, engine.get(), info, before_after, "before the run", &before, &error);
    if (!error.ok()) return Failure(o, "consistency check", error);
    out["conditions_before"] = ConditionsJson(before);
  }
  if (Status s = RecordRunStart(engine.get(), &info); !s.ok()) return Failure(o, "run", s);
  if (r.prewarm) {
    uint64_t pages = 0;
    if (Status s = engine->database()->Prewarm(&pages); !s.ok()) return Failure(o, "prewarm", s);
    Say(o, "prewarmed the buffer pool: %llu pages (%.0f MiB)\n",
        static_cast<unsigned long long>(pages), double(pages) * 8192 / (1 << 20));
    out["prewarmed_pages"] = pages;
  }

  char length[96];
  if (r.transactions > 0) {
    std::snprintf(length, sizeof length, "%llu transactions (warm-up %llu)",
                  static_cast<unsigned long long>(r.transactions),
                  static_cast<unsigned long long>(r.warmup_transactions));
  } else {
    std::snprintf(length, sizeof length, "%.1f s (warm-up %.1f s)", ro.duration_s, ro.warmup_s);
  }
  Say(o, "running %u users on %u workers for %s, %u warehouses, commit %s, mix %s\n", ro.users,
      engine->workers(), length, info.warehouses, o.commit.c_str(), mix.ToString().c_str());
  auto progress = [&](const RunProgress& p) {
    Say(o,
        "[%6.1fs]%s %8.0f tx/s | NO %llu P %llu OS %llu D %llu SL %llu | p95 %.3f ms | aborts "
        "%llu\n",
        p.elapsed_s, p.warming_up ? " warm-up" : "", p.interval_tx_per_s,
        static_cast<unsigned long long>(p.completed[0]),
        static_cast<unsigned long long>(p.completed[1]),
        static_cast<unsigned long long>(p.completed[2]),
        static_cast<unsigned long long>(p.completed[3]),
        static_cast<unsigned long long>(p.completed[4]), p.interval_p95_ns * 1e-6,
        static_cast<unsigned long long>(p.aborts));
  };
  RunResult res;
  steps::ResetStats();
  Status run = sm::tpcc::Run(engine.get(), info, ro, progress, &res);
  if (!run.ok()) return Failure(o, "run", run);
  const std::vector<steps::TeamStats> teams = steps::Stats();
  PrintSummary(o, r, mix, res, *engine, ro.users);
  out["steps_teams"] = PrintTeams(o, steps, teams);
  if (r.steps == "auto") out["steps_adaptive"] = PrintAdaptive(o);

  if (o.checks == "on") {
    bool ok = RunChecks(o, engine.get(), info, before_after, "after the run", &after, &error);
    if (!error.ok()) return Failure(o, "consistency check", error);
    consistent = consistent && ok;
    out["conditions_after"] = ConditionsJson(after);
  }
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);

  out["consistency"] = o.checks != "on" ? "not checked" : consistent ? "pass" : "fail";
  out["measured_s"] = res.measured_s;
  out["throughput_tx_per_s"] = res.tx_per_s;
  out["nopm"] = res.nopm;
  out["nopm_note"] = "New-Orders per minute, rollbacks included; NOPM, not an audited tpmC";
  out["completed"] = res.completed;
  json types = json::object();
  for (int t = 0; t < kTxnTypeCount; ++t) {
    const TypeResult& tr = res.types[t];
    json j = {{"count", tr.completed},
              {"mix_percent", res.mix_percent[t]},
              {"deadlock_retries", tr.deadlock_retries},
              {"lock_timeout_retries", tr.lock_timeout_retries},
              {"latency", LatencyJson(tr.latency)}};
    if (t == 0) j["rolled_back"] = tr.rolled_back;
    types[TxnTypeName(static_cast<TxnType>(t))] = j;
  }
  out["transactions"] = types;
  out["latency"] = LatencyJson(res.latency);
  out["aborts"] = {{"deadlock", res.deadlock_retries}, {"lock_timeout", res.lock_timeout_retries}};
  out["input_audit"] = {{"new_order_rollback_percent", res.new_order_rollback_percent},
                        {"order_lines_per_order", res.order_lines_per_order},
                        {"remote_order_line_percent", res.remote_order_line_percent},
                        {"remote_payment_percent", res.remote_payment_percent},
                        {"payment_by_name_percent", res.payment_by_name_percent},
                        {"order_status_by_name_percent", res.order_status_by_name_percent}};
  const EngineStats& e = res.engine;
  out["buffer_pool"] = {{"bytes_option", o.buffer_pool},     {"hits", e.pool_hits},
                        {"hinted_hits", e.pool_hinted_hits}, {"misses", e.pool_misses},
                        {"writes", e.pool_writes},           {"dirty_pages", e.pool_dirty_pages}};
  out["locks"] = {{"requests", e.lock_requests},
                  {"waits", e.lock_waits},
                  {"deadlocks", e.deadlocks},
                  {"timeouts", e.lock_timeouts}};
  out["log"] = {{"bytes", e.log_bytes},
                {"syncs", e.log_syncs},
                {"commits_per_sync", e.commits_per_sync},
                {"space_waits", e.log_space_waits}};
  Say(o, "consistency: %s\n", out["consistency"].get<std::string>().c_str());
  if (Json(o)) std::printf("%s\n", out.dump().c_str());
  return consistent ? 0 : kExitFailed;
}

int Main(int argc, char** argv) {
  CLI::App app{"TPC-C-like workload over the storage manager (not an audited TPC-C)", "tpcc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tpcc ") + sm::Version() + " (revision " +
                                        GitRevision() + ")");
  CommonOptions common;
  RunCliOptions run;
  CheckCliOptions check;
  CLI::App* load_cmd =
      app.add_subcommand("load", "populate a database per clause 4.3 (or reuse it)");
  CLI::App* run_cmd = app.add_subcommand("run", "run the transaction mix");
  CLI::App* check_cmd =
      app.add_subcommand("check", "check the consistency conditions (clause 3.3.2)");
  QueryCliOptions query;
  CLI::App* query_cmd = app.add_subcommand(
      "query", "run CH-benCHmark queries on a loaded database (needs `tpcc load --ch`)");
  HtapCliOptions htap;
  CLI::App* htap_cmd = app.add_subcommand(
      "htap", "the TPC-C mix and CH-benCHmark query streams at once, and each alone");
  ExportCliOptions export_options;
  CLI::App* export_cmd =
      app.add_subcommand("export", "write every table as CSV, for loading into other engines");
  for (CLI::App* cmd : {load_cmd, run_cmd, check_cmd, query_cmd, htap_cmd, export_cmd}) {
    AddCommon(cmd, &common);
  }
  AddQueryOptions(query_cmd, &query);
  AddExportOptions(export_cmd, &export_options);
  AddHtapOptions(htap_cmd, &htap);
  load_cmd->add_flag("--ch", common.ch,
                     "also load the CH-benCHmark's SUPPLIER, NATION and REGION (on a loaded "
                     "database: only those)");
  load_cmd
      ->add_option("--load-fibers", common.load_fibers,
                   "loading fibers per worker; with --workers 1 --load-fibers 1 the units "
                   "load one after another, so every load lays out the same pages")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  CrashTestOptions crash;
  CrashChildOptions crash_child;
  CLI::App* crash_cmd = app.add_subcommand(
      "crash-test", "kill and recover a small TPC-C database again and again; check every commit");
  AddCrashTestOptions(crash_cmd, &crash);
  // The processes crash-test starts and kills (not for use by hand).
  CLI::App* crash_child_cmd = app.add_subcommand("crash-test-child", "")->group("");
  AddCrashChildOptions(crash_child_cmd, &crash_child);
  run_cmd->add_option("--users", run.users, "terminals, one fiber each (default 10 per warehouse)");
  run_cmd->add_option("--duration", run.duration_s, "measured seconds")->capture_default_str();
  run_cmd->add_option("--warmup", run.warmup_s, "seconds run before measuring")
      ->capture_default_str();
  run_cmd->add_option("--transactions", run.transactions,
                      "run this many measured transactions instead of --duration");
  run_cmd->add_option("--warmup-transactions", run.warmup_transactions,
                      "with --transactions: this many run first, not measured");
  run_cmd->add_flag("--prewarm", run.prewarm,
                    "read the database into the buffer pool before the run (as far as it fits)");
  run_cmd->add_flag("--callgrind-window", run.callgrind_window,
                    "with --transactions under valgrind --tool=callgrind --collect-atstart=no: "
                    "collect only the measured transactions (dumped as part 'tpcc window')");
  run_cmd
      ->add_option("--mix", run.mix,
                   "weights new_order,payment,order_status,delivery,stock_level, or one name")
      ->capture_default_str();
  run_cmd
      ->add_option("--think-time", run.think_time,
                   "mean think time in seconds after each transaction, or 'spec'")
      ->capture_default_str();
  run_cmd
      ->add_option("--access-order", run.access_order,
                   "New-Order and Payment: 'hot-last' (warehouse and district rows last, "
                   "shorter lock holds) or 'spec' (the order clause 2.4.2.2 / 2.5.2.2 lists)")
      ->capture_default_str();
  run_cmd
      ->add_option("--ytd", run.ytd,
                   "Payment's warehouse and district year-to-date sums: 'add' (an increment "
                   "lock that Payments share) or 'update' (read for update and write back)")
      ->capture_default_str();
  run_cmd
      ->add_option("--steps", run.steps,
                   "on, off or auto: run storage operations in STEPS teams (auto: each worker "
                   "probes with teams and without and runs the faster)")
      ->capture_default_str();
  run_cmd->add_option("--team-size", run.team_size, "STEPS team-size cap (default 32)")
      ->check(CLI::Range(1u, 1000000u));
  run_cmd
      ->add_option("--max-pass-overs", run.max_pass_overs,
                   "STEPS: picks that may pass over the oldest waiting team for the team the "
                   "last member joined (default 4096)")
      ->check(CLI::Range(1u, 1000000000u));
  run_cmd->add_option("--ctx-placement", run.ctx_placement,
                      "STEPS CTX placement file (default: the built-in placement)");
  check_cmd->add_option("--conditions", check.conditions,
                        "which conditions, e.g. 1-4,6 or all (default: all that apply; 11 only "
                        "before the first run)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (common.interval_s < 0) return UsageError("--interval must not be negative");
  if (crash_cmd->parsed()) return CrashTest(crash);
  if (crash_child_cmd->parsed()) return CrashTestChild(crash_child);
  if (load_cmd->parsed()) return LoadCommand(common);
  if (run_cmd->parsed()) return RunCommand(common, run);
  if (query_cmd->parsed()) return QueryCommand(common, query);
  if (export_cmd->parsed()) return ExportCommand(common, export_options);
  if (htap_cmd->parsed()) return HtapCommand(common, htap);
  return CheckCommand(common, check);
}

}  // namespace
}  // namespace sm::tpcc

int main(int argc, char** argv) { return sm::tpcc::Main(argc, argv); }
