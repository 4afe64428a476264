// Binding (name resolution and type rules) and the evaluators it builds (contract in
// expr_eval.h; the type rules are those of expr.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "query/expr_eval.h"
#include "query/expr_node.h"
#include "query/plan.h"
#include "sm/common/assert.h"

namespace sm::query {

Status BoundExpr::Prepare(ExecContext* ctx) {
  for (auto& child : children_) SM_TRY(child->Prepare(ctx));
  return PrepareSelf(ctx);
}

int CompareValues(const Value& a, const Value& b, Type type) {
  switch (type) {
    case Type::kDouble:
      return a.d < b.d ? -1 : (a.d > b.d ? 1 : 0);
    case Type::kString: {
      int c = std::memcmp(a.s, b.s, std::min(a.len, b.len));
      if (c != 0) return c < 0 ? -1 : 1;
      return a.len < b.len ? -1 : (a.len > b.len ? 1 : 0);
    }
    default:
      return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  }
}

namespace {

// ---- evaluators ---------------------------------------------------------------------------------

class ColumnRef final : public BoundExpr {
 public:
  ColumnRef(Type type, size_t index) : BoundExpr(type), index_(index) {}
  Value Eval(const Value* row) const override { return row[index_]; }
  bool Test(const Value* row) const override { return !row[index_].null && row[index_].i != 0; }
  int column() const override { return static_cast<int>(index_); }

 private:
  size_t index_;
};

class Constant final : public BoundExpr {
 public:
  Constant(Type type, Value v, std::string bytes = {})
      : BoundExpr(type), value_(v), bytes_(std::move(bytes)) {
    if (type == Type::kString && !value_.null) value_ = Value::String(bytes_);
  }
  Value Eval(const Value*) const override { return value_; }
  const Value* constant() const override { return &value_; }

 private:
  Value value_;
  std::string bytes_;
};

// The two operands of a binary node, read without a virtual call when they are columns or
// literals (most are). Resolved once the node's children are final (BoundExpr::Bound).
class BinaryOperands {
 public:
  void Resolve(const std::vector<std::unique_ptr<BoundExpr>>& children) {
    SM_ASSERT(children.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      expr_[i] = children[i].get();
      column_[i] = expr_[i]->column();
      const Value* literal = expr_[i]->constant();
      kind_[i] = column_[i] >= 0 ? Kind::kColumn : literal ? Kind::kLiteral : Kind::kExpr;
      if (literal != nullptr) literal_[i] = *literal;
    }
  }
  Value Get(size_t i, const Value* row) const {
    SM_DASSERT(expr_[i] != nullptr);  // the tree was bound
    switch (kind_[i]) {
      case Kind::kColumn:
        return row[column_[i]];
      case Kind::kLiteral:
        return literal_[i];
      case Kind::kExpr:
        break;
    }
    return expr_[i]->Eval(row);
  }

 private:
  enum class Kind : uint8_t { kExpr, kColumn, kLiteral };
  const BoundExpr* expr_[2] = {nullptr, nullptr};
  int column_[2] = {-1, -1};
  Kind kind_[2] = {Kind::kExpr, Kind::kExpr};
  Value literal_[2];
};

// How a numeric operand becomes a double.
enum class AsDouble : uint8_t { kAlready, kFromInt, kFromCents };

double ToDoubleAs(const Value& v, AsDouble as) {
  switch (as) {
    case AsDouble::kAlready:
      return v.d;
    case AsDouble::kFromInt:
      return static_cast<double>(v.i);
    case AsDouble::kFromCents:
      return static_cast<double>(v.i) / 100.0;
  }
  return 0;
}

bool CompareResult(CompareOp op, int c) {
  switch (op) {
    case CompareOp::kEq:
      return c == 0;
    case CompareOp::kNe:
      return c != 0;
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    case CompareOp::kGe:
      return c >= 0;
  }
  return false;
}

// Comparison of two operands of one type (or both made doubles).
class Comparison final : public BoundExpr {
 public:
  Comparison(CompareOp op, Type compared_as, AsDouble left, AsDouble right)
      : BoundExpr(Type::kBool), op_(op), type_(compared_as), left_(left), right_(right) {}
  Value Eval(const Value* row) const override {
    Value a = operands_.Get(0, row);
    Value b = operands_.Get(1, row);
    if (a.null || b.null) return Value::Null();
    return Value::Int(Decide(a, b) ? 1 : 0);
  }
  bool Test(const Value* row) const override {
    Value a = operands_.Get(0, row);
    Value b = operands_.Get(1, row);
    return !a.null && !b.null && Decide(a, b);
  }

