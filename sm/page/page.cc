// Page header: initialization, sealing and verification (format in page.h).
#include "sm/page/page.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "sm/common/assert.h"
#include "sm/common/crc32c.h"

namespace sm {
namespace {

constexpr size_t kChecksumBytes = sizeof(PageHeader::checksum);

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string PagePrefix(PageId id) { return "page " + std::to_string(id.value()) + ": "; }

}  // namespace

void InitPage(void* page, PageId id, PageType type) {
  std::memset(page, 0, kPageBytes);
  PageHeader* header = HeaderOf(page);
  header->format_version = kPageFormatVersion;
  header->type = static_cast<uint16_t>(type);
  header->page_id = id.value();
}

uint32_t ComputePageChecksum(const void* page) {
  return Crc32c(static_cast<const char*>(page) + kChecksumBytes, kPageBytes - kChecksumBytes);
}

void SealPage(void* page) { HeaderOf(page)->checksum = ComputePageChecksum(page); }

bool IsZeroPage(const void* page) {
  const auto* bytes = static_cast<const unsigned char*>(page);
  // A zero first byte and every byte equal to its successor: one pass, no second buffer.
  return bytes[0] == 0 && std::memcmp(bytes, bytes + 1, kPageBytes - 1) == 0;
}

namespace {

std::atomic<PageStructureCheck> g_structure_checks[kMaxPageType + 1] = {};

}  // namespace

void RegisterPageStructureCheck(PageType type, PageStructureCheck check) {
  SM_ASSERT(static_cast<uint16_t>(type) <= kMaxPageType);
  g_structure_checks[static_cast<uint16_t>(type)].store(check, std::memory_order_release);
}

Status VerifyPage(const void* page, PageId expected_id) {
  const PageHeader* header = HeaderOf(page);
  uint32_t computed = ComputePageChecksum(page);
  if (header->checksum != computed) {
    if (IsZeroPage(page)) {
      return Status::Corruption(PagePrefix(expected_id) + "never written (all zero bytes)");
    }
    return Status::Corruption(PagePrefix(expected_id) + "checksum mismatch (stored " +
                              Hex(header->checksum) + ", computed " + Hex(computed) + ")");
  }
  // The checksum matches, so these fields are what some writer sealed: a wrong one means the
  // page was written to the wrong place or in another format, not that bits flipped.
  if (header->page_id != expected_id.value()) {
    return Status::Corruption(PagePrefix(expected_id) + "header names page " +
                              std::to_string(header->page_id) + " (misdirected write)");
  }
  if (header->format_version != kPageFormatVersion) {
    return Status::Corruption(PagePrefix(expected_id) + "page format version " +
                              std::to_string(header->format_version) +
                              " is not supported (this build reads and writes only " +
                              std::to_string(kPageFormatVersion) + "; recreate the database)");
  }
  if (header->type > kMaxPageType) {
    return Status::Corruption(PagePrefix(expected_id) + "unknown page type " +
                              std::to_string(header->type));
  }
  PageStructureCheck check = g_structure_checks[header->type].load(std::memory_order_acquire);
  if (check != nullptr && !check(page)) {
    return Status::Corruption(PagePrefix(expected_id) + "damaged layout of a " +
                              PageTypeName(static_cast<PageType>(header->type)) + " page");
  }
  return Status::OK();
}

const char* PageTypeName(PageType type) {
  switch (type) {
    case PageType::kFree: return "free";
    case PageType::kVolumeHeader: return "volume header";
    case PageType::kAllocMap: return "allocation map";
    case PageType::kBtreeLeaf: return "B-tree leaf";
    case PageType::kBtreeInner: return "B-tree inner";
    case PageType::kCatalog: return "catalog";
    case PageType::kOverflow: return "overflow";
  }
  return "unknown";
}

}  // namespace sm
