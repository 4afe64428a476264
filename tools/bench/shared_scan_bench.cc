// bench_shared-scan (`tools/run bench shared-scan`): shared scans (query/shared_scan.h) against
// unshared ones, for streams of the 22 CH-benCHmark queries over one database.
//
// The database (`tpcc load --ch`, --warehouses) is made once under --data and reused while its
// manifest matches. For each stream count of --streams, a run with sharing off and one with it
// on alternate (so that a slow phase of the shared machine touches both); each run is a `tpcc
// query all --streams S --repeat ROUNDS --share-scans on|off --output json` in a process of its
// own, with a buffer pool of --pool (smaller than the data, so that page reads dominate) that
// starts cold. It prints per stream count the queries per hour and the buffer pool's page reads
// (misses) per query of both, and the speedup; the last line is one JSON object:
//   qph_<S>s_shared, qph_<S>s_unshared, shared_speedup_<S>s,
//   page_reads_per_query_<S>s_shared, page_reads_per_query_<S>s_unshared (for each S),
//   alone_slowdown_pct: how much slower one stream alone runs with sharing on than off (for
//   the S = 1 runs; negative when faster),
//   warehouses, pool, rounds, streams.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tools/bench/tpcc_process.h"

namespace {

using json = nlohmann::json;

struct Options {
  std::string tpcc = "tpcc";
  std::string data;  // default: data/bench-shared-scan-<W>w
  uint32_t warehouses = 10;
  std::string pool = "256M";
  std::string streams = "1,2,4,8";
  uint32_t rounds = 1;
};

std::vector<uint32_t> SplitCounts(const std::string& text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(static_cast<uint32_t>(std::stoul(part)));
  }
  return out;
}

std::string Quote(const std::string& s) { return sm::bench::ShellWord(s); }

// Runs a tpcc command (its stderr passes through); its JSON, or null if it failed.
json RunTpcc(const Options& o, const std::string& args) {
  return sm::bench::RunTpccJson("shared-scan", o.tpcc, args);
}

// Loads the CH database unless the manifest says it is there with these warehouses.
bool Prepare(const Options& o) {
  const std::string manifest = o.data + "/prepared.json";
  std::ifstream in(manifest);
  if (in) {
    json m = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (m.is_object() && m.value("warehouses", 0u) == o.warehouses) {
      std::printf("reusing the CH database in %s (%u warehouses)\n", o.data.c_str(), o.warehouses);
      return true;
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(o.data, ignored);
  std::filesystem::create_directories(o.data);
  const std::string cmd = Quote(o.tpcc) + " load --ch --db " + Quote(o.data + "/sm") +
                          " --warehouses " + std::to_string(o.warehouses) +
                          " --buffer-pool 1G --commit async";
  std::printf("$ %s\n", cmd.c_str());
  std::fflush(stdout);
  if (std::system(cmd.c_str()) != 0) return false;
  std::ofstream(manifest) << json{{"warehouses", o.warehouses}}.dump() << "\n";
  return true;
}

struct Figures {
  double qph = 0;
  double page_reads = 0;
};

bool RunStreams(const Options& o, uint32_t streams, bool share, Figures* out) {
  const json j =
      RunTpcc(o, "query all --db " + Quote(o.data + "/sm") + " --buffer-pool " + o.pool +
                     " --format none --streams " + std::to_string(streams) + " --repeat " +
                     std::to_string(o.rounds) + " --share-scans " + (share ? "on" : "off"));
  if (!j.is_object()) return false;
  out->qph = j.value("queries_per_hour", 0.0);
  out->page_reads = j.value("page_reads_per_query", 0.0);
  return out->qph > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Shared scans against unshared ones for streams of the 22 CH queries"};
  app.add_option("--tpcc", o.tpcc, "the tpcc driver binary")->capture_default_str();
  app.add_option("--data", o.data,
                 "the database's directory (default data/bench-shared-scan-<W>w)");
  app.add_option("--warehouses,-w", o.warehouses, "warehouses of the CH database")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  app.add_option("--pool", o.pool, "buffer pool of each run (smaller than the data)")
      ->capture_default_str();
  app.add_option("--streams", o.streams, "stream counts to run, comma-separated")
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "times each stream runs the 22 queries per run")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (o.data.empty()) o.data = "data/bench-shared-scan-" + std::to_string(o.warehouses) + "w";
  const std::vector<uint32_t> counts = SplitCounts(o.streams);
  if (counts.empty()) {
    std::fprintf(stderr, "--streams names no stream count\n");
    return 2;
  }
  if (!Prepare(o)) return 1;
  json out = {
      {"warehouses", o.warehouses}, {"pool", o.pool}, {"rounds", o.rounds}, {"streams", o.streams}};
  std::printf("%8s %14s %14s %8s %16s %16s\n", "streams", "qph unshared", "qph shared", "speedup",
              "reads/q unshared", "reads/q shared");
  for (uint32_t s : counts) {
    Figures off, on;
    if (!RunStreams(o, s, false, &off) || !RunStreams(o, s, true, &on)) return 1;
    const std::string k = std::to_string(s) + "s";
    const double speedup = on.qph / off.qph;
    std::printf("%8u %14.0f %14.0f %7.2fx %16.0f %16.0f\n", s, off.qph, on.qph, speedup,
                off.page_reads, on.page_reads);
    std::fflush(stdout);
    out["qph_" + k + "_unshared"] = off.qph;
    out["qph_" + k + "_shared"] = on.qph;
    out["shared_speedup_" + k] = speedup;
    out["page_reads_per_query_" + k + "_unshared"] = off.page_reads;
    out["page_reads_per_query_" + k + "_shared"] = on.page_reads;
    if (s == 1) out["alone_slowdown_pct"] = 100 * (off.qph / on.qph - 1);
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
