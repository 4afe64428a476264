// tpcc: the TPC-C driver over our storage manager.
//
//   tpcc load  [-w N] [--db PATH] ...   populate a database (or reuse one loaded with N)
//   tpcc run   [-w N] [--users U] ...   run the mix; conditions 1-4 before and after
//   tpcc check [-w N] [--conditions L]  the consistency conditions of clause 3.3.2, read-only
//                                       (--recover: read-write, recovering first if needed)
//   tpcc ycsb load|run [--workload W]   the YCSB-like key-value workload (tpcc/ycsb.h)
//   tpcc query N|all [--format F] ...   CH-benCHmark queries (tables from `tpcc load --ch`),
//                                       read-only
//   tpcc htap [--query-streams S] ...  the mix and query streams at once, and each alone
//   tpcc export DIR                     every table as CSV (dates ISO 8601, money decimal),
//                                       read-only
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
#include <sys/statvfs.h>
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
#include <filesystem>
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
#include "tpcc/run_command.h"
#include "tpcc/sm_engine.h"
#include "tpcc/ycsb_command.h"

namespace sm::tpcc {
namespace {

using json = nlohmann::json;

struct CheckCliOptions {
  std::string conditions;  // empty: all that apply
  // Open read-write, running restart recovery if the last run crashed; without it the check
  // opens read-only and changes nothing (a database that needs recovery is refused).
  bool recover = false;
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

std::vector<int> DefaultConditions(const DatabaseInfo& info) {
  std::vector<int> c;
  for (int n = 1; n <= kConditionCount; ++n) {
    if (n != 11 || info.fresh()) c.push_back(n);
  }
  return c;
}

// ---- load ----------------------------------------------------------------------------------

// The bytes of the files under `dir` (0 if it cannot be read).
uint64_t DirectoryBytes(const std::string& dir) {
  std::error_code error;
  uint64_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file(error)) bytes += it->file_size(error);
  }
  return bytes;
}

// A load that cannot fit is refused before it starts, not when the disk fills part way.
int CheckFreeSpace(const CommonOptions& o, uint64_t expected_bytes) {
  struct statvfs fs {};
  if (::statvfs(o.db.c_str(), &fs) != 0) return 0;  // unknown: the load itself will tell
  // The database holds its first log segment already, and that is part of the expected size.
  const uint64_t free_bytes = uint64_t(fs.f_bavail) * fs.f_frsize;
  if (free_bytes + DirectoryBytes(o.db) >= expected_bytes) return 0;
  std::fprintf(stderr,
               "tpcc: a load of %u warehouses takes about %s on disk, and %s has %s free: free "
               "some space, load fewer warehouses, or choose another --db\n",
               o.warehouses, BytesText(expected_bytes).c_str(), o.db.c_str(),
               BytesText(free_bytes).c_str());
  return kExitFailed;
}


int LoadCommand(const CommonOptions& o) {
  std::unique_ptr<Engine> engine;
  if (int rc = OpenAnyEngine(o, /*create=*/true, &engine); rc != 0) return rc;
  bool created = false;
  if (Status s = engine->OpenSchema(Schema::kTpcc, /*create=*/true, &created); !s.ok()) {
    return Failure(o, "schema", s);
  }
  DatabaseInfo info;
  Status s = ReadDatabaseInfo(engine.get(), &info);
  json out = {{"command", "load"},
              {"engine", o.engine},
              {"db", EngineDirectory(o)},
              {"git_revision", GitRevision()}};
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
    const uint64_t expected_bytes = ExpectedLoadBytes(o.warehouses, lo.scale);
    out["expected_bytes"] = expected_bytes;
    if (int rc = CheckFreeSpace(o, expected_bytes); rc != 0) {
      engine->Close().PermitUnchecked();
      return rc;
    }
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
    auto* ours = dynamic_cast<SmEngine*>(engine.get());
    if (ours == nullptr) {
      engine->Close().PermitUnchecked();
      return UsageError("--ch loads the CH-benCHmark tables for our query layer: --engine sm only");
    }
    if (int rc = LoadChTables(o, ours); rc != 0) return rc;
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
  if (Json(o)) Emit(out.dump() + "\n");
  return ok ? 0 : kExitFailed;
}

// ---- check ---------------------------------------------------------------------------------

int CheckCommand(const CommonOptions& o, const CheckCliOptions& c) {
  std::unique_ptr<Engine> engine;
  if (int rc = OpenAnyEngine(o, /*create=*/false, &engine, /*read_only=*/!c.recover); rc != 0) {
    return rc;
  }
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
                {"engine", o.engine},
                {"db", EngineDirectory(o)},
                {"warehouses", info.warehouses},
                {"consistency", ok ? "pass" : "fail"},
                {"conditions", ConditionsJson(results)},
                {"git_revision", GitRevision()}};
    Emit(out.dump() + "\n");
  }
  return ok ? 0 : kExitFailed;
}

