// TPC-C under callgrind, STEPS off and on.
#include "tools/icache/tpcc_runs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace sm::icache {

namespace {

namespace fs = std::filesystem;

// The STEPS team table from a tpcc run's output (the lines after "STEPS teams").
std::string TeamTable(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, out;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("STEPS teams", 0) == 0)
      in_table = true;
    else if (in_table && line.rfind("consistency", 0) == 0)
      break;
    if (in_table) out += "  " + line + "\n";
  }
  return out;
}

struct RunFigures {
  Counters c;
  std::string teams;
};

void PrintWorkload(const TpccRunOptions& o, const TpccWorkload& w, const Geometry& g,
                   const RunFigures& serial, const RunFigures& steps) {
  const double t = double(o.transactions);
  std::printf(
      "\nTPC-C %s (--mix %s), %u warehouse(s), %u users, 1 worker, %llu transactions "
      "after %llu, L1-I %s; per transaction:\n",
      w.name.c_str(), w.mix.c_str(), o.warehouses, o.users,
      static_cast<unsigned long long>(o.transactions), static_cast<unsigned long long>(o.warmup),
      g.Name().c_str());
  std::printf("  %-26s %12s %12s %9s\n", "", "serial", "steps", "change %");
  auto row = [&](const char* name, double a, double b) {
    std::printf("  %-26s %12.1f %12.1f %+9.1f\n", name, a / t, b / t,
                a == 0 ? 0.0 : 100.0 * (b - a) / a);
  };
  row("L1-I misses", serial.c.L1iMisses(), steps.c.L1iMisses());
  row("mispredicted branches", serial.c.Mispredicts(), steps.c.Mispredicts());
  row("  conditional", serial.c.CondMispredicts(), steps.c.CondMispredicts());
  row("L1-D misses", serial.c.L1dMisses(), steps.c.L1dMisses());
  row("instructions", serial.c.Instructions(), steps.c.Instructions());
  if (!steps.teams.empty()) std::printf("  with STEPS on:\n%s", steps.teams.c_str());
}

// Constant-initialized, so that a lookup is safe from any static initializer.
struct WorkloadName {
  std::string_view name, mix;
};
constexpr WorkloadName kTpccWorkloads[] = {
    {"payment", "payment"}, {"mix", "45,43,4,4,4"}, {"mix_no_delivery", "45,43,4,0,4"}};

}  // namespace

std::optional<TpccWorkload> FindTpccWorkload(std::string_view name) {
  for (const WorkloadName& w : kTpccWorkloads) {
    if (w.name == name) return TpccWorkload{std::string(w.name), std::string(w.mix)};
  }
  return std::nullopt;
}

std::string TpccWorkloadNames() {
  std::string out;
  for (const WorkloadName& w : kTpccWorkloads) {
    if (!out.empty()) out += ", ";
    out += w.name;
  }
  return out;
}

// Takes `db`'s lock file (<db>.lock) for the rest of the process, unless this process holds it
// already. The runs copy the database to scratch directories named after it and their
// workload, and write their logs and callgrind files next to it, so two harnesses on one
// database (a placement search and an icache run, say) would remove each other's files
// mid-run; the second is refused at once instead.
bool LockTpccDb(const std::string& db) {
  static std::mutex mu;
  static std::set<std::string> held;
  std::lock_guard<std::mutex> guard(mu);
  if (held.count(db) != 0) return true;
  const std::string path = db + ".lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "cannot open %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr,
                 "another harness run is using %s (it holds %s): wait for it, or give this "
                 "one another --tpcc-db\n",
                 db.c_str(), path.c_str());
    close(fd);
    return false;
  }
  held.insert(db);  // the descriptor stays open: the lock lasts until the process exits
  return true;
}

// Loads the database unless it is there (tpcc load reuses a loaded one).
bool EnsureTpccLoaded(const TpccRunOptions& o) {
  fs::create_directories(fs::path(o.db).parent_path().empty() ? "." : fs::path(o.db).parent_path());
  if (!LockTpccDb(o.db)) return false;
  // One loading fiber: the units load in order, so every load lays out the same pages and the
  // counts of a run do not depend on which machine loaded its database.
  std::string cmd = ShellQuote(o.tpcc) + " load --db " + ShellQuote(o.db) + " -w " +
                    std::to_string(o.warehouses) + " --workers 1 --load-fibers 1 --interval 0 > " +
                    ShellQuote(o.db + ".load.log") + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "tpcc load failed; see %s.load.log\n", o.db.c_str());
    return false;
  }
  return true;
}

