// B-tree structure changes: split planning, root growth, node split and separator posting.
//
// Owns: how a full node splits (the split point, the separator, which half takes the pending
// entry) and the order in which a cascade of splits along a pessimistic path is carried out.
//
// A cascade (SplitPath) runs in four phases:
//   1. PlanPath, read-only, bottom-up: plan the leaf's split; if the parent cannot take the
//      separator, plan the parent's split with that separator as its pending entry; and so on
//      up to a node that takes it, or the root, which then has to grow. Nothing can fail later
//      for lack of space: each plan guarantees that both halves take the pending entry. If the
//      top of the retained path must split but is not the root (a descent that latched only the
//      bottom levels exclusively), SplitPath changes nothing and asks the caller to escalate.
//   2. AllocatePages: one new page per split (and one for root growth), all before anything
//      changes, so that a full volume or pool (NoSpace, Busy) leaves the tree untouched.
//   3. Execution, top-down, bracketed by BtreeLogger::Begin/EndStructureChange: GrowRoot if
//      planned, then for each planned node from the top: SplitNode, then PostSeparator into its
//      (already split) parent, then continue with the half that takes the pending entry.
//   4. Logging: every page the cascade changed - the top split's parent (or the grown root),
//      every split node and its new right half, a grown root's new child - stays latched
//      exclusively, and EndStructureChange logs them all as ONE record (page images, see
//      btree_wal.h). Its LSN is stamped on every one of them; only then is anything released,
//      except the leaf half that takes the pending entry, which the caller goes on to change.
//      So no page of the change can be written back (the writer needs its latch) or seen by
//      another fiber before the record exists, and after a crash the cascade is redone whole
//      or not at all. If logging fails, the before-images of the existing pages (taken at the
//      start of phase 3 when a logger is set) are copied back and the new pages kept for the
//      next split: the tree is exactly as it was.
//
// The three steps are separate functions that cannot fail once called:
//   GrowRoot       the root's node header and records are copied byte for byte into a new page
//                  (same area offset, so the slotted area stays valid); the root is reformatted
//                  as an empty inner node one level up whose leftmost child is that page.
//   SplitNode      the records from the split point move to a new right sibling; the node's
//                  high fence becomes the separator and its right link the new page; the node
//                  is compacted, so that its free space is one gap (which a page image leaves
//                  out).
//   PostSeparator  (separator, new right page) goes into the parent right after the split
//                  node's own entry.
//
// Split point (PlanSplit): among the points whose halves both fit with their fences, the most
// balanced by bytes, except for a sequential insert, where the point nearest to "just after
// the pending entry" comes first: the left node keeps everything up to the new entry and
// stays full, and the stream's next inserts land at its end. An insert is sequential when it
// goes right after the node's previous insert (the frame's owner hint, kept in memory by
// ApplyInsert and PostSeparator, as InnoDB keeps PAGE_LAST_INSERT), or after every record of
// the rightmost node of a level. Ascending inserts then fill their nodes, at the right end of
// a level and where several ascending streams meet inside it (TPC-C's orders, order lines and
// new orders grow at the end of each district's range), where a 50/50 split would leave every
// left half half empty for good. The hint is only a heuristic: a stale one (a delete moved the
// records, the frame was reloaded) costs a less balanced split, never a wrong one.
//
// A contention split (btree.h, "Contention split") is planned by PlanContentionSplit at the
// record its signal names instead, and then carried out by SplitPath as any other.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "index/btree_internal.h"
#include "sm/common/assert.h"

namespace sm::index {

namespace {

using btree_internal::PendingEntry;
using btree_internal::SplitPoints;
using buffer::PageHandle;

// The node's records with the pending entry in place, as the planner sees them ("virtual"
// indexes); the page itself is not changed.
class VirtualEntries {
 public:
  VirtualEntries(const Node& node, const PendingEntry& pending)
      : node_(node),
        pending_(pending),
        size_(static_cast<uint16_t>(node.count() + (pending.replaces ? 0 : 1))) {}

  uint16_t size() const { return size_; }
  bool IsPending(uint16_t v) const { return v == pending_.index; }
  // The existing record that virtual entry v is (v not pending, or pending and replacing).
  uint16_t Existing(uint16_t v) const {
    return (!pending_.replaces && v > pending_.index) ? static_cast<uint16_t>(v - 1) : v;
  }
  std::string_view Key(uint16_t v) const {
    return IsPending(v) ? pending_.key : node_.KeyAt(Existing(v));
  }
  size_t Need(uint16_t v) const {
    size_t bytes = IsPending(v) ? pending_.record_bytes : node_.RawRecord(Existing(v)).size();
    return SlottedPage::SpaceNeeded(bytes);
  }

