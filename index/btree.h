// BTree: a B+-tree of variable-length keys and values over buffer-pool pages, and Cursor, its
// bidirectional range scan.
//
// Owns: the tree protocol above the node format (index/btree_node.h): descent, the record
// operations, structure changes, cursors and the invariant checker. Source files by concern:
//   btree.cc         Create/Open, descents, Lookup, Insert/Update/Upsert/Delete, key locks
//   btree_add.cc     Add: counters under increment locks
//   btree_split.cc   structure changes: split planning, root growth, node split, separator post
//   btree_cursor.cc  Cursor
//   btree_verify.cc  Verify and Stats
//   btree_wal.cc     the write-ahead logger (BtreeWal) and the redo/undo of its records
//
// Logging: every change goes through the tree's BtreeLogger (btree_hooks.h, logging contract):
// a record operation is logged as one record of the caller's transaction after the leaf
// changed; a structure change (root growth and a cascade of splits, whatever its height) is
// logged as ONE redo-only record holding the images of every page it changed, all of them kept
// latched until that record's LSN is stamped on each. A failed log call leaves no trace on any
// page. With no logger (the default) nothing is logged and page LSNs stay 0.
//
// Keys and values. Keys are byte strings ordered by memcmp (a proper prefix first); the empty key
// is allowed. A key is at most kMaxKeyBytes (1024) bytes and key + value + 2 at most
// SlottedPage::kMaxRecordBytes (1976): larger is InvalidArgument naming the limit.
//
// Large values. The tree stores no value larger than a record; a caller that keeps larger ones
// elsewhere writes a stub in their place with ExternalWrite::value_is_stub (btree_hooks.h), and
// the record is marked external (btree_node.h, kLeafExternalBit). The mark is logged with the
// record and kept by every move of it; a write reports the stub it replaced or removed, and a
// read hands a marked value to OpContext::external to expand, with the leaf still latched
// (NotSupported without one). Add refuses a marked record. Index kinds: every tree stores unique
// keys (Insert of a present key is Duplicate). A non-unique (secondary) index is built by the
// caller appending the primary key to the secondary key (KeyEncoder::AppendEncoded), which makes
// every entry unique while keeping all entries of one secondary key adjacent; a prefix scan [s,
// PrefixSuccessor(s)) finds them. BtreeOptions::unique records which kind the tree is (in the root)
// for the catalog's benefit; the tree itself behaves the same.
//
// Root. The root page id never changes (catalogs store it): when the root is full it grows by
// copying its contents into a new child and becoming an inner node one level up (GrowRoot), after
// which the child splits like any node.
//
// Deletes: a delete that empties its leaf then retires it (MergeEmptyLeaf, btree_merge.cc): the
// leaf's neighbour under the same parent takes over its key range and the leaf leaves the tree
// (a queue's emptied leaves would otherwise lie on every search for its head). A leaf that is
// its parent's only child, or its first with a non-empty right neighbour, stays, empty, and is
// reused by later inserts into its range; Verify accepts empty leaves (Stats counts them).
// Nodes never merge otherwise, inner nodes are never retired (one may keep only its leftmost
// child), the tree's height never shrinks, and pages are never given back to the volume while
// the tree is in use: a retired page is kept for the tree's own splits to reuse while the tree
// object lives, and handed to sm/api at Close (TakeRetiredPages), which frees it; after a
// crash it is allocated in no tree, and the next Open gives it back (sm/api drop.cc, which
// learns the tree's pages from ForEachPage).
//
// Concurrency protocol (latches are the buffer pool's frame latches, fiber-aware):
//   1. Readers latch-couple down with shared latches: the child is latched before the parent is
//      released. Lookups and cursors hold one leaf (plus, when stepping right, its right sibling).
//   2. Writers first descend optimistically the same way, latching only the leaf exclusively. If
//      the change fits in the leaf it is done there: no ancestor is latched exclusively.
//   3. Otherwise they release everything and descend again pessimistically: first with shared
//      latches down to level 1 and exclusive ones on the leaf's parent and the leaf; if the split
//      would have to reach above the parent, once more with exclusive latches from the root.
//      Exclusively latched ancestors are released whenever the node just latched is safe (a leaf
//      that takes the change, an inner node that takes any separator). The retained nodes are
//      exactly those a split cascade changes; the cascade is planned read-only, its pages
//      allocated, and then executed top-down (btree_split.cc). So the root is latched
//      exclusively only when a level-1 node splits. Restarts are loops, never unwinding.
//   4. Hence a node's key range changes only while its parent (for the root: itself) is latched
//      exclusively, and a reader coupling from the parent always lands on the node covering its
//      key: no right moves are needed during descent. Right-sibling (B-link) pointers serve range
//      scans and next-key lookups.
//   5. Latch order is (level descending, then key ascending): every acquisition goes down from a
//      latched parent or right from a latched sibling, so latching cannot deadlock. Backward
//      scans never latch leftwards: they re-descend for the key below a leaf's low fence.
//   6. No latch is held while a fiber waits for a key lock (btree_hooks.h); a buffer-pool read
//      may suspend a fiber that holds latches on the path above it, as latch coupling implies.
//      Key locks are asked for under the leaf latch, after the search that decides what the
//      operation does; if one must be waited for, the operation releases its latches, waits and
//      restarts from the root, searching again (locking contract 1). An insertion checks the
//      gap (kInsertNext) before it locks its key (kWrite); Update and Delete lock their key
//      before the descent.
//   7. CTX points (threads/ctx_point.h) sit where the fiber holds only shared latches or none:
//      "btree.descend.inner" (per inner level visited), "btree.leaf.search", "btree.leaf.copy_out",
//      "btree.insert.leaf", "btree.update.leaf", "btree.delete.leaf" (before the leaf is latched
//      exclusively), "btree.split" (before a pessimistic descent), "btree.cursor.seek",
//      "btree.cursor.next".
//
// Leaf hints. A point operation given a LeafHint (OpContext::hint) skips the descent when the
// leaf it remembers still covers the key: transactions mostly revisit the leaf they just used
// (a read for update, then the update; consecutive inserts into one leaf). Lookup and the
// optimistic stage of Insert/Update/Upsert/Delete (FixHintedLeaf):
//   a. compare the key's first 8 bytes with those of the fences kept in the hint (KeyPrefix),
//      without latching anything: a hint that cannot cover the key (a random lookup elsewhere)
//      costs two integer comparisons. Strictly inside: the key is inside the fences; equal to
//      one: maybe (decided in c);
//   b. mark the leaf's CTX site as the descent would, then fix the remembered page directly in
//      the leaf mode (shared, or exclusive for a write). Nothing else is latched at that moment,
//      so protocol 5's order holds trivially;
//   c. use it only if it is still a leaf of this tree (page type, tree_root, level 0, format
//      version, as Cursor::FromHint checks) and either its version is the remembered one (so
//      its fences are those whose prefixes the hint keeps) with the key strictly inside them,
//      or it covers the key (Node::Covers, the exact test); else release it and descend from
//      the root. From then on the operation is the descent's: the same searches, the same key
//      locks and restarts (a lock wait restarts through the hint again), the same leaf CTX
//      sites; only "btree.descend.inner" is not passed.
// Why a page that passes (c) is the leaf for the key: a node's key range changes only under its
// exclusive latch, which the check holds at least shared, and every change bumps the node's
// version (Node::Format keeps counting). A hint is used only by the BTree object that filled it
// (LeafHint::tree is its instance_id, unique in the process: a tree opened again, or a new tree
// whose root reuses a freed page id, is another object). That tree's pages are never freed
// while it can be operated on (see "Deletes"; sm/api gives a dropped tree's pages back only once
// no operation can reach it), so the remembered page is still this tree's node, a page it
// retired (tree_root 0: rejected) or a retired page its split reused as another node (its
// version moved on, so the exact test decides); tree_root and the page type are checked, as a
// cursor does, and reject any other page.
// Refreshing (RememberLeaf): writes and reads for update remember the leaf they used whatever
// the outcome, a write that split the half that took the record; the pessimistic stage never
// uses a hint. A plain Lookup refreshes the hint only if it used it: one that descended leaves
// the hint to the caller's writes, and a random lookup elsewhere costs only the test of (a).
// Counts are kept in the hint itself (hits, misses): a shared counter bumped by every operation
// would bounce its cache line between the workers, which the rare events of BtreeCounters do
// not.
//
// Miss interleaving (BtreeOptions::miss_interleaving; the software prefetching and switching of
// Psaropoulos et al., "Interleaving with Coroutines", VLDB 2017, on this runtime's fibers). In a
// tree far larger than the CPU caches, a point operation's time is mostly the misses of the leaf
// it reads: the frame's line (latch), the page's header and slot directory, the record, each
// waited for in turn. A descent that has found the leaf's frame in its parent's ChildHints asks
// for the frame's line and the page's first kInterleavePrefetchLines lines (the header and the
// slot directory of a leaf of up to about 50 records) and then yields to the worker's other ready
// fibers, which do their own work meanwhile, typically the same up to their own yield; when it
// runs again the lines are there. A point lookup then searches the leaf's slot directory by the
// key heads alone, asks for the record the search will end at (the records lie behind the
// directory, in lines not yet asked for), and yields once more before the search that compares
// it. It yields only on a worker's fiber that holds no exclusive
// latch (the parent is latched shared: a writer of it waits as for any reader) and is in no
// STEPS team (its CTX points switch instead, and a yield would make it a stray). A yield costs a
// scheduler round trip (bench_switch's scheduler_roundtrip_ns): in a tree whose leaves are in
// the CPU cache anyway it only gives the core to another transaction, which is why it is off by
// default (tpcc run's throughput_tx_per_s at one warehouse with --miss-interleaving on against
// off).
//
// Contention split (LeanStore's; Alhomssi and Leis, CIDR 2021). Writers of DIFFERENT records that
// share a leaf wait for one another at its exclusive latch, though no key lock makes them:
// page-level false sharing (TPC-C's district rows, all in one leaf, updated by every Payment and
// New-Order, convoyed two workers' fibers on that latch). Such a leaf is split between the hot
// records although it is not full. The signal is the buffer pool's: the leaf's exclusive fix found
// its latch held and waited (PageHandle::latch_waited, set only on the waiting path). Each
// finished optimistic write whose fix waited counts, in the frame's in-memory words
// (FrameContention, like the owner hint: never logged, zero when the frame gets a page), if it
// changed a record other than the previous write that waited (the waits of two workers alternate,
// so most likely each waited for the other); waits for the same record are lock contention no
// split removes. A write that did not wait costs one test and touches nothing. When
// kContentionSplitThreshold such writes fall within kContentionWindowWrites changes of the leaf
// (counted by its node version, so that no count is kept per write; BtreeOptions can change the
// threshold or turn the split off), the write, once it has finished and released its latches,
// splits the leaf (ContentionSplit, btree_split.cc): a pessimistic descent to the leaf covering
// its key, then the split at the written record, on the side of the previous waiting write's
// record: the right half starts at the written record if that one was to its left, else right
// after it. Nothing happens if that point is an end of the leaf now (fewer than two records, or
// records moved since) or a half would not fit with its new fence. It is an ordinary structure
// change (SplitPath with a given leaf plan: parent posting, cascades, root growth, one redo-only
// record), so it is crash-safe as any split, and its failure is not the write's. Counted in
// BtreeCounters::contention_splits (also in leaf_splits). Space: each split separates records that
// stay apart, so a tree of n records takes at most n - 1 of them.
//
// Thread/fiber safety: a BTree may be used concurrently from fibers on any worker and from plain
// threads. A Cursor belongs to one fiber or thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "index/btree_hooks.h"
#include "index/btree_node.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "threads/ctx_point.h"