 protected:
  void Bound() override { operands_.Resolve(children_); }

 private:
  BinaryOperands operands_;
  bool Decide(const Value& a, const Value& b) const {
    if (type_ == Type::kDouble) {
      double x = ToDoubleAs(a, left_), y = ToDoubleAs(b, right_);
      return CompareResult(op_, x < y ? -1 : (x > y ? 1 : 0));
    }
    return CompareResult(op_, CompareValues(a, b, type_));
  }
  CompareOp op_;
  Type type_;
  AsDouble left_, right_;
};

// An integral column compared with an integral constant: the filters of most scans.
template <CompareOp kOp>
class ColumnConstComparison final : public BoundExpr {
 public:
  ColumnConstComparison(size_t index, int64_t constant)
      : BoundExpr(Type::kBool), index_(index), constant_(constant) {}
  Value Eval(const Value* row) const override {
    if (row[index_].null) return Value::Null();
    return Value::Int(Decide(row[index_].i) ? 1 : 0);
  }
  bool Test(const Value* row) const override { return !row[index_].null && Decide(row[index_].i); }

 private:
  bool Decide(int64_t v) const {
    if constexpr (kOp == CompareOp::kEq) return v == constant_;
    if constexpr (kOp == CompareOp::kNe) return v != constant_;
    if constexpr (kOp == CompareOp::kLt) return v < constant_;
    if constexpr (kOp == CompareOp::kLe) return v <= constant_;
    if constexpr (kOp == CompareOp::kGt) return v > constant_;
    return v >= constant_;
  }
  size_t index_;
  int64_t constant_;
};

std::unique_ptr<BoundExpr> MakeColumnConst(CompareOp op, size_t index, int64_t constant) {
  switch (op) {
    case CompareOp::kEq:
      return std::make_unique<ColumnConstComparison<CompareOp::kEq>>(index, constant);
    case CompareOp::kNe:
      return std::make_unique<ColumnConstComparison<CompareOp::kNe>>(index, constant);
    case CompareOp::kLt:
      return std::make_unique<ColumnConstComparison<CompareOp::kLt>>(index, constant);
    case CompareOp::kLe:
      return std::make_unique<ColumnConstComparison<CompareOp::kLe>>(index, constant);
    case CompareOp::kGt:
      return std::make_unique<ColumnConstComparison<CompareOp::kGt>>(index, constant);
    case CompareOp::kGe:
      return std::make_unique<ColumnConstComparison<CompareOp::kGe>>(index, constant);
  }
  return nullptr;
}

class IntArithmetic final : public BoundExpr {
 public:
  IntArithmetic(Type type, ArithOp op) : BoundExpr(type), op_(op) {}
  Value Eval(const Value* row) const override {
    Value a = operands_.Get(0, row);
    Value b = operands_.Get(1, row);
    if (a.null || b.null) return Value::Null();
    switch (op_) {
      case ArithOp::kAdd:
        return Value::Int(a.i + b.i);
      case ArithOp::kSub:
        return Value::Int(a.i - b.i);
      case ArithOp::kMul:
        return Value::Int(a.i * b.i);
      case ArithOp::kDiv:
        return b.i == 0 ? Value::Null() : Value::Int(a.i / b.i);
      case ArithOp::kMod:
        return b.i == 0 ? Value::Null() : Value::Int(a.i % b.i);
    }
    return Value::Null();
  }

 protected:
  void Bound() override { operands_.Resolve(children_); }

