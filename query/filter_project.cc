// The tuple-at-a-time operators that need no state beyond one tuple: Filter, Project and Limit.
//
// Owns: their plan nodes and operators.
//
// Tuple lifetime (operator.h): Limit passes its child's tuples through and forwards a window
// request to it; Filter, which drops tuples, keeps copies of those it returns when its window
// is above 1; Project builds tuples in a TupleRing, owning their string bytes when its window
// is above 1.
#include <memory>

#include "query/expr_eval.h"
#include "query/nodes.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

std::string JoinNames(const std::vector<NamedExpr>& columns) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) out += ", ";
    out += columns[i].expr.ToString();
    if (columns[i].name != columns[i].expr.DefaultName()) out += " AS " + columns[i].name;
  }
  return out;
}

// ---- Filter -------------------------------------------------------------------------------------

class FilterOperator final : public Operator {
 public:
  FilterOperator(RowSchema schema, const Expr& predicate)
      : Operator("Filter", std::move(schema)), predicate_expr_(predicate) {}
  InputOrder input_order(size_t) const override { return InputOrder::kPassedOn; }
  std::string detail() const override { return predicate_expr_.ToString(); }
  void OutputModules(std::vector<std::string>* out) const override { out->push_back("filter"); }
  Operator* streamed_input() const override { return child(0); }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(BindPredicate(predicate_expr_, child(0)->schema(), &predicate_));
    SM_TRY(predicate_->Prepare(ctx));
    ring_.Init(schema().size(), requested_window());
    return OpenChildren(ctx);
  }
  Status NextImpl(const Value** row) override {
    for (;;) {
      const Value* in = nullptr;
      SM_TRY(child(0)->Next(&in));
      if (in == nullptr || predicate_->Test(in)) {
        *row = in == nullptr ? nullptr : ring_.Keep(in);
        return Status::OK();
      }
    }
  }

 private:
  Expr predicate_expr_;
  std::unique_ptr<BoundExpr> predicate_;
  TupleRing ring_;
};

class FilterNode final : public PlanNode {
 public:
  FilterNode(NodePtr child, const Expr& predicate)
      : PlanNode("Filter", Status::OK()), predicate_(predicate) {
    set_schema(child->schema());
    std::unique_ptr<BoundExpr> bound;
    set_status(BindPredicate(predicate, child->schema(), &bound));
    set_estimated_rows(child->estimated_rows() < 0 ? -1 : child->estimated_rows() / 2);
    AddChild(std::move(child));
  }
  std::string Detail() const override { return predicate_.ToString(); }

 private:
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    auto op = std::make_unique<FilterOperator>(schema(), predicate_);
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
  Expr predicate_;
};

// ---- Project ------------------------------------------------------------------------------------

class ProjectOperator final : public Operator {
 public:
  ProjectOperator(RowSchema schema, std::vector<NamedExpr> columns)
      : Operator("Project", std::move(schema)), columns_(std::move(columns)) {}
  InputOrder input_order(size_t) const override { return InputOrder::kPassedOn; }
  std::string detail() const override { return JoinNames(columns_); }
  void OutputModules(std::vector<std::string>* out) const override { out->push_back("project"); }
  Operator* streamed_input() const override { return child(0); }
  int streamed_column(size_t) const override { return -1; }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    exprs_.clear();
    for (const NamedExpr& c : columns_) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(Bind(c.expr, child(0)->schema(), &bound));
      SM_TRY(bound->Prepare(ctx));
      exprs_.push_back(std::move(bound));
    }
    ring_.Init(exprs_.size(), requested_window());
    return OpenChildren(ctx);
  }
  Status NextImpl(const Value** row) override {
    const Value* in = nullptr;
    SM_TRY(child(0)->Next(&in));
    if (in == nullptr) {
      *row = nullptr;
      return Status::OK();
    }
    Value* out = ring_.Advance();
    for (size_t i = 0; i < exprs_.size(); ++i) out[i] = exprs_[i]->Eval(in);
    ring_.Own(out);
    *row = out;
    return Status::OK();
  }

 private:
  std::vector<NamedExpr> columns_;
  std::vector<std::unique_ptr<BoundExpr>> exprs_;
  TupleRing ring_;
};

class ProjectNode final : public PlanNode {
 public:
  ProjectNode(NodePtr child, std::vector<NamedExpr> columns)
      : PlanNode("Project", Status::OK()), columns_(std::move(columns)) {
    set_status(Check(child->schema()));
    set_estimated_rows(child->estimated_rows());
    AddChild(std::move(child));
  }
  std::string Detail() const override { return JoinNames(columns_); }

 private:
  Status Check(const RowSchema& input) {
    if (columns_.empty()) return Status::InvalidArgument("a projection needs a column");
    RowSchema schema;
    for (const NamedExpr& c : columns_) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(Bind(c.expr, input, &bound));
      schema.Append({c.name, bound->type()});
    }
    set_schema(std::move(schema));
    return Status::OK();
  }
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    auto op = std::make_unique<ProjectOperator>(schema(), columns_);
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
  std::vector<NamedExpr> columns_;
};

// ---- Limit --------------------------------------------------------------------------------------

class LimitOperator final : public Operator {
 public:
  LimitOperator(RowSchema schema, uint64_t limit)
      : Operator("Limit", std::move(schema)), limit_(limit) {}
  InputOrder input_order(size_t) const override { return InputOrder::kPassedOn; }
  std::string detail() const override { return std::to_string(limit_); }
  void OutputModules(std::vector<std::string>* out) const override { out->push_back("limit"); }
  uint32_t window() const override { return child(0)->window(); }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    returned_ = 0;
    child(0)->RequestWindow(requested_window());
    return OpenChildren(ctx);
  }
  Status NextImpl(const Value** row) override {
    *row = nullptr;
    if (returned_ >= limit_) return Status::OK();
    SM_TRY(child(0)->Next(row));
    if (*row != nullptr) ++returned_;
    return Status::OK();
  }

 private:
  uint64_t limit_;
  uint64_t returned_ = 0;
};

class LimitNode final : public PlanNode {
 public:
  LimitNode(NodePtr child, uint64_t limit) : PlanNode("Limit", Status::OK()), limit_(limit) {
    set_schema(child->schema());
    double in = child->estimated_rows();
    set_estimated_rows(in < 0 ? static_cast<double>(limit) : std::min(in, double(limit)));
    AddChild(std::move(child));
  }
  std::string Detail() const override { return std::to_string(limit_); }

 private:
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    auto op = std::make_unique<LimitOperator>(schema(), limit_);
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
  uint64_t limit_;
};

}  // namespace

NodePtr MakeFilterNode(NodePtr child, const Expr& predicate) {
  if (NodePtr fused = FuseFilterIntoScan(child, predicate)) return fused;
  return std::make_shared<FilterNode>(std::move(child), predicate);
}

NodePtr MakeProjectNode(NodePtr child, std::vector<NamedExpr> columns) {
  return std::make_shared<ProjectNode>(std::move(child), std::move(columns));
}

NodePtr MakeLimitNode(NodePtr child, uint64_t n) {
  return std::make_shared<LimitNode>(std::move(child), n);
}

}  // namespace sm::query