namespace sm::index {

// Contention split (file comment): a leaf splits once this many writes that waited for its
// latch changed a record other than the previous write that waited, within a window of
// kContentionWindowWrites changes of the leaf.
inline constexpr uint16_t kContentionSplitThreshold = 8;
inline constexpr uint16_t kContentionWindowWrites = 1024;

// Miss interleaving ("Miss interleaving" in the file comment).
enum class MissInterleaving : uint8_t {
  kOff,
  kOn,
  kAdaptive,  // each worker measures whether it pays (InterleaveChooser) and chooses
};

struct BtreeOptions {
  // Create: whether the tree is a unique index (see the file comment); Open reads it from the
  // root and ignores this field.
  bool unique = true;
  // Null: a NullBtreeLogger, which logs nothing. Must outlive the tree.
  BtreeLogger* logger = nullptr;
  // Contention split (file comment): the threshold; 0 turns contention splits off.
  uint16_t contention_split_threshold = kContentionSplitThreshold;
  // Deletes retire the leaves they empty ("Deletes"); false keeps them in the tree (tests of
  // the code that steps over empty leaves).
  bool retire_empty_leaves = true;
  // Miss interleaving ("Miss interleaving" in the file comment): a descent about to fix a leaf
  // whose frame its parent remembers prefetches it and yields to the worker's other ready
  // fibers first.
  MissInterleaving miss_interleaving = MissInterleaving::kOff;
  // Tests: every write at a leaf counts as having waited for its latch.
  bool test_every_write_waited = false;
};

struct BtreeStats {
  uint32_t height = 0;                    // levels, leaves included (1 for a root leaf)
  std::vector<uint64_t> pages_per_level;  // index 0: leaves
  uint64_t records = 0;                   // leaf records
  uint64_t empty_leaves = 0;
  uint64_t key_bytes = 0;  // leaf keys
  uint64_t value_bytes = 0;
  uint64_t free_bytes = 0;  // FreeBytes summed over all nodes
  uint64_t pages() const {
    uint64_t n = 0;
    for (uint64_t p : pages_per_level) n += p;
    return n;
  }
};

struct VerifyOptions {
  // If valid: every page LSN must be <= this (e.g. the log's end). Invalid: not checked.
  Lsn max_page_lsn = Lsn::Invalid();
  // If set, the id of every page of the tree is appended (after a successful walk), so that a
  // caller can compare the trees with the volume's allocation map.
  std::vector<PageId>* pages = nullptr;
};

// Event counts since Open (relaxed counters; for tests and statistics).
struct BtreeCounters {
  uint64_t pessimistic_descents = 0;     // writes that restarted to split (either stage)
  uint64_t root_exclusive_descents = 0;  // of those, with exclusive latches from the root
  uint64_t leaf_splits = 0;
  uint64_t inner_splits = 0;
  uint64_t root_grows = 0;
  uint64_t lock_waits = 0;         // TryLockKey said Busy: latches dropped, LockKey waited
  uint64_t contention_splits = 0;  // of leaf_splits, contention splits (file comment)
  uint64_t leaf_merges = 0;        // empty leaves retired (file comment, "Deletes")
  uint64_t pages_reused = 0;       // retired pages that splits took as new nodes
};

class Cursor;

// A leaf remembered for one caller's point operations on one tree (see "Leaf hints" above).
// Filled and refreshed by the BTree; the caller only creates it (empty), keeps it with whatever
// it belongs to (a transaction keeps one per table) and passes it in OpContext::hint. A stale or
// foreign hint is never wrong, only useless: every use checks it against the page.
// Thread/fiber safety: none; one operation at a time uses a hint.
// The parent of leaves (a level-1 node) that a PrefetchLeaf last descended through, for the
// next one of a batch. A page id, where its frame was, and the KeyPrefix of its fences then: a
// key outside them is sent to the root without a fix (the usual miss); one inside is used
// only after the node is fixed and found to be still this tree's level-1 node covering it.
// Modify's edit of a value in place: the value's bytes and their count.
using ValueEdit = std::function<void(char* value, size_t size)>;

struct ParentHint {
  uint64_t tree = 0;  // BTree::instance_id() of the tree that filled it; 0: empty
  PageId page;
  buffer::FrameHint frame = nullptr;
  uint64_t low_prefix = 0;
  uint64_t high_prefix = 0;  // 0 and meaningless when high_infinite
  bool high_infinite = false;
};

struct LeafHint {
  uint64_t tree = 0;  // BTree::instance_id() of the tree that filled it; 0: empty
  PageId leaf;
  buffer::FrameHint frame = nullptr;  // where the leaf was (BufferPool::FixHinted)
  uint64_t version = 0;               // the leaf's Node::version() when last used
  // Filled by BTree::PrefetchLeaf from the leaf's parent: its version and fences are unknown,
  // and the leaf is not known to cover the key until its search finds the key there (its
  // fences, elsewhere in the page, would cost a miss of their own).
  bool ahead = false;
  // KeyPrefix of the leaf's fences then (unchanged while the version is); high_prefix is 0
  // and meaningless when high_infinite.
  uint64_t low_prefix = 0;
  uint64_t high_prefix = 0;
  bool high_infinite = false;
  // Statistics: operations that used the leaf; that descended instead (of those, `rejected`
  // fixed the page first and found it no longer covers the key).
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t rejected = 0;

