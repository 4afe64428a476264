// Plan's builder methods, instantiation, scalar subqueries and EXPLAIN (contract in plan.h).
#include "query/plan.h"

#include <cinttypes>
#include <cstdio>

#include "query/expr_eval.h"
#include "query/nodes.h"
#include "sm/common/assert.h"

namespace sm::query {

const char* JoinTypeName(JoinType type) {
  switch (type) {
    case JoinType::kInner:
      return "inner";
    case JoinType::kLeftOuter:
      return "left outer";
    case JoinType::kSemi:
      return "semi";
    case JoinType::kAnti:
      return "anti";
  }
  return "?";
}

const char* AggKindName(AggKind kind) {
  switch (kind) {
    case AggKind::kCountStar:
      return "count(*)";
    case AggKind::kCount:
      return "count";
    case AggKind::kCountDistinct:
      return "count distinct";
    case AggKind::kSum:
      return "sum";
    case AggKind::kAvg:
      return "avg";
    case AggKind::kMin:
      return "min";
    case AggKind::kMax:
      return "max";
  }
  return "?";
}

namespace {
Agg MakeAgg(AggKind kind, const Expr& e) {
  Agg a;
  a.kind = kind;
  a.arg = e;
  a.name = std::string(AggKindName(kind)) + "(" + e.ToString() + ")";
  return a;
}

class ErrorNode final : public PlanNode {
 public:
  explicit ErrorNode(Status status) : PlanNode("Error", std::move(status)) {
    SM_ASSERT(!this->status().ok());
  }

 private:
  Status MakeOperator(std::unique_ptr<Operator>*) const override { return status(); }
};
}  // namespace

Agg Count() {
  Agg a;
  a.kind = AggKind::kCountStar;
  a.name = "count(*)";
  return a;
}
Agg Count(const Expr& e) { return MakeAgg(AggKind::kCount, e); }
Agg CountDistinct(const Expr& e) { return MakeAgg(AggKind::kCountDistinct, e); }
Agg Sum(const Expr& e) { return MakeAgg(AggKind::kSum, e); }
Agg Avg(const Expr& e) { return MakeAgg(AggKind::kAvg, e); }
Agg Min(const Expr& e) { return MakeAgg(AggKind::kMin, e); }
Agg Max(const Expr& e) { return MakeAgg(AggKind::kMax, e); }

NodePtr MakeErrorNode(Status status) { return std::make_shared<ErrorNode>(std::move(status)); }

Status PlanNode::Instantiate(std::unique_ptr<Operator>* out) const {
  SM_TRY(status_);
  SM_TRY(MakeOperator(out));
  SM_ASSERT(*out != nullptr);
  (*out)->set_estimated_rows(estimated_rows_);
  return Status::OK();
}

// ---- the builder --------------------------------------------------------------------------------

Plan Plan::Scan(const Catalog& catalog, std::string_view table, std::vector<std::string> columns,
                KeyRange range, std::string alias) {
  return Plan(MakeScanNode(catalog, table, std::move(columns), std::move(range), std::move(alias)));
}

Status Plan::status() const {
  if (node_ == nullptr) return Status::InvalidArgument("an empty plan");
  return node_->status();
}

const RowSchema& Plan::schema() const {
  static const RowSchema kEmpty;
  return node_ ? node_->schema() : kEmpty;
}

#define SM_PLAN_PASS_ERRORS()                                        \
  do {                                                               \
    if (Status s = status(); !s.ok()) return Plan(MakeErrorNode(s)); \
  } while (0)

Plan Plan::Filter(const Expr& predicate) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeFilterNode(node_, predicate));
}

Plan Plan::Project(std::vector<NamedExpr> columns) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeProjectNode(node_, std::move(columns)));
}

Plan Plan::HashJoin(const Plan& build, std::vector<JoinKey> keys, JoinType type,
                    const Expr& residual) const {
  SM_PLAN_PASS_ERRORS();
  if (Status s = build.status(); !s.ok()) return Plan(MakeErrorNode(s));
  return Plan(MakeHashJoinNode(node_, build.node_, std::move(keys), type, residual));
}

Plan Plan::IndexJoin(const Catalog& catalog, std::string_view table, std::vector<Expr> key_prefix,
                     std::vector<std::string> columns, JoinType type, const Expr& residual,
                     std::string alias) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeIndexJoinNode(node_, catalog, table, std::move(key_prefix), std::move(columns),
                                type, residual, std::move(alias)));
}

Plan Plan::IndexOrRadixJoin(const Catalog& catalog, std::string_view table, std::vector<Expr> key,
                            JoinType type) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeIndexOrRadixJoinNode(node_, catalog, table, std::move(key), type));
}

Plan Plan::MergeJoin(const Plan& right, std::vector<std::pair<std::string, std::string>> keys,
                     JoinType type) const {
  SM_PLAN_PASS_ERRORS();
  if (Status s = right.status(); !s.ok()) return Plan(MakeErrorNode(s));
  return Plan(MakeMergeJoinNode(node_, right.node_, std::move(keys), type));
}

Plan Plan::Aggregate(std::vector<NamedExpr> group_by, std::vector<Agg> aggregates,
                     AggStrategy strategy) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeAggregateNode(node_, std::move(group_by), std::move(aggregates), strategy));
}

