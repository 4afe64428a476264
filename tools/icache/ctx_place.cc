// ctx_place: chooses the CTX points for the engine as compiled and a cache geometry, with
// valgrind, and writes the placement file the engine reads (steps/placement.h).
//
// It builds nothing: it drives a built steps_bench (--steps-bench), on its synthetic table of
// 100,000 rows of 25 integer columns.
//
// Method (after the STEPS paper, section 3.1.2, with whole operations measured instead of
// fragments): the cost of a placement is the L1-I misses that additional team members add, (misses
// with N fibers in a team) - (misses with one fiber), summed over the operations, N = 4 by default,
// measured by callgrind's cache simulator with every operation bracketed (steps_bench --inner). An
// operation whose code fits in the cache costs nothing extra per member without any CTX point; one
// that does not, costs about its misses again per member, until CTX points cut it into fragments
// that fit. The tool walks the candidate sites in the order the operations first reach them
// (steps_bench --list-sites: the code path order) and enables each site that lowers the cost by
// more than --min-gain (default 5 %) of the cost without CTX points, keeping the ones before it:
// where the curve of extra misses has its knees. Sites that no operation reaches are reported,
// never enabled. Each measurement runs on a fresh copy of the table, and its counts are exact: the
// same binary and options give the same counts in every run, whatever the load on the machine
// (steps_bench --inner: OnWorker). They depend much more on the binary's code layout: code added
// ahead of the engine's moves its functions to other cache sets and changes an operation's L1-I
// misses with the same instructions (tools/icache/function_order.h). A placement is for one
// binary; rerun the tool after the engine changes.
//
// Then, with --tpcc (tools/run ctx-place passes it), a TPC-C stage: the synthetic table has one
// index and short rows, while TPC-C's transactions chain many operations on nine tables. Starting
// from the synthetic placement, the tool toggles each candidate site in code-path order and keeps a
// toggle that lowers the cost per transaction of Payment and of the standard mix (1 warehouse, 10
// users, STEPS on, tpcc run under callgrind: tpcc_runs.h), averaged relative to the current
// placement, by more than --tpcc-min-gain (default 0.5 %, above the spread of repeated runs on one
// database; the database is loaded by one fiber, so that every load lays out the same pages)
// without raising either by more than 1 %. The cost is the L1-I misses plus the instructions at
// --instructions-per-miss (30) to a miss: a site saves misses where teammates reuse the code of
// the fragment it ends, but costs a switch wherever it is reached, and a site on a path as hot
// as a page fix can save a few misses for thousands of instructions. While a pass keeps a
// toggle, another pass tries again the sites whose toggle measured better but not by enough, at
// most --tpcc-passes (4) in all.
// --compare FILE (the placement in use) is measured the same way and is the starting point instead
// where it measures better, so a new placement refines the one in use.
//
// Finally the fragments: steps_bench --fragments runs each operation on one fiber under
// callgrind with --dump-instr=yes, a part dumped at every enabled site, so each part is one
// fragment (from one CTX point, or the operation's start, to the next, or its end). Its
// footprint is the number of distinct instruction-cache lines it executed times the line size,
// its misses the L1-I misses of the serial run; both are means over its occurrences, by
// operation, and for each operation whole (no CTX point).
//
// Output: the placement file (--output; a header naming the build's geometry, the figures and
// the fragment table, then one enabled site a line with, per operation, the footprint and
// misses of the fragment that ends there, and why it was chosen), a report per operation
// (extra misses per member: serial, with no CTX point, with the synthetic stage's sites and
// with the placement; the fragment table), and as the last line a JSON object: sites_enabled,
// operations, output, extra_misses_{serial,none,synthetic,placed}, fragments_{whole,placed},
// seconds (and the TPC-C figures). --fast measures fetch and insert only, with 2 fibers.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tools/icache/callgrind_parts.h"
#include "tools/icache/tpcc_runs.h"

