// Running the parts of a pipeline on several threads: the driver of parallel aggregation.
//
// Owns: cutting a pipeline into parts (SplitPipeline, through Table::SplitRange), restricting
// its scans to one part (RestrictPipeline), running one part per thread (RunParts), and the
// hash tables the parts share (SharedBuilds).
//
// A pipeline here is an operator tree whose root takes in the tuples of a source scan one at a
// time through operators that each treat every tuple independently (Operator::streamed_input:
// filters, projections, buffers, the probe side of hash joins, the outer side of index joins).
// Its output over the whole range is then the union of its outputs over disjoint parts, so the
// parts can run on different threads and a blocking parent (an aggregation) combines them.
// The cuts come from the table's inner B-tree nodes, so each thread reads leaves of its own
// (Krikellas et al., "split the input N ways").
//
// A merge join on the way streams its left input and reads its right one in step with it
// (Operator::aligned_input). Both arrive in key order, so the pipeline may still be cut when
// the join keys are, on both sides, the leading key columns of the scans below (their values
// carried on the way, Operator::streamed_column) with the same encodings: the cuts are then
// shortened to those columns' bytes, and a part reads the keys between two cuts from the
// source scan and from the scan under every merge join's right input alike. A sort
// aggregation on the way streams too, when its group keys include leading key columns of the
// source scan (Operator::grouped_columns): the cuts are shortened to those, so that no group
// spans two parts.
//
// Threads and transactions: part 0 runs on the calling thread in the caller's operator tree
// and transaction; each other part on a std::thread of its own, with a fresh instance of the
// pipeline's plan node and a read committed transaction of its own, committed when the part
// ends. Read committed takes no read locks that outlive a row, and a query under it may see
// rows committed after it started, so several such transactions read what one would
// (ExecContext::threads is above 1 only for such queries). The hash joins' tables are built
// once, by the first part to open the join, and shared (SharedBuilds); other materialized
// inputs (subqueries, index join lookups) are computed by every part.
//
// Why std::threads and not the engine's fibers: the parts are long, CPU-bound scans that never
// wait for each other, and a query may run on a thread that is not a worker of the engine.
//
// Thread safety: RunParts returns after every thread it started has ended.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "query/operator.h"
#include "query/row_store.h"
#include "sm/common/status.h"
#include "sm/sm.h"

namespace sm::query {

// Where a pipeline is cut: part 0 runs up to cuts[0] (exclusive), part i from cuts[i - 1]
// (inclusive) to cuts[i], the last from the last cut on; each scan of the pipeline reads the
// keys of its own range that lie in the part.
struct PipelineSplit {
  std::vector<std::string> cuts;  // ascending
  size_t parts() const { return cuts.size() + 1; }
};

// The cuts of the pipeline rooted at `input` into at most ctx->threads parts; none (one part)
// when it has no source scan, cannot be cut (see above), or its range is too small to cut.
[[nodiscard]] Status SplitPipeline(ExecContext* ctx, Operator* input, PipelineSplit* split);

// Before Open: restricts the source scan of the pipeline rooted at `input`, and the scans of
// its merge joins' right inputs, to part `part` of `split`.
void RestrictPipeline(Operator* input, const PipelineSplit& split, size_t part);

// The hash join tables of a parallel pipeline's parts, keyed by the join's plan node: the
// first part to open a join builds its table and publishes it, the others wait for it and
// share it read-only. Every part opens the joins of one plan in the same order, so a part
// waits only for a table that another part is building, never in a cycle.
class SharedBuilds {
 public:
  // Sets *must_build for the first caller for `node` (who must then Publish); gives later
  // callers the published table (or the builder's error) once it is there.
  [[nodiscard]] Status Acquire(const PlanNode* node, std::shared_ptr<const void>* table,
                               bool* must_build);
  // The table of `node` (null with an error), for the parts waiting and to come.
  void Publish(const PlanNode* node, const Status& status, std::shared_ptr<const void> table);

 private:
  struct Entry {
    bool done = false;
    Status status;
    std::shared_ptr<const void> table;
  };
  std::mutex mu_;
  std::condition_variable published_;
  std::map<const PlanNode*, Entry> entries_;
};

// Consumes the tuples of part `part` from the open operator `input`.
using PartFn = std::function<Status(size_t part, Operator* input)>;

// Runs consume(i, ·) over each part i of `split` (SplitPipeline's, at least two parts): part 0
// in `input` (not yet open; RunParts opens it in ctx, the caller closes it), the others on
// threads of their own in fresh instances of `input_node`. consume runs on several threads at
// once. Returns the first error of any part; the rows the other parts read are added to
// ctx->subquery_rows_read.
[[nodiscard]] Status RunParts(ExecContext* ctx, const PlanNode& input_node, Operator* input,
                              const PipelineSplit& split, const PartFn& consume);

// Appends every tuple `input` (open) returns from here on to *rows.
[[nodiscard]] Status DrainInto(Operator* input, RowStore* rows);

// Appends every tuple of the pipeline rooted at `input` (not yet open; the caller closes it)
// to *rows, in the order one thread would: on ctx->threads threads when the pipeline can be
// cut, each part's tuples (collected on its thread) in the order of the parts' keys, which is
// the order the source scan would deliver them in. *parts: how many parts ran.
[[nodiscard]] Status CollectPipeline(ExecContext* ctx, const PlanNode& input_node, Operator* input,
                                     RowStore* rows, size_t* parts);

}  // namespace sm::query
