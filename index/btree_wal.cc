// BtreeWal: the B-tree's log records, their payload codec, and their redo and undo handlers
// (format and contract in btree_wal.h).
#include "index/btree_wal.h"

#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "index/btree_node.h"
#include "log/log_manager.h"
#include "log/log_record.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/common/assert.h"
#include "sm/common/coding.h"
#include "sm/page/page.h"
#include "sm/txn/page_images.h"
#include "sm/txn/txn.h"
#include "sm/txn/txn_manager.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sm::index {

namespace {

using buffer::PageHandle;

enum class OpKind : uint8_t { kInsert, kUpdate, kDelete };

// A decoded record-operation payload; the views point into the record.
struct RecordOp {
  PageId root;
  uint16_t record_index = 0;
  std::string_view key;
  std::string_view old_value;  // update, delete
  std::string_view new_value;  // insert, update
  // The external marks (btree_node.h) of the record before (update, delete) and after (insert,
  // update) the change; logged in the top bits of the record index (kOldExternalBit,
  // kNewExternalBit), which a leaf's record count never reaches.
  bool old_external = false;
  bool new_external = false;
};

constexpr uint16_t kNewExternalBit = 0x8000;
constexpr uint16_t kOldExternalBit = 0x4000;
static_assert(kPageBytes / SlottedPage::SpaceNeeded(kLeafRecordOverheadBytes) < kOldExternalBit);

uint8_t SubtypeOf(OpKind kind, bool compensation) {
  switch (kind) {
    case OpKind::kInsert:
      return compensation ? kSubtypeBtreeClrInsert : kSubtypeBtreeInsert;
    case OpKind::kUpdate:
      return compensation ? kSubtypeBtreeClrUpdate : kSubtypeBtreeUpdate;
    case OpKind::kDelete:
      return compensation ? kSubtypeBtreeClrDelete : kSubtypeBtreeDelete;
  }
  SM_UNREACHABLE();
}

void EncodeOp(OpKind kind, const RecordOp& op, std::string* payload) {
  payload->clear();
  payload->reserve(8 + 2 + 3 * 4 + op.key.size() + op.old_value.size() + op.new_value.size());
  PutFixed64(payload, op.root.value());
  SM_DASSERT(op.record_index < kOldExternalBit);
  PutFixed16(payload,
             static_cast<uint16_t>(op.record_index | (op.new_external ? kNewExternalBit : 0) |
                                   (op.old_external ? kOldExternalBit : 0)));
  PutLengthPrefixed(payload, op.key);
  if (kind != OpKind::kInsert) PutLengthPrefixed(payload, op.old_value);
  if (kind != OpKind::kDelete) PutLengthPrefixed(payload, op.new_value);
}

std::string RecordName(const log::LogRecordView& record) {
  return "the log record at LSN " + std::to_string(record.lsn.value()) + " (" +
         txn::RecordHandlerName(record.type, record.subtype) + ")";
}

Status DecodeOp(OpKind kind, const log::LogRecordView& record, RecordOp* op) {
  ByteReader in(record.payload);
  uint64_t root = 0;
  bool ok =
      in.GetFixed64(&root) && in.GetFixed16(&op->record_index) && in.GetLengthPrefixed(&op->key);
  if (ok && kind != OpKind::kInsert) ok = in.GetLengthPrefixed(&op->old_value);
  if (ok && kind != OpKind::kDelete) ok = in.GetLengthPrefixed(&op->new_value);
  if (!ok || !in.done()) return Status::Corruption(RecordName(record) + ": malformed payload");
  op->new_external = (op->record_index & kNewExternalBit) != 0;
  op->old_external = (op->record_index & kOldExternalBit) != 0;
  op->record_index &= static_cast<uint16_t>(~(kNewExternalBit | kOldExternalBit));
  if ((op->new_external && kind == OpKind::kDelete) ||
      (op->old_external && kind == OpKind::kInsert)) {
    return Status::Corruption(RecordName(record) + ": an external mark its kind does not have");
  }
  op->root = PageId(root);
  // What the tree could never have logged: rejected before anything is built from it.
  if (!op->root.valid() || op->key.size() > kMaxKeyBytes ||
      LeafRecordBytes(op->key.size(), op->old_value.size()) > kMaxLeafRecordBytes ||
      LeafRecordBytes(op->key.size(), op->new_value.size()) > kMaxLeafRecordBytes) {
    return Status::Corruption(RecordName(record) + ": root, key or value out of bounds");
  }
  return Status::OK();
}

// ---- The diff form of an update ----------------------------------------------------------------

// u16 value_bytes, u8 range_count; per range u16 offset, u16 bytes.
constexpr size_t kDiffHeaderBytes = 2 + 1;
constexpr size_t kRangeHeaderBytes = 2 + 2;
// u64 root, u16 record_index, u32 key length: the prefix every record-operation payload has.
constexpr size_t kOpPrefixBytes = 8 + 2 + 4;

// A decoded btree_update_diff payload; the views point into the record.
struct DiffOp {
  PageId root;
  uint16_t record_index = 0;
  std::string_view key;
  uint16_t value_bytes = 0;
  uint8_t count = 0;
  struct Range {
    uint16_t offset = 0;
    std::string_view old_bytes;
    std::string_view new_bytes;
  };
  std::array<Range, kMaxDiffRanges> ranges;
};

// Bit k set: a[k] != b[k], for the 32 bytes at a and b. A diff runs over every logged update
// of a same-length value, mostly over equal bytes (a TPC-C row of 300 to 650 bytes with 10 to
// 30 changed): SSE2 (x86-64's baseline) compares 32 bytes in a few instructions.
uint32_t DiffMask32(const char* a, const char* b) {
#if defined(__SSE2__)
  auto load = [](const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  __m128i low = _mm_cmpeq_epi8(load(a), load(b));
  __m128i high = _mm_cmpeq_epi8(load(a + 16), load(b + 16));
  uint32_t equal = static_cast<uint32_t>(_mm_movemask_epi8(low)) |
                   (static_cast<uint32_t>(_mm_movemask_epi8(high)) << 16);
  return ~equal;
#else
  uint32_t mask = 0;
  for (uint32_t k = 0; k < 32; ++k) mask |= uint32_t{a[k] != b[k]} << k;
  return mask;
#endif
}

// Builds DiffValues' ranges from the runs of changed bytes, fed in increasing order.
class RangeBuilder {
 public:
  explicit RangeBuilder(ValueDiff* diff) : diff_(diff) { diff_->count = 0; }

  // The changed bytes of the 32 at `base` (bit k: byte base + k). False: too many ranges.
  bool AddMask(size_t base, uint32_t mask) {
    while (mask != 0) {
      int from = std::countr_zero(mask);
      int bytes = std::countr_zero(~(mask >> from));  // the run of set bits from `from`
      if (!AddRun(base + static_cast<size_t>(from), base + static_cast<size_t>(from + bytes))) {
        return false;
      }
      int done = from + bytes;
      mask = done >= 32 ? 0 : mask & (~uint32_t{0} << done);
    }
    return true;
  }

  // Closes the last range. False: too many ranges.
  bool Finish() { return !open_ || Close(); }

 private:
  // Changed bytes [from, to): extend the open range over a short gap, or start another.
  bool AddRun(size_t from, size_t to) {
    if (open_ && from - end_ <= kDiffMergeGapBytes) {
      end_ = to;
      return true;
    }
    if (open_ && !Close()) return false;
    start_ = from;
    end_ = to;
    open_ = true;
    return true;
  }
  bool Close() {
    if (diff_->count == kMaxDiffRanges) return false;
    diff_->ranges[diff_->count++] = {static_cast<uint16_t>(start_),
                                     static_cast<uint16_t>(end_ - start_)};
    return true;
  }

  ValueDiff* const diff_;
  bool open_ = false;
  size_t start_ = 0;
  size_t end_ = 0;  // one past the open range's last changed byte
};

void EncodeDiff(const RecordOp& op, const ValueDiff& diff, std::string* payload) {
  size_t bytes = DiffUpdatePayloadBytes(op.key.size(), diff);
  // resize, then fill: the payload buffer keeps its capacity, so this is no allocation once
  // the transaction is warm, and no per-field append bookkeeping.
  payload->resize(bytes);
  char* out = payload->data();
  auto put = [&out](const void* from, size_t n) {
    std::memcpy(out, from, n);
    out += n;
  };
  uint64_t root = op.root.value();
  auto key_bytes = static_cast<uint32_t>(op.key.size());
  auto value_bytes = static_cast<uint16_t>(op.new_value.size());
  put(&root, 8);
  put(&op.record_index, 2);
  put(&key_bytes, 4);
  put(op.key.data(), op.key.size());
  put(&value_bytes, 2);
  put(&diff.count, 1);
  for (uint8_t r = 0; r < diff.count; ++r) {
    const ValueRange& range = diff.ranges[r];
    put(&range.offset, 2);
    put(&range.bytes, 2);
    put(op.old_value.data() + range.offset, range.bytes);
    put(op.new_value.data() + range.offset, range.bytes);
  }
  SM_DASSERT(out == payload->data() + bytes);
}

Status DecodeDiff(const log::LogRecordView& record, DiffOp* op) {
  ByteReader in(record.payload);
  uint64_t root = 0;
  bool ok = in.GetFixed64(&root) && in.GetFixed16(&op->record_index) &&
            in.GetLengthPrefixed(&op->key) && in.GetFixed16(&op->value_bytes) &&
            in.GetFixed8(&op->count) && op->count <= kMaxDiffRanges;
  size_t end = 0;  // of the previous range: ranges are sorted and disjoint
  for (uint8_t r = 0; ok && r < op->count; ++r) {
    DiffOp::Range& range = op->ranges[r];
    uint16_t bytes = 0;
    ok = in.GetFixed16(&range.offset) && in.GetFixed16(&bytes) && bytes > 0 &&
         range.offset >= end && size_t{range.offset} + bytes <= op->value_bytes &&
         in.GetBytes(bytes, &range.old_bytes) && in.GetBytes(bytes, &range.new_bytes);
    end = size_t{range.offset} + bytes;
  }
  if (!ok || !in.done()) return Status::Corruption(RecordName(record) + ": malformed payload");
  op->root = PageId(root);
  if (!op->root.valid() || op->key.size() > kMaxKeyBytes ||
      LeafRecordBytes(op->key.size(), op->value_bytes) > kMaxLeafRecordBytes) {
    return Status::Corruption(RecordName(record) + ": root, key or value out of bounds");
  }
  return Status::OK();
}

// Which range of `value` (of op.value_bytes) does not hold what `want` picks (old or new
// bytes); -1 if all do.
int FirstRangeWithout(const DiffOp& op, std::string_view value,
                      std::string_view DiffOp::Range::*want) {
  SM_DASSERT(value.size() == op.value_bytes);
  for (uint8_t r = 0; r < op.count; ++r) {
    const DiffOp::Range& range = op.ranges[r];
    if (value.substr(range.offset, (range.*want).size()) != range.*want) return r;
  }
  return -1;
}

// Writes what `from` picks (old or new bytes) of every range into `value` (of op.value_bytes).
void WriteRanges(const DiffOp& op, char* value, std::string_view DiffOp::Range::*from) {
  for (uint8_t r = 0; r < op.count; ++r) {
    const DiffOp::Range& range = op.ranges[r];
    std::memcpy(value + range.offset, (range.*from).data(), (range.*from).size());
  }
}

std::string RangeName(const DiffOp& op, int r) {
  const DiffOp::Range& range = op.ranges[static_cast<size_t>(r)];
  return "range " + std::to_string(r) + " (bytes " + std::to_string(range.offset) + ".." +
         std::to_string(range.offset + range.old_bytes.size()) + ")";
}

// ---- Redo ------------------------------------------------------------------------------------

Status Mismatch(const log::LogRecordView& record, const std::string& what) {
  return Status::Corruption("redo of " + RecordName(record) + " on page " +
                            std::to_string(record.page.value()) + ": " + what);
}

// The page must be an intact leaf of the record's tree (rooted at `root`); its fences must be
// readable.
Status CheckLeaf(const log::LogRecordView& record, PageId root, const Node& node) {
  PageType type = PageTypeOf(node.page());
  if (type != PageType::kBtreeLeaf) {
    return Mismatch(record,
                    std::string("not a B-tree leaf (page type ") + PageTypeName(type) + ")");
  }
  const BtreeNodeHeader& header = node.header();
  if (header.format_version != kBtreeNodeFormatVersion || header.level != 0) {
    return Mismatch(record, "not a leaf of node format " + std::to_string(kBtreeNodeFormatVersion));
  }
  if (header.tree_root != root.value()) {
    return Mismatch(record, "the leaf belongs to the tree rooted at page " +
                                std::to_string(header.tree_root) + ", the record to page " +
                                std::to_string(root.value()));
  }
  if (!node.AreaBoundsIntact() || !node.SlotIntact(kLowFenceSlot) ||
      !node.SlotIntact(kHighFenceSlot)) {
    return Mismatch(record, "the slotted area is damaged");
  }
  return Status::OK();
}

// The record at index i must be intact and hold `key`.
Status CheckKeyAt(const log::LogRecordView& record, uint16_t i, std::string_view key,
                  const Node& node) {
  if (i >= node.count()) {
    return Mismatch(record, "record index " + std::to_string(i) + " is not below the count " +
                                std::to_string(node.count()));
  }
  if (!node.RecordIntact(i)) {
    return Mismatch(record, "record " + std::to_string(i) + " is damaged");
  }
  if (node.KeyAt(i) != key) {
    return Mismatch(record, "record " + std::to_string(i) + " has another key");
  }
  return Status::OK();
}

// The record at op.record_index must hold op.key with op.old_value (update, delete).
Status CheckExisting(const log::LogRecordView& record, const RecordOp& op, const Node& node) {
  uint16_t i = op.record_index;
  SM_TRY(CheckKeyAt(record, i, op.key, node));
  if (node.ValueAt(i) != op.old_value || node.ExternalAt(i) != op.old_external) {
    return Mismatch(record, "record " + std::to_string(i) + " has another value");
  }
  return Status::OK();
}

Status ApplyInsert(const log::LogRecordView& record, const RecordOp& op, Node& node) {
  uint16_t i = op.record_index;
  uint16_t count = node.count();
  if (i > count) {
    return Mismatch(record, "record index " + std::to_string(i) + " is beyond the count " +
                                std::to_string(count));
  }
  if (i > 0 && (!node.RecordIntact(static_cast<uint16_t>(i - 1)) ||
                CompareKeys(node.KeyAt(static_cast<uint16_t>(i - 1)), op.key) >= 0)) {
    return Mismatch(record, "the key does not sort after record " + std::to_string(i - 1));
  }
  if (i < count && (!node.RecordIntact(i) || CompareKeys(op.key, node.KeyAt(i)) >= 0)) {
    return Mismatch(record, "the key does not sort before record " + std::to_string(i));
  }
  if (CompareKeys(op.key, node.low_fence()) < 0 ||
      (!node.high_infinite() && CompareKeys(op.key, node.high_fence()) >= 0)) {
    return Mismatch(record, "the key lies outside the leaf's fences");
  }
  if (!node.InsertLeafRecord(i, op.key, op.new_value, op.new_external).ok()) {
    return Mismatch(record, "the record does not fit");
  }
  return Status::OK();
}

Status ApplyUpdate(const log::LogRecordView& record, const RecordOp& op, Node& node) {
  SM_TRY(CheckExisting(record, op, node));
  if (!node.UpdateLeafValue(op.record_index, op.new_value, op.new_external).ok()) {
    return Mismatch(record, "the new value does not fit");
  }
  return Status::OK();
}

Status ApplyDelete(const log::LogRecordView& record, const RecordOp& op, Node& node) {
  SM_TRY(CheckExisting(record, op, node));
  node.EraseRecord(op.record_index);
  return Status::OK();
}

// RecordHandler::redo_page: `page` is fixed exclusively and does not reflect the record yet;
// the caller stamps the page LSN and marks it dirty.
template <OpKind kKind>
Status RedoOp(const log::LogRecordView& record, char* page) {
  RecordOp op;
  SM_TRY(DecodeOp(kKind, record, &op));
  Node node(page);
  SM_TRY(CheckLeaf(record, op.root, node));
  switch (kKind) {
    case OpKind::kInsert:
      SM_TRY(ApplyInsert(record, op, node));
      break;
    case OpKind::kUpdate:
      SM_TRY(ApplyUpdate(record, op, node));
      break;
    case OpKind::kDelete:
      SM_TRY(ApplyDelete(record, op, node));
      break;
  }
  node.BumpVersion();
  SM_DASSERT(node.slots().CheckInvariants());
  SM_PARANOID(node.CheckInvariants());  // redo leaves the node as whole as the change did
  return Status::OK();
}

// RecordHandler::redo_page of btree_update_diff and btree_clr_update_diff, as RedoOp: the
// record at record_index must have the key, the logged length and the old bytes in every
// range; then the ranges' new bytes are written in place (the length, so the slot, stays).
Status RedoUpdateDiff(const log::LogRecordView& record, char* page) {
  DiffOp op;
  SM_TRY(DecodeDiff(record, &op));
  Node node(page);
  SM_TRY(CheckLeaf(record, op.root, node));
  uint16_t i = op.record_index;
  SM_TRY(CheckKeyAt(record, i, op.key, node));
  std::string_view value = node.ValueAt(i);
  if (value.size() != op.value_bytes) {
    return Mismatch(record, "record " + std::to_string(i) + " has a value of " +
                                std::to_string(value.size()) + " bytes, the record of " +
                                std::to_string(op.value_bytes));
  }
  int r = FirstRangeWithout(op, value, &DiffOp::Range::old_bytes);
  if (r >= 0) {
    return Mismatch(record, "record " + std::to_string(i) + ": " + RangeName(op, r) +
                                " does not hold the old bytes");
  }
  WriteRanges(op, node.MutableValueAt(i), &DiffOp::Range::new_bytes);
  node.BumpVersion();
  SM_DASSERT(node.slots().CheckInvariants());
  SM_PARANOID(node.CheckInvariants());  // redo leaves the node as whole as the change did
  return Status::OK();
}

// ---- Undo ------------------------------------------------------------------------------------

// BtreeWal::TEST_SetUndoHook; set only while no rollback runs.
std::function<void()>& UndoHook() {
  static std::function<void()> hook;
  return hook;
}

// The tree rooted at `root`, logged through *wal, for an undo in ctx.txn.
Status OpenForUndo(const txn::UndoContext& ctx, const log::LogRecordView& record, PageId root,
                   BtreeWal* wal, std::unique_ptr<BTree>* tree) {
  SM_ASSERT(ctx.txn != nullptr && ctx.txn->compensating());
  BtreeOptions options;
  options.logger = wal;
  Status opened = BTree::Open(ctx.txns->pool(), root, options, tree);
  if (opened.IsInvalidArgument()) {
    return Status::Corruption("undo of " + RecordName(record) + ": " + opened.ToString());
  }
  return opened;
}

Status KeyAbsent(const log::LogRecordView& record, PageId root) {
  return Status::Corruption("undo of " + RecordName(record) +
                            ": the key is absent in the tree rooted at page " +
                            std::to_string(root.value()));
}

// RecordHandler::undo (kPageUndoRedo only): the inverse operation by key, in ctx.txn, whose
// compensating() is set, so the tree's logger call writes the compensation record.
template <OpKind kKind>
Status UndoOp(txn::UndoContext& ctx, const log::LogRecordView& record) {
  RecordOp op;
  SM_TRY(DecodeOp(kKind, record, &op));
  BtreeWal wal(ctx.txns);
  std::unique_ptr<BTree> tree;
  SM_TRY(OpenForUndo(ctx, record, op.root, &wal, &tree));
  // No key locks: the transaction still holds its own; at restart no other transaction runs.
  // A stub goes back as a stub: its chunks come back by the undo of their own records.
  std::string replaced;  // what the undo replaces is its own business: never freed here
  ExternalWrite external{op.old_external, false, &replaced};
  OpContext op_ctx{ctx.txn, nullptr, nullptr, nullptr, &external};
  Status s;
  switch (kKind) {
    case OpKind::kInsert:
      s = tree->Delete(op.key, op_ctx);
      break;
    case OpKind::kUpdate:
      s = tree->Update(op.key, op.old_value, op_ctx);
      break;
    case OpKind::kDelete:
      s = tree->Insert(op.key, op.old_value, op_ctx);
      break;
  }
  if (s.IsNotFound() || s.IsDuplicate()) {
    return Status::Corruption("undo of " + RecordName(record) + ": the key is " +
                              (s.IsNotFound() ? "absent" : "already present") +
                              " in the tree rooted at page " + std::to_string(op.root.value()));
  }
  if (s.ok() && UndoHook()) UndoHook()();
  return s;
}

// RecordHandler::undo of btree_update_diff: the value wherever the key lives now must have
// the logged length and the new bytes in every range; the old bytes go back through
// BTree::Update, whose same-length change the logger writes as a clr_update_diff. Two descents
// (Lookup, then Update) instead of one: undo is rare, and the transaction's key lock (or, at
// restart, the absence of other transactions) keeps the value still between them.
Status UndoUpdateDiff(txn::UndoContext& ctx, const log::LogRecordView& record) {
  DiffOp op;
  SM_TRY(DecodeDiff(record, &op));
  BtreeWal wal(ctx.txns);
  std::unique_ptr<BTree> tree;
  SM_TRY(OpenForUndo(ctx, record, op.root, &wal, &tree));
  OpContext op_ctx{ctx.txn, nullptr};  // no key locks, as in UndoOp
  std::string value;
  Status s = tree->Lookup(op.key, &value, op_ctx);
  if (s.IsNotFound()) return KeyAbsent(record, op.root);
  SM_TRY(s);
  if (value.size() != op.value_bytes) {
    return Status::Corruption("undo of " + RecordName(record) + ": the value has " +
                              std::to_string(value.size()) + " bytes, the record " +
                              std::to_string(op.value_bytes));
  }
  int r = FirstRangeWithout(op, value, &DiffOp::Range::new_bytes);
  if (r >= 0) {
    return Status::Corruption("undo of " + RecordName(record) + ": " + RangeName(op, r) +
                              " of the value does not hold the bytes the update wrote");
  }
  WriteRanges(op, value.data(), &DiffOp::Range::old_bytes);
  s = tree->Update(op.key, value, op_ctx);
  if (s.IsNotFound()) return KeyAbsent(record, op.root);
  if (s.ok() && UndoHook()) UndoHook()();
  return s;
}

// RecordHandler::undo of btree_add (btree_wal.h): subtracts the addition again, atomically at
// the leaf, wherever the key lives now.
Status UndoAdd(txn::UndoContext& ctx, const log::LogRecordView& record) {
  DiffOp op;
  SM_TRY(DecodeDiff(record, &op));
  if (op.count != 1 || op.ranges[0].old_bytes.size() != sizeof(uint64_t)) {
    return Status::Corruption(RecordName(record) + ": an addition changes one 8-byte counter");
  }
  const DiffOp::Range& range = op.ranges[0];
  uint64_t before = 0;
  uint64_t after = 0;
  std::memcpy(&before, range.old_bytes.data(), sizeof before);
  std::memcpy(&after, range.new_bytes.data(), sizeof after);
  BtreeWal wal(ctx.txns);
  std::unique_ptr<BTree> tree;
  SM_TRY(OpenForUndo(ctx, record, op.root, &wal, &tree));
  OpContext op_ctx{ctx.txn, nullptr};  // no key locks, as in UndoOp
  Status s = tree->Add(op.key, range.offset, static_cast<int64_t>(before - after), nullptr,
                       op_ctx, BTree::AddOverflow::kWrap);
  if (s.IsNotFound()) return KeyAbsent(record, op.root);
  if (s.IsInvalidArgument()) {
    return Status::Corruption("undo of " + RecordName(record) + ": " + s.ToString());
  }
  if (s.ok() && UndoHook()) UndoHook()();
  return s;
}

void Register(log::RecordType type, uint8_t subtype, const char* name,
              Status (*redo_page)(const log::LogRecordView&, char*),
              Status (*undo)(txn::UndoContext&, const log::LogRecordView&)) {
  txn::RecordHandler handler;
  handler.name = name;
  handler.redo_page = redo_page;
  handler.undo = undo;
  txn::RegisterRecordHandler(type, subtype, handler);
}

// Appends the record of one record operation to txn's chain: `subtype`, or `clr_subtype` as a
// compensation record while txn rolls back, with txn's payload buffer as its payload; *lsn:
// its end, the page LSN of the change.
Status AppendOp(txn::TxnManager* txns, txn::Txn* txn, uint8_t subtype, uint8_t clr_subtype,
                const PageHandle& leaf, Lsn* lsn) {
  bool compensation = txn->compensating();
  log::LogRecord record;
  record.type = compensation ? log::RecordType::kCompensation : log::RecordType::kPageUndoRedo;
  record.subtype = compensation ? clr_subtype : subtype;
  record.page = leaf.page_id();
  if (compensation) record.undo_next = txn->compensation_undo_next();
  record.payload = *txn->payload_buffer();
  Lsn start;
  SM_TRY(txns->LogRecord(txn, &record, &start, lsn));
  // The leaf's first change since the last checkpoint also logs the leaf's full image (after
  // the change, so it comes after the record: redo repeats the record, then installs the same
  // state), from which redo rebuilds the leaf if a crash tears a later write of it.
  uint32_t epoch = 0;
  if (!leaf.NeedsFullImage(&epoch)) return Status::OK();
  txn::PageImage image;
  image.page = &leaf;
  Node(leaf.data()).FreeGap(&image.hole_offset, &image.hole_bytes);
  SM_TRY(txn::LogFullPageImage(txns, image, lsn));
  leaf.FullImageLogged(epoch);
  return Status::OK();
}

Status TxnOf(void* txn_ptr, txn::Txn** txn) {
  *txn = static_cast<txn::Txn*>(txn_ptr);
  if (*txn != nullptr) return Status::OK();
  return Status::InvalidArgument(
      "a B-tree logged by BtreeWal changes records only in a transaction (OpContext::txn is "
      "null)");
}

// The full-record form of one record operation (or its compensation).
Status LogRecordOp(txn::TxnManager* txns, OpKind kind, void* txn_ptr, const BTree& tree,
                   const PageHandle& leaf, uint16_t record_index, std::string_view key,
                   std::string_view old_value, bool old_external, std::string_view new_value,
                   bool new_external, Lsn* lsn) {
  txn::Txn* txn = nullptr;
  SM_TRY(TxnOf(txn_ptr, &txn));
  RecordOp payload_op{tree.root_page_id(), record_index, key, old_value, new_value};
  payload_op.old_external = old_external;
  payload_op.new_external = new_external;
  EncodeOp(kind, payload_op, txn->payload_buffer());
  return AppendOp(txns, txn, SubtypeOf(kind, false), SubtypeOf(kind, true), leaf, lsn);
}

}  // namespace

// ---- The diff form: public helpers ------------------------------------------------------------

bool DiffValues(std::string_view old_value, std::string_view new_value, ValueDiff* diff) {
  RangeBuilder builder(diff);
  size_t n = new_value.size();
  if (old_value.size() != n || n > UINT16_MAX) return false;
  const char* a = old_value.data();
  const char* b = new_value.data();
  size_t base = 0;
  for (; base + 32 <= n; base += 32) {
    uint32_t mask = DiffMask32(a + base, b + base);
    if (mask != 0 && !builder.AddMask(base, mask)) return false;
  }
  if (base < n) {
    uint32_t mask = 0;
    if (n >= 32) {
      // The last 32 bytes, overlapping the blocks done; the bytes before `base` shifted out.
      mask = DiffMask32(a + n - 32, b + n - 32) >> (base - (n - 32));
    } else {
      for (size_t k = 0; k < n; ++k) mask |= uint32_t{a[k] != b[k]} << k;
    }
    if (!builder.AddMask(base, mask)) return false;
  }
  return builder.Finish();
}

size_t DiffUpdatePayloadBytes(size_t key_bytes, const ValueDiff& diff) {
  size_t bytes = kOpPrefixBytes + key_bytes + kDiffHeaderBytes;
  for (uint8_t r = 0; r < diff.count; ++r) bytes += kRangeHeaderBytes + 2 * diff.ranges[r].bytes;
  return bytes;
}

size_t FullUpdatePayloadBytes(size_t key_bytes, size_t old_value_bytes, size_t new_value_bytes) {
  return kOpPrefixBytes + key_bytes + 4 + old_value_bytes + 4 + new_value_bytes;
}

// ---- BtreeWal --------------------------------------------------------------------------------

void BtreeWal::RegisterHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    Node::RegisterStructureCheck();  // recovery and every later read of a node from disk
    using log::RecordType;
    Register(RecordType::kPageUndoRedo, kSubtypeBtreeInsert, "btree_insert",
             &RedoOp<OpKind::kInsert>, &UndoOp<OpKind::kInsert>);
    Register(RecordType::kPageUndoRedo, kSubtypeBtreeUpdate, "btree_update",
             &RedoOp<OpKind::kUpdate>, &UndoOp<OpKind::kUpdate>);
    Register(RecordType::kPageUndoRedo, kSubtypeBtreeDelete, "btree_delete",
             &RedoOp<OpKind::kDelete>, &UndoOp<OpKind::kDelete>);
    Register(RecordType::kCompensation, kSubtypeBtreeClrInsert, "btree_clr_insert",
             &RedoOp<OpKind::kInsert>, nullptr);
    Register(RecordType::kCompensation, kSubtypeBtreeClrUpdate, "btree_clr_update",
             &RedoOp<OpKind::kUpdate>, nullptr);
    Register(RecordType::kCompensation, kSubtypeBtreeClrDelete, "btree_clr_delete",
             &RedoOp<OpKind::kDelete>, nullptr);
    Register(RecordType::kPageUndoRedo, kSubtypeBtreeUpdateDiff, "btree_update_diff",
             &RedoUpdateDiff, &UndoUpdateDiff);
    Register(RecordType::kCompensation, kSubtypeBtreeClrUpdateDiff, "btree_clr_update_diff",
             &RedoUpdateDiff, nullptr);
    Register(RecordType::kPageUndoRedo, kSubtypeBtreeAdd, "btree_add", &RedoUpdateDiff,
             &UndoAdd);
  });
}

