// HashJoin: reads its build input into a hash table on the join keys, then streams its probe
// input through it; inner, left outer, semi and anti joins, with an optional residual
// predicate over the probe's columns followed by the build's.
//
// Owns: HashJoinNode and HashJoinOperator, whose build and probe phases are separate methods
// (Build; FillBatch and Probe*), as the two modules of the join.
//
// The table: build rows in a RowStore, and an open-addressing array of slots, one per distinct
// key (the high half of its hash and its first row; the key's other rows are chained), so a
// lookup touches a slot and one row. When the table is larger than the L2 cache, the probe
// side is read in batches whose lookups are prefetched together (FillBatch).
//
// Semantics: a NULL key matches nothing (SQL equality), so a probe row with a NULL key is kept
// by left outer and anti joins and dropped by inner and semi ones; a match needs equal keys
// and a true residual.
// Tuple lifetime: build rows live in a RowStore until Close; inner and left-outer outputs are
// built in a TupleRing; semi and anti joins return probe tuples, copied into the ring when the
// window is above 1 (TupleRing::Keep). A batched probe asks its child for a window of a batch.
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "query/expr_eval.h"
#include "query/hash.h"
#include "query/nodes.h"
#include "query/parallel.h"
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

constexpr uint32_t kNone = UINT32_MAX;

// A slot of the open-addressing table: one distinct key, by the high half of its hash and
// the first build row (in input order) that has it; the others follow through `next`.
struct Slot {
  uint32_t tag;
  uint32_t row;
};

// The build phase's result: read-only once built, so the parts of a parallel pipeline share
// one (SharedBuilds).
struct BuiltTable {
  RowStore rows;               // stored build rows
  std::vector<Slot> slots;     // a power of two of them, linear probing
  std::vector<uint32_t> next;  // per build row: the next row with its keys, or kNone
  size_t mask = 0;
};