  // The leaf `other` names, with what it knows of it (not its statistics).
  void TakeLeafFrom(const LeafHint& other) {
    ahead = other.ahead;
    tree = other.tree;
    leaf = other.leaf;
    frame = other.frame;
    version = other.version;
    low_prefix = other.low_prefix;
    high_prefix = other.high_prefix;
    high_infinite = other.high_infinite;
  }
  void Clear() {
    ahead = false;
    tree = 0;
    leaf = PageId();
    frame = nullptr;
  }
};

// The first 8 bytes of `key` as a big-endian integer, zero-padded: a <= b (memcmp order, a
// proper prefix first) implies KeyPrefix(a) <= KeyPrefix(b), so KeyPrefix(a) < KeyPrefix(b)
// implies a < b. What a LeafHint keeps of a fence: eight bytes decide most comparisons of
// short keys (TPC-C's are 2 to 8 bytes long, but for the customer-name index) at the cost of
// two integer compares, and keeping them costs two loads where copying the fences cost two
// string copies.
inline uint64_t KeyPrefix(std::string_view key) {
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  size_t n = key.size();
  uint64_t word;
  if (n >= 8) {
    std::memcpy(&word, p, sizeof(word));
    return __builtin_bswap64(word);
  }
  if (n >= 4) {  // the first four and the last four bytes (they overlap), zero-padded
    uint32_t first;
    uint32_t last;
    std::memcpy(&first, p, sizeof(first));
    std::memcpy(&last, p + n - 4, sizeof(last));
    uint64_t tail = __builtin_bswap32(last) & ((uint64_t{1} << (8 * (n - 4))) - 1);
    return (uint64_t{__builtin_bswap32(first)} << 32) | (tail << (8 * (8 - n)));
  }
  if (n == 0) return 0;
  // The first, middle and last byte (n = 1: one byte thrice; 2: the last twice), the bytes
  // beyond the key masked off.
  uint64_t three = (uint64_t{p[0]} << 16) | (uint64_t{p[n / 2]} << 8) | p[n - 1];
  return (three & (0xffffffu << (8 * (3 - n)))) << 40;
}

// Types private to the btree*.cc files (defined in btree_internal.h and btree_verify.cc).
namespace btree_internal {
struct LockWait;
struct PendingEntry;
struct SplitPlan;
struct LevelSplit;
struct VerifyState;
}  // namespace btree_internal

struct ScanRange;

class BTree {
 public:
  // Allocates and formats an empty root leaf; *root_page_id receives its id.
  [[nodiscard]] static Status Create(buffer::BufferPool* pool, const BtreeOptions& options,
                                     PageId* root_page_id, std::unique_ptr<BTree>* tree);
  // Opens the tree rooted at root_page_id: InvalidArgument if that page is not a B-tree root.
  [[nodiscard]] static Status Open(buffer::BufferPool* pool, PageId root_page_id,
                                   const BtreeOptions& options, std::unique_ptr<BTree>* tree);

  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  PageId root_page_id() const { return root_id_; }
  // Unique among the BTree objects of the process (never 0): whose a LeafHint is.
  uint64_t instance_id() const { return instance_id_; }
  bool unique() const { return unique_; }

