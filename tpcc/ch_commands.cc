// `tpcc query`, `tpcc export` and the CH part of `tpcc load` (contract in ch_commands.h).
#include "tpcc/ch_commands.h"

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "query/query.h"
#include "query/shared_scan.h"
#include "tpcc/ch.h"
#include "tpcc/ch_queries.h"
#include "tpcc/driver.h"
#include "tpcc/schema.h"

namespace sm::tpcc {

namespace {

using json = nlohmann::json;

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

// Opens a loaded database that has the CH tables and registers the catalog; 0 or the exit code.
// read_only: the queries only read (htap runs the mix beside them, so it opens read-write).
int OpenCh(const CommonOptions& o, bool read_only, std::unique_ptr<SmEngine>* engine,
           query::Catalog* catalog) {
  if (int rc = OpenEngine(o, /*create=*/false, engine, read_only); rc != 0) return rc;
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine->get(), o.warehouses_given ? o.warehouses : 0, &info); !s.ok()) {
    return Failure(o, "query", s);
  }
  bool has = false;
  if (Status s = HasCh((*engine)->database(), &has); !s.ok()) return Failure(o, "query", s);
  if (!has) {
    std::fprintf(stderr,
                 "tpcc: the database at %s has no CH-benCHmark tables (SUPPLIER, NATION, "
                 "REGION): run `tpcc load --ch --db %s`, which adds just those tables to an "
                 "existing database\n",
                 o.db.c_str(), o.db.c_str());
    return kExitUsage;
  }
  *catalog = query::Catalog((*engine)->database());
  if (Status s = RegisterChCatalog((*engine)->database(), info.warehouses, info.scale, catalog);
      !s.ok()) {
    return Failure(o, "catalog", s);
  }
  return 0;
}

std::string CanonicalCsv(const query::ResultRows& rows) {
  std::string out;
  for (const auto& r : rows.rows) out += query::CsvLine(r);
  return out;
}

bool ParseWhich(const std::string& which, std::vector<int>* queries) {
  queries->clear();
  if (which == "all") {
    for (int n = 1; n <= kChQueries; ++n) queries->push_back(n);
    return true;
  }
  char* end = nullptr;
  long n = std::strtol(which.c_str(), &end, 10);
  if (which.empty() || *end != '\0' || n < 1 || n > kChQueries) return false;
  queries->push_back(static_cast<int>(n));
  return true;
}

}  // namespace

void AddQueryOptions(CLI::App* cmd, QueryCliOptions* q) {
  cmd->add_option("query", q->which, "the query to run: 1 to 22, or all")->required();
  cmd->add_option("--format", q->format, "result rows as an aligned table, csv, or none")
      ->check(CLI::IsMember({"table", "csv", "none"}))
      ->capture_default_str();
  cmd->add_flag("--explain", q->explain, "print each query's plan before it runs");
  cmd->add_flag("--analyze", q->analyze,
                "print each query's plan with its operators' rows and times after it runs");
  cmd->add_option("--repeat", q->repeat, "runs of each query; times are medians")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  cmd->add_option("--buffers", q->buffers,
                  "buffer operators (Zhou & Ross): off; on (one above every operator that is "
                  "neither blocking nor the root); auto (where plan refinement puts them, from "
                  "the operators' measured footprints and this machine's L1-I)")
      ->check(CLI::IsMember({"off", "on", "auto"}))
      ->capture_default_str();
  cmd->add_option("--buffer-size", q->buffer_size, "tuples each buffer holds")
      ->check(CLI::Range(1u, query::kMaxBufferTuples))
      ->capture_default_str();
  cmd->add_option("--threads", q->threads,
                  "threads per query: a hash aggregation over a table's scan runs each part of "
                  "the table's key range on a thread of its own")
      ->check(CLI::Range(1u, query::kMaxQueryThreads))
      ->capture_default_str();
  cmd->add_option("--streams", q->streams,
                  "threads each running the queries --repeat times, each from its own start; "
                  "prints queries per hour and buffer pool page reads per query")
      ->check(CLI::Range(1u, 64u))
      ->each([q](const std::string&) { q->streams_given = true; })
      ->capture_default_str();
  cmd->add_option("--share-scans", q->share_scans,
                  "with --streams: scans of a whole table attach to one of the same table in "
                  "progress and read its pages with it")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--stock-join", q->stock_join,
                  "how the plans' index-or-radix joins (the stock joins) run: cost (whichever "
                  "way their measured costs favour), index (a probe per row) or hash (a scan of "
                  "the table and a hash join, radix-clustered where the model says it pays)")
      ->check(CLI::IsMember({"cost", "index", "hash"}))
      ->capture_default_str();
}

