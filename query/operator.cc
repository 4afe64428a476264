// The Operator wrappers and TupleRing (contract in operator.h).
#include "query/operator.h"

#include <array>
#include <chrono>
#include <cstring>
#include <utility>

#include "sm/common/assert.h"

namespace sm::query {

namespace {
uint64_t NowNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
}  // namespace

// Inlined into TimedNext and each slot's Next, so that a slot's Next costs one frame of its own.
[[gnu::always_inline]] inline Status Operator::CountedNext(const Value** row) {
  const uint64_t start = timed_ ? NowNanos() : 0;
  Status s = NextImpl(row);
  if (timed_) stats_.nanos += NowNanos() - start;
  if (*row != nullptr) ++stats_.rows;
  return s;
}

namespace {
// Up to `max` tuples from `pull` (one per call, null at the end) into rows[0, *count).
template <typename PullOne>
Status PullUpTo(const PullOne& pull, const Value** rows, uint32_t max, uint32_t* count) {
  *count = 0;
  while (*count < max) {
    const Value* row = nullptr;
    SM_TRY(pull(&row));
    if (row == nullptr) break;
    rows[(*count)++] = row;
  }
  return Status::OK();
}
}  // namespace

Status Operator::NextBatchImpl(const Value** rows, uint32_t max, uint32_t* count) {
  return PullUpTo([this](const Value** row) { return NextImpl(row); }, rows, max, count);
}

Status Operator::NextEach(const Value** rows, uint32_t max, uint32_t* count) {
  return PullUpTo([this](const Value** row) { return Next(row); }, rows, max, count);
}

// The functions that carry an operator's profile slot in their names. noipa keeps every
// instantiation a distinct function (no inlining, no identical-code folding), and the empty asm
// after each call keeps the call a call rather than a tail jump, so the callee's costs nest
// under the slot's function.
struct OperatorSlot {
  template <uint32_t K>
  [[gnu::noipa]] static Status Open(Operator* op, ExecContext* ctx) {
    Status s = op->OpenImpl(ctx);
    asm volatile("");
    return s;
  }
  template <uint32_t K>
  [[gnu::noipa]] static Status Next(Operator* op, const Value** row) {
    Status s = op->CountedNext(row);
    asm volatile("");
    return s;
  }
  template <uint32_t K>
  [[gnu::noipa]] static void Close(Operator* op) {
    op->CloseTree();
    asm volatile("");
  }
};

namespace {

using SlotOpen = Status (*)(Operator*, ExecContext*);
using SlotNext = Status (*)(Operator*, const Value**);
using SlotClose = void (*)(Operator*);

template <size_t... K>
constexpr std::array<SlotOpen, sizeof...(K)> SlotOpens(std::index_sequence<K...>) {
  return {&OperatorSlot::Open<K>...};
}
template <size_t... K>
constexpr std::array<SlotNext, sizeof...(K)> SlotNexts(std::index_sequence<K...>) {
  return {&OperatorSlot::Next<K>...};
}
template <size_t... K>
constexpr std::array<SlotClose, sizeof...(K)> SlotCloses(std::index_sequence<K...>) {
  return {&OperatorSlot::Close<K>...};
}

constexpr auto kSlotOpen = SlotOpens(std::make_index_sequence<kProfileSlots>());
constexpr auto kSlotNext = SlotNexts(std::make_index_sequence<kProfileSlots>());
constexpr auto kSlotClose = SlotCloses(std::make_index_sequence<kProfileSlots>());

}  // namespace

Operator::Operator(std::string name, RowSchema schema)
    : name_(std::move(name)), schema_(std::move(schema)) {}

Operator::~Operator() = default;

Status Operator::Open(ExecContext* ctx) {
  SM_ASSERT(ctx != nullptr);
  timed_ = ctx->analyze;
  const bool profiled = profile_slot_ != kNoProfileSlot;
  instrumented_next_ = profiled ? kSlotNext[profile_slot_] : timed_ ? &TimedNext : nullptr;
  ++stats_.opens;
  const uint64_t start = timed_ ? NowNanos() : 0;
  Status s = profiled ? kSlotOpen[profile_slot_](this, ctx) : OpenImpl(ctx);
  if (timed_) stats_.nanos += NowNanos() - start;
  return s;
}

Status Operator::TimedNext(Operator* op, const Value** row) { return op->CountedNext(row); }

int Operator::streamed_column(size_t column) const {
  const Operator* input = streamed_input();
  SM_ASSERT(input != nullptr);
  return column < input->schema().size() ? static_cast<int>(column) : -1;
}

void Operator::Close() {
  if (profile_slot_ != kNoProfileSlot) {
    kSlotClose[profile_slot_](this);
  } else {
    CloseTree();
  }
}

void Operator::CloseTree() {
  CloseImpl();
  for (auto& c : children_) c->Close();
}

void Operator::MarkOrderFree(bool free) {
  order_free_ = free;
  for (size_t i = 0; i < children_.size(); ++i) {
    const InputOrder use = input_order(i);
    children_[i]->MarkOrderFree(use == InputOrder::kIgnored ||
                                (use == InputOrder::kPassedOn && free));
  }
}

void Operator::InsertAboveChild(size_t i, std::unique_ptr<Operator> op) {
  SM_ASSERT(i < children_.size());
  SM_ASSERT(op != nullptr && op->children_.empty());
  SM_ASSERT(op->schema_.size() == children_[i]->schema_.size());
  op->children_.push_back(std::move(children_[i]));
  children_[i] = std::move(op);
}

void Operator::AssignProfileSlots(uint32_t* next) {
  if (*next < kProfileSlots) profile_slot_ = (*next)++;
  for (auto& c : children_) c->AssignProfileSlots(next);
}

uint64_t Operator::TreeRowsRead() const {
  uint64_t rows = stats_.rows_read;
  for (const auto& c : children_) rows += c->TreeRowsRead();
  return rows;
}

Status Operator::OpenChildren(ExecContext* ctx) {
  for (auto& c : children_) SM_TRY(c->Open(ctx));
  return Status::OK();
}

void TupleRing::Init(size_t width, uint32_t window, bool own_strings) {
  SM_ASSERT(window >= 1);
  SM_ASSERT(window != kUnboundedWindow);
  width_ = width;
  slots_ = window + 1;
  current_ = 0;
  own_strings_ = own_strings || window > 1;
  values_.assign(width * slots_, Value());
  bytes_.assign(slots_, std::string());
}

void TupleRing::OwnFirst(Value* tuple, size_t columns) {
  if (!own_strings_) return;
  SM_DASSERT(tuple == &values_[current_ * width_]);
  SM_DASSERT(columns <= width_);
  // A Value with len > 0 is a string (value.h, invariant 4); an empty one needs no bytes.
  size_t total = 0;
  for (size_t i = 0; i < columns; ++i) {
    if (!tuple[i].null && tuple[i].len > 0) total += tuple[i].len;
  }
  std::string& bytes = bytes_[current_];
  bytes.resize(total);
  char* out = bytes.data();
  for (size_t i = 0; i < columns; ++i) {
    Value& v = tuple[i];
    if (v.null || v.len == 0) continue;
    std::memcpy(out, v.s, v.len);
    v.s = out;
    out += v.len;
  }
  SM_ASSERT(out == bytes.data() + total);
}

}  // namespace sm::query
