// bench_compare (`tools/run compare`): the TPC-C mix on our engine and on every other engine
// this build has an adapter for (tpcc/engines/engines.h), side by side, with identical
// parameters.
//
// Each engine is loaded once (1 warehouse, `tpcc load --engine E`, reused when it is there
// already) under --db (ours in <db>/sm, another engine's in <db>/<engine>); then --rounds
// rounds run, each running every combination of --workers and --commit on every engine in
// turn (round robin, so that a slow phase of the machine touches all engines alike), each run
// a `tpcc run --engine E --output json` with as many terminals as workers (an engine without
// fibers runs one terminal per worker thread, so more would only queue). At the end every
// engine's database is checked (`tpcc check`). It prints, per engine and combination, the
// median throughput, the median p95 latency, the log bytes per transaction where the engine
// reports them, the database's size and our throughput over the engine's; the last line is one
// JSON object with `<engine>_tx_per_s_<workers>w_<commit>` and
// `sm_over_<engine>_<workers>w_<commit>` keys.
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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
};

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a tpcc command (its stderr passes through for people); the last line of its stdout as
// JSON, or null if it failed.
json RunTpcc(const Options& o, const std::string& args) {
  const std::string cmd = Quote(o.tpcc) + " " + args + " --output json";
  std::fprintf(stderr, "[compare] tpcc %s\n", args.c_str());
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return nullptr;
  std::string out, last;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  std::stringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last = line;
  }
  if (rc != 0 || last.empty()) {
    std::fprintf(stderr, "[compare] failed (status %d): %s\n", rc, last.c_str());
    return nullptr;
  }
  json j = json::parse(last, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(nullptr) : j;
}

std::string DbArgs(const Options& o, const std::string& engine) {
  return "--engine " + engine + " --db " + Quote(engine == "sm" ? o.db + "/sm" : o.db);
}

std::string Directory(const Options& o, const std::string& engine) {
  return o.db + "/" + engine;
}

uint64_t DirectoryBytes(const std::string& dir) {
  std::error_code error;
  uint64_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file(error)) bytes += it->file_size(error);
  }
  return bytes;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Figures {
  std::vector<double> tx_per_s, p95_ms, log_bytes_per_tx;
};

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"TPC-C on our engine and the other engines this build has adapters for"};
  app.add_option("--tpcc", o.tpcc, "the tpcc binary")->capture_default_str();
  app.add_option("--db", o.db, "the directory of the engines' databases")->capture_default_str();
  app.add_option("--duration", o.duration_s, "measured seconds per run")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--warmup", o.warmup_s, "seconds before each run's measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--rounds", o.rounds, "rounds (the figures are their medians)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--workers", o.workers, "worker counts, e.g. 1,2")->capture_default_str();
  app.add_option("--commit", o.commit, "commit modes among durable, async, none")
      ->capture_default_str();
  app.add_option("--engines", o.engines, "engines, e.g. sm,sqlite (default: sm and all built)");
  app.add_option("--buffer-pool", o.buffer_pool, "every engine's cache")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> engines = Split(o.engines);
  if (engines.empty()) {
    engines.push_back("sm");
    for (const std::string& e : sm::tpcc::ForeignEngineNames()) engines.push_back(e);
  }
  const std::vector<std::string> workers = Split(o.workers), commits = Split(o.commit);
  if (workers.empty() || commits.empty()) {
    std::fprintf(stderr, "compare: --workers and --commit need at least one value each\n");
    return 2;
  }
  std::filesystem::create_directories(o.db);

  std::vector<std::string> loaded;
  for (const std::string& e : engines) {
    json j = RunTpcc(o, "load -w 1 --interval 0 --checks off " + DbArgs(o, e));
    if (j.is_null()) {
      std::fprintf(stderr, "[compare] %s left out: its load failed\n", e.c_str());
      continue;
    }
    loaded.push_back(e);
  }
  std::map<std::string, Figures> figures;  // by "<engine>_<workers>w_<commit>"
  char duration[64];
  std::snprintf(duration, sizeof duration, "--duration %g --warmup %g", o.duration_s, o.warmup_s);
  int failed = 0;
  for (int round = 0; round < o.rounds; ++round) {
    for (const std::string& w : workers) {
      for (const std::string& c : commits) {
        for (const std::string& e : loaded) {
          json j = RunTpcc(o, "run --interval 0 --checks off --workers " + w + " --users " + w +
                                  " --commit " + c + " --buffer-pool " + o.buffer_pool + " " +
                                  duration + " " + DbArgs(o, e));
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
