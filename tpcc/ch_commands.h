// The driver's CH-benCHmark verbs: `tpcc query` (the 22 analytic queries on a loaded database),
// `tpcc htap` (the TPC-C mix and query streams at once), `tpcc export` (every table as CSV), and
// `tpcc load --ch` (the CH tables).
//
// Exit status as the other verbs (cli_common.h): 0 success, 1 the work failed, 2 bad options or
// a database that cannot serve the request (no CH tables: the message says how to add them).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tpcc/cli_common.h"

namespace sm::tpcc {

struct QueryCliOptions {
  std::string which;             // "1".."22" or "all"
  std::string format = "table";  // how result rows are printed: table, csv or none
  bool explain = false;          // print the plan before running
  bool analyze = false;          // print the plan with rows and times after running
  uint32_t repeat = 1;           // runs per query (the figures are the medians)
  std::string buffers = "off";   // buffer operators: off, on or auto (query/refine.h)
  uint32_t buffer_size = 1000;   // tuples per buffer
  uint32_t threads = 1;          // threads per query (query::QueryOptions::threads)
  uint32_t streams = 1;          // threads each running the queries, from its own start
  bool streams_given = false;    // --streams was given: report as streams, even for one
  std::string share_scans = "off";  // streams share scans of whole tables: on or off
  std::string stock_join = "cost";  // index-or-radix joins: cost, index or hash
};
void AddQueryOptions(CLI::App* cmd, QueryCliOptions* q);
int QueryCommand(const CommonOptions& o, const QueryCliOptions& q);

struct ExportCliOptions {
  std::string dir;
  std::string format = "csv";
};
void AddExportOptions(CLI::App* cmd, ExportCliOptions* e);
int ExportCommand(const CommonOptions& o, const ExportCliOptions& e);

struct HtapCliOptions {
  uint32_t users = 0;          // 0: 10 per warehouse
  uint32_t query_streams = 1;  // threads, each running the 22 queries in order, again and again
  double duration_s = 20;      // of each of the three phases
  std::string mix = "45,43,4,4,4";
  std::string share_scans = "off";  // the query streams share scans of whole tables: on or off
};
void AddHtapOptions(CLI::App* cmd, HtapCliOptions* h);
// Three phases of --duration each: the TPC-C mix alone, the mix with the query streams, the
// query streams alone; both throughputs side by side, conditions 1-4 before and after.
int HtapCommand(const CommonOptions& o, const HtapCliOptions& h);

// After `tpcc load` (a new load or a reused one): adds the CH tables if they are missing.
// Returns 0 or the exit code, having printed why.
int LoadChTables(const CommonOptions& o, SmEngine* engine);

}  // namespace sm::tpcc
