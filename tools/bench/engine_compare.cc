// bench_compare (`tools/run compare`): the TPC-C mix on our engine and on every other engine
// this build has an adapter for (tpcc/engines/engines.h), side by side, with identical
// parameters.
//
// Each engine is loaded once (1 warehouse, `tpcc load --engine E`, reused when it is there
// already) under <db>/loaded (ours in <db>/loaded/sm, another engine's in
// <db>/loaded/<engine>); then --rounds rounds run, each running every combination of --workers
// and --commit on every engine in turn (round robin, so that a slow phase of the machine
// touches all engines alike), each run a `tpcc run --engine E --output json` with as many
// terminals as workers (an engine without fibers runs one terminal per worker thread, so more
// would only queue). Every run starts from a fresh copy of the loaded database in <db>/<engine>:
// a run adds orders, so on a reused database each run would find more data than the last, and
// the engine run later in a round more than the one run earlier. At the end every engine's last
// copy is checked (`tpcc check`). It prints, per engine and combination, the
// median throughput, the median p95 latency, the log bytes per transaction where the engine
// reports them, the database's size and our throughput over the engine's; the last line is one
// JSON object with `<engine>_tx_per_s_<workers>w_<commit>` and
// `sm_over_<engine>_<workers>w_<commit>` keys.
//
// With --ycsb it runs the YCSB-like workload (tpcc/ycsb.h) instead: each engine is loaded once
// with --records records (`tpcc ycsb load`, under <db>/ycsb-<records>), then --rounds rounds
// run every workload and request distribution (a cell) on every engine in turn, with one
// worker count and one commit mode (default 2 workers, async). Ours runs with --prewarm: it
// reads with direct I/O, so each process would start with a cold pool, while the other
// engines' files sit in the operating system's page cache from the runs before; with records
// too many for the warm-up to touch, that measures our disk against their memory. It prints the median operations
// per second per engine and cell, the best other engine's and ours over it; the last line is
// one JSON object with `<engine>_ycsb_<workload>_<distribution>_ops_per_s` and
// `sm_over_best_ycsb_<workload>_<distribution>` keys.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/bench/bench_util.h"
#include "tools/bench/tpcc_process.h"
#include "tpcc/engines/engines.h"

namespace {

using json = nlohmann::json;

struct Options {
  std::string tpcc = "tpcc";
  std::string db = "data/compare";
  double duration_s = 6;
  double warmup_s = 1;
  int rounds = 3;
  std::string workers = "1,2";
  std::string commit = "async,durable";
  std::string engines;  // empty: sm and every engine built in
  std::string buffer_pool = "1G";
  bool ycsb = false;
  uint64_t records = 1'000'000;
  std::string workloads = "a,b,c,e";
  std::string distributions = "uniform,zipfian";
};

using sm::bench::DirectoryBytes;
using sm::bench::Median;
using sm::bench::SplitList;
std::string Quote(const std::string& s) { return sm::bench::ShellWord(s); }

// Runs a tpcc command (its stderr passes through for people); its JSON, or null if it failed.
json RunTpcc(const Options& o, const std::string& args) {
  return sm::bench::RunTpccJson("compare", o.tpcc, args);
}

// The arguments that open `engine`'s database under `base` (<base>/<engine>).
std::string DbArgs(const std::string& base, const std::string& engine) {
  return "--engine " + engine + " --db " + Quote(engine == "sm" ? base + "/sm" : base);
}
std::string DbArgs(const Options& o, const std::string& engine) { return DbArgs(o.db, engine); }
std::string LoadedBase(const Options& o) { return o.db + "/loaded"; }

std::string Directory(const Options& o, const std::string& engine) {
  return o.db + "/" + engine;
}

// Replaces <db>/<engine> with a copy of the loaded database; false (with a message) if it
// cannot.
bool FreshCopy(const Options& o, const std::string& engine) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::remove_all(Directory(o, engine), error);
  if (!error) {
    fs::copy(LoadedBase(o) + "/" + engine, Directory(o, engine), fs::copy_options::recursive,
             error);
  }
  if (error) {
    std::fprintf(stderr, "[compare] cannot copy %s's loaded database to %s: %s\n", engine.c_str(),
                 Directory(o, engine).c_str(), error.message().c_str());
    return false;
  }
  return true;
}

