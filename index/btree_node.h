// B+-tree node: the byte format of B-tree leaf and inner pages and the operations inside one
// node (search, record encoding, insert/erase, fences).
//
// Owns: the node header that follows the common 48-byte page header, the meaning of the slotted
// records of a node, the key and record size limits, and the capacity arithmetic that lets every
// full node split into two nodes that each take the pending entry (static_asserts below).
// It does not latch: a Node is a view over a page buffer whose frame latch the caller holds
// (shared for the const accessors, exclusive for the mutators).
//
// Byte format (little-endian; offsets from the start of the page):
//   +0   PageHeader (sm/page/page.h): type kBtreeLeaf (level 0) or kBtreeInner (level > 0),
//        page LSN.
//   +48  u8  level            0 for leaves; a parent is one level above its children
//   +49  u8  head_skip        key bytes after the prefix that every record of the node shares
//                             beyond it, which the heads skip too (see "heads" below)
//   +50  u16 flags            kNodeHighInfinite | kNodeRoot | kNodeNonUnique (see NodeFlag)
//   +52  u16 format_version   kBtreeNodeFormatVersion
//   +54  u16 prefix_bytes     the length of the longest common prefix of the two fences
//                             (0 when kNodeHighInfinite is set): every key of the node starts
//                             with these bytes of the low fence, so searches skip them
//   +56  u64 tree_root        page id of the root of the tree the node belongs to; lets a
//                             cursor (and a verify tool) tell a node of this tree from a stale id
//   +64  u64 right_sibling    the next node to the right on the same level (B-link), 0 for the
//                             rightmost node
//   +72  u64 leftmost_child   inner nodes: the child left of the first separator; leaves: 0
//   +80  u64 version          modification counter, bumped under the exclusive latch by every
//                             change of the node; cursors compare it to revalidate a remembered
//                             position. Not logged (no cursor survives a restart).
//   +88  SlottedPage area (sm/page/slotted_page.h), area_offset = kNodeAreaOffset:
//          slot 0            low fence key: the inclusive lower bound of the node's key range
//          slot 1            high fence key: the exclusive upper bound; an empty record when
//                            kNodeHighInfinite is set (the rightmost node of its level)
//          slot 2 + i        record i, in strictly increasing key order:
//            leaf:   u16 key_bytes | key | value          (value = the rest of the record)
//                    key_bytes' top bit (kLeafExternalBit) marks an external value: the
//                    value is the stub of a large value stored outside the tree (btree.h,
//                    "Large values"); the low 15 bits are the key's length
//            inner:  separator key | u64 child page id    (key = all but the last 8 bytes)
//        Every slot carries a u32 tag (slotted_page.h). A record's tag is its key head,
//        KeyHead(key, prefix_bytes + head_skip): the 4 key bytes after the shared bytes read
//        as a big-endian integer, zero-padded. Heads are ordered as their keys, up to ties
//        (a < b implies head(a) <= head(b)), so a search compares the contiguous heads of the
//        slot directory and reads a record only when its head equals the target's (the
//        key-head layout of LeanStore and Graefe's "Modern B-tree techniques", 3.5). The fence
//        slots' tags are zero.
//        head_skip is the number of bytes the first and last records' keys share after the
//        fences' prefix, if at least kMinHeadSkip (else 0, as with fewer than two records;
//        at most kMaxHeadSkip): a function of the records alone, so a redone page equals the
//        original. Without it a node whose fences share nothing (the root, every leftmost and
//        rightmost node) would take its heads from bytes all its keys share (the zero high
//        bytes of an integer key, a table's or warehouse's number) and every probe would tie
//        and read a record.
//
// Keys are byte strings compared with memcmp, a proper prefix sorting first. The empty key is a
// valid key. The low fence "" means "no lower bound": since "" is the smallest key and a
// separator is always greater than some key, only the leftmost node of a level has low fence "".
//
// Key ranges: a node covers [low fence, high fence). In an inner node with separators
// s_1 < ... < s_n and children c_0 (leftmost), c_1..c_n, child c_i covers [s_i, s_{i+1}) with
// s_0 = low fence and s_{n+1} = high fence, and its fences are exactly those two keys.
//
// Invariants (checked by BTree::Verify):
//   1. Page type is kBtreeLeaf iff level == 0; format_version is current; tree_root is the
//      page id of the tree's root; prefix_bytes is the fences' common prefix length;
//      head_skip is as defined above.
//   2. Slots 0 and 1 exist; every record parses; keys are strictly increasing; every key k
//      satisfies low <= k < high (and for separators low < k).
//   3. A child's level is its parent's minus one; its fences equal its separator interval.
//   4. Along a level, right_sibling links the nodes in key order and the high fence of each
//      equals the low fence of the next; the last has no sibling and an infinite high fence.
//   5. Only the root carries kNodeRoot (and kNodeNonUnique, the tree's kind).
//   6. Keys are at most kMaxKeyBytes; a leaf record is at most SlottedPage::kMaxRecordBytes.
//   7. Every record's tag is the head of its key (after prefix_bytes + head_skip bytes); the
//      fence slots' tags are zero.
//
// Thread/fiber safety: none of its own; see "Owns".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "sm/common/assert.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/page/page.h"
#include "sm/page/slotted_page.h"

