// `tpcc run`: see run_command.h.
#include "tpcc/run_command.h"

#include <valgrind/callgrind.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sm/common/assert.h"
#include "steps/steps.h"
#include "tpcc/consistency.h"
#include "tpcc/driver.h"
#include "tpcc/sm_engine.h"

namespace sm::tpcc {
namespace {

using json = nlohmann::json;

// The largest --duration and --warmup (a year), --transactions and --warmup-transactions.
constexpr double kMaxSeconds = 365 * 86400.0;
constexpr uint64_t kMaxTransactions = 1'000'000'000'000;

// ---- progress: a line per interval, or a CSV row --------------------------------------------

void SayProgress(const CommonOptions& o, const RunProgress& p) {
  std::string counts;
  for (int t = 0; t < kTxnTypeCount; ++t) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %llu", t == 0 ? "" : "  ",
                  TxnTypeTitle(static_cast<TxnType>(t)),
                  static_cast<unsigned long long>(p.completed[t]));
    counts += buf;
  }
  Say(o, "[%6.1fs%s] last %.1f s: %7.0f tx/s | %s | p90 %.3f ms  p95 %.3f ms | aborts %llu\n",
      p.elapsed_s, p.warming_up ? " warm-up" : "", p.interval_s, p.tx_per_s, counts.c_str(),
      p.latency.p90_ms, p.latency.p95_ms, static_cast<unsigned long long>(p.aborts));
}

std::string CsvHeader() {
  std::string h = "elapsed_s,phase,interval_s,tx_per_s";
  for (int t = 0; t < kTxnTypeCount; ++t) h += std::string(",") + TxnTypeName(static_cast<TxnType>(t));
  return h + ",aborts,mean_ms,p50_ms,p90_ms,p95_ms,p99_ms\n";
}

std::string CsvRow(const RunProgress& p) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "%.3f,%s,%.3f,%.1f", p.elapsed_s,
                        p.warming_up ? "warmup" : "measured", p.interval_s, p.tx_per_s);
  for (int t = 0; t < kTxnTypeCount; ++t) {
    n += std::snprintf(buf + n, sizeof buf - n, ",%llu",
                       static_cast<unsigned long long>(p.completed[t]));
  }
  std::snprintf(buf + n, sizeof buf - n, ",%llu,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                static_cast<unsigned long long>(p.aborts), p.latency.mean_ms, p.latency.p50_ms,
                p.latency.p90_ms, p.latency.p95_ms, p.latency.p99_ms);
  return buf;
}

// ---- the summary ----------------------------------------------------------------------------

// Whether a type's p90 is within its clause 5.2.5.3 limit; a type that did not run has no p90
// and passes.
bool WithinP90Limit(const RunResult& res, int t) {
  return res.types[t].completed == 0 || res.types[t].latency.p90_ms <= kP90LimitS[t] * 1000;
}

bool AllWithinP90Limits(const RunResult& res) {
  for (int t = 0; t < kTxnTypeCount; ++t) {
    if (!WithinP90Limit(res, t)) return false;
  }
  return true;
}

void SayLatencyTable(const CommonOptions& o, const RunResult& res) {
  Say(o, "%-13s %10s %7s %9s %9s %9s %9s %9s %9s %8s %8s  %s\n", "transaction", "count", "mix%",
      "p50 ms", "p90 ms", "p95 ms", "p99 ms", "max ms", "mean ms", "deadlk", "timeout",
      "p90 limit");
  auto row = [&](const char* name, uint64_t count, double mix, const LatencySummary& l,
                 uint64_t deadlocks, uint64_t timeouts, const std::string& limit) {
    Say(o, "%-13s %10llu %6.2f%% %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %8llu %8llu%s%s\n", name,
        static_cast<unsigned long long>(count), mix, l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms,
        l.max_ms, l.mean_ms, static_cast<unsigned long long>(deadlocks),
        static_cast<unsigned long long>(timeouts), limit.empty() ? "" : "  ", limit.c_str());
  };
  for (int t = 0; t < kTxnTypeCount; ++t) {
    const TypeResult& tr = res.types[t];
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.0f s %s", kP90LimitS[t],
                  tr.completed == 0 ? "(none ran)" : WithinP90Limit(res, t) ? "ok" : "EXCEEDED");
    row(TxnTypeTitle(static_cast<TxnType>(t)), tr.completed, res.mix_percent[t], tr.latency,
        tr.deadlock_retries, tr.lock_timeout_retries, limit);
  }
  row("all", res.completed, 100.0, res.latency, res.deadlock_retries, res.lock_timeout_retries,
      "");
  Say(o,
      "response:    p90 %s the limits of clause 5.2.5.3 (Delivery runs in place: its 5 s "
      "covers the whole of it)\n",
      AllWithinP90Limits(res) ? "within" : "BEYOND some of");
}

