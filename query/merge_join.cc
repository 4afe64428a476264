// MergeJoin: a sort-merge join of two inputs that arrive sorted ascending on their key columns;
// inner and left outer.
//
// Owns: MergeJoinNode and MergeJoinOperator. The right input's rows of the current key (a
// group) are copied into a RowStore, so that every left row of that key can be joined with all
// of them; the left input streams.
//
// Semantics: NULL keys match nothing (a left row with one is kept, padded, by a left outer
// join). Inputs that are not sorted give wrong results, not an error: the plan's author chooses
// this join only over sorted inputs (a scan in key order, a Sort).
// Tuple lifetime: outputs are built in a TupleRing (owning strings above a window of 1).
#include <algorithm>
#include <memory>

#include "query/expr_eval.h"
#include "query/nodes.h"
#include "query/row_store.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

struct KeyColumns {
  std::vector<size_t> left, right;
  std::vector<Type> types;
};

class MergeJoinOperator final : public Operator {
 public:
  MergeJoinOperator(RowSchema schema, KeyColumns keys, JoinType type, std::string detail)
      : Operator("MergeJoin", std::move(schema)),
        keys_(std::move(keys)),
        type_(type),
        detail_(std::move(detail)) {}
  std::string detail() const override { return detail_; }
  void OutputModules(std::vector<std::string>* out) const override { out->push_back("merge_join"); }
  // Both inputs arrive in key order, so the left one's rows of a key range meet exactly the
  // right one's rows of that range: parts cut both at the same keys (parallel.h).
  Operator* streamed_input() const override { return left(); }
  // In an inner join a right key column equals its left one in every row.
  int streamed_column(size_t column) const override {
    const size_t left_width = left()->schema().size();
    if (column < left_width) return static_cast<int>(column);
    if (type_ != JoinType::kInner) return -1;
    for (size_t j = 0; j < keys_.right.size(); ++j) {
      if (keys_.right[j] == column - left_width) return static_cast<int>(keys_.left[j]);
    }
    return -1;
  }
  bool aligned_input(Operator** input, std::vector<size_t>* streamed_keys,
                     std::vector<size_t>* input_keys) const override {
    *input = right();
    *streamed_keys = keys_.left;
    *input_keys = keys_.right;
    return true;
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(OpenChildren(ctx));
    left_width_ = left()->schema().size();
    right_width_ = right()->schema().size();
    group_.Reset(right_width_);
    ring_.Init(schema().size(), requested_window());
    emitting_ = false;
    SM_TRY(left()->Next(&left_row_));
    return right()->Next(&right_row_);
  }

  Status NextImpl(const Value** row) override {
    *row = nullptr;
    for (;;) {
      if (emitting_) {
        if (group_index_ < group_.size()) {
          *row = Emit(group_.row(group_index_++));
          return Status::OK();
        }
        // The left row is done with the group; the next left row may share its key.
        SM_TRY(left()->Next(&left_row_));
        group_index_ = 0;
        emitting_ = left_row_ != nullptr && !NullKey(left_row_, keys_.left) &&
                    Compare(left_row_, keys_.left, group_.row(0), keys_.right) == 0;
        continue;
      }
      if (left_row_ == nullptr) return Status::OK();
      if (NullKey(left_row_, keys_.left)) {
        SM_TRY(Unmatched(row));
        if (*row != nullptr) return Status::OK();
        continue;
      }
      while (right_row_ != nullptr && NullKey(right_row_, keys_.right)) {
        SM_TRY(right()->Next(&right_row_));
      }
      int c = right_row_ == nullptr ? -1 : Compare(left_row_, keys_.left, right_row_, keys_.right);
      if (c > 0) {
        SM_TRY(right()->Next(&right_row_));
        continue;
      }
      if (c < 0) {
        SM_TRY(Unmatched(row));
        if (*row != nullptr) return Status::OK();
        continue;
      }
      SM_TRY(ReadGroup());
      emitting_ = true;
      group_index_ = 0;
    }
  }

  void CloseImpl() override { group_.Clear(); }

 private:
  Operator* left() const { return child(0); }
  Operator* right() const { return child(1); }

