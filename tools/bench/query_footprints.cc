// query_footprints: measures the instruction footprint of each operator module of the query
// layer (Zhou & Ross, SIGMOD 2004, section 6.1) and writes query/footprints.txt.
//
// A module is the code one operator runs in one phase: a scan returning tuples, a hash join
// building (in its Open) and probing (in its Next), an aggregation taking in its input (base,
// then each aggregate function), a sort building and returning its runs, ... Each is measured
// on a calibration plan over a one-warehouse CH database: this binary runs the plan as a child
// under callgrind with its operators in profile slots (query/operator.h), and
// --toggle-collect on the target operator's slot function for the phase and on the slot
// functions through which it calls its direct children in that phase, so that callgrind
// collects exactly while the target's own code runs (entering a child's slot flips collection
// off, leaving it flips it on again; the parent reads which children are called in which phase
// from the plan's operator tree). The child runs the plan once to warm up, zeroes the counts,
// runs it again and dumps. The module's functions are those of its steady state (kSteadyCalls);
// their code bytes come from this binary's symbol table (functions outside it, such as libc's, have no
// size there and are left out; the table counts them).
//
// Output: query/footprints.txt (footprints.h gives the format), a table of modules with their
// function counts and bytes, and a last JSON line {"modules": N, "<module>_bytes": B, ...}.
// Exit status: 0 on success, 1 if a run failed, 2 for bad options.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <valgrind/callgrind.h>

#include "query/query.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/ch_db.h"
#include "tools/icache/callgrind_parts.h"

