// Page-image log records: the after-images of one or more whole pages in one redo-only system
// record (kPageRedo, sub-type kSubtypePageImages). Structure changes (B-tree splits and root
// growth, the formatting of a new root) log this way: a split changes several pages, and one
// record makes the change atomic in the log - after a crash either every page of it is redone
// or none is, so the tree is never seen half split.
//
// Owns: the payload format and its redo handler (which allocates each page in the volume, as a
// split's new page may be beyond the volume's durable allocation map, then installs the image
// where the page LSN is older).
//
// Payload: u16 page count, then per page: u64 page id, u16 hole offset, u16 hole bytes, and the
// kPageBytes - hole bytes of the page outside the hole [offset, offset + bytes), which the
// writer declares unused (for a slotted page: the free gap between the slot array and the
// records) and redo fills with zeros. The page header's checksum field is not meaningful in an
// image (pages are sealed when written).
//
// Thread/fiber safety: LogPageImages is called with every page latched exclusively.
#pragma once

#include <cstdint>
#include <span>

#include "sm/buffer/buffer_pool.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"

namespace sm::txn {

class TxnManager;

struct PageImage {
  const buffer::PageHandle* page = nullptr;  // latched exclusively
  uint16_t hole_offset = 0;            // unused bytes the image may leave out
  uint16_t hole_bytes = 0;
};

// Logs the images as one system record; *page_lsn receives the LSN the caller must stamp on
// every page (SetPageLsn): the record's end, see the page LSN convention in
// record_handlers.h.
[[nodiscard]] Status LogPageImages(TxnManager* txns, std::span<const PageImage> images,
                                   Lsn* page_lsn);
// The same for one page, as the full image that protects it against torn writes (sub-type
// kSubtypeFullPageImage; BufferPool::AdvanceFpiEpoch).
[[nodiscard]] Status LogFullPageImage(TxnManager* txns, const PageImage& image, Lsn* page_lsn);

// Registers the page-image redo handler (idempotent); TxnManager does it at construction.
void RegisterPageImageHandler();

}  // namespace sm::txn
