// DropTable and the reclamation of a dropped table's pages, across crashes.
//
// A drop removes the table from the catalog in a durable transaction and marks its handle
// dropped, so that every later operation through it returns NotFound. Its pages go back to the
// volume later, once nothing can reach them: a transaction that was active at the drop may be
// in the middle of an operation on the tree (it passed the dropped check just before the mark),
// so the drop remembers which transactions were active and the pages wait until all of those
// have finished. A transaction that begins after the drop sees the mark (it was set before the
// active list was read, and Begin enters that list under the same mutex). Reclamation runs at
// the end of DropTable, in CreateTable (so the space is reused), in Checkpoint, in Close (where
// no transaction is active) and in Open (ResumeDrops, before any transaction begins).
//
// Durable state: the drop's transaction deletes the table's catalog entry and inserts, in the
// same transaction, a pending-drop entry (kind kDropped, its table id and root, under
// PendingDropKey(id): catalog.cc). The entry goes only when the reclamation is complete. So a
// drop that commits is reclaimed even if the process dies before or during the reclamation,
// an aborted drop leaves no entry, and checkpoints and log truncation cannot lose the state
// (it is catalog data, logged and redone like any). Open turns each entry into a pending drop
// with no users (LoadCatalog) and finishes it.
//
// Reclaiming one drop (Reclaim), the state machine of a PendingDrop:
//   pending --WalkDropped--> walked: the pages below the root, level by level, leaves first
//   walked --Reclaim, per chunk--> the chunk logged in a page-free record (sm/txn/page_frees.h),
//           then freed in the pool and the volume
//   all freed --FinishDrop--> the root's page-free record, the root freed, then the entry
//           deleted in a durable catalog transaction; the drop leaves pending_drops_.
// Progress is kept in memory, so a reclamation that failed (an I/O error) resumes where it
// stopped and never walks a half-freed tree during a run.
//
// Invariants:
//   1. A page is freed only after a page-free record naming it was logged (a crash before that
//      record is durable leaves it allocated, and the entry makes the next Open free it).
//   2. Pages are freed level by level, leaves first, the root last. So at any crash the freed
//      pages of a dropped tree are closed downwards: below a freed node everything is freed.
//   3. While a drop's entry exists, its root page id r names its tree's root, or was freed by
//      FinishDrop (its record logged before the entry's deletion). A tree created after that
//      free may have r as its root; it was created after the drop, so its table id is larger
//      (ids only grow while the entry holds the drop's id in the catalog). The other order,
//      the entry's deletion first, would leak the root if a crash came between the two (a
//      free whose record misses the log, or whose map change misses a checkpoint, is redone
//      by nothing once no entry names the page).
//   4. A drop that a crash left behind is walked only while no transaction or allocation can
//      run: by Open (ResumeDrops), which fails if a walk fails, or by the Close of an Open that
//      failed before it.
//
// Why the walk after a crash is safe (WalkDropped, ReadDroppedNode). Some of the tree's pages
// may have been freed by durable records and then reused: the walk must neither free a page of
// another tree nor free a page twice. At Open, after redo, a page the tree once had is one of:
// still the tree's node (allocated, its content the tree's); free; allocated to a newer tree
// (its content that tree's node, with that tree's tree_root); or allocated in no tree (the map
// reached the disk with a newer allocation whose log records did not: content stale). The walk
// descends only into pages that are allocated, read back intact, and are B-tree nodes of the
// current format with tree_root r, the expected level and kNodeRoot exactly at r. By
// invariant 2 a page it rejects has nothing unfreed below it, so nothing of the tree is missed;
// a page it accepts is the tree's, or stale and in no tree (freeing it reclaims a leak). A
// newer tree whose root is r (invariant 3) is recognized first: if a live table or a pending
// drop with a larger id names r, this drop's walk is over and only its entry goes
// (RootOwnedElsewhere); a newer tree at r that no entry names is a create that never
// committed, whose root page is allocated in no tree: the walk frees it. Nothing else frees
// pages during Open, and a page is freed only if the allocation map says it is allocated, so
// nothing is freed twice. A page that does not read back intact is left allocated (it cannot be
// told apart; Verify reports it) and the reclamation reports Corruption once it is done.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "index/btree_node.h"
#include "sm/api/api_internal.h"
#include "sm/common/assert.h"
#include "sm/io/aligned_buffer.h"
#include "sm/page/page.h"
#include "sm/space/alloc_map.h"
#include "sm/txn/page_frees.h"
#include "threads/baton.h"