namespace sm::index {

// Version 2: key heads in the slot tags and prefix_bytes in the header. Version 3: head_skip.
inline constexpr uint16_t kBtreeNodeFormatVersion = 3;
// The fewest and most key bytes a head skips beyond the prefix (head_skip is one byte). A
// search in a node that skips reads its first record (a cache miss of its own in a leaf), worth
// it only once shared bytes would take half of every head: with one, heads keep three bytes
// that tell keys apart.
inline constexpr size_t kMinHeadSkip = 2;
inline constexpr size_t kMaxHeadSkip = 255;

// Keys longer than this are InvalidArgument. A quarter of a page would be the most a leaf could
// hold, but separators of that size would leave inner nodes with too few entries to split; 1 KiB
// keeps the split arithmetic below comfortable and is far above any key this engine builds.
inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr size_t kLeafRecordOverheadBytes = 2;  // the u16 key length
// The top bit of a leaf record's u16 key length: its value is an external value's stub. Keys
// are at most kMaxKeyBytes, so the bit is free in every record written before it existed.
inline constexpr uint16_t kLeafExternalBit = 0x8000;
static_assert(kMaxKeyBytes < kLeafExternalBit);
// The key length of the leaf record at `rec` (at least kLeafRecordOverheadBytes long).
inline uint16_t LeafKeyBytes(const char* rec) {
  uint16_t key_bytes;
  std::memcpy(&key_bytes, rec, sizeof(key_bytes));
  return static_cast<uint16_t>(key_bytes & ~kLeafExternalBit);
}
inline bool LeafExternal(const char* rec) {
  uint16_t key_bytes;
  std::memcpy(&key_bytes, rec, sizeof(key_bytes));
  return (key_bytes & kLeafExternalBit) != 0;
}
inline constexpr size_t kInnerRecordOverheadBytes = 8;  // the u64 child page id
// A leaf record (key + value + 2) may be at most SlottedPage::kMaxRecordBytes: no overflow
// pages, so key + value <= 1974 bytes.
inline constexpr size_t kMaxLeafRecordBytes = SlottedPage::kMaxRecordBytes;
inline constexpr size_t kMaxInnerRecordBytes = kMaxKeyBytes + kInnerRecordOverheadBytes;

enum NodeFlag : uint16_t {
  kNodeHighInfinite = 1 << 0,  // no upper bound: the rightmost node of its level
  kNodeRoot = 1 << 1,          // the tree's root (its page id never changes)
  kNodeNonUnique = 1 << 2,     // root only: the tree was created as a non-unique index
};
inline constexpr uint16_t kNodeKnownFlags = kNodeHighInfinite | kNodeRoot | kNodeNonUnique;

struct BtreeNodeHeader {  // at offset kPageHeaderBytes
  uint8_t level;
  uint8_t head_skip;
  uint16_t flags;
  uint16_t format_version;
  uint16_t prefix_bytes;
  uint64_t tree_root;
  uint64_t right_sibling;
  uint64_t leftmost_child;
  uint64_t version;
};
static_assert(sizeof(BtreeNodeHeader) == 40);
static_assert(offsetof(BtreeNodeHeader, level) == 0);
static_assert(offsetof(BtreeNodeHeader, head_skip) == 1);
static_assert(offsetof(BtreeNodeHeader, flags) == 2);
static_assert(offsetof(BtreeNodeHeader, format_version) == 4);
static_assert(offsetof(BtreeNodeHeader, prefix_bytes) == 6);
static_assert(offsetof(BtreeNodeHeader, tree_root) == 8);
static_assert(offsetof(BtreeNodeHeader, right_sibling) == 16);
static_assert(offsetof(BtreeNodeHeader, leftmost_child) == 24);
static_assert(offsetof(BtreeNodeHeader, version) == 32);

inline constexpr uint16_t kNodeAreaOffset = kPageHeaderBytes + sizeof(BtreeNodeHeader);
static_assert(kNodeAreaOffset == 88);
static_assert(kNodeAreaOffset <= SlottedPage::kMaxAreaOffset);
inline constexpr uint16_t kLowFenceSlot = 0;
inline constexpr uint16_t kHighFenceSlot = 1;
inline constexpr uint16_t kFirstRecordSlot = 2;

// Capacity arithmetic. "Need" is what an entry takes from the slotted area (record + slot).
// A node's records, fences and slots share kNodeRecordAreaBytes.
inline constexpr size_t kNodeRecordAreaBytes =
    kPageBytes - kNodeAreaOffset - SlottedPage::kAreaHeaderBytes;
inline constexpr size_t kMaxFenceNeed = SlottedPage::SpaceNeeded(kMaxKeyBytes);
inline constexpr size_t kMaxLeafNeed = SlottedPage::SpaceNeeded(kMaxLeafRecordBytes);
inline constexpr size_t kMaxInnerNeed = SlottedPage::SpaceNeeded(kMaxInnerRecordBytes);
static_assert(kMaxInnerRecordBytes <= SlottedPage::kMaxRecordBytes);
// Why a split always succeeds (btree_split.cc, PlanSplit). A node that overflows held at most
// kNodeRecordAreaBytes and receives one more entry; each half gets its own two fences of at most
// kMaxFenceNeed. Choosing the split point by bytes, the halves can be balanced to within one
// entry (two for inner nodes, where the pending separator may not be the promoted one), so it is
// enough that two fences and two (inner: four) maximal entries fit in one node with room left.
static_assert(2 * kMaxFenceNeed + 2 * kMaxLeafNeed <= kNodeRecordAreaBytes);
static_assert(2 * kMaxFenceNeed + 4 * kMaxInnerNeed <= kNodeRecordAreaBytes);
// An empty node always takes one maximal entry between its fences.
static_assert(2 * kMaxFenceNeed + kMaxLeafNeed <= kNodeRecordAreaBytes);

// Which leaf a descent looks for (see BTree::DescendToLeaf).
enum class SearchMode : uint8_t {
  kCovering,   // the node whose [low, high) contains the target
  kBefore,     // the node whose (low, high] contains the target: it holds the keys just below it
  kRightmost,  // the rightmost node (target ignored)
};

// A view over the node stored in a page buffer. Cheap to construct; holds no state besides the
// buffer pointer. See the file comment for who may call what.
class Node {
 public:
  explicit Node(char* page) : page_(page), slots_(page, kNodeAreaOffset) {}
  // A leaf retired from its tree (btree_merge.cc): an empty leaf of no tree (tree_root 0, which
  // no live node has, since page 0 is the volume header), so a hint or cursor rejects it.
  static void FormatRetired(char* page) { Format(page, 0, 0, PageId(), "", ""); }
  static bool IsRetired(const char* page) {
    return PageTypeOf(page) == PageType::kBtreeLeaf &&
           reinterpret_cast<const BtreeNodeHeader*>(page + kPageHeaderBytes)->tree_root == 0;
  }

