// SlottedPage: allocation, compaction and the invariant checker (format in slotted_page.h).
#include "sm/page/slotted_page.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

#include "sm/common/assert.h"
#include "sm/page/page.h"

namespace sm {

namespace {
// Every slot the smallest area can hold (all records empty): bounds the on-stack sort buffer.
constexpr size_t kMaxSlots =
    (kPageBytes - kPageHeaderBytes - SlottedPage::kAreaHeaderBytes) / SlottedPage::kSlotBytes;

static_assert(kPageBytes <= UINT16_MAX, "page offsets are stored as u16");
static_assert(SlottedPage::kMaxAreaOffset >= kPageHeaderBytes);
static_assert(4 * SlottedPage::SpaceNeeded(SlottedPage::kMaxRecordBytes) +
                      SlottedPage::kAreaHeaderBytes <=
                  kPageBytes - SlottedPage::kMaxAreaOffset,
              "four maximal records must fit in the smallest area (B-tree splits rely on it)");
static_assert(SlottedPage::kMaxRecordBytes == 1976, "a format change: bump kPageFormatVersion");
static_assert(SlottedPage::kSlotBytes == 8, "a format change: bump kPageFormatVersion");
}  // namespace

// AreaHeader and Slot are stored in host order; the format says little-endian.
static_assert(std::endian::native == std::endian::little);

// ---- Raw access (memcpy: the area and its fields need not be aligned) ----

void SlottedPage::StoreHeader(const AreaHeader& header) {
  std::memcpy(page_ + area_offset_, &header, sizeof(header));
}


void SlottedPage::StoreSlot(uint16_t slot_index, const Slot& slot) {
  std::memcpy(page_ + DirEnd(slot_index), &slot, sizeof(slot));
}

void SlottedPage::SetTag(uint16_t slot_index, uint32_t tag) {
  SM_ASSERT(slot_index < slot_count());
  Slot slot = LoadSlot(slot_index);
  slot.tag = tag;
  StoreSlot(slot_index, slot);
}

// ---- Queries ----

void SlottedPage::Init() {
  std::memset(page_ + area_offset_, 0, kPageBytes - area_offset_);
  StoreHeader(AreaHeader{0, static_cast<uint16_t>(kPageBytes), 0, 0});
  SM_DASSERT(CheckInvariants());
}

size_t SlottedPage::ContiguousFreeBytes() const {
  AreaHeader header = LoadHeader();
  return header.heap_begin - DirEnd(header.slot_count);
}

size_t SlottedPage::FragmentedBytes() const { return LoadHeader().fragmented_bytes; }

size_t SlottedPage::FreeBytes() const {
  AreaHeader header = LoadHeader();
  return header.heap_begin - DirEnd(header.slot_count) + header.fragmented_bytes;
}

// ---- Space management ----

uint16_t SlottedPage::Allocate(AreaHeader& header, uint16_t length) {
  if (length == 0) return static_cast<uint16_t>(kPageBytes);  // invariant 2: empty records
  SM_DASSERT(header.heap_begin >= DirEnd(header.slot_count) + length);
  header.heap_begin = static_cast<uint16_t>(header.heap_begin - length);
  return header.heap_begin;
}

void SlottedPage::Release(AreaHeader& header, const Slot& slot) {
  if (slot.length == 0) return;
  if (slot.offset == header.heap_begin) {
    // The lowest record: its bytes join the gap directly, no compaction needed to reuse them.
    header.heap_begin = static_cast<uint16_t>(header.heap_begin + slot.length);
  } else {
    header.fragmented_bytes = static_cast<uint16_t>(header.fragmented_bytes + slot.length);
  }
}

std::span<const char> SlottedPage::Unalias(std::span<const char> record, char* scratch) const {
  // Compared as integers: relational comparison of unrelated pointers is unspecified.
  auto begin = reinterpret_cast<uintptr_t>(record.data());
  auto page = reinterpret_cast<uintptr_t>(page_);
  bool disjoint = begin + record.size() <= page || begin >= page + kPageBytes;
  if (disjoint || record.empty()) return record;
  SM_DASSERT(record.size() <= kMaxRecordBytes);
  std::memcpy(scratch, record.data(), record.size());
  return {scratch, record.size()};
}

uint16_t SlottedPage::SlotsByOffsetDescending(uint16_t slot_count, uint16_t* order) const {
  uint16_t n = 0;
  for (uint16_t i = 0; i < slot_count; ++i) {
    if (LoadSlot(i).length != 0) order[n++] = i;
  }
  std::sort(order, order + n,
            [this](uint16_t a, uint16_t b) { return LoadSlot(a).offset > LoadSlot(b).offset; });
  return n;
}

void SlottedPage::Compact() {
  AreaHeader header = LoadHeader();
  // Slide records up one by one, highest first, so each moves to an address at or above its
  // own and memmove never overwrites a record not yet moved. Done in place rather than through
  // a scratch page: fiber stacks are small, and an 8 KiB copy per compaction is wasted work.
  uint16_t order[kMaxSlots];
  uint16_t n = SlotsByOffsetDescending(header.slot_count, order);
  size_t top = kPageBytes;
  for (uint16_t k = 0; k < n; ++k) {
    Slot slot = LoadSlot(order[k]);
    top -= slot.length;
    SM_DASSERT(top >= slot.offset);
    std::memmove(page_ + top, page_ + slot.offset, slot.length);
    slot.offset = static_cast<uint16_t>(top);
    StoreSlot(order[k], slot);
  }
  header.heap_begin = static_cast<uint16_t>(top);
  header.fragmented_bytes = 0;
  StoreHeader(header);
  SM_DASSERT(CheckInvariants());
}

// ---- Mutations ----

Status SlottedPage::Insert(uint16_t slot_index, std::span<const char> record, uint32_t tag) {
  AreaHeader header = LoadHeader();
  SM_ASSERT(slot_index <= header.slot_count);
  if (record.size() > kMaxRecordBytes) {
    return Status::InvalidArgument("record longer than SlottedPage::kMaxRecordBytes");
  }
  if (SpaceNeeded(record.size()) > FreeBytes()) return Status::NoSpace("slotted page full");

  char scratch[kMaxRecordBytes];
  record = Unalias(record, scratch);
  if (SpaceNeeded(record.size()) > ContiguousFreeBytes()) {
    Compact();
    header = LoadHeader();
  }
  auto length = static_cast<uint16_t>(record.size());
  uint16_t offset = Allocate(header, length);
  // An empty span may have a null data(), which memcpy must not see even for zero bytes.
  if (length > 0) std::memcpy(page_ + offset, record.data(), length);
  // Open the directory entry: slots slot_index.. move up by one (into the gap, checked above).
  std::memmove(page_ + DirEnd(slot_index + 1), page_ + DirEnd(slot_index),
               static_cast<size_t>(header.slot_count - slot_index) * kSlotBytes);
  StoreSlot(slot_index, Slot{offset, length, tag});
  ++header.slot_count;
  StoreHeader(header);
  SM_PARANOID(CheckInvariants());
  return Status::OK();
}

Status SlottedPage::Update(uint16_t slot_index, std::span<const char> record) {
  AreaHeader header = LoadHeader();
  SM_ASSERT(slot_index < header.slot_count);
  if (record.size() > kMaxRecordBytes) {
    return Status::InvalidArgument("record longer than SlottedPage::kMaxRecordBytes");
  }
  Slot slot = LoadSlot(slot_index);
  auto length = static_cast<uint16_t>(record.size());
  if (length <= slot.length && length > 0) {
    // In place; the tail of the old record becomes a hole. memmove: `record` may overlap it.
    std::memmove(page_ + slot.offset, record.data(), length);
    header.fragmented_bytes = static_cast<uint16_t>(header.fragmented_bytes + slot.length - length);
    StoreSlot(slot_index, Slot{slot.offset, length, slot.tag});
    StoreHeader(header);
    SM_PARANOID(CheckInvariants());
    return Status::OK();
  }
  if (length > FreeBytes() + slot.length) return Status::NoSpace("slotted page full");

  char scratch[kMaxRecordBytes];
  record = Unalias(record, scratch);
  // Free the old bytes first, so that a compaction can reclaim them for the new record.
  Release(header, slot);
  StoreSlot(slot_index, Slot{static_cast<uint16_t>(kPageBytes), 0, slot.tag});
  StoreHeader(header);
  if (length > ContiguousFreeBytes()) {
    Compact();
    header = LoadHeader();
  }
  uint16_t offset = Allocate(header, length);
  if (length > 0) std::memcpy(page_ + offset, record.data(), length);
  StoreSlot(slot_index, Slot{offset, length, slot.tag});
  StoreHeader(header);
  SM_PARANOID(CheckInvariants());
  return Status::OK();
}

void SlottedPage::Erase(uint16_t slot_index) {
  AreaHeader header = LoadHeader();
  SM_ASSERT(slot_index < header.slot_count);
  Release(header, LoadSlot(slot_index));
  std::memmove(page_ + DirEnd(slot_index), page_ + DirEnd(slot_index + 1),
               static_cast<size_t>(header.slot_count - slot_index - 1) * kSlotBytes);
  --header.slot_count;
  if (header.slot_count == 0) {
    // Nothing is live: the whole heap, holes included, becomes gap again.
    header.heap_begin = static_cast<uint16_t>(kPageBytes);
    header.fragmented_bytes = 0;
  }
  StoreHeader(header);
  SM_PARANOID(CheckInvariants());
}

// ---- Invariants ----

bool SlottedPage::CheckBounds() const {
  AreaHeader header = LoadHeader();
  // 1 and 5; bounding dir_end first keeps every slot read inside the area.
  if (header.flags != 0) return false;
  if (DirEnd(header.slot_count) > header.heap_begin) return false;
  if (header.heap_begin > kPageBytes) return false;
  // 2
  for (uint16_t i = 0; i < header.slot_count; ++i) {
    Slot slot = LoadSlot(i);
    if (slot.length > kMaxRecordBytes) return false;
    if (slot.length == 0) {
      if (slot.offset != kPageBytes) return false;
      continue;
    }
    if (slot.offset < header.heap_begin) return false;
    if (size_t{slot.offset} + slot.length > kPageBytes) return false;
  }
  return true;
}

bool SlottedPage::CheckInvariants() const {
  if (!CheckBounds()) return false;
  AreaHeader header = LoadHeader();
  size_t live_bytes = 0;
  for (uint16_t i = 0; i < header.slot_count; ++i) live_bytes += LoadSlot(i).length;
  // 3: adjacent in offset order, each record must end at or below the start of the next
  // higher one.
  uint16_t order[kMaxSlots];
  uint16_t n = SlotsByOffsetDescending(header.slot_count, order);
  for (uint16_t k = 1; k < n; ++k) {
    Slot higher = LoadSlot(order[k - 1]);
    Slot lower = LoadSlot(order[k]);
    if (size_t{lower.offset} + lower.length > higher.offset) return false;
  }
  // 4
  return header.fragmented_bytes == (kPageBytes - header.heap_begin) - live_bytes;
}

}  // namespace sm
