// bench_tpcc (`tools/run bench tpcc`): TPC-C per core on this build, and against another build
// of the engine when one is given (--base-tpcc; `tools/run bench tpcc --base REV` builds REV in
// a tree of its own), alternating, so that the two builds see the same machine.
//
// Throughput. Each setup runs from a fresh copy of one loaded database per warehouse count,
// `tpcc run --duration D` with 10 terminals per warehouse: 1 worker and 1 warehouse with async
// and with durable commits, 2 workers and 2 warehouses async, and with --big 2 workers and 10
// warehouses async and durable. A round runs every setup on every build, the builds' order
// swapped from one round to the next; the figures are medians over --rounds rounds, and every
// ratio is taken between medians of the same rounds.
//
// Instructions. The mix and each transaction type alone run under callgrind on one worker, as
// the instruction-cache harness runs them (tools/icache/tpcc_runs.h: a prewarmed pool, no
// commit wait, no clock-driven choices), so the counts are deterministic for a binary and a
// database; the two builds' runs go side by side (callgrind counts only its own process).
//
// The disk. The sync latency of the database's file system: 4 KiB written into a preallocated
// file and fdatasync'd, 200 times, as the log's flusher writes a block and syncs.
//
// The last line is one JSON object: tx_per_s_1w, tx_per_s_1w_durable, tx_per_s_2w,
// durable_over_async_1w, two_workers_over_one, commits_per_sync_1w_durable, sync_latency_ms,
// sync_latency_p90_ms, mix_instructions_per_txn and <type>_instructions_per_txn; with --big
// tx_per_s_10wh_async, tx_per_s_10wh_durable, durable_over_async_10wh and
// commits_per_sync_10wh_durable; with a base build every figure again as base_<key>, and
// speedup_1w, speedup_2w (this build over the base) and mix_instructions_over_base.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "tools/bench/bench_util.h"
#include "tools/bench/tpcc_process.h"
#include "tools/icache/tpcc_runs.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct Options {
  std::string tpcc = "tpcc";
  std::string base_tpcc;  // empty: this build alone
  std::string base_label = "base";
  std::string db = "data/bench-tpcc";
  double duration_s = 10;
  double warmup_s = 1;
  int rounds = 5;
  bool big = false;
  bool callgrind = true;
  std::string buffer_pool = "6G";
};

struct Build {
  std::string name;    // "this" or the base's label
  std::string prefix;  // "" or "base_": its JSON keys
  std::string tpcc;
};

struct Setup {
  std::string key;  // "1w_async": the JSON key suffix
  uint32_t warehouses, workers;
  std::string commit;
};

std::vector<Setup> Setups(bool big) {
  std::vector<Setup> s = {
      {"1w_async", 1, 1, "async"}, {"1w_durable", 1, 1, "durable"}, {"2w_async", 2, 2, "async"}};
  if (big) {
    s.push_back({"10wh_async", 10, 2, "async"});
    s.push_back({"10wh_durable", 10, 2, "durable"});
  }
  return s;
}

std::string LoadedDb(const Options& o, uint32_t warehouses) {
  return o.db + "/" + std::to_string(warehouses) + "wh";
}

// Loads (once, with this build) the database of every warehouse count the setups use.
bool LoadDatabases(const Options& o, const std::vector<Setup>& setups) {
  std::vector<uint32_t> counts;
  for (const Setup& s : setups) counts.push_back(s.warehouses);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (uint32_t w : counts) {
    sm::icache::TpccRunOptions load;
    load.tpcc = o.tpcc;
    load.db = LoadedDb(o, w);
    load.warehouses = w;
    std::fprintf(stderr, "[tpcc-bench] loading %u warehouse(s) into %s (once)\n", w,
                 load.db.c_str());
    if (!sm::icache::EnsureTpccLoaded(load)) return false;
  }
  return true;
}

struct Samples {
  std::vector<double> tx_per_s, commits_per_sync, p95_ms;
};

// One timed run of `setup` on `build` from a fresh copy of its database.
bool RunOnce(const Options& o, const Build& build, const Setup& setup, Samples* samples) {
  const std::string copy = o.db + "/run";
  if (!sm::icache::FreshCopy(LoadedDb(o, setup.warehouses), copy)) return false;
  char timing[96];
  std::snprintf(timing, sizeof timing, " --duration %g --warmup %g", o.duration_s, o.warmup_s);
  const std::string args =
      "run --db " + sm::bench::ShellWord(copy) + " -w " + std::to_string(setup.warehouses) +
      " --workers " + std::to_string(setup.workers) + " --commit " + setup.commit +
      " --buffer-pool " + o.buffer_pool + " --interval 0 --checks off" + timing;
  json j = sm::bench::RunTpccJson("tpcc-bench " + build.name, build.tpcc, args);
  std::error_code ec;
  fs::remove_all(copy, ec);
  if (j.is_null()) return false;
  samples->tx_per_s.push_back(j.value("throughput_tx_per_s", 0.0));
  samples->commits_per_sync.push_back(
      j.value("log", json::object()).value("commits_per_sync", 0.0));
  samples->p95_ms.push_back(j.value("latency", json::object()).value("p95_ms", 0.0));
  return true;
}

