// HashJoin: reads its build input into a hash table on the join keys, then streams its probe
// input through it; inner, left outer, semi and anti joins, with an optional residual
// predicate over the probe's columns followed by the build's.
//
// Owns: HashJoinNode and HashJoinOperator, whose build and probe phases are separate methods
// (Build, Probe*), as the two modules of the join.
//
// Semantics: a NULL key matches nothing (SQL equality), so a probe row with a NULL key is kept
// by left outer and anti joins and dropped by inner and semi ones; a match needs equal keys
// and a true residual.
// Tuple lifetime: build rows live in a RowStore until Close; inner and left-outer outputs are
// built in a TupleRing; semi and anti joins return probe tuples, copied into the ring when the
// window is above 1 (TupleRing::Keep).
#include <algorithm>
#include <memory>

#include "query/expr_eval.h"
#include "query/hash.h"
#include "query/nodes.h"
#include "query/row_store.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

std::string JoinText(JoinType type, const std::vector<JoinKey>& keys, const Expr& residual) {
  std::string out = JoinTypeName(type);
  out += " on ";
  for (size_t i = 0; i < keys.size(); ++i) {
    out += (i ? " AND " : "") + keys[i].left.ToString() + " = " + keys[i].right.ToString();
  }
  if (residual.valid()) out += " residual " + residual.ToString();
  return out;
}

RowSchema Concat(const RowSchema& a, const RowSchema& b) {
  RowSchema out = a;
  for (const OutputColumn& c : b.columns()) out.Append(c);
  return out;
}

bool EmitsBuildColumns(JoinType type) {
  return type == JoinType::kInner || type == JoinType::kLeftOuter;
}

class HashJoinOperator final : public Operator {
 public:
  HashJoinOperator(RowSchema schema, std::vector<JoinKey> keys, JoinType type, const Expr& residual,
                   std::string detail)
      : Operator("HashJoin", std::move(schema)),
        keys_(std::move(keys)),
        type_(type),
        residual_expr_(residual),
        detail_(std::move(detail)) {}
  std::string detail() const override { return detail_; }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(BindKeys(ctx));
    SM_TRY(build()->Open(ctx));
    SM_TRY(Build());
    ring_.Init(schema().size(), requested_window());
    probe_row_ = nullptr;
    return probe()->Open(ctx);
  }

  Status NextImpl(const Value** row) override {
    for (;;) {
      if (probe_row_ == nullptr) {
        SM_TRY(probe()->Next(&probe_row_));
        if (probe_row_ == nullptr) {
          *row = nullptr;
          return Status::OK();
        }
        StartProbe();
      }
      if (const Value* out = ProbeStep(); out != nullptr) {
        *row = out;
        return Status::OK();
      }
    }
  }

  void CloseImpl() override {
    table_.Clear();
    heads_.clear();
    next_.clear();
    hashes_.clear();
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  Operator* probe() const { return child(0); }
  Operator* build() const { return child(1); }

  Status BindKeys(ExecContext* ctx) {
    std::vector<Expr> left, right;
    for (const JoinKey& k : keys_) {
      left.push_back(k.left);
      right.push_back(k.right);
    }
    SM_TRY(BindAll(left, probe()->schema(), &probe_keys_));
    SM_TRY(BindAll(right, build()->schema(), &build_keys_));
    key_types_.clear();
    for (auto& k : probe_keys_) {
      SM_TRY(k->Prepare(ctx));
      key_types_.push_back(k->type());
    }
    for (auto& k : build_keys_) SM_TRY(k->Prepare(ctx));
    residual_.reset();
    if (residual_expr_.valid()) {
      SM_TRY(
          BindPredicate(residual_expr_, Concat(probe()->schema(), build()->schema()), &residual_));
      SM_TRY(residual_->Prepare(ctx));
    }
    probe_width_ = probe()->schema().size();
    build_width_ = build()->schema().size();
    scratch_.assign(probe_width_ + build_width_, Value());
    key_values_.assign(keys_.size(), Value());
    return Status::OK();
  }

  // The build phase: every build row with non-NULL keys, stored with its key values after its
  // columns, chained from its hash bucket.
  Status Build() {
    table_.Reset(build_width_ + keys_.size());
    hashes_.clear();
    next_.clear();
    std::vector<Value> row_and_keys(build_width_ + keys_.size());
    for (;;) {
      const Value* row = nullptr;
      SM_TRY(build()->Next(&row));
      if (row == nullptr) break;
      bool null_key = false;
      for (size_t i = 0; i < keys_.size(); ++i) {
        row_and_keys[build_width_ + i] = build_keys_[i]->Eval(row);
        null_key |= row_and_keys[build_width_ + i].null;
      }
      if (null_key) continue;
      for (size_t i = 0; i < build_width_; ++i) row_and_keys[i] = row[i];
      const Value* stored = table_.Append(row_and_keys.data());
      hashes_.push_back(HashKeys(stored + build_width_, key_types_));
    }
    size_t buckets = 16;
    while (buckets < table_.size() * 2) buckets *= 2;
    heads_.assign(buckets, kNone);
    next_.assign(table_.size(), kNone);
    mask_ = buckets - 1;
    // Chains in insertion order (the last row inserted first would reverse duplicates).
    for (size_t r = table_.size(); r-- > 0;) {
      size_t b = hashes_[r] & mask_;
      next_[r] = heads_[b];
      heads_[b] = static_cast<uint32_t>(r);
    }
    return Status::OK();
  }

  void StartProbe() {
    bool null_key = false;
    for (size_t i = 0; i < keys_.size(); ++i) {
      key_values_[i] = probe_keys_[i]->Eval(probe_row_);
      null_key |= key_values_[i].null;
    }
    probe_hash_ = null_key ? 0 : HashKeys(key_values_.data(), key_types_);
    candidate_ = null_key ? kNone : heads_[probe_hash_ & mask_];
    matched_ = false;
  }

  // The next build row that matches the current probe row, or kNone.
  uint32_t NextMatch() {
    while (candidate_ != kNone) {
      uint32_t r = candidate_;
      candidate_ = next_[r];
      const Value* stored = table_.row(r);
      if (hashes_[r] != probe_hash_ ||
          !KeysEqual(stored + build_width_, key_values_.data(), key_types_)) {
        continue;
      }
      if (residual_ != nullptr) {
        Combine(scratch_.data(), stored);
        if (!residual_->Test(scratch_.data())) continue;
      }
      return r;
    }
    return kNone;
  }

  void Combine(Value* out, const Value* build_row) const {
    std::copy_n(probe_row_, probe_width_, out);
    if (build_row == nullptr) {
      std::fill_n(out + probe_width_, build_width_, Value::Null());
    } else {
      std::copy_n(build_row, build_width_, out + probe_width_);
    }
  }

  // One step of the probe phase for the current probe row: an output tuple, or null when the
  // row is done (probe_row_ is then cleared).
  const Value* ProbeStep() {
    uint32_t r = NextMatch();
    switch (type_) {
      case JoinType::kInner:
        if (r != kNone) return Emit(table_.row(r));
        break;
      case JoinType::kLeftOuter:
        if (r != kNone) {
          matched_ = true;
          return Emit(table_.row(r));
        }
        if (!matched_) {
          const Value* out = Emit(nullptr);
          probe_row_ = nullptr;
          return out;
        }
        break;
      case JoinType::kSemi:
        if (r != kNone) {
          const Value* out = ring_.Keep(probe_row_);
          probe_row_ = nullptr;
          return out;
        }
        break;
      case JoinType::kAnti:
        if (r == kNone) {
          const Value* out = ring_.Keep(probe_row_);
          probe_row_ = nullptr;
          return out;
        }
        break;
    }
    probe_row_ = nullptr;
    return nullptr;
  }

  const Value* Emit(const Value* build_row) {
    Value* out = ring_.Advance();
    Combine(out, build_row);
    ring_.Own(out);
    return out;
  }

  std::vector<JoinKey> keys_;
  JoinType type_;
  Expr residual_expr_;
  std::string detail_;
  std::vector<std::unique_ptr<BoundExpr>> probe_keys_, build_keys_;
  std::unique_ptr<BoundExpr> residual_;
  std::vector<Type> key_types_;
  size_t probe_width_ = 0, build_width_ = 0;

  RowStore table_;                // build rows, each followed by its key values
  std::vector<uint64_t> hashes_;  // per build row
  std::vector<uint32_t> heads_;   // per bucket: the first build row, or kNone
  std::vector<uint32_t> next_;    // per build row: the next in its bucket's chain
  size_t mask_ = 0;

  const Value* probe_row_ = nullptr;
  std::vector<Value> key_values_;
  uint64_t probe_hash_ = 0;
  uint32_t candidate_ = kNone;
  bool matched_ = false;
  std::vector<Value> scratch_;
  TupleRing ring_;
};