namespace sm::api {

namespace {

// The root's level is what the walk learns from it.
constexpr int kAnyLevel = -1;

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

std::string DropName(uint32_t table_id) {
  return "dropped table (id " + std::to_string(table_id) + ")";
}

}  // namespace

Status DatabaseImpl::DropTable(std::string_view name) {
  SM_TRY(CheckOpen());
  if (options_.read_only) return RefuseReadOnly("DropTable");
  CatalogEntry entry;
  std::vector<CatalogEntry> trees;  // the table's, and its value tree's if it has one
  SM_TRY(CatalogOp(name, [&](txn::Txn*, index::OpContext& ctx) -> Status {
    trees.clear();
    std::string bytes;
    Status s = catalog_->Lookup(name, &bytes, ctx, /*for_update=*/true);
    if (s.IsNotFound()) return Status::NotFound("no table '" + std::string(name) + "'");
    SM_TRY(s);
    SM_TRY(DecodeCatalogEntry(name, bytes, &entry));
    SM_TRY(catalog_->Delete(name, ctx));
    trees.push_back(entry);
    const std::string values_name = ValueTreeName(entry.id);
    s = catalog_->Lookup(values_name, &bytes, ctx, /*for_update=*/true);
    if (s.ok()) {
      CatalogEntry values;
      SM_TRY(DecodeCatalogEntry(values_name, bytes, &values));
      SM_TRY(catalog_->Delete(values_name, ctx));
      trees.push_back(values);
    } else if (!s.IsNotFound()) {
      return s;
    }
    for (CatalogEntry pending : trees) {
      pending.kind = TableKind::kDropped;
      SM_TRY(catalog_->Insert(PendingDropKey(pending.id), EncodeCatalogEntry(pending), ctx));
    }
    return Status::OK();
  }));
  {
    std::lock_guard<threads::Mutex> guard(tables_mu_);
    auto it = tables_.find(name);
    if (it != tables_.end()) {
      it->second->MarkDropped();
      dropped_.push_back(std::move(it->second));
      tables_.erase(it);
    }
  }
  {
    std::lock_guard<threads::Mutex> guard(reclaim_mu_);
    const std::vector<TxnId> users = txns_->ActiveTxnIds();  // after the mark: file comment
    for (const CatalogEntry& tree : trees) {
      PendingDrop drop;
      drop.table_id = tree.id;
      drop.root = tree.root;
      drop.users = users;
      pending_drops_.push_back(std::move(drop));
    }
  }
  // The drop itself is done and durable; pages that cannot go back yet (a transaction that
  // was active at the drop still runs, or an error) are retried by Checkpoint and Close, and
  // after a crash by Open.
  ReclaimDropped().PermitUnchecked();
  return Status::OK();
}

Status DatabaseImpl::ResumeDrops() {
  {
    std::lock_guard<threads::Mutex> guard(reclaim_mu_);
    for (PendingDrop& drop : pending_drops_) {
      SM_DASSERT(drop.users.empty());
      SM_TRY(WalkDropped(&drop));  // invariant 4
    }
  }
  // Walked: from here on a failure is retried like any other (Checkpoint, Close).
  ReclaimDropped().PermitUnchecked();
  return Status::OK();
}

// Invariant 3: the entry with the largest table id that names a root owns it.
bool DatabaseImpl::RootOwnedElsewhere(const PendingDrop& drop) {
  reclaim_mu_.AssertHeld();
  for (const PendingDrop& other : pending_drops_) {
    if (other.root == drop.root && other.table_id > drop.table_id) return true;
  }
  std::lock_guard<threads::Mutex> guard(tables_mu_);
  for (const auto& [name, table] : tables_) {
    if (table->tree()->root_page_id() == drop.root) return true;
    const index::BTree* values = table->value_tree();
    if (values != nullptr && values->root_page_id() == drop.root) return true;
  }
  return false;
}

size_t DatabaseImpl::TEST_PendingDrops() {
  std::lock_guard<threads::Mutex> guard(reclaim_mu_);
  return pending_drops_.size();
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
    bool finished = false;
    Status s = Reclaim(&*it, &finished);
    it = finished ? pending_drops_.erase(it) : it + 1;
    if (!s.ok()) return s;
  }
  return Status::OK();
}

