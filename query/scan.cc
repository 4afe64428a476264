// TableScan: reads a table (or a key range of it) through the engine's cursor, decoding only
// the columns the plan uses, with an optional predicate evaluated inside the scan.
//
// Owns: ScanNode (the table, the columns, the key range, the fused predicate) and ScanOperator.
//
// Tuple lifetime (operator.h): tuples live in the scan's ring of slots, strings copied into
// them (a batch is read under the page's latch, so nothing may point into the page after).
//
// A scan of a whole table in a query that may share scans (ExecContext::shared_scans) reads
// through a SharedScanReader (shared_scan.h) instead of a cursor of its own: the same rows, in
// an order that may start in the table's middle and wrap around unless an operator above it
// needs key order (Operator::order_free), when it attaches only at the start of a lap.
#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>

#include "query/expr_eval.h"
#include "query/nodes.h"
#include "query/shared_scan.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

// Reads rows in batches (Cursor::NextBatch: a page's rows under one latch) into slots of its
// own, and returns them one per Next. The slots form a ring of window + kBatchRows tuples: a
// batch is decoded into the slots after the last tuple returned, so the `window` tuples returned
// last are never overwritten while they may be held.
class ScanOperator final : public Operator {
 public:
  ScanOperator(RowSchema schema, Table* table, const TableSchema* table_schema,
               std::vector<const Column*> columns, ScanOptions range, const Expr& predicate,
               std::string detail)
      : Operator("TableScan", std::move(schema)),
        table_(table),
        table_schema_(table_schema),
        columns_(std::move(columns)),
        range_(std::move(range)),
        predicate_expr_(predicate),
        detail_(std::move(detail)) {
    for (const Column* c : columns_) has_strings_ |= c->type == Type::kString;
  }

  std::string detail() const override { return detail_; }
  void OutputModules(std::vector<std::string>* out) const override {
    out->push_back(predicate_expr_.valid() ? "scan.predicate" : "scan");
  }
  bool scan_source(Table** table, ScanOptions* range) const override {
    *table = table_;
    *range = range_;
    return true;
  }
  void RestrictScan(const ScanOptions& part) override { part_ = part; }
  bool key_prefix(const std::vector<size_t>& columns, bool any_order, size_t* bytes,
                  std::string* shape) const override {
    std::vector<const Column*> key;
    if (!table_schema_->KeyColumns(&key).ok()) return false;
    *bytes = 0;
    shape->clear();
    for (size_t i = 0; i < key.size() && (any_order || i < columns.size()); ++i) {
      auto is_key_i = [&](size_t c) { return c < columns_.size() && columns_[c] == key[i]; };
      bool found =
          any_order ? std::any_of(columns.begin(), columns.end(), is_key_i) : is_key_i(columns[i]);
      if (!found) {
        if (any_order) break;
        return false;
      }
      *bytes += key[i]->width;
      *shape += std::to_string(static_cast<int>(key[i]->encoding)) + ":" +
                std::to_string(key[i]->width) + ";";
    }
    return any_order || columns.size() <= key.size();
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    if (ctx->txn == nullptr) return Status::InvalidArgument("a scan needs a transaction");
    predicate_.reset();
    if (predicate_expr_.valid()) {
      SM_TRY(BindPredicate(predicate_expr_, schema(), &predicate_));
      SM_TRY(predicate_->Prepare(ctx));
    }
    width_ = schema().size();
    window_ = requested_window();
    SM_ASSERT(window_ <= kMaxWindow);
    capacity_ = std::bit_ceil(window_ + kBatchRows);  // a mask, not a division, finds a slot
    slots_.assign(static_cast<size_t>(capacity_) * width_, Value());
    if (has_strings_) bytes_.assign(capacity_, std::string());
    produced_ = returned_ = 0;
    started_ = false;
    exhausted_ = false;
    reader_.reset();
    if (ctx->shared_scans != nullptr && !part_ && WholeTable(range_)) {
      SM_TRY(ctx->shared_scans->Attach(ctx->db, table_, ctx->txn, /*in_order=*/!order_free(),
                                       &reader_));
      if (reader_ != nullptr) {
        cursor_.reset();
        return Status::OK();
      }
    }
    Status s = table_->NewCursor(ctx->txn, part_ ? *part_ : range_, &cursor_);
    part_.reset();  // a part is for one execution
    return s;
  }