namespace {

// `tpcc query ... --streams S`: S threads run the chosen queries --repeat times, each from its
// own starting point (as `tpcc htap`'s streams do), all over one catalog so that their scans may
// share; reports queries per hour and the buffer pool's misses per query.
int RunStreams(const CommonOptions& o, const QueryCliOptions& q, SmEngine* engine,
               const query::Catalog& catalog, const std::vector<int>& queries,
               const query::QueryOptions& options) {
  const DatabaseStats before = engine->database()->stats();
  std::mutex mu;
  Status error;                             // GUARDED_BY(mu)
  std::vector<double> stream_s(q.streams);  // GUARDED_BY(mu)
  const auto start = std::chrono::steady_clock::now();
  auto stream = [&](uint32_t s) {
    const ChParams params = ChParams::Now();
    const size_t count = queries.size(), first = s * count / q.streams;
    for (uint32_t r = 0; r < q.repeat; ++r) {
      for (size_t i = 0; i < count; ++i) {
        query::Plan plan;
        ChRun run;
        Status st = ChQuery(queries[(first + i) % count], catalog, params, &plan);
        if (st.ok()) st = RunChQuery(catalog, plan, options, &run);
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (error.ok()) error = st;
          return;
        }
      }
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::lock_guard<std::mutex> lock(mu);
    stream_s[s] = took.count();
  };
  std::vector<std::thread> threads;
  for (uint32_t s = 0; s < q.streams; ++s) threads.emplace_back(stream, s);
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!error.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "query stream", error);
  }
  const DatabaseStats after = engine->database()->stats();
  const uint64_t total = uint64_t{q.streams} * q.repeat * queries.size();
  const double qph = seconds > 0 ? total * 3600.0 / seconds : 0;
  const double reads = static_cast<double>(after.pool_misses - before.pool_misses) / total;
  const query::SharedScanStats shared = catalog.shared_scans()->stats();
  Say(o,
      "%u streams, share scans %s: %llu queries in %.1f s, %.0f queries/h, %.0f page reads per "
      "query (%llu shared scans, %llu attached, %llu detached)\n",
      q.streams, q.share_scans.c_str(), static_cast<unsigned long long>(total), seconds, qph,
      reads, static_cast<unsigned long long>(shared.scans),
      static_cast<unsigned long long>(shared.attaches),
      static_cast<unsigned long long>(shared.detaches));
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);
  if (Json(o)) {
    json out = {{"command", "query"},
                {"db", o.db},
                {"git_revision", GitRevision()},
                {"streams", q.streams},
                {"share_scans", q.share_scans},
                {"rounds", q.repeat},
                {"queries", total},
                {"seconds", seconds},
                {"queries_per_hour", qph},
                {"page_reads_per_query", reads},
                {"stream_seconds", stream_s},
                {"shared_scans", shared.scans},
                {"shared_attaches", shared.attaches},
                {"shared_detaches", shared.detaches}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

}  // namespace

int QueryCommand(const CommonOptions& o, const QueryCliOptions& q) {
  std::vector<int> queries;
  if (!ParseWhich(q.which, &queries)) {
    return UsageError("query takes a number from 1 to 22 or 'all', not '" + q.which + "'");
  }
  std::unique_ptr<SmEngine> engine;
  query::Catalog catalog(nullptr);
  if (int rc = OpenCh(o, /*read_only=*/true, &engine, &catalog); rc != 0) {
    if (engine) engine->Close().PermitUnchecked();
    return rc;
  }
  ChParams params = ChParams::Now();
  query::QueryOptions options;
  options.analyze = q.analyze;
  options.buffers.mode = q.buffers == "on"     ? query::BufferMode::kOn
                         : q.buffers == "auto" ? query::BufferMode::kAuto
                                               : query::BufferMode::kOff;
  options.buffers.tuples = q.buffer_size;
  options.threads = q.threads;
  options.share_scans = q.share_scans == "on";
  options.index_or_radix = q.stock_join == "index"  ? query::JoinChoice::kIndex
                           : q.stock_join == "hash" ? query::JoinChoice::kHash
                                                    : query::JoinChoice::kCost;
  if (q.streams_given) return RunStreams(o, q, engine.get(), catalog, queries, options);
  json results = json::array();
  double total_ms = 0;
  for (int n : queries) {
    query::Plan plan;
    if (Status s = ChQuery(n, catalog, params, &plan); !s.ok()) {
      return Failure(o, "query " + std::to_string(n), s);
    }
    if (q.explain) {
      std::string text;
      if (Status s = query::ExplainOperatorTree(plan, options, &text); !s.ok()) {
        engine->Close().PermitUnchecked();
        return Failure(o, "query " + std::to_string(n), s);
      }
      Say(o, "Q%d plan:\n%s", n, text.c_str());
    }
    std::vector<double> times;
    ChRun run;
    for (uint32_t r = 0; r < q.repeat; ++r) {
      if (Status s = RunChQuery(catalog, plan, options, &run); !s.ok()) {
        engine->Close().PermitUnchecked();
        return Failure(o, "query " + std::to_string(n), s);
      }
      times.push_back(run.ms);
    }
    std::sort(times.begin(), times.end());
    double ms = times[times.size() / 2];
    total_ms += ms;
    if (q.format == "table") Say(o, "%s", query::FormatTable(run.rows).c_str());
    if (q.format == "csv") Say(o, "%s", query::FormatCsv(run.rows).c_str());
    if (q.analyze) Say(o, "%s", run.explain_analyze.c_str());
    const char* adaptation = ChAdaptation(n);
    Say(o, "Q%d: %zu rows in %.1f ms (%llu rows read)%s%s\n", n, run.rows.rows.size(), ms,
        static_cast<unsigned long long>(run.rows_read), *adaptation ? "; adapted: " : "",
        adaptation);
    results.push_back({{"query", n},
                       {"rows", run.rows.rows.size()},
                       {"rows_read", run.rows_read},
                       {"ms", ms},
                       {"result_sha256", Sha256Hex(CanonicalCsv(run.rows))},
                       {"adaptation", adaptation}});
  }
  if (queries.size() > 1) Say(o, "total: %.1f ms\n", total_ms);
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);
  if (Json(o)) {
    json out = {{"command", "query"}, {"db", o.db},           {"git_revision", GitRevision()},
                {"queries", results}, {"threads", q.threads}, {"total_ms", total_ms}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

void AddExportOptions(CLI::App* cmd, ExportCliOptions* e) {
  cmd->add_option("dir", e->dir, "the directory to write <table>.csv files into")->required();
  cmd->add_option("--format", e->format, "the file format (csv)")
      ->check(CLI::IsMember({"csv"}))
      ->capture_default_str();
}

int ExportCommand(const CommonOptions& o, const ExportCliOptions& e) {
  std::unique_ptr<SmEngine> engine;
  if (int rc = OpenEngine(o, /*create=*/false, &engine, /*read_only=*/true); rc != 0) return rc;
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine.get(), 0, &info); !s.ok()) return Failure(o, "export", s);
  query::Catalog catalog(engine->database());
  if (Status s = RegisterChCatalog(engine->database(), info.warehouses, info.scale, &catalog);
      !s.ok()) {
    return Failure(o, "catalog", s);
  }
  json tables = json::array();
  Status s = ExportCsv(
      catalog, e.dir,
      [&](const std::string& name, uint64_t rows, double seconds, const std::string& path) {
        Say(o, "exported %-10s %10llu rows to %s (%.2f s)\n", name.c_str(),
            static_cast<unsigned long long>(rows), path.c_str(), seconds);
        tables.push_back({{"table", name}, {"rows", rows}, {"file", path}});
      });
  if (!s.ok()) {
    engine->Close().PermitUnchecked();
    return Failure(o, "export", s);
  }
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);
  if (Json(o)) {
    std::printf("%s\n",
                json{{"command", "export"}, {"dir", e.dir}, {"tables", tables}}.dump().c_str());
  }
  return 0;
}

