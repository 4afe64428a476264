// The TPC-C half of the STEPS harness: the `tpcc` driver binary run under callgrind for a fixed
// number of transactions on one worker, STEPS off and on side by side, for each workload
// (Payment alone, the full mix, the paper's mix without Delivery).
//
// Each run starts from a fresh copy of a loaded database (so every run does the same work from
// the same state), reads it into the buffer pool (--prewarm), and uses `tpcc run --transactions T
// --warmup-transactions W --callgrind-window`: only the T measured transactions are collected (all
// threads' events while the window is open). The buffer pool's background writer runs only for
// eviction (--writer-interval-ms 0): on a timer it would run far more often per transaction under
// valgrind, which slows the program down many times over, than natively, and more often in the
// slower mode, which would bias and blur the comparison. The lock wait timeout is an hour
// (--lock-timeout-ms): under valgrind on a busy machine a New-Order can wait more than the
// default 10 s of wall clock, and its retry would make the mix's counts vary between runs of one
// configuration. The figures are per measured transaction.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/icache/callgrind_parts.h"

namespace sm::icache {

struct TpccRunOptions {
  std::string tpcc;  // the tpcc binary
  // The loaded database (tpcc load, once), copied for each run; steps_bench appends "-<W>w".
  std::string db = "./data/icache-tpcc";
  uint32_t warehouses = 1;
  uint32_t users = 10;
  uint64_t transactions = 1000;
  uint64_t warmup = 300;
  // The pool of each run, prewarmed (tpcc run --prewarm) so that the measured transactions
  // read no pages: a fiber waiting for a read leaves its team, which the paper's runs (a
  // database in memory) did not see. It should hold the database (sm_admin verify reports its
  // pages).
  std::string buffer_pool = "4G";
  std::string ctx_placement;  // empty: the built-in placement
  bool keep = false;
};

struct TpccWorkload {
  std::string name;  // "payment", "mix", "mix_no_delivery": the JSON key prefix
  std::string mix;   // the --mix argument
};

// The workloads the harnesses know, by name: Payment alone, the standard mix (45,43,4,4,4), and
// the paper's mix (its Figure 11: the standard one without Delivery, which TPC-C lets wait in a
// queue). Empty for another name.
std::optional<TpccWorkload> FindTpccWorkload(std::string_view name);
// Their names, comma-separated, for messages.
std::string TpccWorkloadNames();

// Loads the database (options.db, options.warehouses) unless it is loaded already. First takes
// the database's lock file for the rest of the process: false, with a message, if another
// harness process holds it (its runs would remove this one's scratch copies and files).
bool EnsureTpccLoaded(const TpccRunOptions& options);

// One run of `workload` under callgrind at `geometry`, STEPS on or off (on: with
// options.ctx_placement): the measured window's counters, the STEPS team table printed by
// tpcc (if `teams`), and the window's functions added to *profile (if `profile`: mangled
// names). False on failure (the reason is printed).
bool RunTpccOnce(const TpccRunOptions& options, const TpccWorkload& workload, bool steps,
                 const Geometry& geometry, Counters* counters, std::string* teams = nullptr,
                 FunctionProfile* profile = nullptr);

// The two runs of `workload` at once, STEPS off and on: [0] serial, [1] with STEPS. The team
// tables and the profiles are filled if given. False if either run failed.
bool RunTpccPair(const TpccRunOptions& options, const TpccWorkload& workload,
                 const Geometry& geometry, Counters counters[2], std::string teams[2] = nullptr,
                 FunctionProfile profiles[2] = nullptr);

// Runs every workload STEPS off and on at `geometry`, prints a table per workload (and the
// STEPS team statistics of the steps run), and adds the figures to *json, each key ending in
// `suffix`. False on failure.
bool RunTpccIcache(const TpccRunOptions& options, const std::vector<TpccWorkload>& workloads,
                   const Geometry& geometry, const std::string& suffix, nlohmann::json* json);

// Wall clock, natively: `repeat` alternating runs of `seconds` each, STEPS off, on and auto
// (adaptive), per workload, on one worker, each from a fresh copy of the loaded database read
// into the pool first (--prewarm); prints the medians of transactions per second and their
// ratios, and adds <workload>_wall_speedup<suffix> (on / off) and
// <workload>_wall_auto_ratio<suffix> (auto / off) to *json.
bool RunTpccWallClock(const TpccRunOptions& options, const std::vector<TpccWorkload>& workloads,
                      int repeat, double seconds, const std::string& suffix, nlohmann::json* json);

}  // namespace sm::icache
