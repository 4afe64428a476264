// Running the parts of a pipeline on several threads (contract in parallel.h).
#include "query/parallel.h"

#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "query/plan.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

// Part i of `range` that `cuts` make (Table::SplitRange).
ScanOptions PartOf(const ScanOptions& range, const std::vector<std::string>& cuts, size_t i) {
  SM_ASSERT(i <= cuts.size());
  ScanOptions part = range;
  if (i > 0) {
    part.lower = cuts[i - 1];
    part.has_lower = true;
    part.lower_inclusive = true;
  }
  if (i < cuts.size()) {
    part.upper = cuts[i];
    part.has_upper = true;
    part.upper_inclusive = false;
  }
  return part;
}

// One part on a thread of its own: a fresh operator tree, its scan restricted to `part`, in a
// transaction of its own.
Status RunOtherPart(const ExecContext& parent, SharedBuilds* builds, const PlanNode& input_node,
                    const ScanOptions& part, size_t index, const PartFn& consume,
                    uint64_t* rows_read) {
  std::unique_ptr<Operator> input;
  SM_TRY(input_node.Instantiate(&input));
  Operator* scan = FindSourceScan(input.get());
  SM_ASSERT(scan != nullptr);  // the same plan as the caller's tree, which has one
  scan->RestrictScan(part);
  std::unique_ptr<Transaction> txn;
  SM_TRY(parent.db->Begin(&txn, Isolation::kReadCommitted));
  ExecContext ctx;
  ctx.db = parent.db;
  ctx.txn = txn.get();
  ctx.hash_join_batch_bytes = parent.hash_join_batch_bytes;
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

Operator* FindSourceScan(Operator* op) {
  Table* table = nullptr;
  ScanOptions range;
  while (op != nullptr && !op->scan_source(&table, &range)) op = op->streamed_input();
  return op;
}

Status SplitPipeline(ExecContext* ctx, Operator* input, std::vector<ScanOptions>* parts) {
  parts->clear();
  Operator* scan = FindSourceScan(input);
  if (scan == nullptr) return Status::OK();
  Table* table = nullptr;
  ScanOptions range;
  SM_ASSERT(scan->scan_source(&table, &range));
  std::vector<std::string> cuts;
  if (ctx->threads > 1 && !range.reverse) {
    SM_TRY(table->SplitRange(ctx->txn, range, ctx->threads, &cuts));
  }
  for (size_t i = 0; i <= cuts.size(); ++i) parts->push_back(PartOf(range, cuts, i));
  return Status::OK();
}

Status RunParts(ExecContext* ctx, const PlanNode& input_node, Operator* input,
                const std::vector<ScanOptions>& parts, const PartFn& consume) {
  SM_ASSERT(parts.size() >= 2);
  SM_ASSERT(ctx->db != nullptr);
  const size_t others = parts.size() - 1;
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
        results[i] =
            RunOtherPart(*ctx, &builds, input_node, parts[i + 1], i + 1, consume, &rows_read[i]);
      });
    } catch (const std::system_error& e) {
      started = Status::Busy(std::string("cannot start a query thread: ") + e.what());
      break;  // the parts started run to their end; the query fails
    }
  }
  Status own = std::move(started);
  if (own.ok()) {
    Operator* scan = FindSourceScan(input);
    SM_ASSERT(scan != nullptr);
    scan->RestrictScan(parts[0]);
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