  Status NextImpl(const Value** row) override {
    if (produced_ == returned_) [[unlikely]]
      return NextAfterFill(row);
    *row = Slot(returned_++);
    return Status::OK();
  }

  // The decoded batch's tuples, without a call per tuple.
  Status NextBatchImpl(const Value** rows, uint32_t max, uint32_t* count) override {
    *count = 0;
    if (produced_ == returned_) SM_TRY(Fill());
    const uint64_t n = std::min<uint64_t>(max, produced_ - returned_);
    // Locals, since a store through `rows` could alias the members as far as the compiler knows.
    const Value* const slots = slots_.data();
    const uint64_t mask = capacity_ - 1, first = returned_;
    const size_t width = width_;
    for (uint64_t i = 0; i < n; ++i) rows[i] = slots + ((first + i) & mask) * width;
    returned_ = first + n;
    *count = static_cast<uint32_t>(n);
    return Status::OK();
  }

  void CloseImpl() override {
    cursor_.reset();
    reader_.reset();  // leaves a shared scan, also one stopped early (a LIMIT)
  }

 private:
  static constexpr uint32_t kBatchRows = 64;
  static constexpr uint32_t kMaxWindow = 1u << 24;  // a parent holds at most this many tuples

  Value* Slot(uint64_t n) { return &slots_[(n & (capacity_ - 1)) * width_]; }

  // Only scans of every row share: a key range would need its own laps (query.md).
  static bool WholeTable(const ScanOptions& range) {
    return !range.has_lower && !range.has_upper && !range.reverse;
  }

  // Decodes rows until at least one passes the predicate or the range ends.
  // NextImpl with no decoded tuple left. Not inlined, so that NextImpl's per-tuple path saves
  // no registers for it.
  [[gnu::noinline]] Status NextAfterFill(const Value** row) {
    *row = nullptr;
    SM_TRY(Fill());
    if (produced_ != returned_) *row = Slot(returned_++);
    return Status::OK();
  }

  Status Fill() {
    if (cursor_ == nullptr && reader_ == nullptr) return Status::OK();
    Status error;
    auto take = [&](std::string_view key, std::string_view value) {
      CountRowRead();
      if (key.size() < table_schema_->fixed_key_bytes() ||
          value.size() < table_schema_->fixed_value_bytes()) {
        error = ShortRow(key, value);
        return false;
      }
      Accept(key, value);
      return produced_ - returned_ < kBatchRows;
    };
    if (reader_ != nullptr) {
      while (produced_ == returned_ && !exhausted_) {
        SM_TRY(reader_->Read(take, &exhausted_));
        if (!error.ok()) return error;
      }
      return Status::OK();
    }
    if (!started_) {
      started_ = true;
      if (!cursor_->Valid()) return Status::OK();
      take(cursor_->key(), cursor_->value());
      if (!error.ok()) return error;  // (SM_TRY would copy it and leave it unchecked)
    }
    while (produced_ == returned_ && !exhausted_) {
      size_t visited = 0;
      SM_TRY(cursor_->NextBatch(kBatchRows * 64, take, &visited));
      if (!error.ok()) return error;
      exhausted_ = !cursor_->Valid();
    }
    return Status::OK();
  }