  // NotFound if absent; *value receives a copy. The key is read-locked (kRead), or, with
  // for_update, write-locked (kWrite) as the update that follows will need: two transactions
  // that read a row to update it then wait for each other at the read instead of both
  // holding S and deadlocking on the upgrade. An absent key is read-locked as always (kReadNext).
  // A plain read takes neither lock when the hook says the leaf's rows are committed
  // (KeyLockHook::ReadsCommittedWithoutLocks: read committed, and a leaf with no uncommitted
  // change).
  [[nodiscard]] Status Lookup(std::string_view key, std::string* value, const OpContext& ctx = {},
                              bool for_update = false) const;
  // The first stage of a batched lookup: descends (latching inner nodes shared, locking
  // nothing) to the parent of the leaf that covers `key`, fills *hint with that leaf and its
  // frame, and starts loading the frame's line and the page's first lines without fixing it.
  // A Lookup of the key with the hint a few lookups later finds them in the cache; whatever
  // happened to the leaf meanwhile, it uses the leaf only if the key's record is there (an
  // exact key lies in one leaf only), and descends otherwise. A root leaf leaves the hint empty.
  // With `parent`, the descent starts at the parent it names when that node still covers the
  // key (a batch of sorted keys shares parents), and *parent then names the parent it used.
  [[nodiscard]] Status PrefetchLeaf(std::string_view key, LeafHint* hint,
                                    ParentHint* parent = nullptr) const;
  // Duplicate if the key is present (then read-locked: kRead).
  [[nodiscard]] Status Insert(std::string_view key, std::string_view value,
                              const OpContext& ctx = {});
  // NotFound if absent.
  [[nodiscard]] Status Update(std::string_view key, std::string_view value,
                              const OpContext& ctx = {});
  // An update that edits the record's value in place: `edit` gets a copy of the value (its
  // size cannot change) under the leaf's exclusive latch, after the key is locked as Update
  // locks it, and what it leaves there is written and logged as the new value. It may be
  // called again if the write must restart, on the same bytes. NotFound if absent;
  // NotSupported for a large (external) value.
  [[nodiscard]] Status Modify(std::string_view key, const ValueEdit& edit,
                              const OpContext& ctx = {});
  // Inserts or replaces.
  [[nodiscard]] Status Upsert(std::string_view key, std::string_view value,
                              const OpContext& ctx = {});
  // NotFound if absent.
  [[nodiscard]] Status Delete(std::string_view key, const OpContext& ctx = {});
  // Adds `delta` to the counter at value bytes [offset, offset + 8), a little-endian int64_t,
  // in one exclusive hold of the leaf (btree_add.cc). The key is locked kIncrement before the
  // descent: adders of one key share it. *value (if not null) receives the value after the
  // addition. NotFound if absent (its gap read-locked, as Update's); InvalidArgument if the
  // counter lies outside the value, or, with AddOverflow::kError, the sum leaves int64_t:
  // then nothing changes. kWrap wraps instead (undo: subtracting an addition again is exact
  // whatever other transactions added meanwhile).
  enum class AddOverflow : uint8_t { kError, kWrap };
  [[nodiscard]] Status Add(std::string_view key, uint32_t offset, int64_t delta,
                           std::string* value, const OpContext& ctx = {},
                           AddOverflow overflow = AddOverflow::kError);

