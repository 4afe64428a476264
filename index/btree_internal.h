// B-tree internals shared by the btree*.cc files: the CTX sites, the lock-wait record, the
// split planning types, and the inline test of a leaf hint. Not for use outside index/btree*.cc.
//
// Owns: the names of the B-tree's CTX sites (stable: placement files refer to them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "index/btree_node.h"
#include "threads/ctx_point.h"

namespace sm::index {

// Defined in btree.cc (names in btree.h, protocol 7).
extern threads::CtxSite kCtxDescendInner;  // "btree.descend.inner"
extern threads::CtxSite kCtxLeafSearch;    // "btree.leaf.search"
extern threads::CtxSite kCtxLeafCopyOut;   // "btree.leaf.copy_out"
extern threads::CtxSite kCtxInsertLeaf;    // "btree.insert.leaf"
extern threads::CtxSite kCtxUpdateLeaf;    // "btree.update.leaf"
extern threads::CtxSite kCtxDeleteLeaf;    // "btree.delete.leaf"
extern threads::CtxSite kCtxSplit;         // "btree.split"
extern threads::CtxSite kCtxCursorSeek;    // "btree.cursor.seek"
extern threads::CtxSite kCtxCursorNext;    // "btree.cursor.next"

namespace btree_internal {

// x_level of a pessimistic descent that latches every level exclusively.
inline constexpr uint16_t kAllLevels = UINT16_MAX;

// A lock request TryLockKey could not grant, copied out of the page so that the latches can be
// released before waiting.
struct LockWait {
  bool pending = false;
  std::string key;
  bool end_of_index = false;
  KeyLockPurpose purpose = KeyLockPurpose::kRead;
  uint64_t prefetched = 0;  // KeyLockRequest::prefetched
  KeyLockRequest request() const {
    return KeyLockRequest{key, end_of_index, purpose, prefetched};
  }
};

// An entry a node must take but cannot: a leaf record (insert, or an update that replaces record
// `index`) or a separator for an inner node (always inserted).
struct PendingEntry {
  std::string_view key;
  size_t record_bytes = 0;  // as stored: LeafRecordBytes / InnerRecordBytes
  uint16_t index = 0;       // record index it goes to (insert) or replaces (update)
  bool replaces = false;
};

// How one node splits, in terms of its existing records (the pending entry is not on the page).
struct SplitPlan {
  // Leaf: records [move_from, count) move to the new right node. Inner: record move_from is
  // promoted (its key becomes the separator, its child the right node's leftmost child) and
  // records (move_from, count) move.
  uint16_t move_from = 0;
  bool promote = false;
  std::string separator;       // the new high fence of the node and low fence of the right node
  bool pending_right = false;  // the pending entry belongs in the right node
};

// The split points of a node in the order PlanSplit tries them. The node's entries, with the
// pending one in place, are v = 0..m-1, entry v taking needs[v] bytes (record and slot). A
// point is, in a leaf, k in [1, m) (entries [k, m) go right); in an inner node, p in [0, m)
// but not the pending entry `skip` (p is promoted: [0, p) stay, (p, m) go right). With
// target < 0 the points come most balanced by bytes first (ties: the lower point), else
// nearest to `target` first (ties: the higher point, which keeps more in the left node).
//
// Both keys are V-shaped along the points (left minus right bytes, and point minus target,
// grow strictly with the point), so the order is a merge walking outward from the bottom of
// the V: no sort and no allocation, and usually only the first point is looked at.
class SplitPoints {
 public:
  struct Point {
    uint16_t point;
    size_t left_bytes;
    size_t right_bytes;
  };
  // needs: m entries (m <= kMaxEntries); skip < 0: none.
  SplitPoints(const uint16_t* needs, uint16_t m, bool leaf, int skip, int target);
  // The next point in order; false once every point has been given.
  bool Next(Point* point);

  // The most entries a node can have with the pending one (the space of the record area over
  // that of an empty record), which bounds m.
  static constexpr size_t kMaxEntries = kNodeRecordAreaBytes / SlottedPage::SpaceNeeded(0) + 1;

 private:
  // Points are indexed by position j in increasing order (positions skip `skip`).
  bool Valid(int j) const { return j >= 0 && j <= last_; }
  uint16_t PointAt(int j) const;
  Point Make(uint16_t p) const;
  // The point's signed key: left minus right bytes, or point minus target.
  int64_t Signed(uint16_t p) const;

