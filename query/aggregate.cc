// Aggregation: COUNT(*), COUNT, COUNT(DISTINCT), SUM, AVG, MIN and MAX over groups, by hashing
// (any input order) or by runs of a sorted input.
//
// Owns: AggregateNode, the accumulators (Accumulators), HashAggregateOperator and
// SortAggregateOperator.
//
// Semantics (SQL's): aggregates other than COUNT(*) skip NULL inputs; SUM, AVG, MIN and MAX of
// no values are NULL and COUNT of none is 0; without group keys there is exactly one output row,
// even for an empty input; NULL group keys form one group. SUM of ints or money is exact (an
// overflow of int64 is an error, not a wrapped sum); AVG is a double (money in currency units).
//
// Tuple lifetime: hash aggregation is blocking and keeps its output until Close; sort
// aggregation builds each group's row in a TupleRing when the group ends.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_set>

#include "query/expr_eval.h"
#include "query/hash.h"
#include "query/nodes.h"
#include "query/parallel.h"
#include "query/row_store.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

Status ResultType(const Agg& agg, Type in, Type* out) {
  switch (agg.kind) {
    case AggKind::kCountStar:
    case AggKind::kCount:
    case AggKind::kCountDistinct:
      *out = Type::kInt;
      return Status::OK();
    case AggKind::kSum:
      if (in != Type::kInt && in != Type::kMoney && in != Type::kDouble) break;
      *out = in;
      return Status::OK();
    case AggKind::kAvg:
      if (!IsNumeric(in)) break;
      *out = Type::kDouble;
      return Status::OK();
    case AggKind::kMin:
    case AggKind::kMax:
      *out = in;
      return Status::OK();
  }
  return Status::InvalidArgument(std::string(AggKindName(agg.kind)) + " of a " + TypeName(in) +
                                 " in " + agg.name);
}

// The (group, aggregate, value) triples COUNT(DISTINCT) has seen, for values held in 64 bits:
// open addressing with linear probing, at most half full, and no allocation per value (one
// aggregation can see millions).
class DistinctBits {
 public:
  DistinctBits() : slots_(kInitialSlots) {}
  // True if the triple is new.
  bool Insert(uint64_t group, uint32_t agg, uint64_t bits) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    if (!Place(Entry{group, bits, agg, true})) return false;
    ++size_;
    return true;
  }
  void Clear() {
    if (size_ == 0 && slots_.size() == kInitialSlots) return;  // a group without any
    slots_.assign(kInitialSlots, Entry{});
    size_ = 0;
  }
  // Calls f(group, agg, bits) for every triple, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const Entry& e : slots_) {
      if (e.used) f(e.group, e.agg, e.bits);
    }
  }

 private:
  static constexpr size_t kInitialSlots = 16;
  struct Entry {
    uint64_t group = 0;
    uint64_t bits = 0;
    uint32_t agg = 0;
    bool used = false;
    bool Same(const Entry& e) const { return group == e.group && bits == e.bits && agg == e.agg; }
  };
  // False if an equal entry is there already.
  bool Place(const Entry& e) {
    size_t mask = slots_.size() - 1;
    for (size_t i = MixHash((e.group * 0x9e3779b97f4a7c15ULL) ^ e.bits ^ (uint64_t{e.agg} << 56));;
         ++i) {
      Entry& slot = slots_[i & mask];
      if (!slot.used) {
        slot = e;
        return true;
      }
      if (slot.Same(e)) return false;
    }
  }
  void Grow() {
    std::vector<Entry> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Entry{});
    for (const Entry& e : old) {
      if (e.used) Place(e);
    }
  }
  std::vector<Entry> slots_;  // a power of two in size
  size_t size_ = 0;
};

// The (group, aggregate, value) triples COUNT(DISTINCT) has seen in one group table: values in
// 64 bits whole, strings as the group's 8 bytes, the aggregate's byte, then the string. Each
// part of a parallel aggregation has its own; merging one into another adds the triples the
// other lacks, with the group renumbered, and counts each as a new distinct value.
struct DistinctSets {
  DistinctBits bits;
  std::unordered_set<std::string> strings;
  void Clear() {
    bits.Clear();
    strings.clear();
  }
};

