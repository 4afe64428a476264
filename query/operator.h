// The iterator every operator implements (open / next / close, one tuple per Next, as in
// Volcano and in the setting of Zhou & Ross), the execution context they share, and the tuple
// lifetime contract.
//
// Owns: Operator (the non-virtual Open/Next/Close wrappers that count rows and, when a query is
// analyzed or profiled, time each call or run it in the operator's profile slot), ExecContext, and
// TupleRing (the output slots of an operator that builds its own tuples).
//
// Tuple lifetime. Next hands out a pointer to the tuple's Values, which stay valid (with the
// string bytes they point at) until the operator has returned window() further tuples, or is
// closed; window() is at least 1. A parent that must hold several of its child's tuples at once
// (the buffer operator holds up to N) asks with RequestWindow(N) before Open; the operator then
// keeps that many tuples alive, so the parent stores pointers, not copies:
//   - operators that return every child tuple unchanged (limit, buffer) forward the request
//     to the child: no copy;
//   - operators that return some child tuples unchanged and drop others (filter, semi and
//     anti joins) cannot forward it, since the child's window counts the child's tuples, which
//     may be many more than theirs: with a window above 1 they copy the tuples they return into
//     slots of their own (TupleRing::Keep); with a window of 1 they return the child's tuple;
//   - materializing operators (sort, aggregation, the build side of a hash join, a materialized
//     subquery) keep every tuple until Close: window() is kUnboundedWindow, no copy;
//   - operators that build tuples (scan, project, the probe side of joins) write each into the
//     next of N output slots; with N > 1 each slot also owns the bytes of its strings (copied
//     from the engine's row or the child's tuple), which is the only copy the contract costs;
//     with N = 1 strings may point into the child's current tuple, which lives as long.
//
// Invariants:
//   1. Open is called once before Next; Close once after (also after a failed Open or Next);
//      Open may follow Close to run the operator again.
//   2. After Next returned a null tuple (the end) it returns null again until reopened.
//   3. window() >= the window requested before Open.
//   4. A tuple has schema().size() Values, typed as schema() says.
//
// Thread/fiber safety: an operator tree is used by one thread or fiber at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "query/schema.h"
#include "query/value.h"
#include "sm/common/assert.h"
#include "sm/common/status.h"
#include "sm/sm.h"

namespace sm::query {

class PlanNode;
class SharedBuilds;
class SharedScans;

inline constexpr uint32_t kUnboundedWindow = UINT32_MAX;

// Profiling by function (QueryOptions::profile_operators). The first kProfileSlots operators of a
// tree, numbered in preorder, run their Open, Next and Close inside functions whose names carry
// that number (sm::query::OperatorSlot::Next<7u>, ...), so that a profiler which attributes
// inclusive costs to functions (callgrind) gives each operator its own: an operator's self cost
// is its slot functions' inclusive cost less its children's, because a child is opened, pulled
// and closed only from inside its parent's calls.
inline constexpr uint32_t kProfileSlots = 64;
inline constexpr uint32_t kNoProfileSlot = UINT32_MAX;

// How an index-or-radix join (Plan::IndexOrRadixJoin) runs: by its cost comparison, or always
// by index probes or by the hash join (to measure one against the other, and in tests).
enum class JoinChoice : uint8_t { kCost, kIndex, kHash };

// What the operators of one query execution share.
struct ExecContext {
  Database* db = nullptr;
  Transaction* txn = nullptr;
  bool analyze = false;  // time every Open and Next (EXPLAIN ANALYZE)
  // A hash join's table above this many bytes is probed in batches; 0: the L2 cache's size.
  size_t hash_join_batch_bytes = 0;
  JoinChoice index_or_radix = JoinChoice::kCost;
  // Rows read by operator trees that are not part of the query's tree (scalar subqueries, the
  // parts of a parallel aggregation that other threads ran).
  uint64_t subquery_rows_read = 0;
  // Threads a parallel aggregation may use; 1 runs every operator on the calling thread. Above
  // 1 only when the query runs in a read committed transaction of its own (ResultCursor), so
  // that the transactions of other threads see what it would see.
  uint32_t threads = 1;
  // The results of materialized plan nodes, computed once per execution and shared by every
  // operator that reads them (keyed by the node).
  std::map<const PlanNode*, std::shared_ptr<void>> shared;
  // While the parts of a parallel pipeline run (parallel.h): the hash tables they build once
  // and share; null otherwise.
  SharedBuilds* builds = nullptr;
  // Scans of whole tables in progress, which this execution's scans of whole tables attach to
  // (shared_scan.h); null unless the query runs read committed in a transaction of its own and
  // QueryOptions::share_scans asks for it.
  SharedScans* shared_scans = nullptr;
};

class Operator {
 public:
  struct Stats {
    uint64_t rows = 0;       // tuples returned
    uint64_t rows_read = 0;  // rows read from the engine's tables (scans, index joins)
    uint64_t opens = 0;
    uint64_t nanos = 0;  // time in Open and Next, children included (analyze only)
  };