// The audit figures of clause 9.2.2.5 with their bands. The remote ones need a second
// warehouse (clause 2.4.1.5, 2.5.1.2): with one they are not figures that missed their band.
void SayInputAudit(const CommonOptions& o, const RunResult& res, uint32_t warehouses) {
  char remote[160];
  if (warehouses > 1) {
    std::snprintf(remote, sizeof remote,
                  "remote lines %.2f%% [0.95-1.05], remote payments %.2f%% [14-16]",
                  res.remote_order_line_percent, res.remote_payment_percent);
  } else {
    std::snprintf(remote, sizeof remote,
                  "remote lines and payments do not apply (one warehouse: none is remote)");
  }
  Say(o,
      "input audit: rollbacks %.2f%% [0.9-1.1], lines/order %.2f [9.5-10.5], payment by name "
      "%.2f%% [57-63], order-status by name %.2f%% [57-63], %s\n",
      res.new_order_rollback_percent, res.order_lines_per_order, res.payment_by_name_percent,
      res.order_status_by_name_percent, remote);
}

void PrintSummary(const CommonOptions& o, const RunCliOptions& r, const Mix& mix,
                  const RunResult& res, const Engine& engine, uint32_t users,
                  uint32_t warehouses) {
  Say(o, "\n== TPC-C-like run (not an audited TPC-C result) ==\n");
  Say(o, "engine:      %s\n", engine.Describe().c_str());
  Say(o,
      "setup:       %u users, commit %s, mix %s, think time %s, access order %s, ytd %s, "
      "STEPS %s\n",
      users, o.commit.c_str(), mix.ToString().c_str(), r.think_time.c_str(), r.access_order.c_str(),
      r.ytd.c_str(), r.steps.c_str());
  Say(o, "measured:    %.2f s (warm-up %.1f s)%s\n", res.measured_s, r.warmup_s,
      res.interrupted ? ", ended early by a signal" : "");
  Say(o,
      "throughput:  %.0f tx/s, %.0f NOPM (New-Orders per minute, rollbacks included; NOPM, not an "
      "audited tpmC)\n",
      res.tx_per_s, res.nopm);
  SayLatencyTable(o, res);
  Say(o,
      "aborts:      %llu deadlock victims, %llu lock timeouts (all retried); %llu New-Order "
      "rollbacks (completed)\n",
      static_cast<unsigned long long>(res.deadlock_retries),
      static_cast<unsigned long long>(res.lock_timeout_retries),
      static_cast<unsigned long long>(res.types[0].rolled_back));
  SayInputAudit(o, res, warehouses);
  Say(o, "delivery:    %llu districts skipped (no undelivered order)\n",
      static_cast<unsigned long long>(res.delivery_skipped_districts));
  const EngineStats& e = res.engine;
  uint64_t fixes = e.pool_hits + e.pool_misses;
  if (o.engine != "sm") {
    // Another engine's adapter fills only what its engine reports (docs/design/engines.md).
    Say(o, "engine:      %llu commits, %llu aborts (as the engine counts them)\n",
        static_cast<unsigned long long>(e.txn_committed),
        static_cast<unsigned long long>(e.txn_aborted));
    if (fixes > 0) {
      Say(o, "cache:       %llu hits, %llu misses, %llu writes\n",
          static_cast<unsigned long long>(e.pool_hits),
          static_cast<unsigned long long>(e.pool_misses),
          static_cast<unsigned long long>(e.pool_writes));
    }
    if (e.lock_requests + e.deadlocks + e.lock_timeouts > 0) {
      Say(o, "locks:       %llu requests, %llu waits, %llu deadlocks, %llu timeouts\n",
          static_cast<unsigned long long>(e.lock_requests),
          static_cast<unsigned long long>(e.lock_waits),
          static_cast<unsigned long long>(e.deadlocks),
          static_cast<unsigned long long>(e.lock_timeouts));
    }
    if (e.log_bytes > 0) {
      Say(o, "log:         %s written, %llu syncs\n", BytesText(e.log_bytes).c_str(),
          static_cast<unsigned long long>(e.log_syncs));
    } else {
      Say(o, "log:         not reported by this engine\n");
    }
    return;
  }
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

// The run's figures in the JSON object (the options are there already).
void AddResultJson(const CommonOptions& o, const RunResult& res, uint32_t warehouses, json* out) {
  json& j = *out;
  j["measured_s"] = res.measured_s;
  j["interrupted"] = res.interrupted;
  j["throughput_tx_per_s"] = res.tx_per_s;
  j["nopm"] = res.nopm;
  j["nopm_note"] = "New-Orders per minute, rollbacks included; NOPM, not an audited tpmC";
  j["completed"] = res.completed;
  json types = json::object();
  for (int t = 0; t < kTxnTypeCount; ++t) {
    const TypeResult& tr = res.types[t];
    json type = {{"count", tr.completed},
                 {"mix_percent", res.mix_percent[t]},
                 {"deadlock_retries", tr.deadlock_retries},
                 {"lock_timeout_retries", tr.lock_timeout_retries},
                 {"latency", LatencyJson(tr.latency)},
                 {"p90_limit_ms", kP90LimitS[t] * 1000},
                 {"p90_within_limit", WithinP90Limit(res, t)}};
    if (t == 0) type["rolled_back"] = tr.rolled_back;
    types[TxnTypeName(static_cast<TxnType>(t))] = type;
  }
  j["transactions"] = types;
  j["latency"] = LatencyJson(res.latency);
  j["p90_within_limits"] = AllWithinP90Limits(res);
  j["aborts"] = {{"deadlock", res.deadlock_retries}, {"lock_timeout", res.lock_timeout_retries}};
  j["input_audit"] = {{"new_order_rollback_percent", res.new_order_rollback_percent},
                      {"order_lines_per_order", res.order_lines_per_order},
                      {"remote_applies", warehouses > 1},
                      {"remote_order_line_percent", res.remote_order_line_percent},
                      {"remote_payment_percent", res.remote_payment_percent},
                      {"payment_by_name_percent", res.payment_by_name_percent},
                      {"order_status_by_name_percent", res.order_status_by_name_percent}};
  const EngineStats& e = res.engine;
  j["buffer_pool"] = {{"bytes_option", o.buffer_pool},     {"hits", e.pool_hits},
                      {"hinted_hits", e.pool_hinted_hits}, {"misses", e.pool_misses},
                      {"writes", e.pool_writes},           {"dirty_pages", e.pool_dirty_pages}};
  j["locks"] = {{"requests", e.lock_requests},
                {"waits", e.lock_waits},
                {"deadlocks", e.deadlocks},
                {"timeouts", e.lock_timeouts}};
  j["log"] = {{"bytes", e.log_bytes},
              {"syncs", e.log_syncs},
              {"commits_per_sync", e.commits_per_sync},
              {"space_waits", e.log_space_waits}};
}

// Reads the run's options into *ro and the engine's STEPS settings into *with_steps; returns 0
// or the exit code, having printed why.
int ParseRunOptions(const CommonOptions& o, const RunCliOptions& r, RunOptions* ro,
                    CommonOptions* with_steps) {
  Mix mix;
  if (Status s = Mix::Parse(r.mix, &mix); !s.ok()) return UsageError(std::string(s.message()));
  ro->mix = mix;
  ro->duration_s = r.duration_s;
  ro->warmup_s = r.warmup_s;
  ro->seed = o.seed;
  ro->interval_s = o.interval_s;
  ro->transactions = r.transactions;
  ro->warmup_transactions = r.warmup_transactions;
  if (r.callgrind_window) {
    if (r.transactions == 0) return UsageError("--callgrind-window needs --transactions");
    // Under valgrind --tool=callgrind --collect-atstart=no: collect the measured transactions
    // only (tools/icache). Outside valgrind the client requests do nothing.
    ro->on_window = [](bool open) {
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
    ro->spec_think_times = true;
  } else {
    char* end = nullptr;
    ro->think_time_s = std::strtod(r.think_time.c_str(), &end);
    if (end == r.think_time.c_str() || *end != '\0' || ro->think_time_s < 0) {
      return UsageError(
          "--think-time takes seconds (the mean think time, e.g. 0 or 0.5) or "
          "'spec' (the keying and think times of clause 5.2.5), not '" +
          r.think_time + "'");
    }
  }
  if (!ParseAccessOrder(r.access_order, &ro->access_order)) {
    return UsageError("--access-order takes spec or hot-last, not '" + r.access_order + "'");
  }
  if (!ParseYtdWrite(r.ytd, &ro->ytd_write)) {
    return UsageError("--ytd takes add or update, not '" + r.ytd + "'");
  }
  if (Csv(o) && !(o.interval_s > 0)) {
    return UsageError("--output csv writes a row per --interval: give it a positive --interval");
  }
  if (r.steps != "on" && r.steps != "off" && r.steps != "auto") {
    return UsageError("--steps takes on, off or auto, not '" + r.steps + "'");
  }
  const bool steps = r.steps != "off";
  if ((r.team_size != 0 || r.max_pass_overs != 0 || !r.ctx_placement.empty()) && !steps) {
    return UsageError("--team-size, --max-pass-overs and --ctx-placement need --steps on or auto");
  }
  with_steps->steps = steps;
  with_steps->steps_adaptive = r.steps == "auto";
  if (r.team_size != 0) with_steps->team_size = r.team_size;
  if (r.max_pass_overs != 0) with_steps->max_pass_overs = r.max_pass_overs;
  with_steps->ctx_placement = r.ctx_placement;
  return 0;
}

// The options the run ran with, the first keys of its JSON object.
json OptionsJson(const CommonOptions& o, const RunCliOptions& r, const CommonOptions& with_steps,
                 const Engine& engine, const DatabaseInfo& info, const RunOptions& ro,
                 const Mix& mix) {
  json out = {{"command", "run"},
              {"git_revision", GitRevision()},
              {"db", o.db},
              {"engine_name", o.engine},
              {"engine", engine.Describe()},
              {"warehouses", info.warehouses},
              {"users", ro.users},
              {"workers", engine.workers()},
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
  if (with_steps.steps) {
    out["team_size"] = with_steps.team_size;
    out["max_pass_overs"] = with_steps.max_pass_overs;
    out["ctx_placement"] = r.ctx_placement.empty() ? "built-in default" : r.ctx_placement;
  }

  return out;
}

}  // namespace

void AddRunOptions(CLI::App* run_cmd, RunCliOptions* r) {
  RunCliOptions& run = *r;
  run_cmd->add_option("--users", run.users, "terminals, one fiber each (default 10 per warehouse)")
      ->check(NumberIn(1u, 10 * kMaxWarehouses));
  run_cmd->add_option("--duration", run.duration_s, "measured seconds")
      ->check(NumberIn(0.001, kMaxSeconds))
      ->capture_default_str();
  run_cmd->add_option("--warmup", run.warmup_s, "seconds run before measuring")
      ->check(NumberIn(0.0, kMaxSeconds))
      ->capture_default_str();
  run_cmd
      ->add_option("--transactions", run.transactions,
                   "run this many measured transactions instead of --duration")
      ->check(NumberIn<uint64_t>(1, kMaxTransactions));
  run_cmd
      ->add_option("--warmup-transactions", run.warmup_transactions,
                   "with --transactions: this many run first, not measured")
      ->check(NumberIn<uint64_t>(0, kMaxTransactions));
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
      ->check(NumberIn(1u, 1000000u));
  run_cmd
      ->add_option("--max-pass-overs", run.max_pass_overs,
                   "STEPS: picks that may pass over the oldest waiting team for the team the "
                   "last member joined (default 4096)")
      ->check(NumberIn(1u, 1000000000u));
  run_cmd->add_option("--ctx-placement", run.ctx_placement,
                      "STEPS CTX placement file (default: the built-in placement)");
}

int RunCommand(const CommonOptions& o, const RunCliOptions& r) {
  RunOptions ro;
  CommonOptions with_steps = o;
  if (int rc = ParseRunOptions(o, r, &ro, &with_steps); rc != 0) return rc;
  // Before the engine starts its threads, so that they inherit the blocked signals.
  StartSignalThread();
  std::unique_ptr<Engine> engine;
  if (int rc = OpenAnyEngine(with_steps, /*create=*/false, &engine); rc != 0) return rc;
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine.get(), o.warehouses_given ? o.warehouses : 0, &info); !s.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "run", s);
  }
  ro.users = r.users != 0 ? r.users : 10 * info.warehouses;
  const Mix& mix = ro.mix;
  json out = OptionsJson(o, r, with_steps, *engine, info, ro, mix);

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
    if (int rc = Prewarm(o, engine.get(), &out); rc != 0) return rc;
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
  if (Csv(o)) Emit(CsvHeader());
  auto progress = [&](const RunProgress& p) {
    if (Csv(o)) {
      Emit(CsvRow(p));
    } else {
      SayProgress(o, p);
    }
  };
  std::atomic<bool> stop{false};
  ro.stop = &stop;
  SetStopFlag(&stop);
  RunResult res;
  steps::ResetStats();
  Status run = sm::tpcc::Run(engine.get(), info, ro, progress, &res);
  SetStopFlag(nullptr);  // a signal from here on ends the process
  if (!run.ok()) return Failure(o, "run", run);
  SM_ASSERT(!res.interrupted || StopSignal() != 0);  // only the signal thread sets the flag
  const std::vector<steps::TeamStats> teams = steps::Stats();
  PrintSummary(o, r, mix, res, *engine, ro.users, info.warehouses);
  out["steps_teams"] = PrintTeams(o, with_steps.steps, teams);
  if (r.steps == "auto") out["steps_adaptive"] = PrintAdaptive(o);

  if (o.checks == "on") {
    bool ok = RunChecks(o, engine.get(), info, before_after, "after the run", &after, &error);
    if (!error.ok()) return Failure(o, "consistency check", error);
    consistent = consistent && ok;
    out["conditions_after"] = ConditionsJson(after);
  }
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);

  out["consistency"] = o.checks != "on" ? "not checked" : consistent ? "pass" : "fail";
  AddResultJson(o, res, info.warehouses, &out);
  Say(o, "consistency: %s\n", out["consistency"].get<std::string>().c_str());
  if (Json(o)) Emit(out.dump() + "\n");
  if (!consistent) return kExitFailed;
  if (res.completed == 0) {
    std::fprintf(stderr, "tpcc: the run completed no transaction: there is nothing to report\n");
    return kExitFailed;
  }
  // StopSignal, not res.interrupted: a signal taken just as the run ended still ends the process.
  if (StopSignal() != 0) ExitBySignal(StopSignal());
  return 0;
}

}  // namespace sm::tpcc