  // Checks every invariant of btree_node.h over the whole tree, holding the root latch shared
  // throughout (so no structure change runs meanwhile; leaf updates may). Corruption names the
  // page and the reason. Fills *stats if given.
  [[nodiscard]] Status Verify(BtreeStats* stats = nullptr, const VerifyOptions& options = {}) const;
  // The Stats part of Verify (it runs the same walk).
  [[nodiscard]] Status GetStats(BtreeStats* stats) const { return Verify(stats); }
  // Calls visit(id) once for every page of the tree, the root first. Reads the inner nodes
  // only (a leaf's id is in its parent), a level at a time. For a tree nothing changes
  // meanwhile (Open, before any transaction): it latches one node at a time. Corruption if a
  // node is not the tree's or not one level below its parent.
  [[nodiscard]] Status ForEachPage(const std::function<void(PageId)>& visit) const;
  BtreeCounters counters() const;

  // Up to parts - 1 ascending keys, each strictly inside `range`, that cut it into parts of
  // about equal numbers of subtrees: separators of the highest inner level with enough of them
  // inside the range, at most level 1 (whose separators bound leaves), chosen evenly among
  // them. For splitting a scan among threads: any keys cut the range correctly; these make
  // the parts even and give each part leaves of its own. Holds the root latch shared while it
  // reads the inner nodes (no structure change meanwhile; leaves are not read). Fewer cuts
  // when the range spans fewer leaves (none for a root leaf or parts <= 1).
  [[nodiscard]] Status SplitRange(const ScanRange& range, size_t parts,
                                  std::vector<std::string>* cuts) const;

  // InvalidArgument (naming the limit) if key or key + value exceed the limits.
  [[nodiscard]] static Status CheckKey(std::string_view key);
  [[nodiscard]] static Status CheckRecord(std::string_view key, std::string_view value);

  // Hands over the retired pages this tree keeps for reuse (btree_merge.cc), for a caller to
  // give back to the volume once no operation, hint or cursor can reach the tree (Close).
  std::vector<PageId> TakeRetiredPages();

 private:
  friend class Cursor;
  enum class WriteOp : uint8_t { kInsert, kUpdate, kUpsert, kDelete };
  using LockWait = btree_internal::LockWait;
  using PendingEntry = btree_internal::PendingEntry;
  using SplitPlan = btree_internal::SplitPlan;
  using LevelSplit = btree_internal::LevelSplit;
  using VerifyState = btree_internal::VerifyState;
  // Exclusively latched nodes of a pessimistic descent, top (a safe node or the root) first.
  using Path = std::vector<buffer::PageHandle>;

  BTree(buffer::BufferPool* pool, PageId root, bool unique, const BtreeOptions& options);

  // --- descent (btree.cc) ---
  // Fixes a node of this tree: Corruption if the page is not one. hint: where the page may
  // be (BufferPool::FixHinted).
  Status FixNode(PageId id, threads::LatchMode mode, buffer::PageHandle* handle,
                 buffer::FrameHint hint = nullptr) const;
  // FixNode of the root, through root_hint_ (and updating it).
  Status FixRoot(threads::LatchMode mode, buffer::PageHandle* root) const;
  // FixNode of the parent's child `index` (child_id), through the parent's child hints (and
  // updating them): a descent then finds each node without the page table. Corruption (the
  // child released) unless the child is one level below the parent.
  Status FixChild(const buffer::PageHandle& parent, uint16_t index, PageId child_id,
                  threads::LatchMode mode, buffer::PageHandle* child) const;
  // Latch-couples from the root to the leaf for `target` (inner nodes shared, the leaf in
  // leaf_mode). leaf_site, if given, is marked just before the leaf is latched.
  // *interleaved (if given): whether the descent interleaved before the leaf.
  Status DescendToLeaf(std::string_view target, SearchMode mode, threads::LatchMode leaf_mode,
                       threads::CtxSite* leaf_site, buffer::PageHandle* leaf,
                       bool* interleaved = nullptr) const;
  // Miss interleaving (file comment): before the descent fixes child `index` of `parent`, a
  // leaf.
  void InterleaveBeforeLeaf(const buffer::PageHandle& parent, uint16_t index) const;
  // Miss interleaving, a lookup's second step: before the search of `leaf` for `key`.
  static void InterleaveBeforeRecord(const buffer::PageHandle& leaf, std::string_view key);
  // Gives the worker to its other ready fibers, if this fiber may yield (file comment).
  static void YieldForMisses();
  // Whether this descent interleaves (miss_interleaving_ kOn or kAdaptive).
  bool InterleaveNow() const;
  static constexpr size_t kInterleavePrefetchLines = 8;
  // Leaf hints (file comment): fixes the hinted leaf in `mode` if it is still the leaf for
  // `key` (leaf_site, if given, is marked just before); *fences_known: its version is the
  // remembered one, so the hint's fences are current. False: nothing is held; descend. A hint
  // filled ahead (LeafHint::ahead) passes with any usable leaf: the caller checks that the leaf
  // holds the key.
  // Fixes the node `parent` names, shared, if it is still this tree's level-1 node covering
  // `key`; false (nothing fixed) otherwise.
  bool FixHintedParent(std::string_view key, const ParentHint& parent,
                       buffer::PageHandle* node) const;
  // Names the level-1 `node` in *parent, with its fences' prefixes.
  void RememberParent(const buffer::PageHandle& node, ParentHint* parent) const;
  // Inline (btree.cc): the test without latching; FixHintedPage does the rest.
  bool FixHintedLeaf(std::string_view key, threads::LatchMode mode, threads::CtxSite* leaf_site,
                     LeafHint* hint, buffer::PageHandle* leaf, bool* fences_known) const;
  bool FixHintedPage(std::string_view key, bool inside, threads::LatchMode mode,
                     threads::CtxSite* leaf_site, LeafHint* hint, buffer::PageHandle* leaf,
                     bool* fences_known) const;
  // Refreshes the hint with the latched `leaf` (fences_known: FixHintedLeaf said so, and
  // nothing has changed the fences since).
  void RememberLeaf(const buffer::PageHandle& leaf, bool fences_known, LeafHint* hint) const;
  // The optimistic stage of a write (Write, Add): the key's leaf latched exclusively, through
  // `hint` when it still names it, else by descent (site marks the leaf's fix). With a hint
  // whose fences are not known, they start loading (the write's RememberLeaf reads them).
  Status FixLeafForWrite(std::string_view key, threads::CtxSite* site, LeafHint* hint,
                         buffer::PageHandle* leaf, bool* fences_known) const;
  // Descent that latches the nodes at levels <= x_level exclusively (those above shared, with
  // coupling) and retains the unsafe suffix of the exclusive part (protocol 3).
  Status DescendPessimistic(std::string_view key, size_t leaf_record_bytes, uint16_t x_level,
                            Path* path);