  // Whether the lengths and offsets a reader follows stay inside the page: the slotted
  // area's bounds (SlottedPage::CheckBounds, one pass), the two fences, every record long
  // enough for its kind's overhead (a leaf record's key length inside the record), and the
  // fences' common prefix no longer than either fence. Safe on any bytes; the check VerifyPage runs on every node read from disk
  // (RegisterStructureCheck), since no search or cursor re-checks these.
  static bool StructureSound(const void* page);
  static void RegisterStructureCheck();

  // Formats `page` (whose common header is already initialized) as an empty node.
  static void Format(char* page, uint16_t level, uint16_t flags, PageId tree_root,
                     std::string_view low_fence, std::string_view high_fence);

  const BtreeNodeHeader& header() const {
    return *reinterpret_cast<const BtreeNodeHeader*>(page_ + kPageHeaderBytes);
  }
  BtreeNodeHeader& mutable_header() {
    return *reinterpret_cast<BtreeNodeHeader*>(page_ + kPageHeaderBytes);
  }
  char* page() const { return page_; }
  SlottedPage& slots() { return slots_; }
  const SlottedPage& slots() const { return slots_; }

  uint16_t level() const { return header().level; }
  bool is_leaf() const { return header().level == 0; }
  uint16_t flags() const { return header().flags; }
  bool is_root() const { return (header().flags & kNodeRoot) != 0; }
  bool high_infinite() const { return (header().flags & kNodeHighInfinite) != 0; }
  PageId right_sibling() const { return PageId(header().right_sibling); }
  PageId leftmost_child() const { return PageId(header().leftmost_child); }
  uint64_t version() const { return header().version; }
  uint16_t prefix_bytes() const { return header().prefix_bytes; }
  uint8_t head_skip() const { return header().head_skip; }
  // Whether `key` begins with the prefix every key of this node shares: a search (Search's
  // precondition) means something only for such a key. A covering node's keys always do.
  bool SharesPrefix(std::string_view key) const {
    const size_t p = prefix_bytes();
    return p == 0 || (key.size() >= p && key.compare(0, p, low_fence().substr(0, p)) == 0);
  }
  void BumpVersion() { ++mutable_header().version; }

