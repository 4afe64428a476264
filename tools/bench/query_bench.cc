// bench_query: the 22 CH-benCHmark queries on this engine's query layer and, in the same
// process, as SQL in SQLite on the same data; results checked equal.
//
// The data: a TPC-C database with the CH tables (`tpcc load --ch`) that has then run the mix for
// --tpcc-seconds (freshly loaded data makes several queries trivial: every date is the load's,
// undelivered lines carry amount 0), exported as CSV (`tpcc export`) and loaded into SQLite
// with the same primary keys (WITHOUT ROWID) and TPC-C's two secondary indexes
// (tools/bench/ch_sqlite.h). All of it lives in --dir and is reused while its recorded
// parameters (warehouses, seconds of the mix) match; --fresh rebuilds it. The driver binary
// (--tpcc) does the load, the run and the export, so they print their own progress.
//
// The measurement: per query, --repeat runs of ours and --sqlite-repeat of SQLite's,
// alternately (so that drifts of a shared machine fall on both), the medians compared; a
// query's first run reads its pages from the file, so one run of ours is not enough, while
// SQLite's runs are long and steady enough for one. SQLite's page cache is as large as our
// buffer pool. --callgrind Q,... also runs those queries of ours under callgrind
// (tools/icache/callgrind_parts.h; one warm run, then one measured) and prints instructions,
// L1-I and L1-D misses and mispredicted branches per row the query read from its tables, and
// the same per operator (tools/bench/operator_profile.h): EXPLAIN ANALYZE in instructions.
// --buffers runs our plans with buffer operators (query/refine.h); --i1 sets the L1-I that
// callgrind simulates and that refinement plans for.
//
// Last line JSON: ch_q<n>_ms, ch_q<n>_sqlite_ms, ch_q<n>_sqlite_ratio, ch_q<n>_rows,
// ch_q<n>_rows_read for n = 1..22; with --threads T > 1 also ch_q<n>_ms_<T>t and
// ch_q<n>_speedup_<T>t (one thread's median over T threads'), ch_total_ms_<T>t and
// ch_total_speedup_<T>t; ch_total_ms, sqlite_total_ms, sqlite_ratio (SQLite's total
// over ours), queries_slower_than_sqlite, results_match (all 22 equal); warehouses, repeat,
// sqlite_repeat, buffer_pool_bytes, buffers, l1i_geometry; with --callgrind,
// ch_q<n>_{instructions,l1i_misses,l1d_misses,mispredicts}_per_row_read and ch_q<n>_operators
// (a list in preorder of operator, depth, rows, rows_in, instructions, self_instructions,
// self_l1i_misses, self_l1d_misses, self_mispredicts).
//
// Exit status: 0 when every result matched SQLite's, 1 when one did not or the work failed,
// 2 for bad options.
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "query/query.h"
#include "sm/sm.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/ch_db.h"
#include "tools/bench/ch_sqlite.h"
#include "tools/bench/operator_profile.h"
#include "tools/icache/callgrind_parts.h"
#include "tpcc/ch.h"
#include "tpcc/ch_queries.h"
#include "tpcc/schema.h"
#include "tpcc/sm_engine.h"

namespace sm::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Options {
  uint32_t warehouses = 10;
  double tpcc_seconds = 60;
  uint32_t repeat = 3;
  uint32_t sqlite_repeat = 1;
  uint32_t threads = 1;
  std::string dir;  // default: ./data/bench-query-<W>w
  std::string tpcc = "tpcc";
  std::string sql;  // the SQL of the 22 queries
  uint64_t buffer_pool_mib = 4096;
  std::vector<int> queries;    // empty: all 22
  std::vector<int> callgrind;  // queries to profile
  bool fresh = false;
  std::string buffers = "off";             // buffer operators in our plans: off, on or auto
  std::string i1 = icache::Geometry{}.i1;  // the L1-I callgrind simulates
  int profile_query = 0;     // internal: run this query under callgrind's client requests
  std::string profile_tree;  // internal: where that run writes its operator tree
};

uint64_t PoolBytes(const Options& o) { return o.buffer_pool_mib << 20; }

// How our queries run: with the buffers --buffers asks for (refinement reads the L1-I of --i1).
query::QueryOptions OurOptions(const Options& o) {
  query::QueryOptions q;
  q.buffers.mode = o.buffers == "on"     ? query::BufferMode::kOn
                   : o.buffers == "auto" ? query::BufferMode::kAuto
                                         : query::BufferMode::kOff;
  q.buffers.l1i_bytes = std::strtoull(o.i1.c_str(), nullptr, 10);
  return q;
}

