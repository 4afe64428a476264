// B+-tree seams for the layers wired in later: write-ahead logging (BtreeLogger) and key-range
// locking (KeyLockHook), each with a no-op default, and the per-operation context that carries
// them.
//
// Owns: the contract between the tree and its logger / lock manager adapters: when each hook is
// called, which latches are held at that moment, and what the tree does with the answer.
//
// Logging contract (ARIES; the write-ahead logger is index/btree_wal.h):
//   1. Record operations (insert, update, delete, add on a leaf) belong to the caller's
//      transaction (OpContext::txn). The tree calls LogInsert / LogUpdate / LogDelete / LogAdd
//      right after changing
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
//      nothing has changed, the pages allocated for it are kept for reuse and the operation
//      returns the error). The tree then makes every change of the cascade, keeping every page it
//      changed - new pages included - latched exclusively, and calls EndStructureChange once
//      with all of them (the top of the cascade first). The logger logs them as one record and
//      returns the LSN to stamp, which the tree stamps on every one of those pages before it
//      releases any. If EndStructureChange fails, the tree restores the before-images of the
//      existing pages (kept for that purpose when a logger is set), keeps the new ones and
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
// Locking contract (ARIES/KVL-style next-key locking, sm/lock/lock_manager.h; the lock modes and
// durations are the hook's business):
//   1. KeyLockHook::TryLockKey is called with a leaf latched (shared or exclusive) and must not
//      wait: OK means granted, Busy means "would wait". On Busy the tree copies the request,
//      releases every latch, calls LockKey (which may suspend the fiber), and then restarts the
//      operation from the root: it searches the leaf again, since the key and its next key may
//      have changed while nothing was latched, and asks for the locks that search calls for.
//      Any other error ends the operation with that error (deadlock victim, lock timeout).
//      Termination: when the restart asks again for the lock LockKey granted (the search found
//      the same thing), that TryLockKey must succeed at once. A commit-duration lock stays
//      held anyway (kWrite must be one: an insertion that waited for it asks for kInsertNext
//      first on the restart). A hook that grants other purposes with instant duration must
//      keep such a lock across the restart, at least until its next call, which is then the
//      same request (index/btree_locks.h, the pin); otherwise the restart may find it Busy
//      again every time (an inserter behind a stream of readers of its next key). So an
//      operation restarts again only if the tree or the lock table changed meanwhile.
//   2. LockKey is also called directly, with no latch held, for kWrite before an Update or a
//      Delete descends, and for kIncrement before an Add descends. Insert and Upsert lock their
//      key at the leaf instead (3).
//   3. Requests (purpose -> key), all at the leaf with TryLockKey unless said otherwise:
//        kWrite       the key being written: for Update and Delete before the descent (2); for
//                     an insertion (Insert, or an Upsert of an absent key) right after its
//                     kInsertNext is granted; for an Upsert that found the key, that key
//        kInsertNext  the first key after an insertion point (or end of index), asked for
//                     BEFORE the insertion's kWrite: the gap check comes first, so an inserter
//                     that must wait for a reader of the gap does not hold the key meanwhile
//                     (which would deadlock with that reader inserting the same key)
//        kDeleteNext  the first key after a deleted key (or end of index)
//        kIncrement   the key an Add adds to, before the descent (2): a lock that other adders
//                     share (sm/lock/lock_mode.h, INC) and readers and writers do not
//        kRead        a key Lookup found, a key a cursor returns, or the key an Insert found
//                     present (taken before it returns Duplicate, which it then stays)
//        kReadNext    Lookup of an absent key, Update/Delete/Add that found nothing: the first key
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
#include <string>
#include <string_view>

#include "sm/common/ids.h"
#include "sm/common/status.h"

namespace sm::buffer {
class PageHandle;
}

namespace sm::index {

class BTree;
struct LeafHint;

// ---- Logging -----------------------------------------------------------------------------------

// Every method is pure: a logger that forwards (a test's crash injector, a wrapper) cannot
// silently log nothing for a kind of change it forgot. NullBtreeLogger is the tree's default.
class BtreeLogger {
 public:
  virtual ~BtreeLogger() = default;

  // Record operations (contract 1); `record_index` is the record's index in the leaf (slot
  // record_index + 2, see btree_node.h) after the change (insert, update) or before it (delete).
  // `external`, `old_external`, `new_external`: the external marks (btree_node.h) of the record
  // written, replaced or removed.
  virtual Status LogInsert(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                           uint16_t record_index, std::string_view key, std::string_view value,
                           bool external, Lsn* lsn) = 0;
  virtual Status LogUpdate(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                           uint16_t record_index, std::string_view key, std::string_view old_value,
                           bool old_external, std::string_view new_value, bool new_external,
                           Lsn* lsn) = 0;
  virtual Status LogDelete(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                           uint16_t record_index, std::string_view key, std::string_view old_value,
                           bool old_external, Lsn* lsn) = 0;
  // An Add: the value's 8 bytes at `offset` changed from old_value's to new_value's (the two
  // are whole values of one length). Undo must subtract the difference, not restore the old
  // bytes: other transactions may have added to the counter meanwhile.
  virtual Status LogAdd(void* txn, const BTree& tree, buffer::PageHandle& leaf,
                        uint16_t record_index, std::string_view key, std::string_view old_value,
                        std::string_view new_value, uint16_t offset, Lsn* lsn) = 0;