namespace sm::icache {
namespace {

namespace fs = std::filesystem;

struct PlaceOptions {
  std::string steps_bench;
  std::string dir = "./data/icache-fetch";
  std::string output = "ctx_placement.txt";
  Geometry geometry;
  std::vector<std::string> ops = {"fetch", "insert", "update", "delete", "scan"};
  unsigned fibers = 4;
  uint32_t operations_per_fiber = 20;
  double min_gain_pct = 5;
  bool fast = false;
  // The TPC-C stage (when `tpcc.tpcc` names the binary): Payment and the mix on the TPC-C
  // tables, STEPS on, 1 warehouse and 10 users.
  TpccRunOptions tpcc;
  double tpcc_min_gain_pct = 0.5;  // above the spread of repeated runs of one configuration
  // How many instructions the TPC-C stage takes to cost as much as one L1-I miss: an L1-I miss
  // that hits L2 costs the core's L2 latency in cycles, times the instructions the engine runs
  // per cycle (tpcc run --mix payment --workers 1's throughput_tx_per_s times steps_bench's
  // payment_instructions_per_txn_serial, over the clock rate), if the miss stalls the core for
  // all of it; the front end's prefetching hides part of it, so the default lies below that
  // product. The paper's Athlon XP (a slower L2 in cycles, Shore at well under one instruction
  // a cycle) comes to far fewer. 0: the misses alone.
  double instructions_per_miss = 30;
  unsigned tpcc_passes = 4;  // toggle passes at most; they stop after one that keeps nothing
  std::string compare;  // a placement to measure next to the chosen one (the hand-made one)
};

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The measurements run on a fresh copy of the table (`dir`.work), so that the inserts, splits
// and deletes of one leave no trace in the next: the same build and options give the same
// counts, and so the same placement.
std::string FreshWorkCopy(const PlaceOptions& o) {
  const std::string work = o.dir + ".work";
  return FreshCopy(o.dir, work) ? work : std::string();
}

// Runs `command`, returning its standard output (empty and *ok false on failure).
std::string Capture(const std::string& command, bool* ok) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *ok = false;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  *ok = pclose(pipe) == 0;
  return out;
}

bool WritePlacementFile(const std::string& path, const std::vector<std::string>& enabled) {
  std::ofstream out(path);
  out << "# candidate placement (ctx_place)\n";
  for (const std::string& site : enabled) out << site << "\n";
  return static_cast<bool>(out);
}

// The sites a placement file enables: the first word of each line that is not a comment.
bool ReadSites(const std::string& path, std::vector<std::string>* sites) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "ctx_place: cannot read %s\n", path.c_str());
    return false;
  }
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string site;
    if (words >> site && site[0] != '#') sites->push_back(site);
  }
  return true;
}

// The candidate sites in the order the operations first reach them, and which ops reach each.
bool ListCandidates(const PlaceOptions& o, std::vector<std::string>* order,
                    std::map<std::string, std::vector<std::string>>* ops_of) {
  bool ok = false;
  const std::string work = FreshWorkCopy(o);
  if (work.empty()) return false;
  std::string out = Capture(ShellQuote(o.steps_bench) + " --list-sites --dir " + ShellQuote(work) +
                                " --ops " + Join(o.ops, ","),
                            &ok);
  if (!ok) return false;
  std::istringstream in(out);
  std::string op, site;
  while (in >> op >> site) {
    if (std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end()) continue;  // progress text
    if (std::find(order->begin(), order->end(), site) == order->end()) order->push_back(site);
    (*ops_of)[site].push_back(op);
  }
  return !order->empty();
}

// Extra L1-I misses per additional team member and per operation, by operation, for `mode`
// ("serial" or "steps") with the sites `enabled`.
bool Measure(const PlaceOptions& o, const std::string& mode, const std::vector<std::string>& enabled,
             std::map<std::string, double>* extra) {
  const std::string work = FreshWorkCopy(o);
  if (work.empty()) return false;
  const std::string placement = work + "/ctx_place.candidate.txt";
  if (!WritePlacementFile(placement, enabled)) return false;
  std::string cmd =
      ShellQuote(o.steps_bench) + " --inner --dir " + ShellQuote(work) + " --modes " + mode +
      " --ops " + Join(o.ops, ",") + " --fibers 1," + std::to_string(o.fibers) + " --fetches " +
      std::to_string(o.operations_per_fiber) + " --ctx-placement " + ShellQuote(placement) + " > " +
      ShellQuote(work + "/ctx_place.inner.log") + " 2>&1";
  std::map<std::string, Counters> parts;
  std::string error;
  if (!RunUnderCallgrind(cmd, o.geometry, work + "/ctx_place.callgrind", false, &parts, &error)) {
    std::fprintf(stderr, "ctx_place: %s\n", error.c_str());
    return false;
  }
  for (const std::string& op : o.ops) {
    auto one = parts.find(mode + " " + op + " 1");
    auto many = parts.find(mode + " " + op + " " + std::to_string(o.fibers));
    if (one == parts.end() || many == parts.end()) {
      std::fprintf(stderr, "ctx_place: steps_bench dumped no part for %s %s\n", mode.c_str(),
                   op.c_str());
      return false;
    }
    double diff = double(many->second.L1iMisses()) - double(one->second.L1iMisses());
    (*extra)[op] = diff / double(o.fibers - 1) / double(o.operations_per_fiber);
  }
  return true;
}