namespace sm::bench {
namespace {

namespace fs = std::filesystem;
using namespace sm::query;  // NOLINT: the plan vocabulary
using nlohmann::json;

enum class Phase { kOpen, kNext };

// A module and the plan it is measured on: the target is the operator numbered `slot` in
// preorder (`target` names it; the tool checks), measured in `phase`.
struct Calibration {
  const char* module;
  std::function<Plan(const Catalog&)> plan;
  uint32_t slot;
  const char* target;
  Phase phase;
};

// Order lines of districts 1 and 2 of warehouse 1 (about a fifth of them): enough tuples for
// the steady state, few enough for callgrind.
Plan Lines(const Catalog& c, std::vector<std::string> columns) {
  return Plan::Scan(c, "order_line", std::move(columns), KeyRange{{Int(1), Int(1)}, {Int(1), Int(2)}});
}
Plan Orders(const Catalog& c) {
  return Plan::Scan(c, "oorder", {"o_w_id", "o_d_id", "o_id", "o_c_id"},
                    KeyRange{{Int(1), Int(1)}, {Int(1), Int(2)}});
}
Plan CountAll(const Plan& p) { return p.Aggregate({}, {Count().As("n")}); }
Plan PerNumber(const Plan& p, Agg agg) {
  return p.Aggregate({{Col("ol_number")}}, {std::move(agg)});
}
const std::vector<std::string> kLineColumns = {"ol_w_id", "ol_d_id", "ol_o_id", "ol_number",
                                               "ol_amount", "ol_quantity"};

std::vector<Calibration> Calibrations() {
  auto lines = [](const Catalog& c) { return Lines(c, kLineColumns); };
  auto join = [](const Catalog& c) {
    return CountAll(Orders(c).HashJoin(
        Plan::Scan(c, "customer", {"c_w_id", "c_d_id", "c_id"},
                   KeyRange{{Int(1), Int(1)}, {Int(1), Int(2)}}),
        {{Col("o_w_id"), Col("c_w_id")}, {Col("o_d_id"), Col("c_d_id")}, {Col("o_c_id"), Col("c_id")}}));
  };
  auto per_number = [lines](Agg agg) {
    return [lines, agg](const Catalog& c) { return PerNumber(lines(c), agg); };
  };
  auto sorted = [lines](const Catalog& c) { return lines(c).Sort({"ol_amount"}); };
  auto top = [lines](const Catalog& c) { return lines(c).TopN({"ol_amount"}, 5000); };
  auto materialized = [lines](const Catalog& c) { return CountAll(lines(c).Materialize()); };
  return {
      {"scan", [lines](const Catalog& c) { return CountAll(lines(c)); }, 1, "TableScan",
       Phase::kNext},
      {"scan.predicate",
       [](const Catalog& c) {
         return CountAll(Lines(c, kLineColumns)
                             .Filter(And(Col("ol_quantity") >= 1, Col("ol_amount") >= Money(0))));
       },
       1, "TableScan", Phase::kNext},
      {"filter",
       [lines](const Catalog& c) {
         return CountAll(lines(c).Project({{Col("ol_amount")}, {Col("ol_quantity")}})
                             .Filter(Col("ol_quantity") >= 1));
       },
       1, "Filter", Phase::kNext},
      {"project",
       [lines](const Catalog& c) {
         return CountAll(lines(c).Project({{Col("ol_amount") * 2, "twice"}}));
       },
       1, "Project", Phase::kNext},
      {"limit", [lines](const Catalog& c) { return CountAll(lines(c).Limit(1u << 30)); }, 1,
       "Limit", Phase::kNext},
      {"buffer", [lines](const Catalog& c) { return CountAll(lines(c).Buffer()); }, 1,
       "Buffer", Phase::kNext},
      {"hash_join.build", join, 1, "HashJoin", Phase::kOpen},
      {"hash_join.probe", join, 1, "HashJoin", Phase::kNext},
      {"index_join",
       [](const Catalog& c) {
         return CountAll(Orders(c).IndexJoin(c, "customer",
                                             {Col("o_w_id"), Col("o_d_id"), Col("o_c_id")},
                                             {"c_id"}));
       },
       1, "IndexJoin", Phase::kNext},
      {"merge_join",
       [lines](const Catalog& c) {
         return CountAll(Orders(c).MergeJoin(
             lines(c), {{"o_w_id", "ol_w_id"}, {"o_d_id", "ol_d_id"}, {"o_id", "ol_o_id"}}));
       },
       1, "MergeJoin", Phase::kNext},
      {"hash_aggregate", per_number(Count().As("n")), 0, "HashAggregate", Phase::kOpen},
      {"hash_aggregate.output",
       [lines](const Catalog& c) {
         return lines(c).Aggregate({{Col("ol_o_id")}, {Col("ol_number")}}, {Count().As("n")});
       },
       0, "HashAggregate", Phase::kNext},
      {"aggregate.count_star", per_number(Count().As("n")), 0, "HashAggregate", Phase::kOpen},
      {"aggregate.count", per_number(Count(Col("ol_amount")).As("n")), 0, "HashAggregate",
       Phase::kOpen},
      {"aggregate.count_distinct", per_number(CountDistinct(Col("ol_quantity")).As("n")), 0,
       "HashAggregate", Phase::kOpen},
      {"aggregate.sum", per_number(Sum(Col("ol_amount")).As("s")), 0, "HashAggregate",
       Phase::kOpen},
      {"aggregate.avg", per_number(Avg(Col("ol_quantity")).As("a")), 0, "HashAggregate",
       Phase::kOpen},
      {"aggregate.min", per_number(Min(Col("ol_amount")).As("m")), 0, "HashAggregate",
       Phase::kOpen},
      {"aggregate.max", per_number(Max(Col("ol_amount")).As("m")), 0, "HashAggregate",
       Phase::kOpen},
      {"sort_aggregate",
       [lines](const Catalog& c) {
         return CountAll(lines(c).Aggregate({{Col("ol_w_id")}, {Col("ol_d_id")}, {Col("ol_o_id")}},
                                            {Count().As("n")}, AggStrategy::kSort));
       },
       1, "SortAggregate", Phase::kNext},
      {"sort", sorted, 0, "Sort", Phase::kOpen},
      {"sort.output", sorted, 0, "Sort", Phase::kNext},
      {"top_n", top, 0, "TopN", Phase::kOpen},
      {"top_n.output", top, 0, "TopN", Phase::kNext},
      {"materialize", materialized, 1, "Materialize", Phase::kOpen},
      {"materialize.output", materialized, 1, "Materialize", Phase::kNext},
  };
}

struct Options {
  std::string db;      // the one-warehouse CH database (loaded with --tpcc if missing)
  std::string tpcc = "tpcc";
  std::string output;  // the footprint file to write
  std::vector<std::string> modules;  // only these (empty: all)
  std::string child;   // internal: measure this module's plan under callgrind
};

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "query_footprints: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

const Calibration* FindCalibration(const std::vector<Calibration>& all, const std::string& m) {
  auto it = std::find_if(all.begin(), all.end(),
                         [&m](const Calibration& c) { return m == c.module; });
  return it == all.end() ? nullptr : &*it;
}

// ---- the child: one module's plan, warm, then measured ----------------------------------------

const Operator* FindSlot(const Operator& op, uint32_t slot) {
  if (op.profile_slot() == slot) return &op;
  for (const auto& c : op.children()) {
    if (const Operator* found = FindSlot(*c, slot)) return found;
  }
  return nullptr;
}

Status RunOnce(const Catalog& catalog, const Plan& plan, const Calibration& cal) {
  QueryOptions options;
  options.profile_operators = true;
  std::unique_ptr<ResultCursor> cursor;
  SM_TRY(ResultCursor::Open(catalog, plan, options, &cursor));
  const Operator* target = FindSlot(cursor->operators(), cal.slot);
  if (target == nullptr || target->name() != cal.target) {
    return Status::InvalidArgument(std::string("the plan of ") + cal.module +
                                   " does not have its target where the table says");
  }
  for (const Value* row = nullptr;;) {
    SM_TRY(cursor->Next(&row));
    if (row == nullptr) break;
  }
  return cursor->Close();
}

int Child(const Options& o) {
  const std::vector<Calibration> all = Calibrations();
  const Calibration* cal = FindCalibration(all, o.child);
  if (cal == nullptr) return Fail("module " + o.child, Status::InvalidArgument("unknown"));
  std::unique_ptr<tpcc::SmEngine> engine;
  Catalog catalog(nullptr);
  if (Status s = OpenChDatabase(o.db, 256u << 20, &engine, &catalog); !s.ok()) {
    return Fail("open", s);
  }
  const Plan plan = cal->plan(catalog);
  if (Status s = RunOnce(catalog, plan, *cal); !s.ok()) return Fail("warm run", s);
  CALLGRIND_ZERO_STATS;
  Status s = RunOnce(catalog, plan, *cal);
  CALLGRIND_DUMP_STATS_AT("module");
  if (!s.ok()) return Fail("measured run", s);
  return engine->Close().ok() ? 0 : 1;
}

// ---- the parent: every module under callgrind, then the file ------------------------------------

// The mangled name pattern of a slot's function for one phase (callgrind takes a '*' at the
// end of a pattern, not inside it): _ZN2sm5query12OperatorSlot<len><phase>ILj<slot>EE...
std::string SlotPattern(const std::string& phase, uint32_t slot) {
  return "_ZN2sm5query12OperatorSlot" + std::to_string(phase.size()) + phase + "ILj" +
         std::to_string(slot) + "EE*";
}

// Whether `op` pulls child i while it returns tuples (else while it opens: a blocking
// operator's input, a hash join's build side).
bool PulledInNext(const Operator& op, size_t i) {
  std::vector<std::string> input, output;
  op.InputModules(i, &input);
  op.OutputModules(&output);
  return input == output;
}

// Callgrind's options that collect exactly while the target runs its own code in its phase:
// toggles on the target's slot function, and on the functions through which it calls its
// direct children in that phase (a child's subtree runs inside them; toggling a grandchild
// too would turn collection back on, since each entry flips it).
std::string ToggleArgs(const Operator& target, Phase phase) {
  const bool open = phase == Phase::kOpen;
  std::string args = " --toggle-collect=" + SlotPattern(open ? "Open" : "Next",
                                                        target.profile_slot());
  for (size_t i = 0; i < target.children().size(); ++i) {
    const uint32_t slot = target.children()[i]->profile_slot();
    if (open) args += " --toggle-collect=" + SlotPattern("Open", slot);
    if (open != PulledInNext(target, i)) args += " --toggle-collect=" + SlotPattern("Next", slot);
  }
  return args;
}

// Every calibration's toggle options, from its plan's operator tree in this database.
Status AllToggleArgs(const Options& o, const std::vector<Calibration>& all,
                     std::map<std::string, std::string>* args) {
  std::unique_ptr<tpcc::SmEngine> engine;
  Catalog catalog(nullptr);
  SM_TRY(OpenChDatabase(o.db, 64u << 20, &engine, &catalog));
  for (const Calibration& cal : all) {
    std::unique_ptr<Operator> root;
    const Plan plan = cal.plan(catalog);
    SM_TRY(plan.status());
    SM_TRY(plan.node()->Instantiate(&root));
    uint32_t next_slot = 0;
    root->AssignProfileSlots(&next_slot);
    const Operator* target = FindSlot(*root, cal.slot);
    if (target == nullptr || target->name() != cal.target) {
      return Status::InvalidArgument(std::string("the plan of ") + cal.module + " has no " +
                                     cal.target + " at slot " + std::to_string(cal.slot));
    }
    (*args)[cal.module] = ToggleArgs(*target, cal.phase);
  }
  return engine->Close();
}

// A function belongs to the module's steady state, the code that runs per tuple, if it was
// called at least kSteadyCalls times or ran more instructions than kSteadyPasses passes over its
// code would (it loops); the rest (binding expressions, allocating tables) runs once per query.
constexpr uint64_t kSteadyCalls = 16;
constexpr uint64_t kSteadyPasses = 4;

struct Measured {
  std::set<std::string> functions;  // with a size in the binary
  uint64_t bytes = 0;
  size_t outside = 0;  // functions that ran without a size (libc, ...)
};

bool MeasureModule(const Options& o, const Calibration& cal, const std::string& toggles,
                   const icache::FunctionSymbols& syms, Measured* m) {
  const std::string command = icache::ShellQuote(SelfPath()) + " --db " +
                              icache::ShellQuote(o.db) + " --child " + cal.module;
  std::vector<icache::Part> parts;
  std::string error;
  const std::string prefix = (fs::path(o.db).parent_path() / "footprint.cg").string();
  const bool ran = icache::RunUnderCallgrindParts(command, icache::Geometry{}, prefix,
                                                  "--demangle=no" + toggles, 0,
                                                  /*functions=*/true, false, &parts, &error);
  auto part = std::find_if(parts.begin(), parts.end(),
                           [](const icache::Part& p) { return p.label == "module"; });
  if (!ran || part == parts.end()) {
    std::fprintf(stderr, "query_footprints: %s: %s\n", cal.module, error.c_str());
    return false;
  }
  size_t executed = 0;
  std::map<std::string, uint64_t> calls;
  for (const auto& [arc, count] : part->functions.calls) calls[arc.second] += count;
  for (const auto& [name, ir] : part->functions.self_ir) {
    if (ir == 0 || name.find("OperatorSlot") != std::string::npos) continue;
    ++executed;
    auto size = syms.sizes.find(name);
    if (size == syms.sizes.end()) {
      ++m->outside;
      continue;
    }
    if (calls[name] < kSteadyCalls && ir < kSteadyPasses * size->second) continue;  // set-up
    m->functions.insert(name);
    m->bytes += size->second;
  }
  if (executed == 0) {
    std::fprintf(stderr, "query_footprints: %s: no function ran (toggle patterns%s)\n",
                 cal.module, toggles.c_str());
    return false;
  }
  return true;
}

std::string FileText(const std::map<std::string, Measured>& modules,
                     const icache::FunctionSymbols& syms) {
  std::map<std::string, size_t> ids;
  for (const auto& [module, m] : modules) {
    for (const std::string& f : m.functions) ids.emplace(f, 0);
  }
  std::string out =
      "# Instruction footprints of the query layer's operator modules, written by\n"
      "# `tools/run query-footprints` (tools/bench/query_footprints.cc): the functions each\n"
      "# module ran on its calibration plan under callgrind, with their code bytes in the\n"
      "# measuring binary. A group's footprint is the union of its modules' functions.\n"
      "# Functions outside the binary (libc) are not listed. The threshold line is\n"
      "# refinement's cardinality threshold, written by `tools/run query-calibrate`.\n";
  size_t next = 0;
  for (auto& [name, id] : ids) {
    id = next++;
    out += "function " + std::to_string(id) + " " + std::to_string(syms.sizes.at(name)) + " " +
           name + "\n";
  }
  for (const auto& [module, m] : modules) {
    out += "module " + module;
    for (const std::string& f : m.functions) out += " " + std::to_string(ids.at(f));
    out += "\n";
  }
  return out;
}

bool EnsureDatabase(const Options& o) {
  if (fs::exists(o.db)) return true;
  std::error_code ec;
  fs::create_directories(fs::path(o.db).parent_path(), ec);
  const std::string cmd = icache::ShellQuote(o.tpcc) + " load --ch --warehouses 1 --db " +
                          icache::ShellQuote(o.db) + " --commit async";
  std::printf("loading a one-warehouse CH database: %s\n", cmd.c_str());
  std::fflush(stdout);
  return std::system(cmd.c_str()) == 0;
}

int Parent(const Options& o) {
  if (!EnsureDatabase(o)) {
    std::fprintf(stderr, "query_footprints: loading %s failed\n", o.db.c_str());
    return 1;
  }
  icache::FunctionSymbols syms;
  std::string error;
  if (!icache::ReadFunctionSymbols(SelfPath(), &syms, &error)) {
    std::fprintf(stderr, "query_footprints: %s\n", error.c_str());
    return 1;
  }
  std::vector<Calibration> all = Calibrations();
  if (!o.modules.empty()) {
    for (const std::string& m : o.modules) {
      if (FindCalibration(all, m) == nullptr) {
        std::fprintf(stderr, "query_footprints: no module '%s'\n", m.c_str());
        return 2;
      }
    }
    std::erase_if(all, [&o](const Calibration& c) {
      return std::find(o.modules.begin(), o.modules.end(), c.module) == o.modules.end();
    });
  }
  std::map<std::string, std::string> toggles;
  if (Status s = AllToggleArgs(o, all, &toggles); !s.ok()) return Fail("the plans", s);
  std::map<std::string, Measured> modules;
  json figures = json::object();
  std::printf("%-26s %9s %9s %9s\n", "module", "functions", "bytes", "outside");
  for (const Calibration& cal : all) {
    Measured m;
    if (!MeasureModule(o, cal, toggles.at(cal.module), syms, &m)) return 1;
    std::printf("%-26s %9zu %9llu %9zu\n", cal.module, m.functions.size(),
                static_cast<unsigned long long>(m.bytes), m.outside);
    std::fflush(stdout);
    figures[std::string(cal.module) + "_bytes"] = m.bytes;
    modules[cal.module] = std::move(m);
  }
  // The calibrated threshold of the table compiled in carries over until calibrated anew.
  const double threshold = FootprintTable::Default().threshold_rows();
  const std::string text =
      threshold < 0 ? FileText(modules, syms)
                    : FootprintTable::WithThreshold(FileText(modules, syms), threshold);
  FootprintTable check;
  if (Status s = FootprintTable::Parse(text, o.output, &check); !s.ok()) {
    return Fail("the written table", s);
  }
  std::ofstream(o.output) << text;
  std::printf("wrote %s\n", o.output.c_str());
  figures["modules"] = modules.size();
  PrintJsonLine(figures);
  return 0;
}

}  // namespace
}  // namespace sm::bench

int main(int argc, char** argv) {
  sm::bench::Options o;
  CLI::App app{"Measures the query operators' instruction footprints under callgrind"};
  app.add_option("--db", o.db, "a one-warehouse CH database (loaded there if missing)")
      ->required();
  app.add_option("--tpcc", o.tpcc, "the tpcc driver binary, to load the database")
      ->capture_default_str();
  app.add_option("--output", o.output, "the footprint file to write (query/footprints.txt)");
  app.add_option("--modules", o.modules, "only these modules (a partial table, for a quick look)")
      ->delimiter(',');
  app.add_option("--child", o.child)->group("");  // the measured child
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!o.child.empty()) return sm::bench::Child(o);
  if (o.output.empty()) {
    std::fprintf(stderr, "query_footprints: --output is required\n");
    return 2;
  }
  return sm::bench::Parent(o);
}
