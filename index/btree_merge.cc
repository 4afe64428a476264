// B-tree structure changes: retiring a leaf emptied by deletes.
//
// Owns: when an empty leaf leaves the tree and how (btree.h, "Deletes").
//
// Why: a table used as a queue (TPC-C's NEW-ORDER: inserted at the high end of each district's
// range, delivered from the low end) empties its leaves from the left, and no later insert falls
// into their ranges. Left linked, they lie on the path of every search for the queue's head:
// Delivery's lookup of the oldest new order would step over more empty leaves every second,
// and the run would slow down the longer it lasts (tpcc run's Delivery latency and
// throughput_tx_per_s over a long --duration).
//
// How: a delete that leaves its leaf L empty, once it has finished and released its latches,
// retires L (MergeEmptyLeaf): a pessimistic descent keeps L's parent P latched exclusively, then
// L's neighbour under the same parent and L are latched left to right (protocol 5) and, if L
// is still empty,
//   - L has a left sibling S under P: S takes over L's key range (S's high fence becomes L's,
//     S's right link L's), and L's entry leaves P;
//   - L is P's leftmost child and its right sibling R under P is empty too: L takes over R's
//     range the same way and R's entry leaves P (the same change, one to the right);
//   - otherwise (L alone under P, or first with a non-empty neighbour) nothing happens.
// The retired page is reformatted as a node of no tree (tree_root 0), so a leaf hint or cursor
// that remembers it rejects it (they check tree_root) and descends instead. P, the surviving
// sibling and the retired page are logged as one redo-only record, like a split (btree_wal.h),
// all of them latched until the record's LSN is stamped on each; if logging fails, their
// before-images are put back and nothing changed. Key ranges move only under P's exclusive
// latch and every changed node's version is bumped, which is what descents, hints and cursors
// rely on (btree.h). Key locks are untouched: no key changes, and the gap the retired leaf
// covered is covered by its neighbour, latched by any scan that steps over it.
//
// Space: the retired page stays allocated (in no tree, so Verify counts it "in none") and the
// tree's next splits take it (AllocatePages), so a queue's tree stays at its size. Giving it
// back to the volume while the tree is in use would need to know that no hint or cursor can
// still fix it (epoch-based reclamation), so that waits for Close (TakeRetiredPages); after a
// crash the next Open finds it allocated in no tree and gives it back (sm/api drop.cc).
#include <string>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "index/btree_internal.h"
#include "sm/common/assert.h"

namespace sm::index {

using buffer::PageHandle;
using threads::LatchMode;

namespace {

// `left` takes over the key range of its empty right neighbour `right` (both children of the
// exclusively latched `parent`, right at child index right_index >= 1); `right` leaves the tree.
// False (nothing changed) if left's new high fence does not fit.
bool AbsorbRight(PageHandle& parent, uint16_t right_index, PageHandle& left, PageHandle& right) {
  Node l(left.data()), r(right.data()), p(parent.data());
  SM_DASSERT(r.count() == 0 && right_index >= 1 && right_index <= p.count());
  const std::string high(r.high_fence());
  Status fits = l.SetHighFence(high, r.high_infinite());
  if (!fits.ok()) {
    fits.PermitUnchecked();
    return false;
  }
  l.mutable_header().right_sibling = r.header().right_sibling;
  l.BumpVersion();
  p.EraseRecord(static_cast<uint16_t>(right_index - 1));  // separator s_i and child c_i
  parent.EraseChildHint(right_index, p.count() + 1u);     // the later children's hints follow
  p.BumpVersion();
  Node::FormatRetired(right.data());  // hints and cursors check tree_root and reject it
  return true;
}

}  // namespace

Status BTree::MergeEmptyLeaf(std::string_view key) {
  // No record this large fits: the descent keeps the leaf's parent latched (protocol 3).
  constexpr size_t kNeverFits = kPageBytes;
  Path path;
  SM_TRY(DescendPessimistic(key, kNeverFits, 1, &path));
  if (path.size() < 2 || Node(path.back().data()).count() != 0) return Status::OK();
  path.pop_back();  // release the leaf: its left neighbour is latched first
  PageHandle& parent = path.back();
  Node p(parent.data());
  const uint16_t index = p.ChildIndex(key, SearchMode::kCovering);
  // The pair: (left sibling, L) if L has one under P, else (L, its right sibling).
  const uint16_t left_index = index > 0 ? static_cast<uint16_t>(index - 1) : 0;
  if (left_index + 1 > p.count()) return Status::OK();  // L alone under P
  PageHandle left, right;
  SM_TRY(FixChild(parent, left_index, p.ChildAt(left_index), LatchMode::kExclusive, &left));
  const uint16_t right_index = static_cast<uint16_t>(left_index + 1);
  SM_TRY(FixChild(parent, right_index, p.ChildAt(right_index), LatchMode::kExclusive, &right));
  // Inserts may have refilled L since the delete (they latch only the leaf).
  if (Node(left.data()).level() != 0 || Node(right.data()).count() != 0 ||
      (index == 0 && Node(left.data()).count() != 0)) {
    return Status::OK();
  }
  SM_TRY(logger_->BeginStructureChange(*this));
  std::vector<PageHandle*> changed = {&parent, &left, &right};
  btree_internal::BeforeImages before(logs_);
  for (PageHandle* page : changed) before.Add(page);
  if (!AbsorbRight(parent, right_index, left, right)) return Status::OK();
  // The erased separator and a moved fence leave holes; packed, the free space is one gap,
  // which the page images leave out.
  Node(parent.data()).slots().Compact();
  Node(left.data()).slots().Compact();
  parent.MarkDirty();
  left.MarkDirty();
  right.MarkDirty();
  Lsn lsn;
  Status logged = logger_->EndStructureChange(*this, changed, &lsn);
  if (!logged.ok()) {
    SM_ASSERT(logs_);
    before.Restore();
    return logged;
  }
  for (PageHandle* page : changed) Stamp(*page, lsn);
  leaf_merges_.fetch_add(1, std::memory_order_relaxed);
  KeepRetiredPage(right.page_id());
  return Status::OK();
}

std::vector<PageId> BTree::TakeRetiredPages() {
  std::lock_guard<threads::SpinLock> guard(retired_lock_);
  return std::exchange(retired_pages_, {});
}

PageId BTree::TakeRetiredPage() {
  std::lock_guard<threads::SpinLock> guard(retired_lock_);
  if (retired_pages_.empty()) return PageId();
  PageId id = retired_pages_.back();
  retired_pages_.pop_back();
  return id;
}

void BTree::KeepRetiredPage(PageId id) {
  std::lock_guard<threads::SpinLock> guard(retired_lock_);
  retired_pages_.push_back(id);
}

void BTree::RetireEmptyLeaf(std::string_view key) {
  // The delete is done; retiring its leaf only helps later searches, so its failure (a failed
  // log write, which the next write meets again) is not the delete's.
  MergeEmptyLeaf(key).PermitUnchecked();
}

}  // namespace sm::index