double Sum(const std::map<std::string, double>& m) {
  double total = 0;
  for (const auto& [op, v] : m) total += v;
  return total;
}

// ---- Fragment footprints --------------------------------------------------------------------

// A fragment of an operation: its code between two consecutive CTX points (or the operation's
// start and end), as one fiber runs it serially: the distinct instruction-cache lines it
// executes (its footprint) and its L1-I misses, summed over its occurrences.
struct Fragment {
  std::string from, to;
  uint64_t occurrences = 0;
  uint64_t lines = 0;
  uint64_t misses = 0;
};

// By pass ("whole": no CTX point; "placed": the placement's) and operation, the fragments in
// the order the operation first reaches them.
using Fragments = std::map<std::string, std::map<std::string, std::vector<Fragment>>>;

// Runs steps_bench --fragments under callgrind (--dump-instr=yes) with the sites `enabled`.
bool MeasureFragments(const PlaceOptions& o, const std::vector<std::string>& enabled,
                      Fragments* fragments) {
  const std::string work = FreshWorkCopy(o);
  if (work.empty()) return false;
  const std::string placement = work + "/ctx_place.fragments.txt";
  if (!WritePlacementFile(placement, enabled)) return false;
  const std::string cmd = ShellQuote(o.steps_bench) + " --fragments --dir " + ShellQuote(work) +
                          " --ops " + Join(o.ops, ",") + " --fetches " +
                          std::to_string(o.operations_per_fiber) + " --ctx-placement " +
                          ShellQuote(placement) + " > " +
                          ShellQuote(work + "/ctx_place.fragments.log") + " 2>&1";
  std::vector<Part> parts;
  std::string error;
  if (!RunUnderCallgrindParts(cmd, o.geometry, work + "/ctx_place.fragments.callgrind",
                              "--dump-instr=yes", LineBytes(o.geometry.i1), /*functions=*/false,
                              /*keep=*/false, &parts, &error)) {
    std::fprintf(stderr, "ctx_place: %s\n", error.c_str());
    return false;
  }
  for (const Part& part : parts) {
    std::istringstream words(part.label);
    std::string tag, pass, op, from, to;
    if (!(words >> tag >> pass >> op >> from >> to) || tag != "frag") continue;
    std::vector<Fragment>& list = (*fragments)[pass][op];
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const Fragment& f) { return f.from == from && f.to == to; });
    if (it == list.end()) it = list.insert(list.end(), Fragment{from, to});
    it->occurrences += 1;
    it->lines += part.lines.size();
    it->misses += part.counters.L1iMisses();
  }
  return !fragments->empty();
}

// "<bytes> B <misses> misses" of a fragment per occurrence (a mean, bytes rounded).
std::string Figures(const Fragment& f, uint32_t line_bytes) {
  char buf[64];
  const double n = double(std::max<uint64_t>(f.occurrences, 1));
  std::snprintf(buf, sizeof buf, "%.0f B %.1f misses", double(f.lines) * line_bytes / n,
                double(f.misses) / n);
  return buf;
}

// The fragments ending at `site`, by operation, merged over where they start.
std::string SiteFigures(const Fragments& fragments, const std::string& site, uint32_t line_bytes) {
  auto placed = fragments.find("placed");
  if (placed == fragments.end()) return "";
  std::string out;
  for (const auto& [op, list] : placed->second) {
    Fragment merged{"", site};
    for (const Fragment& f : list) {
      if (f.to != site) continue;
      merged.occurrences += f.occurrences;
      merged.lines += f.lines;
      merged.misses += f.misses;
    }
    if (merged.occurrences > 0) {
      out += (out.empty() ? "" : " / ") + op + " " + Figures(merged, line_bytes);
    }
  }
  return out;
}

