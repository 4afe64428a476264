// The driver's `tpcc run` verb: its options, the run with conditions 1-4 before and after, and
// what it prints.
//
// Output: a progress line per --interval with the figures of that interval (tx/s, completed
// transactions per type, p90 and p95, aborts), then the summary (counts and latencies per type
// with p90 against the limits of clause 5.2.5.3, the input audit of clause 9.2.2.5, engine
// statistics). --output json writes one JSON object on stdout at the end; --output csv writes a
// header and a row per interval on stdout as the run goes (a time series, as BenchBase's
// --sample writes), the summary going to stderr in both.
//
// Exit status (cli_common.h): 0; 1 if a condition failed or the run completed no transaction
// (nothing was measured: a result of zero is not a result); 2 for bad options. SIGINT or
// SIGTERM ends the run early, with its summary and the checks after it; then, unless that
// failed, the process ends by the signal (exit status 130 or 143 in a shell).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tpcc/cli_common.h"

namespace sm::tpcc {

struct RunCliOptions {
  uint32_t users = 0;  // 0: 10 per warehouse
  double duration_s = 10;
  double warmup_s = 0;
  std::string mix = "45,43,4,4,4";
  std::string think_time = "0";
  std::string access_order = "hot-last";
  std::string ytd = "add";
  std::string steps = "off";
  uint32_t team_size = 0;       // 0: not given (the engine's default, 32)
  uint32_t max_pass_overs = 0;  // 0: not given (the engine's default)
  std::string ctx_placement;
  uint64_t transactions = 0;  // > 0: count mode (RunOptions::transactions)
  uint64_t warmup_transactions = 0;
  bool callgrind_window = false;
  bool prewarm = false;
};

void AddRunOptions(CLI::App* cmd, RunCliOptions* r);
int RunCommand(const CommonOptions& o, const RunCliOptions& r);

}  // namespace sm::tpcc
