// Expressions: the trees a plan's filters, projections, join conditions and aggregates are
// written in, and their binding to an operator's input columns.
//
// Owns: Expr (an immutable, shared expression tree built with the functions below) and the
// type rules that Bind applies. The evaluators Bind produces live in expr_eval.h.
//
// Writing an expression: Col("ol_amount") * 2 > Money(10000), And(Col("a") >= 1, Col("a") <= 9),
// Like(Col("i_data"), "%b"), Case({{Col("x") == 1, Int(1)}}, Int(0)). Integer and double C++
// literals convert to Int and Double literals where an Expr is expected.
//
// Type rules (checked when a plan binds an expression, so a malformed plan fails with
// InvalidArgument before it runs, never with a wrong answer):
//   - arithmetic: int op int -> int (division truncates; x / 0 and x % 0 are NULL); double with
//     int or double -> double; money +/- money -> money; money * int or int * money -> money;
//     money / int, money / money and money * double -> double (in currency units, not cents);
//     date - date -> int (microseconds). Anything else is a type mismatch.
//   - comparisons: operands of one type, or int with double (compared as doubles).
//   - AND / OR / NOT take bools; SQL's three-valued logic applies (NULL AND false is false).
//   - a NULL operand makes arithmetic and comparisons NULL; a filter keeps only true rows.
//   - CASE branches must share one type (an int literal branch adopts a money branch's type).
//
// Thread/fiber safety: an Expr is immutable and may be shared by plans and threads.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "query/value.h"

namespace sm::query {

struct ExprNode;
class PlanNode;

class Expr {
 public:
  Expr() = default;
  Expr(int v);      // NOLINT: implicit, so that Col("a") > 5 reads naturally
  Expr(int64_t v);  // NOLINT
  Expr(double v);   // NOLINT
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool valid() const { return node_ != nullptr; }
  const ExprNode& node() const { return *node_; }
  const std::shared_ptr<const ExprNode>& shared() const { return node_; }
  // SQL-like text, for EXPLAIN and error messages.
  std::string ToString() const;
  // A name for the expression's result column: the column's own name for a column reference.
  std::string DefaultName() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

// ---- leaves -------------------------------------------------------------------------------------
Expr Col(std::string_view name);
Expr Int(int64_t v);
Expr Double(double v);
Expr Money(int64_t cents);
Expr Str(std::string_view v);
Expr Bool(bool v);
// A timestamp literal: "YYYY-MM-DD[ HH:MM:SS[.ffffff]]". A malformed text makes the expression
// fail to bind (InvalidArgument naming the text).
Expr Date(std::string_view text);
Expr DateMicros(int64_t micros);
Expr Null(Type type);
// The single value of a plan that yields one row of one column, run once when the query opens
// (a scalar subquery): InvalidArgument if it yields another shape; NULL if it yields no row.
Expr Scalar(std::shared_ptr<PlanNode> plan);

// ---- operators ----------------------------------------------------------------------------------
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator%(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr And(const Expr& a, const Expr& b);
Expr And(std::initializer_list<Expr> terms);
Expr Or(const Expr& a, const Expr& b);
Expr Or(std::initializer_list<Expr> terms);
Expr Not(const Expr& a);
Expr operator&&(const Expr& a, const Expr& b);
Expr operator||(const Expr& a, const Expr& b);
Expr operator!(const Expr& a);

// ---- predicates and functions -------------------------------------------------------------------
Expr Between(const Expr& e, const Expr& low, const Expr& high);  // low <= e AND e <= high
// e IN (values): the values are literals of e's type.
Expr In(const Expr& e, std::vector<Expr> values);
Expr NotIn(const Expr& e, std::vector<Expr> values);
// SQL LIKE, case-sensitive: '%' matches any run of bytes, '_' any one byte.
Expr Like(const Expr& e, std::string_view pattern);
Expr NotLike(const Expr& e, std::string_view pattern);
Expr IsNull(const Expr& e);
Expr IsNotNull(const Expr& e);
// CASE WHEN c1 THEN v1 ... ELSE otherwise END
Expr Case(std::vector<std::pair<Expr, Expr>> when_then, const Expr& otherwise);
// SUBSTRING(e FROM start FOR length), start counted from 1; bytes, not characters.
Expr Substr(const Expr& e, int start, int length);
// The code of the first byte of a string (SQL ascii()); 0 for the empty string.
Expr Ascii(const Expr& e);
// EXTRACT(YEAR FROM e) of a date.
Expr Year(const Expr& e);
Expr AddDays(const Expr& date, int days);
Expr AddMonths(const Expr& date, int months);
// A number as a double (money in currency units: 1234 cents -> 12.34).
Expr ToDouble(const Expr& e);

}  // namespace sm::query