// At Close no transaction is active, so no operation, leaf hint or cursor can reach a page a
// tree retired (index/btree_merge.cc): they go back to the volume like a dropped table's,
// logged first. A page retired and not reused before a crash is given back by the next Open
// (FreeOrphanPages).
Status DatabaseImpl::FreeRetiredPages() {
  std::vector<index::BTree*> trees = {catalog_.get()};
  {
    std::lock_guard<threads::Mutex> guard(tables_mu_);
    for (const auto& [name, table] : tables_) {
      trees.push_back(table->tree());
      trees.push_back(table->value_tree());
    }
    for (const auto& table : dropped_) {
      trees.push_back(table->tree());
      trees.push_back(table->value_tree());
    }
  }
  for (index::BTree* tree : trees) {
    // An Open that failed before the catalog was opened; a table without large values.
    if (tree == nullptr) continue;
    SM_TRY(FreePagesLogged(tree->TakeRetiredPages()));
  }
  return Status::OK();
}

// Each page-free record before the frees it names (invariant 1).
Status DatabaseImpl::FreePagesLogged(const std::vector<PageId>& pages) {
  for (size_t at = 0; at < pages.size(); at += txn::kMaxPageFreesPerRecord) {
    const size_t n = std::min<size_t>(txn::kMaxPageFreesPerRecord, pages.size() - at);
    SM_TRY(txn::LogPageFrees(txns_.get(), std::span<const PageId>(pages.data() + at, n)));
    for (size_t i = at; i < at + n; ++i) SM_TRY(FreeUnfixed(pool_.get(), pages[i]));
  }
  return Status::OK();
}

// Pages allocated in no tree. Only the B-trees allocate pages, and a page leaves its tree only
// to be freed, so at Open, once the pending drops have been walked, an allocated page that is
// in no live tree and in no pending drop is one no one will free: a leaf retired and not reused
// before a crash (its tree kept it in memory), the root of a create whose transaction aborted,
// the pages a split allocated before a crash cut it short (its record never reached the log).
// Nothing can reach them (no transaction has begun, no hint or cursor exists), so they go back
// the way a dropped table's do. Every Open looks, not only one after a crash: a crash may follow
// a checkpoint with nothing left to redo, and an aborted create leaks without one.
//
// A page freed wrongly is a live page handed out twice, a page kept is a leak; so nothing is
// freed unless every tree was walked (BTree::ForEachPage reads the inner nodes only), named
// only allocated pages and none twice, and every pending drop was walked. A page in no tree
// that does not read back intact (and is not one allocated but never written) is kept too:
// Verify then names the damage, which freeing would hide.
Status DatabaseImpl::FreeOrphanPages(OpenReport* report) {
  std::vector<bool> owned(volume_->page_count(), false);
  Status walked;
  // The first page a tree names wrongly. Kept apart from `walked`, which the walk that is
  // visiting the page overwrites with its own result when it returns.
  Status misnamed;
  auto mark_tree_page = [&](PageId id) {
    if (!misnamed.ok()) return;
    if (id.value() >= owned.size() || !volume_->IsAllocated(id)) {
      misnamed = Status::Corruption("a tree names page " + std::to_string(id.value()) +
                                    ", which is not allocated");
    } else if (owned[id.value()]) {
      misnamed = Status::Corruption("page " + std::to_string(id.value()) + " is in a tree twice");
    } else {
      owned[id.value()] = true;
    }
  };
  auto walk = [&](const index::BTree& tree) {
    if (!walked.ok()) return;
    walked = tree.ForEachPage(mark_tree_page);
    if (!misnamed.ok() && walked.ok()) walked = std::move(misnamed);
  };
  walk(*catalog_);
  {
    std::lock_guard<threads::Mutex> guard(tables_mu_);
    for (const auto& [name, table] : tables_) {
      walk(*table->tree());
      if (const index::BTree* values = table->value_tree()) walk(*values);
    }
  }
  {
    std::lock_guard<threads::Mutex> guard(reclaim_mu_);
    for (const PendingDrop& drop : pending_drops_) {
      if (!drop.walked && walked.ok()) {
        walked = Status::Corruption(DropName(drop.table_id) + " not walked");
      }
      // A drop's root may be a newer tree's (invariant 3): marked, not checked.
      for (PageId id : drop.pages) {
        if (id.value() < owned.size()) owned[id.value()] = true;
      }
      if (drop.root.value() < owned.size()) owned[drop.root.value()] = true;
    }
  }
  if (!walked.ok()) {
    report->orphan_sweep_skipped = walked.ToString();
    return Status::OK();
  }
  std::vector<PageId> orphans;
  io::AlignedBuffer buf(kPageBytes);
  for (uint64_t id = 1; id < owned.size(); ++id) {
    if (owned[id] || space::AllocMap::IsMetadataPage(id) || !volume_->IsAllocated(PageId(id))) {
      continue;
    }
    bool intact = false;
    SM_TRY(OrphanIntact(PageId(id), &buf, &intact));
    if (intact) {
      orphans.push_back(PageId(id));
    } else {
      ++report->orphan_pages_damaged;
    }
  }
  SM_TRY(FreePagesLogged(orphans));
  report->orphan_pages_freed = orphans.size();
  return Status::OK();
}