std::string SqlitePath(const Options& o) { return o.dir + "/ch.sqlite"; }

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "bench_query: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

// ---- the data -----------------------------------------------------------------------------------

ChData Data(const Options& o) {
  ChData d;
  d.dir = o.dir;
  d.tpcc = o.tpcc;
  d.warehouses = o.warehouses;
  d.tpcc_seconds = o.tpcc_seconds;
  d.pool_mib = o.buffer_pool_mib;
  d.fresh = o.fresh;
  return d;
}

Status OpenOurs(const Options& o, std::unique_ptr<tpcc::SmEngine>* engine,
                query::Catalog* catalog) {
  return OpenChDatabase(Data(o).Db(), PoolBytes(o), engine, catalog);
}

// Opens SQLite's copy, loading it from the CSV files first if the manifest has none.
Status OpenSqlite(const Options& o, const query::Catalog& catalog, json* manifest,
                  std::unique_ptr<ChSqlite>* sqlite) {
  bool loaded = manifest->value("sqlite_loaded", false);
  if (!loaded) fs::remove(SqlitePath(o));
  ChSqliteOptions so;
  so.path = SqlitePath(o);
  so.cache_bytes = PoolBytes(o);
  if (Status s = ChSqlite::Open(so, sqlite); !s.ok() || loaded) return s;
  std::printf("loading %s into SQLite\n", Data(o).Csv().c_str());
  double start = NowSeconds();
  Status s = (*sqlite)->CreateTables(catalog);
  if (s.ok()) {
    s = (*sqlite)->LoadCsv(Data(o).Csv(), [](const std::string& table, uint64_t rows, double secs) {
      std::printf("  %-10s %10llu rows in %6.1f s\n", table.c_str(),
                  static_cast<unsigned long long>(rows), secs);
      std::fflush(stdout);
    });
  }
  if (s.ok()) s = (*sqlite)->Analyze();
  if (!s.ok()) return s;
  std::printf("SQLite loaded in %.0f s\n", NowSeconds() - start);
  (*manifest)["sqlite_loaded"] = true;
  WriteChManifest(Data(o), *manifest);
  return Status::OK();
}

// ---- the queries --------------------------------------------------------------------------------

struct QueryFigures {
  int n = 0;
  double ms = 0, sqlite_ms = 0;
  double threaded_ms = 0;  // on --threads threads (0 when --threads is 1)
  uint64_t rows = 0, rows_read = 0;
  bool match = false;  // ours equal SQLite's, and on --threads threads equal on one
  std::string difference;
};

Status MeasureQuery(const Options& o, const query::Catalog& catalog, ChSqlite* sqlite,
                    const ChSql& sql, const tpcc::ChParams& params, QueryFigures* f) {
  query::Plan plan;
  if (Status s = tpcc::ChQuery(sql.number, catalog, params, &plan); !s.ok()) return s;
  std::vector<double> ours, threaded, theirs;
  tpcc::ChRun run, threaded_run;
  query::ResultRows sqlite_rows;
  query::QueryOptions threaded_options = OurOptions(o);
  threaded_options.threads = o.threads;
  for (uint32_t r = 0; r < std::max(o.repeat, o.sqlite_repeat); ++r) {
    if (r < o.repeat) {
      if (Status s = tpcc::RunChQuery(catalog, plan, OurOptions(o), &run); !s.ok()) return s;
      ours.push_back(run.ms);
    }
    if (r < o.repeat && o.threads > 1) {
      if (Status s = tpcc::RunChQuery(catalog, plan, threaded_options, &threaded_run); !s.ok()) {
        return s;
      }
      threaded.push_back(threaded_run.ms);
    }
    if (r < o.sqlite_repeat) {
      double start = NowSeconds();
      Status s = sqlite->Run(sql.sql, ChSqlParams(params), run.rows.schema, &sqlite_rows);
      if (!s.ok()) return s;
      theirs.push_back((NowSeconds() - start) * 1e3);
    }
  }
  f->n = sql.number;
  f->ms = Median(ours);
  f->threaded_ms = threaded.empty() ? 0 : Median(threaded);
  f->sqlite_ms = Median(theirs);
  f->rows = run.rows.rows.size();
  f->rows_read = run.rows_read;
  f->match = SameRows("Q" + std::to_string(sql.number), run.rows, sqlite_rows, sql.order_by,
                      &f->difference);
  if (f->match && o.threads > 1) {
    f->match =
        SameRows("Q" + std::to_string(sql.number) + " on " + std::to_string(o.threads) + " threads",
                 threaded_run.rows, run.rows, sql.order_by, &f->difference);
  }
  return Status::OK();
}

