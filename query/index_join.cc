// IndexJoin: an index nested-loop join that probes the inner table's B-tree once per outer row,
// with the outer row's values as a prefix of the inner key (a point read when they make the
// whole key, a prefix scan otherwise).
//
// Owns: IndexJoinNode and IndexJoinOperator.
//
// Semantics as HashJoin's: inner, left outer, semi and anti, a residual over the outer columns
// followed by the inner ones, and NULL key values match nothing (as does a value no key column
// can hold, such as a negative id).
// Tuple lifetime: inner and left-outer outputs are built in a TupleRing whose slots own their
// strings when the window is above 1 (the inner row's bytes are the operator's own copy, which
// the next probe replaces); semi and anti joins return outer tuples, copied when the window is
// above 1 (TupleRing::Keep).
#include "query/index_join.h"

#include <memory>

#include "query/expr_eval.h"
#include "query/nodes.h"
#include "sm/common/assert.h"

namespace sm::query {

bool EncodeProbeKey(const std::vector<std::unique_ptr<BoundExpr>>& keys,
                    const std::vector<const Column*>& key_columns, const Value* row,
                    std::string* key) {
  key->clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    Value v = keys[i]->Eval(row);
    if (v.null || !AppendKeyValue(*key_columns[i], v, key)) return false;
  }
  return true;
}

namespace {

RowSchema Concat(const RowSchema& a, const RowSchema& b) {
  RowSchema out = a;
  for (const OutputColumn& c : b.columns()) out.Append(c);
  return out;
}

bool EmitsInnerColumns(JoinType type) {
  return type == JoinType::kInner || type == JoinType::kLeftOuter;
}

class IndexJoinOperator final : public Operator {
 public:
  IndexJoinOperator(RowSchema schema, const IndexJoinSpec& spec, std::string detail)
      : Operator("IndexJoin", std::move(schema)), spec_(spec), detail_(std::move(detail)) {}
  std::string detail() const override { return detail_; }
  void OutputModules(std::vector<std::string>* out) const override { out->push_back("index_join"); }
  Operator* streamed_input() const override { return outer(); }
  InputOrder input_order(size_t child) const override {
    return child == 0 ? InputOrder::kPassedOn : InputOrder::kNeeded;
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    txn_ = ctx->txn;
    if (txn_ == nullptr) return Status::InvalidArgument("an index join needs a transaction");
    SM_TRY(BindAll(spec_.key_prefix, outer()->schema(), &keys_));
    for (auto& k : keys_) SM_TRY(k->Prepare(ctx));
    residual_.reset();
    if (spec_.residual.valid()) {
      SM_TRY(
          BindPredicate(spec_.residual, Concat(outer()->schema(), spec_.inner_schema), &residual_));
      SM_TRY(residual_->Prepare(ctx));
    }
    outer_width_ = outer()->schema().size();
    scratch_.assign(outer_width_ + spec_.columns.size(), Value());
    ring_.Init(schema().size(), requested_window());
    outer_row_ = nullptr;
    return OpenChildren(ctx);
  }

  Status NextImpl(const Value** row) override {
    *row = nullptr;
    for (;;) {
      if (outer_row_ == nullptr) {
        SM_TRY(outer()->Next(&outer_row_));
        if (outer_row_ == nullptr) return Status::OK();
        SM_TRY(StartProbe());
      }
      bool found = false;
      SM_TRY(NextMatch(&found));
      if (const Value* out = Step(found)) {
        *row = out;
        return Status::OK();
      }
    }
  }

  void CloseImpl() override { cursor_.reset(); }

 private:
  Operator* outer() const { return child(0); }

  // Encodes the probe key; a NULL or unrepresentable value leaves nothing to find.
  Status StartProbe() {
    matched_ = false;
    exhausted_ = false;
    if (!EncodeProbeKey(keys_, spec_.key_columns, outer_row_, &key_)) {
      exhausted_ = true;
      return Status::OK();
    }
    if (spec_.point) {
      Status s = spec_.table->Get(txn_, key_, &value_);
      if (s.IsNotFound()) {
        exhausted_ = true;
        return Status::OK();
      }
      SM_TRY(s);
      point_pending_ = true;
      return Status::OK();
    }
    SM_TRY(spec_.table->NewCursor(txn_, ScanOptions::Prefix(key_), &cursor_));
    cursor_started_ = false;
    return Status::OK();
  }