// The median and 90th percentile, in ms, of a 4 KiB write + fdatasync into a preallocated file
// under `dir`; false if the file cannot be made.
bool MeasureSyncLatency(const std::string& dir, double* median_ms, double* p90_ms) {
  constexpr int kSyncs = 200;
  constexpr size_t kBlock = 4096;
  const std::string path = dir + "/sync-probe";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::vector<char> block(kBlock, 'x');
  bool ok = posix_fallocate(fd, 0, kSyncs * kBlock) == 0 && fsync(fd) == 0;
  std::vector<double> ms;
  for (int i = 0; ok && i < kSyncs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ok = pwrite(fd, block.data(), kBlock, off_t(i) * kBlock) == ssize_t(kBlock) &&
         fdatasync(fd) == 0;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  close(fd);
  std::error_code ec;
  fs::remove(path, ec);
  if (!ok) return false;
  std::sort(ms.begin(), ms.end());
  *median_ms = sm::bench::Median(ms);
  *p90_ms = ms[ms.size() * 9 / 10];
  return true;
}

struct TypeRun {
  const char* name;  // the JSON key's prefix
  const char* mix;   // tpcc run --mix
  uint64_t transactions;
};
// Fewer of the long types, so that each run under callgrind takes seconds.
constexpr TypeRun kTypeRuns[] = {
    {"mix", "45,43,4,4,4", 3000},  {"new_order", "new_order", 1000},
    {"payment", "payment", 1000},  {"order_status", "order_status", 1000},
    {"delivery", "delivery", 300}, {"stock_level", "stock_level", 300}};

// Instructions per transaction of the mix and of each type alone on `build`: false on failure.
bool CountInstructions(const Options& o, const Build& build, json* out) {
  sm::icache::TpccRunOptions run;
  run.tpcc = build.tpcc;
  run.db = LoadedDb(o, 1);
  for (const TypeRun& t : kTypeRuns) {
    run.transactions = t.transactions;
    sm::icache::Counters c;
    // The scratch copy and files are named after the workload: the builds' names keep their
    // concurrent runs apart.
    const sm::icache::TpccWorkload w{build.prefix + t.name, t.mix};
    if (!sm::icache::RunTpccOnce(run, w, /*steps=*/false, sm::icache::Geometry(), &c)) return false;
    (*out)[build.prefix + t.name + "_instructions_per_txn"] =
        double(c.Instructions()) / double(t.transactions);
  }
  return true;
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

// The throughput keys of one build from its samples.
void AddThroughput(const Build& b, const std::vector<Setup>& setups,
                   std::map<std::string, Samples>& samples, json* out) {
  auto med = [&](const std::string& key) {
    return sm::bench::Median(samples[b.name + key].tx_per_s);
  };
  json& j = *out;
  for (const Setup& s : setups) {
    std::string key = s.key == "1w_async" ? "1w" : s.key == "2w_async" ? "2w" : s.key;
    j[b.prefix + "tx_per_s_" + key] = med(s.key);
    if (s.commit == "durable") {
      j[b.prefix + "commits_per_sync_" + s.key] =
          sm::bench::Median(samples[b.name + s.key].commits_per_sync);
    }
  }
  j[b.prefix + "durable_over_async_1w"] = Ratio(med("1w_durable"), med("1w_async"));
  j[b.prefix + "two_workers_over_one"] = Ratio(med("2w_async"), med("1w_async"));
  if (samples.count(b.name + "10wh_async") != 0) {
    j[b.prefix + "durable_over_async_10wh"] = Ratio(med("10wh_durable"), med("10wh_async"));
  }
}

void PrintThroughput(const std::vector<Build>& builds, const std::vector<Setup>& setups,
                     std::map<std::string, Samples>& samples, const Options& o) {
  std::printf("\nTPC-C full mix, 10 terminals per warehouse, median of %d rounds of %g s\n",
              o.rounds, o.duration_s);
  std::printf("%-14s %-10s %10s %9s %12s\n", "setup", "build", "tx/s", "p95 ms", "commits/sync");
  for (const Setup& s : setups) {
    for (const Build& b : builds) {
      const Samples& f = samples[b.name + s.key];
      std::printf("%-14s %-10s %10.0f %9.3f %12s\n", s.key.c_str(), b.name.c_str(),
                  sm::bench::Median(f.tx_per_s), sm::bench::Median(f.p95_ms),
                  s.commit == "durable"
                      ? std::to_string(sm::bench::Median(f.commits_per_sync)).substr(0, 6).c_str()
                      : "-");
    }
  }
}

void PrintInstructions(const std::vector<Build>& builds, const json& out) {
  std::printf("\nInstructions per transaction (callgrind, 1 worker, 1 warehouse, prewarmed)\n");
  std::printf("%-14s", "type");
  for (const Build& b : builds) std::printf(" %12s", b.name.c_str());
  std::printf("\n");
  for (const TypeRun& t : kTypeRuns) {
    std::printf("%-14s", t.name);
    for (const Build& b : builds) {
      const std::string key = b.prefix + t.name + "_instructions_per_txn";
      std::printf(" %12.0f", out.contains(key) ? out[key].get<double>() : 0.0);
    }
    std::printf("\n");
  }
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"TPC-C per core: throughput, durable against async, instructions per transaction"};
  app.add_option("--tpcc", o.tpcc, "this build's tpcc binary")->capture_default_str();
  app.add_option("--base-tpcc", o.base_tpcc, "another build's tpcc binary to run alternately");
  app.add_option("--base-label", o.base_label, "the other build's name in the report")
      ->capture_default_str();
  app.add_option("--db", o.db, "the benchmark's databases")->capture_default_str();
  app.add_option("--duration", o.duration_s, "measured seconds per run")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--warmup", o.warmup_s, "seconds before each run's measurement")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--rounds", o.rounds, "rounds (the figures are their medians)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_flag("--big", o.big, "add 2 workers on 10 warehouses, async and durable (loads 10)");
  app.add_option("--callgrind", o.callgrind, "instructions per transaction under callgrind")
      ->capture_default_str();
  app.add_option("--buffer-pool", o.buffer_pool, "every run's buffer pool")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<Build> builds = {{"this", "", o.tpcc}};
  if (!o.base_tpcc.empty()) builds.push_back({o.base_label, "base_", o.base_tpcc});
  const std::vector<Setup> setups = Setups(o.big);
  fs::create_directories(o.db);
  if (!LoadDatabases(o, setups)) return 1;

  json out = {{"command", "tpcc"},
              {"rounds", o.rounds},
              {"duration_s", o.duration_s},
              {"buffer_pool", o.buffer_pool},
              {"terminals_per_warehouse", 10}};
  if (builds.size() > 1) out["base_label"] = o.base_label;
  double sync_ms = 0, sync_p90_ms = 0;
  if (MeasureSyncLatency(o.db, &sync_ms, &sync_p90_ms)) {
    out["sync_latency_ms"] = sync_ms;
    out["sync_latency_p90_ms"] = sync_p90_ms;
    std::printf("sync latency of %s: median %.3f ms, p90 %.3f ms (4 KiB write + fdatasync)\n",
                o.db.c_str(), sync_ms, sync_p90_ms);
  }

  std::map<std::string, Samples> samples;  // by build name + setup key
  int failed = 0;
  for (int round = 0; round < o.rounds; ++round) {
    std::fprintf(stderr, "[tpcc-bench] round %d of %d\n", round + 1, o.rounds);
    for (const Setup& s : setups) {
      for (size_t i = 0; i < builds.size(); ++i) {
        const Build& b = builds[(i + round) % builds.size()];  // the order swaps each round
        if (!RunOnce(o, b, s, &samples[b.name + s.key])) ++failed;
      }
    }
  }
  for (const Build& b : builds) AddThroughput(b, setups, samples, &out);
  if (builds.size() > 1) {
    auto figure = [&](const char* key) { return out[key].get<double>(); };
    out["speedup_1w"] = Ratio(figure("tx_per_s_1w"), figure("base_tx_per_s_1w"));
    out["speedup_2w"] = Ratio(figure("tx_per_s_2w"), figure("base_tx_per_s_2w"));
  }

  if (o.callgrind) {
    std::vector<std::future<bool>> runs;
    std::vector<json> counts(builds.size());
    for (size_t i = 0; i < builds.size(); ++i) {
      runs.push_back(std::async(std::launch::async,
                                [&, i] { return CountInstructions(o, builds[i], &counts[i]); }));
    }
    for (size_t i = 0; i < builds.size(); ++i) {
      if (!runs[i].get()) ++failed;
      out.update(counts[i]);
    }
    if (builds.size() > 1 && out.contains("base_mix_instructions_per_txn")) {
      out["mix_instructions_over_base"] = Ratio(out["mix_instructions_per_txn"].get<double>(),
                                                out["base_mix_instructions_per_txn"].get<double>());
    }
  }

  PrintThroughput(builds, setups, samples, o);
  if (o.callgrind) PrintInstructions(builds, out);
  if (failed > 0) std::printf("\n%d run(s) failed; their figures are missing\n", failed);
  sm::bench::PrintJsonLine(out);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