void PrintRow(const QueryFigures& f) {
  std::printf("Q%-3d %10.1f %12.1f %8.2f %10llu %12llu  %s", f.n, f.ms, f.sqlite_ms,
              f.sqlite_ms / f.ms, static_cast<unsigned long long>(f.rows),
              static_cast<unsigned long long>(f.rows_read), f.match ? "yes" : "NO");
  if (f.threaded_ms > 0) std::printf(" %10.1f %8.2f", f.threaded_ms, f.ms / f.threaded_ms);
  std::printf("\n");
  if (!f.match) std::printf("     %s\n", f.difference.c_str());
  std::fflush(stdout);
}

// ---- callgrind ----------------------------------------------------------------------------------

// Runs `plan` with its operators in profile slots; *tree: the operator tree after the run.
Status RunProfiled(const query::Catalog& catalog, const query::Plan& plan,
                   query::QueryOptions options, json* tree) {
  options.profile_operators = true;
  std::unique_ptr<query::ResultCursor> cursor;
  SM_TRY(query::ResultCursor::Open(catalog, plan, options, &cursor));
  for (const query::Value* row = nullptr;;) {
    SM_TRY(cursor->Next(&row));
    if (row == nullptr) break;
  }
  *tree = OperatorTreeJson(cursor->operators());
  return cursor->Close();
}

// The child's side: one warm run without instrumentation (valgrind runs it several times
// faster: it reads the pages into the pool), then one run instrumented and collected. The
// simulated caches start cold with it, which a query of this size does not notice.
int ProfileQuery(const Options& o) {
  std::unique_ptr<tpcc::SmEngine> engine;
  query::Catalog catalog(nullptr);
  if (Status s = OpenOurs(o, &engine, &catalog); !s.ok()) return Fail("open", s);
  query::Plan plan;
  if (Status s = tpcc::ChQuery(o.profile_query, catalog, tpcc::ChParams::Now(), &plan); !s.ok()) {
    return Fail("plan", s);
  }
  tpcc::ChRun run;
  const query::QueryOptions options = OurOptions(o);
  if (Status s = tpcc::RunChQuery(catalog, plan, options, &run); !s.ok()) {
    return Fail("warm run", s);
  }
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_TOGGLE_COLLECT;
  Status s = tpcc::RunChQuery(catalog, plan, options, &run);
  CALLGRIND_DUMP_STATS_AT("query");
  CALLGRIND_TOGGLE_COLLECT;
  if (!s.ok()) return Fail("measured run", s);
  // Once more with each operator in its profile slot (a call more per tuple, so the figures of
  // the whole query come from the run above).
  json tree;
  CALLGRIND_TOGGLE_COLLECT;
  s = RunProfiled(catalog, plan, options, &tree);
  CALLGRIND_DUMP_STATS_AT("operators");
  CALLGRIND_TOGGLE_COLLECT;
  CALLGRIND_STOP_INSTRUMENTATION;
  if (!s.ok()) return Fail("profiled run", s);
  std::ofstream(o.profile_tree) << tree.dump() << "\n";
  return engine->Close().ok() ? 0 : 1;
}