struct Figures {
  std::vector<double> tx_per_s, p95_ms, log_bytes_per_tx;
};

std::string Seconds(const Options& o) {
  char text[64];
  std::snprintf(text, sizeof text, "--duration %g --warmup %g", o.duration_s, o.warmup_s);
  return text;
}

// ---- YCSB ---------------------------------------------------------------------------------

std::string YcsbBase(const Options& o) { return o.db + "/ycsb-" + std::to_string(o.records); }

std::string YcsbDbArgs(const Options& o, const std::string& engine) {
  const std::string db = engine == "sm" ? YcsbBase(o) + "/sm" : YcsbBase(o);
  return "--engine " + engine + " --db " + Quote(db);
}

// The engines whose load is there or succeeded.
std::vector<std::string> YcsbLoad(const Options& o, const std::vector<std::string>& engines) {
  std::vector<std::string> loaded;
  for (const std::string& e : engines) {
    json j = RunTpcc(o, "ycsb load --records " + std::to_string(o.records) + " --workers " +
                            o.workers + " --buffer-pool " + o.buffer_pool + " " + YcsbDbArgs(o, e));
    if (j.is_null()) {
      std::fprintf(stderr, "[compare] %s left out: its YCSB load failed\n", e.c_str());
      continue;
    }
    loaded.push_back(e);
  }
  return loaded;
}

// Every cell ("a_uniform") on every engine, round robin; figures by "<engine>_<cell>".
int YcsbRounds(const Options& o, const std::vector<std::string>& engines,
               const std::vector<std::string>& cells, std::map<std::string, Figures>* figures) {
  int failed = 0;
  for (int round = 0; round < o.rounds; ++round) {
    for (const std::string& cell : cells) {
      const size_t split = cell.find('_');
      for (const std::string& e : engines) {
        json j = RunTpcc(o, "ycsb run --interval 0 --workload " + cell.substr(0, split) +
                                " --distribution " + cell.substr(split + 1) + " --workers " +
                                o.workers + " --users " + o.workers + " --commit " + o.commit +
                                " --buffer-pool " + o.buffer_pool + " " + Seconds(o) + " " +
                                (e == "sm" ? "--prewarm " : "") + YcsbDbArgs(o, e));
        if (j.is_null()) {
          ++failed;
          continue;
        }
        Figures& f = (*figures)[e + "_" + cell];
        f.tx_per_s.push_back(j.value("throughput_ops_per_s", 0.0));
        f.p95_ms.push_back(j.value("latency", json::object()).value("p95_ms", 0.0));
      }
    }
  }
  return failed;
}

// The table and the JSON line of the figures.
void YcsbReport(const Options& o, const std::vector<std::string>& engines,
                const std::vector<std::string>& cells, std::map<std::string, Figures>& figures) {
  json out = {{"command", "compare_ycsb"}, {"rounds", o.rounds},    {"duration_s", o.duration_s},
              {"records", o.records},      {"workers", o.workers},  {"commit", o.commit},
              {"buffer_pool", o.buffer_pool}, {"engines", engines}, {"cells", cells}};
  std::printf("\nYCSB, %llu records of 100 bytes, %s workers, commit %s, one operation per "
              "transaction; median ops/s of %d rounds of %g s\n",
              static_cast<unsigned long long>(o.records), o.workers.c_str(), o.commit.c_str(),
              o.rounds, o.duration_s);
  std::printf("%-11s", "cell");
  for (const std::string& e : engines) std::printf(" %11s", e.c_str());
  std::printf(" %11s %8s\n", "best other", "sm/best");
  for (const std::string& cell : cells) {
    std::printf("%-11s", cell.c_str());
    std::string best;
    double best_ops = 0;
    for (const std::string& e : engines) {
      const Figures& f = figures[e + "_" + cell];
      const double ops = Median(f.tx_per_s);
      out[e + "_ycsb_" + cell + "_ops_per_s"] = ops;
      out[e + "_ycsb_" + cell + "_p95_ms"] = Median(f.p95_ms);
      if (e != "sm" && ops > best_ops) {
        best = e;
        best_ops = ops;
      }
      std::printf(" %11.0f", ops);
    }
    const double ours = Median(figures["sm_" + cell].tx_per_s);
    char ratio[32] = "-";
    if (best_ops > 0 && ours > 0) {
      out["best_other_ycsb_" + cell] = best;
      out["sm_over_best_ycsb_" + cell] = ours / best_ops;
      std::snprintf(ratio, sizeof ratio, "%.2f", ours / best_ops);
    }
    std::printf(" %11s %8s\n", best.empty() ? "-" : best.c_str(), ratio);
  }
  for (const std::string& e : engines) {
    out[e + "_ycsb_database_bytes"] =
        DirectoryBytes(e == "sm" ? YcsbBase(o) + "/sm" : YcsbBase(o) + "/" + e);
  }
  std::printf("%s\n", out.dump().c_str());
}

