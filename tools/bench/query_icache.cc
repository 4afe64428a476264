// query_icache: the experiments of Zhou & Ross (SIGMOD 2004, section 7) on CH data: plans run
// with and without buffer operators, under callgrind at two L1-I geometries (instructions, L1-I
// and L1-D misses, mispredicted branches), and natively for the wall clock.
//
// The experiments, with the paper's names (its lineitem becomes order_line, orders oorder):
//   q2        COUNT(*) of the order lines delivered by a date (all delivered lines pass): the
//             footprint fits, so buffering can only cost;
//   q1        SUM(ol_amount * ol_quantity), AVG(ol_quantity), COUNT(*) with the same predicate;
//   q3_nlj, q3_hash, q3_merge
//             those lines joined with their orders (SUM(o_ol_cnt), COUNT(*), AVG(ol_amount)),
//             forced to an index nested-loop, a hash and a merge join;
//   sweep     q1 with the predicate ol_delivery_d > T, T chosen so that the scan returns each
//             of --cardinalities rows (the paper's Figure 11), buffered and not; the
//             cardinality from which buffering wins for good is the calibrated threshold;
//   sizes     q1 with a buffer of each of --buffer-sizes tuples (Figure 12);
//   CH        all 22 through refinement (auto) against off for the wall clock; with
//             --ch-callgrind also Q1, Q5, Q6 and Q14 under callgrind (over all warehouses: long).
// Each plan runs off (no buffers), on (a buffer above every operator that may have one: the
// paper's buffered plans of these simple queries) and auto (plan refinement, query/refine.h,
// planning for the simulated L1-I, with --auto-threshold if given); results are checked equal
// across variants.
//
// Under callgrind the order lines are those of the first --callgrind-districts districts of
// warehouse 1 (figures per row read do not depend on the table's size, and a run stays
// minutes), natively those of the first --wall-warehouses warehouses; this binary
// runs itself as a child per geometry, warms the buffer pool without instrumentation, then runs
// each case collected between client requests and dumps it under its label. The wall clock runs
// every plan, variants alternating, --repeat times; medians.
//
// Which plan is cheaper under callgrind is decided by an estimate of cycles, KCachegrind's
// default formula: instructions + 10 x (L1 misses + mispredictions) + 100 x last-level misses.
//
// The sweep's threshold is decided by the wall clock (--calibrate-by; docs/design/query.md says
// why); --calibrate runs the sweep only (at --calibrate-i1, where q1's footprint exceeds the
// L1-I, as the paper's calibration query must), and writes the footprint table
// (query/footprints.h) with the calibrated threshold to --output.
//
// Last line JSON: q1_l1i_reduction_pct, q1_mispredict_reduction_pct,
// q1_instructions_increase_pct, q1_l1d_increase_pct, q1_wall_speedup, the same for q2 and
// q3_{nlj,hash,merge} (all at the smaller L1-I, buffers on against off), calibrated_threshold
// ("none" if buffering never won), cycles_threshold, wall_threshold, ch_auto_buffered_queries,
// ch_q<n>_auto_wall_speedup (of those), ch_auto_total_speedup and ch_auto_slowest_ratio (over
// those; the other queries run the same plan either way), and per case and geometry
// <case>_<variant>_<geometry> objects of instructions, l1i_misses, l1d_misses, mispredicts per row
// read and the cycle estimate. Exit status: 0 on success, 1 if a run failed or results differed, 2
// for bad options.
#include <valgrind/callgrind.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "query/query.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/ch_db.h"
#include "tools/icache/callgrind_parts.h"
#include "tpcc/ch_queries.h"

