// SlottedPage: variable-length records in one area of a page buffer, addressed by slot index.
//
// Owns: the byte format of the record area of B-tree leaf and inner pages (and any other page
// type that stores variable-length records), and the space management inside it: allocation
// from the free gap, fragmentation accounting, and compaction. It does not own the page buffer,
// the 48-byte common page header (sm/page/page.h) or the page type's own fixed header, which
// sit before the area; it never reads or writes below area_offset.
//
// Slots are kept in the caller's order (a B-tree keeps them in key order): Insert at index i
// shifts slots i.. up by one, Erase shifts them down. A record's bytes may move (Update,
// Compact, an Insert that compacts), so a span from Get is valid only until the next mutation.
//
// Byte format. The area is [A, kPageBytes) with A = area_offset, 48 <= A <= kMaxAreaOffset.
// Every integer is a little-endian uint16 (static_asserted host order, see slotted_page.cc);
// "page offset" means an offset from the start of the page buffer, not from A.
//
//   A+0  u16 slot_count        number of slots (records) in the directory
//   A+2  u16 heap_begin        page offset of the lowest byte of the record heap;
//                              kPageBytes when the heap is empty
//   A+4  u16 fragmented_bytes  bytes of the heap not covered by any live record (holes left
//                              by Erase, shrinking Update and moved records)
//   A+6  u16 flags             zero; reserved for the page type's use of later format versions
//   A+8  slot directory        slot_count entries of kSlotBytes = 8, in slot order:
//          +0 u16 offset       page offset of the record's first byte (kPageBytes if empty)
//          +2 u16 length       record length in bytes, <= kMaxRecordBytes
//          +4 u32 tag          the page type's own per-slot value (B-tree nodes: the key
//                              head, index/btree_node.h), kept next to the offsets so that a
//                              search can read it without touching the record; it moves with
//                              its slot and is not interpreted here
//   dir_end = A + 8 + 8 * slot_count
//   [dir_end, heap_begin)      the free gap: contiguous, grows the directory up and the heap
//                              down. Its contents are unspecified.
//   [heap_begin, kPageBytes)   the record heap: live records and holes, in no particular
//                              order (Compact packs them against kPageBytes).
//
// Invariants (checked by CheckInvariants, which never reads outside the area):
//   1. dir_end <= heap_begin <= kPageBytes.
//   2. A non-empty record lies inside the heap: heap_begin <= offset, offset + length <=
//      kPageBytes, length <= kMaxRecordBytes. An empty record has offset == kPageBytes.
//   3. Live records do not overlap.
//   4. Exact accounting: fragmented_bytes == (kPageBytes - heap_begin) - sum of lengths, so
//      area = 8 + 4 * slot_count + sum of lengths + gap + fragmented_bytes, and
//      FreeBytes() = gap + fragmented_bytes is what a Compact would leave contiguous.
//   5. flags == 0.
//   6. A failed Insert or Update (NoSpace, InvalidArgument) leaves the page byte-identical.
//
// Thread/fiber safety: a SlottedPage is a view over a page buffer it does not own and takes no
// latch. Readers need the page's frame latch shared, mutators exclusive; the caller holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "sm/common/assert.h"
#include "sm/common/status.h"
#include "sm/page/page.h"

namespace sm {

class SlottedPage {
 public:
  static constexpr uint16_t kAreaHeaderBytes = 8;
  static constexpr uint16_t kSlotBytes = 8;
  // The largest area_offset: the 48-byte common header plus up to 200 bytes of page-type
  // header.
  static constexpr uint16_t kMaxAreaOffset = 248;
  // The largest record (1976 bytes): a quarter of the smallest area less a slot, rounded down
  // to 8. Four records of this size fit in any area, so a B-tree page that overflows can
  // always be split into two pages that each take the new record.
  static constexpr size_t kMaxRecordBytes =
      ((kPageBytes - kMaxAreaOffset - kAreaHeaderBytes) / 4 - kSlotBytes) / 8 * 8;

  // Space an Insert of a record of `record_bytes` consumes from FreeBytes().
  static constexpr size_t SpaceNeeded(size_t record_bytes) { return record_bytes + kSlotBytes; }

  // A view over `page` (kPageBytes long) whose area starts at area_offset. Does not read or
  // write the page: call Init on a new page, or use it on a page formatted before.
  // (The read path - this, slot_count and Get - is inline: B-tree binary search calls it per
  // probe.)
  SlottedPage(char* page, uint16_t area_offset) : page_(page), area_offset_(area_offset) {
    SM_ASSERT(page != nullptr);
    SM_ASSERT(area_offset >= kPageHeaderBytes);
    SM_ASSERT(area_offset <= kMaxAreaOffset);
  }

  // Formats the area as empty: zero slots, all of it free. Zeroes the area so that freshly
  // formatted page images are deterministic.
  void Init();