// The parent's side: runs this binary with --profile-query under callgrind.
bool CallgrindQuery(const Options& o, int n, uint64_t rows_read, json* figures) {
  const std::string prefix = o.dir + "/callgrind.q" + std::to_string(n);
  const std::string tree_path = prefix + ".tree.json";
  std::string command = icache::ShellQuote(SelfPath()) + " --dir " + icache::ShellQuote(o.dir) +
                        " --buffer-pool-mib " + std::to_string(o.buffer_pool_mib) + " --sql " +
                        icache::ShellQuote(o.sql) + " --profile-query " + std::to_string(n) +
                        " --profile-tree " + icache::ShellQuote(tree_path) + " --buffers " +
                        o.buffers + " --i1 " + o.i1;
  std::vector<icache::Part> parts;
  std::string error;
  icache::Geometry geometry;
  geometry.i1 = o.i1;
  std::printf("Q%d under callgrind (I1 %s, D1 %s)...\n", n, geometry.i1.c_str(),
              geometry.d1.c_str());
  std::fflush(stdout);
  bool ran = icache::RunUnderCallgrindParts(command, geometry, prefix, "--instr-atstart=no", 0,
                                            /*functions=*/true, false, &parts, &error);
  auto find = [&parts](const char* label) {
    return std::find_if(parts.begin(), parts.end(),
                        [label](const icache::Part& p) { return p.label == label; });
  };
  auto part = find("query");
  auto profiled = find("operators");
  if (!ran || part == parts.end() || profiled == parts.end() || rows_read == 0) {
    std::fprintf(stderr, "bench_query: callgrind of Q%d: %s\n", n, error.c_str());
    return false;
  }
  const icache::Counters& c = part->counters;
  double per = 1.0 / static_cast<double>(rows_read);
  std::string key = "ch_q" + std::to_string(n) + "_";
  (*figures)[key + "instructions_per_row_read"] = c.Instructions() * per;
  (*figures)[key + "l1i_misses_per_row_read"] = c.L1iMisses() * per;
  (*figures)[key + "l1d_misses_per_row_read"] = c.L1dMisses() * per;
  (*figures)[key + "mispredicts_per_row_read"] = c.Mispredicts() * per;
  std::printf(
      "Q%-3d %12llu instructions: per row read %8.1f instructions, %6.3f L1-I misses, "
      "%6.3f L1-D misses, %6.3f mispredicts\n",
      n, static_cast<unsigned long long>(c.Instructions()), c.Instructions() * per,
      c.L1iMisses() * per, c.L1dMisses() * per, c.Mispredicts() * per);
  std::ifstream tree_file(tree_path);
  json tree = json::parse(tree_file, nullptr, /*allow_exceptions=*/false);
  tree_file.close();
  fs::remove(tree_path);
  json costs;
  std::printf("Q%d by operator (a second run, each operator in its profile slot):\n", n);
  if (tree.is_discarded() ||
      !OperatorCosts(tree, profiled->functions, profiled->counters, &costs, &error)) {
    std::fprintf(stderr, "bench_query: Q%d by operator: %s\n", n,
                 tree.is_discarded() ? "no operator tree" : error.c_str());
    return false;
  }
  (*figures)[key + "operators"] = std::move(costs);
  return true;
}

// ---- the run ------------------------------------------------------------------------------------

bool Wanted(const std::vector<int>& list, int n) {
  return list.empty() || std::find(list.begin(), list.end(), n) != list.end();
}

int Run(const Options& o) {
  json manifest = ReadChManifest(Data(o));
  if (!PrepareChData(Data(o), &manifest)) {
    std::fprintf(stderr, "bench_query: preparing the database in %s failed\n", o.dir.c_str());
    return 1;
  }
  std::vector<ChSql> sqls;
  if (Status s = ReadChSqlFile(o.sql, &sqls); !s.ok()) return Fail("the SQL file", s);
  std::unique_ptr<tpcc::SmEngine> engine;
  query::Catalog catalog(nullptr);
  if (Status s = OpenOurs(o, &engine, &catalog); !s.ok()) return Fail("open", s);
  std::unique_ptr<ChSqlite> sqlite;
  if (Status s = OpenSqlite(o, catalog, &manifest, &sqlite); !s.ok()) return Fail("SQLite", s);

  tpcc::ChParams params = tpcc::ChParams::Now();
  json figures = {{"warehouses", o.warehouses},
                  {"buffers", o.buffers},
                  {"l1i_geometry", o.i1},
                  {"repeat", o.repeat},
                  {"sqlite_repeat", o.sqlite_repeat},
                  {"buffer_pool_bytes", PoolBytes(o)}};
  std::printf("%-4s %10s %12s %8s %10s %12s  %s", "q", "ours ms", "SQLite ms", "ratio", "rows",
              "rows read", "same");
  const std::string threads_suffix = "_" + std::to_string(o.threads) + "t";
  if (o.threads > 1) std::printf(" %7s %2ut %8s", "ms", o.threads, "speedup");
  std::printf("\n");
  figures["threads"] = o.threads;
  double total = 0, sqlite_total = 0, threaded_total = 0;
  int slower = 0;
  bool all_match = true;
  std::map<int, uint64_t> rows_read;
  for (const ChSql& sql : sqls) {
    if (!Wanted(o.queries, sql.number)) continue;
    QueryFigures f;
    if (Status s = MeasureQuery(o, catalog, sqlite.get(), sql, params, &f); !s.ok()) {
      return Fail("Q" + std::to_string(sql.number), s);
    }
    PrintRow(f);
    total += f.ms;
    sqlite_total += f.sqlite_ms;
    slower += f.ms > f.sqlite_ms;
    all_match = all_match && f.match;
    rows_read[f.n] = f.rows_read;
    std::string key = "ch_q" + std::to_string(f.n) + "_";
    figures[key + "ms"] = f.ms;
    figures[key + "sqlite_ms"] = f.sqlite_ms;
    figures[key + "sqlite_ratio"] = f.sqlite_ms / f.ms;
    figures[key + "rows"] = f.rows;
    figures[key + "rows_read"] = f.rows_read;
    if (o.threads > 1) {
      threaded_total += f.threaded_ms;
      figures[key + "ms" + threads_suffix] = f.threaded_ms;
      figures[key + "speedup" + threads_suffix] = f.ms / f.threaded_ms;
    }
  }
  std::printf("total %10.1f %12.1f %8.2f\n", total, sqlite_total, sqlite_total / total);
  figures["ch_total_ms"] = total;
  if (o.threads > 1) {
    std::printf("total on %u threads %10.1f ms, speedup %.2f\n", o.threads, threaded_total,
                total / threaded_total);
    figures["ch_total_ms" + threads_suffix] = threaded_total;
    figures["ch_total_speedup" + threads_suffix] = total / threaded_total;
  }
  figures["sqlite_total_ms"] = sqlite_total;
  figures["sqlite_ratio"] = sqlite_total / total;
  figures["queries_slower_than_sqlite"] = slower;
  figures["results_match"] = all_match && o.queries.empty();
  sqlite.reset();
  if (Status s = engine->Close(); !s.ok()) return Fail("close", s);
  for (int n : o.callgrind) {
    if (!CallgrindQuery(o, n, rows_read[n], &figures)) return 1;
  }
  PrintJsonLine(figures);
  return all_match ? 0 : 1;
}

}  // namespace
}  // namespace sm::bench

