// Plans: trees of plan nodes built in C++ with Plan's builder methods, checked as they are built,
// and turned into operator trees to run.
//
// Owns: PlanNode (one node of a plan: its output schema, its checked state, and how it makes its
// operator), Plan (the builder handle), the argument types of the builder (NamedExpr, JoinKey,
// Agg, SortKey), and Explain.
//
// Building a plan (no SQL parser; hand-chosen join orders and algorithms):
//
//   Plan lines = Plan::Scan(catalog, "order_line",
//                           {"ol_number", "ol_quantity", "ol_amount", "ol_delivery_d"})
//                    .Filter(Col("ol_delivery_d") > Date("2007-01-02"));
//   Plan q1 = lines.Aggregate({{Col("ol_number")}},
//                             {Sum(Col("ol_quantity")).As("sum_qty"), Count().As("count_order")})
//                  .Sort({{"ol_number"}});
//   if (!q1.status().ok()) ...   // a malformed plan says what is wrong, before it runs
//
// Every builder method checks its arguments against its input's schema (names resolve, types
// agree, join keys have one type) and returns a plan that carries the first error it met:
// later methods pass it on, so a chain of calls needs one status check at the end.
//
// Invariants:
//   1. A PlanNode is immutable once built and may be shared: a node used in two places of a
//      tree (or of two trees) runs twice, unless it is a Materialize node, whose rows are
//      computed once per execution and shared.
//   2. status().ok() implies every expression of the node is bound against its children's
//      schemas and schema() is the schema its operator produces.
//
// Thread/fiber safety: plans are immutable values; Instantiate makes operators a single thread
// uses, so one plan may run on several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "query/expr.h"
#include "query/operator.h"
#include "query/schema.h"
#include "sm/common/status.h"

namespace sm::query {

// A buffer's default size (the paper's: no gain above it) and the largest one accepted.
inline constexpr uint32_t kDefaultBufferTuples = 1000;
inline constexpr uint32_t kMaxBufferTuples = 1u << 20;

class PlanNode {
 public:
  // A stored error is handed out as copies (status()), which callers check; the stored one is
  // marked checked so that destroying the node is not taken for an ignored error.
  PlanNode(std::string name, Status status) : name_(std::move(name)), status_(std::move(status)) {
    status_.PermitUnchecked();
  }
  virtual ~PlanNode() = default;
  PlanNode(const PlanNode&) = delete;
  PlanNode& operator=(const PlanNode&) = delete;

  const std::string& name() const { return name_; }
  const Status& status() const { return status_; }
  const RowSchema& schema() const { return schema_; }
  const std::vector<std::shared_ptr<PlanNode>>& children() const { return children_; }
  // What EXPLAIN prints after the name.
  virtual std::string Detail() const { return std::string(); }
  // Rows this node is expected to return, or < 0 if unknown.
  double estimated_rows() const { return estimated_rows_; }
  void set_estimated_rows(double rows) { estimated_rows_ = rows; }
  // Makes a fresh operator tree for this node (status() must be OK).
  [[nodiscard]] Status Instantiate(std::unique_ptr<Operator>* out) const;

 protected:
  virtual Status MakeOperator(std::unique_ptr<Operator>* out) const = 0;
  void set_schema(RowSchema schema) { schema_ = std::move(schema); }
  void set_status(Status s) {
    status_ = std::move(s);
    status_.PermitUnchecked();
  }
  void AddChild(std::shared_ptr<PlanNode> child) { children_.push_back(std::move(child)); }

 private:
  std::string name_;
  Status status_;
  RowSchema schema_;
  std::vector<std::shared_ptr<PlanNode>> children_;
  double estimated_rows_ = -1;
};

// An expression and the name of the column it produces.
struct NamedExpr {
  NamedExpr(Expr e) : expr(std::move(e)), name(expr.DefaultName()) {}  // NOLINT: implicit
  NamedExpr(Expr e, std::string n) : expr(std::move(e)), name(std::move(n)) {}
  Expr expr;
  std::string name;
};

enum class JoinType : uint8_t {
  kInner,
  kLeftOuter,  // every probe (left) row, with NULLs where nothing matched
  kSemi,       // the probe rows with at least one match (EXISTS, IN)
  kAnti,       // the probe rows with no match (NOT EXISTS, NOT IN over non-NULL keys)
};
const char* JoinTypeName(JoinType type);

// An equality of the join: `left` over the probe (outer) input, `right` over the build (inner)
// input; both of one type.
struct JoinKey {
  Expr left;
  Expr right;
};

enum class AggKind : uint8_t { kCountStar, kCount, kCountDistinct, kSum, kAvg, kMin, kMax };
const char* AggKindName(AggKind kind);

// An aggregate function: Count(), Sum(Col("x")).As("total").
struct Agg {
  AggKind kind = AggKind::kCountStar;
  Expr arg;
  std::string name;
  Agg As(std::string n) const {
    Agg a = *this;
    a.name = std::move(n);
    return a;
  }
};
Agg Count();               // COUNT(*)
Agg Count(const Expr& e);  // non-NULL values
Agg CountDistinct(const Expr& e);
Agg Sum(const Expr& e);  // int -> int, money -> money, double -> double; NULL over no rows
Agg Avg(const Expr& e);  // double (money in currency units); NULL over no rows
Agg Min(const Expr& e);
Agg Max(const Expr& e);

enum class AggStrategy : uint8_t {
  kHash,  // a hash table of groups; any input order
  kSort,  // groups are runs of the input, which must arrive sorted on the group keys
};

struct SortKey {
  SortKey(std::string c, bool d = false) : column(std::move(c)), descending(d) {}  // NOLINT
  SortKey(const char* c, bool d = false) : column(c), descending(d) {}             // NOLINT
  std::string column;
  bool descending = false;
};
inline SortKey Desc(std::string column) { return SortKey(std::move(column), true); }

// A key range of a table scan over the table's key columns: each bound is a list of values for
// a prefix of the key columns, in key order (an empty list: unbounded).
struct KeyRange {
  std::vector<Expr> lower;  // inclusive
  std::vector<Expr> upper;  // inclusive prefix: every key that starts with these values
};

class Plan {
 public:
  Plan() = default;
  explicit Plan(std::shared_ptr<PlanNode> node) : node_(std::move(node)) {}