bool RunTpccOnce(const TpccRunOptions& o, const TpccWorkload& w, bool steps, const Geometry& g,
                 Counters* counters, std::string* teams, FunctionProfile* profile) {
  const std::string tag = w.name + (steps ? "-steps" : "-serial") + g.Suffix();
  const std::string scratch = o.db + ".run-" + tag;  // runs of different tags may overlap
  if (!FreshCopy(o.db, scratch)) return false;
  const std::string log = o.db + "." + tag + ".log";
  // The counts repeat exactly only if the worker never waits for another thread and no other
  // thread runs meanwhile (under valgrind it would run at a point the OS chooses): no lock
  // timeouts, a log buffer that never fills to the quarter that wakes the flusher, and free
  // space for every page the run allocates; and no miss interleaving, whose adaptive mode
  // decides by the clock.
  std::string cmd = ShellQuote(o.tpcc) + " run --db " + ShellQuote(scratch) +
                    " --workers 1 --users " + std::to_string(o.users) + " --mix " + w.mix +
                    " --transactions " + std::to_string(o.transactions) +
                    " --warmup-transactions " + std::to_string(o.warmup) +
                    " --commit none --checks off --interval 0 --seed 1 --callgrind-window"
                    " --prewarm --buffer-pool " +
                    o.buffer_pool + " --writer-interval-ms 0" +
                    " --lock-timeout-ms 3600000 --log-buffer 256M --reserve-free 64M" +
                    " --miss-interleaving off --steps " + (steps ? "on" : "off");
  if (steps && !o.ctx_placement.empty()) cmd += " --ctx-placement " + ShellQuote(o.ctx_placement);
  cmd += " > " + ShellQuote(log) + " 2>&1";
  std::vector<Part> parts;
  std::string error;
  // A profile's names as the linker knows them: mangled.
  bool ok = RunUnderCallgrindParts(cmd, g, o.db + ".callgrind." + tag,
                                   profile != nullptr ? "--demangle=no" : "", 0, profile != nullptr,
                                   o.keep, &parts, &error);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!ok) {
    std::fprintf(stderr, "%s (tpcc output: %s)\n", error.c_str(), log.c_str());
    return false;
  }
  auto it = std::find_if(parts.begin(), parts.end(),
                         [](const Part& p) { return p.label == "tpcc window"; });
  if (it == parts.end()) {
    std::fprintf(stderr, "the tpcc run dumped no measured window; see %s\n", log.c_str());
    return false;
  }
  *counters = it->counters;
  if (profile != nullptr) profile->Add(it->functions);
  if (teams != nullptr) *teams = TeamTable(log);
  if (!o.keep) fs::remove(log, ec);
  return true;
}

bool RunTpccPair(const TpccRunOptions& o, const TpccWorkload& w, const Geometry& g,
                 Counters counters[2], std::string teams[2], FunctionProfile profiles[2]) {
  // Each run counts only its own process, whatever else the machine runs: callgrind simulates
  // the caches of the program it runs, so a run beside another counts what it counts alone.
  auto run = [&](bool steps) {
    const int i = steps ? 1 : 0;
    return RunTpccOnce(o, w, steps, g, &counters[i], teams != nullptr ? &teams[i] : nullptr,
                       profiles != nullptr ? &profiles[i] : nullptr);
  };
  std::future<bool> steps_run = std::async(std::launch::async, run, true);
  const bool serial_ok = run(false);
  return steps_run.get() && serial_ok;
}