 private:
  const Node& node_;
  const PendingEntry& pending_;
  uint16_t size_;
};

}  // namespace

namespace btree_internal {

SplitPoints::SplitPoints(const uint16_t* needs, uint16_t m, bool leaf, int skip, int target)
    : leaf_(leaf), skip_(skip), target_(target) {
  SM_ASSERT(m <= kMaxEntries);
  prefix_[0] = 0;
  for (uint16_t v = 0; v < m; ++v) prefix_[v + 1] = prefix_[v] + needs[v];
  total_ = prefix_[m];
  // Leaf: points 1..m-1. Inner: 0..m-1 but `skip`.
  const int count = leaf ? m - 1 : (skip >= 0 && skip < m ? m - 1 : m);
  last_ = count - 1;
  // The bottom of the V: the first position whose signed key is not negative (binary search,
  // the key growing strictly with the position).
  int lo = 0;
  int hi = count;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (Signed(PointAt(mid)) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  right_ = lo;
  left_ = lo - 1;
}

uint16_t SplitPoints::PointAt(int j) const {
  if (leaf_) return static_cast<uint16_t>(j + 1);
  return static_cast<uint16_t>(skip_ >= 0 && j >= skip_ ? j + 1 : j);
}

SplitPoints::Point SplitPoints::Make(uint16_t p) const {
  // Leaf: [0, p) left, [p, m) right. Inner: p is promoted, [0, p) left, (p, m) right.
  const size_t right_from = leaf_ ? prefix_[p] : prefix_[p + 1];
  return Point{p, prefix_[p], total_ - right_from};
}

int64_t SplitPoints::Signed(uint16_t p) const {
  if (target_ >= 0) return int64_t{p} - target_;
  const Point point = Make(p);
  return static_cast<int64_t>(point.left_bytes) - static_cast<int64_t>(point.right_bytes);
}

bool SplitPoints::Next(Point* point) {
  const bool left = Valid(left_);
  const bool right = Valid(right_);
  if (!left && !right) return false;
  bool take_left = !right;
  if (left && right) {
    const int64_t left_key = -Signed(PointAt(left_));  // > 0
    const int64_t right_key = Signed(PointAt(right_));  // >= 0
    // Ties: the lower point when balancing, the higher one when nearing a target.
    take_left = target_ < 0 ? left_key <= right_key : left_key < right_key;
  }
  *point = Make(PointAt(take_left ? left_-- : right_++));
  return true;
}

}  // namespace btree_internal

Status BTree::PlanSplit(const Node& node, PageId page_id, const PendingEntry& pending,
                        uint16_t last_insert, SplitPlan* plan) {
  SM_DASSERT(!pending.replaces || node.is_leaf());
  VirtualEntries v(node, pending);
  bool leaf = node.is_leaf();
  bool sequential =
      !pending.replaces &&
      ((last_insert != 0 && last_insert == pending.index) ||  // right after the last insert
       (pending.index == node.count() && node.high_infinite()));
  // Leaf: the first entry of the right half is the one after the pending entry. Inner: the
  // entry after the pending one is promoted (the nearest other when there is none).
  int target = sequential ? pending.index + 1 : -1;
  size_t low_need = SlottedPage::SpaceNeeded(node.low_fence().size());
  size_t high_need = SlottedPage::SpaceNeeded(node.high_fence().size());
  uint16_t needs[SplitPoints::kMaxEntries];
  SM_ASSERT(v.size() <= SplitPoints::kMaxEntries);  // the fill below writes needs[0, m)
  for (uint16_t i = 0; i < v.size(); ++i) needs[i] = static_cast<uint16_t>(v.Need(i));
  // The pending separator is never promoted: it is inserted into a half after the split.
  SplitPoints points(needs, v.size(), leaf, leaf ? -1 : pending.index, target);
  SplitPoints::Point c;
  while (points.Next(&c)) {
    std::string separator =
        leaf ? ShortestSeparator(v.Key(c.point - 1), v.Key(c.point)) : std::string(v.Key(c.point));
    size_t separator_need = SlottedPage::SpaceNeeded(separator.size());
    if (low_need + separator_need + c.left_bytes > kNodeRecordAreaBytes) continue;
    if (separator_need + high_need + c.right_bytes > kNodeRecordAreaBytes) continue;
    plan->separator = std::move(separator);
    plan->promote = !leaf;
    if (leaf) {
      // Existing records at virtual index >= point move right.
      bool pending_inserted_left = !pending.replaces && pending.index < c.point;
      plan->move_from = pending_inserted_left ? static_cast<uint16_t>(c.point - 1) : c.point;
      plan->pending_right = pending.index >= c.point;
    } else {
      plan->move_from = v.Existing(c.point);
      plan->pending_right = pending.index > c.point;
    }
    return Status::OK();
  }
  return Status::Corruption("page " + std::to_string(page_id.value()) +
                            ": no split point leaves both halves within a page");
}

bool BTree::PlanContentionSplit(const Node& leaf, std::string_view key, bool contender_left,
                                PendingEntry* pending, SplitPlan* plan) {
  const uint16_t count = leaf.count();
  if (count < 2) return false;
  bool found;
  const uint16_t index = leaf.LowerBound(key, &found);
  // The first record of the right half: the key's own when the contender is on its left,
  // else the one after it (for a key no longer there, both are the record after its gap).
  const uint16_t point = contender_left || !found ? index : static_cast<uint16_t>(index + 1);
  if (point == 0 || point >= count) return false;  // both halves keep a record
  size_t left_bytes = 0;
  size_t right_bytes = 0;
  for (uint16_t i = 0; i < count; ++i) {
    (i < point ? left_bytes : right_bytes) += SlottedPage::SpaceNeeded(leaf.RawRecord(i).size());
  }
  std::string separator = ShortestSeparator(leaf.KeyAt(point - 1), leaf.KeyAt(point));
  // A separator longer than the fence it replaces could overflow a half of a nearly full leaf.
  size_t separator_need = SlottedPage::SpaceNeeded(separator.size());
  if (SlottedPage::SpaceNeeded(leaf.low_fence().size()) + separator_need + left_bytes >
          kNodeRecordAreaBytes ||
      separator_need + SlottedPage::SpaceNeeded(leaf.high_fence().size()) + right_bytes >
          kNodeRecordAreaBytes) {
    return false;
  }
  *pending = PendingEntry{key, 0, index, found};
  plan->separator = std::move(separator);
  plan->promote = false;
  plan->move_from = point;
  plan->pending_right = index >= point;
  return true;
}

Status BTree::ContentionSplit(std::string_view key, bool contender_left) {
  // The leaf must split whatever it holds: no record this large fits it, so the descent keeps
  // its parent latched as for a split (protocol 3).
  constexpr size_t kNeverFits = kPageBytes;
  for (uint16_t x_level : {uint16_t{1}, btree_internal::kAllLevels}) {
    SM_CTX(kCtxSplit);
    Path path;
    SM_TRY(DescendPessimistic(key, kNeverFits, x_level, &path));
    PendingEntry pending;
    SplitPlan plan;
    // Planned on the leaf as it is now: other writes may have changed it since the signal.
    if (!PlanContentionSplit(Node(path.back().data()), key, contender_left, &pending, &plan)) {
      return Status::OK();
    }
    bool escalate = false;
    SM_TRY(SplitPath(&path, pending, &plan, &escalate));
    if (!escalate) {
      contention_splits_.fetch_add(1, std::memory_order_relaxed);
      return Status::OK();
    }
  }
  return Status::OK();  // an exclusive descent from the root never escalates
}

Status BTree::PlanPath(const Path& path, const PendingEntry& leaf_pending,
                       const SplitPlan* leaf_plan, std::vector<LevelSplit>* plans, bool* grow_root,
                       bool* escalate) const {
  // Reserved so that no element moves: each level's pending key views the separator planned
  // one level below.
  plans->reserve(path.size());
  *grow_root = false;
  *escalate = false;
  PendingEntry pending = leaf_pending;
  for (size_t depth = path.size() - 1;; --depth) {
    Node node(path[depth].data());
    plans->push_back(LevelSplit{depth, {}});
    if (leaf_plan != nullptr && depth + 1 == path.size()) {
      plans->back().plan = *leaf_plan;
    } else {
      SM_TRY(PlanSplit(node, path[depth].page_id(), pending, path[depth].owner_hint(),
                       &plans->back().plan));
    }
    std::string_view separator = plans->back().plan.separator;
    if (depth == 0) {
      // The top of the path splits: the root grows; any other node needs its parent, which
      // this descent did not latch exclusively.
      *(node.is_root() ? grow_root : escalate) = true;
      return Status::OK();
    }
    Node parent(path[depth - 1].data());
    size_t bytes = InnerRecordBytes(separator.size());
    if (parent.CanTake(bytes)) return Status::OK();
    pending = PendingEntry{separator, bytes, parent.UpperBound(separator), false};
  }
}

// A page the tree retired comes first (btree_merge.cc): fixed, not allocated, so that the node
// formatted in it keeps counting its version (Node::Format) and a cursor that remembers the page
// from its earlier life sees a changed version.
Status BTree::AllocatePages(size_t count, std::vector<PageHandle>* pages) {
  pages->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    PageHandle page;
    Status s;
    if (PageId id = TakeRetiredPage(); id.valid()) {
      s = pool_->Fix(id, threads::LatchMode::kExclusive, &page);
      if (s.ok() && !Node::IsRetired(page.data())) {
        s = Status::Corruption("page " + std::to_string(id.value()) +
                               ": kept as retired, but it is not");
      }
      if (s.ok()) pages_reused_.fetch_add(1, std::memory_order_relaxed);
    } else {
      s = pool_->FixNew(PageType::kBtreeLeaf, &page);  // reformatted when used
    }
    if (!s.ok()) {
      KeepUnusedPages(pages);
      return s;
    }
    pages->push_back(std::move(page));
  }
  return Status::OK();
}

// The pages were never linked into the tree, but a retired page among them may be remembered
// by a hint or cursor, and one that is given back to the volume cannot be fixed any more, so
// every page is kept for the next split instead, retired again: the change may have formatted
// a node of this tree in it, which a stale hint would accept.
void BTree::KeepUnusedPages(std::vector<PageHandle>* pages) {
  for (PageHandle& page : *pages) {
    Node::FormatRetired(page.data());
    page.MarkDirty();
    PageId id = page.page_id();
    page.Release();
    KeepRetiredPage(id);
  }
  pages->clear();
}

Status BTree::SplitPath(Path* path, const PendingEntry& pending, const SplitPlan* leaf_plan,
                        bool* escalate) {
  std::vector<LevelSplit> plans;
  bool grow_root = false;
  SM_TRY(PlanPath(*path, pending, leaf_plan, &plans, &grow_root, escalate));
  if (*escalate) return Status::OK();
  std::vector<PageHandle> pages;
  SM_TRY(AllocatePages(plans.size() + (grow_root ? 1 : 0), &pages));
  Status begun = logger_->BeginStructureChange(*this);
  if (!begun.ok()) {
    KeepUnusedPages(&pages);
    return begun;
  }
  // The existing pages the cascade changes are path[first_changed..]: the top split's parent,
  // or from the root if it grows (plans are bottom-up, so back() is the top split).
  size_t top = plans.back().depth;
  size_t first_changed = grow_root ? 0 : top - 1;
  btree_internal::BeforeImages before(logs_);
  for (size_t i = first_changed; i < path->size(); ++i) before.Add(&(*path)[i]);
  // nodes[i]: the node at path index i through which the pending entry now goes. Pointers, so
  // that no handle moves (and no latch is released) until the change is logged.
  std::vector<PageHandle*> nodes;
  for (PageHandle& node : *path) nodes.push_back(&node);
  std::vector<PageHandle*> changed;  // each page once, the top first
  auto note = [&changed](PageHandle* page) {
    if (std::find(changed.begin(), changed.end(), page) == changed.end()) changed.push_back(page);
  };
  size_t next_page = 0;
  size_t shift = 0;  // root growth inserts the root's new child at path index 1
  if (grow_root) {
    PageHandle* child = &pages[next_page++];
    GrowRoot(*nodes[0], *child);
    nodes.insert(nodes.begin() + 1, child);
    note(nodes[0]);
    note(child);
    shift = 1;
  }
  for (auto it = plans.rbegin(); it != plans.rend(); ++it) {  // top-down
    size_t depth = it->depth + shift;
    SM_ASSERT(depth >= 1);
    PageHandle* right = &pages[next_page++];
    SplitNode(*nodes[depth], it->plan, *right);
    PostSeparator(*nodes[depth - 1], it->plan.separator, *right);
    note(nodes[depth - 1]);
    note(nodes[depth]);
    note(right);
    if (it->plan.pending_right) nodes[depth] = right;
  }
  SM_DASSERT(next_page == pages.size());
  Lsn lsn;
  Status logged = logger_->EndStructureChange(*this, changed, &lsn);
  if (!logged.ok()) {
    // Nothing unlogged may stay (btree_hooks.h, logging 2): the pages are still latched, so no
    // one saw the change; the new pages were never linked from anything that survives.
    SM_ASSERT(logs_);
    before.Restore();
    KeepUnusedPages(&pages);
    return logged;
  }
  for (PageHandle* page : changed) Stamp(*page, lsn);
  if (grow_root) root_grows_.fetch_add(1, std::memory_order_relaxed);
  for (const LevelSplit& level : plans) {
    bool leaf = level.depth + 1 == path->size();
    (leaf ? leaf_splits_ : inner_splits_).fetch_add(1, std::memory_order_relaxed);
  }
  // Keep the leaf half that takes the entry; every other page is released with *path and
  // `pages`.
  PageHandle leaf = std::move(*nodes.back());
  path->clear();
  path->push_back(std::move(leaf));
  return Status::OK();
}

void BTree::GrowRoot(PageHandle& root, PageHandle& child) {
  Node r(root.data());
  uint16_t level = r.level();
  uint16_t kind = r.flags() & kNodeNonUnique;
  HeaderOf(child.data())->type = HeaderOf(root.data())->type;
  std::memcpy(child.data() + kPageHeaderBytes, root.data() + kPageHeaderBytes,
              kPageBytes - kPageHeaderBytes);
  if (level > 0) root.MoveChildHints(0, r.count() + 1u, child);  // the children move down
  Node c(child.data());
  c.mutable_header().flags = static_cast<uint16_t>(c.flags() & ~(kNodeRoot | kNodeNonUnique));
  c.BumpVersion();
  Node::Format(root.data(), static_cast<uint16_t>(level + 1),
               static_cast<uint16_t>(kNodeRoot | kNodeHighInfinite | kind), root_id_, "", "");
  r.mutable_header().leftmost_child = child.page_id().value();
  root.RememberChild(0, child.frame_hint());
  root.MarkDirty();
  child.MarkDirty();
}

void BTree::SplitNode(PageHandle& node_page, const SplitPlan& plan, PageHandle& right_page) {
  Node node(node_page.data());
  uint16_t count = node.count();
  SM_ASSERT(plan.move_from <= count);
  Node::Format(right_page.data(), node.level(),
               static_cast<uint16_t>(node.flags() & kNodeHighInfinite), root_id_, plan.separator,
               node.high_fence());
  Node right(right_page.data());
  right.mutable_header().right_sibling = node.header().right_sibling;
  uint16_t first_moved = plan.move_from;
  if (plan.promote) {
    SM_ASSERT(plan.move_from < count);
    right.mutable_header().leftmost_child =
        node.ChildAt(static_cast<uint16_t>(plan.move_from + 1)).value();
    ++first_moved;
    // Children c_{move_from+1} .. c_count become the right node's c_0 ..: their hints too.
    node_page.MoveChildHints(plan.move_from + 1u, count - plan.move_from, right_page);
  }
  // The plan guarantees both halves fit (PlanSplit), so these cannot fail. The heads of both
  // halves are brought up to date once, at the end (RefreshHeads; SetHighFence for the left).
  for (uint16_t i = first_moved; i < count; ++i) {
    SM_ASSERT(right.InsertRaw(static_cast<uint16_t>(i - first_moved), node.RawRecord(i),
                              /*refresh=*/false)
                  .ok());
  }
  right.RefreshHeads();
  for (uint16_t i = count; i > plan.move_from; --i) {
    // From the end: no slot shifting.
    node.EraseRecord(static_cast<uint16_t>(i - 1), /*refresh=*/false);
  }
  SM_ASSERT(node.SetHighFence(plan.separator).ok());
  // The moved records left holes in the heap; packing them makes the free space one gap, which
  // the page image of the split leaves out (and later inserts need not compact).
  node.slots().Compact();
  node.mutable_header().right_sibling = right_page.page_id().value();
  node.BumpVersion();
  node_page.MarkDirty();
  right_page.MarkDirty();
}

void BTree::PostSeparator(PageHandle& parent_page, std::string_view separator,
                          const PageHandle& child) {
  Node parent(parent_page.data());
  uint16_t index = parent.UpperBound(separator);
  SM_DASSERT(index == 0 || parent.KeyAt(static_cast<uint16_t>(index - 1)) < separator);
  SM_ASSERT(parent.InsertInnerRecord(index, separator, child.page_id()).ok());  // planned to fit
  // The new child is c_{index+1}; the hints of the children after it move with them.
  parent_page.InsertChildHint(index + 1u, child.frame_hint(), parent.count() + 1u);
  parent_page.set_owner_hint(static_cast<uint16_t>(index + 1));  // see "Split point"
  parent.BumpVersion();
  parent_page.MarkDirty();
}

}  // namespace sm::index
