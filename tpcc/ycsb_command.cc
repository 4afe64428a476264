// `tpcc ycsb load` and `tpcc ycsb run`: see ycsb_command.h.
#include "tpcc/ycsb_command.h"

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tpcc/ycsb.h"

namespace sm::tpcc {
namespace {

using json = nlohmann::json;

constexpr double kMaxSeconds = 365 * 86400.0;
constexpr uint64_t kMaxRecords = 1'000'000'000'000;

json BaseJson(const CommonOptions& o, const char* command) {
  return {{"command", command},
          {"engine", o.engine},
          {"db", EngineDirectory(o)},
          {"git_revision", GitRevision()}};
}

int Load(const CommonOptions& o, const YcsbCliOptions& y, Engine* engine, json* out) {
  YcsbLoadOptions lo;
  lo.records = y.records;
  lo.progress_interval_s = o.interval_s > 0 ? o.interval_s : 1;
  if (o.interval_s > 0) {
    lo.progress = [&](uint64_t done, double seconds) {
      Say(o, "ycsb load [%6.1fs] %5.1f%% %12llu records %9.0f records/s\n", seconds,
          100.0 * static_cast<double>(done) / static_cast<double>(y.records),
          static_cast<unsigned long long>(done), seconds > 0 ? done / seconds : 0);
    };
  }
  Say(o, "loading %llu YCSB records into %s on %u workers (%s)\n",
      static_cast<unsigned long long>(y.records), EngineDirectory(o).c_str(), engine->workers(),
      engine->Describe().c_str());
  YcsbLoadResult result;
  if (Status s = YcsbLoad(engine, lo, &result); !s.ok()) return Failure(o, "ycsb load", s);
  Say(o, "loaded %llu records in %.2f s (%.0f records/s; %llu batches retried)\n",
      static_cast<unsigned long long>(result.records), result.seconds,
      result.seconds > 0 ? result.records / result.seconds : 0,
      static_cast<unsigned long long>(result.retried_batches));
  (*out)["load_seconds"] = result.seconds;
  (*out)["retried_batches"] = result.retried_batches;
  return 0;
}

void SaySummary(const CommonOptions& o, const YcsbRunResult& r) {
  Say(o, "%llu operations in %.2f s: %.0f ops/s, p95 %.3f ms, p99 %.3f ms, %llu retries\n",
      static_cast<unsigned long long>(r.ops), r.measured_s, r.ops_per_s, r.latency.p95_ms,
      r.latency.p99_ms, static_cast<unsigned long long>(r.retries));
  for (int i = 0; i < kYcsbOpCount; ++i) {
    if (r.ops_by_type[i] == 0) continue;
    const LatencySummary& l = r.latency_by_type[i];
    Say(o, "  %-6s %12llu  mean %.3f ms  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f\n",
        YcsbOpName(static_cast<YcsbOp>(i)), static_cast<unsigned long long>(r.ops_by_type[i]),
        l.mean_ms, l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms);
  }
  if (r.scanned_records > 0) {
    Say(o, "  %llu records scanned\n", static_cast<unsigned long long>(r.scanned_records));
  }
}

void AddResultJson(const YcsbRunResult& r, json* out) {
  (*out)["measured_s"] = r.measured_s;
  (*out)["ops"] = r.ops;
  (*out)["throughput_ops_per_s"] = r.ops_per_s;
  (*out)["latency"] = LatencyJson(r.latency);
  json types = json::object();
  for (int i = 0; i < kYcsbOpCount; ++i) {
    if (r.ops_by_type[i] > 0)
      types[YcsbOpName(static_cast<YcsbOp>(i))] = LatencyJson(r.latency_by_type[i]);
  }
  (*out)["operations"] = types;
  (*out)["retries"] = r.retries;
  (*out)["scanned_records"] = r.scanned_records;
  (*out)["workers"] = r.workers;
  (*out)["interrupted"] = r.interrupted;
}

}  // namespace

void AddYcsbCommands(CLI::App* ycsb, CommonOptions* common, YcsbCliOptions* y, CLI::App** load_cmd,
                     CLI::App** run_cmd) {
  ycsb->require_subcommand(1);
  *load_cmd = ycsb->add_subcommand("load", "load the usertable (or reuse a load of --records)");
  *run_cmd = ycsb->add_subcommand("run", "run one workload with one request distribution");
  for (CLI::App* cmd : {*load_cmd, *run_cmd}) {
    AddCommon(cmd, common);
    cmd->add_option_function<uint64_t>(
           "--records",
           [y](uint64_t n) {
             y->records = n;
             y->records_given = true;
           },
           "records to load (run: checked against the load)")
        ->default_str(std::to_string(y->records))
        ->check(NumberIn<uint64_t>(1, kMaxRecords));
  }
  (*run_cmd)
      ->add_option("--workload", y->workload,
                   "a (50 % read, 50 % update), b (95/5), c (read only) or e (95 % short scans, "
                   "5 % inserts)")
      ->capture_default_str()
      ->check(CLI::IsMember({"a", "b", "c", "e"}));
  (*run_cmd)
      ->add_option("--distribution", y->distribution,
                   "request distribution: uniform, or zipfian (YCSB's scrambled Zipfian, "
                   "theta 0.99)")
      ->capture_default_str()
      ->check(CLI::IsMember({"uniform", "zipfian"}));
  (*run_cmd)
      ->add_option("--users", y->users, "terminals (default: one per worker)")
      ->check(NumberIn(1u, 1'000'000u));
  (*run_cmd)
      ->add_option("--duration", y->duration_s, "measured seconds")
      ->capture_default_str()
      ->check(NumberIn(0.001, kMaxSeconds));
  (*run_cmd)
      ->add_option("--warmup", y->warmup_s, "seconds before the measurement")
      ->capture_default_str()
      ->check(NumberIn(0.0, kMaxSeconds));
  (*run_cmd)->add_flag("--prewarm", y->prewarm,
                       "read the database into the buffer pool before the run (as far as it "
                       "fits; our engine only)");
}

int YcsbLoadCommand(const CommonOptions& o, const YcsbCliOptions& y) {
  std::unique_ptr<Engine> engine;
  if (int rc = OpenAnyEngine(o, /*create=*/true, &engine); rc != 0) return rc;
  json out = BaseJson(o, "ycsb load");
  YcsbInfo info;
  Status s = OpenYcsb(engine.get(), &info);
  const bool reused = s.ok();
  if (reused) {
    if (y.records_given && info.records != y.records) {
      engine->Close().PermitUnchecked();
      return UsageError("the database at " + EngineDirectory(o) + " holds a YCSB load of " +
                        std::to_string(info.records) + " records, not " +
                        std::to_string(y.records) + ": remove it or choose another --db");
    }
    Say(o, "reusing the YCSB load at %s: %llu records\n", EngineDirectory(o).c_str(),
        static_cast<unsigned long long>(info.records));
  } else if (!s.IsNotFound()) {
    return Failure(o, "reading the database", s);
  } else if (int rc = Load(o, y, engine.get(), &out); rc != 0) {
    return rc;
  }
  if (Status c = engine->Close(); !c.ok()) return Failure(o, "close", c);
  out["reused"] = reused;
  out["records"] = reused ? info.records : y.records;
  if (Json(o)) Emit(out.dump() + "\n");
  return 0;
}

int YcsbRunCommand(const CommonOptions& o, const YcsbCliOptions& y) {
  YcsbRunOptions ro;
  if (!ParseYcsbWorkload(y.workload, &ro.workload) ||
      !ParseYcsbDistribution(y.distribution, &ro.distribution)) {
    return UsageError("--workload takes a, b, c or e and --distribution uniform or zipfian");
  }
  // Before the engine starts its threads, so that they inherit the blocked signals.
  StartSignalThread();
  std::unique_ptr<Engine> engine;
  if (int rc = OpenAnyEngine(o, /*create=*/false, &engine); rc != 0) return rc;
  YcsbInfo info;
  if (Status s = OpenYcsb(engine.get(), &info); !s.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "ycsb run", s);
  }
  if (y.records_given && info.records != y.records) {
    engine->Close().PermitUnchecked();
    return UsageError("the database holds " + std::to_string(info.records) + " records, not " +
                      std::to_string(y.records));
  }
  ro.users = y.users != 0 ? y.users : engine->workers();
  ro.duration_s = y.duration_s;
  ro.warmup_s = y.warmup_s;
  ro.seed = o.seed;
  ro.interval_s = o.interval_s;
  json out = BaseJson(o, "ycsb run");
  out["engine_description"] = engine->Describe();
  out["workload"] = y.workload;
  out["distribution"] = y.distribution;
  out["records"] = info.records;
  out["users"] = ro.users;
  out["commit"] = o.commit;
  out["duration_s"] = ro.duration_s;
  out["warmup_s"] = ro.warmup_s;
  if (y.prewarm) {
    if (int rc = Prewarm(o, engine.get(), &out); rc != 0) return rc;
  }
  Say(o,
      "ycsb workload %s, %s, %llu records: %u users on %u workers for %.1f s (warm-up %.1f s), "
      "commit %s\n%s\n",
      y.workload.c_str(), y.distribution.c_str(), static_cast<unsigned long long>(info.records),
      ro.users, engine->workers(), ro.duration_s, ro.warmup_s, o.commit.c_str(),
      engine->Describe().c_str());
  auto progress = [&](const YcsbProgress& p) {
    Say(o, "ycsb [%6.1fs]%s %10.0f ops/s  p95 %.3f ms\n", p.elapsed_s,
        p.warming_up ? " warm-up" : "", p.ops_per_s, p.p95_ms);
  };
  std::atomic<bool> stop{false};
  ro.stop = &stop;
  SetStopFlag(&stop);
  YcsbRunResult res;
  Status run = YcsbRun(engine.get(), info, ro, progress, &res);
  SetStopFlag(nullptr);  // a signal from here on ends the process
  if (!run.ok()) return Failure(o, "ycsb run", run);
  SaySummary(o, res);
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);
  AddResultJson(res, &out);
  if (Json(o)) Emit(out.dump() + "\n");
  if (res.ops == 0) {
    std::fprintf(stderr, "tpcc: the run completed no operation: there is nothing to report\n");
    return kExitFailed;
  }
  if (StopSignal() != 0) ExitBySignal(StopSignal());
  return 0;
}

}  // namespace sm::tpcc
