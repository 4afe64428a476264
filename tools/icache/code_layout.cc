// code_layout: chooses the link order of the engine's hot functions for this build.
//
// Runs TPC-C Payment and the standard mix under callgrind, STEPS off and on, adds up where each
// function's instructions went and who called whom, orders the functions by call-chain
// clustering (function_order.h) and writes the order as a gold section-ordering file. The
// build links every binary with the checked-in file (tools/icache/code_layout.txt; CMake option
// SM_CODE_LAYOUT), so that the functions that run together lie together, whatever else the
// binary holds.
//
// Usage: code_layout --tpcc build/tpcc/tpcc [--tpcc-db DIR] [--output FILE]
// The last line of output is JSON.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tools/icache/function_order.h"
#include "tools/icache/tpcc_runs.h"

namespace sm::icache {
namespace {

struct LayoutOptions {
  TpccRunOptions tpcc;
  std::string output = "code_layout.txt";
  uint64_t cluster_bytes = 16384;
};

// The four profiled runs (Payment and the mix, STEPS off and on), two at a time, summed.
bool Profile(const LayoutOptions& o, FunctionProfile* profile) {
  const std::vector<TpccWorkload> workloads = {*FindTpccWorkload("payment"),
                                               *FindTpccWorkload("mix")};
  for (const TpccWorkload& w : workloads) {
    std::printf("profiling TPC-C %s under callgrind (STEPS off and on) ...\n", w.name.c_str());
    std::fflush(stdout);
    FunctionProfile runs[2];
    Counters counters[2];
    std::future<bool> serial = std::async(std::launch::async, [&] {
      return RunTpccOnce(o.tpcc, w, false, Geometry{}, &counters[0], nullptr, &runs[0]);
    });
    const bool steps_ok = RunTpccOnce(o.tpcc, w, true, Geometry{}, &counters[1], nullptr, &runs[1]);
    if (!serial.get() || !steps_ok) return false;
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

int Run(const LayoutOptions& o) {
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
  const std::vector<std::string> order = CallChainOrder(profile, sizes, o.cluster_bytes);
  if (order.empty()) {
    std::fprintf(stderr, "code_layout: none of the profiled functions is in %s\n",
                 o.tpcc.tpcc.c_str());
    return 1;
  }
  uint64_t bytes = 0;
  for (const std::string& f : order) bytes += sizes.at(f);
  const auto [n90, bytes90] = Covering(order, profile, sizes, 0.90);
  const auto [n99, bytes99] = Covering(order, profile, sizes, 0.99);
  const std::string header =
      "The link order of the engine's hot functions: gold's --section-ordering-file, one\n"
      "input section per line (g++ -ffunction-sections). Written by tools/icache/code_layout\n"
      "from callgrind profiles of TPC-C Payment and the standard mix, STEPS off and on (" +
      std::to_string(o.tpcc.warehouses) + " warehouse(s),\n" + std::to_string(o.tpcc.users) +
      " users, " + std::to_string(o.tpcc.transactions) +
      " transactions each), by call-chain clustering in clusters of at most " +
      std::to_string(o.cluster_bytes) +
      " bytes.\n"
      "Functions not listed (or no longer there) are laid out as usual. After changing the\n"
      "engine: tools/run layout --output tools/icache/code_layout.txt\n";
  std::ofstream out(o.output, std::ios::trunc);
  out << LayoutFileText(order, symbols.aliases, header);
  out.close();
  if (!out) {
    std::fprintf(stderr, "code_layout: cannot write %s\n", o.output.c_str());
    return 1;
  }
  std::printf(
      "\n%zu functions ran, %llu bytes in all; %zu of them (%llu bytes) ran 90 %% of "
      "their instructions, %zu (%llu bytes) 99 %%\nwrote %s\n",
      order.size(), static_cast<unsigned long long>(bytes), n90,
      static_cast<unsigned long long>(bytes90), n99, static_cast<unsigned long long>(bytes99),
      o.output.c_str());
  nlohmann::json j = {{"functions", order.size()}, {"bytes", bytes},
                      {"functions_90pct", n90},    {"bytes_90pct", bytes90},
                      {"functions_99pct", n99},    {"bytes_99pct", bytes99}};
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
                 "largest cluster of functions laid out together")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30));
  CLI11_PARSE(app, argc, argv);
  return sm::icache::Run(o);
}
