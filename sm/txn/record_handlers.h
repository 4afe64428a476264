// The table of log-record handlers: how each page record of the layers above is redone and
// undone. log/ defines only the generic page record types (kPageRedo, kPageUndoRedo,
// kCompensation) with a sub-type byte; the layer that writes a sub-type registers its handler
// here, so recovery (log/recovery.h, through TxnManager) calls up without an upward #include.
//
// Owns: the (type, sub-type) -> RecordHandler table, the sub-type number space, and the
// contexts handlers run in (RedoContext, UndoContext).
//
// Sub-types (on disk; never reuse a number):
//   1        kSubtypePageImages    sm/txn/page_images.h   after-images of whole pages
//   2        kSubtypeFullPageImage sm/txn/page_images.h   the same, logged as a page's first
//                                                         change after a checkpoint
//   3        kSubtypePageFrees     sm/txn/page_frees.h    pages a dropped tree gave back
//   16..47   index/ (B-tree record operations and their compensations, index/btree_wal.h)
//
// Handler contract:
//   redo_page  single-page records (record.page valid): called with record.page fixed
//              exclusively and not yet reflecting the record; applies the change exactly as it
//              was first made. The caller stamps the page LSN and marks the page dirty.
//
// Page LSN convention: a page is stamped with the END LSN of the last record applied to it
// (LogRecordView::end_lsn(), the position after the record; PostgreSQL's convention), so that
// the WAL rule - flush the log up to the page LSN before writing the page - makes the whole
// record durable, never just its first bytes. A page reflects record r iff page LSN > r.lsn.
//   redo       records that name several pages (or need to allocate one): the handler fixes
//              each page through RedoContext::Fix, applies where told to, and calls
//              RedoContext::Applied. Set at most one of redo_page and redo.
//   undo       kPageUndoRedo records only: undoes the change logically (wherever the data lives
//              now) on behalf of ctx.txn, whose compensating() is set, so the change it makes is
//              logged as a compensation record carrying txn->compensation_undo_next().
// Handlers return a Status; an error stops recovery (or the rollback) with that error.
//
// Thread/fiber safety: registration happens before use (each layer registers its handlers
// when its logger is first constructed, under a once-flag); lookups are then read-only.
#pragma once

#include <cstdint>
#include <set>

#include "log/log_record.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/common/status.h"

namespace sm::space {
class Volume;
}

namespace sm::txn {

class Txn;
class TxnManager;

inline constexpr uint8_t kSubtypePageImages = 1;
inline constexpr uint8_t kSubtypeFullPageImage = 2;  // same format: torn-write protection
inline constexpr uint8_t kSubtypePageFrees = 3;
inline constexpr uint8_t kSubtypeIndexFirst = 16;
inline constexpr uint8_t kSubtypeIndexLast = 47;

// Pages found torn during redo (failing verification): each is rebuilt by the first full image
// of it that redo meets, and records before that image are skipped for it. One per restart.
struct TornPages {
  std::set<uint64_t> pending;  // torn, no image met yet
  uint64_t repaired = 0;
};

class RedoContext {
 public:
  RedoContext(buffer::BufferPool* pool, space::Volume* volume, const log::LogRecordView& record,
              TornPages* torn = nullptr)
      : pool_(pool), volume_(volume), record_(record), torn_(torn) {}

  // Fixes `page` exclusively and sets *apply if it does not reflect the record yet (page LSN
  // <= record.lsn, see the page LSN convention above). full_image: the record holds the whole
  // page, so a page the volume does not hold yet (beyond its end, or never written: all zeros)
  // is allocated and handed over as an empty kFree page with LSN 0, and a torn page is rebuilt.
  // A torn page gets *apply = false for every other record until an image rebuilds it.
  Status Fix(PageId page, bool full_image, buffer::PageHandle* handle, bool* apply);
  // After a change: stamps the record's end LSN on the page and marks it dirty (rec_lsn = the
  // record's LSN). Only for a page this context's Fix said to apply the record to (asserted:
  // redo never applies a record to a page that already reflects it).
  void Applied(buffer::PageHandle& handle);
  // Redo of a logged free: the page leaves the pool and the allocation map (already free:
  // nothing changes), and if it was found torn it no longer waits for an image.
  Status Free(PageId page);

  const log::LogRecordView& record() const { return record_; }
  buffer::BufferPool* pool() const { return pool_; }
  space::Volume* volume() const { return volume_; }
  uint32_t pages_applied() const { return pages_applied_; }

 private:
  buffer::BufferPool* const pool_;
  space::Volume* const volume_;
  const log::LogRecordView& record_;
  TornPages* const torn_;
  uint32_t pages_applied_ = 0;
  // The pages Fix said to apply the record to, with their LSNs then (the first kApprovedMax;
  // a record names few).
  struct Approved {
    uint64_t page;
    Lsn lsn;
  };
  static constexpr size_t kApprovedMax = 16;
  Approved approved_[kApprovedMax];
  size_t approved_count_ = 0;
  bool approved_overflow_ = false;
};

struct UndoContext {
  TxnManager* txns = nullptr;
  Txn* txn = nullptr;  // compensating() is set
};

struct RecordHandler {
  const char* name = nullptr;
  Status (*redo_page)(const log::LogRecordView& record, char* page) = nullptr;
  Status (*redo)(RedoContext& ctx) = nullptr;
  Status (*undo)(UndoContext& ctx, const log::LogRecordView& record) = nullptr;
};

// Registers the handler of (type, subtype); registering the same pair twice must pass the same
// handler (idempotent re-registration), anything else asserts.
void RegisterRecordHandler(log::RecordType type, uint8_t subtype, const RecordHandler& handler);
// Null if none is registered.
const RecordHandler* FindRecordHandler(log::RecordType type, uint8_t subtype);
// "page_undo_redo/btree_insert" style name for reports and errors.
const char* RecordHandlerName(log::RecordType type, uint8_t subtype);

}  // namespace sm::txn