  // --- record operations (btree.cc) ---
  // `edit`: Modify's (op is kUpdate, value is empty).
  Status Write(WriteOp op, std::string_view key, std::string_view value, const OpContext& ctx,
               const ValueEdit* edit = nullptr);
  // One attempt at the leaf. *retry says what to do instead of finishing: latch more levels
  // exclusively (the leaf must split but the retained path cannot absorb the split) or wait
  // for a lock.
  enum class Retry : uint8_t { kNone, kPessimistic, kLockWait };
  // *written: the index of the record changed (inserted, updated or erased), set only once
  // the change succeeded; untouched otherwise. `prefetched`: KeyLockRequest::prefetched of `key`.
  Status WriteAtLeaf(WriteOp op, std::string_view key, std::string_view value,
                     uint64_t prefetched, const OpContext& ctx, const ValueEdit* edit,
                     buffer::PageHandle* leaf, Path* path, Retry* retry, LockWait* wait,
                     uint16_t* written);
  // The key locks a write takes at its exclusively latched leaf, given whether the key is at
  // `index` (found) or would go there (btree_hooks.h, locking 3): an insertion kInsertNext and
  // then kWrite; an Upsert that found the key kWrite; an Insert that found it kRead; a Delete
  // that found it kDeleteNext; an Update or Delete that did not, kReadNext. Same answers as
  // TryLockAt.
  // `prefetched`: KeyLockRequest::prefetched of `key`.
  Status LockAtLeaf(WriteOp op, std::string_view key, uint64_t prefetched, const OpContext& ctx,
                    buffer::PageHandle& leaf, uint16_t index, bool found, LockWait* wait) const;
  Status ApplyInsert(buffer::PageHandle& leaf, uint16_t index, std::string_view key,
                     std::string_view value, const OpContext& ctx);
  Status ApplyUpdate(buffer::PageHandle& leaf, uint16_t index, std::string_view key,
                     std::string_view value, const OpContext& ctx);
  Status ApplyDelete(buffer::PageHandle& leaf, uint16_t index, std::string_view key,
                     const OpContext& ctx);
  // Add's work at its exclusively latched leaf (btree_add.cc); wait->pending: a lock must be
  // waited for first. *written: the index of the record changed, if any.
  Status AddAtLeaf(std::string_view key, uint32_t offset, int64_t delta, AddOverflow overflow,
                   std::string* value, const OpContext& ctx, buffer::PageHandle& leaf,
                   LockWait* wait, uint16_t* written);
  void Stamp(buffer::PageHandle& page, Lsn lsn);
  // Contention split (file comment): where the other contender's record is, for a leaf that
  // should split at a written record (kNone: no split is due).
  enum class Contender : uint8_t { kNone, kLeft, kRight };
  // Counts a finished write of record `index` at the exclusively latched `leaf` whose fix
  // waited for the latch (out of the write's code path: a write that did not wait costs a test).
  [[gnu::cold]] Contender NoteContendedWrite(const buffer::PageHandle& leaf, uint16_t index);
  // After a write that changed record `written` of `leaf` (UINT16_MAX: none) in its optimistic
  // stage: the contention split due, if the fix waited for the latch, and the hint refreshed.
  Contender AfterOptimisticWrite(const buffer::PageHandle& leaf, uint16_t written,
                                 bool fences_known, LeafHint* hint);
  // With no latch held: splits the leaf covering `key` between the key's record and its
  // neighbour on the contender's side, as an ordinary structure change; nothing if that leaf
  // has no such point (fewer than two records, an end of the leaf, halves that do not fit).
  Status ContentionSplit(std::string_view key, bool contender_left);
  // ContentionSplit for a write that has finished: its failure is not the write's.
  [[gnu::cold]] void SplitContendedLeaf(std::string_view key, Contender contender);
  // With no latch held: retires the leaf covering `key` if it is empty (btree_merge.cc).
  Status MergeEmptyLeaf(std::string_view key);
  // A retired page for a split (or an invalid id if none is kept), and its return if unused.
  PageId TakeRetiredPage();
  void KeepRetiredPage(PageId id);
  // Whether a delete left the latched `leaf` empty, and not the root (which stays).
  static bool LeftEmpty(const buffer::PageHandle& leaf) {
    Node node(leaf.data());
    return node.count() == 0 && !node.is_root();
  }
  // MergeEmptyLeaf for a delete that has finished: its failure is not the delete's.
  [[gnu::cold]] void RetireEmptyLeaf(std::string_view key);

