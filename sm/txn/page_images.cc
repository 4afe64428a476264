// Page-image records: encoding, logging, and the redo handler.
#include "sm/txn/page_images.h"

#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sm/common/assert.h"
#include "sm/common/coding.h"
#include "sm/page/page.h"
#include "sm/txn/record_handlers.h"
#include "sm/txn/txn_manager.h"

namespace sm::txn {

namespace {

bool HoleValid(uint32_t offset, uint32_t bytes) {
  return bytes == 0 || (offset >= kPageHeaderBytes && offset + bytes <= kPageBytes);
}

Status BadImage(const log::LogRecordView& record, const std::string& what) {
  return Status::Corruption("log record at LSN " + std::to_string(record.lsn.value()) +
                            " (page images): " + what);
}

// Installs one image (the page is fixed exclusively).
void Install(char* page, std::string_view before, std::string_view after, uint16_t hole_offset,
             uint16_t hole_bytes) {
  std::memcpy(page, before.data(), before.size());
  std::memset(page + hole_offset, 0, hole_bytes);
  std::memcpy(page + hole_offset + hole_bytes, after.data(), after.size());
}

Status RedoPageImages(RedoContext& ctx) {
  const log::LogRecordView& record = ctx.record();
  ByteReader in(record.payload);
  uint16_t count = 0;
  if (!in.GetFixed16(&count) || count == 0) return BadImage(record, "no page count");
  for (uint16_t i = 0; i < count; ++i) {
    uint64_t id = 0;
    uint16_t hole_offset = 0, hole_bytes = 0;
    std::string_view before, after;
    if (!in.GetFixed64(&id) || !in.GetFixed16(&hole_offset) || !in.GetFixed16(&hole_bytes) ||
        !HoleValid(hole_offset, hole_bytes)) {
      return BadImage(record, "bad header of image " + std::to_string(i));
    }
    uint16_t split = hole_bytes == 0 ? static_cast<uint16_t>(kPageBytes) : hole_offset;
    if (!in.GetBytes(split, &before) || !in.GetBytes(kPageBytes - split - hole_bytes, &after)) {
      return BadImage(record, "image " + std::to_string(i) + " is truncated");
    }
    uint64_t image_id = 0;  // the payload is not aligned: no PageHeader access
    std::memcpy(&image_id, before.data() + offsetof(PageHeader, page_id), sizeof image_id);
    if (image_id != id) {
      return BadImage(record, "image " + std::to_string(i) + " names another page");
    }
    buffer::PageHandle page;
    bool apply = false;
    SM_TRY(ctx.Fix(PageId(id), /*full_image=*/true, &page, &apply));
    if (!apply) continue;
    Install(page.data(), before, after, hole_offset, hole_bytes);
    ctx.Applied(page);
  }
  if (!in.done()) return BadImage(record, "trailing bytes");
  return Status::OK();
}

}  // namespace

void RegisterPageImageHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    RecordHandler handler;
    handler.name = "page_images";
    handler.redo = &RedoPageImages;
    RegisterRecordHandler(log::RecordType::kPageRedo, kSubtypePageImages, handler);
    handler.name = "full_page_image";
    RegisterRecordHandler(log::RecordType::kPageRedo, kSubtypeFullPageImage, handler);
  });
}

namespace {
Status LogImages(TxnManager* txns, std::span<const PageImage> images, uint8_t subtype,
                 Lsn* page_lsn) {
  SM_ASSERT(!images.empty() && images.size() <= UINT16_MAX);
  // The payload goes to the log in parts that point into the latched pages, so each page is
  // copied once (into the log buffer), not first into a payload of its own.
  std::string heads;  // the count, then each image's 12-byte head
  heads.reserve(2 + 12 * images.size());  // no reallocation: the parts point into it
  std::vector<std::string_view> parts;
  parts.reserve(1 + 3 * images.size());
  PutFixed16(&heads, static_cast<uint16_t>(images.size()));
  size_t head_start = 0;
  for (const PageImage& image : images) {
    SM_ASSERT(image.page->mode() == threads::LatchMode::kExclusive);
    SM_ASSERT(HoleValid(image.hole_offset, image.hole_bytes));
    PutFixed64(&heads, image.page->page_id().value());
    PutFixed16(&heads, image.hole_offset);
    PutFixed16(&heads, image.hole_bytes);
    parts.emplace_back(heads.data() + head_start, heads.size() - head_start);
    head_start = heads.size();
    const char* data = image.page->data();
    if (image.hole_bytes == 0) {
      parts.emplace_back(data, kPageBytes);
    } else {
      parts.emplace_back(data, image.hole_offset);
      size_t after = image.hole_offset + image.hole_bytes;
      parts.emplace_back(data + after, kPageBytes - after);
    }
  }
  log::LogRecord record;
  record.type = log::RecordType::kPageRedo;
  record.subtype = subtype;
  record.page = images.front().page->page_id();
  record.payload_parts = parts;
  return txns->LogSystem(&record, page_lsn);
}
}  // namespace

Status LogPageImages(TxnManager* txns, std::span<const PageImage> images, Lsn* page_lsn) {
  return LogImages(txns, images, kSubtypePageImages, page_lsn);
}

Status LogFullPageImage(TxnManager* txns, const PageImage& image, Lsn* page_lsn) {
  return LogImages(txns, std::span<const PageImage>(&image, 1), kSubtypeFullPageImage, page_lsn);
}

}  // namespace sm::txn
