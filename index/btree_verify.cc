// BTree::Verify: the whole-tree invariant check (invariants 1-7 of btree_node.h) and Stats;
// BTree::ForEachPage, the list of a quiescent tree's pages (below).
//
// Owns: the walks and their bookkeeping. The walk is a depth-first descent from the root with
// shared latches on the whole current path; the root stays latched throughout, and since every
// structure change starts by latching the root exclusively (btree.h, protocol 3), none can run
// meanwhile: the structure seen is one consistent state. Leaves may still change in place.
//
// Depth-first order visits every level left to right, so the sibling chain of each level is
// checked against the previous node seen on that level (LevelLink): right link and fence
// continuity; at the end every level must end in a node without a right sibling and with an
// infinite high fence.
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "index/btree.h"
#include "index/btree_internal.h"
#include "sm/common/assert.h"

namespace sm::index {

namespace btree_internal {

// The last node the walk saw on one level.
struct LevelLink {
  bool seen = false;
  PageId page;
  PageId right;
  bool high_infinite = false;
  std::string high;
};

struct VerifyState {
  explicit VerifyState(const VerifyOptions& opts) : options(opts) {}
  const VerifyOptions& options;
  BtreeStats stats;
  std::vector<LevelLink> levels;         // index: level
  std::unordered_set<uint64_t> visited;  // page ids: a node reachable twice is corruption
};

}  // namespace btree_internal

namespace {

using buffer::PageHandle;
using threads::LatchMode;

Status Fail(PageId page, const std::string& why) {
  return Status::Corruption("page " + std::to_string(page.value()) + ": " + why);
}

// Parses record i of a node without trusting it (KeyAt only DASSERTs).
Status ParseRecord(const Node& node, PageId page, uint16_t i, std::string_view* key,
                   size_t* value_bytes) {
  std::string_view rec = node.RawRecord(i);
  std::string where = "record " + std::to_string(i);
  if (node.is_leaf()) {
    if (rec.size() < kLeafRecordOverheadBytes) return Fail(page, where + " shorter than 2 bytes");
    const uint16_t key_bytes = LeafKeyBytes(rec.data());
    if (key_bytes > rec.size() - kLeafRecordOverheadBytes) {
      return Fail(page, where + ": key length beyond the record");
    }
    *key = rec.substr(kLeafRecordOverheadBytes, key_bytes);
    *value_bytes = rec.size() - kLeafRecordOverheadBytes - key_bytes;
  } else {
    if (rec.size() < kInnerRecordOverheadBytes) return Fail(page, where + " lacks a child id");
    *key = rec.substr(0, rec.size() - kInnerRecordOverheadBytes);
    *value_bytes = 0;
    if (!node.ChildAt(static_cast<uint16_t>(i + 1)).valid()) {
      return Fail(page, where + ": child page id 0");
    }
  }
  if (key->size() > kMaxKeyBytes) return Fail(page, where + ": key over kMaxKeyBytes");
  return Status::OK();
}

}  // namespace

Status BTree::Verify(BtreeStats* stats, const VerifyOptions& options) const {
  VerifyState state(options);
  PageHandle root;
  SM_TRY(FixNode(root_id_, LatchMode::kShared, &root));
  Node node(root.data());
  if (!node.is_root()) return Fail(root_id_, "the root lacks the root flag");
  uint32_t height = node.level() + 1u;
  state.levels.resize(height);
  state.stats.height = height;
  state.stats.pages_per_level.assign(height, 0);
  state.visited.insert(root_id_.value());
  SM_TRY(VerifyNode(state, root, node.level(), "", nullptr));
  SM_TRY(VerifyLevels(state));
  if (options.pages != nullptr) {
    for (uint64_t id : state.visited) options.pages->push_back(PageId(id));
  }
  if (stats != nullptr) *stats = std::move(state.stats);
  return Status::OK();
}

Status BTree::VerifyNode(VerifyState& state, PageHandle& handle, uint32_t expected_level,
                         std::string_view low, const std::string* high) const {
  Node node(handle.data());
  PageId id = handle.page_id();
  const BtreeNodeHeader& header = node.header();
  if (header.level != expected_level) {
    return Fail(id, "level " + std::to_string(header.level) + ", expected " +
                        std::to_string(expected_level));
  }
  if ((header.flags & ~kNodeKnownFlags) != 0) return Fail(id, "unknown flags");
  if (node.is_root() != (id == root_id_)) return Fail(id, "root flag on a non-root or missing");
  bool non_unique = (header.flags & kNodeNonUnique) != 0;
  if (non_unique && (id != root_id_ || unique_)) return Fail(id, "stray non-unique flag");
  if (node.is_leaf() != !node.leftmost_child().valid()) {
    return Fail(id, node.is_leaf() ? "leaf with a child" : "inner node without leftmost child");
  }
  if (state.options.max_page_lsn.valid() && PageLsn(handle.data()) > state.options.max_page_lsn) {
    return Fail(id, "page LSN beyond the end of the log");
  }
  if (!node.slots().CheckInvariants()) return Fail(id, "slotted area invariants violated");
  if (node.slots().slot_count() < kFirstRecordSlot) return Fail(id, "fence slots missing");
  if (node.low_fence() != low) return Fail(id, "low fence differs from the parent's separator");
  if (high == nullptr) {
    if (!node.high_infinite() || !node.high_fence().empty()) {
      return Fail(id, "rightmost node without an infinite high fence");
    }
  } else if (node.high_infinite() || node.high_fence() != *high) {
    return Fail(id, "high fence differs from the parent's separator");
  }
  uint16_t prefix = Node::FencePrefixBytes(node.low_fence(), node.high_fence(),
                                           node.high_infinite());
  if (header.prefix_bytes != prefix) {
    return Fail(id, "prefix_bytes " + std::to_string(header.prefix_bytes) +
                        " is not the fences' common prefix length " + std::to_string(prefix));
  }
  if (node.slots().Tag(kLowFenceSlot) != 0 || node.slots().Tag(kHighFenceSlot) != 0) {
    return Fail(id, "a fence slot has a non-zero tag");
  }
  btree_internal::LevelLink& link = state.levels[expected_level];
  if (link.seen) {
    if (link.right != id) {
      return Fail(link.page, "right sibling is page " + std::to_string(link.right.value()) +
                                 ", not the next node of its level, page " +
                                 std::to_string(id.value()));
    }
    if (link.high_infinite || link.high != low) {
      return Fail(id, "low fence is not the left sibling's high fence");
    }
  }
  link = {true, id, node.right_sibling(), node.high_infinite(), std::string(node.high_fence())};
  SM_TRY(VerifyRecords(state, handle, low, high));
  if (node.head_skip() != node.ExpectedHeadSkip()) {
    return Fail(id, "head_skip " + std::to_string(node.head_skip()) +
                        " is not the bytes the first and last keys share after the prefix, " +
                        std::to_string(node.ExpectedHeadSkip()));
  }
  state.stats.pages_per_level[expected_level]++;
  state.stats.free_bytes += node.FreeBytes();
  if (node.is_leaf()) return Status::OK();
  return VerifyChildren(state, handle);
}

Status BTree::VerifyRecords(VerifyState& state, const PageHandle& handle, std::string_view low,
                            const std::string* high) const {
  Node node(handle.data());
  PageId id = handle.page_id();
  std::string_view previous;
  for (uint16_t i = 0; i < node.count(); ++i) {
    std::string_view key;
    size_t value_bytes = 0;
    SM_TRY(ParseRecord(node, id, i, &key, &value_bytes));
    std::string where = "record " + std::to_string(i);
    if (i > 0 && !(previous < key)) return Fail(id, where + ": keys out of order");
    // A separator equal to the low fence would give its left child an empty range.
    if (node.is_leaf() ? key < low : key <= low) return Fail(id, where + ": below the low fence");
    if (high != nullptr && key >= *high) return Fail(id, where + ": at or above the high fence");
    if (node.HeadAt(i) != KeyHead(key, size_t{node.prefix_bytes()} + node.head_skip())) {
      return Fail(id, where + ": head does not match the key");
    }
    previous = key;
    if (node.is_leaf()) {
      state.stats.key_bytes += key.size();
      state.stats.value_bytes += value_bytes;
    }
  }
  if (node.is_leaf()) {
    state.stats.records += node.count();
    if (node.count() == 0) state.stats.empty_leaves++;
  }
  return Status::OK();
}

Status BTree::VerifyChildren(VerifyState& state, PageHandle& handle) const {
  Node node(handle.data());
  PageId id = handle.page_id();
  for (uint16_t i = 0; i <= node.count(); ++i) {
    PageId child_id = node.ChildAt(i);
    if (!state.visited.insert(child_id.value()).second) {
      return Fail(id, "child page " + std::to_string(child_id.value()) + " is reachable twice");
    }
    // Child i covers [s_i, s_{i+1}) with s_0 = low fence, s_{n+1} = high fence.
    std::string low(i == 0 ? node.low_fence() : node.KeyAt(static_cast<uint16_t>(i - 1)));
    std::string high;
    const std::string* high_ptr = &high;
    if (i < node.count()) {
      high.assign(node.KeyAt(i));
    } else if (node.high_infinite()) {
      high_ptr = nullptr;
    } else {
      high.assign(node.high_fence());
    }
    PageHandle child;
    SM_TRY(FixNode(child_id, LatchMode::kShared, &child));
    SM_TRY(VerifyNode(state, child, node.level() - 1u, low, high_ptr));
  }
  return Status::OK();
}

Status BTree::VerifyLevels(const VerifyState& state) {
  for (size_t level = 0; level < state.levels.size(); ++level) {
    const btree_internal::LevelLink& link = state.levels[level];
    if (!link.seen) return Status::Corruption("level " + std::to_string(level) + " is empty");
    if (link.right.valid()) return Fail(link.page, "last node of its level has a right sibling");
    if (!link.high_infinite) return Fail(link.page, "last node of its level has a high fence");
  }
  return Status::OK();
}

// Breadth-first: only one level's ids are kept, and the leaves, most of the pages, are named by
// their parents without being read (a database many times the pool is walked in the time of
// reading its inner nodes). Each node is checked to be the tree's (FixNode) and one level below
// its parent, so that a damaged tree makes the caller keep pages rather than free a live one.
Status BTree::ForEachPage(const std::function<void(PageId)>& visit) const {
  std::vector<PageId> level_ids = {root_id_};
  int level = -1;  // of the nodes in level_ids; the root's is what it says
  for (; !level_ids.empty(); --level) {
    std::vector<PageId> below;
    for (PageId id : level_ids) {
      visit(id);
      PageHandle handle;
      SM_TRY(FixNode(id, LatchMode::kShared, &handle));
      const Node node(handle.data());
      if (level < 0) level = node.level();
      if (node.level() != level) {
        return Fail(id, "level " + std::to_string(node.level()) + " where " +
                            std::to_string(level) + " was expected");
      }
      if (node.is_leaf()) continue;  // a root leaf: the level-1 nodes name the other leaves
      for (uint16_t i = 0; i <= node.count(); ++i) {
        const PageId child = node.ChildAt(i);
        if (!child.valid()) return Fail(id, "child page id 0");
        if (level == 1) {
          visit(child);
        } else {
          below.push_back(child);
        }
      }
    }
    level_ids = std::move(below);
  }
  return Status::OK();
}

}  // namespace sm::index