  // Records, not counting the two fence slots.
  uint16_t count() const { return static_cast<uint16_t>(slots_.slot_count() - kFirstRecordSlot); }
  std::string_view low_fence() const { return View(slots_.Get(kLowFenceSlot)); }
  std::string_view high_fence() const { return View(slots_.Get(kHighFenceSlot)); }

  // The tag of record i (< count()): its key head, read from the slot directory.
  uint32_t HeadAt(uint16_t i) const {
    uint32_t head;
    std::memcpy(&head, SlotEntry(static_cast<uint16_t>(kFirstRecordSlot + i)) + kSlotTagOffset,
                sizeof(head));
    return head;
  }

  // Key of record i (< count()). Valid until the node changes.
  std::string_view KeyAt(uint16_t i) const {
    return is_leaf() ? KeyOfKind<true>(i) : KeyOfKind<false>(i);
  }
  // KeyAt for a node known to be a leaf (kLeaf) or an inner node: searches test the kind once.
  template <bool kLeaf>
  std::string_view KeyOfKind(uint16_t i) const {
    SM_DASSERT(i < count());
    SM_DASSERT(is_leaf() == kLeaf);
    return KeyOfRecord<kLeaf>(SlotBytes(static_cast<uint16_t>(kFirstRecordSlot + i)));
  }
  // The key inside a record of a leaf (kLeaf) or an inner node, as the file comment lays it out.
  template <bool kLeaf>
  static std::string_view KeyOfRecord(std::string_view rec) {
    if constexpr (kLeaf) {
      const uint16_t key_bytes = LeafKeyBytes(rec.data());
      SM_DASSERT(size_t{key_bytes} + kLeafRecordOverheadBytes <= rec.size());
      // Not substr: its always-on bounds check would run at every probe of a search.
      return {rec.data() + kLeafRecordOverheadBytes, key_bytes};
    }
    SM_DASSERT(rec.size() >= kInnerRecordOverheadBytes);
    return {rec.data(), rec.size() - kInnerRecordOverheadBytes};
  }
  // Leaf: value of record i.
  std::string_view ValueAt(uint16_t i) const;
  // Leaf: value of record i and, in *external, whether it is a stub: one parse of the record
  // for a read that must tell the two apart.
  std::string_view ValueAt(uint16_t i, bool* external) const {
    SM_DASSERT(is_leaf());
    SM_DASSERT(i < count());
    std::string_view rec = SlotBytes(static_cast<uint16_t>(kFirstRecordSlot + i));
    uint16_t key_bytes;
    std::memcpy(&key_bytes, rec.data(), sizeof(key_bytes));
    *external = (key_bytes & kLeafExternalBit) != 0;
    const size_t offset = kLeafRecordOverheadBytes + (key_bytes & ~kLeafExternalBit);
    SM_DASSERT(offset <= rec.size());
    return {rec.data() + offset, rec.size() - offset};
  }
  // Leaf: whether record i's value is an external value's stub (kLeafExternalBit).
  bool ExternalAt(uint16_t i) const {
    SM_DASSERT(is_leaf());
    SM_DASSERT(i < count());
    return LeafExternal(SlotBytes(static_cast<uint16_t>(kFirstRecordSlot + i)).data());
  }
  // Leaf: value of record i, writable in place (a change of the same length; the caller bumps
  // the version).
  char* MutableValueAt(uint16_t i) const {
    std::string_view value = ValueAt(i);
    return page_ + (value.data() - page_);
  }
  // Inner: child c_i for i in [0, count()]; c_0 is the leftmost child, c_i (i > 0) belongs to
  // separator i - 1.
  PageId ChildAt(uint16_t i) const;