class HashJoinNode final : public PlanNode {
 public:
  HashJoinNode(NodePtr probe, NodePtr build, std::vector<JoinKey> keys, JoinType type,
               const Expr& residual)
      : PlanNode("HashJoin", Status::OK()),
        keys_(std::move(keys)),
        type_(type),
        residual_(residual) {
    set_status(Check(probe->schema(), build->schema()));
    set_estimated_rows(probe->estimated_rows());
    AddChild(std::move(probe));
    AddChild(std::move(build));
  }
  std::string Detail() const override { return JoinText(type_, keys_, residual_); }

 private:
  Status Check(const RowSchema& probe, const RowSchema& build) {
    if (keys_.empty()) return Status::InvalidArgument("a hash join needs at least one key");
    for (const JoinKey& k : keys_) {
      std::unique_ptr<BoundExpr> left, right;
      SM_TRY(Bind(k.left, probe, &left));
      SM_TRY(Bind(k.right, build, &right));
      if (left->type() != right->type()) {
        return Status::InvalidArgument(std::string("join keys of different types: ") +
                                       TypeName(left->type()) + " " + k.left.ToString() + " and " +
                                       TypeName(right->type()) + " " + k.right.ToString());
      }
    }
    if (residual_.valid()) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(BindPredicate(residual_, Concat(probe, build), &bound));
    }
    set_schema(EmitsBuildColumns(type_) ? Concat(probe, build) : probe);
    return Status::OK();
  }
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> probe, build;
    SM_TRY(children()[0]->Instantiate(&probe));
    SM_TRY(children()[1]->Instantiate(&build));
    auto op = std::make_unique<HashJoinOperator>(schema(), keys_, type_, residual_, Detail());
    op->AddChild(std::move(probe));
    op->AddChild(std::move(build));
    *out = std::move(op);
    return Status::OK();
  }
  std::vector<JoinKey> keys_;
  JoinType type_;
  Expr residual_;
};

}  // namespace

NodePtr MakeHashJoinNode(NodePtr probe, NodePtr build, std::vector<JoinKey> keys, JoinType type,
                         const Expr& residual) {
  return std::make_shared<HashJoinNode>(std::move(probe), std::move(build), std::move(keys), type,
                                        residual);
}

}  // namespace sm::query
