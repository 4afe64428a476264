// The plan nodes' constructors, one per operator module, which Plan's builder methods call.
// Internal to the query layer: each returns a node that carries the first error it found in
// its arguments (plan.h, invariant 2), never null.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "query/plan.h"

namespace sm::query {

using NodePtr = std::shared_ptr<PlanNode>;

// A node that only carries an error (a malformed plan).
NodePtr MakeErrorNode(Status status);

NodePtr MakeScanNode(const Catalog& catalog, std::string_view table,
                     std::vector<std::string> columns, KeyRange range, std::string alias);
// A filter; fused into a scan directly below it.
NodePtr MakeFilterNode(NodePtr child, const Expr& predicate);
// The scan `child` with `predicate` evaluated inside it, or null if `child` is not a scan.
NodePtr FuseFilterIntoScan(const NodePtr& child, const Expr& predicate);
NodePtr MakeProjectNode(NodePtr child, std::vector<NamedExpr> columns);
NodePtr MakeHashJoinNode(NodePtr probe, NodePtr build, std::vector<JoinKey> keys, JoinType type,
                         const Expr& residual);
NodePtr MakeIndexJoinNode(NodePtr outer, const Catalog& catalog, std::string_view table,
                          std::vector<Expr> key_prefix, std::vector<std::string> columns,
                          JoinType type, const Expr& residual, std::string alias);
// InvalidArgument unless `key` is a whole key and `type` semi or anti.
NodePtr MakeIndexOrRadixJoinNode(NodePtr outer, const Catalog& catalog, std::string_view table,
                                 std::vector<Expr> key, JoinType type);
NodePtr MakeMergeJoinNode(NodePtr left, NodePtr right,
                          std::vector<std::pair<std::string, std::string>> keys, JoinType type);
NodePtr MakeAggregateNode(NodePtr child, std::vector<NamedExpr> group_by,
                          std::vector<Agg> aggregates, AggStrategy strategy);
NodePtr MakeSortNode(NodePtr child, std::vector<SortKey> keys, uint64_t limit);
NodePtr MakeLimitNode(NodePtr child, uint64_t n);
NodePtr MakeBufferNode(NodePtr child, uint32_t tuples);
// A buffer operator without its child (for Operator::InsertAboveChild); 1 <= tuples <=
// kMaxBufferTuples; `note` (why it is there) follows its size in EXPLAIN.
std::unique_ptr<Operator> MakeBufferOperator(RowSchema schema, uint32_t tuples,
                                             std::string note = std::string());
NodePtr MakeMaterializeNode(NodePtr child);

// Resolves sort keys against a schema: column indexes and directions.
struct ResolvedSortKey {
  size_t column;
  Type type;
  bool descending;
};
[[nodiscard]] Status ResolveSortKeys(const std::vector<SortKey>& keys, const RowSchema& schema,
                                     std::vector<ResolvedSortKey>* out);
// Three-way comparison of two tuples on resolved keys; NULLs sort first (last descending).
int CompareTuples(const Value* a, const Value* b, const std::vector<ResolvedSortKey>& keys);

// Binds every expression of `exprs` against `schema`.
[[nodiscard]] Status BindAll(const std::vector<Expr>& exprs, const RowSchema& schema,
                             std::vector<std::unique_ptr<class BoundExpr>>* out);

}  // namespace sm::query