  // First record index with key >= key / key > key (count() if none). The key must lie within
  // the fences, low <= key <= high (so that it starts with the common prefix the heads leave
  // out): every descent and cursor search meets only such keys (btree.h, protocol 4). For
  // another key the index is unspecified but in [0, count()].
  uint16_t LowerBound(std::string_view key) const;
  uint16_t UpperBound(std::string_view key) const;
  // LowerBound, and in *found whether that record holds `key`: the search has compared it
  // already whenever it does (its head ties), so point operations need no second comparison.
  uint16_t LowerBound(std::string_view key, bool* found) const;
  // Inner: the index i of the child c_i to follow for `target` in `mode`.
  uint16_t ChildIndex(std::string_view target, SearchMode mode) const;
  // Whether the node's key range is the one a descent for `target` in `mode` looks for.
  bool Covers(std::string_view target, SearchMode mode) const;

  // Bytes free for entries (record + slot) once compacted.
  size_t FreeBytes() const { return slots_.FreeBytes(); }
  bool CanTake(size_t record_bytes) const {
    return SlottedPage::SpaceNeeded(record_bytes) <= slots_.FreeBytes();
  }

  // Mutators (exclusive latch). They do not bump the version; the caller does, once per change.
  // Insert: NoSpace if the record does not fit (node unchanged).
  // `external`: the value is a stub (kLeafExternalBit); an update sets or clears the mark.
  [[nodiscard]] Status InsertLeafRecord(uint16_t i, std::string_view key, std::string_view value,
                                        bool external = false);
  [[nodiscard]] Status UpdateLeafValue(uint16_t i, std::string_view value, bool external);
  [[nodiscard]] Status InsertInnerRecord(uint16_t i, std::string_view key, PageId child);
  // Inserts raw record bytes as record i (used to move records between nodes). A new first or
  // last record may shorten head_skip, and then every head is computed again (unless `refresh`
  // is false: see RefreshHeads).
  [[nodiscard]] Status InsertRaw(uint16_t i, std::string_view record, bool refresh = true);
  std::string_view RawRecord(uint16_t i) const {
    return View(slots_.Get(static_cast<uint16_t>(kFirstRecordSlot + i)));
  }
  // Leaf: starts loading the record a search for `key` most likely ends at, the first whose
  // head is not below the key's (a search over the directory alone; among equal heads the key
  // may lie further on), both ends of it: its key and the end of its value.
  void PrefetchRecordFor(std::string_view key) const;
  // Starts loading the fence keys' first bytes (a leaf hint's KeyPrefix reads them), which lie
  // wherever the records do: a cache miss of their own after the search's.
  void PrefetchFences() const {
    __builtin_prefetch(SlotBytes(kLowFenceSlot).data());
    __builtin_prefetch(SlotBytes(kHighFenceSlot).data());
  }
  // The bytes of slot `slot`, read straight from the slot directory as slotted_page.h lays it
  // out (A+8 + 8 * slot: u16 offset, u16 length, u32 tag): the inner loop of every search, which
  // SlottedPage::Get would slow down with an always-on bounds check and a header reload per
  // probe. The caller knows slot < slot_count.
  std::string_view SlotBytes(uint16_t slot) const {
    const char* entry = SlotEntry(slot);
    uint16_t offset;
    uint16_t length;
    std::memcpy(&offset, entry, sizeof(offset));
    std::memcpy(&length, entry + sizeof(offset), sizeof(length));
    SM_DASSERT(size_t{offset} + length <= kPageBytes);
    return {page_ + offset, length};
  }
  // Removes record i. Removing the first or last record may lengthen head_skip, and then
  // every head is computed again.
  void EraseRecord(uint16_t i, bool refresh = true);
  // Bulk changes (a split moving records) skip the per-record upkeep of head_skip
  // (InsertRaw's and EraseRecord's `refresh` false) and call this once at the end; it also
  // takes up a changed fence prefix. Heads are rewritten only if either changed.
  void RefreshHeads();
  // head_skip as the file comment defines it, for the current records and prefix.
  uint8_t ExpectedHeadSkip() const;
  // Replaces the high fence (and clears kNodeHighInfinite; with `infinite`, sets it and stores
  // an empty fence). NoSpace if it does not fit, and then nothing changed. The common prefix
  // may change: every record's head is then computed again.
  [[nodiscard]] Status SetHighFence(std::string_view high_fence, bool infinite = false);