  // Positions on the next inner row of the probe that passes the residual; decodes it into
  // scratch_ (after the outer columns).
  Status NextMatch(bool* found) {
    *found = false;
    while (!exhausted_) {
      std::string_view key, value;
      if (spec_.point) {
        if (!point_pending_) {
          exhausted_ = true;
          break;
        }
        point_pending_ = false;
        key = key_;
        value = value_;
      } else {
        if (cursor_started_) SM_TRY(cursor_->Next());
        cursor_started_ = true;
        if (!cursor_->Valid()) {
          exhausted_ = true;
          break;
        }
        key = cursor_->key();
        value = cursor_->value();
      }
      CountRowRead();
      if (key.size() < spec_.table_schema->fixed_key_bytes() ||
          value.size() < spec_.table_schema->fixed_value_bytes()) {
        return Status::Corruption("table " + spec_.table_schema->name() +
                                  ": a row is shorter than its schema's fixed bytes");
      }
      for (size_t i = 0; i < outer_width_; ++i) scratch_[i] = outer_row_[i];
      for (size_t i = 0; i < spec_.columns.size(); ++i) {
        scratch_[outer_width_ + i] = DecodeColumn(*spec_.columns[i], key, value);
      }
      if (residual_ == nullptr || residual_->Test(scratch_.data())) {
        *found = true;
        return Status::OK();
      }
    }
    return Status::OK();
  }

  // The output for this step of the current outer row, or null when the row is done.
  const Value* Step(bool found) {
    switch (spec_.type) {
      case JoinType::kInner:
        if (found) return Emit();
        break;
      case JoinType::kLeftOuter:
        if (found) {
          matched_ = true;
          return Emit();
        }
        if (!matched_) {
          for (size_t i = 0; i < outer_width_; ++i) scratch_[i] = outer_row_[i];
          for (size_t i = outer_width_; i < scratch_.size(); ++i) scratch_[i] = Value::Null();
          outer_row_ = nullptr;
          return Emit();
        }
        break;
      case JoinType::kSemi:
      case JoinType::kAnti:
        if (found == (spec_.type == JoinType::kSemi)) {  // semi: a match; anti: none
          const Value* out = ring_.Keep(outer_row_);
          outer_row_ = nullptr;
          return out;
        }
        break;
    }
    outer_row_ = nullptr;
    return nullptr;
  }

  const Value* Emit() {
    Value* out = ring_.Advance();
    for (size_t i = 0; i < scratch_.size(); ++i) out[i] = scratch_[i];
    ring_.Own(out);
    return out;
  }

  IndexJoinSpec spec_;
  std::string detail_;
  Transaction* txn_ = nullptr;
  std::vector<std::unique_ptr<BoundExpr>> keys_;
  std::unique_ptr<BoundExpr> residual_;
  size_t outer_width_ = 0;
  const Value* outer_row_ = nullptr;
  std::string key_, value_;
  std::unique_ptr<Cursor> cursor_;
  bool cursor_started_ = false;
  bool point_pending_ = false;
  bool exhausted_ = false;
  bool matched_ = false;
  std::vector<Value> scratch_;
  TupleRing ring_;
};

class IndexJoinNode final : public PlanNode {
 public:
  explicit IndexJoinNode(const char* name) : PlanNode(name, Status::OK()) {}

  Status Build(NodePtr outer, const Catalog& catalog, std::string_view table,
               std::vector<Expr> key_prefix, std::vector<std::string> columns, JoinType type,
               const Expr& residual, std::string alias, bool or_radix) {
    const RowSchema& outer_schema = outer->schema();
    set_estimated_rows(outer->estimated_rows());
    AddChild(std::move(outer));
    SM_TRY(catalog.Lookup(table, &spec_.table_schema, &spec_.table));
    spec_.type = type;
    spec_.residual = residual;
    spec_.key_prefix = std::move(key_prefix);
    alias_ = std::move(alias);
    SM_TRY(CheckKeys(outer_schema));
    or_radix_ = or_radix;
    if (or_radix_ && (!spec_.point || (type != JoinType::kSemi && type != JoinType::kAnti))) {
      return Status::InvalidArgument("an index-or-radix join into " + spec_.table_schema->name() +
                                     " is a semi or anti join on the whole key");
    }
    for (const std::string& name : columns) {
      int index = spec_.table_schema->Find(name);
      if (index < 0) {
        return Status::InvalidArgument("table " + spec_.table_schema->name() + " has no column '" +
                                       name + "'");
      }
      const Column& c = spec_.table_schema->columns()[static_cast<size_t>(index)];
      spec_.columns.push_back(&c);
      spec_.inner_schema.Append({alias_.empty() ? c.name : alias_ + "." + c.name, c.type});
    }
    if (residual.valid()) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(BindPredicate(residual, Concat(outer_schema, spec_.inner_schema), &bound));
    }
    set_schema(EmitsInnerColumns(type) ? Concat(outer_schema, spec_.inner_schema) : outer_schema);
    return Status::OK();
  }