// ---- drop ----------------------------------------------------------------------------------

int DropCommand(const CommonOptions& o) {
  const uint64_t bytes = DirectoryBytes(o.db);
  sm::Options options;
  options.path = o.db;
  Status s = sm::DestroyDatabase(options);
  if (!s.ok()) {
    Failure(o, "drop", s);
    // Busy, or a path that is not a database: the work asked for cannot be done.
    return kExitFailed;
  }
  Say(o, "removed the database at %s (%s)\n", o.db.c_str(), BytesText(bytes).c_str());
  if (Json(o)) {
    Emit(json{{"command", "drop"}, {"db", o.db}, {"bytes", bytes}}.dump() + "\n");
  }
  return 0;
}

// An unknown verb is named, with the verbs there are (CLI11 would call it an extra argument).
int CheckVerb(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return 0;  // none, or an option such as --help
  std::string verbs;
  for (const CLI::App* cmd : app.get_subcommands({})) {
    if (cmd->get_name() == argv[1]) return 0;
    if (cmd->get_group().empty()) continue;  // hidden
    verbs += (verbs.empty() ? "" : ", ") + cmd->get_name();
  }
  return UsageError(std::string("unknown verb '") + argv[1] + "'; the verbs are " + verbs +
                    " (`tpcc VERB --help` for each)");
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
  YcsbCliOptions ycsb;
  CLI::App* ycsb_cmd = app.add_subcommand(
      "ycsb", "the YCSB-like key-value workload: `ycsb load`, then `ycsb run --workload a`");
  CLI::App* ycsb_load_cmd = nullptr;
  CLI::App* ycsb_run_cmd = nullptr;
  AddYcsbCommands(ycsb_cmd, &common, &ycsb, &ycsb_load_cmd, &ycsb_run_cmd);
  CrashTestOptions crash;
  CrashChildOptions crash_child;
  CLI::App* crash_cmd = app.add_subcommand(
      "crash-test", "kill and recover a small TPC-C database again and again; check every commit");
  AddCrashTestOptions(crash_cmd, &crash);
  // The processes crash-test starts and kills (not for use by hand).
  CLI::App* crash_child_cmd = app.add_subcommand("crash-test-child", "")->group("");
  AddCrashChildOptions(crash_child_cmd, &crash_child);
  AddRunOptions(run_cmd, &run);
  check_cmd->add_option("--conditions", check.conditions,
                        "which conditions, e.g. 1-4,6 or all (default: all that apply; 11 only "
                        "before the first run)");
  check_cmd->add_flag("--recover", check.recover,
                      "open read-write, recovering a database the last run did not close "
                      "(default: read-only, changing nothing)");
  CLI::App* drop_cmd = app.add_subcommand(
      "drop", "remove a database (only a database directory: anything else is refused)");
  drop_cmd->add_option("--db", common.db, "database directory")->capture_default_str();
  drop_cmd->add_option("--output", common.output, "plain or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"plain", "json"}));
  if (int rc = CheckVerb(app, argc, argv); rc != 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (Csv(common) && !run_cmd->parsed()) {
    return UsageError("--output csv is for `tpcc run` (a row per --interval); use plain or json");
  }
  if (common.engine != "sm" && !load_cmd->parsed() && !run_cmd->parsed() &&
      !check_cmd->parsed() && !ycsb_cmd->parsed()) {
    return UsageError("--engine " + common.engine +
                      ": only load, run, check and ycsb run on another engine; the other verbs "
                      "are our engine's");
  }
  if (ycsb_cmd->parsed()) {
    // A YCSB database lives apart from TPC-C's unless --db says otherwise.
    CLI::App* verb = ycsb_load_cmd->parsed() ? ycsb_load_cmd : ycsb_run_cmd;
    if (verb->count("--db") == 0) common.db = "./data/ycsb";
    return ycsb_load_cmd->parsed() ? YcsbLoadCommand(common, ycsb) : YcsbRunCommand(common, ycsb);
  }
  if (drop_cmd->parsed()) return DropCommand(common);
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
