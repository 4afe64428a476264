// What the index joins share (internal to the query layer): the description of a join into a
// table's B-tree by a prefix of its key, and the encoding of an outer row's probe key.
//
// Two operators run such a join: IndexJoin probes the B-tree once per outer row
// (index_join.cc); IndexOrRadixJoin, for point semi and anti joins, chooses at run time
// between those probes and a radix-clustered hash join of all the outer rows with a scan of
// the table (index_or_radix_join.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "query/expr.h"
#include "query/operator.h"
#include "query/plan.h"
#include "query/schema.h"

namespace sm::query {

class BoundExpr;

struct IndexJoinSpec {
  Table* table = nullptr;
  const TableSchema* table_schema = nullptr;
  std::vector<const Column*> key_columns;  // the inner key's columns probed, in order
  std::vector<Expr> key_prefix;
  std::vector<const Column*> columns;  // the inner columns produced
  RowSchema inner_schema;
  bool point = false;  // the prefix is the whole key: Get instead of a scan
  JoinType type = JoinType::kInner;
  Expr residual;
};

// Encodes the probe key of `row` (the values of `keys`, bound over the outer schema, as the
// key columns store them) into *key; false if a value is NULL or one its column cannot hold
// (a negative id), which no row of the table can match.
bool EncodeProbeKey(const std::vector<std::unique_ptr<BoundExpr>>& keys,
                    const std::vector<const Column*>& key_columns, const Value* row,
                    std::string* key);

// The operator of a point semi or anti join without a residual that chooses between index
// probes and a radix-clustered hash join (index_or_radix_join.cc); its child is the outer.
std::unique_ptr<Operator> MakeIndexOrRadixJoinOperator(RowSchema schema, const IndexJoinSpec& spec,
                                                       std::string detail);

}  // namespace sm::query