// The per-operation fragment table, each line starting with `prefix`: each operation whole,
// then its fragments with the placement, each with how often it runs per operation, its
// footprint and its misses.
std::string FragmentTable(const PlaceOptions& o, const Fragments& fragments, const char* prefix) {
  const uint32_t line_bytes = LineBytes(o.geometry.i1);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%sfragments, one fiber serially (bytes: distinct %u-byte "
                "lines executed; misses: L1-I; per occurrence):\n", prefix, line_bytes);
  out += line;
  auto whole = fragments.find("whole");
  auto placed = fragments.find("placed");
  for (const std::string& op : o.ops) {
    if (whole == fragments.end() || !whole->second.contains(op)) continue;
    const std::vector<Fragment>& w = whole->second.at(op);
    std::snprintf(line, sizeof line, "%s  %-7s whole operation %s\n", prefix, op.c_str(),
                  w.empty() ? "-" : Figures(w.front(), line_bytes).c_str());
    out += line;
    if (placed == fragments.end() || !placed->second.contains(op)) continue;
    for (const Fragment& f : placed->second.at(op)) {
      std::snprintf(line, sizeof line, "%s    %-48s x%-4.1f %s\n", prefix,
                    (f.from + " -> " + f.to).c_str(),
                    double(f.occurrences) / o.operations_per_fiber, Figures(f, line_bytes).c_str());
      out += line;
    }
  }
  return out;
}

// The synthetic table's extra L1-I misses per additional member and per operation, by
// operation: serially, STEPS with no CTX point, with the synthetic stage's sites and with the
// final placement (after the TPC-C stage).
struct SyntheticCost {
  std::map<std::string, double> serial, none, synthetic, placed;
};

void WritePlacement(const PlaceOptions& o, const std::vector<std::string>& enabled,
                    const std::map<std::string, std::vector<std::string>>& ops_of,
                    const std::map<std::string, double>& gain, const SyntheticCost& cost,
                    const Fragments& fragments, const nlohmann::json& tpcc) {
  std::ofstream out(o.output);
  out << "# CTX placement chosen by ctx_place (tools/icache/ctx_place.cc) for L1-I "
      << o.geometry.Name() << " (--I1=" << o.geometry.i1 << " --D1=" << o.geometry.d1
      << " --LL=" << o.geometry.ll << "),\n# operations " << Join(o.ops, ", ") << ", teams of "
      << o.fibers << ". L1-I misses each additional member adds per operation, summed over the\n"
      << "# operations: serial " << Sum(cost.serial) << ", STEPS without CTX points "
      << Sum(cost.none) << ", with the synthetic stage's sites " << Sum(cost.synthetic)
      << ", with the sites below " << Sum(cost.placed) << ".\n";
  if (tpcc.contains("tpcc_l1i_per_txn_placed")) {
    auto figures = [](const nlohmann::json& m, int decimals = 1) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "Payment %.*f, mix %.*f", decimals,
                    m["payment"].get<double>(), decimals, m["mix"].get<double>());
      return std::string(buf);
    };
    out << "# TPC-C (1 warehouse, " << o.tpcc.users << " users), L1-I misses per transaction: "
        << "serial " << figures(tpcc["tpcc_l1i_per_txn_serial"]) << ";\n#   STEPS with the "
        << "synthetic stage's sites " << figures(tpcc["tpcc_l1i_per_txn_synthetic_placement"]);
    if (tpcc.contains("tpcc_l1i_per_txn_compared")) {
      // The file's name only: the placement is checked in, and a path would name this machine.
      out << ", with "
          << fs::path(tpcc["compared_placement"].get<std::string>()).filename().string() << "'s "
          << figures(tpcc["tpcc_l1i_per_txn_compared"]);
    }
    out << ";\n#   with the sites below " << figures(tpcc["tpcc_l1i_per_txn_placed"]) << ".\n";
    out << "# Instructions per transaction: serial "
        << figures(tpcc["tpcc_instructions_per_txn_serial"], 0) << "; with the sites below "
        << figures(tpcc["tpcc_instructions_per_txn_placed"], 0);
    if (tpcc.contains("tpcc_instructions_per_txn_compared")) {
      out << "; with the compared file's "
          << figures(tpcc["tpcc_instructions_per_txn_compared"], 0);
    }
    out << ".\n# The TPC-C stage weighed " << o.instructions_per_miss
        << " instructions as one miss (--instructions-per-miss).\n";
  }
  out << FragmentTable(o, fragments, "# ");
  out << "# Regenerate with `tools/run ctx-place` (docs/design/icache-tools.md). Each site: the\n"
      << "# fragments that end at it, by operation (footprint, L1-I misses serially), and why it was\n"
      << "# chosen.\n";
  const uint32_t line_bytes = LineBytes(o.geometry.i1);
  for (const std::string& site : enabled) {
    auto g = gain.find(site);
    std::string why = g != gain.end() ? "saves " + std::to_string(std::lround(g->second)) +
                                            " misses per member on the synthetic table"
                                      : "chosen on TPC-C";
    std::string where = SiteFigures(fragments, site, line_bytes);
    if (where.empty()) {
      auto ops = ops_of.find(site);
      where = ops != ops_of.end() ? Join(ops->second, " / ") : "-";
    }
    char name[64];
    std::snprintf(name, sizeof name, "%-24s ", site.c_str());
    out << name << where << "; " << why << "\n";
  }
}

