// The driver's `tpcc ycsb load` and `tpcc ycsb run` verbs (tpcc/ycsb.h): their options, and
// what they print.
//
// `ycsb load` loads --records records into the database of --engine (or reuses a load of that
// many), printing progress per --interval. `ycsb run` runs one workload with one request
// distribution for --duration seconds after --warmup, one operation per transaction, with
// --users terminals (default: one per worker, as `tools/run compare` runs TPC-C), and prints a
// progress line per --interval and a summary: operations per second, latency percentiles per
// operation type, retries. --output json ends with one JSON object on stdout.
//
// Exit status (cli_common.h): 0; 1 if the work failed, a check of an operation failed
// (Corruption), or the run completed no operation; 2 for bad options. SIGINT or SIGTERM ends a
// run early, with its summary; then the process ends by the signal.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tpcc/cli_common.h"

namespace sm::tpcc {

struct YcsbCliOptions {
  uint64_t records = 1'000'000;
  bool records_given = false;
  std::string workload = "a";
  std::string distribution = "zipfian";
  uint32_t users = 0;  // 0: one per worker
  double duration_s = 10;
  double warmup_s = 1;
  bool prewarm = false;  // run: read our database into the buffer pool first
};

// Adds the `load` and `run` verbs under `ycsb`, each with the options every verb takes.
void AddYcsbCommands(CLI::App* ycsb, CommonOptions* common, YcsbCliOptions* y, CLI::App** load_cmd,
                     CLI::App** run_cmd);
int YcsbLoadCommand(const CommonOptions& o, const YcsbCliOptions& y);
int YcsbRunCommand(const CommonOptions& o, const YcsbCliOptions& y);

}  // namespace sm::tpcc
