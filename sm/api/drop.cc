// DropTable and the reclamation of a dropped table's pages.
//
// A drop removes the table from the catalog in a durable transaction and marks its handle
// dropped, so that every later operation through it returns NotFound. Its pages go back to the
// volume later, once nothing can reach them: a transaction that was active at the drop may be
// in the middle of an operation on the tree (it passed the dropped check just before the mark),
// so the drop remembers which transactions were active and the pages wait until all of those
// have finished. A transaction that begins after the drop sees the mark (it was set before the
// active list was read, and Begin enters that list under the same mutex). Reclamation runs at
// the end of DropTable, in CreateTable (so the space is reused), in Checkpoint and in Close
// (where no transaction is active).
//
// Reclaiming a tree: walk it once for its pages (BTree::Verify's walk), then in chunks log a
// page-free record (sm/txn/page_frees.h) and free the chunk's pages in the pool and the volume.
// A crash before a chunk's record is durable leaves those pages allocated in no tree (Verify
// reads and reports them, as it always did); a crash after it frees them again at restart.
// Progress is kept, so a reclamation that failed (an I/O error of the log) resumes where it
// stopped and never walks a half-freed tree.
#include <algorithm>
#include <chrono>
#include <string>

#include "sm/api/api_internal.h"
#include "sm/common/assert.h"
#include "sm/txn/page_frees.h"
#include "threads/baton.h"

namespace sm::api {

namespace {

// Both ascending.
bool Overlap(const std::vector<TxnId>& a, const std::vector<TxnId>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) ++i; else ++j;
  }
  return false;
}

// FreePage refuses a fixed page (Busy). Nothing reaches a dropped tree's pages any more, but
// the background writer may be writing one back (it pins the page for the copy): wait for it.
Status FreeUnfixed(buffer::BufferPool* pool, PageId id) {
  for (int attempt = 0;; ++attempt) {
    Status s = pool->FreePage(id);
    if (s.code() != Status::Code::kBusy || attempt == 1000) return s;
    threads::SleepFor(std::chrono::milliseconds(1));
  }
}

}  // namespace

Status DatabaseImpl::DropTable(std::string_view name) {
  SM_TRY(CatalogOp(name, [&](txn::Txn*, index::OpContext& ctx) -> Status {
    Status s = catalog_->Delete(name, ctx);
    if (s.IsNotFound()) return Status::NotFound("no table '" + std::string(name) + "'");
    return s;
  }));
  TableImpl* dropped = nullptr;
  {
    std::lock_guard<threads::Mutex> guard(tables_mu_);
    auto it = tables_.find(name);
    if (it != tables_.end()) {
      it->second->MarkDropped();
      dropped = it->second.get();
      dropped_.push_back(std::move(it->second));
      tables_.erase(it);
    }
  }
  if (dropped == nullptr) return Status::OK();
  {
    std::lock_guard<threads::Mutex> guard(reclaim_mu_);
    PendingDrop drop;
    drop.table = dropped;
    drop.users = txns_->ActiveTxnIds();  // after the mark: see the file comment
    pending_drops_.push_back(std::move(drop));
  }
  // The drop itself is done and durable; pages that cannot go back yet (a transaction that
  // was active at the drop still runs, or an error) are retried by Checkpoint and Close.
  ReclaimDropped().PermitUnchecked();
  return Status::OK();
}

Status DatabaseImpl::ReclaimDropped() {
  std::lock_guard<threads::Mutex> guard(reclaim_mu_);
  if (pending_drops_.empty() || keep_dropped_pages_.load(std::memory_order_relaxed)) {
    return Status::OK();
  }
  const std::vector<TxnId> active = txns_->ActiveTxnIds();
  for (auto it = pending_drops_.begin(); it != pending_drops_.end();) {
    if (Overlap(it->users, active)) {
      ++it;
      continue;
    }
    SM_TRY(Reclaim(&*it));
    it = pending_drops_.erase(it);
  }
  return Status::OK();
}

Status DatabaseImpl::Reclaim(PendingDrop* drop) {
  if (!drop->walked) {
    index::VerifyOptions walk;
    walk.pages = &drop->pages;
    Status s = drop->table->tree()->Verify(nullptr, walk);
    if (!s.ok()) {
      // A damaged tree's pages cannot be told apart from others: they stay allocated (Verify
      // goes on reporting them), and the drop is not retried.
      drop->pages.clear();
      drop->walked = true;
      return Status::Corruption("table '" + drop->table->name() +
                                "' was dropped, but its pages could not be reclaimed: " +
                                s.ToString());
    }
    drop->walked = true;
  }
  while (drop->freed < drop->pages.size()) {
    if (drop->freed == drop->logged) {
      size_t n = std::min<size_t>(txn::kMaxPageFreesPerRecord, drop->pages.size() - drop->logged);
      SM_TRY(txn::LogPageFrees(txns_.get(),
                               std::span<const PageId>(drop->pages.data() + drop->logged, n)));
      drop->logged += n;
    }
    SM_TRY(FreeUnfixed(pool_.get(), drop->pages[drop->freed]));
    ++drop->freed;
  }
  return Status::OK();
}

}  // namespace sm::api
