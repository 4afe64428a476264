// Page: the on-disk format every page type shares (the 48-byte header), sealing before a page
// leaves memory and verification right after it comes back.
//
// Owns: the page size, the page type and format-version registry, and the header layout.
//
// Byte format of the header (offset 0 of every page, little-endian):
//   +0   u32  checksum        CRC32C (sm/common/crc32c.h) of bytes [4, kPageBytes)
//   +4   u16  format_version  kPageFormatVersion when written
//   +6   u16  type            PageType
//   +8   u64  page_id         the page's own id: a page written to the wrong place is caught
//   +16  u64  lsn             page LSN (ARIES): the last log record applied to the page
//   +24  u64  reserved[3]     zero
//   +48       the page type's own bytes
//
// Invariants:
//   1. A page on disk was sealed (SealPage) just before it was written, so its checksum covers
//      every byte after the checksum field, header included.
//   2. A page accepted by VerifyPage has a matching checksum, the expected page id, a known
//      type and the format version this code writes. Anything else is Corruption
//      naming the page; nothing here asserts on page contents, so a bad disk never crashes
//      the process.
//   3. An all-zero page (never written: the file grew but the page did not reach the disk) is
//      rejected like any other bad page, with its own message; IsZeroPage tells it apart.
//
// Thread/fiber safety: functions on distinct pages are independent; the caller latches a
// shared page (readers may verify concurrently, sealing writes the checksum field).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "sm/common/ids.h"
#include "sm/common/status.h"

namespace sm {

inline constexpr size_t kPageBytes = 8192;

enum class PageType : uint16_t {
  kFree = 0,
  kVolumeHeader = 1,
  kAllocMap = 2,
  kBtreeLeaf = 3,
  kBtreeInner = 4,
  kCatalog = 5,
  kOverflow = 6,
};
inline constexpr uint16_t kMaxPageType = 6;

// Version 2: slotted-page slots of 8 bytes with a per-slot tag (B-tree key heads). Pages of
// another version are rejected (VerifyPage): there is no conversion.
inline constexpr uint16_t kPageFormatVersion = 2;

struct PageHeader {     // 48 bytes, little-endian
  uint32_t checksum;    // CRC32C of bytes [4, kPageBytes)
  uint16_t format_version;
  uint16_t type;        // PageType
  uint64_t page_id;
  uint64_t lsn;         // page LSN (ARIES)
  uint64_t reserved[3]; // zero for now
};
static_assert(sizeof(PageHeader) == 48);
static_assert(offsetof(PageHeader, format_version) == 4);
static_assert(offsetof(PageHeader, type) == 6);
static_assert(offsetof(PageHeader, page_id) == 8);
static_assert(offsetof(PageHeader, lsn) == 16);
static_assert(offsetof(PageHeader, reserved) == 24);
static_assert(std::endian::native == std::endian::little, "the on-disk format is little-endian");
inline constexpr size_t kPageHeaderBytes = 48;
static_assert(kPageHeaderBytes == sizeof(PageHeader));

// The header of a page buffer (kPageBytes, at least 8-byte aligned).
inline PageHeader* HeaderOf(void* page) { return static_cast<PageHeader*>(page); }
inline const PageHeader* HeaderOf(const void* page) {
  return static_cast<const PageHeader*>(page);
}

// Zeroes the page and writes a fresh header: id, type, this format version, LSN 0.
void InitPage(void* page, PageId id, PageType type);

// Computes and stores the checksum; call right before the page leaves memory.
void SealPage(void* page);

// Checks a page right after it was read: checksum, page id, type, format version, and the
// structure check registered for its type, if any. Corruption with "page N: ..." otherwise
// (see invariants 2 and 3).
Status VerifyPage(const void* page, PageId expected_id);

// A check of the layout of pages of one type (lengths and offsets that a reader follows),
// registered by the layer that owns the format. A matching checksum says only that some
// writer sealed the bytes; a damaged write, or a crafted file, may still hold offsets that
// lead outside the page, and this is where a read stops them. It must be safe on any bytes.
using PageStructureCheck = bool (*)(const void* page);
void RegisterPageStructureCheck(PageType type, PageStructureCheck check);

// The checksum SealPage would store.
uint32_t ComputePageChecksum(const void* page);

// True if all kPageBytes bytes are zero.
bool IsZeroPage(const void* page);

inline Lsn PageLsn(const void* page) { return Lsn(HeaderOf(page)->lsn); }
inline void SetPageLsn(void* page, Lsn lsn) { HeaderOf(page)->lsn = lsn.value(); }
inline PageType PageTypeOf(const void* page) {
  return static_cast<PageType>(HeaderOf(page)->type);
}
inline PageId PageIdOf(const void* page) { return PageId(HeaderOf(page)->page_id); }

const char* PageTypeName(PageType type);

}  // namespace sm
