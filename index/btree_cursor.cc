// Cursor: bidirectional range scans over a BTree (contract in btree.h).
//
// Owns: positioning (Forward, Backward), batched forward reading (NextBatch), the revalidation
// of a remembered position, and the key locks a scan takes (btree_hooks.h: kRead for every key
// returned, unless the hook says its leaf's rows are committed, and kReadNext for the first key
// after the range).
//
// Moving forward steps right along leaves with latch coupling, and keeps the leaves it passes
// latched until it has asked for the lock on the key found beyond them (the gap they held).
// Moving backward never latches leftwards (B-tree protocol 5): when the keys before a position
// lie in an earlier leaf, the cursor descends again for the largest key below the current
// leaf's low fence (SearchMode::kBefore). Low fences strictly decrease along that walk, so it
// ends, at the latest in the leftmost leaf (low fence "").
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "index/btree_internal.h"
#include "sm/common/assert.h"

namespace sm::index {

using btree_internal::LockWait;
using buffer::PageHandle;
using threads::LatchMode;

namespace {
std::function<void(std::string_view)>& StepRightHook() {
  static std::function<void(std::string_view)> hook;
  return hook;
}
}  // namespace

void Cursor::TEST_SetStepRightHook(std::function<void(std::string_view)> hook) {
  StepRightHook() = std::move(hook);
}

Cursor::Cursor(const BTree* tree, ScanRange range, OpContext ctx)
    : tree_(tree), range_(std::move(range)), ctx_(ctx) {
  SM_ASSERT(tree != nullptr);
}

void Cursor::Reuse(const BTree* tree, OpContext ctx) {
  SM_ASSERT(tree != nullptr);
  tree_ = tree;
  ctx_ = ctx;
  range_.lower.Clear();
  range_.upper.Clear();
  valid_ = false;
  key_.clear();
  value_.clear();
  leaf_id_ = PageId::Invalid();
  leaf_frame_ = nullptr;
  leaf_version_ = 0;
  index_ = 0;
}

bool Cursor::AboveUpper(std::string_view key) const {
  const ScanBound& upper = range_.upper;
  if (!upper.bounded) return false;
  return upper.inclusive ? key > upper.key : key >= upper.key;
}

bool Cursor::BelowLower(std::string_view key) const {
  const ScanBound& lower = range_.lower;
  if (!lower.bounded) return false;
  return lower.inclusive ? key < lower.key : key <= lower.key;
}

Status Cursor::SeekToFirst() {
  SM_CTX(kCtxCursorSeek);
  const ScanBound& lower = range_.lower;
  if (lower.bounded) {
    target_.assign(lower.key);  // into the buffer it has, not through a temporary
  } else {
    target_.clear();
  }
  return Forward(target_, lower.bounded ? lower.inclusive : true, false);
}

Status Cursor::SeekToLast() {
  SM_CTX(kCtxCursorSeek);
  const ScanBound& upper = range_.upper;
  valid_ = false;
  // The gap between the last key of the range and the first key after it is observed empty.
  if (ctx_.locks != nullptr) SM_TRY(LockKeyAfter(upper.key, !upper.inclusive, !upper.bounded));
  target_ = upper.key;
  return Backward(target_, upper.inclusive, !upper.bounded, false);
}

Status Cursor::Seek(std::string_view key) {
  if (BelowLower(key)) return SeekToFirst();
  SM_CTX(kCtxCursorSeek);
  target_.assign(key);
  return Forward(target_, true, false);
}

Status Cursor::SeekForPrev(std::string_view key) {
  if (AboveUpper(key)) return SeekToLast();
  SM_CTX(kCtxCursorSeek);
  valid_ = false;
  target_.assign(key);
  if (ctx_.locks != nullptr) SM_TRY(LockKeyAfter(target_, false, false));
  return Backward(target_, true, false, false);
}

Status Cursor::Next() {
  SM_CTX(kCtxCursorNext);
  if (!valid_) return Status::InvalidArgument("Cursor::Next on a cursor that is not positioned");
  target_.assign(key_);
  return Forward(target_, false, true);
}

Status Cursor::Prev() {
  SM_CTX(kCtxCursorNext);
  if (!valid_) return Status::InvalidArgument("Cursor::Prev on a cursor that is not positioned");
  target_.assign(key_);
  return Backward(target_, false, false, true);
}

Status Cursor::NextBatch(size_t max_rows, const RowFn& row, size_t* visited) {
  *visited = 0;
  if (!valid_)
    return Status::InvalidArgument("Cursor::NextBatch on a cursor that is not positioned");
  SM_CTX(kCtxCursorNext);
  while (*visited < max_rows) {
    bool more = true;
    {
      PageHandle leaf;
      int index = 0;
      bool positioned = false;
      SM_TRY(FromHint(key_, true, &leaf, &index, &positioned));
      if (positioned) SM_TRY(VisitLeaf(leaf, index, max_rows, row, visited, &more));
    }
    if (!more || *visited == max_rows) return Status::OK();
    // One row the slow way: the next leaf, the end of the range, or a lock to wait for.
    SM_TRY(Next());
    if (!valid_) return Status::OK();
    ++*visited;
    if (!row(key_, value_)) return Status::OK();
  }
  return Status::OK();
}

Status Cursor::VisitLeaf(const PageHandle& leaf, int index, size_t max_rows, const RowFn& row,
                         size_t* visited, bool* more) {
  Node n(leaf.data());
  bool unlocked =
      ctx_.locks == nullptr || ctx_.locks->ReadsCommittedWithoutLocks(PageLsn(leaf.data()));
  int last = -1;
  bool last_resolved = false;  // the last row visited was a large value, read into value_
  *more = true;
  // Keys ascend within a leaf: when its last key is in range, all of them are.
  bool leaf_in_range = n.count() > 0 && !AboveUpper(n.KeyAt(static_cast<uint16_t>(n.count() - 1)));
  for (; index < n.count() && *visited < max_rows; ++index) {
    auto at = static_cast<uint16_t>(index);
    std::string_view key = n.KeyAt(at);
    if (!leaf_in_range && AboveUpper(key)) break;  // Next locks the key after the range
    if (!unlocked) {
      LockWait wait;
      SM_TRY(tree_->TryLock(ctx_, KeyLockRequest{key, false, KeyLockPurpose::kRead}, &wait));
      if (wait.pending) break;  // Next waits for it
    }
    std::string_view value = n.ValueAt(at, &last_resolved);
    if (last_resolved) [[unlikely]] {
      SM_TRY(btree_internal::ResolveExternal(ctx_, value, &value_));
      value = value_;
    }
    ++*visited;
    last = index;
    if (!row(key, value)) {
      *more = false;
      break;
    }
  }
  if (last >= 0) return Take(leaf, static_cast<uint16_t>(last), last_resolved);
  return Status::OK();
}

Status Cursor::FromHint(std::string_view target, bool forward, PageHandle* leaf, int* index,
                        bool* positioned) const {
  *positioned = false;
  if (!leaf_id_.valid()) return Status::OK();
  SM_TRY(tree_->pool_->FixHinted(leaf_id_, leaf_frame_, LatchMode::kShared, leaf));
  // A stale id is not corruption: the page may have become the root's inner node (root growth).
  Node n(leaf->data());
  const BtreeNodeHeader& header = n.header();
  bool usable = PageTypeOf(leaf->data()) == PageType::kBtreeLeaf &&
                header.tree_root == tree_->root_id_.value() && header.level == 0 &&
                header.format_version == kBtreeNodeFormatVersion;
  SearchMode mode = forward ? SearchMode::kCovering : SearchMode::kBefore;
  if (usable && n.version() == leaf_version_) {
    *index = forward ? index_ + 1 : index_ - 1;  // unchanged: target is still at index_
  } else if (usable && n.Covers(target, mode)) {
    *index = forward ? n.UpperBound(target) : n.LowerBound(target) - 1;
  } else {
    leaf->Release();
    return Status::OK();
  }
  *positioned = true;
  return Status::OK();
}

Status Cursor::Take(const PageHandle& leaf, uint16_t index, bool value_taken) {
  SM_CTX(kCtxLeafCopyOut);
  Node node(leaf.data());
  if (!value_taken) {
    bool external;
    const std::string_view value = node.ValueAt(index, &external);
    if (external) [[unlikely]] {
      SM_TRY(btree_internal::ResolveExternal(ctx_, value, &value_));
    } else {
      value_.assign(value);
    }
  }
  key_.assign(node.KeyAt(index));
  leaf_id_ = leaf.page_id();
  leaf_frame_ = leaf.frame_hint();
  leaf_version_ = node.version();
  index_ = index;
  valid_ = true;
  return Status::OK();
}

Status Cursor::LockAndTake(const PageHandle& leaf, uint16_t index, LockWait* wait) {
  if (ctx_.locks != nullptr && !ctx_.locks->ReadsCommittedWithoutLocks(PageLsn(leaf.data()))) {
    KeyLockRequest request{Node(leaf.data()).KeyAt(index), false, KeyLockPurpose::kRead};
    SM_TRY(tree_->TryLock(ctx_, request, wait));
    if (wait->pending) return Status::OK();
  }
  return Take(leaf, index);
}

Status Cursor::Forward(std::string_view target, bool inclusive, bool hinted) {
  valid_ = false;
  for (;;) {
    LockWait wait;
    {
      PageHandle leaf;
      int index = 0;
      bool positioned = false;
      if (hinted) SM_TRY(FromHint(target, true, &leaf, &index, &positioned));
      if (!positioned) {
        SM_TRY(tree_->DescendToLeaf(target, SearchMode::kCovering, LatchMode::kShared, nullptr,
                                    &leaf));
        SM_CTX(kCtxLeafSearch);
        Node n(leaf.data());
        index = inclusive ? n.LowerBound(target) : n.UpperBound(target);
      }
      // Past the leaf's end: step right, skipping empty leaves. The leaves stepped over stay
      // latched until the key found beyond them is locked: the gap up to that key was observed
      // in them, and an insertion into it (at the end of one of them) checks its kInsertNext
      // lock on that same key under their exclusive latch. Released earlier, an insertion could
      // check the gap after this scan passed it but before the scan locked the key, and both
      // would be granted: a phantom.
      std::vector<PageHandle> passed;
      while (index >= Node(leaf.data()).count() && Node(leaf.data()).right_sibling().valid()) {
        PageHandle next;
        SM_TRY(tree_->FixNode(Node(leaf.data()).right_sibling(), LatchMode::kShared, &next));
        if (!Node(next.data()).is_leaf()) {
          return Status::Corruption("page " + std::to_string(next.page_id().value()) +
                                    ": right sibling of a leaf is not a leaf");
        }
        passed.push_back(std::move(leaf));
        leaf = std::move(next);
        index = 0;
      }
      if (!passed.empty() && StepRightHook()) StepRightHook()(target);
      Node n(leaf.data());
      bool at_end = index >= n.count();
      auto at = static_cast<uint16_t>(index);
      if (at_end || AboveUpper(n.KeyAt(at))) {
        // Out of range: lock the first key after it (or end of index), then stop; a read-committed
        // scan of a leaf with no uncommitted change need not.
        if (ctx_.locks != nullptr &&
            !ctx_.locks->ReadsCommittedWithoutLocks(PageLsn(leaf.data()))) {
          std::string_view next = at_end ? std::string_view() : n.KeyAt(at);
          SM_TRY(
              tree_->TryLock(ctx_, KeyLockRequest{next, at_end, KeyLockPurpose::kReadNext}, &wait));
        }
        if (!wait.pending) return Status::OK();
      } else {
        SM_TRY(LockAndTake(leaf, at, &wait));
        if (!wait.pending) return Status::OK();
      }
    }
    SM_TRY(tree_->WaitForLock(ctx_, wait));
    hinted = false;
  }
}

Status Cursor::Backward(std::string_view target, bool inclusive, bool to_end, bool hinted) {
  valid_ = false;
  SearchMode mode = to_end      ? SearchMode::kRightmost
                    : inclusive ? SearchMode::kCovering
                                : SearchMode::kBefore;
  for (;;) {
    LockWait wait;
    {
      PageHandle leaf;
      int index = -1;  // the candidate record; -1: none in this leaf
      bool positioned = false;
      if (hinted) SM_TRY(FromHint(target, false, &leaf, &index, &positioned));
      if (!positioned) {
        SM_TRY(tree_->DescendToLeaf(target, mode, LatchMode::kShared, nullptr, &leaf));
        SM_CTX(kCtxLeafSearch);
        Node n(leaf.data());
        index = to_end      ? n.count() - 1
                : inclusive ? n.UpperBound(target) - 1
                            : n.LowerBound(target) - 1;
      }
      // Before the leaf's start: descend again for the keys below its low fence.
      while (index < 0 && !Node(leaf.data()).low_fence().empty()) {
        std::string low(Node(leaf.data()).low_fence());
        leaf.Release();
        SM_TRY(tree_->DescendToLeaf(low, SearchMode::kBefore, LatchMode::kShared, nullptr, &leaf));
        index = Node(leaf.data()).LowerBound(low) - 1;
      }
      Node n(leaf.data());
      // Below the range or the index: nothing to lock (the gap up to the lowest key returned
      // is covered by that key's lock; an empty range by SeekToLast's lock).
      if (index < 0 || BelowLower(n.KeyAt(static_cast<uint16_t>(index)))) return Status::OK();
      SM_TRY(LockAndTake(leaf, static_cast<uint16_t>(index), &wait));
      if (!wait.pending) return Status::OK();
    }
    SM_TRY(tree_->WaitForLock(ctx_, wait));
    hinted = false;
  }
}

Status Cursor::LockKeyAfter(std::string_view target, bool inclusive, bool to_end) {
  for (;;) {
    LockWait wait;
    if (to_end) {
      SM_TRY(tree_->TryLock(ctx_, KeyLockRequest{{}, true, KeyLockPurpose::kReadNext}, &wait));
    } else {
      PageHandle leaf;
      SM_TRY(
          tree_->DescendToLeaf(target, SearchMode::kCovering, LatchMode::kShared, nullptr, &leaf));
      Node n(leaf.data());
      uint16_t index = inclusive ? n.LowerBound(target) : n.UpperBound(target);
      SM_TRY(tree_->TryLockAt(ctx_, leaf, index, KeyLockPurpose::kReadNext, &wait));
    }
    if (!wait.pending) return Status::OK();
    SM_TRY(tree_->WaitForLock(ctx_, wait));
  }
}

}  // namespace sm::index