int LoadChTables(const CommonOptions& o, SmEngine* engine) {
  ChLoadResult result;
  if (Status s = LoadCh(engine->database(), o.seed, &result); !s.ok()) {
    return Failure(o, "load the CH-benCHmark tables", s);
  }
  if (result.loaded) {
    Say(o, "loaded the CH-benCHmark tables (supplier, nation, region): %llu rows in %.2f s\n",
        static_cast<unsigned long long>(result.rows), result.seconds);
  } else {
    Say(o, "the CH-benCHmark tables are there already\n");
  }
  return 0;
}

}  // namespace sm::tpcc

// ---- htap -----------------------------------------------------------------------------------

namespace sm::tpcc {

namespace {

// Query streams on plain threads (the API blocks a plain thread where a fiber would be
// suspended), each running the 22 queries in the CH-benCHmark's order from its own starting
// point, until stopped. Queries that end after the stop are not counted.
class QueryStreams {
 public:
  QueryStreams(const query::Catalog* catalog, uint32_t streams, bool share_scans)
      : catalog_(catalog) {
    options_.share_scans = share_scans;
    per_query_.resize(kChQueries);
    for (uint32_t s = 0; s < streams; ++s) {
      threads_.emplace_back([this, s, streams] { Stream(s * kChQueries / streams); });
    }
  }
  ~QueryStreams() { Stop().PermitUnchecked(); }  // a caller that wants the error calls Stop
  // Stops counting, waits for the queries in flight, and returns the first error.
  Status Stop() {
    stop_.store(true, std::memory_order_relaxed);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  uint64_t completed() const { return completed_.load(std::memory_order_relaxed); }
  // Mean time of each query over its counted runs (0 if none).
  std::vector<double> MeanMs() const {
    std::vector<double> out;
    for (const auto& q : per_query_) out.push_back(q.runs == 0 ? 0 : q.total_ms / q.runs);
    return out;
  }

 private:
  struct PerQuery {
    uint64_t runs = 0;
    double total_ms = 0;
  };
  void Stream(int first) {
    ChParams params = ChParams::Now();
    for (int i = first; !stop_.load(std::memory_order_relaxed); ++i) {
      int n = i % kChQueries + 1;
      query::Plan plan;
      ChRun run;
      Status s = ChQuery(n, *catalog_, params, &plan);
      if (s.ok()) s = RunChQuery(*catalog_, plan, options_, &run);
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok()) {
        if (error_.ok()) error_ = s;
        return;
      }
      if (stop_.load(std::memory_order_relaxed)) return;  // ended after the window
      completed_.fetch_add(1, std::memory_order_relaxed);
      per_query_[n - 1].runs += 1;
      per_query_[n - 1].total_ms += run.ms;
    }
  }