  // Decodes a row into the next free slot, keeping it if it passes the predicate. Strings are
  // copied out of the engine's page into the slot's own bytes.
  void Accept(std::string_view key, std::string_view value) {
    uint64_t n = produced_;
    Value* out = Slot(n);
    const Column* const* columns = columns_.data();
    const size_t count = columns_.size();
    for (size_t i = 0; i < count; ++i) out[i] = DecodeColumn(*columns[i], key, value);
    if (predicate_ != nullptr && !predicate_->Test(out)) return;
    if (has_strings_) {
      std::string& bytes = bytes_[n & (capacity_ - 1)];
      size_t total = 0;
      for (size_t i = 0; i < width_; ++i) total += out[i].null ? 0 : out[i].len;
      bytes.resize(total);
      size_t at = 0;
      for (size_t i = 0; i < width_; ++i) {
        if (out[i].null || out[i].len == 0) continue;
        std::memcpy(bytes.data() + at, out[i].s, out[i].len);
        out[i].s = bytes.data() + at;
        at += out[i].len;
      }
    }
    produced_ = n + 1;
  }

  Status ShortRow(std::string_view key, std::string_view value) const {
    return Status::Corruption("table " + table_schema_->name() + ": a row with a " +
                              std::to_string(key.size()) + "-byte key and a " +
                              std::to_string(value.size()) +
                              "-byte value is shorter than its schema's fixed " +
                              std::to_string(table_schema_->fixed_key_bytes()) + " + " +
                              std::to_string(table_schema_->fixed_value_bytes()) + " bytes");
  }

  Table* table_;
  const TableSchema* table_schema_;
  std::vector<const Column*> columns_;
  ScanOptions range_;
  std::optional<ScanOptions> part_;  // the part of range_ the next Open reads (RestrictScan)
  Expr predicate_expr_;
  std::string detail_;
  bool has_strings_ = false;
  std::unique_ptr<BoundExpr> predicate_;
  std::unique_ptr<Cursor> cursor_;
  std::unique_ptr<SharedScanReader> reader_;  // instead of cursor_, in a shared scan
  size_t width_ = 0;
  uint32_t window_ = 1;
  uint32_t capacity_ = 0;
  std::vector<Value> slots_;
  std::vector<std::string> bytes_;  // per slot: the bytes of its strings
  uint64_t produced_ = 0;           // rows decoded and kept so far
  uint64_t returned_ = 0;           // of those, returned by Next
  bool started_ = false;            // the cursor's first row has been taken
  bool exhausted_ = false;
};

class ScanNode final : public PlanNode {
 public:
  ScanNode() : PlanNode("TableScan", Status::OK()) {}

  Status Build(const Catalog& catalog, std::string_view table, std::vector<std::string> names,
               const KeyRange& range, std::string alias) {
    SM_TRY(catalog.Lookup(table, &table_schema_, &table_));
    names_ = std::move(names);
    alias_ = std::move(alias);
    if (names_.empty())
      return Status::InvalidArgument("a scan of " + table_schema_->name() +
                                     " needs at least one column");
    RowSchema schema;
    for (const std::string& name : names_) {
      int index = table_schema_->Find(name);
      if (index < 0) {
        return Status::InvalidArgument("table " + table_schema_->name() + " has no column '" +
                                       name + "'");
      }
      const Column& c = table_schema_->columns()[static_cast<size_t>(index)];
      columns_.push_back(&c);
      schema.Append({alias_.empty() ? c.name : alias_ + "." + c.name, c.type});
    }
    set_schema(std::move(schema));
    SM_TRY(BuildRange(range));
    uint64_t estimate = table_schema_->row_estimate();  // 0: unknown
    set_estimated_rows(estimate == 0 ? -1 : static_cast<double>(estimate));
    return Status::OK();
  }

  // A copy of this scan with `predicate` (ANDed with its own) evaluated inside it.
  Status WithPredicate(const ScanNode& scan, const Expr& predicate) {
    table_schema_ = scan.table_schema_;
    table_ = scan.table_;
    names_ = scan.names_;
    alias_ = scan.alias_;
    columns_ = scan.columns_;
    range_ = scan.range_;
    range_text_ = scan.range_text_;
    set_schema(scan.schema());
    predicate_ = scan.predicate_.valid() ? And(scan.predicate_, predicate) : predicate;
    std::unique_ptr<BoundExpr> bound;
    SM_TRY(BindPredicate(predicate_, schema(), &bound));
    set_estimated_rows(scan.estimated_rows() < 0 ? -1 : scan.estimated_rows() / 2);
    return Status::OK();
  }