  Operator(std::string name, RowSchema schema);
  virtual ~Operator();
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  const std::string& name() const { return name_; }
  // What EXPLAIN prints after the name (columns, predicate, keys).
  virtual std::string detail() const { return std::string(); }
  const RowSchema& schema() const { return schema_; }
  const std::vector<std::unique_ptr<Operator>>& children() const { return children_; }
  void AddChild(std::unique_ptr<Operator> child) { children_.push_back(std::move(child)); }
  // Before Open: puts `op` (childless, with the same schema) between this operator and its
  // child i, which becomes op's only child.
  void InsertAboveChild(size_t i, std::unique_ptr<Operator> op);
  // Materializes all its input before its first output.
  virtual bool blocking() const { return false; }
  // Parallel execution (query.md, "Parallel aggregation"): the child whose tuples this operator
  // takes in and treats one at a time, each independently of the others (a filter's, a
  // projection's or a buffer's input, a join's probe or outer input), so that running it over
  // parts of that input gives, together, its output over the whole; null for other operators.
  virtual Operator* streamed_input() const { return nullptr; }
  // Shared scans (query.md, "Shared scans") may return a table's rows starting mid-table, so
  // only a scan whose order nothing above it relies on shares. How this operator uses the
  // order of child i's tuples: it needs it (a merge join, a sort aggregation, and by default);
  // its output keeps it (a filter, a projection, a limit, a buffer, a join's probe or outer
  // side, whose order its output follows); or it ignores it (a sort, a hash aggregation).
  enum class InputOrder : uint8_t { kNeeded, kPassedOn, kIgnored };
  virtual InputOrder input_order(size_t child) const {
    (void)child;
    return InputOrder::kNeeded;
  }
  // Before Open: marks this operator's output as one whose order nothing relies on (`free`),
  // and its children's as input_order says.
  void MarkOrderFree(bool free);
  bool order_free() const { return order_free_; }
  // A table scan: its table and key range (true), which RestrictScan narrows to a part of it
  // (Table::SplitRange) before Open; false for other operators.
  virtual bool scan_source(Table** table, ScanOptions* range) const {
    (void)table;
    (void)range;
    return false;
  }
  virtual void RestrictScan(const ScanOptions& part) {
    (void)part;
    SM_ASSERT(false && "RestrictScan of an operator that is not a scan");
  }
  // For column `column` of this operator's output: its index in streamed_input()'s output if
  // it carries that column's value unchanged in every row, else -1. By default the streamed
  // input's columns come first (filters and buffers return their input; joins put the probe's
  // or outer's columns first).
  virtual int streamed_column(size_t column) const;
  // Columns of streamed_input() on whose values no cut may fall, because rows equal on them
  // must meet in one part (a sort aggregation's group keys): true with them, false if none.
  virtual bool grouped_columns(std::vector<size_t>* columns) const {
    (void)columns;
    return false;
  }
  // A merge join: its right input, which a part must read over the same keys as the streamed
  // (left) one, and the key columns of each side (true); false for other operators.
  virtual bool aligned_input(Operator** input, std::vector<size_t>* streamed_keys,
                             std::vector<size_t>* input_keys) const {
    (void)input;
    (void)streamed_keys;
    (void)input_keys;
    return false;
  }
  // A scan whose output columns `columns` are, in order, the leading key columns of its table:
  // true, with the bytes they fill at the start of every key and a description of their
  // encodings (equal for two scans whose keys order such columns alike); false otherwise.
  // With `any_order`, the bytes of the longest run of leading key columns among `columns`.
  virtual bool key_prefix(const std::vector<size_t>& columns, bool any_order, size_t* bytes,
                          std::string* shape) const {
    (void)columns;
    (void)any_order;
    (void)bytes;
    (void)shape;
    return false;
  }
  // The footprint modules (footprints.h) whose code runs while this operator returns a tuple,
  // and while it takes in child i's tuples: the same for a pipelined operator; a blocking one
  // takes its input in while it opens (a sort's run building, a hash join's build).
  virtual void OutputModules(std::vector<std::string>* out) const { (void)out; }
  virtual void InputModules(size_t child, std::vector<std::string>* out) const {
    (void)child;
    OutputModules(out);
  }

  // Before Open: keep at least `tuples` of the returned tuples valid (see above).
  void RequestWindow(uint32_t tuples) {
    if (tuples > requested_window_) requested_window_ = tuples;
  }
  uint32_t requested_window() const { return requested_window_; }
  // After Open: how many returned tuples stay valid.
  virtual uint32_t window() const { return requested_window_; }

  [[nodiscard]] Status Open(ExecContext* ctx);
  // *row: the next tuple, or null at the end.
  [[nodiscard]] Status Next(const Value** row) {
    if (instrumented_next_ == nullptr) [[likely]] {
      Status s = NextImpl(row);
      if (*row != nullptr) ++stats_.rows;
      return s;
    }
    return instrumented_next_(this, row);
  }
  // The next tuples, as many as the operator has at hand (a scan: the rest of its decoded
  // batch) up to `max`, into rows[0, *count): *count is 0 only at the end. The tuples obey the
  // lifetime contract as if returned by as many Next calls; a parent that takes more than one
  // must have asked for a window at least as large. One virtual call per batch instead of one
  // per tuple: the buffer operator fills itself this way. Analyzed or profiled, it calls Next
  // per tuple, so that every tuple is timed and attributed as before.
  [[nodiscard]] Status NextBatch(const Value** rows, uint32_t max, uint32_t* count) {
    SM_DASSERT(max >= 1);
    if (instrumented_next_ == nullptr) [[likely]] {
      Status s = NextBatchImpl(rows, max, count);
      SM_DASSERT(*count <= max);
      stats_.rows += *count;
      return s;
    }
    return NextEach(rows, max, count);
  }
  void Close();

