// The Operator wrappers and TupleRing (contract in operator.h).
#include "query/operator.h"

#include <chrono>
#include <cstring>

#include "sm/common/assert.h"

namespace sm::query {

namespace {
uint64_t NowNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
}  // namespace

Operator::Operator(std::string name, RowSchema schema)
    : name_(std::move(name)), schema_(std::move(schema)) {}

Operator::~Operator() = default;

Status Operator::Open(ExecContext* ctx) {
  SM_ASSERT(ctx != nullptr);
  timed_ = ctx->analyze;
  ++stats_.opens;
  if (!timed_) return OpenImpl(ctx);
  uint64_t start = NowNanos();
  Status s = OpenImpl(ctx);
  stats_.nanos += NowNanos() - start;
  return s;
}

Status Operator::TimedNext(const Value** row) {
  uint64_t start = NowNanos();
  Status s = NextImpl(row);
  stats_.nanos += NowNanos() - start;
  if (*row != nullptr) ++stats_.rows;
  return s;
}

void Operator::Close() {
  CloseImpl();
  for (auto& c : children_) c->Close();
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