  uint16_t slot_count() const { return LoadHeader().slot_count; }
  uint16_t area_offset() const { return area_offset_; }
  // Bytes free for records and their slots once compacted: gap + fragmented bytes.
  size_t FreeBytes() const;
  // Bytes free without compaction: the gap between the directory and the heap.
  size_t ContiguousFreeBytes() const;
  size_t FragmentedBytes() const;
  bool CanInsert(size_t record_bytes) const {
    return record_bytes <= kMaxRecordBytes && SpaceNeeded(record_bytes) <= FreeBytes();
  }

  // Inserts `record` as slot slot_index (0 <= slot_index <= slot_count), shifting the later
  // slots up. Compacts if the gap is too small but the free bytes suffice. InvalidArgument if
  // the record is longer than kMaxRecordBytes; NoSpace if it does not fit even after
  // compaction; in both cases the page is unchanged. `record` may point into this page.
  // `tag` is stored in the new slot (see the byte format).
  [[nodiscard]] Status Insert(uint16_t slot_index, std::span<const char> record,
                              uint32_t tag = 0);

  // The record of slot slot_index (< slot_count), valid until the next mutation.
  std::span<const char> Get(uint16_t slot_index) const {
    SM_ASSERT(slot_index < slot_count());
    Slot slot = LoadSlot(slot_index);
    SM_DASSERT(size_t{slot.offset} + slot.length <= kPageBytes);
    return {page_ + slot.offset, slot.length};
  }

  // The tag of slot slot_index (< slot_count), and its replacement.
  uint32_t Tag(uint16_t slot_index) const {
    SM_ASSERT(slot_index < slot_count());
    return LoadSlot(slot_index).tag;
  }
  void SetTag(uint16_t slot_index, uint32_t tag);

  // Replaces the record of slot slot_index (its tag is kept). In place if the new record is not longer; else
  // moved into the gap, compacting first if needed. InvalidArgument / NoSpace as Insert, with
  // the page unchanged; the old record's bytes count as free for the NoSpace decision.
  [[nodiscard]] Status Update(uint16_t slot_index, std::span<const char> record);

  // Removes slot slot_index (< slot_count), shifting the later slots down.
  void Erase(uint16_t slot_index);

  // Packs the live records against the end of the page, so that FreeBytes() ==
  // ContiguousFreeBytes(). Slot indexes and record contents are unchanged.
  void Compact();

  // Invariants 1-5 of the file comment. Safe on arbitrary bytes (e.g. a page read from disk).
  bool CheckInvariants() const;
  // Invariants 1, 2 and 5 alone, in one pass over the slots (CheckInvariants also sorts them):
  // every record a reader can reach lies inside the page. Safe on arbitrary bytes.
  bool CheckBounds() const;

 private:
  // The on-page layouts of the byte format above, stored in host order (slotted_page.cc
  // static_asserts a little-endian host) and accessed with memcpy, as the area need not be
  // aligned.
  struct AreaHeader {
    uint16_t slot_count;
    uint16_t heap_begin;
    uint16_t fragmented_bytes;
    uint16_t flags;
  };
  static_assert(sizeof(AreaHeader) == kAreaHeaderBytes);
  static_assert(offsetof(AreaHeader, slot_count) == 0);
  static_assert(offsetof(AreaHeader, heap_begin) == 2);
  static_assert(offsetof(AreaHeader, fragmented_bytes) == 4);
  static_assert(offsetof(AreaHeader, flags) == 6);

  struct Slot {
    uint16_t offset;
    uint16_t length;
    uint32_t tag;
  };
  static_assert(sizeof(Slot) == kSlotBytes);
  static_assert(offsetof(Slot, offset) == 0);
  static_assert(offsetof(Slot, length) == 2);
  static_assert(offsetof(Slot, tag) == 4);

  AreaHeader LoadHeader() const {
    AreaHeader header;
    std::memcpy(&header, page_ + area_offset_, sizeof(header));
    return header;
  }
  void StoreHeader(const AreaHeader& header);
  Slot LoadSlot(uint16_t slot_index) const {
    Slot slot;
    std::memcpy(&slot, page_ + DirEnd(slot_index), sizeof(slot));
    return slot;
  }
  void StoreSlot(uint16_t slot_index, const Slot& slot);
  size_t DirEnd(uint16_t slot_count) const {
    return size_t{area_offset_} + kAreaHeaderBytes + size_t{slot_count} * kSlotBytes;
  }
  // Carves `length` bytes off the bottom of the gap; the caller checked they are free.
  uint16_t Allocate(AreaHeader& header, uint16_t length);
  // Returns a record's bytes to the free space (the gap if it is the lowest, else fragments).
  static void Release(AreaHeader& header, const Slot& slot);
  // If `record` points into this page, copies it to `scratch` and returns the copy, so that
  // moving records cannot overwrite the source.
  std::span<const char> Unalias(std::span<const char> record, char* scratch) const;
  // Fills `order` with the indexes of the non-empty slots, highest offset first; returns how
  // many. `order` has room for every slot the area can hold.
  uint16_t SlotsByOffsetDescending(uint16_t slot_count, uint16_t* order) const;

  char* page_;
  uint16_t area_offset_;
};

}  // namespace sm