 private:
  BinaryOperands operands_;
  ArithOp op_;
};

class DoubleArithmetic final : public BoundExpr {
 public:
  DoubleArithmetic(ArithOp op, AsDouble left, AsDouble right)
      : BoundExpr(Type::kDouble), op_(op), left_(left), right_(right) {}
  Value Eval(const Value* row) const override {
    Value a = operands_.Get(0, row);
    Value b = operands_.Get(1, row);
    if (a.null || b.null) return Value::Null();
    double x = ToDoubleAs(a, left_), y = ToDoubleAs(b, right_);
    switch (op_) {
      case ArithOp::kAdd:
        return Value::Double(x + y);
      case ArithOp::kSub:
        return Value::Double(x - y);
      case ArithOp::kMul:
        return Value::Double(x * y);
      case ArithOp::kDiv:
        return y == 0 ? Value::Null() : Value::Double(x / y);
      case ArithOp::kMod:
        return y == 0 ? Value::Null() : Value::Double(std::fmod(x, y));
    }
    return Value::Null();
  }

 protected:
  void Bound() override { operands_.Resolve(children_); }

 private:
  BinaryOperands operands_;
  ArithOp op_;
  AsDouble left_, right_;
};

class Negation final : public BoundExpr {
 public:
  explicit Negation(Type type) : BoundExpr(type) {}
  Value Eval(const Value* row) const override {
    Value v = children_[0]->Eval(row);
    if (v.null) return v;
    return type() == Type::kDouble ? Value::Double(-v.d) : Value::Int(-v.i);
  }
};

// AND / OR over any number of terms with SQL's three-valued logic.
class Conjunction final : public BoundExpr {
 public:
  explicit Conjunction(bool is_and) : BoundExpr(Type::kBool), and_(is_and) {}
  bool is_and() const { return and_; }
  Value Eval(const Value* row) const override {
    bool saw_null = false;
    for (const auto& term : children_) {
      Value v = term->Eval(row);
      if (v.null) {
        saw_null = true;
      } else if ((v.i != 0) != and_) {
        return Value::Int(and_ ? 0 : 1);  // decided: a false term of AND, a true one of OR
      }
    }
    return saw_null ? Value::Null() : Value::Int(and_ ? 1 : 0);
  }
  bool Test(const Value* row) const override {
    if (and_) {
      for (const auto& term : children_) {
        if (!term->Test(row)) return false;
      }
      return true;
    }
    for (const auto& term : children_) {
      if (term->Test(row)) return true;
    }
    return false;
  }

 private:
  bool and_;
};

class Negate final : public BoundExpr {
 public:
  Negate() : BoundExpr(Type::kBool) {}
  Value Eval(const Value* row) const override {
    Value v = children_[0]->Eval(row);
    return v.null ? v : Value::Int(v.i != 0 ? 0 : 1);
  }
};

class InList final : public BoundExpr {
 public:
  bool Contains(const Value& v) const {
    if (IsIntegral(type_)) {
      for (const Value& candidate : values_) {
        if (candidate.i == v.i) return true;
      }
      return false;
    }
    for (const Value& candidate : values_) {
      if (CompareValues(v, candidate, type_) == 0) return true;
    }
    return false;
  }
  InList(Type type, std::vector<Value> values, std::vector<std::string> bytes, bool negated)
      : BoundExpr(Type::kBool),
        type_(type),
        values_(std::move(values)),
        bytes_(std::move(bytes)),
        negated_(negated) {
    if (type_ == Type::kString) {
      for (size_t i = 0; i < values_.size(); ++i) values_[i] = Value::String(bytes_[i]);
    }
  }
  Value Eval(const Value* row) const override {
    Value v = children_[0]->Eval(row);
    if (v.null) return v;
    return Value::Int(Contains(v) != negated_ ? 1 : 0);
  }
  bool Test(const Value* row) const override {
    Value v = children_[0]->Eval(row);
    return !v.null && Contains(v) != negated_;
  }

 private:
  Type type_;
  std::vector<Value> values_;
  std::vector<std::string> bytes_;
  bool negated_;
};

// LIKE, with the patterns SQL queries mostly use (exact, 'p%', '%s', '%m%') matched directly.
class LikeMatch final : public BoundExpr {
 public:
  LikeMatch(std::string pattern, bool negated)
      : BoundExpr(Type::kBool), pattern_(std::move(pattern)), negated_(negated) {
    Classify();
  }
  Value Eval(const Value* row) const override {
    Value v = children_[0]->Eval(row);
    if (v.null) return v;
    return Value::Int(Matches(v.str()) != negated_ ? 1 : 0);
  }