  const query::Catalog* catalog_;
  query::QueryOptions options_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};       // relaxed: a flag polled between queries
  std::atomic<uint64_t> completed_{0};  // relaxed: a count read after the threads are joined
  std::mutex mu_;
  std::vector<PerQuery> per_query_;  // GUARDED_BY(mu_)
  Status error_;                     // GUARDED_BY(mu_)
};

double PerHour(uint64_t count, double seconds) {
  return seconds > 0 ? count * 3600.0 / seconds : 0;
}

}  // namespace

void AddHtapOptions(CLI::App* cmd, HtapCliOptions* h) {
  cmd->add_option("--users", h->users, "terminals, one fiber each (default 10 per warehouse)")
      ->check(NumberIn(1u, 10 * kMaxWarehouses));
  cmd->add_option("--query-streams", h->query_streams,
                  "threads running the 22 queries in order, each from its own start")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  cmd->add_option("--duration", h->duration_s, "seconds of each of the three phases")
      ->check(NumberIn(0.001, 365 * 86400.0))
      ->capture_default_str();
  cmd->add_option("--mix", h->mix, "the TPC-C mix, as for `tpcc run`")->capture_default_str();
  cmd->add_option("--share-scans", h->share_scans,
                  "the query streams' scans of a whole table attach to one of the same table in "
                  "progress and read its pages with it")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
}