int CompareYcsb(const Options& o, const std::vector<std::string>& engines) {
  if (SplitList(o.workers).size() != 1 || SplitList(o.commit).size() != 1) {
    std::fprintf(stderr, "compare --ycsb: --workers and --commit take one value each\n");
    return 2;
  }
  std::vector<std::string> cells;
  for (const std::string& w : SplitList(o.workloads)) {
    for (const std::string& d : SplitList(o.distributions)) cells.push_back(w + "_" + d);
  }
  std::filesystem::create_directories(YcsbBase(o));
  const std::vector<std::string> loaded = YcsbLoad(o, engines);
  std::map<std::string, Figures> figures;  // by "<engine>_<cell>"
  const int failed = YcsbRounds(o, loaded, cells, &figures);
  YcsbReport(o, loaded, cells, figures);
  return failed == 0 && loaded.size() == engines.size() ? 0 : 1;
}

// ---- TPC-C --------------------------------------------------------------------------------

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"TPC-C (or with --ycsb the YCSB-like workload) on our engine and the other "
               "engines this build has adapters for"};
  app.add_option("--tpcc", o.tpcc, "the tpcc binary")->capture_default_str();
  app.add_option("--db", o.db, "the directory of the engines' databases")->capture_default_str();
  CLI::Option* duration = app.add_option("--duration", o.duration_s,
                                         "measured seconds per run (default 6; --ycsb: 3)")
                              ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--warmup", o.warmup_s, "seconds before each run's measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--rounds", o.rounds, "rounds (the figures are their medians)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  CLI::Option* workers_option =
      app.add_option("--workers", o.workers, "worker counts, e.g. 1,2 (default 1,2; --ycsb: 2)");
  CLI::Option* commit_option = app.add_option(
      "--commit", o.commit, "commit modes among durable, async, none (default async,durable; "
                            "--ycsb: async)");
  app.add_option("--engines", o.engines, "engines, e.g. sm,sqlite (default: sm and all built)");
  app.add_option("--buffer-pool", o.buffer_pool, "every engine's cache")->capture_default_str();
  app.add_flag("--ycsb", o.ycsb, "the YCSB-like workloads instead of TPC-C");
  app.add_option("--records", o.records, "--ycsb: records loaded into each engine")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  app.add_option("--workloads", o.workloads, "--ycsb: workloads among a, b, c, e")
      ->capture_default_str();
  app.add_option("--distributions", o.distributions, "--ycsb: uniform, zipfian")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (o.ycsb) {
    if (duration->count() == 0) o.duration_s = 3;
    if (workers_option->count() == 0) o.workers = "2";
    if (commit_option->count() == 0) o.commit = "async";
  }

  std::vector<std::string> engines = SplitList(o.engines);
  if (engines.empty()) {
    engines.push_back("sm");
    for (const std::string& e : sm::tpcc::ForeignEngineNames()) engines.push_back(e);
  }
  const std::vector<std::string> workers = SplitList(o.workers), commits = SplitList(o.commit);
  if (workers.empty() || commits.empty()) {
    std::fprintf(stderr, "compare: --workers and --commit need at least one value each\n");
    return 2;
  }
  if (o.ycsb) return CompareYcsb(o, engines);
  std::filesystem::create_directories(LoadedBase(o));

  std::vector<std::string> loaded;
  for (const std::string& e : engines) {
    json j = RunTpcc(o, "load -w 1 --interval 0 --checks off " + DbArgs(LoadedBase(o), e));
    if (j.is_null()) {
      std::fprintf(stderr, "[compare] %s left out: its load failed\n", e.c_str());
      continue;
    }
    loaded.push_back(e);
  }
  std::map<std::string, Figures> figures;  // by "<engine>_<workers>w_<commit>"
  const std::string seconds = Seconds(o);
  int failed = 0;
  for (int round = 0; round < o.rounds; ++round) {
    for (const std::string& w : workers) {
      for (const std::string& c : commits) {
        for (const std::string& e : loaded) {
          if (!FreshCopy(o, e)) {
            ++failed;
            continue;
          }
          json j = RunTpcc(o, "run --interval 0 --checks off --workers " + w + " --users " + w +
                                  " --commit " + c + " --buffer-pool " + o.buffer_pool + " " +
                                  seconds + " " + DbArgs(o, e));
          if (j.is_null()) {
            ++failed;
            continue;
          }
          Figures& f = figures[e + "_" + w + "w_" + c];
          const double completed = j.value("completed", 0.0);
          f.tx_per_s.push_back(j.value("throughput_tx_per_s", 0.0));
          f.p95_ms.push_back(j.value("latency", json::object()).value("p95_ms", 0.0));
          const double log_bytes = j.value("log", json::object()).value("bytes", 0.0);
          if (log_bytes > 0 && completed > 0) f.log_bytes_per_tx.push_back(log_bytes / completed);
        }
      }
    }
  }

  json out = {{"command", "compare"},
              {"rounds", o.rounds},
              {"duration_s", o.duration_s},
              {"warehouses", 1},
              {"buffer_pool", o.buffer_pool},
              {"engines", loaded}};
  json setups = json::array();
  for (const std::string& w : workers) {
    for (const std::string& c : commits) setups.push_back(w + "w_" + c);
  }
  out["setups"] = setups;
  for (const std::string& e : loaded) {
    json j = RunTpcc(o, "check " + DbArgs(o, e));
    const bool pass = !j.is_null() && j.value("consistency", "") == "pass";
    out[e + "_consistency"] = pass ? "pass" : "fail";
    if (!pass) ++failed;
    out[e + "_database_bytes"] = DirectoryBytes(Directory(o, e));
  }

  std::printf("\nTPC-C, 1 warehouse, one terminal per worker, median of %d rounds of %g s\n",
              o.rounds, o.duration_s);
  std::printf("%-11s %-12s %10s %9s %11s %10s %9s %s\n", "engine", "setup", "tx/s", "p95 ms",
              "log B/tx", "db MiB", "sm/this", "checks");
  for (const std::string& w : workers) {
    for (const std::string& c : commits) {
      const std::string setup = w + "w_" + c;
      const double ours = Median(figures["sm_" + setup].tx_per_s);
      for (const std::string& e : loaded) {
        const Figures& f = figures[e + "_" + setup];
        const double tx = Median(f.tx_per_s);
        const double log = Median(f.log_bytes_per_tx);
        out[e + "_tx_per_s_" + setup] = tx;
        out[e + "_p95_ms_" + setup] = Median(f.p95_ms);
        if (log > 0) out[e + "_log_bytes_per_tx_" + setup] = log;
        char ratio[32] = "-";
        if (e != "sm" && tx > 0 && ours > 0) {
          out["sm_over_" + e + "_" + setup] = ours / tx;
          std::snprintf(ratio, sizeof ratio, "%.2f", ours / tx);
        }
        char log_text[32] = "n/a";
        if (log > 0) std::snprintf(log_text, sizeof log_text, "%.0f", log);
        std::printf("%-11s %-12s %10.0f %9.3f %11s %10.1f %9s %s\n", e.c_str(), setup.c_str(), tx,
                    Median(f.p95_ms), log_text,
                    out[e + "_database_bytes"].get<uint64_t>() / double(1 << 20), ratio,
                    out[e + "_consistency"].get<std::string>().c_str());
      }
    }
  }
  std::printf("%s\n", out.dump().c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