// ---- The TPC-C stage ------------------------------------------------------------------------

// L1-I misses and instructions per transaction, by workload, with STEPS on and the sites
// `enabled` (or, with `steps` false, serially).
struct TpccCost {
  std::map<std::string, double> misses;
  std::map<std::string, double> instructions;
  // What a transaction costs, by workload, in L1-I misses: its misses and its instructions at
  // `instructions_per_miss` to a miss (0: the misses alone).
  std::map<std::string, double> Weighted(double instructions_per_miss) const {
    std::map<std::string, double> cost = misses;
    if (instructions_per_miss > 0) {
      for (auto& [name, v] : cost) v += instructions.at(name) / instructions_per_miss;
    }
    return cost;
  }
  // The weighted cost (with 0, the misses alone; or the instructions) relative to `base`,
  // averaged over the workloads (1: the same).
  double Relative(const TpccCost& base, double instructions_per_miss) const {
    return MeanRatio(Weighted(instructions_per_miss), base.Weighted(instructions_per_miss));
  }
  double RelativeInstructions(const TpccCost& base) const {
    return MeanRatio(instructions, base.instructions);
  }
  static double MeanRatio(const std::map<std::string, double>& by_workload,
                          const std::map<std::string, double>& base) {
    double sum = 0;
    for (const auto& [name, v] : by_workload) sum += v / base.at(name);
    return by_workload.empty() ? 1 : sum / double(by_workload.size());
  }
  // Whether no workload's weighted cost is more than `slack` above the base's.
  bool NoWorseThan(const TpccCost& base, double slack, double instructions_per_miss) const {
    const std::map<std::string, double> cost = Weighted(instructions_per_miss);
    const std::map<std::string, double> base_cost = base.Weighted(instructions_per_miss);
    for (const auto& [name, v] : cost) {
      if (v > base_cost.at(name) * (1 + slack)) return false;
    }
    return true;
  }
  std::string ToString() const { return Figures(misses, 1); }
  std::string InstructionsString() const { return Figures(instructions, 0); }
  static std::string Figures(const std::map<std::string, double>& by_workload, int decimals) {
    std::string out;
    char buf[64];
    for (const auto& [name, v] : by_workload) {
      std::snprintf(buf, sizeof buf, "%s%s %.*f", out.empty() ? "" : ", ", name.c_str(),
                    decimals, v);
      out += buf;
    }
    return out;
  }
};

// The workloads run side by side (each under its own valgrind, on its own copy of the
// database): the counts do not depend on it, the wall time halves on two idle cores.
bool MeasureTpcc(const PlaceOptions& o, bool steps, const std::string& placement_file,
                 TpccCost* cost) {
  TpccRunOptions t = o.tpcc;
  t.ctx_placement = placement_file;
  // A placement is chosen for Payment and the standard mix.
  const std::vector<TpccWorkload> workloads = {*FindTpccWorkload("payment"),
                                               *FindTpccWorkload("mix")};
  std::vector<Counters> counters(workloads.size());
  std::vector<std::future<bool>> runs;
  for (size_t i = 0; i < workloads.size(); ++i) {
    runs.push_back(std::async(std::launch::async, [&, i] {
      return RunTpccOnce(t, workloads[i], steps, o.geometry, &counters[i]);
    }));
  }
  bool ok = true;
  for (std::future<bool>& run : runs) ok = run.get() && ok;
  if (!ok) return false;
  for (size_t i = 0; i < workloads.size(); ++i) {
    cost->misses[workloads[i].name] = counters[i].L1iMisses() / double(t.transactions);
    cost->instructions[workloads[i].name] = counters[i].Instructions() / double(t.transactions);
  }
  return true;
}