bool RunTpccIcache(const TpccRunOptions& o, const std::vector<TpccWorkload>& workloads,
                   const Geometry& g, const std::string& suffix, nlohmann::json* json) {
  if (!EnsureTpccLoaded(o)) return false;
  for (const TpccWorkload& w : workloads) {
    std::printf("running TPC-C %s under callgrind (STEPS off and on, side by side) ...\n",
                w.name.c_str());
    std::fflush(stdout);
    Counters counters[2];
    std::string teams[2];
    if (!RunTpccPair(o, w, g, counters, teams)) return false;
    const RunFigures serial{counters[0], teams[0]}, steps{counters[1], teams[1]};
    PrintWorkload(o, w, g, serial, steps);
    const double t = double(o.transactions);
    const std::string k = w.name + "_";
    const std::string sfx = g.Suffix() + suffix;
    (*json)[k + "l1i_reduction_pct" + sfx] =
        ReductionPct(serial.c.L1iMisses(), steps.c.L1iMisses());
    (*json)[k + "branch_mispredict_reduction_pct" + sfx] =
        ReductionPct(serial.c.Mispredicts(), steps.c.Mispredicts());
    (*json)[k + "instructions_increase_pct" + sfx] =
        -ReductionPct(serial.c.Instructions(), steps.c.Instructions());
    (*json)[k + "l1d_increase_pct" + sfx] =
        -ReductionPct(serial.c.L1dMisses(), steps.c.L1dMisses());
    (*json)[k + "l1i_misses_per_txn_serial" + sfx] = serial.c.L1iMisses() / t;
    (*json)[k + "l1i_misses_per_txn_steps" + sfx] = steps.c.L1iMisses() / t;
    (*json)[k + "instructions_per_txn_serial" + sfx] = serial.c.Instructions() / t;
  }
  (*json)["tpcc_warehouses" + suffix] = o.warehouses;
  (*json)["tpcc_users" + suffix] = o.users;
  (*json)["tpcc_transactions" + suffix] = o.transactions;
  return true;
}

bool RunTpccWallClock(const TpccRunOptions& o, const std::vector<TpccWorkload>& workloads,
                      int repeat, double seconds, const std::string& suffix, nlohmann::json* json) {
  if (!EnsureTpccLoaded(o)) return false;
  const std::string scratch = o.db + ".wall";
  bool ok = true;
  for (const TpccWorkload& w : workloads) {
    static const char* const kModes[] = {"off", "on", "auto"};
    std::vector<double> rates[3];
    for (int i = 0; i < repeat && ok; ++i) {
      for (int steps = 0; steps < 3 && ok; ++steps) {
        // Every run starts from the loaded database, as the callgrind runs do: on one copy the
        // tables grew with every run, so each mode ran on a larger database than the one
        // before it in the round, and each prewarm read more.
        if (!FreshCopy(o.db, scratch)) {
          ok = false;
          break;
        }
        char duration[32];
        std::snprintf(duration, sizeof duration, "%g", seconds);
        const std::string out = o.db + ".wall.json";
        std::string cmd = ShellQuote(o.tpcc) + " run --db " + ShellQuote(scratch) +
                          " --workers 1 --users " + std::to_string(o.users) + " --mix " + w.mix +
                          " --duration " + duration + " --commit none --checks off --interval 0" +
                          " --prewarm --buffer-pool " + o.buffer_pool + " --output json --steps " +
                          kModes[steps] + " > " + ShellQuote(out) + " 2>&1";
        double rate = -1;
        if (std::system(cmd.c_str()) == 0) {
          std::ifstream in(out);
          std::string line, last;
          while (std::getline(in, line)) last = line;
          nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
          if (!j.is_discarded() && j.contains("throughput_tx_per_s"))
            rate = j["throughput_tx_per_s"];
        }
        if (rate < 0) {
          std::fprintf(stderr, "tpcc run failed; see %s\n", out.c_str());
          ok = false;
        }
        rates[steps].push_back(rate);
      }
    }
    if (!ok) break;
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    double off = median(rates[0]), on = median(rates[1]), adaptive = median(rates[2]);
    std::printf(
        "wall clock, TPC-C %s, %u warehouse(s), %u users, 1 worker: STEPS off %.0f tx/s, "
        "on %.0f tx/s (%.3fx), auto %.0f tx/s (%.3fx) (medians of %d alternating %g s "
        "runs)\n",
        w.name.c_str(), o.warehouses, o.users, off, on, off > 0 ? on / off : 0.0, adaptive,
        off > 0 ? adaptive / off : 0.0, repeat, seconds);
    std::fflush(stdout);
    (*json)[w.name + "_wall_speedup" + suffix] = off > 0 ? on / off : 0.0;
    (*json)[w.name + "_wall_auto_ratio" + suffix] = off > 0 ? adaptive / off : 0.0;
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return ok;
}

}  // namespace sm::icache