 private:
  enum class Shape : uint8_t { kExact, kPrefix, kSuffix, kContains, kGeneral };
  void Classify() {
    std::string_view p = pattern_;
    if (p.find('_') != std::string_view::npos) return;  // kGeneral
    size_t percents = std::count(p.begin(), p.end(), '%');
    if (percents == 0) {
      shape_ = Shape::kExact;
      literal_ = p;
    } else if (percents == 1 && p.back() == '%') {
      shape_ = Shape::kPrefix;
      literal_ = p.substr(0, p.size() - 1);
    } else if (percents == 1 && p.front() == '%') {
      shape_ = Shape::kSuffix;
      literal_ = p.substr(1);
    } else if (percents == 2 && p.size() >= 2 && p.front() == '%' && p.back() == '%') {
      shape_ = Shape::kContains;
      literal_ = p.substr(1, p.size() - 2);
    }
  }
  bool Matches(std::string_view s) const {
    switch (shape_) {
      case Shape::kExact:
        return s == literal_;
      case Shape::kPrefix:
        return s.substr(0, literal_.size()) == literal_;
      case Shape::kSuffix:
        return s.size() >= literal_.size() && s.substr(s.size() - literal_.size()) == literal_;
      case Shape::kContains:
        return s.find(literal_) != std::string_view::npos;
      case Shape::kGeneral:
        return General(s, pattern_);
    }
    return false;
  }
  // Backtracking over the last '%' seen: linear in practice, quadratic at worst.
  static bool General(std::string_view s, std::string_view p) {
    size_t si = 0, pi = 0, star = std::string_view::npos, mark = 0;
    while (si < s.size()) {
      if (pi < p.size() && (p[pi] == '_' || (p[pi] != '%' && p[pi] == s[si]))) {
        ++si;
        ++pi;
      } else if (pi < p.size() && p[pi] == '%') {
        star = pi++;
        mark = si;
      } else if (star != std::string_view::npos) {
        pi = star + 1;
        si = ++mark;
      } else {
        return false;
      }
    }
    while (pi < p.size() && p[pi] == '%') ++pi;
    return pi == p.size();
  }

  std::string pattern_;
  Shape shape_ = Shape::kGeneral;
  std::string_view literal_;  // into pattern_
  bool negated_;
};

class NullTest final : public BoundExpr {
 public:
  explicit NullTest(bool negated) : BoundExpr(Type::kBool), negated_(negated) {}
  Value Eval(const Value* row) const override {
    return Value::Int(children_[0]->Eval(row).null != negated_ ? 1 : 0);
  }

 private:
  bool negated_;
};

// CASE: children are when/then pairs, then the ELSE value.
class CaseWhen final : public BoundExpr {
 public:
  explicit CaseWhen(Type type) : BoundExpr(type) {}
  Value Eval(const Value* row) const override {
    size_t n = children_.size();
    for (size_t i = 0; i + 1 < n; i += 2) {
      if (children_[i]->Test(row)) return children_[i + 1]->Eval(row);
    }
    return children_[n - 1]->Eval(row);
  }
};

class Function final : public BoundExpr {
 public:
  Function(Type type, Func func, int64_t arg1, int64_t arg2, AsDouble as)
      : BoundExpr(type), func_(func), arg1_(arg1), arg2_(arg2), as_(as) {}
  Value Eval(const Value* row) const override {
    Value v = children_[0]->Eval(row);
    if (v.null) return v;
    switch (func_) {
      case Func::kSubstr:
        return Substring(v);
      case Func::kAscii:
        return Value::Int(v.len == 0 ? 0 : static_cast<uint8_t>(v.s[0]));
      case Func::kYear:
        return Value::Int(ToCivil(v.i).year);
      case Func::kAddDays:
        return Value::Int(v.i + arg1_ * kMicrosPerDay);
      case Func::kAddMonths:
        return Value::Int(AddMonths(v.i, static_cast<int>(arg1_)));
      case Func::kToDouble:
        return Value::Double(ToDoubleAs(v, as_));
    }
    return Value::Null();
  }