  // The length of the prefix a node with these fences leaves out of its heads.
  static uint16_t FencePrefixBytes(std::string_view low_fence, std::string_view high_fence,
                                   bool high_infinite);

  // The free gap between the slot directory and the record heap, [*offset, *offset + *bytes):
  // bytes whose contents the format leaves unspecified, which a page image may leave out
  // (index/btree_wal.h). Compact first to make it all of FreeBytes().
  void FreeGap(uint16_t* offset, uint16_t* bytes) const;

  // O(1) bounds checks for code that meets a node it did not just change itself (log redo),
  // so that a page that does not match a log record is reported, not dereferenced out of
  // bounds. They read the area as slotted_page.h lays it out and, unlike
  // SlottedPage::CheckInvariants, do not walk the whole directory.
  //   AreaBoundsIntact: the directory ends at or below the heap, the heap lies in the page,
  //                     the fragment count fits the heap, flags are zero, both fences exist.
  //   SlotIntact:       (AreaBoundsIntact holding) slot < slot_count and its bytes lie in the
  //                     heap (an empty record at kPageBytes).
  //   RecordIntact:     slot 2 + i is intact and parses as a record of this node's kind.
  bool AreaBoundsIntact() const;
  bool SlotIntact(uint16_t slot) const;
  bool RecordIntact(uint16_t i) const;
  // The invariants of the file comment that one node holds on its own - 1 (but tree_root), 2,
  // 6 and 7 - walking every record, with the slotted area's bounds (its mutators check the
  // rest of slotted_page.h): for SM_PARANOID checks after a change, under the latch
  // (BTree::Verify checks them with the ones that relate nodes, 3-5, and says what failed).
  bool CheckInvariants() const;

 private:
  static std::string_view View(std::span<const char> bytes) { return {bytes.data(), bytes.size()}; }

  // The directory entry of `slot` (slotted_page.h: u16 offset, u16 length, u32 tag).
  static constexpr size_t kSlotTagOffset = 4;
  const char* SlotEntry(uint16_t slot) const {
    return page_ + kNodeAreaOffset + SlottedPage::kAreaHeaderBytes +
           size_t{slot} * SlottedPage::kSlotBytes;
  }
  // Stores the head of every record again (after prefix_bytes or head_skip changed).
  void RewriteHeads();
  // Sets head_skip for the current records (after the first or last changed).
  void RefreshHeadSkip();
  // Where heads start: the prefix and the bytes skipped after it.
  size_t HeadOffset() const { return size_t{prefix_bytes()} + head_skip(); }

  // First record index whose key is >= key (kUpper: > key), count() if none; *equal: whether
  // some record compared equal to the key (for !kUpper: the one at the index returned).
  // kHeadsOnly (with !kUpper): the first whose head is >= the key's, by the directory alone:
  // no record is read (*equal stays false) and nothing is prefetched.
  template <bool kLeaf, bool kUpper, bool kHeadsOnly = false>
  uint16_t Search(std::string_view key, bool* equal) const;

