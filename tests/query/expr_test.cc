// Expressions: the type rules of expr.h, SQL's NULL logic, LIKE, IN, CASE and the functions,
// evaluated on rows built by hand.
#include "query/expr_eval.h"
#include "query/query.h"
#include "tests/query/query_test_util.h"

namespace sm::test {
namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

const RowSchema kSchema({{"i", Type::kInt},
                         {"j", Type::kInt},
                         {"d", Type::kDouble},
                         {"m", Type::kMoney},
                         {"t", Type::kDate},
                         {"s", Type::kString},
                         {"n", Type::kInt},
                         {"b", Type::kBool}});

struct Row {
  Value v[8];
  Row() {
    v[0] = Value::Int(7);
    v[1] = Value::Int(2);
    v[2] = Value::Double(0.5);
    v[3] = Value::Int(1250);  // 12.50
    int64_t t = 0;
    REQUIRE(ParseTimestamp("2024-01-31 10:00:00", &t));
    v[4] = Value::Int(t);
    v[5] = Value::String("Alabama");
    v[6] = Value::Null();
    v[7] = Value::Int(1);
  }
};

Value Eval(const Expr& e, Type* type = nullptr) {
  std::unique_ptr<BoundExpr> bound;
  Status s = Bind(e, kSchema, &bound);
  INFO(e.ToString() << ": " << s.ToString());
  REQUIRE(s.ok());
  if (type) *type = bound->type();
  static Row row;
  return bound->Eval(row.v);
}

Status BindStatus(const Expr& e) {
  std::unique_ptr<BoundExpr> bound;
  return Bind(e, kSchema, &bound);
}

TEST_CASE("arithmetic follows the type rules", "[unit][query]") {
  Type t;
  CHECK(Eval(Col("i") + Col("j") * 3, &t).i == 13);
  CHECK(t == Type::kInt);
  CHECK(Eval(Col("i") / Col("j")).i == 3);
  CHECK(Eval(Col("i") % Col("j")).i == 1);
  CHECK(Eval(Col("i") / 0).null);
  CHECK(Eval(Col("i") % 0).null);
  CHECK(Eval(Col("i") * Col("d"), &t).d == 3.5);
  CHECK(t == Type::kDouble);
  CHECK(Eval(Col("m") + 2, &t).i == 1450);  // an int literal beside money is in units
  CHECK(t == Type::kMoney);
  CHECK(Eval(Col("m") * Col("j"), &t).i == 2500);  // a count times money is money
  CHECK(t == Type::kMoney);
  CHECK(Eval(Col("m") / Col("j"), &t).d == 6.25);  // money / int is a double in units
  CHECK(t == Type::kDouble);
  CHECK(Eval(Col("t") - Col("t"), &t).i == 0);
  CHECK(t == Type::kInt);
  CHECK(Eval(-Col("i")).i == -7);
  CHECK(Eval(Col("n") + 1).null);
  CHECK(Eval(ToDouble(Col("m"))).d == 12.5);
}

TEST_CASE("mismatched types are refused when a plan binds", "[unit][query]") {
  CHECK(BindStatus(Col("i") + Col("s")).IsInvalidArgument());
  CHECK(BindStatus(Col("m") + Col("i")).IsInvalidArgument());  // a column is not a unit literal
  CHECK(BindStatus(Col("m") * Col("m")).IsInvalidArgument());
  CHECK(BindStatus(Col("s") == 1).IsInvalidArgument());
  CHECK(BindStatus(Col("m") == Col("i")).IsInvalidArgument());
  CHECK(BindStatus(And(Col("i"), Col("b"))).IsInvalidArgument());
  CHECK(BindStatus(Like(Col("i"), "1%")).IsInvalidArgument());
  CHECK(BindStatus(Year(Col("s"))).IsInvalidArgument());
  CHECK(BindStatus(In(Col("i"), {Str("x")})).IsInvalidArgument());
  CHECK(BindStatus(Case({{Col("b"), Col("s")}}, Col("i"))).IsInvalidArgument());
  Status unknown = BindStatus(Col("nope") == 1);
  CHECK(unknown.IsInvalidArgument());
  CHECK(unknown.ToString().find("nope") != std::string::npos);
  Status date = BindStatus(Col("t") > Date("2024-13-01"));
  CHECK(date.IsInvalidArgument());
  CHECK(date.ToString().find("2024-13-01") != std::string::npos);
}

TEST_CASE("comparisons and SQL's three-valued logic", "[unit][query]") {
  CHECK(Eval(Col("i") > Col("d")).i == 1);  // int with double, as doubles
  CHECK(Eval(Col("m") > 12).i == 1);        // 12.50 > 12 units
  CHECK(Eval(Col("m") == Money(1250)).i == 1);
  CHECK(Eval(Col("m") > 12.75).i == 0);  // money against a double, in units
  CHECK(Eval(Col("s") < Str("Alaska")).i == 1);
  CHECK(Eval(Col("s") < Str("Alabama1")).i == 1);  // a prefix sorts first
  CHECK(Eval(Col("t") > Date("2024-01-31")).i == 1);
  CHECK(Eval(Col("n") == 1).null);
  CHECK(Eval(And(Col("n") == 1, Col("i") == 0)).i == 0);  // NULL AND false
  CHECK(Eval(And(Col("n") == 1, Col("i") == 7)).null);    // NULL AND true
  CHECK(Eval(Or(Col("n") == 1, Col("i") == 7)).i == 1);   // NULL OR true
  CHECK(Eval(Or(Col("n") == 1, Col("i") == 0)).null);     // NULL OR false
  CHECK(Eval(Not(Col("n") == 1)).null);
  CHECK(Eval(IsNull(Col("n"))).i == 1);
  CHECK(Eval(IsNotNull(Col("i"))).i == 1);
  CHECK(Eval(Between(Col("i"), 7, 9)).i == 1);
  CHECK(Eval(In(Col("i"), {1, 7})).i == 1);
  CHECK(Eval(NotIn(Col("i"), {1, 7})).i == 0);
  CHECK(Eval(In(Col("n"), {1, 7})).null);
  CHECK(Eval(In(Col("s"), {Str("Texas"), Str("Alabama")})).i == 1);
}

TEST_CASE("LIKE patterns of every shape", "[unit][query]") {
  CHECK(Eval(Like(Col("s"), "Ala%")).i == 1);
  CHECK(Eval(Like(Col("s"), "ala%")).i == 0);  // case-sensitive
  CHECK(Eval(Like(Col("s"), "%ma")).i == 1);
  CHECK(Eval(Like(Col("s"), "%bam%")).i == 1);
  CHECK(Eval(Like(Col("s"), "Alabama")).i == 1);
  CHECK(Eval(Like(Col("s"), "Alabam")).i == 0);
  CHECK(Eval(Like(Col("s"), "A_a%a")).i == 1);
  CHECK(Eval(Like(Col("s"), "%l%b%a")).i == 1);
  CHECK(Eval(Like(Col("s"), "%x%")).i == 0);
  CHECK(Eval(Like(Col("s"), "%")).i == 1);
  CHECK(Eval(NotLike(Col("s"), "zz%")).i == 1);
}

TEST_CASE("CASE, strings and dates", "[unit][query]") {
  Type t;
  Value v = Eval(Case({{Col("i") == 7, Col("m")}}, 0), &t);
  CHECK(t == Type::kMoney);
  CHECK(v.i == 1250);
  CHECK(Eval(Case({{Col("i") == 8, Col("m")}}, 1)).i == 100);  // the int literal in units
  CHECK(Eval(Case({{Col("n") == 1, 1}}, 0)).i == 0);           // a NULL condition is not true
  CHECK(Eval(Substr(Col("s"), 1, 1)).str() == "A");
  CHECK(Eval(Substr(Col("s"), 3, 3)).str() == "aba");
  CHECK(Eval(Substr(Col("s"), 6, 10)).str() == "ma");
  CHECK(Eval(Substr(Col("s"), 20, 2)).str().empty());
  CHECK(Eval(Ascii(Col("s"))).i == 'A');
  CHECK(Eval(Ascii(Substr(Col("s"), 20, 2))).i == 0);
  CHECK(Eval(Year(Col("t"))).i == 2024);
  CHECK(FormatTimestamp(Eval(AddMonths(Col("t"), 1)).i) == "2024-02-29 10:00:00.000000");
  CHECK(FormatTimestamp(Eval(AddMonths(Col("t"), -13)).i) == "2022-12-31 10:00:00.000000");
  CHECK(FormatTimestamp(Eval(AddDays(Col("t"), 1)).i) == "2024-02-01 10:00:00.000000");
}

TEST_CASE("timestamps read and print as ISO 8601", "[unit][query]") {
  int64_t t = 0;
  REQUIRE(ParseTimestamp("1969-12-31 23:59:59.5", &t));
  CHECK(t == -500000);
  CHECK(FormatTimestamp(t) == "1969-12-31 23:59:59.500000");
  REQUIRE(ParseTimestamp("2000-02-29", &t));
  CHECK(FormatTimestamp(t) == "2000-02-29 00:00:00.000000");
  CHECK_FALSE(ParseTimestamp("2001-02-29", &t));
  CHECK_FALSE(ParseTimestamp("2001-02-28 24:00:00", &t));
  CHECK_FALSE(ParseTimestamp("2001-02-28x", &t));
  CHECK(FormatMoney(-5) == "-0.05");
  CHECK(FormatMoney(INT64_MIN) == "-92233720368547758.08");
  CHECK(FormatDouble(0.1) == "0.1");
}

}  // namespace
}  // namespace sm::test