  // --- key locks (btree.cc) ---
  // Asks the hook for the key at `index` of the latched leaf (or the first key after the leaf,
  // found by stepping right, or end of index). Granted or no hook: OK, wait untouched. Would
  // wait: OK with *wait filled. Other errors are returned.
  // `prefetched`: KeyLockRequest::prefetched, if the caller knows the key at `index`.
  Status TryLockAt(const OpContext& ctx, buffer::PageHandle& leaf, uint16_t index,
                   KeyLockPurpose purpose, LockWait* wait, uint64_t prefetched = 0) const;
  // The same for a request naming its key.
  Status TryLock(const OpContext& ctx, const KeyLockRequest& request, LockWait* wait) const;
  // With no latch held: waits for the lock TryLock could not grant.
  Status WaitForLock(const OpContext& ctx, const LockWait& wait) const;
  // The first key after the records of `leaf` (right siblings, skipping empty leaves;
  // end_of_index if none). The empty leaves stepped over to find it are
  // left latched in *passed, so that no insertion into the gap they hold can check its
  // kInsertNext lock on that key before the caller has locked it (see Cursor::Forward).
  Status KeyAfterLeaf(const buffer::PageHandle& leaf, std::string* key, bool* end_of_index,
                      std::vector<buffer::PageHandle>* passed) const;

  // --- structure changes (btree_split.cc) ---
  // path->back() cannot take `pending`. Splits the retained path as needed (growing the root if
  // it is full), logs the whole change as one record, and leaves in *path only the leaf half
  // that takes the entry (every other latch released). *escalate (nothing changed): the split
  // would reach above path->front(), which is not the root. An error: nothing changed either.
  // leaf_plan, if given, is the leaf's split (a contention split's); else PlanSplit plans it.
  Status SplitPath(Path* path, const PendingEntry& pending, const SplitPlan* leaf_plan,
                   bool* escalate);
  Status PlanPath(const Path& path, const PendingEntry& pending, const SplitPlan* leaf_plan,
                  std::vector<LevelSplit>* plans, bool* grow_root, bool* escalate) const;
  // Plans a split of `node` that leaves both halves able to take `pending`; last_insert is the
  // node's frame's owner hint (the index of the last insert into it, plus one; 0: unknown).
  // Corruption if no split point works, which the capacity static_asserts of btree_node.h rule
  // out for a well-formed node.
  static Status PlanSplit(const Node& node, PageId page_id, const PendingEntry& pending,
                          uint16_t last_insert, SplitPlan* plan);
  // Plans the contention split of `leaf` next to the position of `key` (ContentionSplit);
  // false if there is no such point. *pending: the key's record, for SplitPath.
  static bool PlanContentionSplit(const Node& leaf, std::string_view key, bool contender_left,
                                  PendingEntry* pending, SplitPlan* plan);
  // Fixes `count` new pages (retired ones first), all or none (a failure keeps those already
  // taken for the next split).
  Status AllocatePages(size_t count, std::vector<buffer::PageHandle>* pages);
  // Pages a failed change did not link into the tree: retired again and kept for reuse.
  void KeepUnusedPages(std::vector<buffer::PageHandle>* pages);
  // The steps of a cascade; they change pages only (no logging, no stamping, no counters).
  void GrowRoot(buffer::PageHandle& root, buffer::PageHandle& child);
  void SplitNode(buffer::PageHandle& node, const SplitPlan& plan, buffer::PageHandle& right);
  void PostSeparator(buffer::PageHandle& parent, std::string_view separator,
                     const buffer::PageHandle& child);

  // --- verify (btree_verify.cc) ---
  Status VerifyNode(VerifyState& state, buffer::PageHandle& handle, uint32_t expected_level,
                    std::string_view low, const std::string* high) const;
  Status VerifyRecords(VerifyState& state, const buffer::PageHandle& handle, std::string_view low,
                       const std::string* high) const;
  Status VerifyChildren(VerifyState& state, buffer::PageHandle& handle) const;
  static Status VerifyLevels(const VerifyState& state);

  buffer::BufferPool* const pool_;
  const PageId root_id_;
  const uint64_t instance_id_;
  // The root's frame when it was last fixed (FixRoot); any value is safe.
  mutable std::atomic<buffer::FrameHint> root_hint_{nullptr};
  const bool unique_;
  BtreeLogger* const logger_;
  // A logger was given: record operations keep before-images for it, and structure changes
  // keep the before-images of the pages they change, to restore them if logging fails.
  const bool logs_;
  const uint16_t contention_threshold_;       // BtreeOptions::contention_split_threshold
  const bool retire_empty_leaves_;            // BtreeOptions::retire_empty_leaves
  const MissInterleaving miss_interleaving_;  // BtreeOptions::miss_interleaving
  const bool test_every_write_waited_;

