// The node an Expr handle shares: the unbound form of an expression, as the builders of expr.h
// make it. Internal to the query layer.
//
// Invariants:
//   1. A node is immutable once built; children are shared, never copied.
//   2. `args` holds the operands in order: two for kArith and kCompare, one for kNegate, kNot,
//      kIsNull, kLike and kFunc, any number for kAnd and kOr, the tested operand first and then
//      the literals for kIn, and when/then pairs followed by the ELSE value for kCase.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "query/expr.h"
#include "query/value.h"

namespace sm::query {

enum class ExprKind : uint8_t {
  kColumn,
  kLiteral,
  kArith,
  kNegate,
  kCompare,
  kAnd,
  kOr,
  kNot,
  kIn,
  kLike,
  kIsNull,
  kCase,
  kFunc,
  kScalar,
};
enum class ArithOp : uint8_t { kAdd, kSub, kMul, kDiv, kMod };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
enum class Func : uint8_t { kSubstr, kAscii, kYear, kAddDays, kAddMonths, kToDouble };

const char* ArithOpText(ArithOp op);
const char* CompareOpText(CompareOp op);
const char* FuncName(Func func);

struct ExprNode {
  ExprKind kind = ExprKind::kLiteral;
  // kColumn: the column's name; kLike: the pattern; kLiteral of kString: the bytes (the
  // literal's Value points here); kLiteral of kDate: the text, when it failed to parse.
  std::string text;
  Type literal_type = Type::kInt;
  Value literal;
  bool literal_malformed = false;  // a date literal whose text does not parse
  ArithOp arith = ArithOp::kAdd;
  CompareOp compare = CompareOp::kEq;
  Func func = Func::kAscii;
  bool negated = false;        // NOT IN, NOT LIKE, IS NOT NULL
  int64_t arg1 = 0, arg2 = 0;  // kFunc: substring start and length, days, months
  std::vector<Expr> args;
  std::shared_ptr<PlanNode> subquery;  // kScalar
};

}  // namespace sm::query