bool MeasureTpccSites(const PlaceOptions& o, const std::vector<std::string>& enabled,
                      TpccCost* cost) {
  const std::string file = o.tpcc.db + ".candidate.txt";
  if (!WritePlacementFile(file, enabled)) return false;
  bool ok = MeasureTpcc(o, true, file, cost);
  std::error_code ec;
  fs::remove(file, ec);
  return ok;
}

// Starting from the synthetic table's placement, toggles each candidate site in code-path
// order and keeps a toggle that lowers TPC-C's cost per transaction (L1-I misses and
// instructions weighed as misses, averaged over Payment and the mix, relative) by more than
// --tpcc-min-gain percent without raising either by more than 1 %: the synthetic table has one
// index and short rows; TPC-C's transactions chain many operations, whose code paths differ.
bool TpccStage(const PlaceOptions& o, const std::vector<std::string>& order,
               std::vector<std::string>* enabled, std::map<std::string, double>* gain,
               nlohmann::json* j) {
  if (!EnsureTpccLoaded(o.tpcc)) return false;
  TpccCost serial, current;
  if (!MeasureTpcc(o, false, "", &serial) || !MeasureTpccSites(o, *enabled, &current)) return false;
  std::printf("\nTPC-C, %u warehouse(s), %u users, %llu transactions; L1-I misses per "
              "transaction: serial %s; STEPS with the synthetic stage's sites %s\n",
              o.tpcc.warehouses, o.tpcc.users,
              static_cast<unsigned long long>(o.tpcc.transactions), serial.ToString().c_str(),
              current.ToString().c_str());
  const TpccCost synthetic = current;
  // The placement in use (--compare) is the other starting point: a new placement refines it
  // where it measures better, so the result never ends up worse.
  TpccCost compared;
  if (!o.compare.empty()) {
    std::vector<std::string> sites;
    if (!ReadSites(o.compare, &sites) || !MeasureTpccSites(o, sites, &compared)) return false;
    std::printf("STEPS with %s's sites %s\n", o.compare.c_str(), compared.ToString().c_str());
    if (compared.Relative(current, o.instructions_per_miss) < 1) {
      *enabled = sites;
      current = compared;
      gain->clear();
      std::printf("starting from %s's sites\n", o.compare.c_str());
    }
  }
  // Toggle passes until one keeps nothing (a toggle kept late in a pass can make an earlier
  // site's toggle pay), at most --tpcc-passes. The first pass tries every site; a later one
  // only the sites whose toggle measured better than the placement of its time but not by
  // enough, as those are the ones another kept toggle can tip over (a TPC-C measurement takes
  // tens of seconds, so a pass over every site again would take minutes).
  unsigned passes = 0;
  std::vector<std::string> to_try = order;
  while (!to_try.empty() && passes < o.tpcc_passes) {
    ++passes;
    std::printf("pass %u:\n", passes);
    std::vector<std::string> again;
    bool kept_any = false;
    for (const std::string& site : to_try) {
      std::vector<std::string> trial = *enabled;
      auto it = std::find(trial.begin(), trial.end(), site);
      const bool adding = it == trial.end();
      if (adding) {
        trial.push_back(site);
      } else {
        trial.erase(it);
      }
      TpccCost measured;
      if (!MeasureTpccSites(o, trial, &measured)) return false;
      const double relative = measured.Relative(current, o.instructions_per_miss);
      const bool keep = relative < 1 - o.tpcc_min_gain_pct / 100 &&
                        measured.NoWorseThan(current, 0.01, o.instructions_per_miss);
      std::printf("  %s %-24s %s  (cost %+.1f %%: misses %+.1f %%, instructions %+.1f %%)  %s\n",
                  adding ? "+" : "-", site.c_str(), measured.ToString().c_str(),
                  100 * (relative - 1), 100 * (measured.Relative(current, 0) - 1),
                  100 * (measured.RelativeInstructions(current) - 1), keep ? "kept" : "not kept");
      std::fflush(stdout);
      if (keep) {
        *enabled = trial;
        current = measured;
        kept_any = true;
        if (!adding) gain->erase(site);
      } else if (relative < 1) {
        again.push_back(site);
      }
    }
    to_try = kept_any ? again : std::vector<std::string>{};
  }
  (*j)["tpcc_passes"] = passes;
  (*j)["tpcc_instructions_per_miss"] = o.instructions_per_miss;
  (*j)["tpcc_l1i_per_txn_serial"] = serial.misses;
  (*j)["tpcc_l1i_per_txn_synthetic_placement"] = synthetic.misses;
  (*j)["tpcc_l1i_per_txn_placed"] = current.misses;
  (*j)["tpcc_instructions_per_txn_serial"] = serial.instructions;
  (*j)["tpcc_instructions_per_txn_synthetic_placement"] = synthetic.instructions;
  (*j)["tpcc_instructions_per_txn_placed"] = current.instructions;
  std::printf("TPC-C instructions per transaction: serial %s; chosen placement %s",
              serial.InstructionsString().c_str(), current.InstructionsString().c_str());
  if (!o.compare.empty()) {
    std::printf("; %s %s", o.compare.c_str(), compared.InstructionsString().c_str());
  }
  std::printf("\n");
  if (!o.compare.empty()) {
    std::printf("TPC-C L1-I misses per transaction: chosen placement %s; %s %s\n",
                current.ToString().c_str(), o.compare.c_str(), compared.ToString().c_str());
    (*j)["tpcc_l1i_per_txn_compared"] = compared.misses;
    (*j)["tpcc_instructions_per_txn_compared"] = compared.instructions;
    (*j)["compared_placement"] = o.compare;
  }
  return true;
}