void BtreeWal::TEST_SetUndoHook(std::function<void()> hook) { UndoHook() = std::move(hook); }

BtreeWal::BtreeWal(txn::TxnManager* txns) : txns_(txns) {
  SM_ASSERT(txns_ != nullptr);
  RegisterHandlers();
}

Status BtreeWal::LogInsert(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                           std::string_view key, std::string_view value, bool external,
                           Lsn* lsn) {
  return LogRecordOp(txns_, OpKind::kInsert, txn, tree, leaf, record_index, key, {}, false, value,
                     external, lsn);
}

Status BtreeWal::LogUpdate(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                           std::string_view key, std::string_view old_value, bool old_external,
                           std::string_view new_value, bool new_external, Lsn* lsn) {
  ValueDiff diff;
  // A diff carries no marks: a stub's change (in or out of the mark) is logged whole.
  if (old_external || new_external ||
      !DiffValues(old_value, new_value, &diff) ||
      DiffUpdatePayloadBytes(key.size(), diff) >=
          FullUpdatePayloadBytes(key.size(), old_value.size(), new_value.size())) {
    return LogRecordOp(txns_, OpKind::kUpdate, txn, tree, leaf, record_index, key, old_value,
                       old_external, new_value, new_external, lsn);
  }
  txn::Txn* t = nullptr;
  SM_TRY(TxnOf(txn, &t));
  RecordOp op{tree.root_page_id(), record_index, key, old_value, new_value};
  EncodeDiff(op, diff, t->payload_buffer());
  return AppendOp(txns_, t, kSubtypeBtreeUpdateDiff, kSubtypeBtreeClrUpdateDiff, leaf, lsn);
}