std::string DistinctStringKey(uint64_t group, size_t agg, std::string_view value) {
  std::string key(reinterpret_cast<const char*>(&group), sizeof(group));
  key.push_back(static_cast<char>(agg));
  key.append(value);
  return key;
}

// The running state of one aggregate of one group.
struct AggState {
  int64_t count = 0;
  int64_t sum = 0;  // ints and money
  double dsum = 0;  // doubles
  Value extreme = Value::Null();
};

// The aggregates of a plan, bound to its input, with their per-group states.
class Accumulators {
 public:
  Status Bind(const std::vector<Agg>& aggs, const RowSchema& input, ExecContext* ctx) {
    aggs_ = aggs;
    args_.clear();
    arg_types_.clear();
    for (const Agg& a : aggs_) {
      std::unique_ptr<BoundExpr> bound;
      if (a.kind != AggKind::kCountStar) {
        SM_TRY(query::Bind(a.arg, input, &bound));
        SM_TRY(bound->Prepare(ctx));
      }
      arg_types_.push_back(bound ? bound->type() : Type::kInt);
      args_.push_back(std::move(bound));
    }
    return Status::OK();
  }
  size_t size() const { return aggs_.size(); }
  // Adds a row to the states of group `group` at *states (size() of them, value-initialized
  // by the caller), the values COUNT(DISTINCT) sees to *distinct.
  Status Add(uint64_t group, AggState* states, const Value* row, Arena* arena,
             DistinctSets* distinct) const {
    for (size_t i = 0; i < aggs_.size(); ++i) {
      AggState& st = states[i];
      if (aggs_[i].kind == AggKind::kCountStar) {
        ++st.count;
        continue;
      }
      Value v = args_[i]->Eval(row);
      if (v.null) continue;
      SM_TRY(Accumulate(group, i, &st, v, arena, distinct));
    }
    return Status::OK();
  }
  Value Result(size_t i, const AggState& st, Type result_type) const {
    switch (aggs_[i].kind) {
      case AggKind::kCountStar:
      case AggKind::kCount:
        return Value::Int(st.count);
      case AggKind::kCountDistinct:
        return Value::Int(st.count);
      case AggKind::kSum:
        if (st.count == 0) return Value::Null();
        return result_type == Type::kDouble ? Value::Double(st.dsum) : Value::Int(st.sum);
      case AggKind::kAvg: {
        if (st.count == 0) return Value::Null();
        double total = arg_types_[i] == Type::kDouble ? st.dsum : static_cast<double>(st.sum);
        if (arg_types_[i] == Type::kMoney) total /= 100.0;
        return Value::Double(total / static_cast<double>(st.count));
      }
      case AggKind::kMin:
      case AggKind::kMax:
        return st.extreme;
    }
    return Value::Null();
  }
  // Adds the states `from` of another part's group to `into` (aggregate i); strings of MIN and
  // MAX move into `arena`. COUNT(DISTINCT) counts values, which MergeDistinct merges.
  Status Merge(size_t i, AggState* into, const AggState& from, Arena* arena) const {
    switch (aggs_[i].kind) {
      case AggKind::kCountStar:
      case AggKind::kCount:
        into->count += from.count;
        break;
      case AggKind::kSum:
      case AggKind::kAvg:
        into->count += from.count;
        into->dsum += from.dsum;
        if (__builtin_add_overflow(into->sum, from.sum, &into->sum)) {
          return Status::InvalidArgument("integer overflow in " + aggs_[i].name);
        }
        break;
      case AggKind::kMin:
      case AggKind::kMax: {
        if (from.extreme.null) break;
        int c = into->extreme.null ? 0 : CompareValues(from.extreme, into->extreme, arg_types_[i]);
        bool better = aggs_[i].kind == AggKind::kMin ? c < 0 : c > 0;
        if (into->extreme.null || better) into->extreme = arena->Own(from.extreme);
        break;
      }
      case AggKind::kCountDistinct:
        break;  // the sets hold what the counts count: MergeDistinct
    }
    return Status::OK();
  }
  // Adds the distinct values of another part, `from`, to `into`: group g of that part is group
  // into_group[g] here, whose states are at states(into_group[g]); each value new to its group
  // and aggregate counts once more.
  template <typename StatesOf>
  void MergeDistinct(const DistinctSets& from, const std::vector<size_t>& into_group,
                     StatesOf states, DistinctSets* into) const {
    from.bits.ForEach([&](uint64_t group, uint32_t agg, uint64_t bits) {
      const size_t g = into_group[group];
      if (into->bits.Insert(g, agg, bits)) ++states(g)[agg].count;
    });
    for (const std::string& key : from.strings) {
      uint64_t group = 0;
      std::memcpy(&group, key.data(), sizeof(group));
      const size_t agg = static_cast<uint8_t>(key[sizeof(group)]);
      const size_t g = into_group[group];
      const std::string_view value = std::string_view(key).substr(sizeof(group) + 1);
      if (into->strings.insert(DistinctStringKey(g, agg, value)).second) ++states(g)[agg].count;
    }
  }