  // Structure changes (contract 2). Begin: before anything changes. End: `pages` are every page
  // the change wrote (existing and new, each once, the top of the cascade first), latched
  // exclusively and in their final state; log them as one redo-only record and set *lsn to the
  // LSN to stamp on all of them.
  virtual Status BeginStructureChange(const BTree& tree) = 0;
  virtual Status EndStructureChange(const BTree& tree, std::span<buffer::PageHandle* const> pages,
                                    Lsn* lsn) = 0;
  // Create (contract 4): `root` was formatted as an empty leaf.
  virtual Status LogFormatRoot(const BTree& tree, buffer::PageHandle& root, Lsn* lsn) = 0;
};

// Logs nothing and returns Lsn::Invalid() (pages keep their LSN): a tree without logging.
class NullBtreeLogger final : public BtreeLogger {
 public:
  Status LogInsert(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view,
                   std::string_view, bool, Lsn* lsn) override {
    return Nothing(lsn);
  }
  Status LogUpdate(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view,
                   std::string_view, bool, std::string_view, bool, Lsn* lsn) override {
    return Nothing(lsn);
  }
  Status LogDelete(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view,
                   std::string_view, bool, Lsn* lsn) override {
    return Nothing(lsn);
  }
  Status LogAdd(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view,
                std::string_view, std::string_view, uint16_t, Lsn* lsn) override {
    return Nothing(lsn);
  }
  Status BeginStructureChange(const BTree&) override { return Status::OK(); }
  Status EndStructureChange(const BTree&, std::span<buffer::PageHandle* const>,
                            Lsn* lsn) override {
    return Nothing(lsn);
  }
  Status LogFormatRoot(const BTree&, buffer::PageHandle&, Lsn* lsn) override {
    return Nothing(lsn);
  }

 private:
  static Status Nothing(Lsn* lsn) {
    *lsn = Lsn::Invalid();
    return Status::OK();
  }
};

// ---- Key-range locking -------------------------------------------------------------------------

enum class KeyLockPurpose : uint8_t { kWrite, kInsertNext, kDeleteNext, kRead, kReadNext, kIncrement };
const char* KeyLockPurposeName(KeyLockPurpose purpose);

struct KeyLockRequest {
  std::string_view key;       // empty (and meaningless) when end_of_index
  bool end_of_index = false;  // the +infinity sentinel: no key follows
  KeyLockPurpose purpose = KeyLockPurpose::kRead;
  // What PrefetchKey returned for these very key bytes, or 0 (none): the hook may use it in
  // place of what it would derive from the key again (TxnKeyLocks: the key's hash).
  uint64_t prefetched = 0;
};

class KeyLockHook {
 public:
  virtual ~KeyLockHook() = default;
  // With a leaf latched; must not wait. OK: granted. Busy: would wait (see contract 1).
  virtual Status TryLockKey(const KeyLockRequest& request) { return Status::OK(); }
  // With no latch held; may suspend the fiber until granted.
  virtual Status LockKey(const KeyLockRequest& request) { return Status::OK(); }
  // A point operation on `key` begins: start loading what locking the key will touch, so that
  // its cache misses overlap the descent. A hint only: it locks nothing and cannot fail. The
  // result goes back in KeyLockRequest::prefetched of a later request on the same key.
  virtual uint64_t PrefetchKey(std::string_view key) { return 0; }
  // True if a plain read may go without its lock (ReadsCommittedWithoutLocks can say so): the
  // tree then prefetches nothing for it, as the lock is seldom taken.
  virtual bool ReadsMayGoUnlocked() const { return false; }
  // With a leaf latched whose page LSN is `page_lsn`; must not wait. True if every row of that
  // leaf may be read without its kRead or kReadNext lock until the latch is released, because
  // each one is committed and no absent key is deleted by a transaction still running: a
  // read-committed reader, and either the page is older than every uncommitted change (its
  // LSN below the transaction's bound, txn::Txn::HoldsOnlyCommitted: a change logged on a page
  // raises its LSN above the change's record) or no other transaction can write the table
  // (sm/lock/lock_manager.h, NoOtherWriter). False makes the tree lock as usual.
  virtual bool ReadsCommittedWithoutLocks(Lsn page_lsn) {
    (void)page_lsn;
    return false;
  }
};

// ---- Large values ------------------------------------------------------------------------------

// The caller's side of the external mark (btree_node.h, kLeafExternalBit; btree.h, "Large
// values"): the tree stores and logs which records hold a stub; what a stub names is the
// caller's business.
class ExternalValues {
 public:
  virtual ~ExternalValues() = default;
  // Reads the value `stub` names into *value. Called while the stub's leaf is latched shared,
  // after its key lock was granted: the stub cannot change meanwhile. It must not latch
  // anything of the tree whose stub it reads, nor wait for a key lock.
  virtual Status Resolve(std::string_view stub, std::string* value) = 0;
};

// What a write says and learns of the mark.
struct ExternalWrite {
  bool value_is_stub = false;  // Insert, Update, Upsert: the value written is a stub
  // Set by Update, Upsert and Delete: whether the record they replaced or removed held a
  // stub, and then that stub in *replaced (its chunks are the caller's to free). The caller
  // owns the buffer (reused from write to write: most writes replace none).
  bool replaced_stub = false;
  std::string* replaced = nullptr;
};

// What one operation runs on behalf of. The default (no transaction, no locks) is what tests
// and single-user tools use.
struct OpContext {
  void* txn = nullptr;           // opaque to the tree; passed to BtreeLogger's record calls
                                 // (a txn::Txn* for a tree logged by BtreeWal)
  KeyLockHook* locks = nullptr;  // null: no key locking
  // Null: every point operation descends from the root. Else the caller's remembered leaf of
  // this tree (btree.h, "Leaf hints"), tried first and refreshed by the operation.
  LeafHint* hint = nullptr;
  // Reads: expands external values (null: reading one is NotSupported).
  ExternalValues* external = nullptr;
  // Writes: null writes plain values and learns nothing of what was replaced.
  ExternalWrite* external_write = nullptr;
};

}  // namespace sm::index