Status BtreeWal::LogDelete(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                           std::string_view key, std::string_view old_value, bool old_external,
                           Lsn* lsn) {
  return LogRecordOp(txns_, OpKind::kDelete, txn, tree, leaf, record_index, key, old_value,
                     old_external, {}, false, lsn);
}

Status BtreeWal::LogAdd(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                        std::string_view key, std::string_view old_value,
                        std::string_view new_value, uint16_t offset, Lsn* lsn) {
  SM_DASSERT(old_value.size() == new_value.size() && offset + 8u <= new_value.size());
  txn::Txn* t = nullptr;
  SM_TRY(TxnOf(txn, &t));
  // One range, the counter, even where its old and new bytes agree in part: undo reads the
  // delta from exactly these 8 bytes.
  ValueDiff diff;
  diff.ranges[0] = ValueRange{offset, sizeof(uint64_t)};
  diff.count = 1;
  RecordOp op{tree.root_page_id(), record_index, key, old_value, new_value};
  EncodeDiff(op, diff, t->payload_buffer());
  return AppendOp(txns_, t, kSubtypeBtreeAdd, kSubtypeBtreeClrUpdateDiff, leaf, lsn);
}

Status BtreeWal::BeginStructureChange(const BTree& tree) { return txns_->health(); }

Status BtreeWal::EndStructureChange(const BTree& tree, std::span<PageHandle* const> pages,
                                    Lsn* lsn) {
  std::vector<txn::PageImage> images;
  images.reserve(pages.size());
  uint32_t epoch = 0;
  for (PageHandle* page : pages) {
    txn::PageImage image;
    image.page = page;
    Node(page->data()).FreeGap(&image.hole_offset, &image.hole_bytes);
    images.push_back(image);
    page->NeedsFullImage(&epoch);
  }
  SM_TRY(txn::LogPageImages(txns_, images, lsn));
  // Whole images of these pages are in the log now: they count as the pages' full images.
  for (PageHandle* page : pages) page->FullImageLogged(epoch);
  return Status::OK();
}

Status BtreeWal::LogFormatRoot(const BTree& tree, PageHandle& root, Lsn* lsn) {
  PageHandle* pages[] = {&root};
  return EndStructureChange(tree, pages, lsn);
}

}  // namespace sm::index