 private:
  Status Accumulate(uint64_t group, size_t i, AggState* st, const Value& v, Arena* arena,
                    DistinctSets* distinct) const {
    Type t = arg_types_[i];
    switch (aggs_[i].kind) {
      case AggKind::kCount:
        ++st->count;
        break;
      case AggKind::kCountDistinct: {
        // One set for every group and aggregate: a value in 64 bits goes in whole (a double
        // with -0.0 made 0.0, as equality has it), a string as bytes after the group and
        // aggregate.
        if (t != Type::kString) {
          Value x = v;
          if (t == Type::kDouble && x.d == 0.0) x.d = 0.0;
          if (distinct->bits.Insert(group, static_cast<uint32_t>(i), static_cast<uint64_t>(x.i))) {
            ++st->count;
          }
          break;
        }
        if (distinct->strings.insert(DistinctStringKey(group, i, v.str())).second) ++st->count;
        break;
      }
      case AggKind::kSum:
      case AggKind::kAvg:
        ++st->count;
        if (t == Type::kDouble) {
          st->dsum += v.d;
        } else if (__builtin_add_overflow(st->sum, v.i, &st->sum)) {
          return Status::InvalidArgument("integer overflow in " + aggs_[i].name);
        }
        break;
      case AggKind::kMin:
      case AggKind::kMax: {
        int c = st->extreme.null ? 0 : CompareValues(v, st->extreme, t);
        bool better = aggs_[i].kind == AggKind::kMin ? c < 0 : c > 0;
        if (st->extreme.null || better) st->extreme = arena->Own(v);
        break;
      }
      case AggKind::kCountStar:
        break;
    }
    return Status::OK();
  }

  std::vector<Agg> aggs_;
  std::vector<std::unique_ptr<BoundExpr>> args_;
  std::vector<Type> arg_types_;
};

std::string AggText(const std::vector<NamedExpr>& group_by, const std::vector<Agg>& aggs) {
  std::string out;
  if (!group_by.empty()) {
    out += "group by ";
    for (size_t i = 0; i < group_by.size(); ++i) {
      out += (i ? ", " : "") + group_by[i].expr.ToString();
    }
    out += "; ";
  }
  for (size_t i = 0; i < aggs.size(); ++i) {
    out += (i ? ", " : "") + aggs[i].name;
  }
  return out;
}