class HashJoinOperator final : public Operator {
 public:
  HashJoinOperator(RowSchema schema, std::vector<JoinKey> keys, JoinType type, const Expr& residual,
                   std::string detail, const PlanNode* node)
      : Operator("HashJoin", std::move(schema)),
        node_(node),
        keys_(std::move(keys)),
        type_(type),
        residual_expr_(residual),
        detail_(std::move(detail)) {}
  std::string detail() const override { return detail_; }
  void OutputModules(std::vector<std::string>* out) const override {
    out->push_back("hash_join.probe");
  }
  void InputModules(size_t child, std::vector<std::string>* out) const override {
    out->push_back(child == 1 ? "hash_join.build" : "hash_join.probe");
  }
  Operator* streamed_input() const override { return probe(); }
  // The output follows the probe's order, and a probe row's matches the build's.
  InputOrder input_order(size_t) const override { return InputOrder::kPassedOn; }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(BindKeys(ctx));
    SM_TRY(ObtainTable(ctx));
    ring_.Init(schema().size(), requested_window());
    size_t threshold = ctx->hash_join_batch_bytes != 0 ? ctx->hash_join_batch_bytes : CacheBytes();
    bool batched = TableBytes() > threshold;
    if (batched) probe()->RequestWindow(kProbeBatch);
    SM_TRY(probe()->Open(ctx));
    batch_capacity_ = batched ? std::min<uint32_t>(probe()->window(), kProbeBatch) : 1;
    batch_size_ = batch_pos_ = 0;
    probe_done_ = false;
    probe_row_ = nullptr;
    return Status::OK();
  }

  Status NextImpl(const Value** row) override {
    for (;;) {
      if (probe_row_ == nullptr) {
        if (batch_pos_ == batch_size_) {
          SM_TRY(FillBatch());
          if (batch_size_ == 0) {
            *row = nullptr;
            return Status::OK();
          }
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
    built_.reset();  // the last part to close a shared table frees it
    table_ = nullptr;
    slots_ = nullptr;
    next_ = nullptr;
  }

 private:
  // Probe rows matched together; the misses of a batch's lookups overlap (see FillBatch).
  static constexpr uint32_t kProbeBatch = 16;

  // A probe row of the current batch.
  struct Pending {
    const Value* row;
    uint64_t hash;
    bool null_key;
  };

  // A table within this many bytes stays in the cache between probes: its lookups are not
  // batched, which spares the probe child a window (and the copies that may cost it).
  static size_t CacheBytes() {
    static const size_t bytes = [] {
      long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
      return l2 > 0 ? static_cast<size_t>(l2) : size_t{1} << 20;
    }();
    return bytes;
  }
  size_t TableBytes() const {
    return built_->slots.size() * sizeof(Slot) + table_->size() * table_->width() * sizeof(Value);
  }

  Operator* probe() const { return child(0); }
  Operator* build() const { return child(1); }
  static uint32_t Tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }
  // Whether a build row matches probe keys `keys` (NULL keys are never stored nor looked up).
  bool StoredKeysEqual(uint32_t r, const Value* keys) const {
    const Value* stored = table_->row(r);
    for (size_t i = 0; i < key_at_.size(); ++i) {
      if (!KeyValuesEqual(stored[key_at_[i]], keys[i], key_types_[i])) return false;
    }
    return true;
  }
  const Value* StoredRow(uint32_t r) const { return table_->row(r); }

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
    LayOutStoredRows();
    scratch_.assign(probe_width_ + build_width_, Value());
    batch_.assign(kProbeBatch, Pending());
    batch_keys_.assign(kProbeBatch * keys_.size(), Value());
    return Status::OK();
  }

  // What a stored build row holds: the build's columns if the join returns them or the
  // residual reads them, then each key that is not one of those columns. The table is the
  // join's working set, so it holds nothing a probe does not read.
  void LayOutStoredRows() {
    stored_columns_ = EmitsBuildColumns(type_) || residual_ != nullptr ? build_width_ : 0;
    key_at_.clear();
    size_t width = stored_columns_;
    for (const auto& k : build_keys_) {
      bool is_stored_column =
          k->column() >= 0 && static_cast<size_t>(k->column()) < stored_columns_;
      key_at_.push_back(is_stored_column ? k->column() : width++);
    }
    stored_width_ = width;
  }

  // The table of this execution: built here, or (in a part of a parallel pipeline) taken from
  // the part that built it first.
  Status ObtainTable(ExecContext* ctx) {
    std::shared_ptr<const void> shared;
    bool must_build = true;
    if (ctx->builds != nullptr) SM_TRY(ctx->builds->Acquire(node_, &shared, &must_build));
    if (!must_build) {
      Use(std::static_pointer_cast<const BuiltTable>(std::move(shared)));
      return Status::OK();
    }
    auto table = std::make_shared<BuiltTable>();
    Status s = build()->Open(ctx);
    if (s.ok()) s = Build(table.get());
    if (ctx->builds != nullptr) ctx->builds->Publish(node_, s, s.ok() ? table : nullptr);
    SM_TRY(s);
    Use(std::move(table));
    return Status::OK();
  }
  void Use(std::shared_ptr<const BuiltTable> table) {
    built_ = std::move(table);
    table_ = &built_->rows;
    slots_ = built_->slots.data();
    next_ = built_->next.data();
    mask_ = built_->mask;
  }

  // The build phase: every build row with non-NULL keys, stored as LayOutStoredRows says; then
  // one slot per distinct key, at most half the slots used.
  Status Build(BuiltTable* t) {
    t->rows.Reset(stored_width_);
    std::vector<uint64_t> hashes;
    std::vector<Value> keys(keys_.size());
    for (;;) {
      const Value* row = nullptr;
      SM_TRY(build()->Next(&row));
      if (row == nullptr) break;
      bool null_key = false;
      for (size_t i = 0; i < keys_.size(); ++i) {
        keys[i] = build_keys_[i]->Eval(row);
        null_key |= keys[i].null;
      }
      if (null_key) continue;
      Value* stored = t->rows.AppendEmpty();
      Arena& arena = t->rows.arena();
      for (size_t i = 0; i < stored_columns_; ++i) stored[i] = arena.Own(row[i]);
      for (size_t i = 0; i < keys_.size(); ++i) {
        if (key_at_[i] >= stored_columns_) stored[key_at_[i]] = arena.Own(keys[i]);
      }
      hashes.push_back(HashKeys(keys.data(), key_types_));
    }
    SM_ASSERT(t->rows.size() < kNone);
    size_t slots = 16;
    while (slots < t->rows.size() * 2) slots *= 2;
    t->slots.assign(slots, Slot{0, kNone});
    t->next.assign(t->rows.size(), kNone);
    t->mask = slots - 1;
    // Inserted last row first, so that each key's chain lists its rows in input order.
    constexpr size_t kAhead = 8;
    for (size_t r = t->rows.size(); r-- > 0;) {
      if (r >= kAhead) __builtin_prefetch(&t->slots[hashes[r - kAhead] & t->mask]);
      Insert(t, static_cast<uint32_t>(r), hashes[r]);
    }
    return Status::OK();
  }

  void Insert(BuiltTable* t, uint32_t r, uint64_t hash) const {
    for (size_t s = hash & t->mask;; s = (s + 1) & t->mask) {
      Slot& slot = t->slots[s];
      if (slot.row == kNone) {
        slot = Slot{Tag(hash), r};
        return;
      }
      if (slot.tag == Tag(hash) && SameKeys(*t, slot.row, r)) {
        t->next[r] = slot.row;
        slot.row = r;
        return;
      }
    }
  }

  bool SameKeys(const BuiltTable& t, uint32_t a, uint32_t b) const {
    for (size_t i = 0; i < key_at_.size(); ++i) {
      if (!KeyValuesEqual(t.rows.row(a)[key_at_[i]], t.rows.row(b)[key_at_[i]], key_types_[i])) {
        return false;
      }
    }
    return true;
  }

  // The first build row whose keys equal `keys`, or kNone.
  uint32_t Find(const Value* keys, uint64_t hash) const {
    for (size_t s = hash & mask_;; s = (s + 1) & mask_) {
      Slot slot = slots_[s];
      if (slot.row == kNone) return kNone;
      if (slot.tag == Tag(hash) && StoredKeysEqual(slot.row, keys)) {
        return slot.row;
      }
    }
  }

  // Reads the next batch of probe rows and computes their keys' hashes. Each lookup costs a
  // miss on its slot and one on the build row it compares keys with; the batch prefetches all
  // of its slots, then the rows its slots name, before the first lookup, so that these misses
  // overlap rather than follow one another (group prefetching).
  Status FillBatch() {
    batch_size_ = batch_pos_ = 0;
    size_t k = keys_.size();
    while (!probe_done_ && batch_size_ < batch_capacity_) {
      const Value* row = nullptr;
      SM_TRY(probe()->Next(&row));
      if (row == nullptr) {
        probe_done_ = true;
        break;
      }
      Pending& p = batch_[batch_size_];
      Value* keys = &batch_keys_[batch_size_ * k];
      p.row = row;
      p.null_key = false;
      for (size_t i = 0; i < k; ++i) {
        keys[i] = probe_keys_[i]->Eval(row);
        p.null_key |= keys[i].null;
      }
      p.hash = p.null_key ? 0 : HashKeys(keys, key_types_);
      if (batch_capacity_ > 1) __builtin_prefetch(&slots_[p.hash & mask_]);
      ++batch_size_;
    }
    if (batch_capacity_ == 1) return Status::OK();  // a cached table: nothing to overlap
    for (uint32_t i = 0; i < batch_size_; ++i) {
      Slot slot = slots_[batch_[i].hash & mask_];
      if (!batch_[i].null_key && slot.row != kNone) __builtin_prefetch(StoredRow(slot.row));
    }
    return Status::OK();
  }

  void StartProbe() {
    SM_DASSERT(batch_pos_ < batch_size_);
    const Pending& p = batch_[batch_pos_];
    probe_row_ = p.row;
    candidate_ = p.null_key ? kNone : Find(&batch_keys_[batch_pos_ * keys_.size()], p.hash);
    matched_ = false;
  }

  // Ends the current probe row.
  void FinishProbe() {
    probe_row_ = nullptr;
    ++batch_pos_;
  }

  // The next build row that matches the current probe row, or kNone.
  uint32_t NextMatch() {
    while (candidate_ != kNone) {
      uint32_t r = candidate_;
      candidate_ = next_[r];
      if (residual_ != nullptr) {
        Combine(scratch_.data(), StoredRow(r));
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
  // row is done (FinishProbe has then been called).
  const Value* ProbeStep() {
    uint32_t r = NextMatch();
    const Value* out = nullptr;
    switch (type_) {
      case JoinType::kInner:
        if (r != kNone) return Emit(StoredRow(r));
        break;
      case JoinType::kLeftOuter:
        if (r != kNone) {
          matched_ = true;
          return Emit(StoredRow(r));
        }
        if (!matched_) out = Emit(nullptr);
        break;
      case JoinType::kSemi:
        if (r != kNone) out = ring_.Keep(probe_row_);
        break;
      case JoinType::kAnti:
        if (r == kNone) out = ring_.Keep(probe_row_);
        break;
    }
    FinishProbe();
    return out;
  }

  const Value* Emit(const Value* build_row) {
    Value* out = ring_.Advance();
    Combine(out, build_row);
    ring_.OwnFirst(out, probe_width_);  // build rows' strings live until Close
    return out;
  }

  const PlanNode* node_;  // the key of this join's table among shared builds
  std::vector<JoinKey> keys_;
  JoinType type_;
  Expr residual_expr_;
  std::string detail_;
  std::vector<std::unique_ptr<BoundExpr>> probe_keys_, build_keys_;
  std::unique_ptr<BoundExpr> residual_;
  std::vector<Type> key_types_;
  size_t probe_width_ = 0, build_width_ = 0;

  size_t stored_columns_ = 0;   // build columns at the start of a stored row
  size_t stored_width_ = 0;     // Values per stored row: those columns, then keys not among them
  std::vector<size_t> key_at_;  // per key: where a stored row holds it
  // The table of this execution, and its parts as the probe reads them.
  std::shared_ptr<const BuiltTable> built_;
  const RowStore* table_ = nullptr;
  const Slot* slots_ = nullptr;
  const uint32_t* next_ = nullptr;
  size_t mask_ = 0;

  std::vector<Pending> batch_;
  std::vector<Value> batch_keys_;  // keys_.size() per row of the batch
  uint32_t batch_capacity_ = 1;    // at most the probe child's window
  uint32_t batch_size_ = 0;
  uint32_t batch_pos_ = 0;  // the batch row being probed, or batch_size_ when all are done
  bool probe_done_ = false;

  const Value* probe_row_ = nullptr;  // batch_[batch_pos_].row while it is being probed
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
    auto op = std::make_unique<HashJoinOperator>(schema(), keys_, type_, residual_, Detail(), this);
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
