// B+-tree seams for the layers wired in later: write-ahead logging (BtreeLogger) and key-range
// locking (KeyLockHook), each with a no-op default, and the per-operation context that carries
// them.
//
// Owns: the contract between the tree and its logger / lock manager adapters: when each hook is
// called, which latches are held at that moment, and what the tree does with the answer.
//
// Logging contract (ARIES; the write-ahead logger is index/btree_wal.h):
//   1. Record operations (insert, update, delete on a leaf) belong to the caller's transaction
//      (OpContext::txn). The tree calls LogInsert / LogUpdate / LogDelete right after changing
//      the leaf, with the leaf still latched exclusively, and stamps the returned LSN on the leaf
//      (SetPageLsn; Lsn::Invalid() leaves the page LSN alone). The returned LSN is the page LSN
//      of the change: the END of its log record (sm/txn/record_handlers.h, page LSN
//      convention), so the WAL rule flushes the whole record before the page is written. Update
//      and delete pass the before-image for undo. If the call fails (e.g. LogFull, a finished or
//      missing transaction), the tree reverts the leaf change under the same latch and returns
//      the error: nothing unlogged stays on the page.
//   2. Structure changes (root growth, and the cascade of node splits with their separators
//      posted into the parents) are redo-only system transactions, each logged as ONE record,
//      so that after a crash either all of it is redone or none (a split changes 2-3 pages, a
//      cascade or a root growth more; separate records could leave a node split without its
//      separator in the parent if the log were cut between them). BeginStructureChange opens
//      one before any page changes (it may fail, e.g. the log is in its fatal state; then
//      nothing has changed, the pages allocated for it are freed and the operation returns
//      the error). The tree then makes every change of the cascade, keeping every page it
//      changed - new pages included - latched exclusively, and calls EndStructureChange once
//      with all of them (the top of the cascade first). The logger logs them as one record and
//      returns the LSN to stamp, which the tree stamps on every one of those pages before it
//      releases any. If EndStructureChange fails, the tree restores the before-images of the
//      existing pages (kept for that purpose when a logger is set), frees the new ones and
//      returns the error: as in 1, nothing unlogged stays. The record operation that needed
//      the split runs afterwards, in the user transaction: undo of an insert then deletes the
//      key wherever it lives by then, never reverses the split.
//   3. Every hook is called with exclusive latches held on the pages it names (and possibly on
//      their ancestors), so it must not wait for anything but inserting into the log buffer: no
//      log flush, no lock, no I/O.
//   4. LogFormatRoot is called once by BTree::Create with the new root (an empty leaf) latched
//      and is stamped like a structure change; if it fails, Create frees the page and fails.
//   5. OpContext::txn is opaque to the tree and passed to the record calls only; what it is
//      and whether it may be null is the logger's business (btree_wal.h: a txn::Txn*, never
//      null).
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
#include <span>
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

  // Record operations (contract 1); `record_index` is the record's index in the leaf (slot
  // record_index + 2, see btree_node.h) after the change (insert, update) or before it (delete).
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

  // Structure changes (contract 2). Begin: before anything changes. End: `pages` are every page
  // the change wrote (existing and new, each once, the top of the cascade first), latched
  // exclusively and in their final state; log them as one redo-only record and set *lsn to the
  // LSN to stamp on all of them.
  virtual Status BeginStructureChange(const BTree& tree) { return Status::OK(); }
  virtual Status EndStructureChange(const BTree& tree, std::span<buffer::PageHandle* const> pages,
                                    Lsn* lsn) {
    *lsn = Lsn::Invalid();
    return Status::OK();
  }
  // Create (contract 4): `root` was formatted as an empty leaf.
  virtual Status LogFormatRoot(const BTree& tree, buffer::PageHandle& root, Lsn* lsn) {
    *lsn = Lsn::Invalid();
    return Status::OK();
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
                                 // (a txn::Txn* for a tree logged by BtreeWal)
  KeyLockHook* locks = nullptr;  // null: no key locking
};

}  // namespace sm::index
