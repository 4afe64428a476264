// Expression builders and their text form (contract in expr.h).
#include "query/expr.h"

#include "query/expr_node.h"
#include "query/plan.h"
#include "sm/common/assert.h"

namespace sm::query {

const char* ArithOpText(ArithOp op) {
  switch (op) {
    case ArithOp::kAdd:
      return "+";
    case ArithOp::kSub:
      return "-";
    case ArithOp::kMul:
      return "*";
    case ArithOp::kDiv:
      return "/";
    case ArithOp::kMod:
      return "%";
  }
  return "?";
}

const char* CompareOpText(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "=";
    case CompareOp::kNe:
      return "<>";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "?";
}

const char* FuncName(Func func) {
  switch (func) {
    case Func::kSubstr:
      return "substr";
    case Func::kAscii:
      return "ascii";
    case Func::kYear:
      return "year";
    case Func::kAddDays:
      return "add_days";
    case Func::kAddMonths:
      return "add_months";
    case Func::kToDouble:
      return "to_double";
  }
  return "?";
}

namespace {

Expr Make(ExprNode node) { return Expr(std::make_shared<const ExprNode>(std::move(node))); }

Expr Literal(Type type, Value v) {
  ExprNode n;
  n.kind = ExprKind::kLiteral;
  n.literal_type = type;
  n.literal = v;
  return Make(std::move(n));
}

Expr Binary(ExprKind kind, const Expr& a, const Expr& b) {
  ExprNode n;
  n.kind = kind;
  n.args = {a, b};
  return Make(std::move(n));
}

Expr Arith(ArithOp op, const Expr& a, const Expr& b) {
  ExprNode n;
  n.kind = ExprKind::kArith;
  n.arith = op;
  n.args = {a, b};
  return Make(std::move(n));
}

Expr Compare(CompareOp op, const Expr& a, const Expr& b) {
  ExprNode n;
  n.kind = ExprKind::kCompare;
  n.compare = op;
  n.args = {a, b};
  return Make(std::move(n));
}

Expr Unary(ExprKind kind, const Expr& a, bool negated = false) {
  ExprNode n;
  n.kind = kind;
  n.negated = negated;
  n.args = {a};
  return Make(std::move(n));
}

Expr Function(Func func, const Expr& a, int64_t arg1 = 0, int64_t arg2 = 0) {
  ExprNode n;
  n.kind = ExprKind::kFunc;
  n.func = func;
  n.arg1 = arg1;
  n.arg2 = arg2;
  n.args = {a};
  return Make(std::move(n));
}

Expr Nary(ExprKind kind, std::initializer_list<Expr> terms) {
  ExprNode n;
  n.kind = kind;
  n.args.assign(terms.begin(), terms.end());
  return Make(std::move(n));
}

std::string QuoteString(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string LiteralText(const ExprNode& n) {
  if (n.literal_malformed) return "DATE " + QuoteString(n.text);
  if (n.literal.null) return "NULL";
  switch (n.literal_type) {
    case Type::kString:
      return QuoteString(n.literal.str());
    case Type::kDate:
      return "DATE '" + FormatTimestamp(n.literal.i) + "'";
    case Type::kMoney:
      return "MONEY " + FormatMoney(n.literal.i);
    default:
      return FormatValue(n.literal, n.literal_type);
  }
}

std::string JoinArgs(const std::vector<Expr>& args, size_t from, const char* separator) {
  std::string out;
  for (size_t i = from; i < args.size(); ++i) {
    if (i > from) out += separator;
    out += args[i].ToString();
  }
  return out;
}

std::string FuncText(const ExprNode& n) {
  std::string arg = n.args[0].ToString();
  switch (n.func) {
    case Func::kSubstr:
      return "substr(" + arg + ", " + std::to_string(n.arg1) + ", " + std::to_string(n.arg2) + ")";
    case Func::kAddDays:
    case Func::kAddMonths:
      return std::string(FuncName(n.func)) + "(" + arg + ", " + std::to_string(n.arg1) + ")";
    default:
      return std::string(FuncName(n.func)) + "(" + arg + ")";
  }
}

}  // namespace

Expr::Expr(int v) : Expr(Int(v)) {}
Expr::Expr(int64_t v) : Expr(Int(v)) {}
Expr::Expr(double v) : Expr(Double(v)) {}

std::string Expr::ToString() const {
  if (!node_) return "<none>";
  const ExprNode& n = *node_;
  switch (n.kind) {
    case ExprKind::kColumn:
      return n.text;
    case ExprKind::kLiteral:
      return LiteralText(n);
    case ExprKind::kArith:
      return "(" + n.args[0].ToString() + " " + ArithOpText(n.arith) + " " + n.args[1].ToString() +
             ")";
    case ExprKind::kNegate:
      return "-" + n.args[0].ToString();
    case ExprKind::kCompare:
      return "(" + n.args[0].ToString() + " " + CompareOpText(n.compare) + " " +
             n.args[1].ToString() + ")";
    case ExprKind::kAnd:
      return "(" + JoinArgs(n.args, 0, " AND ") + ")";
    case ExprKind::kOr:
      return "(" + JoinArgs(n.args, 0, " OR ") + ")";
    case ExprKind::kNot:
      return "NOT " + n.args[0].ToString();
    case ExprKind::kIn:
      return n.args[0].ToString() + (n.negated ? " NOT IN (" : " IN (") +
             JoinArgs(n.args, 1, ", ") + ")";
    case ExprKind::kLike:
      return n.args[0].ToString() + (n.negated ? " NOT LIKE " : " LIKE ") + QuoteString(n.text);
    case ExprKind::kIsNull:
      return n.args[0].ToString() + (n.negated ? " IS NOT NULL" : " IS NULL");
    case ExprKind::kCase: {
      std::string out = "CASE";
      for (size_t i = 0; i + 1 < n.args.size(); i += 2) {
        out += " WHEN " + n.args[i].ToString() + " THEN " + n.args[i + 1].ToString();
      }
      return out + " ELSE " + n.args.back().ToString() + " END";
    }
    case ExprKind::kFunc:
      return FuncText(n);
    case ExprKind::kScalar:
      return "(subquery)";
  }
  return "?";
}

std::string Expr::DefaultName() const {
  if (node_ && node_->kind == ExprKind::kColumn) return node_->text;
  return ToString();
}

Expr Col(std::string_view name) {
  ExprNode n;
  n.kind = ExprKind::kColumn;
  n.text = std::string(name);
  return Make(std::move(n));
}

Expr Int(int64_t v) { return Literal(Type::kInt, Value::Int(v)); }
Expr Double(double v) { return Literal(Type::kDouble, Value::Double(v)); }
Expr Money(int64_t cents) { return Literal(Type::kMoney, Value::Int(cents)); }
Expr Bool(bool v) { return Literal(Type::kBool, Value::Int(v ? 1 : 0)); }
Expr DateMicros(int64_t micros) { return Literal(Type::kDate, Value::Int(micros)); }
Expr Null(Type type) { return Literal(type, Value::Null()); }

Expr Str(std::string_view v) {
  // The literal's Value points into the node's own copy of the bytes.
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::kLiteral;
  n->literal_type = Type::kString;
  n->text = std::string(v);
  n->literal = Value::String(n->text);
  return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
}

Expr Date(std::string_view text) {
  int64_t micros = 0;
  if (ParseTimestamp(text, &micros)) return DateMicros(micros);
  ExprNode n;
  n.kind = ExprKind::kLiteral;
  n.literal_type = Type::kDate;
  n.literal_malformed = true;
  n.text = std::string(text);
  return Make(std::move(n));
}

Expr Scalar(std::shared_ptr<PlanNode> plan) {
  ExprNode n;
  n.kind = ExprKind::kScalar;
  n.subquery = std::move(plan);
  return Make(std::move(n));
}

Expr operator+(const Expr& a, const Expr& b) { return Arith(ArithOp::kAdd, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return Arith(ArithOp::kSub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return Arith(ArithOp::kMul, a, b); }
Expr operator/(const Expr& a, const Expr& b) { return Arith(ArithOp::kDiv, a, b); }
Expr operator%(const Expr& a, const Expr& b) { return Arith(ArithOp::kMod, a, b); }
Expr operator-(const Expr& a) { return Unary(ExprKind::kNegate, a); }
Expr operator==(const Expr& a, const Expr& b) { return Compare(CompareOp::kEq, a, b); }
Expr operator!=(const Expr& a, const Expr& b) { return Compare(CompareOp::kNe, a, b); }
Expr operator<(const Expr& a, const Expr& b) { return Compare(CompareOp::kLt, a, b); }
Expr operator<=(const Expr& a, const Expr& b) { return Compare(CompareOp::kLe, a, b); }
Expr operator>(const Expr& a, const Expr& b) { return Compare(CompareOp::kGt, a, b); }
Expr operator>=(const Expr& a, const Expr& b) { return Compare(CompareOp::kGe, a, b); }
Expr And(const Expr& a, const Expr& b) { return Binary(ExprKind::kAnd, a, b); }
Expr And(std::initializer_list<Expr> terms) { return Nary(ExprKind::kAnd, terms); }
Expr Or(const Expr& a, const Expr& b) { return Binary(ExprKind::kOr, a, b); }
Expr Or(std::initializer_list<Expr> terms) { return Nary(ExprKind::kOr, terms); }
Expr Not(const Expr& a) { return Unary(ExprKind::kNot, a); }
Expr operator&&(const Expr& a, const Expr& b) { return And(a, b); }
Expr operator||(const Expr& a, const Expr& b) { return Or(a, b); }
Expr operator!(const Expr& a) { return Not(a); }

Expr Between(const Expr& e, const Expr& low, const Expr& high) { return And(low <= e, e <= high); }

Expr In(const Expr& e, std::vector<Expr> values) {
  ExprNode n;
  n.kind = ExprKind::kIn;
  n.args.push_back(e);
  for (Expr& v : values) n.args.push_back(std::move(v));
  return Make(std::move(n));
}

Expr NotIn(const Expr& e, std::vector<Expr> values) {
  Expr in = In(e, std::move(values));
  ExprNode n = in.node();
  n.negated = true;
  return Make(std::move(n));
}

Expr Like(const Expr& e, std::string_view pattern) {
  ExprNode n;
  n.kind = ExprKind::kLike;
  n.text = std::string(pattern);
  n.args = {e};
  return Make(std::move(n));
}

Expr NotLike(const Expr& e, std::string_view pattern) {
  ExprNode n = Like(e, pattern).node();
  n.negated = true;
  return Make(std::move(n));
}

Expr IsNull(const Expr& e) { return Unary(ExprKind::kIsNull, e); }
Expr IsNotNull(const Expr& e) { return Unary(ExprKind::kIsNull, e, true); }

Expr Case(std::vector<std::pair<Expr, Expr>> when_then, const Expr& otherwise) {
  ExprNode n;
  n.kind = ExprKind::kCase;
  for (auto& [when, then] : when_then) {
    n.args.push_back(std::move(when));
    n.args.push_back(std::move(then));
  }
  n.args.push_back(otherwise);
  return Make(std::move(n));
}

Expr Substr(const Expr& e, int start, int length) {
  return Function(Func::kSubstr, e, start, length);
}
Expr Ascii(const Expr& e) { return Function(Func::kAscii, e); }
Expr Year(const Expr& e) { return Function(Func::kYear, e); }
Expr AddDays(const Expr& date, int days) { return Function(Func::kAddDays, date, days); }
Expr AddMonths(const Expr& date, int months) { return Function(Func::kAddMonths, date, months); }
Expr ToDouble(const Expr& e) { return Function(Func::kToDouble, e); }

}  // namespace sm::query