namespace sm::bench {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary
using nlohmann::json;

struct Options {
  ChData data;
  std::vector<std::string> geometries = {"32768,8,64", "16384,4,64"};
  uint32_t callgrind_districts = 4;  // under callgrind: districts 1..D of warehouse 1
  uint32_t wall_warehouses = 3;      // natively: warehouses 1..W (0: all)
  uint32_t repeat = 5;
  uint32_t buffer_tuples = kDefaultBufferTuples;
  std::vector<uint64_t> cardinalities = {10, 100, 300, 1000, 3000, 10000, 100000};
  std::vector<uint32_t> buffer_sizes = {1, 10, 100, 300, 1000, 3000, 10000};
  std::string calibrate_i1 = "16384,4,64";
  std::string calibrate_by = "wall";  // or "cycles": what decides that buffering wins
  bool calibrate = false;
  double auto_threshold = -1;  // < 0: the compiled-in footprint table's
  bool ch_callgrind = false;
  bool ch_all_wall = false;  // time all 22 CH queries, also those auto leaves unbuffered   // also
                             // CH Q1, Q5, Q6 and Q14 under callgrind (all warehouses)
  std::string output;        // --calibrate: where the footprint table goes
  std::string child_cases;   // internal: the cases a callgrind child runs
  std::string child_results;
};

// Which order lines (and orders) a plan reads.
struct Scope {
  uint32_t warehouses = 0;  // those of warehouses 1..W; 0: all
  uint32_t districts = 0;   // if not 0: those of districts 1..D of warehouse 1
};

// One run of one plan: which plan, over which order lines, with which buffers.
struct Case {
  std::string label;    // "<experiment>.<variant>", unique in a run
  std::string query;    // q1, q2, q3_nlj, q3_hash, q3_merge, ch<N>
  std::string buffers;  // off, on, auto
  uint32_t tuples = kDefaultBufferTuples;
  Scope scope;
  int64_t since = -1;     // >= 0: the predicate is ol_delivery_d > since (micros)
  std::string i1;         // the L1-I that auto plans for
  double threshold = -1;  // auto's cardinality threshold; < 0: the footprint table's
};

void to_json(json& j, const Case& c) {
  j = {{"label", c.label},
       {"query", c.query},
       {"buffers", c.buffers},
       {"tuples", c.tuples},
       {"warehouses", c.scope.warehouses},
       {"districts", c.scope.districts},
       {"since", c.since},
       {"i1", c.i1},
       {"threshold", c.threshold}};
}
void from_json(const json& j, Case& c) {
  c.label = j.at("label");
  c.query = j.at("query");
  c.buffers = j.at("buffers");
  c.tuples = j.at("tuples");
  c.scope.warehouses = j.at("warehouses");
  c.scope.districts = j.at("districts");
  c.since = j.at("since");
  c.i1 = j.at("i1");
  c.threshold = j.at("threshold");
}

// ---- the plans ----------------------------------------------------------------------------------

Expr Delivered(const Case& c) {
  if (c.since >= 0) return Col("ol_delivery_d") > DateMicros(c.since);
  return Col("ol_delivery_d") <= Date("2100-01-01");  // every delivered line
}

// A scan of `table` (keyed by warehouse, then district) over the scope.
Plan ScopedScan(const Catalog& catalog, const char* table, const Scope& scope,
                std::vector<std::string> columns) {
  if (scope.districts != 0) {
    return Plan::Scan(catalog, table, std::move(columns),
                      KeyRange{{Int(1), Int(1)}, {Int(1), Int(scope.districts)}});
  }
  if (scope.warehouses != 0) {
    return Plan::Scan(catalog, table, std::move(columns),
                      KeyRange{{Int(1)}, {Int(scope.warehouses)}});
  }
  return Plan::Scan(catalog, table, std::move(columns));
}

Plan Lines(const Catalog& catalog, const Case& c, std::vector<std::string> columns) {
  return ScopedScan(catalog, "order_line", c.scope, std::move(columns));
}

Status PaperPlan(const Catalog& catalog, const Case& c, Plan* out) {
  if (c.query.rfind("ch", 0) == 0) {
    return tpcc::ChQuery(std::stoi(c.query.substr(2)), catalog, tpcc::ChParams::Now(), out);
  }
  if (c.query == "q2") {
    *out = Lines(catalog, c, {"ol_delivery_d"})
               .Filter(Delivered(c))
               .Aggregate({}, {Count().As("count_order")});
  } else if (c.query == "q1") {
    *out = Lines(catalog, c, {"ol_amount", "ol_quantity", "ol_delivery_d"})
               .Filter(Delivered(c))
               .Aggregate({}, {Sum(Col("ol_amount") * Col("ol_quantity")).As("sum_charge"),
                               Avg(Col("ol_quantity")).As("avg_qty"), Count().As("count_order")});
  } else if (c.query.rfind("q3_", 0) == 0) {
    Plan lines = Lines(catalog, c, {"ol_w_id", "ol_d_id", "ol_o_id", "ol_amount", "ol_delivery_d"})
                     .Filter(Delivered(c));
    Plan joined;
    if (c.query == "q3_nlj") {
      joined = lines.IndexJoin(catalog, "oorder", {Col("ol_w_id"), Col("ol_d_id"), Col("ol_o_id")},
                               {"o_ol_cnt"});
    } else {
      Plan orders =
          ScopedScan(catalog, "oorder", c.scope, {"o_w_id", "o_d_id", "o_id", "o_ol_cnt"});
      if (c.query == "q3_hash") {
        joined = lines.HashJoin(orders, {{Col("ol_w_id"), Col("o_w_id")},
                                         {Col("ol_d_id"), Col("o_d_id")},
                                         {Col("ol_o_id"), Col("o_id")}});
      } else if (c.query == "q3_merge") {
        joined = orders.MergeJoin(
            lines, {{"o_w_id", "ol_w_id"}, {"o_d_id", "ol_d_id"}, {"o_id", "ol_o_id"}});
      } else {
        return Status::InvalidArgument("no query " + c.query);
      }
    }
    *out = joined.Aggregate({}, {Sum(Col("o_ol_cnt")).As("sum_ol_cnt"), Count().As("count_order"),
                                 Avg(Col("ol_amount")).As("avg_amount")});
  } else {
    return Status::InvalidArgument("no query " + c.query);
  }
  return out->status();
}

QueryOptions CaseOptions(const Case& c) {
  QueryOptions q;
  q.buffers.mode = c.buffers == "on"     ? BufferMode::kOn
                   : c.buffers == "auto" ? BufferMode::kAuto
                                         : BufferMode::kOff;
  q.buffers.tuples = c.tuples;
  q.buffers.l1i_bytes = std::strtoull(c.i1.c_str(), nullptr, 10);
  q.buffers.threshold_rows = c.threshold;
  return q;
}

struct CaseRun {
  uint64_t rows_read = 0;
  std::string result;  // the result rows as text, to compare variants
  double ms = 0;
};

Status RunCase(const Catalog& catalog, const Case& c, CaseRun* run) {
  Plan plan;
  SM_TRY(PaperPlan(catalog, c, &plan));
  tpcc::ChRun ch;
  SM_TRY(tpcc::RunChQuery(catalog, plan, CaseOptions(c), &ch));
  run->rows_read = ch.rows_read;
  run->ms = ch.ms;
  run->result.clear();
  for (const auto& row : ch.rows.rows) {
    for (const std::string& field : row) run->result += field + "|";
    run->result += "\n";
  }
  return Status::OK();
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "query_icache: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

// ---- the callgrind child ------------------------------------------------------------------------

// Runs every case once without instrumentation (reading the pages into the pool), then each
// collected and dumped under its label; writes rows read and results per label.
int RunChild(const Options& o) {
  std::ifstream in(o.child_cases);
  json list = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return Fail("cases", Status::InvalidArgument(o.child_cases));
  std::vector<Case> cases = list.get<std::vector<Case>>();
  std::unique_ptr<tpcc::SmEngine> engine;
  Catalog catalog(nullptr);
  if (Status s = OpenChDatabase(o.data.Db(), o.data.pool_mib << 20, &engine, &catalog); !s.ok()) {
    return Fail("open", s);
  }
  CaseRun run;
  for (const Case& c : cases) {
    if (Status s = RunCase(catalog, c, &run); !s.ok()) return Fail(c.label + " (warm)", s);
  }
  json results = json::object();
  CALLGRIND_START_INSTRUMENTATION;
  for (const Case& c : cases) {
    CALLGRIND_TOGGLE_COLLECT;
    Status s = RunCase(catalog, c, &run);
    CALLGRIND_DUMP_STATS_AT(c.label.c_str());
    CALLGRIND_TOGGLE_COLLECT;
    if (!s.ok()) return Fail(c.label, s);
    results[c.label] = {{"rows_read", run.rows_read}, {"result", run.result}};
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  std::ofstream(o.child_results) << results.dump() << "\n";
  return engine->Close().ok() ? 0 : 1;
}

// ---- the parent: figures ------------------------------------------------------------------------

struct Figures {
  double instructions = 0, l1i = 0, l1d = 0, mispredicts = 0, cycles = 0;  // per row read
  uint64_t rows_read = 0;
  std::string result;
};

// KCachegrind's default cycle estimate.
double EstimatedCycles(const icache::Counters& c) {
  const uint64_t ll = c.Get("ILmr") + c.Get("DLmr") + c.Get("DLmw");
  return static_cast<double>(c.Instructions()) +
         10.0 * static_cast<double>(c.L1iMisses() + c.L1dMisses() + c.Mispredicts()) +
         100.0 * static_cast<double>(ll);
}

json FiguresJson(const Figures& f) {
  return {{"instructions", f.instructions}, {"l1i_misses", f.l1i},    {"l1d_misses", f.l1d},
          {"mispredicts", f.mispredicts},   {"est_cycles", f.cycles}, {"rows_read", f.rows_read}};
}

// Runs `cases` in a child under callgrind with L1-I `i1`; *out: figures by label.
bool CallgrindCases(const Options& o, const std::string& i1, const std::vector<Case>& cases,
                    std::map<std::string, Figures>* out) {
  const std::string prefix = o.data.dir + "/query_icache";
  const std::string cases_path = prefix + ".cases.json";
  const std::string results_path = prefix + ".results.json";
  std::ofstream(cases_path) << json(cases).dump() << "\n";
  const std::string command =
      icache::ShellQuote(SelfPath()) + " --dir " + icache::ShellQuote(o.data.dir) +
      " --buffer-pool-mib " + std::to_string(o.data.pool_mib) + " --child-cases " +
      icache::ShellQuote(cases_path) + " --child-results " + icache::ShellQuote(results_path);
  icache::Geometry geometry;
  geometry.i1 = i1;
  std::printf("%zu runs under callgrind (I1 %s, D1 %s)...\n", cases.size(), geometry.Name().c_str(),
              geometry.d1.c_str());
  std::fflush(stdout);
  const double start = NowSeconds();
  std::vector<icache::Part> parts;
  std::string error;
  if (!icache::RunUnderCallgrindParts(command, geometry, prefix, "--instr-atstart=no", 0,
                                      /*functions=*/false, false, &parts, &error)) {
    std::fprintf(stderr, "query_icache: callgrind: %s\n", error.c_str());
    return false;
  }
  std::ifstream in(results_path);
  json results = json::parse(in, nullptr, /*allow_exceptions=*/false);
  for (const Case& c : cases) {
    auto part = std::find_if(parts.begin(), parts.end(),
                             [&c](const icache::Part& p) { return p.label == c.label; });
    if (part == parts.end() || !results.is_object() || !results.contains(c.label)) {
      std::fprintf(stderr, "query_icache: no figures for %s\n", c.label.c_str());
      return false;
    }
    Figures f;
    f.rows_read = results[c.label]["rows_read"];
    f.result = results[c.label]["result"];
    const double per = f.rows_read == 0 ? 0 : 1.0 / static_cast<double>(f.rows_read);
    const icache::Counters& k = part->counters;
    f.instructions = static_cast<double>(k.Instructions()) * per;
    f.l1i = static_cast<double>(k.L1iMisses()) * per;
    f.l1d = static_cast<double>(k.L1dMisses()) * per;
    f.mispredicts = static_cast<double>(k.Mispredicts()) * per;
    f.cycles = EstimatedCycles(k) * per;
    (*out)[c.label] = f;
  }
  std::printf("  done in %.0f s\n", NowSeconds() - start);
  return true;
}

double PctChange(double before, double after) {
  return before == 0 ? 0 : 100.0 * (after - before) / before;
}

// ---- the parent: wall clock ---------------------------------------------------------------------

// Medians of `repeat` native runs of each case, the cases alternating in turns that run them
// forwards and backwards.
bool WallClock(uint32_t repeat, const Catalog& catalog, const std::vector<Case>& cases,
               std::map<std::string, double>* ms, std::map<std::string, std::string>* results) {
  std::map<std::string, std::vector<double>> runs;
  CaseRun run;
  for (const Case& c : cases) {  // a warm run each: the pool holds their pages after it
    if (Status s = RunCase(catalog, c, &run); !s.ok()) return Fail(c.label, s) == 0;
    (*results)[c.label] = run.result;
  }
  for (uint32_t r = 0; r < repeat; ++r) {
    // Forwards, then backwards: a case run right after another of the same data (its buffered
    // twin) finds warmer caches, so each runs as often first as second.
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[r % 2 == 0 ? i : cases.size() - 1 - i];
      if (Status s = RunCase(catalog, c, &run); !s.ok()) return Fail(c.label, s) == 0;
      runs[c.label].push_back(run.ms);
    }
  }
  for (const auto& [label, list] : runs) (*ms)[label] = Median(list);
  return true;
}

// ---- the experiments ----------------------------------------------------------------------------

const std::vector<std::string> kPaperQueries = {"q2", "q1", "q3_nlj", "q3_hash", "q3_merge"};
const std::vector<std::string> kVariants = {"off", "on", "auto"};
const std::vector<int> kChCallgrind = {1, 5, 6, 14};

std::string Label(const std::string& experiment, const std::string& variant) {
  return experiment + "." + variant;
}

Scope CallgrindScope(const Options& o) { return Scope{0, o.callgrind_districts}; }
Scope WallScope(const Options& o) { return Scope{o.wall_warehouses, 0}; }

std::vector<Case> PaperCases(const Options& o, Scope scope, const std::string& i1) {
  std::vector<Case> cases;
  for (const std::string& q : kPaperQueries) {
    for (const std::string& v : kVariants) {
      cases.push_back({Label(q, v), q, v, o.buffer_tuples, scope, -1, i1, o.auto_threshold});
    }
  }
  return cases;
}

// Timestamps T such that `ol_delivery_d > T` holds for about each wanted number of the order
// lines of warehouses 1..W (the data's delivery dates are distinct to the microsecond except for
// the load's, which are the earliest).
Status SweepSince(const Catalog& catalog, Scope scope, const std::vector<uint64_t>& wanted,
                  std::vector<int64_t>* since) {
  Case c{"", "", "off", 1, scope, -1, ""};
  std::unique_ptr<ResultCursor> cursor;
  SM_TRY(
      ResultCursor::Open(catalog, Lines(catalog, c, {"ol_delivery_d"}), QueryOptions(), &cursor));
  std::vector<int64_t> dates;
  for (const Value* row = nullptr;;) {
    SM_TRY(cursor->Next(&row));
    if (row == nullptr) break;
    if (!row[0].null) dates.push_back(row[0].i);
  }
  SM_TRY(cursor->Close());
  std::sort(dates.begin(), dates.end(), std::greater<>());
  since->clear();
  for (uint64_t n : wanted) {
    if (n >= dates.size()) {
      return Status::InvalidArgument("a cardinality of " + std::to_string(n) + " exceeds the " +
                                     std::to_string(dates.size()) + " delivered order lines");
    }
    since->push_back(dates[n]);  // the n greatest dates are above it
  }
  return Status::OK();
}

std::vector<Case> SweepCases(const Options& o, const std::vector<int64_t>& since,
                             const std::string& i1) {
  std::vector<Case> cases;
  for (size_t i = 0; i < since.size(); ++i) {
    const std::string e = "sweep" + std::to_string(o.cardinalities[i]);
    for (const char* v : {"off", "on"}) {
      cases.push_back({Label(e, v), "q1", v, o.buffer_tuples, CallgrindScope(o), since[i], i1});
    }
  }
  return cases;
}

std::vector<Case> SizeCases(const Options& o, const std::string& i1) {
  std::vector<Case> cases;
  for (uint32_t n : o.buffer_sizes) {
    cases.push_back(
        {Label("size" + std::to_string(n), "on"), "q1", "on", n, CallgrindScope(o), -1, i1});
  }
  return cases;
}

// The smallest swept cardinality from which the buffered plan costs less than the unbuffered
// one at every larger swept cardinality, by `cost` of a case's label; -1 if it never does.
double Crossover(const Options& o, const std::function<double(const std::string&)>& cost) {
  double threshold = -1;
  for (size_t i = o.cardinalities.size(); i-- > 0;) {
    const std::string e = "sweep" + std::to_string(o.cardinalities[i]);
    if (cost(Label(e, "on")) >= cost(Label(e, "off"))) break;
    threshold = static_cast<double>(o.cardinalities[i]);
  }
  return threshold;
}

// Fails (false) if a case's result differs from the off variant's of its experiment.
bool SameResults(const std::vector<Case>& cases, const std::map<std::string, std::string>& r) {
  bool same = true;
  for (const Case& c : cases) {
    const std::string off = c.label.substr(0, c.label.rfind('.')) + ".off";
    auto it = r.find(off);
    if (it != r.end() && it->second != r.at(c.label)) {
      std::fprintf(stderr, "query_icache: %s returned other rows than %s\n", c.label.c_str(),
                   off.c_str());
      same = false;
    }
  }
  return same;
}

std::map<std::string, std::string> ResultsOf(const std::map<std::string, Figures>& f) {
  std::map<std::string, std::string> r;
  for (const auto& [label, figures] : f) r[label] = figures.result;
  return r;
}

void PrintCallgrindTable(const std::string& title, const std::vector<Case>& cases,
                         const std::map<std::string, Figures>& f) {
  std::printf("\n%s (per order line read)\n", title.c_str());
  std::printf("%-20s %10s %12s %9s %9s %9s %10s\n", "plan", "rows read", "instructions",
              "L1-I miss", "L1-D miss", "mispred", "est cycles");
  for (const Case& c : cases) {
    const Figures& x = f.at(c.label);
    std::printf("%-20s %10llu %12.1f %9.3f %9.3f %9.3f %10.1f\n", c.label.c_str(),
                static_cast<unsigned long long>(x.rows_read), x.instructions, x.l1i, x.l1d,
                x.mispredicts, x.cycles);
  }
  std::fflush(stdout);
}

std::string GeometryKey(const std::string& i1) {
  icache::Geometry g;
  g.i1 = i1;
  std::string s = g.Suffix();
  return s.empty() ? "32k8w" : s.substr(1);
}

// ---- the run ------------------------------------------------------------------------------------

// Writes the compiled-in footprint table with `threshold` (< 0: buffering never won).
bool WriteCalibratedTable(const Options& o, double threshold) {
  std::string text = FootprintTable::WithThreshold(FootprintTable::DefaultText(), threshold);
  std::ofstream out(o.output);
  out << text;
  if (!out) {
    std::fprintf(stderr, "query_icache: cannot write %s\n", o.output.c_str());
    return false;
  }
  std::printf("wrote %s\n", o.output.c_str());
  return true;
}

constexpr uint32_t kSweepRepeatFactor = 4;
constexpr double kWallMargin = 0.01;

json ThresholdJson(double rows) { return rows < 0 ? json("none") : json(rows); }

// The sweep's cases natively (callgrind's figures of them in `f`): prints both, and returns the
// threshold --calibrate-by chooses (< 0: buffering never won); both thresholds go to *figures.
double SweepThreshold(const Options& o, const std::vector<Case>& cases, const Catalog& catalog,
                      const std::map<std::string, Figures>& f, json* figures) {
  std::map<std::string, double> ms;
  std::map<std::string, std::string> results;
  // Its runs are short and its differences small at small cardinalities: more runs.
  const uint32_t repeat = kSweepRepeatFactor * o.repeat;
  std::printf("\nthe sweep natively, %u runs each...\n", repeat);
  std::fflush(stdout);
  if (!WallClock(repeat, catalog, cases, &ms, &results) || !SameResults(cases, results)) return -2;
  std::printf("%12s %12s %12s %10s %10s\n", "rows out", "cycles off", "cycles on", "ms off",
              "ms on");
  for (uint64_t n : o.cardinalities) {
    const std::string e = "sweep" + std::to_string(n);
    const Figures& off = f.at(Label(e, "off"));
    const Figures& on = f.at(Label(e, "on"));
    std::printf("%12llu %12.1f %12.1f %10.2f %10.2f\n", static_cast<unsigned long long>(n),
                off.cycles, on.cycles, ms[Label(e, "off")], ms[Label(e, "on")]);
    (*figures)[Label(e, "off") + "_ms"] = ms[Label(e, "off")];
    (*figures)[Label(e, "on") + "_ms"] = ms[Label(e, "on")];
  }
  const double by_cycles = Crossover(o, [&f](const std::string& l) {
    return f.at(l).cycles * static_cast<double>(f.at(l).rows_read);
  });
  // A win on the wall clock must exceed what its noise can fake: kWallMargin of the time.
  const double by_wall = Crossover(o, [&ms](const std::string& l) {
    return l.ends_with(".on") ? ms.at(l) * (1 + kWallMargin) : ms.at(l);
  });
  (*figures)["cycles_threshold"] = ThresholdJson(by_cycles);
  (*figures)["wall_threshold"] = ThresholdJson(by_wall);
  const double chosen = o.calibrate_by == "wall" ? by_wall : by_cycles;
  (*figures)["calibrated_threshold"] = ThresholdJson(chosen);
  auto text = [](double t) {
    return t < 0 ? std::string("never") : std::to_string(std::llround(t));
  };
  std::printf(
      "buffering wins from %s rows by the cycle estimate, from %s by the wall clock; "
      "calibrated (by %s): %s\n",
      text(by_cycles).c_str(), text(by_wall).c_str(), o.calibrate_by.c_str(), text(chosen).c_str());
  return chosen;
}

// --calibrate: the sweep's figures (callgrind's in `f`, measured at --calibrate-i1), the
// threshold, and the footprint table with it written to --output.
int CalibrateFrom(const Options& o, const std::vector<Case>& cases,
                  const std::map<std::string, Figures>& f, const Catalog& catalog, json* figures) {
  if (!SameResults(cases, ResultsOf(f))) return 1;
  PrintCallgrindTable("the cardinality sweep at L1-I " + o.calibrate_i1, cases, f);
  for (const Case& c : cases) {
    (*figures)[c.label + "_" + GeometryKey(o.calibrate_i1)] = FiguresJson(f.at(c.label));
  }
  const double threshold = SweepThreshold(o, cases, catalog, f, figures);
  if (threshold < -1) return 1;
  if (!o.output.empty() && !WriteCalibratedTable(o, threshold)) return 1;
  return 0;
}

void PaperKeys(const std::map<std::string, Figures>& f, const std::map<std::string, double>& ms,
               json* figures) {
  std::printf("\n%-10s %9s %9s %9s %9s %9s   (buffers on against off, %%)\n", "query", "L1-I",
              "mispred", "instr", "L1-D", "wall x");
  for (const std::string& q : kPaperQueries) {
    const Figures& off = f.at(Label(q, "off"));
    const Figures& on = f.at(Label(q, "on"));
    const double wall = ms.at(Label(q, "off")) / ms.at(Label(q, "on"));
    const double l1i = -PctChange(off.l1i, on.l1i);
    const double mis = -PctChange(off.mispredicts, on.mispredicts);
    const double ins = PctChange(off.instructions, on.instructions);
    const double l1d = PctChange(off.l1d, on.l1d);
    std::printf("%-10s %9.1f %9.1f %9.1f %9.1f %9.3f\n", q.c_str(), l1i, mis, ins, l1d, wall);
    (*figures)[q + "_l1i_reduction_pct"] = l1i;
    (*figures)[q + "_mispredict_reduction_pct"] = mis;
    (*figures)[q + "_instructions_increase_pct"] = ins;
    (*figures)[q + "_l1d_increase_pct"] = l1d;
    (*figures)[q + "_wall_speedup"] = wall;
    (*figures)[q + "_auto_wall_speedup"] = ms.at(Label(q, "off")) / ms.at(Label(q, "auto"));
  }
}

// Whether auto places a buffer in the plan of case `c` (its tree would differ from off's).
Status HasBuffers(const Catalog& catalog, const Case& c, bool* has) {
  Plan plan;
  SM_TRY(PaperPlan(catalog, c, &plan));
  std::string text;
  SM_TRY(ExplainOperatorTree(plan, CaseOptions(c), &text));
  *has = text.find("Buffer ") != std::string::npos;
  return Status::OK();
}

// CH queries: the 22 with --buffers auto as users get it (this machine's L1-I, the compiled-in
// threshold) against off, for the wall clock. A query where auto places no buffer runs the plan
// off runs, so only the others are timed (their differences are not buried in the noise of
// twenty-two pairs); the total counts the rest at off's time on both sides, which
// --ch-all-wall measures instead. *figures gets the speedups.
bool ChWallClock(const Options& o, const Catalog& catalog, json* figures) {
  std::vector<Case> cases;
  std::vector<int> buffered;
  for (int n = 1; n <= tpcc::kChQueries; ++n) {
    const std::string e = "ch" + std::to_string(n);
    Case with{Label(e, "auto"),
              e,
              "auto",
              o.buffer_tuples,
              Scope{},
              -1,
              std::to_string(MachineL1iBytes())};
    bool has = false;
    if (Status s = HasBuffers(catalog, with, &has); !s.ok()) return Fail(e, s) == 0;
    if (!has && !o.ch_all_wall) continue;
    if (has) buffered.push_back(n);
    Case without = with;
    without.label = Label(e, "off");
    without.buffers = "off";
    cases.push_back(without);
    cases.push_back(with);
  }
  std::string list;
  for (int n : buffered) list += (list.empty() ? "Q" : ", Q") + std::to_string(n);
  std::printf("\nCH queries where auto places buffers (L1-I %llu B): %s\n",
              static_cast<unsigned long long>(MachineL1iBytes()),
              list.empty() ? "none" : list.c_str());
  (*figures)["ch_auto_buffered_queries"] = buffered;
  std::map<std::string, double> ms;
  std::map<std::string, std::string> results;
  if (!cases.empty()) {
    std::printf("those, off and auto, %u runs each...\n", o.repeat);
    std::fflush(stdout);
    if (!WallClock(o.repeat, catalog, cases, &ms, &results) || !SameResults(cases, results)) {
      return false;
    }
  }
  double off_total = 0, auto_total = 0, slowest = 0;
  std::printf("%-6s %10s %10s %8s\n", "query", "off ms", "auto ms", "speedup");
  for (int n = 1; n <= tpcc::kChQueries; ++n) {
    const std::string e = "ch" + std::to_string(n);
    if (!ms.count(Label(e, "off"))) continue;
    const double off = ms[Label(e, "off")], on = ms[Label(e, "auto")];
    off_total += off;
    auto_total += on;
    slowest = std::max(slowest, on / off);
    std::printf("%-6s %10.1f %10.1f %8.3f\n", e.c_str(), off, on, off / on);
    (*figures)["ch_q" + std::to_string(n) + "_auto_wall_speedup"] = off / on;
  }
  if (off_total > 0) {
    std::printf("total  %10.1f %10.1f %8.3f\n", off_total, auto_total, off_total / auto_total);
  }
  (*figures)["ch_auto_total_ms_off"] = off_total;
  (*figures)["ch_auto_total_ms_auto"] = auto_total;
  (*figures)["ch_auto_total_speedup"] = auto_total > 0 ? off_total / auto_total : 1.0;
  (*figures)["ch_auto_slowest_ratio"] = slowest > 0 ? slowest : 1.0;
  return true;
}

int Run(const Options& o) {
  json manifest = ReadChManifest(o.data);
  if (!PrepareChData(o.data, &manifest)) {
    std::fprintf(stderr, "query_icache: preparing the data in %s failed\n", o.data.dir.c_str());
    return 1;
  }
  const double table_threshold = FootprintTable::Default().threshold_rows();
  const double auto_threshold = o.auto_threshold >= 0  ? o.auto_threshold
                                : table_threshold >= 0 ? table_threshold
                                                       : kDefaultBufferThreshold;
  json figures = {
      {"warehouses", o.data.warehouses},
      {"auto_threshold", std::isinf(auto_threshold) ? json("none") : json(auto_threshold)},
      {"callgrind_districts", o.callgrind_districts},
      {"wall_warehouses", o.wall_warehouses},
      {"buffer_tuples", o.buffer_tuples},
      {"repeat", o.repeat}};
  std::vector<int64_t> since;
  {
    std::unique_ptr<tpcc::SmEngine> engine;
    Catalog catalog(nullptr);
    if (Status s = OpenChDatabase(o.data.Db(), o.data.pool_mib << 20, &engine, &catalog); !s.ok()) {
      return Fail("open", s);
    }
    if (Status s = SweepSince(catalog, CallgrindScope(o), o.cardinalities, &since); !s.ok()) {
      return Fail("the sweep's dates", s);
    }
    if (Status s = engine->Close(); !s.ok()) return Fail("close", s);
  }
  if (o.calibrate) {
    std::unique_ptr<tpcc::SmEngine> engine;  // opened after the callgrind child has run
    Catalog catalog(nullptr);
    const std::vector<Case> cases = SweepCases(o, since, o.calibrate_i1);
    std::map<std::string, Figures> f;
    if (!CallgrindCases(o, o.calibrate_i1, cases, &f)) return 1;
    if (Status s = OpenChDatabase(o.data.Db(), o.data.pool_mib << 20, &engine, &catalog); !s.ok()) {
      return Fail("open", s);
    }
    int rc = CalibrateFrom(o, cases, f, catalog, &figures);
    if (Status s = engine->Close(); !s.ok()) return Fail("close", s);
    PrintJsonLine(figures);
    return rc;
  }
  // Under callgrind: the paper's queries and the CH ones at each geometry; the sweeps at the
  // smaller L1-I only.
  std::map<std::string, std::map<std::string, Figures>> by_geometry;
  for (const std::string& i1 : o.geometries) {
    std::vector<Case> cases = PaperCases(o, CallgrindScope(o), i1);
    for (int n : o.ch_callgrind ? kChCallgrind : std::vector<int>()) {
      for (const char* v : {"off", "auto"}) {
        cases.push_back({Label("ch" + std::to_string(n), v), "ch" + std::to_string(n), v,
                         o.buffer_tuples, Scope{}, -1, i1, o.auto_threshold});
      }
    }
    if (&i1 == &o.geometries.back()) {
      for (const auto& list : {SweepCases(o, since, i1), SizeCases(o, i1)}) {
        cases.insert(cases.end(), list.begin(), list.end());
      }
    }
    std::map<std::string, Figures>& f = by_geometry[i1];
    if (!CallgrindCases(o, i1, cases, &f)) return 1;
    if (!SameResults(cases, ResultsOf(f))) return 1;
    PrintCallgrindTable("L1-I " + i1, cases, f);
    for (const Case& c : cases) {
      figures[c.label + "_" + GeometryKey(i1)] = FiguresJson(f.at(c.label));
    }
  }
  const std::map<std::string, Figures>& small = by_geometry[o.geometries.back()];
  // Natively: the sweep, the paper's queries, then the CH queries.
  std::unique_ptr<tpcc::SmEngine> engine;
  Catalog catalog(nullptr);
  if (Status s = OpenChDatabase(o.data.Db(), o.data.pool_mib << 20, &engine, &catalog); !s.ok()) {
    return Fail("open", s);
  }
  const double threshold =
      SweepThreshold(o, SweepCases(o, since, o.geometries.back()), catalog, small, &figures);
  if (threshold < -1) return 1;
  const std::vector<Case> wall_cases =
      PaperCases(o, WallScope(o), std::to_string(MachineL1iBytes()));
  std::printf("\nthe paper's queries over %s, %u runs each...\n",
              o.wall_warehouses == 0
                  ? "all warehouses"
                  : ("warehouses 1-" + std::to_string(o.wall_warehouses)).c_str(),
              o.repeat);
  std::fflush(stdout);
  std::map<std::string, double> ms;
  std::map<std::string, std::string> results;
  if (!WallClock(o.repeat, catalog, wall_cases, &ms, &results) ||
      !SameResults(wall_cases, results)) {
    return 1;
  }
  for (const Case& c : wall_cases) figures[c.label + "_ms"] = ms[c.label];
  PaperKeys(small, ms, &figures);
  if (!ChWallClock(o, catalog, &figures)) return 1;
  if (Status s = engine->Close(); !s.ok()) return Fail("close", s);
  PrintJsonLine(figures);
  return 0;
}

}  // namespace
}  // namespace sm::bench