// Through the pool, which holds the current image of a page redo changed (the disk's may be
// older, or torn by the crash and repaired only in memory so far).
Status DatabaseImpl::OrphanIntact(PageId id, io::AlignedBuffer* buf, bool* intact) {
  {
    buffer::PageHandle page;
    Status fixed = pool_->Fix(id, threads::LatchMode::kShared, &page);
    if (fixed.ok()) {
      *intact = true;
      return Status::OK();
    }
    if (!fixed.IsCorruption()) return fixed;
  }
  // Allocated but never written (all zero) is intact; anything else is damage.
  Status read = volume_->ReadPage(id, buf->data());
  if (!read.ok() && !read.IsCorruption()) return read;
  read.PermitUnchecked();
  *intact = IsZeroPage(buf->data());
  return Status::OK();
}

// A test's limit on reclamation steps (TEST_LimitReclaim); always true in production.
bool DatabaseImpl::TakeReclaimChunk() {
  int64_t left = reclaim_chunks_left_.load(std::memory_order_relaxed);
  if (left == 0) return false;
  if (left > 0) reclaim_chunks_left_.store(left - 1, std::memory_order_relaxed);
  return true;
}

Status DatabaseImpl::Reclaim(PendingDrop* drop, bool* finished) {
  reclaim_mu_.AssertHeld();
  *finished = false;
  if (!drop->walked) SM_TRY(WalkDropped(drop));
  const size_t chunk_pages = reclaim_chunk_pages_.load(std::memory_order_relaxed);
  while (drop->freed < drop->pages.size()) {
    if (drop->freed == drop->logged) {
      if (!TakeReclaimChunk()) return Status::OK();
      size_t n = std::min(chunk_pages, drop->pages.size() - drop->logged);
      SM_TRY(txn::LogPageFrees(txns_.get(),
                               std::span<const PageId>(drop->pages.data() + drop->logged, n)));
      drop->logged += n;
    }
    SM_TRY(FreeUnfixed(pool_.get(), drop->pages[drop->freed]));
    ++drop->freed;
  }
  bool held = false;
  SM_TRY(FinishDrop(drop, &held));
  if (held) return Status::OK();
  *finished = true;
  if (drop->unreadable == 0) return Status::OK();
  std::string why = std::to_string(drop->unreadable) + " of its pages are left allocated: ";
  why += "they did not read back intact (the first: page " +
         std::to_string(drop->first_unreadable.value()) + ")";
  return Status::Corruption(DropName(drop->table_id) + ": " + why);
}

// The root last (invariant 2), then the entry. The root's record is logged again if its free
// failed before (redo of a free is idempotent, and the root stays allocated until freed here,
// so no allocation can come between the two records). *held: a test's limit stopped it.
Status DatabaseImpl::FinishDrop(PendingDrop* drop, bool* held) {
  *held = false;
  if (drop->root_owned && !drop->root_freed) {
    if (!TakeReclaimChunk()) {
      *held = true;
      return Status::OK();
    }
    const PageId root = drop->root;
    SM_TRY(txn::LogPageFrees(txns_.get(), std::span<const PageId>(&root, 1)));
    SM_TRY(FreeUnfixed(pool_.get(), root));
    drop->root_freed = true;
  }
  if (!TakeReclaimChunk()) {
    *held = true;
    return Status::OK();
  }
  return CatalogTxn([&](txn::Txn*, index::OpContext& ctx) -> Status {
    return catalog_->Delete(PendingDropKey(drop->table_id), ctx);
  });
}

