// ctx_place: chooses the CTX points for this build and a cache geometry, with valgrind, and
// writes the placement file the engine reads (steps/placement.h).
//
// It builds nothing: it drives a built steps_bench (--steps-bench), on its synthetic table of
// 100,000 rows of 25 integer columns.
//
// Method (after the STEPS paper, section 3.1.2, with whole operations measured instead of
// fragments): the cost of a placement is the L1-I misses that additional team members add,
// (misses with N fibers in a team) - (misses with one fiber), summed over the operations, N = 4
// by default, measured by callgrind's cache simulator with every operation bracketed
// (steps_bench --inner). An operation whose code fits in the cache costs nothing extra per
// member without any CTX point; one that does not, costs about its misses again per member,
// until CTX points cut it into fragments that fit. The tool walks the candidate sites in the
// order the operations first reach them (steps_bench --list-sites: the code path order) and
// enables each site that lowers the cost by more than --min-gain (default 5 %) of the cost
// without CTX points, keeping the ones before it: where the curve of extra misses has its
// knees. Sites that no operation reaches are reported, never enabled. Each measurement runs on
// a fresh copy of the table. The counts still vary by about 1 % between runs (the log's
// flusher thread runs on a timer), so a site must save clearly more than that.
//
// Output: the placement file (--output; a header naming the build's geometry and the figures,
// then one enabled site a line with the operations that reach it and the misses it saved), a
// report per operation (extra misses per member, serial, with no CTX point and with the
// placement), and as the last line a JSON object: sites_enabled, operations, output,
// extra_misses_{serial,none,placed}, seconds. --fast measures fetch and insert only, with 2
// fibers.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tools/icache/callgrind_parts.h"

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
};

std::string Quote(const std::string& s) { return "'" + s + "'"; }

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

// The candidate sites in the order the operations first reach them, and which ops reach each.
bool ListCandidates(const PlaceOptions& o, std::vector<std::string>* order,
                    std::map<std::string, std::vector<std::string>>* ops_of) {
  bool ok = false;
  const std::string work = FreshWorkCopy(o);
  if (work.empty()) return false;
  std::string out = Capture(Quote(o.steps_bench) + " --list-sites --dir " + Quote(work) +
                                " --ops " + Join(o.ops, ","), &ok);
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
  {
    std::ofstream out(placement);
    out << "# candidate placement (ctx_place)\n";
    for (const std::string& site : enabled) out << site << "\n";
  }
  std::string cmd = Quote(o.steps_bench) + " --inner --dir " + Quote(work) + " --modes " + mode +
                    " --ops " + Join(o.ops, ",") + " --fibers 1," + std::to_string(o.fibers) +
                    " --fetches " + std::to_string(o.operations_per_fiber) + " --ctx-placement " +
                    Quote(placement) + " > " + Quote(work + "/ctx_place.inner.log") + " 2>&1";
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

void WritePlacement(const PlaceOptions& o, const std::vector<std::string>& enabled,
                    const std::map<std::string, std::vector<std::string>>& ops_of,
                    const std::map<std::string, double>& gain, double none, double placed,
                    double serial) {
  std::ofstream out(o.output);
  out << "# CTX placement chosen by ctx_place (tools/icache/ctx_place.cc) for L1-I "
      << o.geometry.Name() << " (--I1=" << o.geometry.i1 << " --D1=" << o.geometry.d1
      << " --LL=" << o.geometry.ll << "),\n# operations " << Join(o.ops, ", ") << ", teams of "
      << o.fibers << ". L1-I misses each additional member adds per operation, summed over the\n"
      << "# operations: serial " << serial << ", STEPS without CTX points " << none
      << ", with these " << placed << ".\n# Regenerate with `tools/run ctx-place` (README).\n";
  char line[512];
  for (const std::string& site : enabled) {
    std::snprintf(line, sizeof line, "%-24s %s; saves %.1f misses per member\n", site.c_str(),
                  Join(ops_of.at(site), " / ").c_str(), gain.at(site));
    out << line;
  }
}

int Run(PlaceOptions o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.fast) {
    o.ops = {"fetch", "insert"};
    o.fibers = 2;
  }
  fs::create_directories(fs::path(o.dir).parent_path().empty() ? "." : fs::path(o.dir).parent_path());
  if (std::system((Quote(o.steps_bench) + " --prepare --dir " + Quote(o.dir) + " > /dev/null").c_str()) != 0) {
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
  WritePlacement(o, enabled, ops_of, gain, Sum(none), Sum(current), Sum(serial));
  std::error_code ec;
  fs::remove_all(o.dir + ".work", ec);
  std::printf("\n%-8s %12s %12s %12s   (extra L1-I misses per additional member)\n", "operation",
              "serial", "no CTX", "placed");
  for (const std::string& op : o.ops) {
    std::printf("%-8s %12.1f %12.1f %12.1f\n", op.c_str(), serial[op], none[op], current[op]);
  }
  std::printf("placement written to %s: %zu sites\n", o.output.c_str(), enabled.size());
  nlohmann::json j;
  j["sites_enabled"] = enabled;
  j["operations"] = o.ops;
  j["output"] = o.output;
  j["geometry_i1"] = o.geometry.i1;
  j["extra_misses_serial"] = Sum(serial);
  j["extra_misses_none"] = Sum(none);
  j["extra_misses_placed"] = Sum(current);
  j["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace sm::icache

int main(int argc, char** argv) {
  sm::icache::PlaceOptions o;
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
  app.add_flag("--fast", o.fast, "fetch and insert only, teams of 2 (for CI)");
  CLI11_PARSE(app, argc, argv);
  return sm::icache::Run(o);
}