  bool NullKey(const Value* row, const std::vector<size_t>& columns) const {
    for (size_t c : columns) {
      if (row[c].null) return true;
    }
    return false;
  }
  int Compare(const Value* a, const std::vector<size_t>& ac, const Value* b,
              const std::vector<size_t>& bc) const {
    for (size_t i = 0; i < ac.size(); ++i) {
      const Value& x = a[ac[i]];
      const Value& y = b[bc[i]];
      // Keys are mostly integers: compared inline, without the generic comparison's call.
      int c = IsIntegral(keys_.types[i]) ? (x.i < y.i ? -1 : (x.i > y.i ? 1 : 0))
                                         : CompareValues(x, y, keys_.types[i]);
      if (c != 0) return c;
    }
    return 0;
  }
  // Copies the right rows equal to the current right row's key into group_.
  Status ReadGroup() {
    group_.Reset();
    group_.Append(right_row_);
    for (;;) {
      SM_TRY(right()->Next(&right_row_));
      if (right_row_ == nullptr ||
          Compare(right_row_, keys_.right, group_.row(0), keys_.right) != 0) {
        return Status::OK();
      }
      group_.Append(right_row_);
    }
  }
  // A left row without a match: padded for a left outer join; then the next left row.
  Status Unmatched(const Value** row) {
    if (type_ == JoinType::kLeftOuter) *row = Emit(nullptr);
    return left()->Next(&left_row_);
  }
  const Value* Emit(const Value* right_row) {
    Value* out = ring_.Advance();
    std::copy_n(left_row_, left_width_, out);
    if (right_row == nullptr) {
      std::fill_n(out + left_width_, right_width_, Value::Null());
    } else {
      std::copy_n(right_row, right_width_, out + left_width_);
    }
    ring_.Own(out);
    return out;
  }

  KeyColumns keys_;
  JoinType type_;
  std::string detail_;
  size_t left_width_ = 0, right_width_ = 0;
  const Value* left_row_ = nullptr;
  const Value* right_row_ = nullptr;
  RowStore group_;
  size_t group_index_ = 0;
  bool emitting_ = false;
  TupleRing ring_;
};

class MergeJoinNode final : public PlanNode {
 public:
  MergeJoinNode(NodePtr left, NodePtr right, std::vector<std::pair<std::string, std::string>> keys,
                JoinType type)
      : PlanNode("MergeJoin", Status::OK()), names_(std::move(keys)), type_(type) {
    set_status(Check(left->schema(), right->schema()));
    set_estimated_rows(left->estimated_rows());
    AddChild(std::move(left));
    AddChild(std::move(right));
  }
  std::string Detail() const override {
    std::string out = std::string(JoinTypeName(type_)) + " on ";
    for (size_t i = 0; i < names_.size(); ++i) {
      out += (i ? " AND " : "") + names_[i].first + " = " + names_[i].second;
    }
    return out;
  }

 private:
  Status Check(const RowSchema& left, const RowSchema& right) {
    if (type_ != JoinType::kInner && type_ != JoinType::kLeftOuter) {
      return Status::InvalidArgument("a merge join is inner or left outer");
    }
    if (names_.empty()) return Status::InvalidArgument("a merge join needs at least one key");
    for (const auto& [l, r] : names_) {
      size_t li = 0, ri = 0;
      SM_TRY(left.Resolve(l, &li));
      SM_TRY(right.Resolve(r, &ri));
      if (left[li].type != right[ri].type) {
        return Status::InvalidArgument(std::string("join keys of different types: ") +
                                       TypeName(left[li].type) + " " + l + " and " +
                                       TypeName(right[ri].type) + " " + r);
      }
      keys_.left.push_back(li);
      keys_.right.push_back(ri);
      keys_.types.push_back(left[li].type);
    }
    RowSchema schema = left;
    for (const OutputColumn& c : right.columns()) schema.Append(c);
    set_schema(std::move(schema));
    return Status::OK();
  }
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> left, right;
    SM_TRY(children()[0]->Instantiate(&left));
    SM_TRY(children()[1]->Instantiate(&right));
    auto op = std::make_unique<MergeJoinOperator>(schema(), keys_, type_, Detail());
    op->AddChild(std::move(left));
    op->AddChild(std::move(right));
    *out = std::move(op);
    return Status::OK();
  }
  std::vector<std::pair<std::string, std::string>> names_;
  JoinType type_;
  KeyColumns keys_;
};

}  // namespace

NodePtr MakeMergeJoinNode(NodePtr left, NodePtr right,
                          std::vector<std::pair<std::string, std::string>> keys, JoinType type) {
  return std::make_shared<MergeJoinNode>(std::move(left), std::move(right), std::move(keys), type);
}

}  // namespace sm::query
