// B+-tree seams for the layers wired in later: write-ahead logging (BtreeLogger) and key-range
// locking (KeyLockHook), each with a no-op default, and the per-operation context that carries
// them.
//
// Owns: the contract between the tree and its logger / lock manager adapters: when each hook is
// called, which latches are held at that moment, and what the tree does with the answer.
//
// Logging contract (ARIES):
//   1. Record operations (insert, update, delete on a leaf) belong to the caller's transaction
//      (OpContext::txn). The tree calls LogInsert / LogUpdate / LogDelete right after changing
//      the leaf, with the leaf still latched exclusively, and stamps the returned LSN on the leaf
//      (SetPageLsn; Lsn::Invalid() leaves the page LSN alone). Update and delete pass the
//      before-image for undo. If the call fails (e.g. LogFull), the tree reverts the leaf change
//      under the same latch and returns the error: nothing unlogged stays on the page.
//   2. Structure changes (root growth, splits, the separator posted into the parent) are
//      redo-only system transactions: BeginStructureChange opens one (it may fail, e.g. no log
//      space reservable; then nothing has changed and the operation returns the error), each
//      step is logged with LogGrowRoot / LogSplit / LogPostSeparator (the returned LSN is stamped
//      on every page the step changed), and EndStructureChange closes it. The record operation
//      that needed the split runs after EndStructureChange, in the user transaction: undo of an
//      insert then deletes the key wherever it lives by then, never reverses the split.
//   3. Every hook is called with exclusive latches held on the pages it names (and possibly on
//      their ancestors), so it must not wait for anything but inserting into the log buffer: no
//      log flush, no lock, no I/O.
//   4. LogFormatRoot is called once by BTree::Create with the new root latched.
//
// Locking contract (ARIES/KVL-style next-key locking; the lock modes are the hook's business):
//   1. KeyLockHook::TryLockKey is called with a leaf latched (shared or exclusive) and must not
//      wait: OK means granted, Busy means "would wait". On Busy the tree copies the request,
//      releases every latch, calls LockKey (which may suspend the fiber), and then restarts the
//      operation from the root; a lock granted that way stays held (the next TryLockKey of the
//      same key by the same transaction is expected to succeed at once). Any other error ends the
//      operation with that error (deadlock victim, lock timeout).
//   2. LockKey is also called directly, with no latch held, for kWrite before a modification
//      descends.
//   3. Requests (purpose -> key):
//        kWrite       the key being inserted, updated or deleted (before the descent)
//        kInsertNext  the first key after an insertion point (or end of index)
//        kDeleteNext  the first key after a deleted key (or end of index)
//        kRead        a key Lookup found, or a key a cursor returns
//        kReadNext    Lookup of an absent key, Update/Delete that found nothing: the first key
//                     after the searched one; a cursor: the first key after its range (for a
//                     backward scan, taken when it is positioned at the upper end). Together
//                     with kRead this protects every gap a scan or a failed lookup observed.
//      end_of_index is set (key empty) when no key follows: the lock covers the gap to +infinity.
//
// Thread/fiber safety: hooks are called from the fiber running the operation, on any worker;
// implementations must be safe for concurrent calls from several fibers.
#pragma once

#include <cstdint>
#include <string_view>

#include "sm/common/ids.h"
#include "sm/common/status.h"

namespace sm::buffer {
class PageHandle;
}

namespace sm::index {

class BTree;

// ---- Logging -----------------------------------------------------------------------------------

// The default: logs nothing and returns Lsn::Invalid() (pages keep their LSN).
class BtreeLogger {
 public:
  virtual ~BtreeLogger() = default;

  // Record operations; `record_index` is the record's index in the leaf (slot record_index + 2,
  // see btree_node.h) after the change (insert, update) or before it (delete).
  virtual Status LogInsert(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                           uint16_t record_index, std::string_view key, std::string_view value,
                           Lsn* lsn) {
    *lsn = Lsn::Invalid();
    return Status::OK();
  }
  virtual Status LogUpdate(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                           uint16_t record_index, std::string_view key, std::string_view old_value,
                           std::string_view new_value, Lsn* lsn) {
    *lsn = Lsn::Invalid();
    return Status::OK();
  }
  virtual Status LogDelete(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                           uint16_t record_index, std::string_view key, std::string_view old_value,
                           Lsn* lsn) {
    *lsn = Lsn::Invalid();
    return Status::OK();
  }

  // Structure changes.
  virtual Status BeginStructureChange(const BTree& tree) { return Status::OK(); }
  virtual void EndStructureChange(const BTree& tree) {}
  // Create: the root was formatted as an empty leaf.
  virtual Lsn LogFormatRoot(const BTree& tree, buffer::PageHandle& root) { return Lsn::Invalid(); }
  // The root's contents were copied into `child` (a new page) and the root was reformatted as
  // an inner node one level up whose only child is `child`.
  virtual Lsn LogGrowRoot(const BTree& tree, buffer::PageHandle& root, buffer::PageHandle& child) {
    return Lsn::Invalid();
  }
  // The records of `node` from the separator on moved to `right` (a new page); node's high
  // fence became `separator` and its right sibling `right`. For an inner node the separator's
  // own record left both halves: its child became right's leftmost child.
  virtual Lsn LogSplit(const BTree& tree, buffer::PageHandle& node, buffer::PageHandle& right,
                       std::string_view separator) {
    return Lsn::Invalid();
  }
  // The separator of a split child was inserted into `parent` as record `record_index`.
  virtual Lsn LogPostSeparator(const BTree& tree, buffer::PageHandle& parent, uint16_t record_index,
                               std::string_view separator, PageId child) {
    return Lsn::Invalid();
  }
};

// ---- Key-range locking -------------------------------------------------------------------------

enum class KeyLockPurpose : uint8_t { kWrite, kInsertNext, kDeleteNext, kRead, kReadNext };
const char* KeyLockPurposeName(KeyLockPurpose purpose);

struct KeyLockRequest {
  std::string_view key;       // empty (and meaningless) when end_of_index
  bool end_of_index = false;  // the +infinity sentinel: no key follows
  KeyLockPurpose purpose = KeyLockPurpose::kRead;
};

class KeyLockHook {
 public:
  virtual ~KeyLockHook() = default;
  // With a leaf latched; must not wait. OK: granted. Busy: would wait (see contract 1).
  virtual Status TryLockKey(const KeyLockRequest& request) { return Status::OK(); }
  // With no latch held; may suspend the fiber until granted.
  virtual Status LockKey(const KeyLockRequest& request) { return Status::OK(); }
};

// What one operation runs on behalf of. The default (no transaction, no locks) is what tests
// and single-user tools use.
struct OpContext {
  void* txn = nullptr;           // opaque to the tree; passed to BtreeLogger's record calls
  KeyLockHook* locks = nullptr;  // null: no key locking
};

}  // namespace sm::index
