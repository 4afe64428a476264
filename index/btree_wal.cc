// BtreeWal: the B-tree's log records, their payload codec, and their redo and undo handlers
// (format and contract in btree_wal.h).
#include "index/btree_wal.h"

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
};

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
  PutFixed16(payload, op.record_index);
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
  op->root = PageId(root);
  // What the tree could never have logged: rejected before anything is built from it.
  if (!op->root.valid() || op->key.size() > kMaxKeyBytes ||
      LeafRecordBytes(op->key.size(), op->old_value.size()) > kMaxLeafRecordBytes ||
      LeafRecordBytes(op->key.size(), op->new_value.size()) > kMaxLeafRecordBytes) {
    return Status::Corruption(RecordName(record) + ": root, key or value out of bounds");
  }
  return Status::OK();
}

// ---- Redo ------------------------------------------------------------------------------------

Status Mismatch(const log::LogRecordView& record, const std::string& what) {
  return Status::Corruption("redo of " + RecordName(record) + " on page " +
                            std::to_string(record.page.value()) + ": " + what);
}

// The page must be an intact leaf of the record's tree; its fences must be readable.
Status CheckLeaf(const log::LogRecordView& record, const RecordOp& op, const Node& node) {
  PageType type = PageTypeOf(node.page());
  if (type != PageType::kBtreeLeaf) {
    return Mismatch(record,
                    std::string("not a B-tree leaf (page type ") + PageTypeName(type) + ")");
  }
  const BtreeNodeHeader& header = node.header();
  if (header.format_version != kBtreeNodeFormatVersion || header.level != 0) {
    return Mismatch(record, "not a leaf of node format " + std::to_string(kBtreeNodeFormatVersion));
  }
  if (header.tree_root != op.root.value()) {
    return Mismatch(record, "the leaf belongs to the tree rooted at page " +
                                std::to_string(header.tree_root) + ", the record to page " +
                                std::to_string(op.root.value()));
  }
  if (!node.AreaBoundsIntact() || !node.SlotIntact(kLowFenceSlot) ||
      !node.SlotIntact(kHighFenceSlot)) {
    return Mismatch(record, "the slotted area is damaged");
  }
  return Status::OK();
}

// The record at op.record_index must hold op.key with op.old_value (update, delete).
Status CheckExisting(const log::LogRecordView& record, const RecordOp& op, const Node& node) {
  uint16_t i = op.record_index;
  if (i >= node.count()) {
    return Mismatch(record, "record index " + std::to_string(i) + " is not below the count " +
                                std::to_string(node.count()));
  }
  if (!node.RecordIntact(i)) {
    return Mismatch(record, "record " + std::to_string(i) + " is damaged");
  }
  if (node.KeyAt(i) != op.key) {
    return Mismatch(record, "record " + std::to_string(i) + " has another key");
  }
  if (node.ValueAt(i) != op.old_value) {
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
  if (!node.InsertLeafRecord(i, op.key, op.new_value).ok()) {
    return Mismatch(record, "the record does not fit");
  }
  return Status::OK();
}

Status ApplyUpdate(const log::LogRecordView& record, const RecordOp& op, Node& node) {
  SM_TRY(CheckExisting(record, op, node));
  if (!node.UpdateLeafValue(op.record_index, op.new_value).ok()) {
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
  SM_TRY(CheckLeaf(record, op, node));
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
  return Status::OK();
}

// ---- Undo ------------------------------------------------------------------------------------

// BtreeWal::TEST_SetUndoHook; set only while no rollback runs.
std::function<void()>& UndoHook() {
  static std::function<void()> hook;
  return hook;
}

// RecordHandler::undo (kPageUndoRedo only): the inverse operation by key, in ctx.txn, whose
// compensating() is set, so the tree's logger call writes the compensation record.
template <OpKind kKind>
Status UndoOp(txn::UndoContext& ctx, const log::LogRecordView& record) {
  RecordOp op;
  SM_TRY(DecodeOp(kKind, record, &op));
  SM_ASSERT(ctx.txn != nullptr && ctx.txn->compensating());
  BtreeWal wal(ctx.txns);
  BtreeOptions options;
  options.logger = &wal;
  std::unique_ptr<BTree> tree;
  Status opened = BTree::Open(ctx.txns->pool(), op.root, options, &tree);
  if (opened.IsInvalidArgument()) {
    return Status::Corruption("undo of " + RecordName(record) + ": " + opened.ToString());
  }
  SM_TRY(opened);
  // No key locks: the transaction still holds its own; at restart no other transaction runs.
  OpContext op_ctx{ctx.txn, nullptr};
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

void Register(log::RecordType type, uint8_t subtype, const char* name,
              Status (*redo_page)(const log::LogRecordView&, char*),
              Status (*undo)(txn::UndoContext&, const log::LogRecordView&)) {
  txn::RecordHandler handler;
  handler.name = name;
  handler.redo_page = redo_page;
  handler.undo = undo;
  txn::RegisterRecordHandler(type, subtype, handler);
}

// Appends the record of one record operation (or its compensation) to txn's chain; *lsn: its
// end, the page LSN of the change.
Status LogRecordOp(txn::TxnManager* txns, OpKind kind, void* txn_ptr, const BTree& tree,
                   const PageHandle& leaf, uint16_t record_index, std::string_view key,
                   std::string_view old_value, std::string_view new_value, Lsn* lsn) {
  auto* txn = static_cast<txn::Txn*>(txn_ptr);
  if (txn == nullptr) {
    return Status::InvalidArgument(
        "a B-tree logged by BtreeWal changes records only in a transaction (OpContext::txn is "
        "null)");
  }
  RecordOp payload_op;
  payload_op.root = tree.root_page_id();
  payload_op.record_index = record_index;
  payload_op.key = key;
  payload_op.old_value = old_value;
  payload_op.new_value = new_value;
  std::string* payload = txn->payload_buffer();
  EncodeOp(kind, payload_op, payload);
  bool compensation = txn->compensating();
  log::LogRecord record;
  record.type = compensation ? log::RecordType::kCompensation : log::RecordType::kPageUndoRedo;
  record.subtype = SubtypeOf(kind, compensation);
  record.page = leaf.page_id();
  if (compensation) record.undo_next = txn->compensation_undo_next();
  record.payload = *payload;
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

}  // namespace

// ---- BtreeWal --------------------------------------------------------------------------------

void BtreeWal::RegisterHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
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
  });
}

void BtreeWal::TEST_SetUndoHook(std::function<void()> hook) { UndoHook() = std::move(hook); }

BtreeWal::BtreeWal(txn::TxnManager* txns) : txns_(txns) {
  SM_ASSERT(txns_ != nullptr);
  RegisterHandlers();
}

Status BtreeWal::LogInsert(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                           std::string_view key, std::string_view value, Lsn* lsn) {
  return LogRecordOp(txns_, OpKind::kInsert, txn, tree, leaf, record_index, key, {}, value, lsn);
}

Status BtreeWal::LogUpdate(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                           std::string_view key, std::string_view old_value,
                           std::string_view new_value, Lsn* lsn) {
  return LogRecordOp(txns_, OpKind::kUpdate, txn, tree, leaf, record_index, key, old_value,
                     new_value, lsn);
}

Status BtreeWal::LogDelete(void* txn, const BTree& tree, PageHandle& leaf, uint16_t record_index,
                           std::string_view key, std::string_view old_value, Lsn* lsn) {
  return LogRecordOp(txns_, OpKind::kDelete, txn, tree, leaf, record_index, key, old_value, {},
                     lsn);
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
