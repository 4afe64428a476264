// The 22 CH-benCHmark queries as plans of the query layer, over the schemas RegisterChCatalog
// registers (tpcc/ch.h).
//
// Owns: one plan per query, written from the published SQL (the CH-benCHmark of Cole et al.,
// as BenchBase's chbenchmark carries it) with hand-chosen join orders and algorithms, and the
// adaptations its constants need on a database loaded today.
//
// Adaptations: TPC-C dates are the times rows were written, so the published date constants
// (set when the benchmark was defined) fall before every date of a database loaded later. A
// lower bound such as '2007-01-02' then keeps every row, as it was meant to; an upper bound such
// as '2020-01-01' would keep none, so it becomes ChParams::far_future, a year after the moment
// the query runs, which keeps every row as the published bound did when it was written.
// ChAdaptation lists these per query.
//
// Thread/fiber safety: pure functions of their arguments; plans are immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "query/plan.h"
#include "query/result.h"
#include "query/schema.h"
#include "sm/common/status.h"

namespace sm::tpcc {

inline constexpr int kChQueries = 22;

struct ChParams {
  // Replaces the published upper date bounds that fall before the database's dates.
  int64_t far_future_us = 0;
  // A year after the current time.
  static ChParams Now();
};

// The plan of query `n` (1..22); InvalidArgument for another n.
[[nodiscard]] Status ChQuery(int n, const query::Catalog& catalog, const ChParams& params,
                             query::Plan* plan);

// How query `n` departs from the published text ("" if it does not).
const char* ChAdaptation(int n);

// One run of a query: its rows as text (query::FormatValue), the rows it read from the tables,
// its wall-clock time, and (when analyzed) its plan with rows and times.
struct ChRun {
  query::ResultRows rows;
  uint64_t rows_read = 0;
  double ms = 0;
  std::string explain_analyze;
};
[[nodiscard]] Status RunChQuery(const query::Catalog& catalog, const query::Plan& plan,
                                const query::QueryOptions& options, ChRun* run);

// Writes every table of `catalog` named in ChTableNames() to dir/<name>.csv: a header line of
// column names, then one line per row in key order (RFC 4180 quoting; NULL an empty field;
// money as a decimal such as -12.34; dates as "YYYY-MM-DD HH:MM:SS.ffffff"; rates such as
// w_tax as integers in 1/10,000). `done` is called after each table.
using ExportProgress = std::function<void(const std::string& table, uint64_t rows, double seconds,
                                          const std::string& path)>;
[[nodiscard]] Status ExportCsv(const query::Catalog& catalog, const std::string& dir,
                               const ExportProgress& done);

}  // namespace sm::tpcc