  // ---- sources ----
  // Scans `table` in key order, producing `columns` (names of its schema), optionally only the
  // keys in `range`. With an alias the columns are named "alias.column" (for self-joins).
  static Plan Scan(const Catalog& catalog, std::string_view table, std::vector<std::string> columns,
                   KeyRange range = {}, std::string alias = std::string());

  // ---- operators over this plan ----
  // Rows for which `predicate` is true. Directly over a Scan it runs inside the scan.
  Plan Filter(const Expr& predicate) const;
  Plan Project(std::vector<NamedExpr> columns) const;
  // A hash join: `build` is read into a hash table on its key values, then this plan's rows
  // probe it. `residual` (over the probe's columns followed by the build's) must also hold for
  // a match. Inner and left-outer joins produce probe columns then build columns; semi and
  // anti joins the probe's only.
  Plan HashJoin(const Plan& build, std::vector<JoinKey> keys, JoinType type = JoinType::kInner,
                const Expr& residual = Expr()) const;
  // An index nested-loop join: for each row of this plan, the rows of `table` whose key starts
  // with the values of `key_prefix` (expressions over this plan's row, one per leading key
  // column of the table, in order), looked up in the table's B-tree; produces this plan's
  // columns then `columns` of the table (none for semi / anti).
  Plan IndexJoin(const Catalog& catalog, std::string_view table, std::vector<Expr> key_prefix,
                 std::vector<std::string> columns, JoinType type = JoinType::kInner,
                 const Expr& residual = Expr(), std::string alias = std::string()) const;
  // A semi or anti join of this plan's rows with the rows of `table` whose whole key equals
  // the values of `key` (one expression per key column, in order), run by whichever of two
  // ways costs less once this plan's rows are all read and counted: an index probe per row
  // (IndexJoin), or a scan of the table's keys and a hash join of the two key sets, radix-
  // clustered where the cost model of radix_model.h says that pays. The choice weighs probes
  // and scanned rows timed on a sample against the table's row estimate; EXPLAIN ANALYZE shows
  // it and why. Produces this plan's rows in their order, read in full before the first.
  Plan IndexOrRadixJoin(const Catalog& catalog, std::string_view table, std::vector<Expr> key,
                        JoinType type) const;
  // A sort-merge join of this plan and `right`, both sorted ascending on their key columns
  // (named columns, one type per pair); inner or left-outer.
  Plan MergeJoin(const Plan& right, std::vector<std::pair<std::string, std::string>> keys,
                 JoinType type = JoinType::kInner) const;
  Plan Aggregate(std::vector<NamedExpr> group_by, std::vector<Agg> aggregates,
                 AggStrategy strategy = AggStrategy::kHash) const;
  Plan Sort(std::vector<SortKey> keys) const;
  Plan TopN(std::vector<SortKey> keys, uint64_t n) const;
  Plan Limit(uint64_t n) const;
  // This plan's rows pulled `tuples` at a time and then served one per call (the buffer
  // operator of Zhou & Ross): the code below and above it runs in turns of `tuples` calls.
  Plan Buffer(uint32_t tuples = kDefaultBufferTuples) const;
  // Computes this plan's rows once per execution and serves them to every place the returned
  // plan is used (a view or subquery read twice).
  Plan Materialize() const;
  // Overrides the row estimate EXPLAIN shows (and plan refinement reads).
  Plan Estimate(double rows) const;

  [[nodiscard]] Status status() const;
  const RowSchema& schema() const;
  const std::shared_ptr<PlanNode>& node() const { return node_; }
  // The plan tree, one node a line, with estimated rows.
  std::string Explain() const;

 private:
  std::shared_ptr<PlanNode> node_;
};

// The single value of a one-row, one-column plan (see Scalar in expr.h).
inline Expr Scalar(const Plan& plan) { return Scalar(plan.node()); }

// Runs `plan` (one column) in `ctx`'s transaction and returns its only value: NULL if it has
// no row, InvalidArgument if it has more. String bytes go to *storage.
[[nodiscard]] Status EvaluateScalar(const PlanNode& plan, ExecContext* ctx, Value* value,
                                    std::string* storage);

// The plan tree of a running or finished query: each operator with its estimated rows and,
// after an analyzed run, its actual rows and time.
std::string ExplainOperators(const Operator& root, bool analyzed);

}  // namespace sm::query