  // Relaxed: statistics only.
  mutable std::atomic<uint64_t> pessimistic_descents_{0};
  mutable std::atomic<uint64_t> root_exclusive_descents_{0};
  mutable std::atomic<uint64_t> leaf_splits_{0};
  mutable std::atomic<uint64_t> inner_splits_{0};
  mutable std::atomic<uint64_t> root_grows_{0};
  mutable std::atomic<uint64_t> lock_waits_{0};
  mutable std::atomic<uint64_t> contention_splits_{0};
  mutable std::atomic<uint64_t> leaf_merges_{0};
  mutable std::atomic<uint64_t> pages_reused_{0};
  // Pages this tree retired since it was opened, for its splits to reuse (btree_merge.cc).
  threads::SpinLock retired_lock_;
  std::vector<PageId> retired_pages_;  // GUARDED_BY(retired_lock_)
};

// A bound of a scan range: none, or a key with inclusive/exclusive.
struct ScanBound {
  std::string key;
  bool inclusive = true;
  bool bounded = false;
  static ScanBound None() { return ScanBound{}; }
  static ScanBound Inclusive(std::string_view key) {
    return ScanBound{std::string(key), true, true};
  }
  static ScanBound Exclusive(std::string_view key) {
    return ScanBound{std::string(key), false, true};
  }
  // In place, keeping the key's capacity.
  void Set(std::string_view bound_key, bool is_inclusive) {
    key.assign(bound_key);
    inclusive = is_inclusive;
    bounded = true;
  }
  void Clear() {
    key.clear();
    inclusive = true;
    bounded = false;
  }
};

struct ScanRange {
  ScanBound lower;
  ScanBound upper;
};

// A bidirectional cursor over the keys of a range. It holds no latch between calls: it keeps a
// copy of the current key and value, and the leaf's page id, version and record index. The next
// call re-fixes that leaf and, if the leaf's version is unchanged, steps from the remembered
// index; if the leaf changed but still covers the key, it searches the leaf for the key; else it
// descends from the root for the key. So a concurrent change never invalidates a cursor: it
// continues after (Next) or before (Prev) its current key in the tree as it is then.
//
// Seek* and Next/Prev return a Status (I/O error, corruption, a lock error) and leave the
// cursor invalid when they fail or run out of range; Next/Prev on an invalid cursor is
// InvalidArgument.
class Cursor {
 public:
  explicit Cursor(const BTree* tree, ScanRange range = {}, OpContext ctx = {});

  // Makes this a new, unpositioned cursor over `tree` for `ctx` with an unbounded range, and
  // keeps the capacity of its buffers (the bounds' keys, the key and value copies): a caller
  // that scans often reuses one cursor and, once the buffers have grown, allocates nothing.
  // Bound the range with SetLower/SetUpper before the first Seek.
  void Reuse(const BTree* tree, OpContext ctx);
  void SetLower(std::string_view key, bool inclusive) { range_.lower.Set(key, inclusive); }
  void SetUpper(std::string_view key, bool inclusive) { range_.upper.Set(key, inclusive); }

  [[nodiscard]] Status SeekToFirst();                      // first key of the range
  [[nodiscard]] Status SeekToLast();                       // last key of the range
  [[nodiscard]] Status Seek(std::string_view key);         // first key >= key in the range
  [[nodiscard]] Status SeekForPrev(std::string_view key);  // last key <= key in the range
  [[nodiscard]] Status Next();
  [[nodiscard]] Status Prev();
  // Moves forward over up to `max_rows` rows, calling row(key, value) for each while its leaf
  // is latched (the views live only during the call, which must not use the tree), and stops
  // after a row for which `row` returns false; *visited: the rows passed to `row`. The rows
  // and locks are those of as many Next calls, but the rows after the current one in its leaf
  // are read under one latch, without a fix or a copy each, and without their kRead locks when
  // the hook says the leaf's rows are committed (KeyLockHook::ReadsCommittedWithoutLocks).
  // Afterwards the cursor is on the last row visited, or !Valid() at the end of the range.
  using RowFn = std::function<bool(std::string_view key, std::string_view value)>;
  [[nodiscard]] Status NextBatch(size_t max_rows, const RowFn& row, size_t* visited);

  bool Valid() const { return valid_; }
  std::string_view key() const { return key_; }
  std::string_view value() const { return value_; }

  // Called (with the target key) whenever a forward move has stepped right over a leaf's end,
  // with the leaves latched, before the key found is locked; empty: none. Set only while no
  // cursor moves (tests, to let an insertion race the scan there).
  static void TEST_SetStepRightHook(std::function<void(std::string_view)> hook);

 private:
  // Positions on the first key after (or at, if inclusive) target, within the range.
  Status Forward(std::string_view target, bool inclusive, bool hinted);
  // Positions on the last key before (or at, if inclusive) target; to_end: the last key.
  Status Backward(std::string_view target, bool inclusive, bool to_end, bool hinted);
  // Next/Prev from the current key (target, exclusive): fixes the remembered leaf and sets
  // *index to the first record after (forward) or the last before the target, if the leaf is
  // still a leaf of this tree that covers it; else *positioned = false and nothing is held.
  Status FromHint(std::string_view target, bool forward, buffer::PageHandle* leaf, int* index,
                  bool* positioned) const;
  // Takes a kReadNext lock on the first key after (at, if inclusive) target (or end of index).
  Status LockKeyAfter(std::string_view target, bool inclusive, bool to_end);
  // Locks the key at (leaf, index) for reading and, once granted, takes the record (Take);
  // if the lock would wait, *wait is filled and the cursor is unchanged.
  Status LockAndTake(const buffer::PageHandle& leaf, uint16_t index,
                     btree_internal::LockWait* wait);
  // Copies the record at (leaf, index) into the cursor, expanding a large value (value_taken:
  // value_ holds it already).
  Status Take(const buffer::PageHandle& leaf, uint16_t index, bool value_taken = false);
  // NextBatch's reading of the current leaf from `index`, under the latch `leaf` holds; *more:
  // the batch may go on (through Next: the leaf's end, the range's end or a lock wait).
  Status VisitLeaf(const buffer::PageHandle& leaf, int index, size_t max_rows, const RowFn& row,
                   size_t* visited, bool* more);
  bool AboveUpper(std::string_view key) const;
  bool BelowLower(std::string_view key) const;

  const BTree* tree_;
  ScanRange range_;
  OpContext ctx_;
  bool valid_ = false;
  std::string key_;
  std::string value_;
  std::string target_;  // scratch: the key a step starts from
  PageId leaf_id_;
  buffer::FrameHint leaf_frame_ = nullptr;  // where leaf_id_ was: Next fixes it without the table
  uint64_t leaf_version_ = 0;
  uint16_t index_ = 0;
};

}  // namespace sm::index