// An aggregate function's footprint module, after "aggregate.": its name, in one word.
std::string AggModuleName(AggKind kind) {
  std::string name = AggKindName(kind);  // "count(*)", "count distinct", "sum", ...
  if (kind == AggKind::kCountStar) return "count_star";
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

// What both strategies share: the group key expressions and the aggregates.
class AggregateBase : public Operator {
 public:
  AggregateBase(const char* name, RowSchema schema, std::vector<NamedExpr> group_by,
                std::vector<Agg> aggs, std::string detail)
      : Operator(name, std::move(schema)),
        group_by_(std::move(group_by)),
        aggs_(std::move(aggs)),
        detail_(std::move(detail)) {}
  std::string detail() const override { return detail_; }

 protected:
  // `base`, then one module per aggregate function ("aggregate.sum", ...).
  void AddModules(const char* base, std::vector<std::string>* out) const {
    out->push_back(base);
    for (const Agg& a : aggs_) out->push_back("aggregate." + AggModuleName(a.kind));
  }
  Status BindAggregates(ExecContext* ctx) {
    const RowSchema& input = child(0)->schema();
    keys_.clear();
    key_types_.clear();
    key_columns_.clear();
    for (const NamedExpr& g : group_by_) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(Bind(g.expr, input, &bound));
      SM_TRY(bound->Prepare(ctx));
      key_types_.push_back(bound->type());
      key_columns_.push_back(bound->column());
      keys_.push_back(std::move(bound));
    }
    keys_are_columns_ =
        std::find(key_columns_.begin(), key_columns_.end(), -1) == key_columns_.end();
    return accumulators_.Bind(aggs_, input, ctx);
  }
  // The input column group key i is, or -1 if it is an expression (before Open too).
  int InputColumnOfKey(size_t i) const {
    std::unique_ptr<BoundExpr> bound;
    if (!Bind(group_by_[i].expr, child(0)->schema(), &bound).ok()) return -1;
    return bound->column();
  }
  // Group keys that are plain columns (the common case) are copied without an evaluation call.
  void EvalKeys(const Value* row, Value* out) const {
    if (keys_are_columns_) {
      for (size_t i = 0; i < key_columns_.size(); ++i) out[i] = row[key_columns_[i]];
      return;
    }
    for (size_t i = 0; i < keys_.size(); ++i) out[i] = keys_[i]->Eval(row);
  }
  // Writes a group's output row: its keys, then each aggregate's result.
  void Finish(const Value* keys, const AggState* states, Value* out) const {
    size_t k = keys_.size();
    for (size_t i = 0; i < k; ++i) out[i] = keys[i];
    for (size_t i = 0; i < accumulators_.size(); ++i) {
      out[k + i] = accumulators_.Result(i, states[i], schema()[k + i].type);
    }
  }

  std::vector<NamedExpr> group_by_;
  std::vector<Agg> aggs_;
  std::string detail_;
  std::vector<std::unique_ptr<BoundExpr>> keys_;
  std::vector<Type> key_types_;
  std::vector<int> key_columns_;  // per key, its input column, or -1 for an expression
  bool keys_are_columns_ = false;
  Accumulators accumulators_;
};