int Run(PlaceOptions o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.fast) {
    o.ops = {"fetch", "insert"};
    o.fibers = 2;
  }
  fs::create_directories(fs::path(o.dir).parent_path().empty() ? "." : fs::path(o.dir).parent_path());
  if (std::system(
          (ShellQuote(o.steps_bench) + " --prepare --dir " + ShellQuote(o.dir) + " > /dev/null")
              .c_str()) != 0) {
    std::fprintf(stderr, "ctx_place: %s --prepare failed\n", o.steps_bench.c_str());
    return 1;
  }
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> ops_of;
  if (!ListCandidates(o, &order, &ops_of)) {
    std::fprintf(stderr, "ctx_place: could not list the CTX sites with %s\n", o.steps_bench.c_str());
    return 1;
  }
  std::printf("candidate sites in code-path order: %s\n", Join(order, ", ").c_str());
  std::map<std::string, double> serial, none;
  if (!Measure(o, "serial", {}, &serial) || !Measure(o, "steps", {}, &none)) return 1;
  const double threshold = std::max(0.5, Sum(none) * o.min_gain_pct / 100);
  std::printf("extra L1-I misses per additional member: serial %.1f, STEPS without CTX points "
              "%.1f (a site must save %.1f)\n", Sum(serial), Sum(none), threshold);
  std::vector<std::string> enabled;
  std::map<std::string, double> current = none, gain;
  for (const std::string& site : order) {
    std::vector<std::string> trial = enabled;
    trial.push_back(site);
    std::map<std::string, double> measured;
    if (!Measure(o, "steps", trial, &measured)) return 1;
    double saved = Sum(current) - Sum(measured);
    std::printf("  %-24s %8.1f -> %8.1f  %s\n", site.c_str(), Sum(current), Sum(measured),
                saved > threshold ? "enabled" : "not enabled");
    std::fflush(stdout);
    if (saved > threshold) {
      enabled = trial;
      current = measured;
      gain[site] = saved;
    }
  }
  SyntheticCost cost{serial, none, current, current};
  const std::vector<std::string> synthetic_sites = enabled;
  nlohmann::json j;
  if (!o.fast && !o.tpcc.tpcc.empty()) {
    // TPC-C reaches more sites than the synthetic operations (the commit path): after those
    // in code-path order, every other site compiled in.
    std::vector<std::string> tpcc_order = order;
    bool ok = false;
    std::istringstream all(Capture(ShellQuote(o.steps_bench) + " --list-ctx-points", &ok));
    if (!ok) {
      std::fprintf(stderr, "ctx_place: %s --list-ctx-points failed\n", o.steps_bench.c_str());
      return 1;
    }
    for (std::string site; all >> site;) {
      if (std::find(tpcc_order.begin(), tpcc_order.end(), site) == tpcc_order.end()) {
        tpcc_order.push_back(site);
        ops_of[site] = {"TPC-C"};
      }
    }
    if (!TpccStage(o, tpcc_order, &enabled, &gain, &j)) return 1;
  }
  // The synthetic table again with the final placement, if the TPC-C stage changed it, and
  // the fragments of each operation with it.
  if (enabled != synthetic_sites) {
    cost.placed.clear();
    if (!Measure(o, "steps", enabled, &cost.placed)) return 1;
  }
  Fragments fragments;
  if (!MeasureFragments(o, enabled, &fragments)) return 1;
  WritePlacement(o, enabled, ops_of, gain, cost, fragments, j);
  std::error_code ec;
  fs::remove_all(o.dir + ".work", ec);
  std::printf("\nper operation, the extra L1-I misses each additional member adds (teams of %u):"
              "\n%-8s %10s %10s %12s %10s\n", o.fibers, "", "serial", "no CTX", "synthetic",
              "placed");
  for (const std::string& op : o.ops) {
    std::printf("%-8s %10.1f %10.1f %12.1f %10.1f\n", op.c_str(), cost.serial[op],
                cost.none[op], cost.synthetic[op], cost.placed[op]);
  }
  std::printf("\n%s", FragmentTable(o, fragments, "").c_str());
  std::printf("placement written to %s: %zu sites\n", o.output.c_str(), enabled.size());
  j["sites_enabled"] = enabled;
  j["operations"] = o.ops;
  j["output"] = o.output;
  j["geometry_i1"] = o.geometry.i1;
  j["extra_misses_serial"] = Sum(cost.serial);
  j["extra_misses_none"] = Sum(cost.none);
  j["extra_misses_synthetic"] = Sum(cost.synthetic);
  j["extra_misses_placed"] = Sum(cost.placed);
  const uint32_t line_bytes = LineBytes(o.geometry.i1);
  for (const auto& [pass, by_op] : fragments) {
    for (const auto& [op, list] : by_op) {
      for (const Fragment& f : list) {
        const double n = double(std::max<uint64_t>(f.occurrences, 1));
        j["fragments_" + pass][op].push_back(
            {{"from", f.from}, {"to", f.to},
             {"per_operation", double(f.occurrences) / o.operations_per_fiber},
             {"footprint_bytes", std::lround(double(f.lines) * line_bytes / n)},
             {"l1i_misses", double(f.misses) / n}});
      }
    }
  }
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace sm::icache

