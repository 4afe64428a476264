// The (type, sub-type) -> RecordHandler table and RedoContext.
#include "sm/txn/record_handlers.h"

#include <algorithm>
#include <array>
#include <mutex>

#include "sm/common/assert.h"
#include "sm/page/page.h"
#include "sm/space/volume.h"

namespace sm::txn {

namespace {

// Only the page record types carry sub-types; one row per type, indexed by sub-type.
constexpr int kRows = 3;
int RowOf(log::RecordType type) {
  switch (type) {
    case log::RecordType::kPageRedo:
      return 0;
    case log::RecordType::kPageUndoRedo:
      return 1;
    case log::RecordType::kCompensation:
      return 2;
    default:
      return -1;
  }
}

struct Table {
  std::mutex mu;  // registration only; lookups read entries published before use
  std::array<std::array<RecordHandler, 256>, kRows> rows{};
};

Table& TheTable() {
  static Table table;
  return table;
}

bool SameHandler(const RecordHandler& a, const RecordHandler& b) {
  return a.redo_page == b.redo_page && a.redo == b.redo && a.undo == b.undo;
}

}  // namespace

void RegisterRecordHandler(log::RecordType type, uint8_t subtype, const RecordHandler& handler) {
  int row = RowOf(type);
  SM_ASSERT(row >= 0 && subtype != 0 && handler.name != nullptr);
  SM_ASSERT((handler.redo_page == nullptr) != (handler.redo == nullptr));
  SM_ASSERT(handler.undo == nullptr || type == log::RecordType::kPageUndoRedo);
  Table& table = TheTable();
  std::lock_guard<std::mutex> guard(table.mu);
  RecordHandler& slot = table.rows[row][subtype];
  if (slot.name != nullptr) {
    SM_ASSERT(SameHandler(slot, handler));  // two layers claimed one sub-type
    return;
  }
  slot = handler;
}

const RecordHandler* FindRecordHandler(log::RecordType type, uint8_t subtype) {
  int row = RowOf(type);
  if (row < 0) return nullptr;
  const RecordHandler& slot = TheTable().rows[row][subtype];
  return slot.name != nullptr ? &slot : nullptr;
}

const char* RecordHandlerName(log::RecordType type, uint8_t subtype) {
  const RecordHandler* handler = FindRecordHandler(type, subtype);
  return handler != nullptr ? handler->name : "unregistered";
}

Status RedoContext::Fix(PageId page, bool full_image, buffer::PageHandle* handle, bool* apply) {
  if (full_image) SM_TRY(volume_->RedoAllocate(page));
  bool torn = false;
  SM_TRY(pool_->FixForRedo(page, full_image, handle, torn_ != nullptr ? &torn : nullptr));
  if (torn) torn_->pending.insert(page.value());
  if (torn_ != nullptr && torn_->pending.count(page.value()) != 0) {
    *apply = full_image;  // only a whole image can rebuild it
  } else {
    // The page LSN convention: the page reflects the record iff its LSN is above record.lsn.
    *apply = PageLsn(handle->data()) <= record_.lsn;
  }
  if (*apply) {
    if (approved_count_ < kApprovedMax) {
      approved_[approved_count_++] = Approved{page.value(), PageLsn(handle->data())};
    } else {
      approved_overflow_ = true;
    }
  }
  return Status::OK();
}

Status RedoContext::Free(PageId page) {
  SM_TRY(pool_->RedoFreePage(page));
  if (torn_ != nullptr) torn_->pending.erase(page.value());
  return Status::OK();
}

void RedoContext::Applied(buffer::PageHandle& handle) {
  SM_DASSERT(handle.mode() == threads::LatchMode::kExclusive);
  // Redo applies a record only where Fix found it missing: the page's LSN was at most the
  // record's (a torn page, rebuilt from an image, was handed over with LSN 0)...
  const Approved* approved = std::find_if(
      approved_, approved_ + approved_count_,
      [&](const Approved& a) { return a.page == handle.page_id().value(); });
  SM_ASSERT(approved_overflow_ || approved != approved_ + approved_count_);
  SM_ASSERT(approved == approved_ + approved_count_ || approved->lsn <= record_.lsn);
  // ... and what the handler left is older than the record too: an image installed carries
  // the LSN it was taken at, below the record; an in-place change leaves the LSN alone. The
  // page LSN so only grows on replay, as it did when the change was first made.
  SM_ASSERT(PageLsn(handle.data()) <= record_.lsn);
  if (torn_ != nullptr && torn_->pending.erase(handle.page_id().value()) != 0) ++torn_->repaired;
  SetPageLsn(handle.data(), record_.end_lsn());
  handle.MarkDirty(record_.lsn);
  ++pages_applied_;
}

}  // namespace sm::txn