  char* page_;
  SlottedPage slots_;
};

// The first n bytes of p (0 < n < 8) as an integer that orders as they do under memcmp, among
// strings of the same n: the first and the last 4 bytes (n >= 4; they overlap for n < 8, and the
// overlap is equal whenever the first 4 tie) or the first, middle and last byte (n < 4), each
// read big-endian. A fixed number of loads instead of a loop over the bytes: TPC-C's keys are
// 3 to 8 bytes long.
[[gnu::always_inline]] inline uint64_t ShortKeyWord(const char* p, size_t n) {
  SM_DASSERT(n > 0);
  SM_DASSERT(n < 8);
  if (n >= 4) {
    uint32_t first;
    uint32_t last;
    std::memcpy(&first, p, sizeof(first));
    std::memcpy(&last, p + n - 4, sizeof(last));
    return (uint64_t{__builtin_bswap32(first)} << 32) | __builtin_bswap32(last);
  }
  return (uint64_t{static_cast<uint8_t>(p[0])} << 16) |
         (uint64_t{static_cast<uint8_t>(p[n / 2])} << 8) | static_cast<uint8_t>(p[n - 1]);
}

// memcmp order (a proper prefix first), as std::string_view::compare, but with the first bytes
// compared as big-endian words inline: most keys (encoded integers) differ there, and a call to
// memcmp costs more than the whole comparison of two 8-byte keys. Always inlined: the call
// (register saves, a second load of the sizes) cost as much as the comparison of a TPC-C key.
[[gnu::always_inline]] inline int CompareKeys(std::string_view a, std::string_view b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  if (n > 32) {
    int c = std::memcmp(a.data(), b.data(), n);
    if (c != 0) return c;
  } else {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t x;
      uint64_t y;
      std::memcpy(&x, a.data() + i, 8);
      std::memcpy(&y, b.data() + i, 8);
      if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    if (i < n) {
      uint64_t x = ShortKeyWord(a.data() + i, n - i);
      uint64_t y = ShortKeyWord(b.data() + i, n - i);
      if (x != y) return x < y ? -1 : 1;
    }
  }
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

// The head of `key` in a node whose keys share a prefix of prefix_bytes: key bytes
// [prefix_bytes, prefix_bytes + 4) as a big-endian integer, missing bytes zero. Order-preserving
// for keys that start with the prefix: head(a) < head(b) implies a < b (see the file comment).
inline uint32_t KeyHead(std::string_view key, size_t prefix_bytes) {
  if (key.size() >= prefix_bytes + 4) {
    uint32_t word;
    std::memcpy(&word, key.data() + prefix_bytes, sizeof(word));
    return __builtin_bswap32(word);
  }
  // Fewer than 4 bytes after the prefix (short keys such as TPC-C's warehouse and district
  // keys, and separators cut short by suffix truncation): place the ones there are.
  uint32_t head = 0;
  size_t present = key.size() > prefix_bytes ? key.size() - prefix_bytes : 0;
  for (size_t i = 0; i < present; ++i) {
    head |= uint32_t{static_cast<uint8_t>(key[prefix_bytes + i])} << (24 - 8 * i);
  }
  return head;
}

// Record sizes as stored in the slotted area.
inline constexpr size_t LeafRecordBytes(size_t key_bytes, size_t value_bytes) {
  return kLeafRecordOverheadBytes + key_bytes + value_bytes;
}
inline constexpr size_t InnerRecordBytes(size_t key_bytes) {
  return key_bytes + kInnerRecordOverheadBytes;
}

// The number of leading bytes a and b have in common.
size_t CommonPrefixBytes(std::string_view a, std::string_view b);

// The shortest key s with left < s <= right (left < right): a prefix of right. Used as the
// separator of a leaf split, so inner nodes hold short keys (suffix truncation).
std::string ShortestSeparator(std::string_view left, std::string_view right);

// Page type for a node of `level`.
inline PageType NodePageType(uint16_t level) {
  return level == 0 ? PageType::kBtreeLeaf : PageType::kBtreeInner;
}

}  // namespace sm::index