int main(int argc, char** argv) {
  sm::bench::Options o;
  CLI::App app{"The buffer operator's experiments (Zhou & Ross) on CH data"};
  auto geometry_check = [](const std::string& g) {
    sm::icache::Geometry geometry;
    geometry.i1 = g;
    return geometry.Valid() ? std::string() : "not SIZE,WAYS,LINE";
  };
  app.add_option("--dir", o.data.dir, "the CH data (default ./data/bench-query-<W>w)");
  app.add_option("--tpcc", o.data.tpcc, "the tpcc driver binary, to make the data")
      ->capture_default_str();
  app.add_option("--warehouses,-w", o.data.warehouses, "warehouses of the CH database")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  app.add_option("--tpcc-seconds", o.data.tpcc_seconds, "seconds of the mix after the load")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--buffer-pool-mib", o.data.pool_mib, "the buffer pool, in MiB")
      ->check(CLI::Range(64u, 1u << 20))
      ->capture_default_str();
  app.add_flag("--fresh", o.data.fresh, "make the data anew even if --dir holds it");
  app.add_option("--i1", o.geometries,
                 "the L1-I geometries callgrind simulates, the smaller last "
                 "(SIZE,WAYS,LINE;...)")
      ->delimiter(';')
      ->check(geometry_check)
      ->capture_default_str();
  app.add_option("--callgrind-districts", o.callgrind_districts,
                 "under callgrind, the order lines of districts 1..D of warehouse 1")
      ->check(CLI::Range(1u, 10u))
      ->capture_default_str();
  app.add_option("--wall-warehouses", o.wall_warehouses,
                 "natively, the order lines of warehouses 1..W of the paper's queries (0: all)")
      ->check(CLI::Range(0u, 1000u))
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "native runs of each plan (the median counts)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--buffer-size", o.buffer_tuples, "tuples per buffer")
      ->check(CLI::Range(1u, sm::query::kMaxBufferTuples))
      ->capture_default_str();
  app.add_option("--cardinalities", o.cardinalities, "the sweep's scan output cardinalities")
      ->delimiter(',')
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--buffer-sizes", o.buffer_sizes, "the buffer sizes swept")
      ->delimiter(',')
      ->check(CLI::Range(1u, sm::query::kMaxBufferTuples))
      ->capture_default_str();
  app.add_option("--auto-threshold", o.auto_threshold,
                 "the cardinality threshold of the auto variants (default: the calibrated one "
                 "compiled in, else the paper's 600)")
      ->check(CLI::Range(0.0, 1e15));
  app.add_flag("--ch-callgrind", o.ch_callgrind,
               "also run CH Q1, Q5, Q6 and Q14 under callgrind, over all warehouses (long)");
  app.add_flag("--ch-all-wall", o.ch_all_wall,
               "time all 22 CH queries off and auto, also those where auto places no buffer");
  app.add_flag("--calibrate", o.calibrate, "only the cardinality sweep; write the threshold");
  app.add_option("--calibrate-i1", o.calibrate_i1, "the L1-I of the calibration")
      ->check(geometry_check)
      ->capture_default_str();
  app.add_option("--calibrate-by", o.calibrate_by,
                 "what decides where buffering wins: the wall clock or callgrind's cycle estimate")
      ->check(CLI::IsMember({"wall", "cycles"}))
      ->capture_default_str();
  app.add_option("--output", o.output,
                 "--calibrate: write the footprint table with the threshold here");
  app.add_option("--child-cases", o.child_cases)->group("");  // the callgrind child
  app.add_option("--child-results", o.child_results)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.data.dir.empty()) {
    o.data.dir = "./data/bench-query-" + std::to_string(o.data.warehouses) + "w";
  }
  std::sort(o.cardinalities.begin(), o.cardinalities.end());
  if (!o.child_cases.empty()) return sm::bench::RunChild(o);
  return sm::bench::Run(o);
}
