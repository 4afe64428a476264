// AllocMap: the in-memory page-allocation bitmap of a Volume and the byte format of the
// allocation-map pages that persist it.
//
// Owns: one bit per page of the volume (1 = allocated), the allocated-page count, the
// lowest-free search hint, the per-range dirty flags, and the map-page geometry.
//
// Geometry. The volume is cut into ranges of kPagesPerRange pages; range r covers pages
// [r * kPagesPerRange, (r + 1) * kPagesPerRange) and its bits live in either of two map slots
// (ping-pong copies, written alternately so a torn map write always leaves the previous copy
// intact): pages 1 and 2 for range 0 (page 0 is the volume header), pages r * kPagesPerRange
// and r * kPagesPerRange + 1 for r >= 1. Metadata pages (the header and every map slot) are
// always allocated and can never be freed.
//
// Byte format of a map page (PageType::kAllocMap, after the 48-byte page header):
//   +48  u64  creation_id   the volume's; a map page of another volume is not ours
//   +56  u64  first_page    r * kPagesPerRange
//   +64  u64  sequence      higher = newer; the two slots of a range never hold the same one
//   +72  kPagesPerRange bits, little-endian words, bit i of word w = page first_page + 64w + i
//
// Invariants (CheckInvariants):
//   1. A bit is set only for pages < page_count, and every metadata page < page_count is set.
//   2. allocated() equals the number of set bits.
//   3. No page below hint_word_ * 64 is free (the hint never skips a free page).
//   4. page_count always covers both map slots of its last range (RoundUpForMapSlots).
//
// Thread/fiber safety: none; the Volume serializes access (see volume.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sm/common/status.h"
#include "sm/page/page.h"

namespace sm::space {

inline constexpr size_t kMapBodyHeaderBytes = 24;
inline constexpr uint64_t kPagesPerRange = (kPageBytes - kPageHeaderBytes - kMapBodyHeaderBytes) * 8;
inline constexpr size_t kWordsPerRange = kPagesPerRange / 64;
static_assert(kPagesPerRange % 64 == 0, "ranges are whole bitmap words");
static_assert(kPageHeaderBytes + kMapBodyHeaderBytes + kWordsPerRange * 8 <= kPageBytes);

// The page of map slot `slot` (0 or 1) of range `range`.
inline uint64_t MapSlotPage(uint64_t range, int slot) {
  return (range == 0 ? 1 : range * kPagesPerRange) + static_cast<uint64_t>(slot);
}
// The smallest volume that holds the header and range 0's map slots.
inline constexpr uint64_t kMinVolumePages = 3;

class AllocMap {
 public:
  AllocMap() = default;

  // Extends the map to page_count pages (which RoundUpForMapSlots returned). New ranges get
  // their map slots allocated and are marked dirty; growing never clears a bit.
  void Grow(uint64_t page_count);
  // The smallest count >= page_count that holds both map slots of the range of its last page.
  static uint64_t RoundUpForMapSlots(uint64_t page_count);
  static bool IsMetadataPage(uint64_t page);

  uint64_t page_count() const { return page_count_; }
  uint64_t allocated() const { return allocated_; }
  uint64_t range_count() const { return (page_count_ + kPagesPerRange - 1) / kPagesPerRange; }
  bool IsAllocated(uint64_t page) const {
    return page < page_count_ && (words_[page / 64] >> (page % 64) & 1) != 0;
  }

  // Allocates the lowest free page; false if every page is allocated.
  bool AllocateLowest(uint64_t* page);
  // Sets or clears one bit and marks its range dirty. The bit must change.
  void Set(uint64_t page);
  void Clear(uint64_t page);

  // The ranges changed since the last TakeDirty, ascending; clears the flags.
  std::vector<uint64_t> TakeDirty();
  void MarkDirty(uint64_t range) { dirty_[range] = true; }

  // Writes range's map page into `page` (kPageBytes), as slot `slot`; not sealed.
  void Serialize(uint64_t range, int slot, uint64_t creation_id, uint64_t sequence,
                 void* page) const;
  // Checks that `page`, read from map slot `slot` of `range`, is a valid map page of this
  // volume (VerifyPage, type, creation id, range) and returns its sequence.
  static Status Validate(const void* page, uint64_t range, int slot, uint64_t creation_id,
                         uint64_t* sequence);
  // Loads range's bits from a page that passed Validate. Bits at or past page_count are
  // ignored (they belong to pages the durable header does not cover yet); metadata bits are
  // forced on. Leaves the range clean.
  void Load(uint64_t range, const void* page);

  bool CheckInvariants() const;

 private:
  void RecountAndRehint();

  std::vector<uint64_t> words_;  // bit i of words_[w]: page 64w + i
  std::vector<bool> dirty_;      // per range
  uint64_t page_count_ = 0;
  uint64_t allocated_ = 0;
  size_t hint_word_ = 0;         // invariant 3
};

}  // namespace sm::space