  // Before Open: numbers this operator and those below it in preorder from *next on, while the
  // numbers last (see kProfileSlots); the others keep kNoProfileSlot.
  void AssignProfileSlots(uint32_t* next);
  uint32_t profile_slot() const { return profile_slot_; }

  const Stats& stats() const { return stats_; }
  // rows_read of this operator and every operator below it.
  uint64_t TreeRowsRead() const;
  // The optimizer-free estimate of rows this operator returns, for EXPLAIN; < 0 if unknown.
  double estimated_rows() const { return estimated_rows_; }
  void set_estimated_rows(double rows) { estimated_rows_ = rows; }
  // What plan refinement decided for this operator (its execution group's footprint, or why it
  // joined none), for EXPLAIN; empty if the tree was not refined.
  const std::string& refinement() const { return refinement_; }
  void set_refinement(std::string note) { refinement_ = std::move(note); }

 protected:
  virtual Status OpenImpl(ExecContext* ctx) = 0;
  virtual Status NextImpl(const Value** row) = 0;
  // NextBatch's work; by default NextImpl until `max` tuples or the end.
  virtual Status NextBatchImpl(const Value** rows, uint32_t max, uint32_t* count);
  virtual void CloseImpl() {}
  // Opens every child (the usual first step of OpenImpl).
  Status OpenChildren(ExecContext* ctx);
  Operator* child(size_t i) const { return children_[i].get(); }
  void CountRowRead() { ++stats_.rows_read; }

 private:
  friend struct OperatorSlot;
  using InstrumentedNextFn = Status (*)(Operator*, const Value**);
  static Status TimedNext(Operator* op, const Value** row);
  Status CountedNext(const Value** row);  // NextImpl, timed if analyzed, its rows counted
  Status NextEach(const Value** rows, uint32_t max, uint32_t* count);  // Next per tuple
  void CloseTree();  // CloseImpl, then the children's Close

  std::string name_;
  RowSchema schema_;
  std::vector<std::unique_ptr<Operator>> children_;
  uint32_t requested_window_ = 1;
  bool order_free_ = false;  // MarkOrderFree
  bool timed_ = false;
  // Set by Open when the query is analyzed (TimedNext) or profiled (the slot's Next).
  InstrumentedNextFn instrumented_next_ = nullptr;
  uint32_t profile_slot_ = kNoProfileSlot;
  double estimated_rows_ = -1;
  std::string refinement_;
  Stats stats_;
};

// The output slots of an operator that builds its tuples: tuples of `width` Values in slots
// used round-robin, so a tuple stays valid until `window` more have been built. One slot more
// than the window is kept, so that a tuple can be built (and dropped, if a predicate rejects
// it) in the slot after the current one without touching any tuple of the window. With a
// window above 1 (or when asked to), Own() copies the bytes of a tuple's strings into storage
// of its slot.
class TupleRing {
 public:
  void Init(size_t width, uint32_t window, bool own_strings = false);
  // The slot the next tuple is built in; it holds no tuple of the window.
  Value* Candidate() { return &values_[Following() * width_]; }
  // Storage of the candidate slot, for a producer that copies raw bytes itself (a scan copies
  // the engine's row once and decodes from the copy).
  std::string* CandidateBytes() { return &bytes_[Following()]; }
  // Makes the candidate the current tuple and returns it.
  Value* Advance() {
    current_ = Following();
    return &values_[current_ * width_];
  }
  // Makes the current tuple's string Values point at bytes its slot owns (if owns_strings()).
  void Own(Value* tuple) { OwnFirst(tuple, width_); }
  // The same for its first `columns` Values only: the others point at bytes that outlive the
  // window (a hash join's build rows, kept until Close).
  void OwnFirst(Value* tuple, size_t columns);
  // A tuple to return that stays valid for the window: `tuple` itself with a window of 1 (it
  // lives until the child's next call), else a copy in the next slot.
  const Value* Keep(const Value* tuple) {
    if (slots_ <= 2) return tuple;
    Value* out = Advance();
    for (size_t i = 0; i < width_; ++i) out[i] = tuple[i];
    Own(out);
    return out;
  }
  bool owns_strings() const { return own_strings_; }

 private:
  uint32_t Following() const { return current_ + 1 == slots_ ? 0 : current_ + 1; }

  size_t width_ = 0;
  uint32_t slots_ = 0;
  uint32_t current_ = 0;
  bool own_strings_ = false;
  std::vector<Value> values_;
  std::vector<std::string> bytes_;
};

}  // namespace sm::query
