// Bound expressions: an Expr whose column names are resolved to positions in an operator's
// input row and whose types are checked, ready to evaluate once per tuple. Internal to the
// query layer; plans bind every expression they hold when they are built.
//
// Owns: BoundExpr (the evaluator interface), Bind (name resolution and the type rules of
// expr.h) and the evaluator classes (in expr_bind.cc).
//
// Invariants:
//   1. Eval returns a Value of type(); strings it returns point into the row it was given or
//      into the bound expression itself (a literal), so they live as long as both.
//   2. Test(row) == (!Eval(row).null && Eval(row).i != 0) for a kBool expression; evaluators
//      override it only to skip building the Value.
//   3. Prepare runs before the first Eval of a query execution and may run again for the next
//      execution; only scalar subqueries do work there.
//
// Thread/fiber safety: Eval and Test are const and touch no shared state, so one bound
// expression may serve several threads once prepared; Prepare is not concurrent with them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "query/expr.h"
#include "query/schema.h"
#include "query/value.h"
#include "sm/common/status.h"

namespace sm::query {

struct ExecContext;

class BoundExpr {
 public:
  explicit BoundExpr(Type type) : type_(type) {}
  virtual ~BoundExpr() = default;
  BoundExpr(const BoundExpr&) = delete;
  BoundExpr& operator=(const BoundExpr&) = delete;

  Type type() const { return type_; }
  virtual Value Eval(const Value* row) const = 0;
  virtual bool Test(const Value* row) const {
    Value v = Eval(row);
    return !v.null && v.i != 0;
  }
  // Prepares the children, then this node.
  [[nodiscard]] Status Prepare(ExecContext* ctx);
  // Tells the children, then this node, that the tree is bound (Bind calls it).
  void FinishBinding() {
    for (auto& child : children_) child->FinishBinding();
    Bound();
  }
  // The input column this expression is, or -1 if it is not a plain column reference.
  virtual int column() const { return -1; }
  // The value this expression always has (it lives as long as the node), or null if it is not
  // a literal.
  virtual const Value* constant() const { return nullptr; }

  std::vector<std::unique_ptr<BoundExpr>>& children() { return children_; }

 protected:
  virtual Status PrepareSelf(ExecContext*) { return Status::OK(); }
  // The node's children are final.
  virtual void Bound() {}
  std::vector<std::unique_ptr<BoundExpr>> children_;

 private:
  Type type_;
};

// Resolves `expr` against `input` and checks its types; InvalidArgument naming the expression
// and what is wrong.
[[nodiscard]] Status Bind(const Expr& expr, const RowSchema& input,
                          std::unique_ptr<BoundExpr>* out);
// Bind, and also requires the result to be of type kBool (a predicate).
[[nodiscard]] Status BindPredicate(const Expr& expr, const RowSchema& input,
                                   std::unique_ptr<BoundExpr>* out);

// Three-way comparison of two non-NULL values of one type (strings bytewise, then by length).
int CompareValues(const Value& a, const Value& b, Type type);

}  // namespace sm::query
