// Running a plan: ResultCursor opens a plan's operators in a transaction and hands out its rows;
// the formatting helpers write them as CSV or an aligned table.
//
// Owns: QueryOptions, ResultCursor (the transaction it began, the operator tree, the context),
// and the output formats.
//
// A query reads in its own transaction, read committed by default, so that it runs beside
// OLTP work without holding its read locks: every row it reads was committed when it was read,
// and a scan may see rows committed after it started (no snapshot). Isolation::kSerializable
// takes key-range locks for the whole query instead, which blocks writers to what it read
// until it ends.
//
// Invariants:
//   1. A cursor that returned an error from Open or Next is closed: its transaction is aborted
//      (if it began it) and later calls return that error again.
//   2. Close commits a transaction the cursor began; a caller's transaction is left to it.
//
// Thread/fiber safety: a ResultCursor is used by one thread or fiber at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "query/operator.h"
#include "query/plan.h"
#include "query/refine.h"
#include "sm/sm.h"

namespace sm::query {

struct QueryOptions {
  Isolation isolation = Isolation::kReadCommitted;
  // Run in this transaction instead of one of the cursor's own.
  Transaction* txn = nullptr;
  // Time every operator (EXPLAIN ANALYZE); costs a clock read per call.
  bool analyze = false;
  // A hash join whose table is larger than this probes in prefetched batches (query.md, "The
  // hash join's table"); 0 means the machine's L2 cache size.
  size_t hash_join_batch_bytes = 0;
  // How index-or-radix joins choose (Plan::IndexOrRadixJoin); by their costs by default.
  JoinChoice index_or_radix = JoinChoice::kCost;
  // Run each operator's calls in its profile slot (operator.h, kProfileSlots), so that callgrind
  // attributes costs per operator; costs a call per Next.
  bool profile_operators = false;
  // Where buffer operators go (refine.h); none by default.
  BufferOptions buffers;
  // Threads a hash aggregation over a scan's pipeline may use, each over a part of the scan's
  // key range (query.md, "Parallel aggregation"); 1 to kMaxQueryThreads. Used only when the
  // query runs read committed in a transaction of its own (no `txn`): the other threads read
  // in transactions of their own, which could not see a caller's uncommitted writes nor keep
  // serializable locks for it.
  uint32_t threads = 1;
  // Scans of whole tables attach to a scan of the same table that another query of the same
  // Catalog is running, and read its pages with it (query.md, "Shared scans"). Used only when
  // the query runs read committed in a transaction of its own, for the same reason as
  // `threads`. Off by default: a query alone has nobody to share with.
  bool share_scans = false;
};
inline constexpr uint32_t kMaxQueryThreads = 64;

class ResultCursor {
 public:
  ~ResultCursor();
  [[nodiscard]] static Status Open(const Catalog& catalog, const Plan& plan,
                                   const QueryOptions& options, std::unique_ptr<ResultCursor>* out);
  // *row: the next row (schema().size() Values, valid until the next call), or null at the end.
  [[nodiscard]] Status Next(const Value** row);
  // Ends the query (committing its own transaction). Returns the first error it met, if any.
  [[nodiscard]] Status Close();
  const RowSchema& schema() const { return root_->schema(); }
  // The operator tree with estimated and actual rows and (when analyzed) times.
  std::string ExplainAnalyze() const;
  // The operator tree (its stats, and profile slots when profiled).
  const Operator& operators() const { return *root_; }
  // Rows the query has read from the database's tables so far.
  uint64_t rows_read() const { return root_->TreeRowsRead() + ctx_.subquery_rows_read; }

 private:
  ResultCursor() = default;
  void Fail(const Status& s);

  Database* db_ = nullptr;
  std::unique_ptr<Transaction> own_txn_;
  ExecContext ctx_;
  std::unique_ptr<Operator> root_;
  bool open_ = false;
  Status error_;
};

// The operator tree a cursor runs for `plan` with `options` (buffers placed), with estimated
// rows: EXPLAIN of what will run.
[[nodiscard]] Status ExplainOperatorTree(const Plan& plan, const QueryOptions& options,
                                         std::string* out);

// All rows of a query as text (FormatValue), for tests and small results.
struct ResultRows {
  RowSchema schema;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<bool>> nulls;
};
[[nodiscard]] Status RunToRows(const Catalog& catalog, const Plan& plan,
                               const QueryOptions& options, ResultRows* out);

// CSV (RFC 4180: a header line, fields quoted when they hold a comma, quote or newline) and an
// aligned text table.
std::string CsvLine(const std::vector<std::string>& fields);
std::string FormatCsv(const ResultRows& rows);
std::string FormatTable(const ResultRows& rows);

}  // namespace sm::query