int HtapCommand(const CommonOptions& o, const HtapCliOptions& h) {
  Mix mix;
  if (Status s = Mix::Parse(h.mix, &mix); !s.ok()) return UsageError(std::string(s.message()));
  std::unique_ptr<SmEngine> engine;
  query::Catalog catalog(nullptr);
  if (int rc = OpenCh(o, /*read_only=*/false, &engine, &catalog); rc != 0) {
    if (engine) engine->Close().PermitUnchecked();
    return rc;
  }
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine.get(), 0, &info); !s.ok()) return Failure(o, "htap", s);
  std::vector<ConditionResult> before, after;
  Status error;
  bool consistent = RunChecks(o, engine.get(), info, {1, 2, 3, 4}, "before", &before, &error);
  if (!error.ok()) return Failure(o, "consistency check", error);
  if (Status s = RecordRunStart(engine.get(), &info); !s.ok()) return Failure(o, "htap", s);
  RunOptions ro;
  ro.mix = mix;
  ro.users = h.users != 0 ? h.users : 10 * info.warehouses;
  ro.duration_s = h.duration_s;
  ro.seed = o.seed;
  ro.interval_s = 0;
  Say(o, "htap: %u users on %u workers, %u query streams, %u warehouses, %.0f s per phase\n",
      ro.users, engine->workers(), h.query_streams, info.warehouses, h.duration_s);

  RunResult alone;
  if (Status s = Run(engine.get(), info, ro, nullptr, &alone); !s.ok()) return Failure(o, "run", s);
  Say(o, "phase 1, TPC-C alone:        %9.0f tx/s\n", alone.tx_per_s);

  RunResult mixed;
  ro.seed = o.seed + 1;
  uint64_t mixed_queries = 0;
  std::vector<double> mixed_ms;
  {
    QueryStreams streams(&catalog, h.query_streams, h.share_scans == "on");
    Status s = Run(engine.get(), info, ro, nullptr, &mixed);
    mixed_queries = streams.completed();
    Status q = streams.Stop();
    if (!s.ok()) return Failure(o, "run", s);
    if (!q.ok()) return Failure(o, "query stream", q);
    mixed_ms = streams.MeanMs();
  }
  double mixed_qph = PerHour(mixed_queries, mixed.measured_s);
  Say(o, "phase 2, TPC-C with queries: %9.0f tx/s and %8.0f queries/h (%llu queries)\n",
      mixed.tx_per_s, mixed_qph, static_cast<unsigned long long>(mixed_queries));

  uint64_t alone_queries = 0;
  {
    QueryStreams streams(&catalog, h.query_streams, h.share_scans == "on");
    std::this_thread::sleep_for(std::chrono::duration<double>(h.duration_s));
    alone_queries = streams.completed();
    if (Status q = streams.Stop(); !q.ok()) return Failure(o, "query stream", q);
  }
  double alone_qph = PerHour(alone_queries, h.duration_s);
  Say(o, "phase 3, queries alone:      %9s      %8.0f queries/h (%llu queries)\n", "", alone_qph,
      static_cast<unsigned long long>(alone_queries));
  double slowdown = alone.tx_per_s > 0 ? 1 - mixed.tx_per_s / alone.tx_per_s : 0;
  Say(o, "the queries slow TPC-C by %.1f %%; TPC-C slows the queries by %.1f %%\n", 100 * slowdown,
      alone_qph > 0 ? 100 * (1 - mixed_qph / alone_qph) : 0.0);

  bool ok = RunChecks(o, engine.get(), info, {1, 2, 3, 4}, "after", &after, &error);
  if (!error.ok()) return Failure(o, "consistency check", error);
  consistent = consistent && ok;
  if (Status s = engine->Close(); !s.ok()) return Failure(o, "close", s);
  if (Json(o)) {
    json query_ms = json::object();
    for (int n = 1; n <= kChQueries; ++n) query_ms["q" + std::to_string(n)] = mixed_ms[n - 1];
    json out = {{"command", "htap"},
                {"git_revision", GitRevision()},
                {"db", o.db},
                {"warehouses", info.warehouses},
                {"users", ro.users},
                {"workers", engine->workers()},
                {"query_streams", h.query_streams},
                {"duration_s", h.duration_s},
                {"commit_mode", o.commit},
                {"tpcc_alone_tx_per_s", alone.tx_per_s},
                {"tpcc_with_queries_tx_per_s", mixed.tx_per_s},
                {"tpcc_slowdown", slowdown},
                {"queries_per_hour_with_tpcc", mixed_qph},
                {"queries_per_hour_alone", alone_qph},
                {"queries_with_tpcc", mixed_queries},
                {"queries_alone", alone_queries},
                {"query_mean_ms_with_tpcc", query_ms},
                {"consistency", consistent ? "pass" : "fail"}};
    std::printf("%s\n", out.dump().c_str());
  }
  return consistent ? 0 : kExitFailed;
}

}  // namespace sm::tpcc
