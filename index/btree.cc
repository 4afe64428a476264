// BTree: creation, descents, the point operations and key locks (protocol in btree.h).
#include "index/btree.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "index/btree_internal.h"
#include "index/interleave_chooser.h"
#include "sm/common/assert.h"
#include "sm/page/page.h"
#include "threads/ctx_point.h"
#include "threads/fiber.h"
#include "threads/worker.h"

namespace sm::index {

SM_DEFINE_CTX_SITE(kCtxDescendInner, "btree.descend.inner");
SM_DEFINE_CTX_SITE(kCtxLeafSearch, "btree.leaf.search");
SM_DEFINE_CTX_SITE(kCtxLeafCopyOut, "btree.leaf.copy_out");
SM_DEFINE_CTX_SITE(kCtxInsertLeaf, "btree.insert.leaf");
SM_DEFINE_CTX_SITE(kCtxUpdateLeaf, "btree.update.leaf");
SM_DEFINE_CTX_SITE(kCtxDeleteLeaf, "btree.delete.leaf");
SM_DEFINE_CTX_SITE(kCtxSplit, "btree.split");
SM_DEFINE_CTX_SITE(kCtxCursorSeek, "btree.cursor.seek");
SM_DEFINE_CTX_SITE(kCtxCursorNext, "btree.cursor.next");

namespace {

using btree_internal::kAllLevels;
using buffer::PageHandle;
using threads::LatchMode;

// BTree::instance_id: relaxed, only uniqueness matters.
std::atomic<uint64_t> g_next_instance_id{1};

// The logger of trees opened without one. Stateless, so one instance serves every tree.
NullBtreeLogger g_null_logger;

std::string PageName(PageId id) { return "page " + std::to_string(id.value()); }

}  // namespace

const char* KeyLockPurposeName(KeyLockPurpose purpose) {
  switch (purpose) {
    case KeyLockPurpose::kWrite:
      return "write";
    case KeyLockPurpose::kInsertNext:
      return "insert-next";
    case KeyLockPurpose::kDeleteNext:
      return "delete-next";
    case KeyLockPurpose::kRead:
      return "read";
    case KeyLockPurpose::kReadNext:
      return "read-next";
    case KeyLockPurpose::kIncrement:
      return "increment";
  }
  return "?";
}

// ---- creation --------------------------------------------------------------------------------

BTree::BTree(buffer::BufferPool* pool, PageId root, bool unique, const BtreeOptions& options)
    : pool_(pool),
      root_id_(root),
      instance_id_(g_next_instance_id.fetch_add(1, std::memory_order_relaxed)),
      unique_(unique),
      logger_(options.logger != nullptr ? options.logger : &g_null_logger),
      logs_(options.logger != nullptr),
      contention_threshold_(options.contention_split_threshold),
      retire_empty_leaves_(options.retire_empty_leaves),
      miss_interleaving_(options.miss_interleaving),
      test_every_write_waited_(options.test_every_write_waited) {}

Status BTree::Create(buffer::BufferPool* pool, const BtreeOptions& options, PageId* root_page_id,
                     std::unique_ptr<BTree>* tree) {
  if (pool == nullptr) return Status::InvalidArgument("BTree::Create needs a buffer pool");
  PageHandle root;
  SM_TRY(pool->FixNew(PageType::kBtreeLeaf, &root));
  PageId id = root.page_id();
  auto flags =
      static_cast<uint16_t>(kNodeRoot | kNodeHighInfinite | (options.unique ? 0 : kNodeNonUnique));
  Node::Format(root.data(), 0, flags, id, "", "");
  std::unique_ptr<BTree> fresh(new BTree(pool, id, options.unique, options));
  Lsn lsn;
  Status logged = fresh->logger_->LogFormatRoot(*fresh, root, &lsn);
  if (!logged.ok()) {
    // Unlogged and never handed out: the page goes back (a failure to free leaks it).
    root.Release();
    pool->FreePage(id).PermitUnchecked();
    return logged;
  }
  fresh->Stamp(root, lsn);
  *tree = std::move(fresh);
  *root_page_id = id;
  return Status::OK();
}

Status BTree::Open(buffer::BufferPool* pool, PageId root_page_id, const BtreeOptions& options,
                   std::unique_ptr<BTree>* tree) {
  if (pool == nullptr) return Status::InvalidArgument("BTree::Open needs a buffer pool");
  PageHandle root;
  SM_TRY(pool->Fix(root_page_id, LatchMode::kShared, &root));
  PageType type = PageTypeOf(root.data());
  std::string not_root = PageName(root_page_id) + " is not the root of a B-tree";
  if (type != PageType::kBtreeLeaf && type != PageType::kBtreeInner) {
    return Status::InvalidArgument(not_root + " (page type " + PageTypeName(type) + ")");
  }
  const BtreeNodeHeader& header = Node(root.data()).header();
  if (header.format_version != kBtreeNodeFormatVersion) {
    return Status::NotSupported(
        PageName(root_page_id) + " holds a B-tree node of format version " +
        std::to_string(header.format_version) + "; this build reads version " +
        std::to_string(kBtreeNodeFormatVersion) +
        " only (load the data again into a new database)");
  }
  if ((header.flags & kNodeRoot) == 0 || header.tree_root != root_page_id.value()) {
    return Status::InvalidArgument(not_root);
  }
  bool unique = (header.flags & kNodeNonUnique) == 0;
  tree->reset(new BTree(pool, root_page_id, unique, options));
  return Status::OK();
}

Status BTree::CheckKey(std::string_view key) {
  if (key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("key of " + std::to_string(key.size()) +
                                   " bytes exceeds kMaxKeyBytes (" + std::to_string(kMaxKeyBytes) +
                                   ")");
  }
  return Status::OK();
}

Status BTree::CheckRecord(std::string_view key, std::string_view value) {
  SM_TRY(CheckKey(key));
  size_t bytes = LeafRecordBytes(key.size(), value.size());
  if (bytes > kMaxLeafRecordBytes) {
    return Status::InvalidArgument(
        "record of " + std::to_string(bytes) + " bytes (key + value + " +
        std::to_string(kLeafRecordOverheadBytes) + ") exceeds SlottedPage::kMaxRecordBytes (" +
        std::to_string(kMaxLeafRecordBytes) + "); there are no overflow pages");
  }
  return Status::OK();
}

BtreeCounters BTree::counters() const {
  BtreeCounters c;
  c.pessimistic_descents = pessimistic_descents_.load(std::memory_order_relaxed);
  c.root_exclusive_descents = root_exclusive_descents_.load(std::memory_order_relaxed);
  c.leaf_splits = leaf_splits_.load(std::memory_order_relaxed);
  c.inner_splits = inner_splits_.load(std::memory_order_relaxed);
  c.root_grows = root_grows_.load(std::memory_order_relaxed);
  c.lock_waits = lock_waits_.load(std::memory_order_relaxed);
  c.contention_splits = contention_splits_.load(std::memory_order_relaxed);
  c.leaf_merges = leaf_merges_.load(std::memory_order_relaxed);
  c.pages_reused = pages_reused_.load(std::memory_order_relaxed);
  return c;
}

void BTree::Stamp(PageHandle& page, Lsn lsn) {
  SM_DASSERT(page.mode() == LatchMode::kExclusive);
  // Every logged change of a node ends here, the node whole again (btree_node.h).
  SM_PARANOID(Node(page.data()).CheckInvariants());
  if (!lsn.valid()) return;
  // The logger hands out increasing LSNs (log/ asserts that on append); a page never goes back.
  SM_DASSERT(PageLsn(page.data()) <= lsn);
  SetPageLsn(page.data(), lsn);
}

// ---- descents ----------------------------------------------------------------------------------

Status BTree::FixNode(PageId id, LatchMode mode, PageHandle* handle, buffer::FrameHint hint) const {
  SM_TRY(pool_->FixHinted(id, hint, mode, handle));
  const BtreeNodeHeader& header = Node(handle->data()).header();
  if (header.tree_root != root_id_.value() ||
      PageTypeOf(handle->data()) != NodePageType(header.level) ||
      header.format_version != kBtreeNodeFormatVersion) {
    handle->Release();
    return Status::Corruption(PageName(id) + " is not a node of the B-tree rooted at " +
                              PageName(root_id_));
  }
  return Status::OK();
}

Status BTree::FixRoot(LatchMode mode, PageHandle* root) const {
  buffer::FrameHint hint = root_hint_.load(std::memory_order_relaxed);
  SM_TRY(FixNode(root_id_, mode, root, hint));
  // Stored only when it changed: every operation of every worker reads this line.
  if (root->frame_hint() != hint) root_hint_.store(root->frame_hint(), std::memory_order_relaxed);
  return Status::OK();
}

Status BTree::FixChild(const PageHandle& parent, uint16_t index, PageId child_id, LatchMode mode,
                       PageHandle* child) const {
  buffer::FrameHint hint = parent.ChildHint(index);
  SM_TRY(FixNode(child_id, mode, child, hint));
  if (child->frame_hint() != hint) parent.RememberChild(index, child->frame_hint());
  if (Node(child->data()).level() + 1 != Node(parent.data()).level()) {
    const std::string child_name = PageName(child_id);
    child->Release();
    return Status::Corruption(child_name + " is not one level below its parent " +
                              PageName(parent.page_id()));
  }
  return Status::OK();
}

namespace {

// This worker thread's adaptive choice (MissInterleaving::kAdaptive), shared by its trees: it
// measures the worker's work, whatever the tree.
constinit thread_local InterleaveChooser t_interleave_chooser;

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The chooser's regime (interleave_chooser.h): none while STEPS teams may run on this worker
// (a CTX handler installed and the worker's sites not muted), else how often adaptive STEPS
// has switched this worker between teams and none, so that no epoch straddles a switch.
std::optional<uint32_t> InterleaveRegime() {
  if (threads::CtxHandlerInstalled() && !threads::CtxMutedOnThisThread()) return std::nullopt;
  return threads::CtxMuteChangesOnThisThread();
}

}  // namespace

bool BTree::InterleaveNow() const {
  if (miss_interleaving_ == MissInterleaving::kOn) return true;
  t_interleave_chooser.CountDescent(SteadyNowNs, InterleaveRegime);
  return t_interleave_chooser.current();
}

void BTree::InterleaveBeforeLeaf(const PageHandle& parent, uint16_t index) const {
  const buffer::FrameHint hint = parent.ChildHint(index);
  if (hint == nullptr) return;  // no frame to ask for: the fix looks the page up
  pool_->PrefetchForFix(hint, kInterleavePrefetchLines);
  YieldForMisses();
}

void BTree::InterleaveBeforeRecord(const PageHandle& leaf, std::string_view key) {
  Node(leaf.data()).PrefetchRecordFor(key);
  YieldForMisses();
}

void BTree::YieldForMisses() {
  threads::Fiber* fiber = threads::Fiber::Current();
  if (fiber == nullptr || fiber->exclusive_held() != 0) return;
  // A STEPS team member switches at CTX points instead. A fiber keeps its team state
  // (team_slot) between teams; its worker's muted CTX sites say that adaptive STEPS runs it
  // without teams (steps/steps.h), and then it interleaves as with STEPS off.
  if (fiber->team_slot != nullptr && !threads::CtxMutedOnThisThread()) return;
  threads::Worker::Current()->YieldIfOthersReady();
}

Status BTree::DescendToLeaf(std::string_view target, SearchMode mode, LatchMode leaf_mode,
                            threads::CtxSite* leaf_site, PageHandle* leaf,
                            bool* interleaved) const {
  PageHandle node;
  for (;;) {
    SM_TRY(FixRoot(LatchMode::kShared, &node));
    if (!Node(node.data()).is_leaf() || leaf_mode == LatchMode::kShared) break;
    // A root leaf to be latched exclusively: it may grow between the two fixes.
    node.Release();
    if (leaf_site != nullptr) SM_CTX(*leaf_site);
    SM_TRY(FixRoot(LatchMode::kExclusive, &node));
    if (Node(node.data()).is_leaf()) {
      *leaf = std::move(node);
      return Status::OK();
    }
    node.Release();
  }
  for (;;) {
    Node n(node.data());
    uint16_t level = n.level();
    if (level == 0) {
      *leaf = std::move(node);
      return Status::OK();
    }
    SM_CTX(kCtxDescendInner);
    const uint16_t index = n.ChildIndex(target, mode);
    PageId child_id = n.ChildAt(index);
    if (level == 1 && miss_interleaving_ != MissInterleaving::kOff && InterleaveNow()) {
      InterleaveBeforeLeaf(node, index);
      if (interleaved != nullptr) *interleaved = true;
    }
    if (level == 1 && leaf_site != nullptr) SM_CTX(*leaf_site);
    PageHandle child;
    SM_TRY(FixChild(node, index, child_id, level == 1 ? leaf_mode : LatchMode::kShared, &child));
    node = std::move(child);  // latch coupling: the child is latched before the parent is freed
  }
}

bool BTree::FixHintedPage(std::string_view key, bool inside, LatchMode mode,
                          threads::CtxSite* leaf_site, LeafHint* hint, PageHandle* leaf,
                          bool* fences_known) const {
  // (b) Nothing is latched: the leaf may be latched directly.
  if (leaf_site != nullptr) SM_CTX(*leaf_site);
  Status fixed = pool_->FixHinted(hint->leaf, hint->frame, mode, leaf);
  if (!fixed.ok()) {
    // Whatever failed here, the descent meets (and reports) it too if it matters for the key.
    fixed.PermitUnchecked();
    ++hint->misses;
    ++hint->rejected;
    return false;
  }
  // (c) Still a leaf of this tree for the key? Not corruption if not: the page may have
  // become the root's inner node (root growth), or the hint may be another tree's.
  Node n(leaf->data());
  const BtreeNodeHeader& header = n.header();
  bool usable = PageTypeOf(leaf->data()) == PageType::kBtreeLeaf &&
                header.tree_root == root_id_.value() && header.level == 0 &&
                header.format_version == kBtreeNodeFormatVersion;
  *fences_known = usable && !hint->ahead && n.version() == hint->version;
  // A hint filled ahead leaves the test to its caller (LeafHint::ahead).
  if (usable &&
      (hint->ahead || (*fences_known && inside) || n.Covers(key, SearchMode::kCovering))) {
    ++hint->hits;
    return true;
  }
  leaf->Release();
  ++hint->misses;
  ++hint->rejected;
  return false;
}

void BTree::RememberLeaf(const PageHandle& leaf, bool fences_known, LeafHint* hint) const {
  Node n(leaf.data());
  SM_DASSERT(n.is_leaf());
  hint->version = n.version();
  hint->frame = leaf.frame_hint();  // even when the rest holds: the page may have moved
  if (fences_known) return;
  hint->ahead = false;
  hint->tree = instance_id_;
  hint->leaf = leaf.page_id();
  // Straight from the slot directory: every node has both fence slots (btree_node.h, 2).
  hint->low_prefix = KeyPrefix(n.SlotBytes(kLowFenceSlot));
  hint->high_infinite = n.high_infinite();
  hint->high_prefix = hint->high_infinite ? 0 : KeyPrefix(n.SlotBytes(kHighFenceSlot));
}

Status BTree::DescendPessimistic(std::string_view key, size_t leaf_record_bytes, uint16_t x_level,
                                 Path* path) {
  path->clear();
  path->reserve(8);
  PageHandle node;  // the last node above the exclusive zone, latched shared
  SM_TRY(FixRoot(LatchMode::kShared, &node));
  if (Node(node.data()).level() <= x_level) {
    node.Release();  // the root itself is in the exclusive zone (it may grow meanwhile: fine)
    SM_TRY(FixRoot(LatchMode::kExclusive, &node));
    path->push_back(std::move(node));
  }
  for (;;) {
    const PageHandle& parent = path->empty() ? node : path->back();
    Node p(parent.data());
    if (p.is_leaf()) return Status::OK();
    auto level = static_cast<uint16_t>(p.level() - 1);
    const uint16_t index = p.ChildIndex(key, SearchMode::kCovering);
    PageId child_id = p.ChildAt(index);
    PageHandle child;
    SM_TRY(FixChild(parent, index, child_id,
                    level <= x_level ? LatchMode::kExclusive : LatchMode::kShared, &child));
    Node c(child.data());
    if (level > x_level) {
      node = std::move(child);  // shared coupling above the exclusive zone
      continue;
    }
    node.Release();
    // Safe: no split below can reach the ancestors, so they are released (protocol 3).
    bool safe = c.is_leaf() ? c.CanTake(leaf_record_bytes) : c.FreeBytes() >= kMaxInnerNeed;
    if (safe) path->clear();
    path->push_back(std::move(child));
  }
}

// ---- point operations --------------------------------------------------------------------------

Status BTree::Lookup(std::string_view key, std::string* value, const OpContext& ctx,
                     bool for_update) const {
  SM_TRY(CheckKey(key));
  // A read that will likely go unlocked prefetches nothing; if it locks after all, the lock
  // hashes the key then (a prefetched hash of 0 means none).
  const bool prefetch =
      ctx.locks != nullptr && (for_update || !ctx.locks->ReadsMayGoUnlocked());
  const uint64_t prefetched = prefetch ? ctx.locks->PrefetchKey(key) : 0;
  LeafHint* const hint = ctx.hint;
  for (;;) {
    LockWait wait;
    {
      PageHandle leaf;
      bool fences_known = false;
      const bool hinted = hint != nullptr && FixHintedLeaf(key, LatchMode::kShared, nullptr, hint,
                                                           &leaf, &fences_known);
      if (!hinted) {
        bool interleaved = false;
        SM_TRY(DescendToLeaf(key, SearchMode::kCovering, LatchMode::kShared, nullptr, &leaf,
                             &interleaved));
        if (interleaved) InterleaveBeforeRecord(leaf, key);
      }
      SM_CTX(kCtxLeafSearch);
      Node node(leaf.data());
      // A read for update is followed by its write: remember its leaf. A plain read that
      // descended does not displace the leaf the caller's writes use, and a random read
      // elsewhere (a read-only table) then costs only FixHintedLeaf's test. The fences load
      // during the search.
      // A read for update remembers even a leaf found ahead: the update comes next.
      const bool ahead = hinted && hint->ahead;
      const bool remember = hint != nullptr && (for_update || (hinted && !ahead));
      if (remember && !fences_known) node.PrefetchFences();
      // A leaf found ahead need not cover the key any more (a split may have moved it): one
      // whose records do not share the key's prefix cannot hold it, and is not searched.
      if (ahead && !node.SharesPrefix(key)) {
        hint->Clear();
        continue;
      }
      bool found;
      uint16_t index = node.LowerBound(key, &found);
      if (ahead && !(found && node.KeyOfKind<true>(index) == key)) {
        // A leaf found ahead holds the key only if the key's own record is there (the search's
        // `found` trusts the heads, which leave out a prefix only a covering leaf shares); for
        // anything else, descend (an absent key's next-key lock needs the covering leaf).
        hint->Clear();
        continue;
      }
      if (remember) RememberLeaf(leaf, fences_known, hint);
      // Found: the key itself; absent: the next key guards the gap the lookup saw empty. A
      // read-committed read of a leaf with no uncommitted change takes neither.
      const KeyLockPurpose purpose = !found       ? KeyLockPurpose::kReadNext
                                     : for_update ? KeyLockPurpose::kWrite
                                                  : KeyLockPurpose::kRead;
      const bool unlocked = !for_update && ctx.locks != nullptr &&
                            ctx.locks->ReadsCommittedWithoutLocks(PageLsn(leaf.data()));
      if (!unlocked) SM_TRY(TryLockAt(ctx, leaf, index, purpose, &wait, found ? prefetched : 0));
      if (!wait.pending) {
        if (!found) return Status::NotFound();
        SM_CTX(kCtxLeafCopyOut);
        bool external;
        const std::string_view found_value = node.ValueAt(index, &external);
        if (external) [[unlikely]]
          return btree_internal::ResolveExternal(ctx, found_value, value);
        value->assign(found_value);
        return Status::OK();
      }
    }
    SM_TRY(WaitForLock(ctx, wait));
  }
}

bool BTree::FixHintedParent(std::string_view key, const ParentHint& parent,
                            PageHandle* node) const {
  const uint64_t prefix = KeyPrefix(key);
  if (parent.tree != instance_id_ || prefix < parent.low_prefix ||
      (!parent.high_infinite && prefix > parent.high_prefix)) {
    return false;
  }
  Status fixed = pool_->FixHinted(parent.page, parent.frame, LatchMode::kShared, node);
  if (!fixed.ok()) {
    fixed.PermitUnchecked();  // only a hint: the descent from the root meets what matters
    return false;
  }
  // Still this tree's parent of leaves for the key? (The node may have split, merged away or
  // been freed since: its own header and fences say.)
  Node n(node->data());
  const BtreeNodeHeader& header = n.header();
  if (PageTypeOf(node->data()) == PageType::kBtreeInner && header.tree_root == root_id_.value() &&
      header.level == 1 && header.format_version == kBtreeNodeFormatVersion &&
      n.Covers(key, SearchMode::kCovering)) {
    return true;
  }
  node->Release();
  return false;
}

void BTree::RememberParent(const PageHandle& node, ParentHint* parent) const {
  Node n(node.data());
  SM_DASSERT(n.level() == 1);
  if (parent->tree == instance_id_ && parent->page == node.page_id()) {
    parent->frame = node.frame_hint();  // the same node: its fences are known
    return;
  }
  parent->tree = instance_id_;
  parent->page = node.page_id();
  parent->frame = node.frame_hint();
  parent->low_prefix = KeyPrefix(n.SlotBytes(kLowFenceSlot));
  parent->high_infinite = n.high_infinite();
  parent->high_prefix = parent->high_infinite ? 0 : KeyPrefix(n.SlotBytes(kHighFenceSlot));
}

Status BTree::PrefetchLeaf(std::string_view key, LeafHint* hint, ParentHint* parent) const {
  SM_TRY(CheckKey(key));
  hint->Clear();
  PageHandle node;
  if (parent == nullptr || !FixHintedParent(key, *parent, &node)) {
    SM_TRY(FixRoot(LatchMode::kShared, &node));
  }
  for (;;) {
    Node n(node.data());
    const uint16_t level = n.level();
    if (level == 0) return Status::OK();  // a root leaf: nothing to load ahead
    const uint16_t index = n.ChildIndex(key, SearchMode::kCovering);
    const PageId child_id = n.ChildAt(index);
    if (level == 1) {
      buffer::FrameHint frame = node.ChildHint(index);
      if (frame == nullptr) {  // no descent has fixed the leaf through this parent yet
        frame = pool_->FrameOf(child_id);
        if (frame != nullptr) node.RememberChild(index, frame);
      }
      if (frame != nullptr) pool_->PrefetchForFix(frame, kInterleavePrefetchLines);
      // Fences unknown, and a range that lets FixHintedLeaf try the leaf; Lookup uses it only
      // if its search finds the key there (LeafHint::ahead).
      hint->tree = instance_id_;
      hint->leaf = child_id;
      hint->frame = frame;
      hint->low_prefix = 0;
      hint->high_prefix = 0;
      hint->high_infinite = true;
      hint->ahead = true;
      if (parent != nullptr) RememberParent(node, parent);
      return Status::OK();
    }
    PageHandle child;
    SM_TRY(FixChild(node, index, child_id, LatchMode::kShared, &child));
    node = std::move(child);
  }
}

Status BTree::Insert(std::string_view key, std::string_view value, const OpContext& ctx) {
  return Write(WriteOp::kInsert, key, value, ctx);
}

Status BTree::Update(std::string_view key, std::string_view value, const OpContext& ctx) {
  return Write(WriteOp::kUpdate, key, value, ctx);
}

Status BTree::Upsert(std::string_view key, std::string_view value, const OpContext& ctx) {
  return Write(WriteOp::kUpsert, key, value, ctx);
}

Status BTree::Delete(std::string_view key, const OpContext& ctx) {
  return Write(WriteOp::kDelete, key, {}, ctx);
}

Status BTree::Modify(std::string_view key, const ValueEdit& edit, const OpContext& ctx) {
  return Write(WriteOp::kUpdate, key, {}, ctx, &edit);
}

Status BTree::Write(WriteOp op, std::string_view key, std::string_view value,
                    const OpContext& ctx, const ValueEdit* edit) {
  SM_DASSERT(edit == nullptr || (op == WriteOp::kUpdate && value.empty()));
  SM_TRY(op == WriteOp::kDelete ? CheckKey(key) : CheckRecord(key, value));
  if (ctx.external_write != nullptr) ctx.external_write->replaced_stub = false;
  uint64_t prefetched = 0;  // KeyLockRequest::prefetched of `key`
  if (ctx.locks != nullptr && (op == WriteOp::kUpdate || op == WriteOp::kDelete)) {
    // They write the key or, if it is absent, read its gap: X before the descent. Insert and
    // Upsert may insert, so they check the gap first and lock the key at the leaf (LockAtLeaf).
    SM_TRY(ctx.locks->LockKey(KeyLockRequest{key, false, KeyLockPurpose::kWrite}));
  } else if (ctx.locks != nullptr) {
    prefetched = ctx.locks->PrefetchKey(key);  // locked at the leaf (kWrite), after the descent
  }
  threads::CtxSite* site = op == WriteOp::kInsert   ? &kCtxInsertLeaf
                           : op == WriteOp::kDelete ? &kCtxDeleteLeaf
                                                    : &kCtxUpdateLeaf;
  SM_DASSERT(ctx.hint == nullptr || !ctx.hint->ahead);  // PrefetchLeaf's hints are Lookup's
  // 0: optimistic; then the highest level latched exclusively (1: the leaf's parent; then all).
  uint16_t x_level = 0;
  for (;;) {
    Retry retry = Retry::kNone;
    LockWait wait;
    Status s;
    Contender contender = Contender::kNone;  // a contention split is due if not kNone
    bool emptied = false;                    // a delete left its leaf empty: retire it
    if (x_level == 0) {
      PageHandle leaf;
      bool fences_known = false;
      SM_TRY(FixLeafForWrite(key, site, ctx.hint, &leaf, &fences_known));
      uint16_t written = UINT16_MAX;
      s = WriteAtLeaf(op, key, value, prefetched, ctx, edit, &leaf, nullptr, &retry, &wait,
                      &written);
      emptied = op == WriteOp::kDelete && retire_empty_leaves_ && written != UINT16_MAX &&
                LeftEmpty(leaf);
      contender = AfterOptimisticWrite(leaf, written, fences_known, ctx.hint);
    } else {
      SM_CTX(kCtxSplit);
      pessimistic_descents_.fetch_add(1, std::memory_order_relaxed);
      if (x_level == kAllLevels) root_exclusive_descents_.fetch_add(1, std::memory_order_relaxed);
      Path path;
      SM_TRY(DescendPessimistic(key, LeafRecordBytes(key.size(), value.size()), x_level, &path));
      uint16_t written = UINT16_MAX;
      s = WriteAtLeaf(op, key, value, prefetched, ctx, edit, &path.back(), &path, &retry, &wait,
                      &written);
      // Finished: path holds the leaf that took the record (after a split, the half that did).
      bool finished = retry == Retry::kNone && (s.ok() || s.IsNotFound() || s.IsDuplicate());
      if (ctx.hint != nullptr && finished) RememberLeaf(path.back(), false, ctx.hint);
      emptied = op == WriteOp::kDelete && retire_empty_leaves_ && written != UINT16_MAX &&
                LeftEmpty(path.back());
    }
    // Every latch is released here.
    if (contender != Contender::kNone) [[unlikely]]
      SplitContendedLeaf(key, contender);
    if (emptied) [[unlikely]]
      RetireEmptyLeaf(key);
    if (retry == Retry::kNone || !s.ok()) return s;
    if (retry == Retry::kLockWait) {
      SM_TRY(WaitForLock(ctx, wait));
    } else {
      x_level = x_level == 0 ? 1 : kAllLevels;
    }
  }
}

Status BTree::WriteAtLeaf(WriteOp op, std::string_view key, std::string_view value,
                          uint64_t prefetched, const OpContext& ctx, const ValueEdit* edit,
                          PageHandle* leaf, Path* path, Retry* retry, LockWait* wait,
                          uint16_t* written) {
  Node node(leaf->data());
  bool found;
  uint16_t index = node.LowerBound(key, &found);
  // What `found` decides holds only once its locks are granted: a wait releases the latch, and
  // the restart searches the leaf again (the key may have come or gone meanwhile).
  SM_TRY(LockAtLeaf(op, key, prefetched, ctx, *leaf, index, found, wait));
  if (wait->pending) {
    *retry = Retry::kLockWait;
    return Status::OK();
  }
  if (found && op == WriteOp::kInsert) return Status::Duplicate("key already present");
  if (!found && (op == WriteOp::kUpdate || op == WriteOp::kDelete)) return Status::NotFound();
  if (op == WriteOp::kDelete) {
    SM_TRY(ApplyDelete(*leaf, index, key, ctx));
    *written = index;
    return Status::OK();
  }
  // Modify: the new value is the edited copy of the current one, of its size, so it fits.
  char edited[kMaxLeafRecordBytes];
  if (edit != nullptr) {
    bool external = false;
    const std::string_view current = node.ValueAt(index, &external);
    if (external) return Status::NotSupported("an edit in place of a large value");
    SM_ASSERT(current.size() <= sizeof(edited));
    std::memcpy(edited, current.data(), current.size());
    (*edit)(edited, current.size());
    value = std::string_view(edited, current.size());
  }

  size_t bytes = LeafRecordBytes(key.size(), value.size());
  size_t old_bytes = found ? node.RawRecord(index).size() : 0;
  bool fits =
      found ? (bytes <= old_bytes || bytes - old_bytes <= node.FreeBytes()) : node.CanTake(bytes);
  if (!fits) {
    if (path == nullptr) {
      *retry = Retry::kPessimistic;
      return Status::OK();
    }
    bool escalate = false;
    SM_TRY(SplitPath(path, PendingEntry{key, bytes, index, found}, nullptr, &escalate));
    if (escalate) {
      *retry = Retry::kPessimistic;
      return Status::OK();
    }
    leaf = &path->back();  // the half that takes the record; the path may have reallocated
    index = Node(leaf->data()).LowerBound(key);
  }
  SM_TRY(found ? ApplyUpdate(*leaf, index, key, value, ctx)
               : ApplyInsert(*leaf, index, key, value, ctx));
  *written = index;
  return Status::OK();
}

namespace {

// BTree::TryLock's work, inlined into the tree's own key-lock calls (LockAtLeaf, TryLockAt),
// where the call cost as much as the work; the cursor calls BTree::TryLock.
[[gnu::always_inline]] inline Status TryLockOrNoteWait(const OpContext& ctx,
                                                       const KeyLockRequest& request,
                                                       btree_internal::LockWait* wait) {
  if (ctx.locks == nullptr) return Status::OK();
  Status s = ctx.locks->TryLockKey(request);
  if (s.code() != Status::Code::kBusy) return s;
  wait->pending = true;
  wait->key.assign(request.key);
  wait->end_of_index = request.end_of_index;
  wait->purpose = request.purpose;
  wait->prefetched = request.prefetched;
  return Status::OK();
}

}  // namespace

Status BTree::LockAtLeaf(WriteOp op, std::string_view key, uint64_t prefetched,
                         const OpContext& ctx, PageHandle& leaf, uint16_t index, bool found,
                         LockWait* wait) const {
  if (ctx.locks == nullptr) return Status::OK();
  const KeyLockRequest write{key, false, KeyLockPurpose::kWrite, prefetched};
  if (found) {
    switch (op) {
      case WriteOp::kInsert:  // S keeps the key present, so Duplicate stays true (serializable)
        return TryLockOrNoteWait(ctx, KeyLockRequest{key, false, KeyLockPurpose::kRead, prefetched},
                                 wait);
      case WriteOp::kUpsert:
        return TryLockOrNoteWait(ctx, write, wait);
      case WriteOp::kUpdate:  // kWrite taken by Write
        return Status::OK();
      case WriteOp::kDelete:
        return TryLockAt(ctx, leaf, static_cast<uint16_t>(index + 1), KeyLockPurpose::kDeleteNext,
                         wait);
    }
    SM_UNREACHABLE();
  }
  if (op == WriteOp::kUpdate || op == WriteOp::kDelete) {
    return TryLockAt(ctx, leaf, index, KeyLockPurpose::kReadNext, wait);
  }
  // An insertion: the gap first, then the key (lock_manager.h), so that waiting for a reader of
  // the gap never holds the key against that reader's own insert of it.
  SM_TRY(TryLockAt(ctx, leaf, index, KeyLockPurpose::kInsertNext, wait));
  if (wait->pending) return Status::OK();
  return TryLockOrNoteWait(ctx, write, wait);
}

Status BTree::ApplyInsert(PageHandle& leaf, uint16_t index, std::string_view key,
                          std::string_view value, const OpContext& ctx) {
  Node node(leaf.data());
  const bool external = ctx.external_write != nullptr && ctx.external_write->value_is_stub;
  SM_TRY(node.InsertLeafRecord(index, key, value, external));  // the caller made room
  leaf.set_owner_hint(static_cast<uint16_t>(index + 1));  // the split planner's (btree_split.cc)
  node.BumpVersion();
  leaf.MarkDirty();
  SM_PARANOID(logs_ || node.CheckInvariants());  // else Stamp checks it
  if (!logs_) return Status::OK();
  Lsn lsn;
  Status s = logger_->LogInsert(ctx.txn, *this, leaf, index, key, value, external, &lsn);
  if (!s.ok()) {  // nothing unlogged stays on the page (btree_hooks.h, logging 1)
    node.EraseRecord(index);
    node.BumpVersion();
    return s;
  }
  Stamp(leaf, lsn);
  return Status::OK();
}

Status BTree::ApplyUpdate(PageHandle& leaf, uint16_t index, std::string_view key,
                          std::string_view value, const OpContext& ctx) {
  Node node(leaf.data());
  bool old_external;
  std::string_view current = node.ValueAt(index, &old_external);
  const bool new_external = ctx.external_write != nullptr && ctx.external_write->value_is_stub;
  if (old_external) [[unlikely]]
    btree_internal::NoteReplacedStub(ctx, current);
  if (!logs_) {
    SM_TRY(node.UpdateLeafValue(index, value, new_external));
    node.BumpVersion();
    leaf.MarkDirty();
    SM_PARANOID(node.CheckInvariants());
    return Status::OK();
  }
  // The before-image, for undo and for the logger's diff: on the stack, since every logged
  // update needs one and a value is at most a leaf record (no operator new per update).
  char old_bytes[kMaxLeafRecordBytes];
  SM_DASSERT(current.size() <= sizeof(old_bytes));
  std::memcpy(old_bytes, current.data(), current.size());
  std::string_view old_value(old_bytes, current.size());
  // A same-length value is overwritten in place: its slot, its length and the page's free
  // space stay as they are, so UpdateLeafValue's rebuild of the whole record is not needed.
  // memmove: the caller's value may lie in this page.
  bool in_place = value.size() == current.size() && old_external == new_external;
  char* value_bytes = node.MutableValueAt(index);
  if (in_place) {
    std::memmove(value_bytes, value.data(), value.size());
  } else {
    SM_TRY(node.UpdateLeafValue(index, value, new_external));
  }
  node.BumpVersion();
  leaf.MarkDirty();
  Lsn lsn;
  Status s = logger_->LogUpdate(ctx.txn, *this, leaf, index, key, old_value, old_external, value,
                                new_external, &lsn);
  if (!s.ok()) {
    // No trace of the change: the old bytes go back where they were, or, for another length,
    // the old record fitted before and an update counts its own bytes as free.
    if (in_place) {
      std::memcpy(value_bytes, old_bytes, old_value.size());
    } else {
      SM_ASSERT(node.UpdateLeafValue(index, old_value, old_external).ok());
    }
    node.BumpVersion();
    return s;
  }
  Stamp(leaf, lsn);
  return Status::OK();
}

Status BTree::ApplyDelete(PageHandle& leaf, uint16_t index, std::string_view key,
                          const OpContext& ctx) {
  Node node(leaf.data());
  bool old_external;
  const std::string_view current = node.ValueAt(index, &old_external);
  if (old_external) [[unlikely]]
    btree_internal::NoteReplacedStub(ctx, current);
  std::string old_value;
  if (logs_) old_value.assign(current);
  node.EraseRecord(index);
  node.BumpVersion();
  leaf.MarkDirty();
  SM_PARANOID(logs_ || node.CheckInvariants());  // else Stamp checks it
  if (!logs_) return Status::OK();
  Lsn lsn;
  Status s = logger_->LogDelete(ctx.txn, *this, leaf, index, key, old_value, old_external, &lsn);
  if (!s.ok()) {
    // The erase freed exactly the space the record takes again.
    SM_ASSERT(node.InsertLeafRecord(index, key, old_value, old_external).ok());
    node.BumpVersion();
    return s;
  }
  Stamp(leaf, lsn);
  return Status::OK();
}

// The signal is the buffer pool's: the fix found the latch held. Writes that waited and changed
// different records (the waits of two workers alternate, so most likely each waited for the
// other) are page-level false sharing; waits for the same record are a contention no split
// removes.
BTree::Contender BTree::NoteContendedWrite(const PageHandle& leaf, uint16_t index) {
  if (contention_threshold_ == 0) return Contender::kNone;
  buffer::FrameContention& c = leaf.contention();
  const uint16_t last = c.last_slot;
  c.last_slot = index;
  if (index == last) return Contender::kNone;
  // The node's version counts its changes: the window needs no count of its own per write.
  const auto now = static_cast<uint16_t>(Node(leaf.data()).version());
  if (static_cast<uint16_t>(now - c.window_start) >= kContentionWindowWrites) {
    c.window_start = now;  // rare contention over a long time does not add up
    c.contended = 0;
  }
  if (++c.contended < contention_threshold_) return Contender::kNone;
  c.contended = 0;
  return last < index ? Contender::kLeft : Contender::kRight;
}

void BTree::SplitContendedLeaf(std::string_view key, Contender contender) {
  // The write is done; the split only helps later ones, so its failure (no page free, a failed
  // log write, which the next write meets again) is not the write's.
  ContentionSplit(key, contender == Contender::kLeft).PermitUnchecked();
}

// ---- key locks ---------------------------------------------------------------------------------

Status BTree::TryLock(const OpContext& ctx, const KeyLockRequest& request, LockWait* wait) const {
  return TryLockOrNoteWait(ctx, request, wait);
}

Status BTree::TryLockAt(const OpContext& ctx, PageHandle& leaf, uint16_t index,
                        KeyLockPurpose purpose, LockWait* wait, uint64_t prefetched) const {
  if (ctx.locks == nullptr) return Status::OK();
  Node node(leaf.data());
  if (index < node.count()) {
    return TryLockOrNoteWait(ctx, KeyLockRequest{node.KeyAt(index), false, purpose, prefetched},
                             wait);
  }
  SM_DASSERT(prefetched == 0);  // of a key at `index`
  std::string next;
  bool end_of_index = false;
  std::vector<PageHandle> passed;  // latched until the lock is asked for
  SM_TRY(KeyAfterLeaf(leaf, &next, &end_of_index, &passed));
  return TryLockOrNoteWait(ctx, KeyLockRequest{next, end_of_index, purpose}, wait);
}

Status BTree::WaitForLock(const OpContext& ctx, const LockWait& wait) const {
  SM_DASSERT(wait.pending);
  lock_waits_.fetch_add(1, std::memory_order_relaxed);
  return ctx.locks->LockKey(wait.request());
}

Status BTree::KeyAfterLeaf(const PageHandle& leaf, std::string* key, bool* end_of_index,
                           std::vector<PageHandle>* passed) const {
  PageId next = Node(leaf.data()).right_sibling();
  while (next.valid()) {
    // Rightwards while holding `leaf` and the empty leaves passed: protocol 5.
    PageHandle h;
    SM_TRY(FixNode(next, LatchMode::kShared, &h));
    Node n(h.data());
    if (n.level() != 0) return Status::Corruption(PageName(next) + ": leaf sibling not a leaf");
    if (n.count() > 0) {
      key->assign(n.KeyAt(0));
      *end_of_index = false;
      return Status::OK();
    }
    next = n.right_sibling();
    passed->push_back(std::move(h));
  }
  key->clear();
  *end_of_index = true;
  return Status::OK();
}

}  // namespace sm::index
