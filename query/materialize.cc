// Materialize: a subquery or view computed once per query execution and read by every place of
// the plan that uses it (CH's Q15 reads its revenue view twice: once for the maximum, once to
// join it).
//
// Owns: MaterializeNode, MaterializeOperator and the shared rows they keep in the execution
// context (ExecContext::shared, keyed by the node).
//
// The first operator of the node to open runs the child plan to its end and stores its rows;
// later ones (in the same execution) read the stored rows and never open their own child.
// Tuple lifetime: the rows live as long as the execution context (kUnboundedWindow).
#include <memory>

#include "query/nodes.h"
#include "query/parallel.h"
#include "query/row_store.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

struct MaterializedRows {
  RowStore rows;
};

class MaterializeOperator final : public Operator {
 public:
  MaterializeOperator(RowSchema schema, const PlanNode* key, NodePtr input_node)
      : Operator("Materialize", std::move(schema)), key_(key), input_node_(std::move(input_node)) {}
  bool blocking() const override { return true; }
  uint32_t window() const override { return kUnboundedWindow; }
  std::string detail() const override {
    if (!computed_here_) return "(shared)";
    return parts_ <= 1 ? "" : std::to_string(parts_) + " parts in parallel";
  }
  void OutputModules(std::vector<std::string>* out) const override {
    out->push_back("materialize.output");
  }
  void InputModules(size_t, std::vector<std::string>* out) const override {
    out->push_back("materialize");
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    next_ = 0;
    auto it = ctx->shared.find(key_);
    if (it != ctx->shared.end()) {
      rows_ = std::static_pointer_cast<MaterializedRows>(it->second);
      return Status::OK();
    }
    auto rows = std::make_shared<MaterializedRows>();
    rows->rows.Reset(schema().size());
    computed_here_ = true;
    SM_TRY(CollectPipeline(ctx, *input_node_, child(0), &rows->rows, &parts_));
    ctx->shared[key_] = rows;
    rows_ = std::move(rows);
    return Status::OK();
  }
  Status NextImpl(const Value** row) override {
    *row = next_ < rows_->rows.size() ? rows_->rows.row(next_++) : nullptr;
    return Status::OK();
  }
  void CloseImpl() override { rows_.reset(); }

 private:
  const PlanNode* key_;
  NodePtr input_node_;  // the child's plan node, for the parts of a parallel input
  size_t parts_ = 0;    // of the last execution (EXPLAIN)
  std::shared_ptr<MaterializedRows> rows_;
  size_t next_ = 0;
  bool computed_here_ = false;
};

class MaterializeNode final : public PlanNode {
 public:
  explicit MaterializeNode(NodePtr child) : PlanNode("Materialize", Status::OK()) {
    set_schema(child->schema());
    set_estimated_rows(child->estimated_rows());
    AddChild(std::move(child));
  }

 private:
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    auto op = std::make_unique<MaterializeOperator>(schema(), this, children()[0]);
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
};

}  // namespace

NodePtr MakeMaterializeNode(NodePtr child) {
  return std::make_shared<MaterializeNode>(std::move(child));
}

}  // namespace sm::query