int main(int argc, char** argv) {
  sm::bench::Options o;
  CLI::App app{"The 22 CH-benCHmark queries on the query layer and in SQLite, on the same data"};
  app.add_option("--warehouses,-w", o.warehouses, "warehouses of the CH database")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  app.add_option("--tpcc-seconds", o.tpcc_seconds, "seconds of the TPC-C mix after the load")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "runs of each of our queries (the median counts)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--sqlite-repeat", o.sqlite_repeat,
                 "runs of each query in SQLite (the median counts; its runs take seconds to "
                 "minutes at 10 warehouses, where one run's noise is small)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--threads", o.threads,
                 "also run ours on this many threads per query (query::QueryOptions::threads), "
                 "alternating with the runs on one; results must equal those on one")
      ->check(CLI::Range(1u, sm::query::kMaxQueryThreads))
      ->capture_default_str();
  app.add_option("--dir", o.dir,
                 "where the databases and CSV files live (default ./data/"
                 "bench-query-<W>w)");
  app.add_option("--tpcc", o.tpcc, "the tpcc driver binary")->capture_default_str();
  app.add_option("--sql", o.sql, "the 22 queries in SQL (tests/query/ch_queries.sql)")->required();
  app.add_option("--buffer-pool-mib", o.buffer_pool_mib,
                 "our buffer pool and SQLite's page cache, in MiB")
      ->check(CLI::Range(64u, 1u << 20))
      ->capture_default_str();
  app.add_option("--queries", o.queries, "only these queries (results_match is then false)")
      ->delimiter(',')
      ->check(CLI::Range(1, sm::tpcc::kChQueries));
  app.add_option("--callgrind", o.callgrind, "also profile these queries of ours under callgrind")
      ->delimiter(',')
      ->check(CLI::Range(1, sm::tpcc::kChQueries));
  app.add_flag("--fresh", o.fresh, "load, run and export anew even if --dir holds the data");
  app.add_option("--buffers", o.buffers,
                 "buffer operators in our plans: off, on (above every eligible operator) or "
                 "auto (plan refinement)")
      ->check(CLI::IsMember({"off", "on", "auto"}))
      ->capture_default_str();
  app.add_option("--i1", o.i1,
                 "the L1-I callgrind simulates, SIZE,WAYS,LINE (refinement with --buffers "
                 "auto plans for its size)")
      ->check([](const std::string& g) {
        sm::icache::Geometry geometry;
        geometry.i1 = g;
        return geometry.Valid() ? std::string() : "not SIZE,WAYS,LINE";
      })
      ->capture_default_str();
  app.add_option("--profile-query", o.profile_query)->group("");  // the callgrind child
  app.add_option("--profile-tree", o.profile_tree)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // 2: bad options, nothing done
  }
  if (o.dir.empty()) o.dir = "./data/bench-query-" + std::to_string(o.warehouses) + "w";
  if (o.profile_query != 0) return sm::bench::ProfileQuery(o);
  return sm::bench::Run(o);
}
