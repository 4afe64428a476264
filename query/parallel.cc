// Running the parts of a pipeline on several threads (contract in parallel.h).
#include "query/parallel.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "query/plan.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

// `range` narrowed to keys >= lower (if given) and < upper (if given).
ScanOptions Intersect(ScanOptions range, const std::string* lower, const std::string* upper) {
  if (lower != nullptr && (!range.has_lower || *lower > range.lower)) {
    range.lower = *lower;
    range.has_lower = true;
    range.lower_inclusive = true;
  }
  if (upper != nullptr && (!range.has_upper || *upper <= range.upper)) {
    range.upper = *upper;
    range.has_upper = true;
    range.upper_inclusive = false;
  }
  return range;
}

// The scan below `op` through streamed inputs, or null; *columns (of op's output) become the
// scan's output columns that carry their values, and those no operator on the way carries
// are dropped (all of them kept: *all_kept).
Operator* MapToScan(Operator* op, std::vector<size_t>* columns, bool* all_kept) {
  Table* table = nullptr;
  ScanOptions range;
  *all_kept = true;
  while (op != nullptr && !op->scan_source(&table, &range)) {
    if (op->streamed_input() == nullptr) return nullptr;
    std::vector<size_t> below;
    for (size_t c : *columns) {
      int b = op->streamed_column(c);
      if (b >= 0) below.push_back(static_cast<size_t>(b));
    }
    *all_kept = *all_kept && below.size() == columns->size();
    *columns = std::move(below);
    op = op->streamed_input();
  }
  return op;
}

// Whether a cut of the source scan below `op` can keep rows equal on `columns` (of op's
// streamed input) in one part: true with the bytes of the longest run of leading key columns
// of the scan among them (the cuts must be no longer), false if there is none.
bool GroupedPrefix(const Operator& op, std::vector<size_t> columns, size_t* bytes) {
  bool all_kept = false;
  Operator* scan = MapToScan(op.streamed_input(), &columns, &all_kept);
  std::string shape;
  return scan != nullptr && scan->key_prefix(columns, true, bytes, &shape) && *bytes > 0;
}

// Whether the merge join `join` can be cut at keys of its left input's source scan: true with
// the bytes of the key prefix its keys fill (the same on both sides), false if it cannot.
bool AlignedPrefix(const Operator& join, size_t* bytes) {
  Operator* right = nullptr;
  std::vector<size_t> left_keys, right_keys;
  SM_ASSERT(join.aligned_input(&right, &left_keys, &right_keys));
  bool left_kept = false, right_kept = false;
  Operator* left_scan = MapToScan(join.streamed_input(), &left_keys, &left_kept);
  Operator* right_scan = MapToScan(right, &right_keys, &right_kept);
  if (left_scan == nullptr || right_scan == nullptr || !left_kept || !right_kept) return false;
  size_t left_bytes = 0, right_bytes = 0;
  std::string left_shape, right_shape;
  if (!left_scan->key_prefix(left_keys, false, &left_bytes, &left_shape) ||
      !right_scan->key_prefix(right_keys, false, &right_bytes, &right_shape) ||
      left_shape != right_shape || left_bytes == 0) {
    return false;
  }
  SM_ASSERT(left_bytes == right_bytes);
  *bytes = left_bytes;
  // Under the right input a grouping shortens the cuts as on the left (the join keys' bytes
  // are alike on both sides); a merge join would need cuts of its own.
  for (Operator* op = right; op != right_scan; op = op->streamed_input()) {
    std::vector<size_t> unused_left, unused_right, grouped;
    Operator* unused = nullptr;
    if (op->aligned_input(&unused, &unused_left, &unused_right)) return false;
    size_t grouped_bytes = 0;
    if (op->grouped_columns(&grouped)) {
      if (!GroupedPrefix(*op, std::move(grouped), &grouped_bytes)) return false;
      *bytes = std::min(*bytes, grouped_bytes);
    }
  }
  return true;
}

// Part `part` of `split` applied to `scan`'s own range.
void RestrictScanToPart(Operator* scan, const PipelineSplit& split, size_t part) {
  Table* table = nullptr;
  ScanOptions range;
  SM_ASSERT(scan->scan_source(&table, &range));
  SM_ASSERT(part < split.parts());
  const std::string* lower = part > 0 ? &split.cuts[part - 1] : nullptr;
  const std::string* upper = part < split.cuts.size() ? &split.cuts[part] : nullptr;
  scan->RestrictScan(Intersect(range, lower, upper));
}

// One part on a thread of its own: a fresh operator tree, its scans restricted to the part, in
// a transaction of its own.
Status RunOtherPart(const ExecContext& parent, SharedBuilds* builds, const PlanNode& input_node,
                    const PipelineSplit& split, size_t index, const PartFn& consume,
                    uint64_t* rows_read) {
  std::unique_ptr<Operator> input;
  SM_TRY(input_node.Instantiate(&input));
  RestrictPipeline(input.get(), split, index);
  std::unique_ptr<Transaction> txn;
  SM_TRY(parent.db->Begin(&txn, Isolation::kReadCommitted));
  ExecContext ctx;
  ctx.db = parent.db;
  ctx.txn = txn.get();
  ctx.hash_join_batch_bytes = parent.hash_join_batch_bytes;
  ctx.index_or_radix = parent.index_or_radix;
  ctx.builds = builds;
  Status s = input->Open(&ctx);
  if (s.ok()) s = consume(index, input.get());
  *rows_read = input->TreeRowsRead() + ctx.subquery_rows_read;
  input->Close();
  if (s.ok()) return txn->Commit();
  txn->Abort().PermitUnchecked();  // the part's error is the one to report
  return s;
}

}  // namespace