// The groups of a hash aggregation: each group's key values (in a RowStore, whose arena also
// keeps the strings of MIN and MAX states), its key hash and its aggregate states, found
// through an open-addressing array of group numbers, and the values COUNT(DISTINCT) has seen.
//
// Invariants: every group's key is distinct (KeysEqual); slots_ is a power of two in size and
// at most half full; states_ holds aggs states per group. Without group keys there is exactly
// one group, made by Reset.
class GroupTable {
 public:
  void Reset(size_t key_width, size_t aggs) {
    key_width_ = key_width;
    aggs_ = aggs;
    groups_.Reset(key_width == 0 ? 1 : key_width);
    hashes_.clear();
    states_.clear();
    distinct_.Clear();
    slots_.assign(1024, kEmpty);
    if (key_width == 0) {
      Value none;
      NewGroup(&none, 0);  // one row even for an empty input
    }
  }
  void Clear() {
    groups_.Clear();
    hashes_.clear();
    states_.clear();
    distinct_.Clear();
    slots_.clear();
  }
  // The number of the group with key `key` (hash `h`), made with fresh states if new.
  size_t FindOrAdd(const Value* key, uint64_t h, const std::vector<Type>& key_types) {
    if (key_width_ == 0) return 0;
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      uint32_t g = slots_[i];
      if (g == kEmpty) {
        g = static_cast<uint32_t>(groups_.size());
        NewGroup(key, h);
        slots_[i] = g;
        if (groups_.size() * 2 > slots_.size()) Grow();
        return g;
      }
      if (hashes_[g] == h && KeysEqual(groups_.row(g), key, key_types)) return g;
    }
  }
  size_t size() const { return groups_.size(); }
  const Value* key(size_t g) const { return groups_.row(g); }
  uint64_t hash(size_t g) const { return hashes_[g]; }
  AggState* states(size_t g) { return &states_[g * aggs_]; }
  Arena* arena() { return &groups_.arena(); }
  DistinctSets* distinct() { return &distinct_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;

  void NewGroup(const Value* key, uint64_t hash) {
    groups_.Append(key);
    hashes_.push_back(hash);
    states_.resize(states_.size() + aggs_);
  }
  void Grow() {
    slots_.assign(slots_.size() * 2, kEmpty);
    size_t mask = slots_.size() - 1;
    for (uint32_t g = 0; g < groups_.size(); ++g) {
      size_t i = hashes_[g] & mask;
      while (slots_[i] != kEmpty) i = (i + 1) & mask;
      slots_[i] = g;
    }
  }

  size_t key_width_ = 0;
  size_t aggs_ = 0;
  RowStore groups_;               // each group's key values
  std::vector<uint64_t> hashes_;  // each group's key hash
  std::vector<AggState> states_;  // aggs_ per group
  std::vector<uint32_t> slots_;   // open addressing: group numbers
  DistinctSets distinct_;         // by group number
};