  std::string Detail() const override {
    std::string out = table_schema_->name();
    if (!alias_.empty()) out += " " + alias_;
    out += " [";
    for (size_t i = 0; i < names_.size(); ++i) out += (i ? ", " : "") + names_[i];
    out += "]" + range_text_;
    if (predicate_.valid()) out += " filter " + predicate_.ToString();
    return out;
  }

 private:
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    *out = std::make_unique<ScanOperator>(schema(), table_, table_schema_, columns_, range_,
                                          predicate_, Detail());
    return Status::OK();
  }

  // Encodes the bounds: lower inclusive, upper the end of the upper prefix.
  Status BuildRange(const KeyRange& range) {
    if (range.lower.empty() && range.upper.empty()) return Status::OK();
    std::vector<const Column*> key;
    SM_TRY(table_schema_->KeyColumns(&key));
    std::string lower, upper;
    SM_TRY(EncodeBound(range.lower, key, &lower));
    SM_TRY(EncodeBound(range.upper, key, &upper));
    if (!range.lower.empty()) {
      range_.lower = lower;
      range_.has_lower = true;
      range_.lower_inclusive = true;
    }
    if (!range.upper.empty()) {
      // Every key that starts with `upper`: below the prefix's successor.
      std::string end = upper;
      while (!end.empty() && static_cast<uint8_t>(end.back()) == 0xFF) end.pop_back();
      if (!end.empty()) {
        end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
        range_.upper = end;
        range_.has_upper = true;
        range_.upper_inclusive = false;
      }
    }
    range_text_ = " range [";
    for (size_t i = 0; i < range.lower.size(); ++i) {
      range_text_ += (i ? ", " : "") + range.lower[i].ToString();
    }
    range_text_ += "] .. [";
    for (size_t i = 0; i < range.upper.size(); ++i) {
      range_text_ += (i ? ", " : "") + range.upper[i].ToString();
    }
    range_text_ += "]";
    return Status::OK();
  }

  Status EncodeBound(const std::vector<Expr>& values, const std::vector<const Column*>& key,
                     std::string* out) const {
    if (values.size() > key.size()) {
      return Status::InvalidArgument("a key range of " + table_schema_->name() + " has " +
                                     std::to_string(values.size()) + " values for " +
                                     std::to_string(key.size()) + " key columns");
    }
    for (size_t i = 0; i < values.size(); ++i) {
      std::unique_ptr<BoundExpr> bound;
      SM_TRY(Bind(values[i], RowSchema(), &bound));
      Value v = bound->Eval(nullptr);
      if (!IsIntegral(bound->type()) || v.null || !AppendKeyValue(*key[i], v, out)) {
        return Status::InvalidArgument("key range value " + values[i].ToString() +
                                       " does not fit key column " + key[i]->name);
      }
    }
    return Status::OK();
  }

  const TableSchema* table_schema_ = nullptr;
  Table* table_ = nullptr;
  std::vector<std::string> names_;
  std::string alias_;
  std::vector<const Column*> columns_;
  ScanOptions range_;
  std::string range_text_;
  Expr predicate_;
};

}  // namespace

NodePtr MakeScanNode(const Catalog& catalog, std::string_view table,
                     std::vector<std::string> columns, KeyRange range, std::string alias) {
  auto node = std::make_shared<ScanNode>();
  if (Status s = node->Build(catalog, table, std::move(columns), range, std::move(alias));
      !s.ok()) {
    return MakeErrorNode(s);
  }
  return node;
}

// Used by MakeFilterNode: a scan with the filter fused in, or null if `child` is no scan.
NodePtr FuseFilterIntoScan(const NodePtr& child, const Expr& predicate) {
  auto* scan = dynamic_cast<const ScanNode*>(child.get());
  if (scan == nullptr) return nullptr;
  auto node = std::make_shared<ScanNode>();
  if (Status s = node->WithPredicate(*scan, predicate); !s.ok()) return MakeErrorNode(s);
  return node;
}

}  // namespace sm::query
