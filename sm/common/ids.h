// Strong identifier types shared by every layer: Lsn, PageId, TxnId.
//
// A StrongId wraps an integer so that a page id cannot be passed where an LSN is expected.
// All are trivially copyable, totally ordered, hashable, and printable through value().
//
// Invariants:
//   1. Lsn is a byte offset in the log; Lsn::Invalid() (0) precedes every real record, so the
//      first record of a log starts at a positive offset.
//   2. PageId 0 is never a data page (it is the volume header), so PageId::Invalid() is 0.
//   3. TxnId 0 means "no transaction" (system work, e.g. redo-only structure changes).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace sm {

template <typename Tag, typename Int>
class StrongId {
 public:
  using ValueType = Int;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Int value) : value_(value) {}
  constexpr Int value() const { return value_; }
  constexpr bool valid() const { return value_ != 0; }
  static constexpr StrongId Invalid() { return StrongId(0); }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  Int value_ = 0;
};

struct LsnTag {};
struct PageIdTag {};
struct TxnIdTag {};

using Lsn = StrongId<LsnTag, uint64_t>;
using PageId = StrongId<PageIdTag, uint64_t>;
using TxnId = StrongId<TxnIdTag, uint64_t>;

static_assert(sizeof(Lsn) == 8);
static_assert(sizeof(PageId) == 8);
static_assert(sizeof(TxnId) == 8);

}  // namespace sm

template <typename Tag, typename Int>
struct std::hash<sm::StrongId<Tag, Int>> {
  size_t operator()(sm::StrongId<Tag, Int> id) const noexcept {
    return std::hash<Int>{}(id.value());
  }
};
