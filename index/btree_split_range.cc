// BTree::SplitRange: keys that cut a key range into parts of about equal size, for scans that
// several threads share (contract in btree.h).
//
// Owns: the level-by-level walk of the inner nodes that cover the range. The walk starts at the
// root, keeps it latched shared throughout (every structure change latches the root exclusively
// first, btree.h protocol 3, so the inner levels it reads are one consistent state), and latches
// one node below it at a time. It stops at the first level whose separators inside the range
// number at least kOversample per part, or at level 1, and picks the cuts evenly among them:
// a separator bounds a subtree, and the subtrees of one level hold about equal numbers of
// leaves, so equal numbers of them make parts of about equal size.
#include <algorithm>
#include <string>
#include <vector>

#include "index/btree.h"
#include "index/btree_internal.h"
#include "sm/common/assert.h"

namespace sm::index {

using buffer::PageHandle;
using threads::LatchMode;

namespace {

// Separators per part before the walk stops descending: more make the parts more even.
constexpr size_t kOversample = 16;
// Nodes the walk reads on one level at most; a level with more is not read (its parent
// level's separators are used), which bounds the time the root stays latched.
constexpr size_t kMaxNodesPerLevel = 4096;

bool AboveLower(const ScanRange& range, std::string_view key) {
  return !range.lower.bounded || key > std::string_view(range.lower.key);
}
bool BelowUpper(const ScanRange& range, std::string_view key) {
  return !range.upper.bounded || key < std::string_view(range.upper.key);
}

// Whether child [low, high) (high_infinite: no upper end) may hold keys of the range.
bool Overlaps(const ScanRange& range, std::string_view low, std::string_view high,
              bool high_infinite) {
  if (range.upper.bounded && low > std::string_view(range.upper.key)) return false;
  if (range.lower.bounded && !high_infinite && high <= std::string_view(range.lower.key)) {
    return false;
  }
  return true;
}

// The separators of `node` inside the range, with its low fence, appended to *cuts, and (if
// `children` is not null) the children that overlap it.
void ReadInnerNode(const Node& node, const ScanRange& range, std::vector<std::string>* cuts,
                   std::vector<PageId>* children) {
  SM_DASSERT(!node.is_leaf());
  const uint16_t n = node.count();
  for (uint16_t i = 0; i <= n; ++i) {
    std::string_view low = i == 0 ? node.low_fence() : node.KeyAt(i - 1);
    bool high_infinite = i == n && node.high_infinite();
    std::string_view high = i == n ? node.high_fence() : node.KeyAt(i);
    // The low fence is a separator of the level above (a cut there too); "" is no cut.
    bool is_cut = (i > 0 || !low.empty()) && AboveLower(range, low) && BelowUpper(range, low);
    if (is_cut) cuts->emplace_back(low);
    if (children != nullptr && Overlaps(range, low, high, high_infinite)) {
      children->push_back(node.ChildAt(i));
    }
  }
}

// parts - 1 of `cuts` (ascending), evenly spaced; all of them if there are fewer.
std::vector<std::string> PickEvenly(std::vector<std::string> cuts, size_t parts) {
  if (cuts.size() < parts) return cuts;
  std::vector<std::string> out;
  out.reserve(parts - 1);
  // Cut j of parts - 1 falls after (j * (n + 1) / parts) subtrees of the n + 1 the n
  // separators bound.
  const size_t subtrees = cuts.size() + 1;
  for (size_t j = 1; j < parts; ++j) out.push_back(std::move(cuts[j * subtrees / parts - 1]));
  return out;
}

}  // namespace

Status BTree::SplitRange(const ScanRange& range, size_t parts,
                         std::vector<std::string>* cuts) const {
  SM_ASSERT(cuts != nullptr);
  cuts->clear();
  if (parts <= 1) return Status::OK();
  PageHandle root;
  SM_TRY(FixRoot(LatchMode::kShared, &root));
  const Node root_node(root.data());
  if (root_node.is_leaf()) return Status::OK();

  std::vector<std::string> level_cuts;
  std::vector<PageId> below;
  ReadInnerNode(root_node, range, &level_cuts, root_node.level() > 1 ? &below : nullptr);
  for (uint16_t level = root_node.level() - 1;
       level >= 1 && level_cuts.size() < parts * kOversample && !below.empty() &&
       below.size() <= kMaxNodesPerLevel;
       --level) {
    std::vector<std::string> next_cuts;
    std::vector<PageId> next_below;
    for (PageId id : below) {
      PageHandle handle;
      SM_TRY(FixNode(id, LatchMode::kShared, &handle));
      const Node node(handle.data());
      if (node.level() != level) {
        return Status::Corruption("page " + std::to_string(id.value()) + " is at level " +
                                  std::to_string(node.level()) + " where " + std::to_string(level) +
                                  " was expected");
      }
      ReadInnerNode(node, range, &next_cuts, level > 1 ? &next_below : nullptr);
    }
    // A deeper level holds the separators of the one above (as low fences) and more.
    level_cuts = std::move(next_cuts);
    below = std::move(next_below);
  }
  SM_DASSERT(std::is_sorted(level_cuts.begin(), level_cuts.end()));
  *cuts = PickEvenly(std::move(level_cuts), parts);
  return Status::OK();
}

}  // namespace sm::index