int main(int argc, char** argv) {
  sm::icache::PlaceOptions o;
  o.tpcc.db = "./data/icache-tpcc-1w";
  o.tpcc.transactions = 600;
  o.tpcc.warmup = 200;
  CLI::App app{"choose CTX points for this build with valgrind's cache simulator"};
  app.add_option("--steps-bench", o.steps_bench, "the built steps_bench binary")->required();
  app.add_option("--dir", o.dir, "steps_bench's database directory (made once, reused)");
  app.add_option("--output", o.output, "the placement file to write")->capture_default_str();
  app.add_option("--I1", o.geometry.i1, "L1-I geometry size,ways,line")->capture_default_str();
  app.add_option("--D1", o.geometry.d1, "L1-D geometry")->capture_default_str();
  app.add_option("--LL", o.geometry.ll, "last-level cache geometry")->capture_default_str();
  app.add_option("--ops", o.ops, "operations, comma-separated")->delimiter(',');
  app.add_option("--fibers", o.fibers, "team size measured")->check(CLI::Range(2u, 64u));
  app.add_option("--operations-per-fiber", o.operations_per_fiber, "per measured round")
      ->check(CLI::Range(1u, 10000u));
  app.add_option("--min-gain", o.min_gain_pct,
                 "percent of the no-CTX cost a site must save to be enabled")
      ->check(CLI::Range(0.0, 100.0));
  app.add_flag("--fast", o.fast, "fetch and insert only, teams of 2, no TPC-C stage (for CI)");
  app.add_option("--tpcc", o.tpcc.tpcc, "the tpcc binary: refine the placement on TPC-C");
  app.add_option("--tpcc-db", o.tpcc.db, "loaded 1-warehouse TPC-C database (made if absent)")
      ->capture_default_str();
  app.add_option("--tpcc-transactions", o.tpcc.transactions, "measured transactions per run")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}));
  app.add_option("--tpcc-warmup", o.tpcc.warmup, "transactions run before measuring")
      ->capture_default_str();
  app.add_option("--tpcc-min-gain", o.tpcc_min_gain_pct,
                 "percent of TPC-C's cost per transaction a toggled site must save to be kept")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--instructions-per-miss", o.instructions_per_miss,
                 "TPC-C stage: instructions that cost as much as one L1-I miss (0: misses only)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--tpcc-passes", o.tpcc_passes,
                 "toggle passes over the sites at most (they stop after one that keeps nothing)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 20u));
  app.add_option("--compare", o.compare,
                 "another placement file to measure on TPC-C next to the chosen one");
  CLI11_PARSE(app, argc, argv);
  return sm::icache::Run(o);
}
