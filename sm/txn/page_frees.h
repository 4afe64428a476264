// Page-free log records: the pages a dropped B-tree gives back to the volume, in redo-only
// system records (kPageRedo, sub-type kSubtypePageFrees).
//
// Owns: the payload format and its redo handler.
//
// Payload: u32 page count (at least 1, at most kMaxPageFreesPerRecord), then u64 page ids.
//
// Why a record: the allocation map is not WAL-protected (sm/space/volume.h): it reaches the
// disk at checkpoints and at Close. A free made after the last one would be lost in a crash,
// and the pages would stay allocated in no tree. Redo of the record frees them again, in log
// order with the allocations around it: a page freed and then allocated to another tree is
// redone as freed, then allocated (the new tree's page images allocate what they install).
//
// The caller's rule (deferred free, as in Shore): log the record only once nothing can reach
// the pages any more - the catalog change that dropped the tree is durable and no transaction
// that might still use the tree is active - and free the pages (BufferPool::FreePage) only
// after logging. Then a crash after the record is durable frees them at restart, and a crash
// before it leaves them allocated: the caller must remember them durably to free them later
// (sm/api/drop.cc keeps a pending-drop catalog entry until its last record).
//
// Redo is idempotent: a page already free stays free, a cached copy of it (an earlier record
// of the same restart fixed it) leaves the pool, and a page found torn earlier in the same
// restart no longer waits for an image (a freed page is not rebuilt).
//
// Thread/fiber safety: LogPageFrees may be called from any fiber or thread.
#pragma once

#include <cstdint>
#include <span>

#include "sm/common/ids.h"
#include "sm/common/status.h"

namespace sm::txn {

class TxnManager;

inline constexpr uint32_t kMaxPageFreesPerRecord = 1024;

// Logs the frees of `pages` (1..kMaxPageFreesPerRecord of them) as one system record.
[[nodiscard]] Status LogPageFrees(TxnManager* txns, std::span<const PageId> pages);

// Registers the page-free redo handler (idempotent); TxnManager does it at construction.
void RegisterPageFreeHandler();

}  // namespace sm::txn
