// BtreeWal: the B-tree's write-ahead logger (the BtreeLogger of btree_hooks.h over a
// txn::TxnManager), and the redo and undo handlers of the records it writes.
//
// Owns: the B-tree's log-record sub-types (in the index range of sm/txn/record_handlers.h),
// their payload format, and their handlers, which it registers in the record-handler table the
// first time a BtreeWal is constructed (std::call_once; RegisterHandlers does the same).
//
// Records (sub-types are on disk: never reuse a number):
//   A record operation on a leaf is a record of the caller's transaction
//   (TxnManager::LogRecord), with record.page = the leaf:
//     kPageUndoRedo   16 btree_insert      17 btree_update      18 btree_delete
//   While the transaction rolls back (Txn::compensating(): Abort, or restart undo of a loser)
//   the change an undo makes is logged instead as a compensation record with undo_next =
//   Txn::compensation_undo_next(); its sub-type names the change it made:
//     kCompensation   19 btree_clr_insert  20 btree_clr_update  21 btree_clr_delete
//   (undo of a delete re-inserts: clr_insert; of an update: clr_update; of an insert:
//   clr_delete). A compensation record is redone like its plain twin and never undone.
//   An update that keeps the value's length is logged with only the byte ranges it changed
//   (DiffValues, below), unless they need more than kMaxDiffRanges ranges:
//     kPageUndoRedo   22 btree_update_diff  kCompensation  23 btree_clr_update_diff
//   (undo of either update form writes whichever form fits its own change: the undo of an
//   update_diff is a same-length update, so its compensation record is a clr_update_diff).
//   An Add (BTree::Add, a counter under an increment lock) is logged in the update_diff
//   format with exactly one range of 8 bytes, the counter's old and new bytes:
//     kPageUndoRedo   24 btree_add          (its compensation: a clr_update_diff)
//   A structure change (root growth and a cascade of splits) and the root formatted by Create
//   are ONE redo-only system record each: kPageRedo / kSubtypePageImages
//   (sm/txn/page_images.h) holding the after-image of every page changed, each without its
//   free gap (Node::FreeGap: the bytes between the slot directory and the records), so an
//   image of a half-full node is about half a page.
//
// Payload of the record-operation records (little-endian, sm/common/coding.h; lengths u32):
//   u64 root          page id of the tree's root: undo opens the tree there
//   u16 record_index  the record's index in the leaf after (insert, update) or before (delete)
//                     the change, as BtreeLogger passes it (the low 14 bits); bit 15: the
//                     record after the change holds a stub (btree_node.h, kLeafExternalBit),
//                     bit 14: the record before it did. An update that sets, clears or
//                     keeps a stub is logged whole, never as a diff.
//   u32 n, key
//   insert:  u32 n, value
//   update:  u32 n, old value, u32 n, new value
//   delete:  u32 n, old value
//
// Payload of btree_update_diff and btree_clr_update_diff (little-endian):
//   u64 root, u16 record_index, u32 n, key   as above
//   u16 value_bytes   the value's length, before and after (it is at most a leaf record)
//   u8  range_count   0..kMaxDiffRanges
//   range_count times, by increasing offset and disjoint (redo and undo reject anything else
//   as a malformed payload before touching a page):
//     u16 offset, u16 bytes (>= 1, offset + bytes <= value_bytes), old bytes, new bytes
//   The ranges cover every changed byte; unchanged bytes between two changed ones are
//   included when the gap is at most kDiffMergeGapBytes. A range costs 4 header bytes and a
//   step of the encode, redo and undo loops, a merged gap byte 2 log bytes: 8 is a compromise
//   that keeps the changed counters at the head of a TPC-C row in one or two ranges (STOCK's
//   quantity, ytd, order_cnt and remote_cnt in one; CUSTOMER's balance and ytd in one, its
//   payment_cnt in another).
//   BtreeWal::LogUpdate writes this form when the lengths are equal and the changes fit in
//   kMaxDiffRanges ranges (then it is never longer than the full update: even one range of the
//   whole value saves a byte; the logger still compares the two sizes, so a change of these
//   constants cannot make it log more); otherwise the full btree_update. Both forms stay
//   valid: a log may hold both.
//
// Redo (physical, one page: RecordHandler::redo_page, called on the leaf when its page LSN shows
// the change is missing): applies the change at record_index exactly, after checking that the
// page is a leaf of that tree and that the record matches what is there - insert: the key
// belongs between the records around record_index and inside the fences, and fits; update and
// delete: the record at record_index has the key and the old value; update_diff: the record
// at record_index has the key, a value of value_bytes, and the old bytes in every range (then
// only the ranges' bytes are written, in place). A mismatch returns
// Corruption naming the page, the LSN and what differed; a page that does not match is never
// dereferenced out of bounds (Node's O(1) intact checks guard every slot read).
//
// Undo of btree_add: BTree::Add(key, offset, old - new, AddOverflow::kWrap) wherever the key
// lives now, one read-modify-write under the leaf latch. It neither checks nor restores the
// old bytes: other transactions holding the key's increment lock may have added to the
// counter since, and their additions must survive this one's rollback. The compensation
// record that Add's logger call writes is a clr_update_diff of the counter's bytes as the undo
// found and left them.
//
// Undo (logical, kPageUndoRedo only): opens the tree at the logged root with a BtreeWal over
// the same TxnManager and undoes by key wherever the key lives now (a split may have moved it):
// insert -> Delete(key), update -> Update(key, old value), delete -> Insert(key, old value),
// update_diff -> Lookup(key), check that the value has value_bytes and the new bytes in every
// range, then Update(key, that value with the old bytes put back),
// with OpContext{txn, no key locks} (the transaction still holds its key locks; at restart no
// other transaction runs). The tree logs that change through this logger, which writes the
// compensation record because the transaction is compensating. The undo may split (a re-insert
// into a full leaf): the split is logged as its own system record first, then the compensation
// record. An undo that does not find what the record says (the key absent for a delete, present
// for an insert; for an update_diff another length or other bytes in a range) is Corruption
// naming the LSN.
//
// Transactions: a tree opened with a BtreeWal requires OpContext::txn - an active txn::Txn* of
// this TxnManager - for every record operation. Without one the operation fails with
// InvalidArgument and the leaf is left as it was (an unlogged change to a logged tree could be
// neither undone nor redone, and a later record's redo would find the page different from what
// it expects). Reads and cursors need no transaction. Structure changes need none either: they
// are system transactions.
//
// Thread/fiber safety: a BtreeWal holds only the TxnManager pointer; its methods may be called
// concurrently from fibers on any worker and from plain threads, as TxnManager's can. The hooks
// run with exclusive page latches held and wait for nothing but log-buffer space.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "index/btree_hooks.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/txn/record_handlers.h"