 private:
  // SQL SUBSTRING(s FROM start FOR length): the positions [start, start + length) of s, counted
  // from 1, clipped to s.
  Value Substring(const Value& v) const {
    int64_t from = std::max<int64_t>(arg1_, 1);
    int64_t to = std::min<int64_t>(arg1_ + arg2_, static_cast<int64_t>(v.len) + 1);
    if (to <= from) return Value::String(std::string_view(v.s, 0));
    return Value::String(std::string_view(v.s + from - 1, static_cast<size_t>(to - from)));
  }
  Func func_;
  int64_t arg1_, arg2_;
  AsDouble as_;
};

class ScalarSubquery final : public BoundExpr {
 public:
  ScalarSubquery(Type type, std::shared_ptr<PlanNode> plan)
      : BoundExpr(type), plan_(std::move(plan)) {}
  Value Eval(const Value*) const override { return value_; }

 private:
  Status PrepareSelf(ExecContext* ctx) override {
    return EvaluateScalar(*plan_, ctx, &value_, &bytes_);
  }
  std::shared_ptr<PlanNode> plan_;
  Value value_ = Value::Null();
  std::string bytes_;
};

// ---- the binder ---------------------------------------------------------------------------------

class Binder {
 public:
  explicit Binder(const RowSchema& input) : input_(input) {}
  Status Bind(const Expr& e, std::unique_ptr<BoundExpr>* out);