Status SharedBuilds::Acquire(const PlanNode* node, std::shared_ptr<const void>* table,
                             bool* must_build) {
  std::unique_lock<std::mutex> lock(mu_);
  auto [it, added] = entries_.try_emplace(node);
  *must_build = added;
  if (added) return Status::OK();
  published_.wait(lock, [&] { return it->second.done; });
  *table = it->second.table;
  return it->second.status;
}

void SharedBuilds::Publish(const PlanNode* node, const Status& status,
                           std::shared_ptr<const void> table) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[node];
    SM_ASSERT(!e.done);
    e.done = true;
    e.status = status;
    e.status.PermitUnchecked();  // handed out as copies
    e.table = std::move(table);
  }
  published_.notify_all();
}

Status SplitPipeline(ExecContext* ctx, Operator* input, PipelineSplit* split) {
  split->cuts.clear();
  if (ctx->threads <= 1) return Status::OK();
  size_t prefix = SIZE_MAX;  // the shortest key prefix a merge join or a grouping allows
  Operator* source = input;
  Table* table = nullptr;
  ScanOptions range;
  for (; source != nullptr && !source->scan_source(&table, &range);
       source = source->streamed_input()) {
    Operator* right = nullptr;
    std::vector<size_t> left_keys, right_keys, grouped;
    size_t bytes = 0;
    if (source->aligned_input(&right, &left_keys, &right_keys)) {
      if (!AlignedPrefix(*source, &bytes)) return Status::OK();
      prefix = std::min(prefix, bytes);
    }
    if (source->grouped_columns(&grouped)) {
      if (!GroupedPrefix(*source, std::move(grouped), &bytes)) return Status::OK();
      prefix = std::min(prefix, bytes);
    }
  }
  if (source == nullptr || range.reverse) return Status::OK();
  std::vector<std::string> cuts;
  SM_TRY(table->SplitRange(ctx->txn, range, ctx->threads, &cuts));
  for (std::string& cut : cuts) {
    if (cut.size() > prefix) cut.resize(prefix);
    // Shortened, a cut may fall on the range's start or on the cut before it.
    bool after_start = !range.has_lower || cut > range.lower;
    bool after_last = split->cuts.empty() || cut > split->cuts.back();
    if (after_start && after_last) split->cuts.push_back(std::move(cut));
  }
  return Status::OK();
}

void RestrictPipeline(Operator* input, const PipelineSplit& split, size_t part) {
  Table* table = nullptr;
  ScanOptions range;
  for (Operator* op = input; op != nullptr; op = op->streamed_input()) {
    if (op->scan_source(&table, &range)) {
      RestrictScanToPart(op, split, part);
      return;
    }
    Operator* right = nullptr;
    std::vector<size_t> left_keys, right_keys;
    if (op->aligned_input(&right, &left_keys, &right_keys)) {
      bool all_kept = false;
      Operator* right_scan = MapToScan(right, &right_keys, &all_kept);
      SM_ASSERT(right_scan != nullptr);  // SplitPipeline checked it
      RestrictScanToPart(right_scan, split, part);
    }
  }
  SM_ASSERT(false && "a pipeline that was split has a source scan");
}

Status DrainInto(Operator* input, RowStore* rows) {
  for (;;) {
    const Value* row = nullptr;
    SM_TRY(input->Next(&row));
    if (row == nullptr) return Status::OK();
    rows->Append(row);
  }
}

Status CollectPipeline(ExecContext* ctx, const PlanNode& input_node, Operator* input,
                       RowStore* rows, size_t* parts) {
  PipelineSplit split;
  SM_TRY(SplitPipeline(ctx, input, &split));
  *parts = split.parts();
  if (split.parts() == 1) {
    SM_TRY(input->Open(ctx));
    return DrainInto(input, rows);
  }
  std::vector<RowStore> others(split.parts() - 1);
  for (RowStore& other : others) other.Reset(rows->width());
  SM_TRY(RunParts(ctx, input_node, input, split, [&](size_t part, Operator* from) {
    return DrainInto(from, part == 0 ? rows : &others[part - 1]);
  }));
  for (RowStore& other : others) {
    for (size_t r = 0; r < other.size(); ++r) rows->Append(other.row(r));
    other.Clear();
  }
  return Status::OK();
}

Status RunParts(ExecContext* ctx, const PlanNode& input_node, Operator* input,
                const PipelineSplit& split, const PartFn& consume) {
  SM_ASSERT(split.parts() >= 2);
  SM_ASSERT(ctx->db != nullptr);
  const size_t others = split.parts() - 1;
  std::vector<Status> results(others);
  std::vector<uint64_t> rows_read(others, 0);
  SharedBuilds builds;
  SharedBuilds* const outer_builds = ctx->builds;  // a parallel pipeline in a build side's
  ctx->builds = &builds;
  std::vector<std::thread> threads;
  threads.reserve(others);
  Status started;
  for (size_t i = 0; i < others; ++i) {
    try {
      threads.emplace_back([&, i] {
        results[i] = RunOtherPart(*ctx, &builds, input_node, split, i + 1, consume, &rows_read[i]);
      });
    } catch (const std::system_error& e) {
      started = Status::Busy(std::string("cannot start a query thread: ") + e.what());
      break;  // the parts started run to their end; the query fails
    }
  }
  Status own = std::move(started);
  if (own.ok()) {
    RestrictPipeline(input, split, 0);
    own = input->Open(ctx);
    if (own.ok()) own = consume(0, input);
  }
  for (std::thread& t : threads) t.join();
  ctx->builds = outer_builds;
  for (size_t i = 0; i < threads.size(); ++i) {
    ctx->subquery_rows_read += rows_read[i];
    if (own.ok() && !results[i].ok()) own = results[i];
    results[i].PermitUnchecked();
  }
  return own;
}

}  // namespace sm::query