// Hash aggregation, run in parallel (query.md, "Parallel aggregation") when the execution
// allows several threads and its input is a pipeline over a scan (parallel.h): each part fills
// a group table of its own, and the others are merged into part 0's. The bound group keys and
// aggregates are shared by the parts' threads: evaluating them and adding to a part's own
// states and distinct values writes nothing shared.
class HashAggregateOperator final : public AggregateBase {
 public:
  HashAggregateOperator(const char* name, RowSchema schema, std::vector<NamedExpr> group_by,
                        std::vector<Agg> aggs, std::string detail, NodePtr input_node)
      : AggregateBase(name, std::move(schema), std::move(group_by), std::move(aggs),
                      std::move(detail)),
        input_node_(std::move(input_node)) {}
  bool blocking() const override { return true; }
  InputOrder input_order(size_t) const override { return InputOrder::kIgnored; }
  std::string detail() const override {
    if (parts_ <= 1) return AggregateBase::detail();
    return AggregateBase::detail() + "; " + std::to_string(parts_) + " parts in parallel";
  }
  void OutputModules(std::vector<std::string>* out) const override {
    out->push_back("hash_aggregate.output");
  }
  void InputModules(size_t, std::vector<std::string>* out) const override {
    AddModules("hash_aggregate", out);
  }
  uint32_t window() const override { return kUnboundedWindow; }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(BindAggregates(ctx));
    groups_.Reset(keys_.size(), accumulators_.size());
    PipelineSplit split;
    SM_TRY(SplitPipeline(ctx, child(0), &split));
    parts_ = split.parts();
    if (parts_ == 1) {
      SM_TRY(OpenChildren(ctx));
      SM_TRY(Consume(child(0), &groups_));
    } else {
      std::vector<GroupTable> others(parts_ - 1);
      SM_TRY(RunParts(ctx, *input_node_, child(0), split, [&](size_t part, Operator* input) {
        if (part == 0) return Consume(input, &groups_);
        others[part - 1].Reset(keys_.size(), accumulators_.size());
        return Consume(input, &others[part - 1]);
      }));
      for (GroupTable& other : others) SM_TRY(Merge(&other));
    }
    output_.Reset(schema().size());
    for (size_t g = 0; g < groups_.size(); ++g) {
      Finish(groups_.key(g), groups_.states(g), output_.AppendEmpty());
    }
    next_ = 0;  // the output's strings live in groups_ until Close
    return Status::OK();
  }
  Status NextImpl(const Value** row) override {
    *row = next_ < output_.size() ? output_.row(next_++) : nullptr;
    return Status::OK();
  }
  void CloseImpl() override {
    groups_.Clear();
    output_.Clear();
  }

 private:
  // Adds every tuple of `input` to `groups`. Runs on the threads of the parts at once.
  Status Consume(Operator* input, GroupTable* groups) {
    const size_t k = keys_.size();
    std::vector<Value> key(k == 0 ? 1 : k);
    for (;;) {
      const Value* row = nullptr;
      SM_TRY(input->Next(&row));
      if (row == nullptr) return Status::OK();
      EvalKeys(row, key.data());
      size_t group =
          k == 0 ? 0 : groups->FindOrAdd(key.data(), HashKeys(key.data(), key_types_), key_types_);
      SM_TRY(accumulators_.Add(group, groups->states(group), row, groups->arena(),
                               groups->distinct()));
    }
  }
  // Adds the groups of another part to groups_.
  Status Merge(GroupTable* other) {
    std::vector<size_t> into_group(other->size());
    for (size_t g = 0; g < other->size(); ++g) {
      const size_t into = groups_.FindOrAdd(other->key(g), other->hash(g), key_types_);
      into_group[g] = into;
      AggState* to = groups_.states(into);
      const AggState* from = other->states(g);
      for (size_t i = 0; i < accumulators_.size(); ++i) {
        SM_TRY(accumulators_.Merge(i, &to[i], from[i], groups_.arena()));
      }
    }
    accumulators_.MergeDistinct(*other->distinct(), into_group,
                                [&](size_t g) { return groups_.states(g); }, groups_.distinct());
    other->Clear();
    return Status::OK();
  }

  NodePtr input_node_;  // the child's plan node, instantiated again for each other part
  size_t parts_ = 0;    // of the last execution (EXPLAIN)
  GroupTable groups_;
  RowStore output_;
  size_t next_ = 0;
};

// Groups are runs of equal keys in the input, which arrives sorted on them.
class SortAggregateOperator final : public AggregateBase {
 public:
  using AggregateBase::AggregateBase;
  void OutputModules(std::vector<std::string>* out) const override {
    AddModules("sort_aggregate", out);
  }
  // A group is a run of the input: parts that never cut a group (grouped_columns) each return
  // their groups, and together every group once.
  Operator* streamed_input() const override { return child(0); }
  int streamed_column(size_t column) const override {
    return column < group_by_.size() ? InputColumnOfKey(column) : -1;
  }
  bool grouped_columns(std::vector<size_t>* columns) const override {
    columns->clear();
    for (size_t i = 0; i < group_by_.size(); ++i) {
      if (int c = InputColumnOfKey(i); c >= 0) columns->push_back(static_cast<size_t>(c));
    }
    return true;
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(BindAggregates(ctx));
    SM_TRY(OpenChildren(ctx));
    size_t k = keys_.size();
    key_.assign(k, Value());
    candidate_.assign(k, Value());
    key_bytes_.Clear();
    states_.clear();
    states_.resize(accumulators_.size());
    distinct_.Clear();
    // The group's strings live in arenas that the next group reuses: the ring keeps copies.
    ring_.Init(schema().size(), requested_window(), /*own_strings=*/true);
    in_group_ = false;
    done_ = false;
    emitted_empty_ = false;
    return Status::OK();
  }
  Status NextImpl(const Value** row) override {
    *row = nullptr;
    while (!done_) {
      const Value* in = nullptr;
      SM_TRY(child(0)->Next(&in));
      if (in == nullptr) {
        done_ = true;
        if (in_group_ || (keys_.empty() && !emitted_empty_)) *row = EmitGroup();
        return Status::OK();
      }
      EvalKeys(in, candidate_.data());
      const Value* finished = nullptr;
      if (in_group_ && !KeysEqual(key_.data(), candidate_.data(), key_types_)) {
        finished = EmitGroup();
      }
      if (!in_group_) StartGroup();
      SM_TRY(accumulators_.Add(0, states_.data(), in, &group_bytes_, &distinct_));
      if (finished != nullptr) {
        *row = finished;
        return Status::OK();
      }
    }
    return Status::OK();
  }