 private:
  Status Mismatch(const Expr& e, const std::string& what) {
    return Status::InvalidArgument("type mismatch in " + e.ToString() + ": " + what);
  }
  Status BindColumn(const ExprNode& n, std::unique_ptr<BoundExpr>* out);
  Status BindLiteral(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindChildren(const Expr& e, size_t from, std::vector<std::unique_ptr<BoundExpr>>* out);
  Status BindArith(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindCompare(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindLogic(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindIn(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindCase(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindFunc(const Expr& e, std::unique_ptr<BoundExpr>* out);
  Status BindScalar(const Expr& e, std::unique_ptr<BoundExpr>* out);

  const RowSchema& input_;
};

bool IsIntLiteral(const Expr& e) {
  return e.node().kind == ExprKind::kLiteral && e.node().literal_type == Type::kInt &&
         !e.node().literal.null;
}

// An int literal read as currency units in a money context: 200 -> 20000 cents.
std::unique_ptr<BoundExpr> CentsFromUnits(const Expr& literal) {
  return std::make_unique<Constant>(Type::kMoney, Value::Int(literal.node().literal.i * 100));
}

AsDouble AsDoubleOf(Type t) {
  if (t == Type::kDouble) return AsDouble::kAlready;
  return t == Type::kMoney ? AsDouble::kFromCents : AsDouble::kFromInt;
}

Status Binder::Bind(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  if (!e.valid()) return Status::InvalidArgument("an expression is missing");
  const ExprNode& n = e.node();
  switch (n.kind) {
    case ExprKind::kColumn:
      return BindColumn(n, out);
    case ExprKind::kLiteral:
      return BindLiteral(e, out);
    case ExprKind::kArith:
      return BindArith(e, out);
    case ExprKind::kCompare:
      return BindCompare(e, out);
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kNot:
      return BindLogic(e, out);
    case ExprKind::kIn:
      return BindIn(e, out);
    case ExprKind::kCase:
      return BindCase(e, out);
    case ExprKind::kFunc:
      return BindFunc(e, out);
    case ExprKind::kScalar:
      return BindScalar(e, out);
    case ExprKind::kNegate: {
      std::vector<std::unique_ptr<BoundExpr>> kids;
      SM_TRY(BindChildren(e, 0, &kids));
      Type t = kids[0]->type();
      if (!IsNumeric(t)) return Mismatch(e, std::string("cannot negate a ") + TypeName(t));
      *out = std::make_unique<Negation>(t);
      (*out)->children() = std::move(kids);
      return Status::OK();
    }
    case ExprKind::kLike: {
      std::vector<std::unique_ptr<BoundExpr>> kids;
      SM_TRY(BindChildren(e, 0, &kids));
      if (kids[0]->type() != Type::kString) return Mismatch(e, "LIKE needs a string");
      *out = std::make_unique<LikeMatch>(n.text, n.negated);
      (*out)->children() = std::move(kids);
      return Status::OK();
    }
    case ExprKind::kIsNull: {
      std::vector<std::unique_ptr<BoundExpr>> kids;
      SM_TRY(BindChildren(e, 0, &kids));
      *out = std::make_unique<NullTest>(n.negated);
      (*out)->children() = std::move(kids);
      return Status::OK();
    }
  }
  return Status::InvalidArgument("unknown expression kind in " + e.ToString());
}

Status Binder::BindColumn(const ExprNode& n, std::unique_ptr<BoundExpr>* out) {
  size_t index = 0;
  SM_TRY(input_.Resolve(n.text, &index));
  *out = std::make_unique<ColumnRef>(input_[index].type, index);
  return Status::OK();
}

Status Binder::BindLiteral(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  if (n.literal_malformed) {
    return Status::InvalidArgument("malformed date literal '" + n.text +
                                   "' (expected YYYY-MM-DD[ HH:MM:SS[.ffffff]])");
  }
  *out = std::make_unique<Constant>(n.literal_type, n.literal,
                                    n.literal_type == Type::kString ? n.text : std::string());
  return Status::OK();
}

Status Binder::BindChildren(const Expr& e, size_t from,
                            std::vector<std::unique_ptr<BoundExpr>>* out) {
  const auto& args = e.node().args;
  for (size_t i = from; i < args.size(); ++i) {
    std::unique_ptr<BoundExpr> child;
    SM_TRY(Bind(args[i], &child));
    out->push_back(std::move(child));
  }
  return Status::OK();
}

Status Binder::BindArith(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  std::vector<std::unique_ptr<BoundExpr>> kids;
  SM_TRY(BindChildren(e, 0, &kids));
  Type a = kids[0]->type(), b = kids[1]->type();
  ArithOp op = n.arith;
  bool additive = op == ArithOp::kAdd || op == ArithOp::kSub;
  // Money with an int literal in + and -: the literal is in currency units.
  if (additive && a == Type::kMoney && IsIntLiteral(n.args[1])) {
    kids[1] = CentsFromUnits(n.args[1]);
    b = Type::kMoney;
  } else if (additive && b == Type::kMoney && IsIntLiteral(n.args[0])) {
    kids[0] = CentsFromUnits(n.args[0]);
    a = Type::kMoney;
  }
  std::unique_ptr<BoundExpr> node;
  if (a == Type::kInt && b == Type::kInt) {
    node = std::make_unique<IntArithmetic>(Type::kInt, op);
  } else if (a == Type::kMoney && b == Type::kMoney && additive) {
    node = std::make_unique<IntArithmetic>(Type::kMoney, op);
  } else if (op == ArithOp::kMul &&
             ((a == Type::kMoney && b == Type::kInt) || (a == Type::kInt && b == Type::kMoney))) {
    node = std::make_unique<IntArithmetic>(Type::kMoney, op);
  } else if (a == Type::kDate && b == Type::kDate && op == ArithOp::kSub) {
    node = std::make_unique<IntArithmetic>(Type::kInt, op);
  } else if (IsNumeric(a) && IsNumeric(b) &&
             (a == Type::kDouble || b == Type::kDouble ||
              (op == ArithOp::kDiv && (a == Type::kMoney || b == Type::kMoney)))) {
    node = std::make_unique<DoubleArithmetic>(op, AsDoubleOf(a), AsDoubleOf(b));
  } else {
    return Mismatch(e, std::string(TypeName(a)) + " " + ArithOpText(op) + " " + TypeName(b));
  }
  node->children() = std::move(kids);
  *out = std::move(node);
  return Status::OK();
}

CompareOp Mirror(CompareOp op) {
  switch (op) {
    case CompareOp::kLt:
      return CompareOp::kGt;
    case CompareOp::kLe:
      return CompareOp::kGe;
    case CompareOp::kGt:
      return CompareOp::kLt;
    case CompareOp::kGe:
      return CompareOp::kLe;
    default:
      return op;
  }
}

Status Binder::BindCompare(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  if (n.args[0].node().kind == ExprKind::kLiteral && n.args[1].node().kind == ExprKind::kColumn) {
    // 1 <= x is x >= 1, which the column-with-constant evaluator takes.
    ExprNode mirrored = n;
    std::swap(mirrored.args[0], mirrored.args[1]);
    mirrored.compare = Mirror(n.compare);
    return BindCompare(Expr(std::make_shared<const ExprNode>(std::move(mirrored))), out);
  }
  std::vector<std::unique_ptr<BoundExpr>> kids;
  SM_TRY(BindChildren(e, 0, &kids));
  Type a = kids[0]->type(), b = kids[1]->type();
  if (a == Type::kMoney && IsIntLiteral(n.args[1])) {
    kids[1] = CentsFromUnits(n.args[1]);
    b = Type::kMoney;
  } else if (b == Type::kMoney && IsIntLiteral(n.args[0])) {
    kids[0] = CentsFromUnits(n.args[0]);
    a = Type::kMoney;
  }
  Type as = a;
  if (a != b) {
    if (!IsNumeric(a) || !IsNumeric(b) || (a != Type::kDouble && b != Type::kDouble)) {
      return Mismatch(e, std::string(TypeName(a)) + " compared with " + TypeName(b));
    }
    as = Type::kDouble;
  }
  // An integral column against a non-NULL constant gets the specialized evaluator.
  const ExprNode& right = n.args[1].node();
  bool column_const = as != Type::kDouble && as != Type::kString && kids[0]->column() >= 0 &&
                      right.kind == ExprKind::kLiteral && !right.literal.null;
  if (column_const) {
    Value constant = kids[1]->Eval(nullptr);
    *out = MakeColumnConst(n.compare, static_cast<size_t>(kids[0]->column()), constant.i);
    return Status::OK();
  }
  auto node = std::make_unique<Comparison>(n.compare, as, AsDoubleOf(a), AsDoubleOf(b));
  node->children() = std::move(kids);
  *out = std::move(node);
  return Status::OK();
}

Status Binder::BindLogic(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  std::vector<std::unique_ptr<BoundExpr>> kids;
  SM_TRY(BindChildren(e, 0, &kids));
  for (const auto& kid : kids) {
    if (kid->type() != Type::kBool) {
      return Mismatch(e, std::string("a ") + TypeName(kid->type()) + " where a bool is needed");
    }
  }
  if (kids.empty()) return Status::InvalidArgument("AND / OR needs at least one term");
  if (n.kind == ExprKind::kNot) {
    *out = std::make_unique<Negate>();
    (*out)->children() = std::move(kids);
    return Status::OK();
  }
  // AND of ANDs (and OR of ORs) is one AND of all the terms: one virtual call less per level.
  const bool is_and = n.kind == ExprKind::kAnd;
  std::vector<std::unique_ptr<BoundExpr>> terms;
  for (auto& kid : kids) {
    auto* nested = dynamic_cast<Conjunction*>(kid.get());
    if (nested != nullptr && nested->is_and() == is_and) {
      for (auto& t : nested->children()) terms.push_back(std::move(t));
    } else {
      terms.push_back(std::move(kid));
    }
  }
  if (terms.size() == 1) {
    *out = std::move(terms[0]);
    return Status::OK();
  }
  *out = std::make_unique<Conjunction>(is_and);
  (*out)->children() = std::move(terms);
  return Status::OK();
}

Status Binder::BindIn(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  std::vector<std::unique_ptr<BoundExpr>> kids;
  SM_TRY(BindChildren(e, 0, &kids));
  Type t = kids[0]->type();
  std::vector<Value> values;
  std::vector<std::string> bytes;
  for (size_t i = 1; i < n.args.size(); ++i) {
    const ExprNode& v = n.args[i].node();
    if (v.kind != ExprKind::kLiteral) return Mismatch(e, "IN lists take literals only");
    if (v.literal_type != t) {
      return Mismatch(
          e, std::string("a ") + TypeName(v.literal_type) + " in a list of " + TypeName(t));
    }
    values.push_back(v.literal);
    bytes.push_back(v.literal_type == Type::kString ? v.text : std::string());
  }
  auto node = std::make_unique<InList>(t, std::move(values), std::move(bytes), n.negated);
  kids.resize(1);
  node->children() = std::move(kids);
  *out = std::move(node);
  return Status::OK();
}

Status Binder::BindCase(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  std::vector<std::unique_ptr<BoundExpr>> kids;
  SM_TRY(BindChildren(e, 0, &kids));
  // Children: WHEN and THEN alternate, the ELSE value is last.
  auto is_value = [&](size_t i) { return i % 2 == 1 || i + 1 == kids.size(); };
  // The result type: that of the first value that is not an int literal, else int.
  Type type = Type::kInt;
  for (size_t i = 0; i < kids.size(); ++i) {
    if (is_value(i) && !IsIntLiteral(n.args[i])) {
      type = kids[i]->type();
      break;
    }
  }
  for (size_t i = 0; i < kids.size(); ++i) {
    if (!is_value(i)) {
      if (kids[i]->type() != Type::kBool) return Mismatch(e, "a WHEN condition is not a bool");
      continue;
    }
    if (kids[i]->type() == type) continue;
    if (type == Type::kMoney && IsIntLiteral(n.args[i])) {
      kids[i] = CentsFromUnits(n.args[i]);
    } else if (type == Type::kDouble && IsIntLiteral(n.args[i])) {
      kids[i] = std::make_unique<Constant>(
          Type::kDouble, Value::Double(static_cast<double>(n.args[i].node().literal.i)));
    } else {
      return Mismatch(e, std::string("CASE branches of ") + TypeName(type) + " and " +
                             TypeName(kids[i]->type()));
    }
  }
  auto node = std::make_unique<CaseWhen>(type);
  node->children() = std::move(kids);
  *out = std::move(node);
  return Status::OK();
}

Status Binder::BindFunc(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  std::vector<std::unique_ptr<BoundExpr>> kids;
  SM_TRY(BindChildren(e, 0, &kids));
  Type in = kids[0]->type();
  Type result = Type::kInt;
  switch (n.func) {
    case Func::kSubstr:
    case Func::kAscii:
      if (in != Type::kString)
        return Mismatch(e, std::string(FuncName(n.func)) + " needs a string");
      if (n.func == Func::kSubstr && n.arg2 < 0) return Mismatch(e, "negative substring length");
      result = n.func == Func::kSubstr ? Type::kString : Type::kInt;
      break;
    case Func::kYear:
    case Func::kAddDays:
    case Func::kAddMonths:
      if (in != Type::kDate) return Mismatch(e, std::string(FuncName(n.func)) + " needs a date");
      result = n.func == Func::kYear ? Type::kInt : Type::kDate;
      break;
    case Func::kToDouble:
      if (!IsNumeric(in)) return Mismatch(e, "to_double needs a number");
      result = Type::kDouble;
      break;
  }
  auto node = std::make_unique<Function>(result, n.func, n.arg1, n.arg2, AsDoubleOf(in));
  node->children() = std::move(kids);
  *out = std::move(node);
  return Status::OK();
}

Status Binder::BindScalar(const Expr& e, std::unique_ptr<BoundExpr>* out) {
  const ExprNode& n = e.node();
  if (n.subquery == nullptr) return Status::InvalidArgument("a scalar subquery has no plan");
  SM_TRY(n.subquery->status());
  if (n.subquery->schema().size() != 1) {
    return Status::InvalidArgument("a scalar subquery must yield one column, not " +
                                   std::to_string(n.subquery->schema().size()));
  }
  *out = std::make_unique<ScalarSubquery>(n.subquery->schema()[0].type, n.subquery);
  return Status::OK();
}

}  // namespace

Status Bind(const Expr& expr, const RowSchema& input, std::unique_ptr<BoundExpr>* out) {
  Binder binder(input);
  SM_TRY(binder.Bind(expr, out));
  (*out)->FinishBinding();
  return Status::OK();
}

Status BindPredicate(const Expr& expr, const RowSchema& input, std::unique_ptr<BoundExpr>* out) {
  SM_TRY(Bind(expr, input, out));
  if ((*out)->type() != Type::kBool) {
    return Status::InvalidArgument("a predicate must be a bool, not a " +
                                   std::string(TypeName((*out)->type())) + ": " + expr.ToString());
  }
  return Status::OK();
}

}  // namespace sm::query
