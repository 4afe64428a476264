// B-tree record operation: Add, the increment of a counter inside a record's value.
//
// Owns: the read-modify-write of one 8-byte counter under an increment lock (btree.h, Add).
//
// Why: a row that every transaction of a workload updates (TPC-C's warehouse and district
// year-to-date sums) serializes those transactions when each takes it exclusively, and under
// STEPS it breaks every team at that row. Additions commute, so transactions that only add to
// the row can share it (sm/lock/lock_mode.h, INC) as long as each addition is one atomic
// read-modify-write of the page and its undo subtracts the same delta instead of putting back
// a before-image that other adders have since moved on from.
//
// How: the key is locked kIncrement before the descent (as Update locks kWrite); the leaf is
// fixed exclusively (through the hint, as a write's optimistic stage, or by descent); the
// counter is read, summed and written back, and the change logged (BtreeLogger::LogAdd: the
// old and new 8 bytes, so redo is physical like an update's, and undo logical, btree_wal.h),
// all under that one latch. An Add never changes the record's length, so it never splits or
// moves records: there is no pessimistic stage (a contention split, which the Add's latch
// waits may call for, runs after it as after any write). A missing key takes kReadNext on its
// gap and returns NotFound, as Update does; a lock that must be waited for releases the leaf,
// waits and starts again.
#include <cstdint>
#include <cstring>
#include <string>

#include "index/btree.h"
#include "index/btree_internal.h"
#include "index/btree_node.h"
#include "sm/common/assert.h"

namespace sm::index {

using buffer::PageHandle;

namespace {

int64_t ReadCounter(const char* at) {
  uint64_t bits = 0;
  std::memcpy(&bits, at, sizeof bits);  // little-endian, as the CPU (x86-64, AArch64)
  return static_cast<int64_t>(bits);
}

void WriteCounter(char* at, int64_t value) {
  auto bits = static_cast<uint64_t>(value);
  std::memcpy(at, &bits, sizeof bits);
}

}  // namespace

Status BTree::Add(std::string_view key, uint32_t offset, int64_t delta, std::string* value,
                  const OpContext& ctx, AddOverflow overflow) {
  SM_TRY(CheckKey(key));
  if (ctx.locks != nullptr) {
    SM_TRY(ctx.locks->LockKey(KeyLockRequest{key, false, KeyLockPurpose::kIncrement}));
  }
  SM_DASSERT(ctx.hint == nullptr || !ctx.hint->ahead);  // PrefetchLeaf's hints are Lookup's
  for (;;) {
    LockWait wait;
    Status s;
    Contender contender = Contender::kNone;
    {
      PageHandle leaf;
      bool fences_known = false;
      SM_TRY(FixLeafForWrite(key, &kCtxUpdateLeaf, ctx.hint, &leaf, &fences_known));
      uint16_t written = UINT16_MAX;
      s = AddAtLeaf(key, offset, delta, overflow, value, ctx, leaf, &wait, &written);
      // Hot counters of one leaf are what a contention split separates (btree.h).
      contender = AfterOptimisticWrite(leaf, written, fences_known, ctx.hint);
    }
    if (contender != Contender::kNone) [[unlikely]]
      SplitContendedLeaf(key, contender);
    if (!s.ok() || !wait.pending) return s;
    SM_TRY(WaitForLock(ctx, wait));
  }
}

Status BTree::AddAtLeaf(std::string_view key, uint32_t offset, int64_t delta,
                        AddOverflow overflow, std::string* value, const OpContext& ctx,
                        PageHandle& leaf, LockWait* wait, uint16_t* written) {
  Node node(leaf.data());
  bool found = false;
  uint16_t index = node.LowerBound(key, &found);
  if (!found) {
    SM_TRY(TryLockAt(ctx, leaf, index, KeyLockPurpose::kReadNext, wait));
    return wait->pending ? Status::OK() : Status::NotFound();
  }
  if (node.ExternalAt(index)) {
    return Status::InvalidArgument(
        "Add on a large value (a counter lives in a value that fits "
        "a leaf)");
  }
  std::string_view current = node.ValueAt(index);
  if (offset > current.size() || current.size() - offset < sizeof(int64_t)) {
    return Status::InvalidArgument("the counter at value bytes " + std::to_string(offset) + ".." +
                                   std::to_string(uint64_t{offset} + 8) +
                                   " lies outside the value of " +
                                   std::to_string(current.size()) + " bytes");
  }
  // The before-image for the logger, on the stack as in ApplyUpdate.
  char old_bytes[kMaxLeafRecordBytes];
  SM_DASSERT(current.size() <= sizeof(old_bytes));
  std::memcpy(old_bytes, current.data(), current.size());
  char* counter = node.MutableValueAt(index) + offset;
  const int64_t before = ReadCounter(counter);
  int64_t sum = 0;
  if (__builtin_add_overflow(before, delta, &sum) && overflow == AddOverflow::kError) {
    return Status::InvalidArgument("adding " + std::to_string(delta) + " to " +
                                   std::to_string(before) + " overflows a 64-bit counter");
  }
  WriteCounter(counter, sum);  // the wrapped sum if it overflowed (kWrap)
  node.BumpVersion();
  leaf.MarkDirty();
  SM_PARANOID(logs_ || node.CheckInvariants());  // else Stamp checks it
  if (logs_) {
    std::string_view old_value(old_bytes, current.size());
    Lsn lsn;
    Status s = logger_->LogAdd(ctx.txn, *this, leaf, index, key, old_value, node.ValueAt(index),
                               static_cast<uint16_t>(offset), &lsn);
    if (!s.ok()) {  // no trace of the change (logging contract 1)
      WriteCounter(counter, before);
      node.BumpVersion();
      return s;
    }
    Stamp(leaf, lsn);
  }
  *written = index;
  if (value != nullptr) value->assign(node.ValueAt(index));
  return Status::OK();
}

}  // namespace sm::index