Plan Plan::Sort(std::vector<SortKey> keys) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeSortNode(node_, std::move(keys), 0));
}

Plan Plan::TopN(std::vector<SortKey> keys, uint64_t n) const {
  SM_PLAN_PASS_ERRORS();
  if (n == 0) return Plan(MakeErrorNode(Status::InvalidArgument("TopN needs n >= 1")));
  return Plan(MakeSortNode(node_, std::move(keys), n));
}

Plan Plan::Limit(uint64_t n) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeLimitNode(node_, n));
}

Plan Plan::Buffer(uint32_t tuples) const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeBufferNode(node_, tuples));
}

Plan Plan::Materialize() const {
  SM_PLAN_PASS_ERRORS();
  return Plan(MakeMaterializeNode(node_));
}

Plan Plan::Estimate(double rows) const {
  SM_PLAN_PASS_ERRORS();
  node_->set_estimated_rows(rows);
  return *this;
}

#undef SM_PLAN_PASS_ERRORS

// ---- helpers shared by the nodes ----------------------------------------------------------------

Status BindAll(const std::vector<Expr>& exprs, const RowSchema& schema,
               std::vector<std::unique_ptr<BoundExpr>>* out) {
  out->clear();
  for (const Expr& e : exprs) {
    std::unique_ptr<BoundExpr> bound;
    SM_TRY(Bind(e, schema, &bound));
    out->push_back(std::move(bound));
  }
  return Status::OK();
}

Status ResolveSortKeys(const std::vector<SortKey>& keys, const RowSchema& schema,
                       std::vector<ResolvedSortKey>* out) {
  if (keys.empty()) return Status::InvalidArgument("a sort needs at least one key");
  out->clear();
  for (const SortKey& k : keys) {
    size_t index = 0;
    SM_TRY(schema.Resolve(k.column, &index));
    out->push_back(ResolvedSortKey{index, schema[index].type, k.descending});
  }
  return Status::OK();
}

int CompareTuples(const Value* a, const Value* b, const std::vector<ResolvedSortKey>& keys) {
  for (const ResolvedSortKey& k : keys) {
    const Value& x = a[k.column];
    const Value& y = b[k.column];
    int c;
    if (x.null || y.null) {
      c = x.null == y.null ? 0 : (x.null ? -1 : 1);
    } else {
      c = CompareValues(x, y, k.type);
    }
    if (c != 0) return k.descending ? -c : c;
  }
  return 0;
}

Status EvaluateScalar(const PlanNode& plan, ExecContext* ctx, Value* value, std::string* storage) {
  SM_ASSERT(plan.schema().size() == 1);
  std::unique_ptr<Operator> op;
  SM_TRY(plan.Instantiate(&op));
  Status s = op->Open(ctx);
  const Value* row = nullptr;
  if (s.ok()) s = op->Next(&row);
  if (s.ok() && row != nullptr) {
    *value = row[0];
    if (!value->null && plan.schema()[0].type == Type::kString) {
      storage->assign(value->str());
      *value = Value::String(*storage);
    }
    const Value* extra = nullptr;
    s = op->Next(&extra);
    if (s.ok() && extra != nullptr) {
      s = Status::InvalidArgument("a scalar subquery returned more than one row");
    }
  } else if (s.ok()) {
    *value = Value::Null();
  }
  ctx->subquery_rows_read += op->TreeRowsRead();
  op->Close();
  return s;
}

// ---- EXPLAIN ------------------------------------------------------------------------------------

namespace {

std::string Rows(double rows) {
  if (rows < 0) return "?";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", rows);
  return buf;
}

void ExplainNode(const PlanNode& node, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += node.name();
  std::string detail = node.Detail();
  if (!detail.empty()) *out += " " + detail;
  *out += "  (est. rows " + Rows(node.estimated_rows()) + ")\n";
  for (const auto& child : node.children()) ExplainNode(*child, depth + 1, out);
}

void ExplainOperator(const Operator& op, bool analyzed, int depth, std::string* out) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += op.name();
  std::string detail = op.detail();
  if (!detail.empty()) *out += " " + detail;
  *out += "  (est. rows " + Rows(op.estimated_rows());
  if (!op.refinement().empty()) *out += "; " + op.refinement();
  if (analyzed) {
    uint64_t children_nanos = 0;
    for (const auto& c : op.children()) children_nanos += c->stats().nanos;
    uint64_t self = op.stats().nanos > children_nanos ? op.stats().nanos - children_nanos : 0;
    char buf[128];
    std::snprintf(buf, sizeof(buf), "; rows %" PRIu64 ", %.3f ms, self %.3f ms", op.stats().rows,
                  static_cast<double>(op.stats().nanos) / 1e6, static_cast<double>(self) / 1e6);
    *out += buf;
  }
  *out += ")\n";
  for (const auto& child : op.children()) ExplainOperator(*child, analyzed, depth + 1, out);
}

}  // namespace

std::string Plan::Explain() const {
  if (Status s = status(); !s.ok()) return "invalid plan: " + s.ToString() + "\n";
  std::string out;
  ExplainNode(*node_, 0, &out);
  return out;
}

std::string ExplainOperators(const Operator& root, bool analyzed) {
  std::string out;
  ExplainOperator(root, analyzed, 0, &out);
  return out;
}

}  // namespace sm::query
