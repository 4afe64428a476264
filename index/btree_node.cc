// B+-tree node: formatting, record encoding and in-node search (format in btree_node.h).
#include "index/btree_node.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "sm/common/assert.h"

namespace sm::index {

static_assert(std::endian::native == std::endian::little, "node fields are stored in host order");

namespace {

// CompareKeys of bytes [from, from + n) of a and b (each at least `from` long; either may end
// sooner, a proper prefix sorting first). The bytes a node's heads skip are few: when both
// have them all and they are fewer than 8, a fixed number of loads (ShortKeyWord) decides.
[[gnu::always_inline]] inline int CompareKeyBytes(std::string_view a, std::string_view b,
                                                  size_t from, size_t n) {
  SM_DASSERT(n > 0 && a.size() >= from && b.size() >= from);
  if (n < 8 && a.size() >= from + n && b.size() >= from + n) {
    const uint64_t x = ShortKeyWord(a.data() + from, n);
    const uint64_t y = ShortKeyWord(b.data() + from, n);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  return CompareKeys(std::string_view(a.data() + from, std::min(n, a.size() - from)),
                     std::string_view(b.data() + from, std::min(n, b.size() - from)));
}

// The tag (key head) at `tag`: directory entries are kSlotBytes apart, so record i's tag is
// at tags + i * kSlotBytes from its first record's.
[[gnu::always_inline]] inline uint32_t TagAt(const char* tag) {
  uint32_t value;
  std::memcpy(&value, tag, sizeof(value));
  return value;
}

// The first of the n (> 0) tags from `tags` whose head is >= head (kAfter: > head), n if
// none. No branch depends on the heads: each probe picks the next half with a conditional
// move, so a search through a node costs no mispredicted branch per level of the halving
// (about half of a branchy search's probes mispredict, whatever the predictor). Both
// candidates for the next probe are prefetched while this one is compared: a node not in the
// cache costs about half as many misses one after another.
template <bool kAfter, bool kPrefetch>
[[gnu::always_inline]] inline size_t HeadBound(const char* tags, size_t n, uint32_t head) {
  SM_DASSERT(n > 0);
  constexpr size_t kStep = SlottedPage::kSlotBytes;
  const char* base = tags;
  while (n > 1) {
    const size_t half = n / 2;
    if constexpr (kPrefetch) {
      const size_t next_half = (n - half) / 2;
      __builtin_prefetch(base + next_half * kStep);
      __builtin_prefetch(base + (half + next_half) * kStep);
    }
    const uint32_t probe = TagAt(base + half * kStep);
    base = (kAfter ? probe <= head : probe < head) ? base + half * kStep : base;
    n -= half;
  }
  const uint32_t last = TagAt(base);
  const size_t at = static_cast<size_t>(base - tags) / kStep;
  return at + ((kAfter ? last <= head : last < head) ? 1 : 0);
}

}  // namespace

void Node::Format(char* page, uint16_t level, uint16_t flags, PageId tree_root,
                  std::string_view low_fence, std::string_view high_fence) {
  SM_ASSERT((flags & ~kNodeKnownFlags) == 0);
  SM_ASSERT(low_fence.size() <= kMaxKeyBytes);
  SM_ASSERT(high_fence.size() <= kMaxKeyBytes);
  HeaderOf(page)->type = static_cast<uint16_t>(NodePageType(level));
  auto* header = reinterpret_cast<BtreeNodeHeader*>(page + kPageHeaderBytes);
  uint64_t version = header->version;  // a reformatted node keeps counting (cursor checks)
  *header = BtreeNodeHeader{};
  SM_ASSERT(level <= UINT8_MAX);
  header->level = static_cast<uint8_t>(level);
  header->flags = flags;
  header->format_version = kBtreeNodeFormatVersion;
  header->tree_root = tree_root.value();
  header->prefix_bytes =
      FencePrefixBytes(low_fence, high_fence, (flags & kNodeHighInfinite) != 0);
  header->version = version + 1;
  SlottedPage slots(page, kNodeAreaOffset);
  slots.Init();
  // An empty node has room for two maximal fences (static_asserts in btree_node.h).
  SM_ASSERT(slots.Insert(kLowFenceSlot, low_fence).ok());
  SM_ASSERT(slots.Insert(kHighFenceSlot, high_fence).ok());
}

std::string_view Node::ValueAt(uint16_t i) const {
  SM_DASSERT(is_leaf());
  SM_DASSERT(i < count());
  std::string_view rec = SlotBytes(static_cast<uint16_t>(kFirstRecordSlot + i));
  size_t offset = kLeafRecordOverheadBytes + LeafKeyBytes(rec.data());
  SM_DASSERT(offset <= rec.size());
  return {rec.data() + offset, rec.size() - offset};
}

PageId Node::ChildAt(uint16_t i) const {
  SM_DASSERT(!is_leaf());
  if (i == 0) return leftmost_child();
  SM_DASSERT(i <= count());
  std::string_view rec = SlotBytes(static_cast<uint16_t>(kFirstRecordSlot + i - 1));
  uint64_t child;
  std::memcpy(&child, rec.data() + rec.size() - kInnerRecordOverheadBytes, sizeof(child));
  return PageId(child);
}

bool Node::StructureSound(const void* page) {
  // Read only: the view's mutators are never called.
  const Node n(const_cast<char*>(static_cast<const char*>(page)));
  if (!n.slots().CheckBounds() || n.slots().slot_count() < kFirstRecordSlot) return false;
  const bool leaf = PageTypeOf(page) == PageType::kBtreeLeaf;
  for (uint16_t slot = kFirstRecordSlot; slot < n.slots().slot_count(); ++slot) {
    std::string_view rec = n.SlotBytes(slot);
    if (!leaf) {
      if (rec.size() < kInnerRecordOverheadBytes) return false;
      continue;
    }
    if (rec.size() < kLeafRecordOverheadBytes) return false;
    if (size_t{LeafKeyBytes(rec.data())} + kLeafRecordOverheadBytes > rec.size()) return false;
  }
  const bool high_infinite = (n.header().flags & kNodeHighInfinite) != 0;
  return n.prefix_bytes() <= n.low_fence().size() &&
         (high_infinite || n.prefix_bytes() <= n.high_fence().size());
}

void Node::RegisterStructureCheck() {
  RegisterPageStructureCheck(PageType::kBtreeLeaf, &Node::StructureSound);
  RegisterPageStructureCheck(PageType::kBtreeInner, &Node::StructureSound);
}

uint16_t Node::LowerBound(std::string_view key) const {
  bool found;
  return LowerBound(key, &found);
}

uint16_t Node::LowerBound(std::string_view key, bool* found) const {
  return is_leaf() ? Search<true, false>(key, found) : Search<false, false>(key, found);
}

void Node::PrefetchRecordFor(std::string_view key) const {
  bool unused;
  const uint16_t i = Search<true, false, /*kHeadsOnly=*/true>(key, &unused);
  if (i == count()) return;
  std::string_view rec = SlotBytes(static_cast<uint16_t>(kFirstRecordSlot + i));
  // Every line the record spans: one of 65 to 128 bytes can cover three, and a middle line
  // not prefetched would miss when the value is copied out.
  const uintptr_t first = reinterpret_cast<uintptr_t>(rec.data()) & ~uintptr_t{63};
  const uintptr_t last = reinterpret_cast<uintptr_t>(rec.data() + rec.size() - 1);
  for (uintptr_t line = first; line <= last; line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(line));
  }
}

uint16_t Node::UpperBound(std::string_view key) const {
  bool equal;
  return is_leaf() ? Search<true, true>(key, &equal) : Search<false, true>(key, &equal);
}

template <bool kLeaf, bool kUpper, bool kHeadsOnly>
uint16_t Node::Search(std::string_view key, bool* equal) const {
  static_assert(!(kHeadsOnly && kUpper), "a heads-only search is a lower bound");
  SM_DASSERT(key.size() >= prefix_bytes());
  SM_DASSERT(key.compare(0, prefix_bytes(), low_fence().substr(0, prefix_bytes())) == 0);
  *equal = false;
  if constexpr (!kHeadsOnly) {
    // Every record holds record 0's bytes [prefix, prefix + skip): a key without them lies
    // before or after all of them. (A heads-only search only aims a prefetch.)
    if (head_skip() != 0) {
      const int c = CompareKeyBytes(key, KeyOfKind<kLeaf>(0), prefix_bytes(), head_skip());
      if (c != 0) return c < 0 ? 0 : count();
    }
  }
  const size_t n = count();
  if (n == 0) return 0;
  const uint32_t head = KeyHead(key, HeadOffset());
  const char* tags = SlotEntry(kFirstRecordSlot) + kSlotTagOffset;
  // 1. The records before `lo` have smaller heads, so smaller keys (the file comment). A
  // heads-only search runs over a directory already asked for: it prefetches nothing.
  size_t lo = HeadBound</*kAfter=*/false, /*kPrefetch=*/!kHeadsOnly>(tags, n, head);
  if constexpr (kHeadsOnly) return static_cast<uint16_t>(lo);
  if (lo == n || HeadAt(static_cast<uint16_t>(lo)) != head) {
    return static_cast<uint16_t>(lo);  // no head ties: the key lies between two records
  }
  // 2. Records [lo, hi) tie with the key's head: whole keys decide among them. Usually one
  // (the key itself, in a leaf); a run of them where keys share more than the 4 bytes.
  size_t hi = lo + 1;
  if (hi < n && HeadAt(static_cast<uint16_t>(hi)) == head) {
    hi = lo + HeadBound</*kAfter=*/true, /*kPrefetch=*/false>(
                  tags + lo * SlottedPage::kSlotBytes, n - lo, head);
  }
  // For a lower bound, a record equal to the key becomes hi and every later probe lies below
  // it, so the search ends there: equal says the record at the result holds the key.
  bool equal_seen = false;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const int c = CompareKeys(KeyOfKind<kLeaf>(static_cast<uint16_t>(mid)), key);
    equal_seen |= c == 0;
    if (kUpper ? c <= 0 : c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  *equal = equal_seen;
  return static_cast<uint16_t>(lo);
}

uint16_t Node::ChildIndex(std::string_view target, SearchMode mode) const {
  switch (mode) {
    case SearchMode::kCovering:
      return UpperBound(target);  // c_i with s_i <= target < s_{i+1}
    case SearchMode::kBefore:
      return LowerBound(target);  // c_i with s_i < target <= s_{i+1}
    case SearchMode::kRightmost:
      return count();
  }
  SM_UNREACHABLE();
}

bool Node::Covers(std::string_view target, SearchMode mode) const {
  switch (mode) {
    case SearchMode::kCovering:
      return low_fence() <= target && (high_infinite() || target < high_fence());
    case SearchMode::kBefore:
      return low_fence() < target && (high_infinite() || target <= high_fence());
    case SearchMode::kRightmost:
      return high_infinite();
  }
  SM_UNREACHABLE();
}

Status Node::InsertLeafRecord(uint16_t i, std::string_view key, std::string_view value,
                              bool external) {
  SM_DASSERT(is_leaf());
  SM_DASSERT(key.size() <= kMaxKeyBytes);
  size_t bytes = LeafRecordBytes(key.size(), value.size());
  if (!CanTake(bytes)) return Status::NoSpace("leaf full");
  // Built on the stack: the record is at most kMaxRecordBytes.
  char record[SlottedPage::kMaxRecordBytes];
  SM_ASSERT(bytes <= sizeof(record));
  auto key_bytes = static_cast<uint16_t>(key.size() | (external ? kLeafExternalBit : 0));
  std::memcpy(record, &key_bytes, sizeof(key_bytes));
  if (!key.empty()) std::memcpy(record + kLeafRecordOverheadBytes, key.data(), key.size());
  if (!value.empty()) {
    std::memcpy(record + kLeafRecordOverheadBytes + key.size(), value.data(), value.size());
  }
  return InsertRaw(i, std::string_view(record, bytes));
}

Status Node::UpdateLeafValue(uint16_t i, std::string_view value, bool external) {
  SM_DASSERT(is_leaf());
  std::string_view key = KeyAt(i);
  size_t bytes = LeafRecordBytes(key.size(), value.size());
  if (bytes > SlottedPage::kMaxRecordBytes) return Status::InvalidArgument("record too long");
  char record[SlottedPage::kMaxRecordBytes];
  auto key_bytes = static_cast<uint16_t>(key.size() | (external ? kLeafExternalBit : 0));
  std::memcpy(record, &key_bytes, sizeof(key_bytes));
  // The key (and the value, if the caller passed one from this page) may live in this page;
  // memmove-free because `record` is a separate buffer.
  if (!key.empty()) std::memcpy(record + kLeafRecordOverheadBytes, key.data(), key.size());
  if (!value.empty()) {
    std::memcpy(record + kLeafRecordOverheadBytes + key.size(), value.data(), value.size());
  }
  Status s = slots_.Update(static_cast<uint16_t>(kFirstRecordSlot + i),
                           std::span<const char>(record, bytes));
  if (s.code() == Status::Code::kNoSpace) return Status::NoSpace("leaf full");
  return s;
}

Status Node::InsertInnerRecord(uint16_t i, std::string_view key, PageId child) {
  SM_DASSERT(!is_leaf());
  SM_DASSERT(key.size() <= kMaxKeyBytes);
  size_t bytes = InnerRecordBytes(key.size());
  if (!CanTake(bytes)) return Status::NoSpace("inner node full");
  char record[kMaxInnerRecordBytes];
  if (!key.empty()) std::memcpy(record, key.data(), key.size());
  uint64_t child_id = child.value();
  std::memcpy(record + key.size(), &child_id, sizeof(child_id));
  return InsertRaw(i, std::string_view(record, bytes));
}

Status Node::InsertRaw(uint16_t i, std::string_view record, bool refresh) {
  SM_DASSERT(i <= count());
  std::string_view key = is_leaf() ? KeyOfRecord<true>(record) : KeyOfRecord<false>(record);
  SM_TRY(slots_.Insert(static_cast<uint16_t>(kFirstRecordSlot + i),
                       std::span<const char>(record.data(), record.size()),
                       KeyHead(key, HeadOffset())));
  // Only the first and last keys define head_skip, and a new first or last key can only
  // shorten it: it changes only if the key lacks the bytes its neighbour shares with all.
  if (refresh && (i == 0 || i + 1 == count())) {
    if (count() == 2) {
      RefreshHeadSkip();
    } else if (head_skip() != 0) {
      const std::string_view neighbour = KeyAt(static_cast<uint16_t>(i == 0 ? 1 : i - 1));
      if (CompareKeyBytes(key, neighbour, prefix_bytes(), head_skip()) != 0) RefreshHeadSkip();
    }
  }
  return Status::OK();
}

void Node::EraseRecord(uint16_t i, bool refresh) {
  SM_DASSERT(i < count());
  const bool end = i == 0 || i + 1 == count();
  slots_.Erase(static_cast<uint16_t>(kFirstRecordSlot + i));
  if (refresh && end) RefreshHeadSkip();
}

Status Node::SetHighFence(std::string_view high_fence, bool infinite) {
  SM_DASSERT(high_fence.size() <= kMaxKeyBytes);
  if (infinite) high_fence = {};
  SM_TRY(
      slots_.Update(kHighFenceSlot, std::span<const char>(high_fence.data(), high_fence.size())));
  mutable_header().flags = static_cast<uint16_t>(infinite ? flags() | kNodeHighInfinite
                                                          : flags() & ~kNodeHighInfinite);
  RefreshHeads();
  return Status::OK();
}

void Node::RefreshHeads() {
  const uint16_t prefix = FencePrefixBytes(low_fence(), high_fence(), high_infinite());
  if (prefix != prefix_bytes()) {
    mutable_header().prefix_bytes = prefix;
    mutable_header().head_skip = ExpectedHeadSkip();
    RewriteHeads();
    return;
  }
  RefreshHeadSkip();
}

void Node::RefreshHeadSkip() {
  const uint8_t skip = ExpectedHeadSkip();
  if (skip == head_skip()) return;
  mutable_header().head_skip = skip;
  RewriteHeads();
}

uint8_t Node::ExpectedHeadSkip() const {
  if (count() < 2) return 0;
  // Both keys start with the fences' prefix (they lie between the fences), so common >= p.
  const size_t common = CommonPrefixBytes(KeyAt(0), KeyAt(static_cast<uint16_t>(count() - 1)));
  const size_t p = prefix_bytes();
  const size_t shared = common > p ? common - p : 0;
  return static_cast<uint8_t>(shared >= kMinHeadSkip ? std::min(shared, kMaxHeadSkip) : 0);
}

size_t CommonPrefixBytes(std::string_view a, std::string_view b) {
  const size_t limit = std::min(a.size(), b.size());
  size_t common = 0;
  // Eight bytes at a time: every split and every erase at a node's end compares its first
  // and last keys (ExpectedHeadSkip).
  for (; common + 8 <= limit; common += 8) {
    uint64_t x;
    uint64_t y;
    std::memcpy(&x, a.data() + common, 8);
    std::memcpy(&y, b.data() + common, 8);
    if (x != y) return common + static_cast<size_t>(std::countr_zero(x ^ y)) / 8;
  }
  while (common < limit && a[common] == b[common]) ++common;
  return common;
}

uint16_t Node::FencePrefixBytes(std::string_view low_fence, std::string_view high_fence,
                                bool high_infinite) {
  if (high_infinite) return 0;
  return static_cast<uint16_t>(CommonPrefixBytes(low_fence, high_fence));
}

void Node::RewriteHeads() {
  for (uint16_t i = 0; i < count(); ++i) {
    slots_.SetTag(static_cast<uint16_t>(kFirstRecordSlot + i), KeyHead(KeyAt(i), HeadOffset()));
  }
}

void Node::FreeGap(uint16_t* offset, uint16_t* bytes) const {
  size_t dir_end = size_t{kNodeAreaOffset} + SlottedPage::kAreaHeaderBytes +
                   size_t{slots_.slot_count()} * SlottedPage::kSlotBytes;
  *offset = static_cast<uint16_t>(dir_end);
  *bytes = static_cast<uint16_t>(slots_.ContiguousFreeBytes());
}

namespace {
// The slotted area header as slotted_page.h lays it out (u16 each, little-endian).
struct RawAreaHeader {
  uint16_t slot_count;
  uint16_t heap_begin;
  uint16_t fragmented_bytes;
  uint16_t flags;
};
static_assert(sizeof(RawAreaHeader) == SlottedPage::kAreaHeaderBytes);

RawAreaHeader LoadAreaHeader(const char* page) {
  RawAreaHeader header;
  std::memcpy(&header, page + kNodeAreaOffset, sizeof(header));
  return header;
}
}  // namespace

bool Node::AreaBoundsIntact() const {
  RawAreaHeader header = LoadAreaHeader(page_);
  size_t dir_end = size_t{kNodeAreaOffset} + SlottedPage::kAreaHeaderBytes +
                   size_t{header.slot_count} * SlottedPage::kSlotBytes;
  if (header.slot_count < kFirstRecordSlot) return false;
  if (dir_end > header.heap_begin) return false;
  if (header.heap_begin > kPageBytes) return false;
  if (header.fragmented_bytes > kPageBytes - header.heap_begin) return false;
  return header.flags == 0;
}

bool Node::SlotIntact(uint16_t slot) const {
  RawAreaHeader header = LoadAreaHeader(page_);
  if (slot >= header.slot_count) return false;
  const char* entry = SlotEntry(slot);
  uint16_t offset;
  uint16_t length;
  std::memcpy(&offset, entry, sizeof(offset));
  std::memcpy(&length, entry + sizeof(offset), sizeof(length));
  if (length == 0) return offset == kPageBytes;
  return offset >= header.heap_begin && size_t{offset} + length <= kPageBytes &&
         length <= SlottedPage::kMaxRecordBytes;
}

bool Node::RecordIntact(uint16_t i) const {
  auto slot = static_cast<uint16_t>(kFirstRecordSlot + i);
  if (i >= UINT16_MAX - kFirstRecordSlot || !SlotIntact(slot)) return false;
  std::string_view rec = SlotBytes(slot);
  if (!is_leaf()) return rec.size() >= kInnerRecordOverheadBytes;
  if (rec.size() < kLeafRecordOverheadBytes) return false;
  return size_t{LeafKeyBytes(rec.data())} + kLeafRecordOverheadBytes <= rec.size();
}

bool Node::CheckInvariants() const {
  const BtreeNodeHeader& h = header();
  if (PageTypeOf(page_) != (h.level == 0 ? PageType::kBtreeLeaf : PageType::kBtreeInner) ||
      h.format_version != kBtreeNodeFormatVersion || (h.flags & ~kNodeKnownFlags) != 0) {
    return false;
  }
  // The area's bounds only: the slotted area's own mutators check the rest of its invariants
  // (a sort of the slots, which would double the cost of every check here).
  if (!slots_.CheckBounds() || slots_.slot_count() < kFirstRecordSlot) return false;
  if (is_leaf() == leftmost_child().valid()) return false;
  if (high_infinite() && !high_fence().empty()) return false;
  if (h.prefix_bytes != FencePrefixBytes(low_fence(), high_fence(), high_infinite())) return false;
  if (slots_.Tag(kLowFenceSlot) != 0 || slots_.Tag(kHighFenceSlot) != 0) return false;
  std::string_view previous;
  for (uint16_t i = 0; i < count(); ++i) {
    if (!RecordIntact(i)) return false;
    const std::string_view key = KeyAt(i);
    if (key.size() > kMaxKeyBytes) return false;
    if (i > 0 && !(previous < key)) return false;  // strictly increasing
    // Inside the fences; a separator equal to the low fence would leave a child no keys.
    if (is_leaf() ? key < low_fence() : key <= low_fence()) return false;
    if (!high_infinite() && key >= high_fence()) return false;
    if (HeadAt(i) != KeyHead(key, size_t{prefix_bytes()} + head_skip())) return false;
    if (!is_leaf() && !ChildAt(static_cast<uint16_t>(i + 1)).valid()) return false;
    previous = key;
  }
  return head_skip() == ExpectedHeadSkip();
}

std::string ShortestSeparator(std::string_view left, std::string_view right) {
  SM_DASSERT(left < right);
  size_t common = CommonPrefixBytes(left, right);
  // right[0..common] is > left (it either extends left or differs upward at `common`) and is a
  // prefix of right, so <= right.
  SM_DASSERT(common < right.size());
  return std::string(right.substr(0, common + 1));
}

}  // namespace sm::index
