// Sort and TopN: blocking operators that order their input on named columns.
//
// Owns: SortNode and the two operators. Sort copies its whole input into a RowStore and sorts
// pointers to the rows; TopN keeps only the best n rows, in n slots of its own, as a heap. When
// its input is a pipeline that runs in parts (parallel.h), each part fills a store of its own
// and sorts it on its own thread, and the sorted parts are merged, earlier parts first among
// equal keys: the parts follow the input's order, so the result is the one-thread result.
//
// Order: the keys in turn, ascending unless descending; NULL sorts before any value (after, when
// descending); rows equal on every key come out in their input order (the sort is stable).
// Tuple lifetime: the output stays valid until Close (a window of kUnboundedWindow).
#include <algorithm>
#include <cstring>
#include <deque>
#include <iterator>
#include <memory>

#include "query/nodes.h"
#include "query/parallel.h"
#include "query/row_store.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

std::string KeysText(const std::vector<SortKey>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    out += (i ? ", " : "") + keys[i].column + (keys[i].descending ? " DESC" : "");
  }
  return out;
}

class SortOperator final : public Operator {
 public:
  SortOperator(RowSchema schema, std::vector<ResolvedSortKey> keys, std::string detail,
               NodePtr input_node)
      : Operator("Sort", std::move(schema)),
        keys_(std::move(keys)),
        detail_(std::move(detail)),
        input_node_(std::move(input_node)) {}
  std::string detail() const override {
    if (parts_ <= 1) return detail_;
    return detail_ + "; input in " + std::to_string(parts_) + " parts in parallel";
  }
  bool blocking() const override { return true; }
  // Equal keys keep their input order (a stable sort), which SQL leaves open.
  InputOrder input_order(size_t) const override { return InputOrder::kIgnored; }
  void OutputModules(std::vector<std::string>* out) const override {
    out->push_back("sort.output");
  }
  void InputModules(size_t, std::vector<std::string>* out) const override {
    out->push_back("sort");
  }
  uint32_t window() const override { return kUnboundedWindow; }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    store_.Reset(schema().size());
    others_.clear();
    order_.clear();
    next_ = 0;
    PipelineSplit split;
    SM_TRY(SplitPipeline(ctx, child(0), &split));
    parts_ = split.parts();
    if (parts_ == 1) {
      SM_TRY(child(0)->Open(ctx));
      SM_TRY(DrainInto(child(0), &store_));
      SortRun(store_, &order_);
      return Status::OK();
    }
    others_.resize(parts_ - 1);
    for (RowStore& other : others_) other.Reset(schema().size());
    std::vector<std::vector<const Value*>> runs(parts_);
    SM_TRY(RunParts(ctx, *input_node_, child(0), split, [&](size_t part, Operator* input) {
      RowStore* rows = part == 0 ? &store_ : &others_[part - 1];
      SM_TRY(DrainInto(input, rows));
      SortRun(*rows, &runs[part]);  // on the part's own thread
      return Status::OK();
    }));
    MergeRuns(&runs);
    return Status::OK();
  }
  Status NextImpl(const Value** row) override {
    *row = next_ < order_.size() ? order_[next_++] : nullptr;
    return Status::OK();
  }
  void CloseImpl() override {
    store_.Clear();
    others_.clear();
    order_.clear();
  }

 private:
  bool Less(const Value* a, const Value* b) const { return CompareTuples(a, b, keys_) < 0; }
  // Pointers to the rows of `rows`, stably sorted. Reads only keys_ and `rows`, so the parts'
  // threads run it at once.
  void SortRun(const RowStore& rows, std::vector<const Value*>* run) const {
    run->clear();
    run->reserve(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) run->push_back(rows.row(r));
    std::stable_sort(run->begin(), run->end(),
                     [this](const Value* a, const Value* b) { return Less(a, b); });
  }
  // order_: the sorted runs merged in part order; std::merge takes the first range's row of
  // two equal ones first, so rows equal on the keys keep the input's order.
  void MergeRuns(std::vector<std::vector<const Value*>>* runs) {
    order_ = std::move(runs->front());
    std::vector<const Value*> merged;
    for (size_t p = 1; p < runs->size(); ++p) {
      const std::vector<const Value*>& run = (*runs)[p];
      merged.clear();
      merged.reserve(order_.size() + run.size());
      std::merge(order_.begin(), order_.end(), run.begin(), run.end(), std::back_inserter(merged),
                 [this](const Value* a, const Value* b) { return Less(a, b); });
      order_.swap(merged);
    }
  }

  std::vector<ResolvedSortKey> keys_;
  std::string detail_;
  NodePtr input_node_;  // the child's plan node, for the parts of a parallel input
  size_t parts_ = 0;    // of the last execution (EXPLAIN)
  RowStore store_;                // part 0's rows (all of them on one thread)
  std::vector<RowStore> others_;  // the other parts' rows
  std::vector<const Value*> order_;
  size_t next_ = 0;
};

