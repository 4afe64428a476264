// code_layout: chooses the link order of the engine's hot functions.
//
// Runs TPC-C Payment and the standard mix under callgrind, STEPS off and on, adds up where each
// function's instructions went and who called whom, orders the functions by call-chain
// clustering (function_order.h) and writes the order as a gold section-ordering file. The
// build links every binary with the checked-in file (tools/icache/code_layout.txt; CMake option
// SM_CODE_LAYOUT), so that the functions that run together lie together, whatever else the
// binary holds.
//
// With several cluster sizes (--cluster-bytes 8192,16384,...), the order the binary was linked
// with (--current) and a command that relinks tpcc (--relink), it measures each candidate order
// and writes the one with the fewest L1-I misses (layout_search.h).
//
// Usage: code_layout --tpcc build/tpcc/tpcc [--tpcc-db DIR] [--output FILE]
//            [--cluster-bytes N,...] [--current FILE --relink CMD]
// The last line of output is JSON.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tools/icache/function_order.h"
#include "tools/icache/layout_search.h"
#include "tools/icache/tpcc_runs.h"

namespace sm::icache {
namespace {

struct LayoutOptions {
  TpccRunOptions tpcc;
  std::string output = "code_layout.txt";
  std::vector<uint64_t> cluster_bytes = {16384};  // one candidate order per size
  std::string current;  // the order --tpcc was linked with: a candidate too (search)
  std::string relink;   // links tpcc with {order} into {binary} (search)
  std::string work_dir = "./data/layout-candidates";
  double margin_pct = 0.5;  // another order must measure this much below the first (search)
};

namespace fs = std::filesystem;

// The four profiled runs (Payment and the mix, STEPS off and on), two at a time, summed.
bool Profile(const LayoutOptions& o, FunctionProfile* profile) {
  const std::vector<TpccWorkload> workloads = {*FindTpccWorkload("payment"),
                                               *FindTpccWorkload("mix")};
  for (const TpccWorkload& w : workloads) {
    std::printf("profiling TPC-C %s under callgrind (STEPS off and on) ...\n", w.name.c_str());
    std::fflush(stdout);
    FunctionProfile runs[2];
    Counters counters[2];
    if (!RunTpccPair(o.tpcc, w, Geometry{}, counters, nullptr, runs)) return false;
    for (const FunctionProfile& run : runs) profile->Add(run);
  }
  return true;
}

// How many of the ordered functions, and how many bytes, it takes to cover `share` of the
// profiled instructions in the binary's own code.
std::pair<size_t, uint64_t> Covering(const std::vector<std::string>& order,
                                     const FunctionProfile& profile,
                                     const std::map<std::string, uint64_t>& sizes, double share) {
  uint64_t total = 0;
  for (const std::string& f : order) total += profile.self_ir.at(f);
  std::vector<std::string> by_heat = order;
  std::stable_sort(by_heat.begin(), by_heat.end(), [&](const std::string& a, const std::string& b) {
    return profile.self_ir.at(a) > profile.self_ir.at(b);
  });
  uint64_t ir = 0, bytes = 0;
  size_t n = 0;
  for (const std::string& f : by_heat) {
    if (ir >= share * static_cast<double>(total)) break;
    ir += profile.self_ir.at(f);
    bytes += sizes.at(f);
    ++n;
  }
  return {n, bytes};
}

// The layout file's header for an order clustered at `cluster_bytes`.
std::string Header(const LayoutOptions& o, uint64_t cluster_bytes) {
  return "The link order of the engine's hot functions: gold's --section-ordering-file, one\n"
         "input section per line (g++ -ffunction-sections). Written by tools/icache/code_layout\n"
         "from callgrind profiles of TPC-C Payment and the standard mix, STEPS off and on (" +
         std::to_string(o.tpcc.warehouses) + " warehouse(s),\n" + std::to_string(o.tpcc.users) +
         " users, " + std::to_string(o.tpcc.transactions) +
         " transactions each), by call-chain clustering in clusters of at most " +
         std::to_string(cluster_bytes) +
         " bytes.\n"
         "Functions not listed (or no longer there) are laid out as usual. After changing the\n"
         "engine: tools/run layout --output tools/icache/code_layout.txt\n";
}

std::string ClusterName(uint64_t bytes) {
  return bytes % 1024 == 0 ? std::to_string(bytes / 1024) + " KiB clusters"
                           : std::to_string(bytes) + "-byte clusters";
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) std::fprintf(stderr, "code_layout: cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

bool ReadText(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "code_layout: cannot read %s\n", path.c_str());
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

// Links every candidate but the current order (whose binary is the build's) into the work
// directory, where its order file stays. False if a link failed.
bool LinkCandidates(const LayoutOptions& o, std::vector<LayoutCandidate>* candidates) {
  std::error_code ec;
  fs::create_directories(o.work_dir, ec);
  for (size_t i = 0; i < candidates->size(); ++i) {
    LayoutCandidate& c = (*candidates)[i];
    if (!c.binary.empty()) continue;
    const std::string order = o.work_dir + "/order-" + std::to_string(i) + ".txt";
    if (!WriteText(order, c.text)) return false;
    c.binary = o.work_dir + "/tpcc-" + std::to_string(i);
    std::printf("linking tpcc with the order of %s ...\n", c.name.c_str());
    std::fflush(stdout);
    const std::string command = RelinkCommand(o.relink, order, c.binary);
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "code_layout: the relink command failed: %s\n", command.c_str());
      return false;
    }
  }
  return true;
}

// Links and measures every candidate (layout_search.h), the current order first, and returns
// the chosen one's index, or -1 on failure. The linked binaries (38 MB each) are removed.
int SearchLayouts(const LayoutOptions& o, std::vector<LayoutCandidate>* candidates) {
  bool ok = LinkCandidates(o, candidates);
  for (size_t i = 0; ok && i < candidates->size(); ++i) {
    LayoutCandidate& c = (*candidates)[i];
    std::printf("measuring %s (Payment and the mix, STEPS off and on) ...\n", c.name.c_str());
    std::fflush(stdout);
    ok = MeasureLayout(o.tpcc, &c);
  }
  std::error_code ec;
  for (const LayoutCandidate& c : *candidates) {
    if (!c.binary.empty() && c.binary != o.tpcc.tpcc) fs::remove(c.binary, ec);
  }
  return ok ? BestLayout(*candidates, o.margin_pct / 100.0) : -1;
}

void PrintSearch(const LayoutOptions& o, const std::vector<LayoutCandidate>& candidates, int best) {
  std::printf(
      "\nL1-I misses per transaction (32 KiB 8-way), serial and with STEPS; another "
      "order replaces the first if its sum is %.1f %% lower:\n",
      o.margin_pct);
  std::printf("%-22s %10s %10s %10s %10s %10s\n", "order", "Payment", "with STEPS", "mix",
              "with STEPS", "sum");
  for (size_t i = 0; i < candidates.size(); ++i) {
    const LayoutCandidate& c = candidates[i];
    std::printf("%-22s %10.1f %10.1f %10.1f %10.1f %10.1f%s\n", c.name.c_str(), c.misses[0],
                c.misses[1], c.misses[2], c.misses[3], c.Score(),
                static_cast<int>(i) == best ? "  <- chosen" : "");
  }
}

int Run(const LayoutOptions& o) {
  const bool search = o.cluster_bytes.size() > 1 || !o.current.empty();
  if (search && o.relink.empty()) {
    std::fprintf(stderr,
                 "code_layout: comparing orders (several --cluster-bytes, or --current) "
                 "needs --relink\n");
    return 2;
  }
  if (search && RelinkCommand(o.relink, "o", "b").empty()) {
    std::fprintf(stderr, "code_layout: --relink must hold {order} and {binary}\n");
    return 2;
  }
  std::vector<LayoutCandidate> candidates;
  if (!o.current.empty()) {
    candidates.push_back({"current", "", o.tpcc.tpcc});
    if (!ReadText(o.current, &candidates.back().text)) return 1;
  }
  if (!EnsureTpccLoaded(o.tpcc)) return 1;
  FunctionProfile profile;
  if (!Profile(o, &profile)) return 1;
  FunctionSymbols symbols;
  std::string error;
  if (!ReadFunctionSymbols(o.tpcc.tpcc, &symbols, &error)) {
    std::fprintf(stderr, "code_layout: %s\n", error.c_str());
    return 1;
  }
  const std::map<std::string, uint64_t>& sizes = symbols.sizes;
  std::vector<std::string> order;  // the functions, the same for every cluster size
  for (uint64_t cluster_bytes : o.cluster_bytes) {
    order = CallChainOrder(profile, sizes, cluster_bytes);
    if (order.empty()) {
      std::fprintf(stderr, "code_layout: none of the profiled functions is in %s\n",
                   o.tpcc.tpcc.c_str());
      return 1;
    }
    candidates.push_back({ClusterName(cluster_bytes),
                          LayoutFileText(order, symbols.aliases, Header(o, cluster_bytes)), ""});
  }
  int best = static_cast<int>(candidates.size()) - 1;  // the one order made
  if (search) {
    best = SearchLayouts(o, &candidates);
    if (best < 0) return 1;
    PrintSearch(o, candidates, best);
  }
  if (!WriteText(o.output, candidates[best].text)) return 1;
  uint64_t bytes = 0;
  for (const std::string& f : order) bytes += sizes.at(f);
  const auto [n90, bytes90] = Covering(order, profile, sizes, 0.90);
  const auto [n99, bytes99] = Covering(order, profile, sizes, 0.99);
  std::printf(
      "\n%zu functions ran, %llu bytes in all; %zu of them (%llu bytes) ran 90 %% of "
      "their instructions, %zu (%llu bytes) 99 %%\nwrote %s (%s)\n",
      order.size(), static_cast<unsigned long long>(bytes), n90,
      static_cast<unsigned long long>(bytes90), n99, static_cast<unsigned long long>(bytes99),
      o.output.c_str(), candidates[best].name.c_str());
  nlohmann::json j = {{"functions", order.size()},      {"bytes", bytes},
                      {"functions_90pct", n90},         {"bytes_90pct", bytes90},
                      {"functions_99pct", n99},         {"bytes_99pct", bytes99},
                      {"chosen", candidates[best].name}};
  if (search) {
    j["margin_pct"] = o.margin_pct;
    for (const LayoutCandidate& c : candidates) {
      j["candidates"].push_back({{"name", c.name},
                                 {"payment_l1i_serial", c.misses[0]},
                                 {"payment_l1i_steps", c.misses[1]},
                                 {"mix_l1i_serial", c.misses[2]},
                                 {"mix_l1i_steps", c.misses[3]},
                                 {"sum", c.Score()}});
    }
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace sm::icache

int main(int argc, char** argv) {
  sm::icache::LayoutOptions o;
  o.tpcc.db = "./data/icache-tpcc-1w";
  CLI::App app{"choose the link order of the engine's hot functions from callgrind profiles"};
  app.add_option("--tpcc", o.tpcc.tpcc, "the tpcc binary to profile")->required();
  app.add_option("--tpcc-db", o.tpcc.db, "loaded 1-warehouse TPC-C database (made if absent)")
      ->capture_default_str();
  app.add_option("--output", o.output, "the layout file to write")->capture_default_str();
  app.add_option("--transactions", o.tpcc.transactions, "measured transactions per run")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}));
  app.add_option("--warmup", o.tpcc.warmup, "transactions run before measuring")
      ->capture_default_str();
  app.add_option("--cluster-bytes", o.cluster_bytes,
                 "largest cluster of functions laid out together; several (comma-separated) "
                 "make one candidate order each, measured with --relink")
      ->capture_default_str()
      ->delimiter(',')
      ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30));
  app.add_option("--current", o.current,
                 "the layout file --tpcc was linked with: measured as a candidate too, and "
                 "kept unless another measures fewer misses (needs --relink)");
  app.add_option("--relink", o.relink,
                 "shell command that links tpcc with the layout file {order} into {binary}; "
                 "with it the candidate orders are measured and the best is written");
  app.add_option("--margin", o.margin_pct,
                 "percent fewer misses a candidate needs to replace the current order")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 50.0));
  app.add_option("--work-dir", o.work_dir, "where the candidates' files and binaries go")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return sm::icache::Run(o);
}