 private:
  void StartGroup() {
    key_bytes_.Reset();
    for (size_t i = 0; i < key_.size(); ++i) key_[i] = key_bytes_.Own(candidate_[i]);
    in_group_ = true;
  }
  const Value* EmitGroup() {
    Value* out = ring_.Advance();
    Finish(key_.data(), states_.data(), out);
    ring_.Own(out);
    for (AggState& st : states_) st = AggState();
    distinct_.Clear();
    group_bytes_.Reset();
    in_group_ = false;
    emitted_empty_ = true;
    return out;
  }

  std::vector<Value> key_, candidate_;
  Arena key_bytes_;    // the current group's key strings
  Arena group_bytes_;  // the current group's MIN / MAX strings
  std::vector<AggState> states_;
  DistinctSets distinct_;  // the current group's
  TupleRing ring_;
  bool in_group_ = false;
  bool done_ = false;
  bool emitted_empty_ = false;
};

class AggregateNode final : public PlanNode {
 public:
  AggregateNode(NodePtr child, std::vector<NamedExpr> group_by, std::vector<Agg> aggs,
                AggStrategy strategy)
      : PlanNode(strategy == AggStrategy::kHash ? "HashAggregate" : "SortAggregate", Status::OK()),
        group_by_(std::move(group_by)),
        aggs_(std::move(aggs)),
        strategy_(strategy) {
    set_status(Check(child->schema()));
    double in = child->estimated_rows();
    set_estimated_rows(group_by_.empty() ? 1 : (in < 0 ? -1 : in / 10));
    AddChild(std::move(child));
  }
  std::string Detail() const override { return AggText(group_by_, aggs_); }

 private:
  Status Check(const RowSchema& input) {
    if (group_by_.empty() && aggs_.empty()) {
      return Status::InvalidArgument("an aggregation needs group keys or aggregates");
    }
    RowSchema schema;
    for (const NamedExpr& g : group_by_) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(Bind(g.expr, input, &bound));
      schema.Append({g.name, bound->type()});
    }
    for (const Agg& a : aggs_) {
      Type in = Type::kInt;
      if (a.kind != AggKind::kCountStar) {
        std::unique_ptr<BoundExpr> bound;
        SM_TRY(Bind(a.arg, input, &bound));
        in = bound->type();
      }
      Type out = Type::kInt;
      SM_TRY(ResultType(a, in, &out));
      schema.Append({a.name, out});
    }
    set_schema(std::move(schema));
    return Status::OK();
  }
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    std::unique_ptr<Operator> op;
    if (strategy_ == AggStrategy::kHash) {
      op = std::make_unique<HashAggregateOperator>("HashAggregate", schema(), group_by_, aggs_,
                                                   Detail(), children()[0]);
    } else {
      op = std::make_unique<SortAggregateOperator>("SortAggregate", schema(), group_by_, aggs_,
                                                   Detail());
    }
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
  std::vector<NamedExpr> group_by_;
  std::vector<Agg> aggs_;
  AggStrategy strategy_;
};

}  // namespace

NodePtr MakeAggregateNode(NodePtr child, std::vector<NamedExpr> group_by,
                          std::vector<Agg> aggregates, AggStrategy strategy) {
  return std::make_shared<AggregateNode>(std::move(child), std::move(group_by),
                                         std::move(aggregates), strategy);
}

}  // namespace sm::query