// The n best rows: a max-heap (by the sort order) of slot numbers, whose top is the worst row
// kept; a new row better than it replaces it in its slot.
class TopNOperator final : public Operator {
 public:
  TopNOperator(RowSchema schema, std::vector<ResolvedSortKey> keys, uint64_t n, std::string detail)
      : Operator("TopN", std::move(schema)),
        keys_(std::move(keys)),
        limit_(n),
        detail_(std::move(detail)) {}
  std::string detail() const override { return detail_; }
  bool blocking() const override { return true; }
  // Equal keys keep their input order (a stable sort), which SQL leaves open.
  InputOrder input_order(size_t) const override { return InputOrder::kIgnored; }
  void OutputModules(std::vector<std::string>* out) const override {
    out->push_back("top_n.output");
  }
  void InputModules(size_t, std::vector<std::string>* out) const override {
    out->push_back("top_n");
  }
  uint32_t window() const override { return kUnboundedWindow; }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    SM_TRY(OpenChildren(ctx));
    size_t width = schema().size();
    slots_.clear();
    bytes_.clear();
    heap_.clear();
    sequence_.clear();
    next_ = 0;
    uint64_t seen = 0;
    for (;; ++seen) {
      const Value* row = nullptr;
      SM_TRY(child(0)->Next(&row));
      if (row == nullptr) break;
      if (heap_.size() < limit_) {
        size_t slot = heap_.size();
        slots_.resize((slot + 1) * width);
        bytes_.emplace_back();
        sequence_.push_back(seen);
        Store(slot, row);
        heap_.push_back(slot);
        std::push_heap(heap_.begin(), heap_.end(), Less());
      } else if (Before(row, seen, heap_.front())) {
        std::pop_heap(heap_.begin(), heap_.end(), Less());
        size_t slot = heap_.back();
        sequence_[slot] = seen;
        Store(slot, row);
        std::push_heap(heap_.begin(), heap_.end(), Less());
      }
    }
    std::sort_heap(heap_.begin(), heap_.end(), Less());
    return Status::OK();
  }
  Status NextImpl(const Value** row) override {
    *row = next_ < heap_.size() ? Slot(heap_[next_++]) : nullptr;
    return Status::OK();
  }

 private:
  const Value* Slot(size_t slot) const { return &slots_[slot * schema().size()]; }
  void Store(size_t slot, const Value* row) {
    size_t width = schema().size();
    Value* out = &slots_[slot * width];
    size_t total = 0;
    for (size_t i = 0; i < width; ++i) total += row[i].null ? 0 : row[i].len;
    std::string& bytes = bytes_[slot];
    bytes.resize(total);
    size_t at = 0;
    for (size_t i = 0; i < width; ++i) {
      out[i] = row[i];
      if (row[i].null || row[i].len == 0) continue;
      std::memcpy(bytes.data() + at, row[i].s, row[i].len);
      out[i].s = bytes.data() + at;
      at += row[i].len;
    }
  }
  // Sort order with input order breaking ties (so the result is that of a stable sort).
  bool Before(const Value* row, uint64_t seq, size_t slot) const {
    int c = CompareTuples(row, Slot(slot), keys_);
    return c < 0 || (c == 0 && seq < sequence_[slot]);
  }
  struct SlotLess {
    const TopNOperator* op;
    bool operator()(size_t a, size_t b) const {
      int c = CompareTuples(op->Slot(a), op->Slot(b), op->keys_);
      return c < 0 || (c == 0 && op->sequence_[a] < op->sequence_[b]);
    }
  };
  SlotLess Less() const { return SlotLess{this}; }

  std::vector<ResolvedSortKey> keys_;
  uint64_t limit_;
  std::string detail_;
  std::vector<Value> slots_;
  std::deque<std::string> bytes_;   // a deque: growing it moves no slot's string bytes
  std::vector<uint64_t> sequence_;  // input position of each slot's row
  std::vector<size_t> heap_;
  size_t next_ = 0;
};

class SortNode final : public PlanNode {
 public:
  SortNode(NodePtr child, std::vector<SortKey> keys, uint64_t limit)
      : PlanNode(limit == 0 ? "Sort" : "TopN", Status::OK()),
        keys_(std::move(keys)),
        limit_(limit) {
    set_schema(child->schema());
    set_status(ResolveSortKeys(keys_, child->schema(), &resolved_));
    double in = child->estimated_rows();
    set_estimated_rows(limit == 0 || in < 0 ? in : std::min(in, static_cast<double>(limit)));
    AddChild(std::move(child));
  }
  std::string Detail() const override {
    return KeysText(keys_) + (limit_ == 0 ? "" : " limit " + std::to_string(limit_));
  }

 private:
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    std::unique_ptr<Operator> op;
    if (limit_ == 0) {
      op = std::make_unique<SortOperator>(schema(), resolved_, Detail(), children()[0]);
    } else {
      op = std::make_unique<TopNOperator>(schema(), resolved_, limit_, Detail());
    }
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
  std::vector<SortKey> keys_;
  uint64_t limit_;
  std::vector<ResolvedSortKey> resolved_;
};

}  // namespace

NodePtr MakeSortNode(NodePtr child, std::vector<SortKey> keys, uint64_t limit) {
  return std::make_shared<SortNode>(std::move(child), std::move(keys), limit);
}

}  // namespace sm::query
