// The 22 CH-benCHmark queries as plans (contract in ch_queries.h).
//
// Each function builds the published query's joins and predicates; the choices that are not
// read off the SQL are these, used throughout:
//   - order_line and oorder are both stored in (w, d, o) order, so they meet in a merge join,
//     and per-order aggregates of order_line are sort aggregations of its scan;
//   - customers join orders, not order lines: orders probe the hash join with customers, whose
//     output keeps the probe's order, before they meet the lines (OrdersWithCustomers);
//   - a stock row's supplier, mod(s_w_id * s_i_id, 10000), is computed from the order line's
//     own warehouse and item once the query equates them with the stock row's (ol_w_id = s_w_id
//     or ol_supply_w_id = s_w_id, ol_i_id = s_i_id), so the supplier join runs before the stock
//     join, which then only confirms that the stock row exists (a semi join, by index probes
//     or by a hash join with a scan of the stock keys, whichever costs less: WithStock);
//   - EXISTS over an order's lines (Q4) and NOT EXISTS of a later delivery in the same order
//     (Q21) probe the order's lines in their B-tree, by the order's key prefix, once the rows
//     that reach the probe are few.
#include "tpcc/ch_queries.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "query/query.h"
#include "query/row_store.h"
#include "tpcc/ch.h"

namespace sm::tpcc {

namespace {

using namespace sm::query;  // NOLINT: the plan vocabulary

const char* kSince2007 = "2007-01-02 00:00:00";

Plan Scan(const Catalog& c, const char* table, std::vector<std::string> columns,
          std::string alias = std::string()) {
  return Plan::Scan(c, table, std::move(columns), {}, std::move(alias));
}

Expr Supplier(const char* w, const char* i) { return (Col(w) * Col(i)) % 10000; }
Expr CustomerNation() { return Ascii(Substr(Col("c_state"), 1, 1)); }

// Nations of the region named `region` (exactly, or by LIKE when like is true).
Plan NationsOf(const Catalog& c, const char* region, bool like = false) {
  Plan regions = Scan(c, "region", {"r_regionkey", "r_name"})
                     .Filter(like ? Like(Col("r_name"), region) : Col("r_name") == Str(region));
  return Scan(c, "nation", {"n_nationkey", "n_name", "n_regionkey"})
      .HashJoin(regions, {{Col("n_regionkey"), Col("r_regionkey")}}, JoinType::kSemi);
}

Plan NationNamed(const Catalog& c, const char* name, const char* alias = "") {
  std::string a = alias;
  std::string prefix = a.empty() ? "" : a + ".";
  return Scan(c, "nation", {"n_nationkey", "n_name"}, a)
      .Filter(Col(prefix + "n_name") == Str(name));
}

// Orders (their key columns first, then `columns`) in key order, optionally filtered.
Plan Orders(const Catalog& c, std::vector<std::string> columns, const Expr& filter = Expr()) {
  columns.insert(columns.begin(), {"o_w_id", "o_d_id", "o_id"});
  Plan orders = Scan(c, "oorder", columns);
  return filter.valid() ? orders.Filter(filter) : orders;
}

// Orders joined with their customers (o_c_id among the order's columns). The orders probe the
// join, whose output keeps their key order, so the join runs once per order, not once per
// order line, and the lines still meet the result in a merge join.
Plan OrdersWithCustomers(const Plan& orders, const Plan& customers, const Expr& residual = Expr()) {
  return orders.HashJoin(customers,
                         {{Col("o_w_id"), Col("c_w_id")},
                          {Col("o_d_id"), Col("c_d_id")},
                          {Col("o_c_id"), Col("c_id")}},
                         JoinType::kInner, residual);
}

// Order lines joined with their orders (merge join on the shared (w, d, o) order); `orders`
// is in key order (Orders, OrdersWithCustomers).
Plan LinesWithOrders(const Catalog& c, std::vector<std::string> line_columns, const Plan& orders) {
  line_columns.insert(line_columns.begin(), {"ol_w_id", "ol_d_id", "ol_o_id"});
  return Scan(c, "order_line", line_columns)
      .MergeJoin(orders, {{"ol_w_id", "o_w_id"}, {"ol_d_id", "o_d_id"}, {"ol_o_id", "o_id"}});
}
Plan LinesWithOrders(const Catalog& c, std::vector<std::string> line_columns,
                     std::vector<std::string> order_columns, const Expr& order_filter = Expr()) {
  return LinesWithOrders(c, std::move(line_columns),
                         Orders(c, std::move(order_columns), order_filter));
}

// Keeps the rows whose stock row (w, i) exists: by a probe of the stock B-tree per row, or by
// a hash join with a scan of the stock keys when the rows are many enough to pay for the scan
// (the choice is made at run time; EXPLAIN ANALYZE shows it).
Plan WithStock(const Plan& p, const Catalog& c, const char* w, const char* i) {
  return p.IndexOrRadixJoin(c, "stock", {Col(w), Col(i)}, JoinType::kSemi);
}

Plan Q1(const Catalog& c, const ChParams&) {
  return Scan(c, "order_line", {"ol_number", "ol_quantity", "ol_amount", "ol_delivery_d"})
      .Filter(Col("ol_delivery_d") > Date(kSince2007))
      .Aggregate({{Col("ol_number")}},
                 {Sum(Col("ol_quantity")).As("sum_qty"), Sum(Col("ol_amount")).As("sum_amount"),
                  Avg(Col("ol_quantity")).As("avg_qty"), Avg(Col("ol_amount")).As("avg_amount"),
                  Count().As("count_order")})
      .Sort({"ol_number"});
}

Plan Q2(const Catalog& c, const ChParams&) {
  // Only stock of items ending in 'b' can appear, so the minimum is taken over those alone;
  // the suppliers' strings are joined last, to the few rows left.
  Plan items = Scan(c, "item", {"i_id", "i_name", "i_data"}).Filter(Like(Col("i_data"), "%b"));
  Plan european = Scan(c, "supplier", {"su_suppkey", "su_nationkey"})
                      .HashJoin(NationsOf(c, "Europ%", true),
                                {{Col("su_nationkey"), Col("n_nationkey")}}, JoinType::kSemi);
  Plan stock =
      Scan(c, "stock", {"s_i_id", "s_w_id", "s_quantity"})
          .HashJoin(items, {{Col("s_i_id"), Col("i_id")}}, JoinType::kSemi)
          .HashJoin(european, {{Supplier("s_w_id", "s_i_id"), Col("su_suppkey")}}, JoinType::kSemi)
          .Materialize();
  Plan least =
      stock.Aggregate({{Col("s_i_id"), "m_i_id"}}, {Min(Col("s_quantity")).As("m_s_quantity")});
  Plan suppliers =
      Scan(c, "supplier",
           {"su_suppkey", "su_name", "su_address", "su_phone", "su_comment", "su_nationkey"})
          .HashJoin(Scan(c, "nation", {"n_nationkey", "n_name"}),
                    {{Col("su_nationkey"), Col("n_nationkey")}});
  return stock
      .HashJoin(least, {{Col("s_i_id"), Col("m_i_id")}, {Col("s_quantity"), Col("m_s_quantity")}},
                JoinType::kSemi)
      .HashJoin(items, {{Col("s_i_id"), Col("i_id")}})
      .HashJoin(suppliers, {{Supplier("s_w_id", "s_i_id"), Col("su_suppkey")}})
      .Project({{Col("su_suppkey")},
                {Col("su_name")},
                {Col("n_name")},
                {Col("i_id")},
                {Col("i_name")},
                {Col("su_address")},
                {Col("su_phone")},
                {Col("su_comment")}})
      .Sort({"n_name", "su_name", "i_id"});
}

Plan Q3(const Catalog& c, const ChParams&) {
  return Scan(c, "new_order", {"no_w_id", "no_d_id", "no_o_id"})
      .IndexJoin(c, "oorder", {Col("no_w_id"), Col("no_d_id"), Col("no_o_id")},
                 {"o_w_id", "o_d_id", "o_id", "o_c_id", "o_entry_d"}, JoinType::kInner,
                 Col("o_entry_d") > Date(kSince2007))
      .IndexJoin(c, "customer", {Col("o_w_id"), Col("o_d_id"), Col("o_c_id")}, {"c_state"},
                 JoinType::kSemi, Like(Col("c_state"), "A%"))
      .IndexJoin(c, "order_line", {Col("o_w_id"), Col("o_d_id"), Col("o_id")},
                 {"ol_o_id", "ol_w_id", "ol_d_id", "ol_amount"})
      .Aggregate({{Col("ol_o_id")}, {Col("ol_w_id")}, {Col("ol_d_id")}, {Col("o_entry_d")}},
                 {Sum(Col("ol_amount")).As("revenue")})
      .Project({{Col("ol_o_id")},
                {Col("ol_w_id")},
                {Col("ol_d_id")},
                {Col("revenue")},
                {Col("o_entry_d")}})
      .Sort({Desc("revenue"), "o_entry_d"});
}

Plan Q4(const Catalog& c, const ChParams&) {
  return Scan(c, "oorder", {"o_w_id", "o_d_id", "o_id", "o_ol_cnt", "o_entry_d"})
      .IndexJoin(c, "order_line", {Col("o_w_id"), Col("o_d_id"), Col("o_id")}, {"ol_delivery_d"},
                 JoinType::kSemi, Col("ol_delivery_d") >= Col("o_entry_d"))
      .Aggregate({{Col("o_ol_cnt")}}, {Count().As("order_count")})
      .Sort({"o_ol_cnt"});
}

Plan Q5(const Catalog& c, const ChParams&) {
  Plan suppliers =
      Scan(c, "supplier", {"su_suppkey", "su_nationkey"})
          .HashJoin(NationsOf(c, "Europe"), {{Col("su_nationkey"), Col("n_nationkey")}});
  // The customer's nation equals the supplier's, which is European: so is the customer's.
  Plan customers = Scan(c, "customer", {"c_w_id", "c_d_id", "c_id", "c_state"})
                       .HashJoin(NationsOf(c, "Europe"), {{CustomerNation(), Col("n_nationkey")}},
                                 JoinType::kSemi);
  Plan orders = OrdersWithCustomers(
      Orders(c, {"o_c_id", "o_entry_d"}, Col("o_entry_d") >= Date(kSince2007)), customers);
  Plan joined = LinesWithOrders(c, {"ol_i_id", "ol_amount"}, orders)
                    .HashJoin(suppliers, {{Supplier("ol_w_id", "ol_i_id"), Col("su_suppkey")}},
                              JoinType::kInner, CustomerNation() == Col("su_nationkey"));
  return WithStock(joined, c, "ol_w_id", "ol_i_id")
      .Aggregate({{Col("n_name")}}, {Sum(Col("ol_amount")).As("revenue")})
      .Sort({Desc("revenue")});
}

Plan Q6(const Catalog& c, const ChParams& p) {
  return Scan(c, "order_line", {"ol_amount", "ol_delivery_d", "ol_quantity"})
      .Filter(And({Col("ol_delivery_d") >= Date("1999-01-01"),
                   Col("ol_delivery_d") < DateMicros(p.far_future_us),
                   Between(Col("ol_quantity"), 1, 100000)}))
      .Aggregate({}, {Sum(Col("ol_amount")).As("revenue")});
}

Plan Q7(const Catalog& c, const ChParams&) {
  Plan pair = Scan(c, "nation", {"n_nationkey", "n_name"}, "n1")
                  .Filter(In(Col("n1.n_name"), {Str("Germany"), Str("Cambodia")}));
  Plan suppliers = Scan(c, "supplier", {"su_suppkey", "su_nationkey"})
                       .HashJoin(pair, {{Col("su_nationkey"), Col("n1.n_nationkey")}});
  Plan customer_nations = Scan(c, "nation", {"n_nationkey", "n_name"}, "n2")
                              .Filter(In(Col("n2.n_name"), {Str("Germany"), Str("Cambodia")}));
  Plan customers = Scan(c, "customer", {"c_w_id", "c_d_id", "c_id", "c_state"})
                       .HashJoin(customer_nations, {{CustomerNation(), Col("n2.n_nationkey")}});
  Expr crossed = Or(And(Col("n1.n_name") == Str("Germany"), Col("n2.n_name") == Str("Cambodia")),
                    And(Col("n1.n_name") == Str("Cambodia"), Col("n2.n_name") == Str("Germany")));
  Plan orders = OrdersWithCustomers(Orders(c, {"o_c_id", "o_entry_d"}), customers);
  Plan joined =
      LinesWithOrders(c, {"ol_supply_w_id", "ol_i_id", "ol_amount"}, orders)
          .HashJoin(suppliers, {{Supplier("ol_supply_w_id", "ol_i_id"), Col("su_suppkey")}},
                    JoinType::kInner, crossed);
  return WithStock(joined, c, "ol_supply_w_id", "ol_i_id")
      .Aggregate({{Col("su_nationkey"), "supp_nation"},
                  {Substr(Col("c_state"), 1, 1), "cust_nation"},
                  {Year(Col("o_entry_d")), "l_year"}},
                 {Sum(Col("ol_amount")).As("revenue")})
      .Sort({"supp_nation", "cust_nation", "l_year"});
}

Plan Q8(const Catalog& c, const ChParams&) {
  Plan lines =
      Scan(c, "order_line",
           {"ol_w_id", "ol_d_id", "ol_o_id", "ol_i_id", "ol_supply_w_id", "ol_amount"})
          .Filter(Col("ol_i_id") < 1000)
          .IndexJoin(c, "item", {Col("ol_i_id")}, {"i_data"}, JoinType::kSemi,
                     Like(Col("i_data"), "%b"))
          .IndexJoin(c, "oorder", {Col("ol_w_id"), Col("ol_d_id"), Col("ol_o_id")},
                     {"o_c_id", "o_entry_d"})
          .IndexJoin(c, "customer", {Col("ol_w_id"), Col("ol_d_id"), Col("o_c_id")}, {"c_state"});
  Plan european = NationsOf(c, "Europe");
  Plan suppliers = Scan(c, "supplier", {"su_suppkey", "su_nationkey"})
                       .HashJoin(Scan(c, "nation", {"n_nationkey", "n_name"}, "n2"),
                                 {{Col("su_nationkey"), Col("n2.n_nationkey")}});
  Plan joined =
      WithStock(lines.HashJoin(european, {{CustomerNation(), Col("n_nationkey")}}, JoinType::kSemi),
                c, "ol_supply_w_id", "ol_i_id")
          .HashJoin(suppliers, {{Supplier("ol_supply_w_id", "ol_i_id"), Col("su_suppkey")}});
  Expr german = Case({{Col("n2.n_name") == Str("Germany"), Col("ol_amount")}}, 0);
  return joined
      .Aggregate({{Year(Col("o_entry_d")), "l_year"}},
                 {Sum(german).As("germany"), Sum(Col("ol_amount")).As("total")})
      .Project({{Col("l_year")}, {Col("germany") / Col("total"), "mkt_share"}})
      .Sort({"l_year"});
}

Plan Q9(const Catalog& c, const ChParams&) {
  Plan items = Scan(c, "item", {"i_id", "i_data"}).Filter(Like(Col("i_data"), "%bb"));
  Plan suppliers = Scan(c, "supplier", {"su_suppkey", "su_nationkey"})
                       .HashJoin(Scan(c, "nation", {"n_nationkey", "n_name"}),
                                 {{Col("su_nationkey"), Col("n_nationkey")}});
  Plan lines =
      Scan(c, "order_line",
           {"ol_w_id", "ol_d_id", "ol_o_id", "ol_i_id", "ol_supply_w_id", "ol_amount"})
          .HashJoin(items, {{Col("ol_i_id"), Col("i_id")}}, JoinType::kSemi)
          .IndexJoin(c, "oorder", {Col("ol_w_id"), Col("ol_d_id"), Col("ol_o_id")}, {"o_entry_d"});
  return WithStock(lines, c, "ol_supply_w_id", "ol_i_id")
      .HashJoin(suppliers, {{Supplier("ol_supply_w_id", "ol_i_id"), Col("su_suppkey")}})
      .Aggregate({{Col("n_name")}, {Year(Col("o_entry_d")), "l_year"}},
                 {Sum(Col("ol_amount")).As("sum_profit")})
      .Sort({"n_name", Desc("l_year")});
}

Plan Q10(const Catalog& c, const ChParams&) {
  // Revenue is summed per order (a sort aggregation: the lines arrive in order, and o_c_id is
  // the order's), then per customer (w, d, c) before the customer's strings are joined; the
  // published grouping by c_id alone then adds the districts' sums together.
  Plan per_order = LinesWithOrders(c, {"ol_amount", "ol_delivery_d"}, {"o_c_id", "o_entry_d"},
                                   Col("o_entry_d") >= Date(kSince2007))
                       .Filter(Col("o_entry_d") <= Col("ol_delivery_d"))
                       .Aggregate({{Col("o_w_id")}, {Col("o_d_id")}, {Col("o_id")}, {Col("o_c_id")}},
                                  {Sum(Col("ol_amount")).As("order_revenue")}, AggStrategy::kSort);
  Plan per_customer = per_order.Aggregate({{Col("o_w_id")}, {Col("o_d_id")}, {Col("o_c_id")}},
                                          {Sum(Col("order_revenue")).As("customer_revenue")});
  Plan customers =
      Scan(c, "customer", {"c_w_id", "c_d_id", "c_id", "c_last", "c_city", "c_phone", "c_state"});
  return per_customer
      .HashJoin(customers, {{Col("o_w_id"), Col("c_w_id")},
                            {Col("o_d_id"), Col("c_d_id")},
                            {Col("o_c_id"), Col("c_id")}})
      .HashJoin(Scan(c, "nation", {"n_nationkey", "n_name"}),
                {{CustomerNation(), Col("n_nationkey")}})
      .Aggregate(
          {{Col("c_id")}, {Col("c_last")}, {Col("c_city")}, {Col("c_phone")}, {Col("n_name")}},
          {Sum(Col("customer_revenue")).As("revenue")})
      .Project({{Col("c_id")},
                {Col("c_last")},
                {Col("revenue")},
                {Col("c_city")},
                {Col("c_phone")},
                {Col("n_name")}})
      .Sort({Desc("revenue")});
}

Plan Q11(const Catalog& c, const ChParams&) {
  Plan german = Scan(c, "supplier", {"su_suppkey", "su_nationkey"})
                    .HashJoin(NationNamed(c, "Germany"),
                              {{Col("su_nationkey"), Col("n_nationkey")}}, JoinType::kSemi);
  Plan stock =
      Scan(c, "stock", {"s_w_id", "s_i_id", "s_order_cnt"})
          .HashJoin(german, {{Supplier("s_w_id", "s_i_id"), Col("su_suppkey")}}, JoinType::kSemi)
          .Materialize();
  Plan threshold = stock.Aggregate({}, {Sum(Col("s_order_cnt")).As("total")})
                       .Project({{Col("total") * 0.005, "threshold"}});
  return stock.Aggregate({{Col("s_i_id")}}, {Sum(Col("s_order_cnt")).As("ordercount")})
      .Filter(Col("ordercount") > Scalar(threshold))
      .Sort({Desc("ordercount")});
}

Plan Q12(const Catalog& c, const ChParams& p) {
  Expr high = Or(Col("o_carrier_id") == 1, Col("o_carrier_id") == 2);
  Expr low = And(Col("o_carrier_id") != 1, Col("o_carrier_id") != 2);
  return LinesWithOrders(c, {"ol_delivery_d"}, {"o_entry_d", "o_carrier_id", "o_ol_cnt"})
      .Filter(And(Col("o_entry_d") <= Col("ol_delivery_d"),
                  Col("ol_delivery_d") < DateMicros(p.far_future_us)))
      .Aggregate({{Col("o_ol_cnt")}}, {Sum(Case({{high, 1}}, 0)).As("high_line_count"),
                                       Sum(Case({{low, 1}}, 0)).As("low_line_count")})
      .Sort({"o_ol_cnt"});
}

Plan Q13(const Catalog& c, const ChParams&) {
  Plan orders = Scan(c, "oorder", {"o_w_id", "o_d_id", "o_id", "o_c_id", "o_carrier_id"})
                    .Filter(Col("o_carrier_id") > 8);
  return Scan(c, "customer", {"c_w_id", "c_d_id", "c_id"})
      .HashJoin(orders,
                {{Col("c_w_id"), Col("o_w_id")},
                 {Col("c_d_id"), Col("o_d_id")},
                 {Col("c_id"), Col("o_c_id")}},
                JoinType::kLeftOuter)
      .Aggregate({{Col("c_id")}}, {Count(Col("o_id")).As("c_count")})
      .Aggregate({{Col("c_count")}}, {Count().As("custdist")})
      .Sort({Desc("custdist"), Desc("c_count")});
}

Plan Q14(const Catalog& c, const ChParams& p) {
  // The item side keeps only whether the item is a promotion: the hash table holds no strings.
  Plan items = Scan(c, "item", {"i_id", "i_data"})
                   .Project({{Col("i_id")}, {Like(Col("i_data"), "PR%"), "is_promo"}});
  Expr promo = Case({{Col("is_promo"), Col("ol_amount")}}, 0);
  return Scan(c, "order_line", {"ol_i_id", "ol_amount", "ol_delivery_d"})
      .Filter(And(Col("ol_delivery_d") >= Date(kSince2007),
                  Col("ol_delivery_d") < DateMicros(p.far_future_us)))
      .HashJoin(items, {{Col("ol_i_id"), Col("i_id")}})
      .Aggregate({}, {Sum(promo).As("promo"), Sum(Col("ol_amount")).As("total")})
      .Project({{100.0 * Col("promo") / (1 + Col("total")), "promo_revenue"}});
}

Plan Q15(const Catalog& c, const ChParams&) {
  Plan stock = Scan(c, "stock", {"s_w_id", "s_i_id"});
  Plan revenue =
      Scan(c, "order_line", {"ol_supply_w_id", "ol_i_id", "ol_amount", "ol_delivery_d"})
          .Filter(Col("ol_delivery_d") >= Date(kSince2007))
          .HashJoin(stock,
                    {{Col("ol_supply_w_id"), Col("s_w_id")}, {Col("ol_i_id"), Col("s_i_id")}},
                    JoinType::kSemi)
          .Aggregate({{Supplier("ol_supply_w_id", "ol_i_id"), "supplier_no"}},
                     {Sum(Col("ol_amount")).As("total_revenue")})
          .Materialize();
  Plan best = revenue.Aggregate({}, {Max(Col("total_revenue")).As("max_revenue")});
  return Scan(c, "supplier", {"su_suppkey", "su_name", "su_address", "su_phone"})
      .HashJoin(revenue.Filter(Col("total_revenue") == Scalar(best)),
                {{Col("su_suppkey"), Col("supplier_no")}})
      .Project({{Col("su_suppkey")},
                {Col("su_name")},
                {Col("su_address")},
                {Col("su_phone")},
                {Col("total_revenue")}})
      .Sort({"su_suppkey"});
}

Plan Q16(const Catalog& c, const ChParams&) {
  Plan bad =
      Scan(c, "supplier", {"su_suppkey", "su_comment"}).Filter(Like(Col("su_comment"), "%bad%"));
  Plan items = Scan(c, "item", {"i_id", "i_name", "i_price", "i_data"})
                   .Filter(NotLike(Col("i_data"), "zz%"));
  return Scan(c, "stock", {"s_w_id", "s_i_id"})
      .HashJoin(bad, {{Supplier("s_w_id", "s_i_id"), Col("su_suppkey")}}, JoinType::kAnti)
      .HashJoin(items, {{Col("s_i_id"), Col("i_id")}})
      .Aggregate({{Col("i_name")}, {Substr(Col("i_data"), 1, 3), "brand"}, {Col("i_price")}},
                 {CountDistinct(Supplier("s_w_id", "s_i_id")).As("supplier_cnt")})
      .Sort({Desc("supplier_cnt")});
}

Plan Q17(const Catalog& c, const ChParams&) {
  Plan items = Scan(c, "item", {"i_id", "i_data"}).Filter(Like(Col("i_data"), "%b"));
  Plan lines = Scan(c, "order_line", {"ol_i_id", "ol_quantity", "ol_amount"})
                   .HashJoin(items, {{Col("ol_i_id"), Col("i_id")}}, JoinType::kSemi)
                   .Materialize();
  Plan averages = lines.Aggregate({{Col("ol_i_id"), "t_i_id"}}, {Avg(Col("ol_quantity")).As("a")});
  return lines
      .HashJoin(averages, {{Col("ol_i_id"), Col("t_i_id")}}, JoinType::kInner,
                Col("ol_quantity") < Col("a"))
      .Aggregate({}, {Sum(Col("ol_amount")).As("total")})
      .Project({{Col("total") / 2.0, "avg_yearly"}});
}

Plan Q18(const Catalog& c, const ChParams&) {
  Plan per_order = Scan(c, "order_line", {"ol_w_id", "ol_d_id", "ol_o_id", "ol_amount"})
                       .Aggregate({{Col("ol_w_id")}, {Col("ol_d_id")}, {Col("ol_o_id")}},
                                  {Sum(Col("ol_amount")).As("amount_sum")}, AggStrategy::kSort);
  return Scan(c, "oorder", {"o_w_id", "o_d_id", "o_id", "o_c_id", "o_entry_d", "o_ol_cnt"})
      .MergeJoin(per_order, {{"o_w_id", "ol_w_id"}, {"o_d_id", "ol_d_id"}, {"o_id", "ol_o_id"}})
      .Filter(Col("amount_sum") > 200)
      .IndexJoin(c, "customer", {Col("o_w_id"), Col("o_d_id"), Col("o_c_id")}, {"c_last", "c_id"})
      .Project({{Col("c_last")},
                {Col("c_id")},
                {Col("o_id")},
                {Col("o_entry_d")},
                {Col("o_ol_cnt")},
                {Col("amount_sum")}})
      .Sort({Desc("amount_sum"), "o_entry_d"});
}

Plan Q19(const Catalog& c, const ChParams&) {
  // The three arms share the join, the quantity and the price ranges; their warehouse lists and
  // patterns unite to filters that each input applies before the join (the arms themselves stay
  // the join's residual). The warehouses, 1 to 5, are the order lines' leading key column: a
  // key range, so the scan reads only their lines, and parallel parts split those evenly.
  auto arm = [](const char* pattern, std::vector<Expr> warehouses) {
    return And(Like(Col("i_data"), pattern), In(Col("ol_w_id"), std::move(warehouses)));
  };
  Plan items =
      Scan(c, "item", {"i_id", "i_data", "i_price"})
          .Filter(And(
              Or({Like(Col("i_data"), "%a"), Like(Col("i_data"), "%b"), Like(Col("i_data"), "%c")}),
              Between(Col("i_price"), 1, 400000)));
  return Plan::Scan(c, "order_line", {"ol_w_id", "ol_i_id", "ol_quantity", "ol_amount"},
                    KeyRange{{Int(1)}, {Int(5)}})
      .Filter(Between(Col("ol_quantity"), 1, 10))
      .HashJoin(items, {{Col("ol_i_id"), Col("i_id")}}, JoinType::kInner,
                Or({arm("%a", {1, 2, 3}), arm("%b", {1, 2, 4}), arm("%c", {1, 5, 3})}))
      .Aggregate({}, {Sum(Col("ol_amount")).As("revenue")});
}

Plan Q20(const Catalog& c, const ChParams&) {
  // Every stock row (w, i) joins all the lines of item i, so the published grouping by stock
  // row sums, for each, its item's quantity over all lines: summed per item first, in parallel
  // over the order lines, and joined to the stock rows after.
  Plan items = Scan(c, "item", {"i_id", "i_data"}).Filter(Like(Col("i_data"), "co%"));
  Plan ordered = Scan(c, "order_line", {"ol_i_id", "ol_quantity", "ol_delivery_d"})
                     .Filter(Col("ol_delivery_d") > Date("2010-05-23 12:00:00"))
                     .HashJoin(items, {{Col("ol_i_id"), Col("i_id")}}, JoinType::kSemi)
                     .Aggregate({{Col("ol_i_id")}}, {Sum(Col("ol_quantity")).As("ordered")});
  Plan wanted = Scan(c, "stock", {"s_w_id", "s_i_id", "s_quantity"})
                    .HashJoin(items, {{Col("s_i_id"), Col("i_id")}}, JoinType::kSemi)
                    .HashJoin(ordered, {{Col("s_i_id"), Col("ol_i_id")}})
                    .Filter(2 * Col("s_quantity") > Col("ordered"))
                    .Project({{Supplier("s_i_id", "s_w_id"), "supplier_no"}});
  return Scan(c, "supplier", {"su_suppkey", "su_name", "su_address", "su_nationkey"})
      .HashJoin(NationNamed(c, "Germany"), {{Col("su_nationkey"), Col("n_nationkey")}},
                JoinType::kSemi)
      .HashJoin(wanted, {{Col("su_suppkey"), Col("supplier_no")}}, JoinType::kSemi)
      .Project({{Col("su_name")}, {Col("su_address")}})
      .Sort({"su_name"});
}

Plan Q21(const Catalog& c, const ChParams&) {
  Plan german = Scan(c, "supplier", {"su_suppkey", "su_name", "su_nationkey"})
                    .HashJoin(NationNamed(c, "Germany"),
                              {{Col("su_nationkey"), Col("n_nationkey")}}, JoinType::kSemi);
  // The German suppliers' lines first (the join keeps the lines' order for the merge join);
  // NOT EXISTS (a later delivery in the same order) then probes the few late ones' orders.
  Plan lines =
      Scan(c, "order_line", {"ol_w_id", "ol_d_id", "ol_o_id", "ol_i_id", "ol_delivery_d"})
          .HashJoin(german, {{Supplier("ol_w_id", "ol_i_id"), Col("su_suppkey")}})
          .MergeJoin(Orders(c, {"o_entry_d"}),
                     {{"ol_w_id", "o_w_id"}, {"ol_d_id", "o_d_id"}, {"ol_o_id", "o_id"}})
          .Filter(Col("ol_delivery_d") > Col("o_entry_d"))
          .IndexJoin(c, "order_line", {Col("ol_w_id"), Col("ol_d_id"), Col("ol_o_id")},
                     {"ol_delivery_d"}, JoinType::kAnti,
                     Col("l2.ol_delivery_d") > Col("ol_delivery_d"), "l2");
  return WithStock(lines, c, "ol_w_id", "ol_i_id")
      .Aggregate({{Col("su_name")}}, {Count().As("numwait")})
      .Sort({Desc("numwait"), "su_name"});
}

Plan Q22(const Catalog& c, const ChParams&) {
  Expr phone = In(Substr(Col("c_phone"), 1, 1),
                  {Str("1"), Str("2"), Str("3"), Str("4"), Str("5"), Str("6"), Str("7")});
  Plan average = Scan(c, "customer", {"c_phone", "c_balance"})
                     .Filter(And(Col("c_balance") > 0.0, phone))
                     .Aggregate({}, {Avg(Col("c_balance")).As("avg_balance")});
  return Scan(c, "customer", {"c_w_id", "c_d_id", "c_id", "c_state", "c_phone", "c_balance"})
      .Filter(And(phone, Col("c_balance") > Scalar(average)))
      .IndexJoin(c, "oorder_by_customer", {Col("c_w_id"), Col("c_d_id"), Col("c_id")}, {},
                 JoinType::kAnti)
      .Aggregate({{Substr(Col("c_state"), 1, 1), "country"}},
                 {Count().As("numcust"), Sum(Col("c_balance")).As("totacctbal")})
      .Sort({"country"});
}

using QueryFn = Plan (*)(const Catalog&, const ChParams&);
constexpr QueryFn kQueries[kChQueries] = {Q1,  Q2,  Q3,  Q4,  Q5,  Q6,  Q7,  Q8,  Q9,  Q10, Q11,
                                          Q12, Q13, Q14, Q15, Q16, Q17, Q18, Q19, Q20, Q21, Q22};

}  // namespace

ChParams ChParams::Now() {
  ChParams p;
  int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  p.far_future_us = now + 365 * query::kMicrosPerDay;
  return p;
}

Status ChQuery(int n, const query::Catalog& catalog, const ChParams& params, query::Plan* plan) {
  if (n < 1 || n > kChQueries) {
    return Status::InvalidArgument("there is no CH-benCHmark query " + std::to_string(n) +
                                   ": they are numbered 1 to 22");
  }
  *plan = kQueries[n - 1](catalog, params);
  return plan->status();
}

const char* ChAdaptation(int n) {
  switch (n) {
    case 6:
      return "upper bound ol_delivery_d < '2020-01-01' replaced by a year from now";
    case 12:
      return "upper bound ol_delivery_d < '2020-01-01' replaced by a year from now";
    case 14:
      return "upper bound ol_delivery_d < '2020-01-02' replaced by a year from now";
    default:
      return "";
  }
}

Status RunChQuery(const query::Catalog& catalog, const query::Plan& plan,
                  const query::QueryOptions& options, ChRun* run) {
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<query::ResultCursor> cursor;
  SM_TRY(query::ResultCursor::Open(catalog, plan, options, &cursor));
  const query::RowSchema schema = cursor->schema();
  // The rows are kept as they come (what a client of the cursor receives) and formatted as
  // text after the clock stops: the time is the query's, not the formatting's.
  query::RowStore rows(schema.size());
  for (;;) {
    const query::Value* row = nullptr;
    SM_TRY(cursor->Next(&row));
    if (row == nullptr) break;
    rows.Append(row);
  }
  run->rows_read = cursor->rows_read();
  if (options.analyze) run->explain_analyze = cursor->ExplainAnalyze();
  SM_TRY(cursor->Close());
  run->ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  run->rows.schema = schema;
  run->rows.rows.assign(rows.size(), std::vector<std::string>(schema.size()));
  run->rows.nulls.assign(rows.size(), std::vector<bool>(schema.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t i = 0; i < schema.size(); ++i) {
      run->rows.rows[r][i] = query::FormatValue(rows.row(r)[i], schema[i].type);
      run->rows.nulls[r][i] = rows.row(r)[i].null;
    }
  }
  return Status::OK();
}

namespace {

// Streams one table into an open file; *rows: the rows written.
Status ExportTable(const query::Catalog& catalog, const query::TableSchema& schema, FILE* out,
                   uint64_t* rows) {
  std::vector<std::string> columns;
  for (const query::Column& c : schema.columns()) columns.push_back(c.name);
  std::string line = query::CsvLine(columns);
  std::fwrite(line.data(), 1, line.size(), out);
  std::unique_ptr<query::ResultCursor> cursor;
  SM_TRY(query::ResultCursor::Open(catalog, query::Plan::Scan(catalog, schema.name(), columns), {},
                                   &cursor));
  std::vector<std::string> fields(columns.size());
  for (;;) {
    const query::Value* row = nullptr;
    SM_TRY(cursor->Next(&row));
    if (row == nullptr) break;
    for (size_t i = 0; i < fields.size(); ++i) {
      fields[i] = query::FormatValue(row[i], cursor->schema()[i].type);
    }
    line = query::CsvLine(fields);
    std::fwrite(line.data(), 1, line.size(), out);
    ++*rows;
  }
  return cursor->Close();
}

}  // namespace

Status ExportCsv(const query::Catalog& catalog, const std::string& dir,
                 const ExportProgress& done) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError("cannot make directory " + dir, errno);
  }
  for (const std::string& name : ChTableNames()) {
    const query::TableSchema* schema = nullptr;
    Table* table = nullptr;
    if (!catalog.Lookup(name, &schema, &table).ok()) continue;  // no CH tables
    auto start = std::chrono::steady_clock::now();
    std::string path = dir + "/" + name + ".csv";
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) return Status::IOError("cannot write " + path, errno);
    uint64_t rows = 0;
    Status s = ExportTable(catalog, *schema, out, &rows);
    if (std::fclose(out) != 0 && s.ok()) s = Status::IOError("cannot write " + path, errno);
    SM_TRY(s);
    if (done) {
      done(name, rows,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), path);
    }
  }
  return Status::OK();
}

}  // namespace sm::tpcc