// Level by level from the root, keeping only the pages ReadDroppedNode accepts; drop->pages
// gets them leaves first (invariant 2). On a tree nothing has freed from (a drop in this run)
// it accepts every page; see the file comment for a tree a crash left half freed.
Status DatabaseImpl::WalkDropped(PendingDrop* drop) {
  reclaim_mu_.AssertHeld();
  if (RootOwnedElsewhere(*drop)) {
    // Invariant 3: FinishDrop freed the root before a crash and a newer tree has it; only the
    // entry is left. (Never so for a drop of this run: its root is allocated until FinishDrop.)
    drop->root_owned = false;
    drop->walked = true;
    return Status::OK();
  }
  std::vector<PageId> next;
  uint16_t top = 0;
  Status s = ReadDroppedNode(drop->root, drop->root, kAnyLevel, &drop->root_owned, &top, &next);
  if (s.IsCorruption()) {
    s.PermitUnchecked();
    drop->root_owned = false;
    drop->unreadable = 1;
    drop->first_unreadable = drop->root;
  } else {
    SM_TRY(s);
  }
  std::vector<std::vector<PageId>> levels;  // top down
  for (int level = top - 1; drop->root_owned && level >= 0; --level) {
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    std::vector<PageId> accepted, children;
    for (PageId id : next) {
      bool mine = false;
      uint16_t unused = 0;
      s = ReadDroppedNode(id, drop->root, level, &mine, &unused, &children);
      if (s.IsCorruption()) {
        s.PermitUnchecked();
        if (drop->unreadable++ == 0) drop->first_unreadable = id;
        continue;
      }
      SM_TRY(s);
      if (mine) accepted.push_back(id);
    }
    levels.push_back(std::move(accepted));
    next = std::move(children);
  }
  drop->pages.clear();
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    drop->pages.insert(drop->pages.end(), it->begin(), it->end());
  }
  drop->walked = true;
  return Status::OK();
}

// *mine: page `id` is allocated and a node of the tree rooted at `root` at `level` (kAnyLevel:
// the root itself, whose level goes to *node_level). If so, an inner node's children are
// appended to *children. Corruption: the page does not read back intact.
Status DatabaseImpl::ReadDroppedNode(PageId id, PageId root, int level, bool* mine,
                                     uint16_t* node_level, std::vector<PageId>* children) {
  *mine = false;
  if (!id.valid() || id.value() >= volume_->page_count() || !volume_->IsAllocated(id)) {
    return Status::OK();
  }
  buffer::PageHandle page;
  Status fixed = pool_->Fix(id, threads::LatchMode::kShared, &page);
  if (fixed.IsCorruption()) {
    // An all-zero page was allocated and never written (after a crash: a newer allocation
    // whose map reached the disk and nothing else): in no tree, and not this tree's node.
    io::AlignedBuffer buf(kPageBytes);
    Status read = volume_->ReadPage(id, buf.data());
    if (read.IsCorruption() && IsZeroPage(buf.data())) {
      read.PermitUnchecked();
      fixed.PermitUnchecked();
      return Status::OK();
    }
    read.PermitUnchecked();
  }
  SM_TRY(fixed);
  const PageHeader* header = HeaderOf(page.data());
  const auto type = static_cast<PageType>(header->type);
  if (type != PageType::kBtreeLeaf && type != PageType::kBtreeInner) return Status::OK();
  index::Node node(page.data());
  const index::BtreeNodeHeader& h = node.header();
  if (h.format_version != index::kBtreeNodeFormatVersion || h.tree_root != root.value() ||
      node.is_root() != (id == root) || (type == PageType::kBtreeLeaf) != (h.level == 0) ||
      (level != kAnyLevel && h.level != level) || !node.slots().CheckInvariants() ||
      node.slots().slot_count() < index::kFirstRecordSlot) {
    return Status::OK();
  }
  if (!node.is_leaf()) {
    // ChildAt trusts the record's length; a node that passed the checks above was written by
    // this engine, but the length is cheap to check.
    for (uint16_t i = 0; i < node.count(); ++i) {
      if (node.RawRecord(i).size() < index::kInnerRecordOverheadBytes) return Status::OK();
    }
    for (uint16_t i = 0; i <= node.count(); ++i) children->push_back(node.ChildAt(i));
  }
  *node_level = h.level;
  *mine = true;
  return Status::OK();
}

}  // namespace sm::api