  std::string Detail() const override {
    std::string out = std::string(JoinTypeName(spec_.type)) + " " + spec_.table_schema->name();
    if (!alias_.empty()) out += " " + alias_;
    out += or_radix_ ? " key (" : spec_.point ? " get (" : " prefix (";
    for (size_t i = 0; i < spec_.key_prefix.size(); ++i) {
      out += (i ? ", " : "") + spec_.key_columns[i]->name + " = " + spec_.key_prefix[i].ToString();
    }
    out += ")";
    if (spec_.residual.valid()) out += " residual " + spec_.residual.ToString();
    return out;
  }

 private:
  Status CheckKeys(const RowSchema& outer_schema) {
    std::vector<const Column*> key;
    SM_TRY(spec_.table_schema->KeyColumns(&key));
    if (spec_.key_prefix.empty() || spec_.key_prefix.size() > key.size()) {
      return Status::InvalidArgument("an index join into " + spec_.table_schema->name() +
                                     " needs 1 to " + std::to_string(key.size()) +
                                     " key values, not " + std::to_string(spec_.key_prefix.size()));
    }
    uint32_t bytes = 0;
    for (size_t i = 0; i < spec_.key_prefix.size(); ++i) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(Bind(spec_.key_prefix[i], outer_schema, &bound));
      if (!IsIntegral(bound->type()) || bound->type() == Type::kBool) {
        return Status::InvalidArgument("index join key " + spec_.key_prefix[i].ToString() +
                                       " is a " + TypeName(bound->type()) + "; key column " +
                                       key[i]->name + " holds integers");
      }
      spec_.key_columns.push_back(key[i]);
      bytes += key[i]->width;
    }
    spec_.point =
        bytes == spec_.table_schema->fixed_key_bytes() && spec_.key_prefix.size() == key.size();
    return Status::OK();
  }

  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> outer;
    SM_TRY(children()[0]->Instantiate(&outer));
    std::unique_ptr<Operator> op;
    if (or_radix_) {
      op = MakeIndexOrRadixJoinOperator(schema(), spec_, Detail());
    } else {
      op = std::make_unique<IndexJoinOperator>(schema(), spec_, Detail());
    }
    op->AddChild(std::move(outer));
    *out = std::move(op);
    return Status::OK();
  }

  IndexJoinSpec spec_;
  std::string alias_;
  bool or_radix_ = false;
};

NodePtr MakeNode(NodePtr outer, const Catalog& catalog, std::string_view table,
                 std::vector<Expr> key_prefix, std::vector<std::string> columns, JoinType type,
                 const Expr& residual, std::string alias, bool or_radix) {
  auto node = std::make_shared<IndexJoinNode>(or_radix ? "IndexOrRadixJoin" : "IndexJoin");
  if (Status s = node->Build(std::move(outer), catalog, table, std::move(key_prefix),
                             std::move(columns), type, residual, std::move(alias), or_radix);
      !s.ok()) {
    return MakeErrorNode(s);
  }
  return node;
}

}  // namespace

NodePtr MakeIndexJoinNode(NodePtr outer, const Catalog& catalog, std::string_view table,
                          std::vector<Expr> key_prefix, std::vector<std::string> columns,
                          JoinType type, const Expr& residual, std::string alias) {
  return MakeNode(std::move(outer), catalog, table, std::move(key_prefix), std::move(columns), type,
                  residual, std::move(alias), false);
}

NodePtr MakeIndexOrRadixJoinNode(NodePtr outer, const Catalog& catalog, std::string_view table,
                                 std::vector<Expr> key, JoinType type) {
  return MakeNode(std::move(outer), catalog, table, std::move(key), {}, type, Expr(),
                  std::string(), true);
}

}  // namespace sm::query