namespace sm::txn {
class TxnManager;
}

namespace sm::index {

inline constexpr uint8_t kSubtypeBtreeInsert = txn::kSubtypeIndexFirst + 0;     // 16
inline constexpr uint8_t kSubtypeBtreeUpdate = txn::kSubtypeIndexFirst + 1;     // 17
inline constexpr uint8_t kSubtypeBtreeDelete = txn::kSubtypeIndexFirst + 2;     // 18
inline constexpr uint8_t kSubtypeBtreeClrInsert = txn::kSubtypeIndexFirst + 3;  // 19
inline constexpr uint8_t kSubtypeBtreeClrUpdate = txn::kSubtypeIndexFirst + 4;  // 20
inline constexpr uint8_t kSubtypeBtreeClrDelete = txn::kSubtypeIndexFirst + 5;  // 21
inline constexpr uint8_t kSubtypeBtreeUpdateDiff = txn::kSubtypeIndexFirst + 6;     // 22
inline constexpr uint8_t kSubtypeBtreeClrUpdateDiff = txn::kSubtypeIndexFirst + 7;  // 23
inline constexpr uint8_t kSubtypeBtreeAdd = txn::kSubtypeIndexFirst + 8;            // 24
static_assert(kSubtypeBtreeAdd <= txn::kSubtypeIndexLast);

// The changed bytes of a same-length update (the btree_update_diff format above).
inline constexpr size_t kMaxDiffRanges = 8;
inline constexpr size_t kDiffMergeGapBytes = 8;

struct ValueRange {
  uint16_t offset = 0;
  uint16_t bytes = 0;
};

struct ValueDiff {
  std::array<ValueRange, kMaxDiffRanges> ranges;
  uint8_t count = 0;
};

// Fills *diff with the ranges where new_value differs from old_value (none if equal), gaps of
// at most kDiffMergeGapBytes merged. False - no diff form - if the lengths differ, a value is
// longer than a u16 offset can address, or the changes need more than kMaxDiffRanges ranges.
[[nodiscard]] bool DiffValues(std::string_view old_value, std::string_view new_value,
                              ValueDiff* diff);
// Payload bytes of the two update forms, so the logger writes the shorter.
size_t DiffUpdatePayloadBytes(size_t key_bytes, const ValueDiff& diff);
size_t FullUpdatePayloadBytes(size_t key_bytes, size_t old_value_bytes, size_t new_value_bytes);

class BtreeWal final : public BtreeLogger {
 public:
  // Registers the handlers (once per process). txns must outlive the logger and every tree
  // that uses it.
  explicit BtreeWal(txn::TxnManager* txns);

  // Registers the B-tree's record handlers; idempotent. Recovery needs them before
  // TxnManager::Restart: constructing any BtreeWal does it.
  static void RegisterHandlers();

  Status LogInsert(void* txn, const BTree& tree, buffer::PageHandle& leaf, uint16_t record_index,
                   std::string_view key, std::string_view value, bool external,
                   Lsn* lsn) override;
  Status LogUpdate(void* txn, const BTree& tree, buffer::PageHandle& leaf, uint16_t record_index,
                   std::string_view key, std::string_view old_value, bool old_external,
                   std::string_view new_value, bool new_external, Lsn* lsn) override;
  Status LogDelete(void* txn, const BTree& tree, buffer::PageHandle& leaf, uint16_t record_index,
                   std::string_view key, std::string_view old_value, bool old_external,
                   Lsn* lsn) override;
  Status LogAdd(void* txn, const BTree& tree, buffer::PageHandle& leaf, uint16_t record_index,
                std::string_view key, std::string_view old_value, std::string_view new_value,
                uint16_t offset, Lsn* lsn) override;

  // The log's health: a structure change is not started on a log that cannot take its record.
  Status BeginStructureChange(const BTree& tree) override;
  // One page-image system record of `pages`; *lsn = its end (the page LSN to stamp).
  Status EndStructureChange(const BTree& tree, std::span<buffer::PageHandle* const> pages,
                            Lsn* lsn) override;
  Status LogFormatRoot(const BTree& tree, buffer::PageHandle& root, Lsn* lsn) override;

  txn::TxnManager* txns() const { return txns_; }

  // Test hook: called after every undo that succeeded (its compensation record is in the log
  // buffer), e.g. to simulate a crash in the middle of a rollback. Not synchronized: set it
  // only while no rollback runs; an empty function removes it.
  static void TEST_SetUndoHook(std::function<void()> hook);

 private:
  txn::TxnManager* const txns_;
};

}  // namespace sm::index