  bool leaf_;
  int skip_;
  int target_;
  size_t total_ = 0;
  uint32_t prefix_[kMaxEntries + 1];  // prefix_[v]: bytes of entries [0, v)
  int last_ = -1;                      // the last position (the first is 0)
  int left_ = -1, right_ = 0;          // the next positions on either side of the V's bottom
};

// The plan for one retained node of a pessimistic path (path index `depth`).
struct LevelSplit {
  size_t depth = 0;
  SplitPlan plan;
};

// Before-images of the existing pages a structure change is about to modify (a split cascade,
// a leaf retirement), copied back if logging the change fails (btree_hooks.h, logging 2). Kept
// only when the tree logs: an unlogged change cannot fail to log. The handles must neither move
// nor be released until Restore or the end of the change.
class BeforeImages {
 public:
  explicit BeforeImages(bool logs) : logs_(logs) {}
  void Add(buffer::PageHandle* page) {
    if (logs_) images_.emplace_back(page, std::string(page->data(), kPageBytes));
  }
  void Restore() const {
    for (const auto& [page, image] : images_) std::memcpy(page->data(), image.data(), kPageBytes);
  }

 private:
  const bool logs_;
  std::vector<std::pair<buffer::PageHandle*, std::string>> images_;
};

// Large values (btree.h): the value a stub names, through the caller's reader, or
// NotSupported when the caller reads none.
inline Status ResolveExternal(const OpContext& ctx, std::string_view stub, std::string* value) {
  if (ctx.external == nullptr) [[unlikely]] {
    return Status::NotSupported("the record holds a large value, which this read does not expand");
  }
  return ctx.external->Resolve(stub, value);
}
// A write replaced or removed a record holding `stub`: the caller learns it.
inline void NoteReplacedStub(const OpContext& ctx, std::string_view stub) {
  if (ctx.external_write == nullptr) return;
  SM_ASSERT(ctx.external_write->replaced != nullptr);
  ctx.external_write->replaced_stub = true;
  ctx.external_write->replaced->assign(stub);
}

}  // namespace btree_internal

// Inline (here, for every btree*.cc that writes through a hint): a miss (most random lookups)
// costs a few instructions and no call.
inline bool BTree::FixHintedLeaf(std::string_view key, threads::LatchMode mode,
                                 threads::CtxSite* leaf_site, LeafHint* hint,
                                 buffer::PageHandle* leaf, bool* fences_known) const {
  // (a) Without latching: could the remembered leaf cover the key?
  const uint64_t prefix = KeyPrefix(key);
  if (hint->tree != instance_id_ || prefix < hint->low_prefix ||
      (!hint->high_infinite && prefix > hint->high_prefix)) [[likely]] {
    ++hint->misses;
    return false;
  }
  const bool inside =
      prefix > hint->low_prefix && (hint->high_infinite || prefix < hint->high_prefix);
  return FixHintedPage(key, inside, mode, leaf_site, hint, leaf, fences_known);
}

// Inline too: the optimistic stage of every Write and Add (out of line, its calls would add
// instructions to every insert: bench_btree's inserts_per_s_raw_1w).
inline Status BTree::FixLeafForWrite(std::string_view key, threads::CtxSite* site,
                                     LeafHint* hint, buffer::PageHandle* leaf,
                                     bool* fences_known) const {
  *fences_known = false;
  if (hint == nullptr || !FixHintedLeaf(key, threads::LatchMode::kExclusive, site, hint, leaf,
                                        fences_known)) {
    SM_TRY(DescendToLeaf(key, SearchMode::kCovering, threads::LatchMode::kExclusive, site, leaf));
  }
  if (hint != nullptr && !*fences_known) Node(leaf->data()).PrefetchFences();
  return Status::OK();
}

inline BTree::Contender BTree::AfterOptimisticWrite(const buffer::PageHandle& leaf,
                                                    uint16_t written, bool fences_known,
                                                    LeafHint* hint) {
  Contender contender = Contender::kNone;
  if ((leaf.latch_waited() || test_every_write_waited_) && written != UINT16_MAX) [[unlikely]] {
    contender = NoteContendedWrite(leaf, written);
  }
  // Still the leaf for the key whatever happened: the optimistic stage never splits, so
  // fences known before the write are known after it.
  if (hint != nullptr) RememberLeaf(leaf, fences_known, hint);
  return contender;
}

}  // namespace sm::index
