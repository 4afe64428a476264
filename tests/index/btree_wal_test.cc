// The B-tree's write-ahead logging (index/btree_wal.h): the records a record operation and a
// structure change write, the undo of records into full leaves (splits during the undo), redo
// strictness on a page that does not match, the B-tree's structure changes after a crash (right
// after a split record but before the record that needed it, a contention split, retired
// leaves), and the diff and addition forms of updates (their ranges, redo, undo). The
// transaction layer's own rollback and restart tests are in tests/txn/.
//
// Setup: tests/txn/txn_test_util.h (a small pool makes the pool write pages on its own).
#include "index/btree_wal.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "index/btree.h"
#include "index/btree_node.h"
#include "log/log_manager.h"
#include "log/log_reader.h"
#include "log/recovery.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/common/coding.h"
#include "sm/io/testing/fault_file.h"
#include "sm/lock/lock_manager.h"
#include "sm/space/volume.h"
#include "sm/txn/page_images.h"
#include "sm/txn/record_handlers.h"
#include "sm/txn/txn.h"
#include "sm/txn/txn_manager.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"
#include "tests/txn/txn_test_util.h"

using namespace sm;
using index::BTree;
using index::BtreeWal;
using io::CrashMode;
using sm::test::CrashingLogger;
using sm::test::In;
using sm::test::Key64;
using sm::test::LoadCommitted;
using sm::test::LogRecords;
using sm::test::Model;
using sm::test::Patched;
using sm::test::RequireVerified;
using sm::test::ValueFor;
using sm::test::WalDb;

namespace {

bool IsImages(const log::LogRecordView& r) {
  return r.type == log::RecordType::kPageRedo && r.subtype == txn::kSubtypePageImages;
}

std::string OpPayload(PageId root, uint16_t index, std::string_view key,
                      std::vector<std::string_view> values) {
  std::string p;
  PutFixed64(&p, root.value());
  PutFixed16(&p, index);
  PutLengthPrefixed(&p, key);
  for (std::string_view v : values) PutLengthPrefixed(&p, v);
  return p;
}

}  // namespace

// ---- The records ------------------------------------------------------------------------------

TEST_CASE("btree wal: record operations are records of the transaction's chain",
          "[unit][btree][wal]") {
  WalDb db(1, 64);
  auto t = db.Begin();
  REQUIRE(db.tree->Insert("b", "1", In(t.get())).ok());
  REQUIRE(db.tree->Insert("a", "2", In(t.get())).ok());
  REQUIRE(db.tree->Update("b", "33", In(t.get())).ok());
  REQUIRE(db.tree->Delete("a", In(t.get())).ok());
  REQUIRE(db.txns->Commit(t.get()).ok());
  std::vector<log::LogRecordBuf> records = LogRecords(db);
  REQUIRE(records.size() == 6);
  // Create: one redo-only system record with the root's image.
  const log::LogRecordView& format = records[0].view();
  REQUIRE(IsImages(format));
  REQUIRE(format.page == db.root);
  REQUIRE(!format.txn.valid());
  REQUIRE((format.flags & log::kFlagSystemTxn) != 0);
  REQUIRE(format.payload.size() < kPageBytes / 8);  // an empty root: its free gap is left out
  struct Expected {
    uint8_t subtype;
    std::string payload;
  };
  std::vector<Expected> expected = {
      {index::kSubtypeBtreeInsert, OpPayload(db.root, 0, "b", {"1"})},
      {index::kSubtypeBtreeInsert, OpPayload(db.root, 0, "a", {"2"})},
      {index::kSubtypeBtreeUpdate, OpPayload(db.root, 1, "b", {"1", "33"})},
      {index::kSubtypeBtreeDelete, OpPayload(db.root, 0, "a", {"2"})},
  };
  Lsn prev;
  for (size_t i = 0; i < expected.size(); ++i) {
    const log::LogRecordView& r = records[1 + i].view();
    INFO("record " << i);
    REQUIRE(r.type == log::RecordType::kPageUndoRedo);
    REQUIRE(r.subtype == expected[i].subtype);
    REQUIRE(r.txn == t->id());
    REQUIRE(r.page == db.root);
    REQUIRE(r.prev_lsn == prev);
    REQUIRE(r.payload == expected[i].payload);
    prev = r.lsn;
  }
  REQUIRE(records[5].view().type == log::RecordType::kTxnCommit);
  // The root carries the end of the last record that changed it (page LSN convention).
  buffer::PageHandle root;
  REQUIRE(db.pool->Fix(db.root, threads::LatchMode::kShared, &root).ok());
  REQUIRE(PageLsn(root.data()) == records[4].view().end_lsn());
}

TEST_CASE("btree wal: a structure change is one page-image record of every page it changed",
          "[unit][btree][wal]") {
  WalDb db(2, 256);
  Model model;
  auto t = db.Begin();
  uint64_t n = 0;
  while (db.tree->counters().inner_splits == 0) {
    uint64_t k = (n++ * 2654435761u) % 1000003;  // scattered: splits are balanced
    std::string value = ValueFor(k, 0, 200);
    REQUIRE(db.tree->Insert(Key64(k), value, In(t.get())).ok());
    model[Key64(k)] = value;
  }
  REQUIRE(db.txns->Commit(t.get()).ok());
  index::BtreeCounters c = db.tree->counters();
  uint64_t images = 0;
  size_t largest_pages = 0;
  for (const log::LogRecordBuf& buf : LogRecords(db)) {
    const log::LogRecordView& r = buf.view();
    if (!IsImages(r)) continue;
    ++images;
    // Payload (page_images.h): u16 count, then per page u64 id, u16 hole offset, u16 hole
    // bytes and the page without its hole.
    ByteReader in(r.payload);
    uint16_t pages = 0;
    REQUIRE(in.GetFixed16(&pages));
    largest_pages = std::max<size_t>(largest_pages, pages);
    int small_images = 0;
    for (uint16_t i = 0; i < pages; ++i) {
      uint64_t id = 0;
      uint16_t hole_offset = 0;
      uint16_t hole_bytes = 0;
      std::string_view image;
      REQUIRE(in.GetFixed64(&id));
      REQUIRE(in.GetFixed16(&hole_offset));
      REQUIRE(in.GetFixed16(&hole_bytes));
      REQUIRE(in.GetBytes(kPageBytes - hole_bytes, &image));
      if (image.size() < kPageBytes * 3 / 4) ++small_images;
    }
    REQUIRE(in.done());
    // Every split leaves two about half-full nodes (the keys are scattered), whose images
    // leave their free gap out: about half a page each, not a whole page.
    if (pages > 1) REQUIRE(small_images >= 2);
  }
  // Create's root, then one record per structure change, whatever it spanned.
  REQUIRE(images == 1 + db.logger->structure_changes());
  REQUIRE(db.logger->structure_changes() == c.leaf_splits);  // each began with a leaf split
  REQUIRE(largest_pages >= 5);  // the inner split's cascade: leaf, its parent and the root
  db.RequireTree(model);
}

TEST_CASE("btree wal: a record operation outside a transaction is refused and changes nothing",
          "[unit][btree][wal]") {
  WalDb db(3, 64);
  Model model;
  LoadCommitted(db, &model, 0, 10, 1, 20);
  Lsn end = db.log->end_lsn();
  REQUIRE(db.tree->Insert(Key64(100), "x").IsInvalidArgument());
  REQUIRE(db.tree->Update(Key64(1), "x").IsInvalidArgument());
  // A same-length value is written in place before the log call: it is put back.
  REQUIRE(db.tree->Update(Key64(1), std::string(model[Key64(1)].size(), 'x')).IsInvalidArgument());
  REQUIRE(db.tree->Delete(Key64(1)).IsInvalidArgument());
  auto t = db.Begin();
  REQUIRE(db.txns->Commit(t.get()).ok());
  REQUIRE(db.tree->Insert(Key64(100), "x", In(t.get())).IsTxnFinished());  // finished
  REQUIRE(db.log->end_lsn() == end);
  std::string value;
  REQUIRE(db.tree->Lookup(Key64(1), &value).ok());  // reads need no transaction
  db.RequireTree(model);
}

// ---- Rollback --------------------------------------------------------------------------------

TEST_CASE("btree wal: an abort that re-inserts into full leaves splits during the undo",
          "[unit][btree][wal]") {
  WalDb db(5, 64);
  Model model;
  LoadCommitted(db, &model, 0, 400, 10, 100);
  // t1 deletes keys and shrinks values; t2 (other keys) then fills the leaves and commits, so
  // t1's undo must re-insert and grow records in full leaves.
  auto t1 = db.Begin();
  for (uint64_t k = 0; k < 4000; k += 40) {
    REQUIRE(db.tree->Delete(Key64(k), In(t1.get())).ok());
    REQUIRE(db.tree->Update(Key64(k + 10), "s", In(t1.get())).ok());
  }
  auto t2 = db.Begin();
  for (uint64_t k = 1; k < 4000; k += 10) {
    for (uint64_t j = 0; j < 3; ++j) {
      std::string value = ValueFor(k + j, 2, 120);
      REQUIRE(db.tree->Insert(Key64(k + j), value, In(t2.get())).ok());
      model[Key64(k + j)] = value;
    }
  }
  REQUIRE(db.txns->Commit(t2.get()).ok());
  index::BtreeStats before;
  RequireVerified(*db.tree, &before);
  uint64_t changes = db.logger->structure_changes();
  REQUIRE(db.txns->Abort(t1.get()).ok());
  index::BtreeStats after;
  RequireVerified(*db.tree, &after);
  REQUIRE(after.pages() > before.pages());             // the undo split leaves
  REQUIRE(db.logger->structure_changes() == changes);  // through the undo's own BtreeWal
  db.RequireTree(model);
}

// ---- Redo strictness -------------------------------------------------------------------------

TEST_CASE("btree wal: redo reports a page that does not match the record, never crashes",
          "[unit][btree][wal]") {
  WalDb db(6, 64);
  Model model;
  LoadCommitted(db, &model, 10, 5, 10, 20);  // keys 10..50 in the root leaf
  BtreeWal::RegisterHandlers();
  auto redo = [&](uint8_t subtype, const std::string& payload, const char* page) {
    const txn::RecordHandler* handler =
        txn::FindRecordHandler(log::RecordType::kPageUndoRedo, subtype);
    REQUIRE(handler != nullptr);
    REQUIRE(handler->redo_page != nullptr);
    log::LogRecordView record;
    record.type = log::RecordType::kPageUndoRedo;
    record.subtype = subtype;
    record.page = db.root;
    record.payload = payload;
    record.lsn = Lsn(4242);
    record.length = 64;
    std::vector<char> copy(page, page + kPageBytes);
    return handler->redo_page(record, copy.data());
  };
  buffer::PageHandle leaf;
  REQUIRE(db.pool->Fix(db.root, threads::LatchMode::kShared, &leaf).ok());
  const char* page = leaf.data();
  auto require_corruption = [](const Status& s) {
    INFO(s.ToString());
    REQUIRE(s.IsCorruption());
    REQUIRE(s.ToString().find("LSN 4242") != std::string::npos);
  };
  auto require_page = [&](const Status& s) {
    require_corruption(s);
    REQUIRE(s.ToString().find("page " + std::to_string(db.root.value())) != std::string::npos);
  };
  // Matching records apply.
  REQUIRE(redo(index::kSubtypeBtreeInsert, OpPayload(db.root, 1, Key64(15), {"v"}), page).ok());
  REQUIRE(
      redo(index::kSubtypeBtreeDelete, OpPayload(db.root, 0, Key64(10), {model[Key64(10)]}), page)
          .ok());
  // Insert: wrong position, duplicate, beyond the count, another tree.
  require_page(redo(index::kSubtypeBtreeInsert, OpPayload(db.root, 0, Key64(15), {"v"}), page));
  require_page(redo(index::kSubtypeBtreeInsert, OpPayload(db.root, 1, Key64(20), {"v"}), page));
  require_page(redo(index::kSubtypeBtreeInsert, OpPayload(db.root, 9, Key64(99), {"v"}), page));
  require_page(redo(index::kSubtypeBtreeInsert, OpPayload(PageId(77), 1, Key64(15), {"v"}), page));
  // Update and delete: another key or another old value at the index, index out of range.
  require_page(
      redo(index::kSubtypeBtreeUpdate, OpPayload(db.root, 0, Key64(20), {"x", "y"}), page));
  require_page(redo(index::kSubtypeBtreeUpdate,
                    OpPayload(db.root, 1, Key64(20), {"not the old value", "y"}), page));
  require_page(redo(index::kSubtypeBtreeDelete, OpPayload(db.root, 5, Key64(10), {"x"}), page));
  // A malformed payload.
  require_corruption(redo(index::kSubtypeBtreeInsert, "short", page));
  require_corruption(
      redo(index::kSubtypeBtreeDelete, OpPayload(db.root, 0, Key64(10), {}) + "x", page));
  // Not a leaf: a free page, and a leaf whose slot directory runs off the page.
  std::vector<char> free_page(kPageBytes, 0);
  InitPage(free_page.data(), db.root, PageType::kFree);
  require_page(
      redo(index::kSubtypeBtreeInsert, OpPayload(db.root, 0, "k", {"v"}), free_page.data()));
  std::vector<char> damaged(page, page + kPageBytes);
  uint16_t slots = 0xffff;
  std::memcpy(damaged.data() + index::kNodeAreaOffset, &slots, sizeof(slots));
  require_page(
      redo(index::kSubtypeBtreeDelete, OpPayload(db.root, 0, Key64(10), {"x"}), damaged.data()));
  std::vector<char> bad_slot(page, page + kPageBytes);
  uint16_t offset = 8190;
  std::memcpy(bad_slot.data() + index::kNodeAreaOffset + SlottedPage::kAreaHeaderBytes +
                  SlottedPage::kSlotBytes * index::kFirstRecordSlot,
              &offset, sizeof(offset));
  require_page(
      redo(index::kSubtypeBtreeDelete, OpPayload(db.root, 0, Key64(10), {"x"}), bad_slot.data()));
}

// ---- Restart ---------------------------------------------------------------------------------

TEST_CASE("btree wal: a crash right after a split record, before the record that needed it",
          "[unit][crash][btree][wal]") {
  for (bool durable : {true, false}) {
    INFO("split record durable: " << durable);
    WalDb db(8, 64);
    Model model;
    LoadCommitted(db, &model, 0, 200, 2, 100);
    index::BtreeStats before;
    RequireVerified(*db.tree, &before);
    db.logger->Arm(CrashingLogger::Point::kStructureChange, 1, durable);
    auto t = db.Begin();
    Status s;
    uint64_t k = 1;
    for (; s.ok(); k += 2) s = db.tree->Insert(Key64(k), ValueFor(k, 1, 100), In(t.get()));
    REQUIRE(db.logger->fired());
    REQUIRE(!s.ok());  // the insert's own record could not be logged
    db.in_flight.push_back(std::move(t));
    db.Crash(CrashMode::kTearUnsynced, CrashMode::kKeepUnsynced);
    db.Restart();
    db.RequireTree(model);
    index::BtreeStats after;
    RequireVerified(*db.tree, &after);
    if (durable) REQUIRE(after.pages() > before.pages());  // the split is there, well formed
  }
}

// Contention split (btree.h): writes of two records of one leaf, every one counted as having
// waited for the latch, until the leaf splits between them; returns their transaction.
std::unique_ptr<txn::Txn> SplitByContention(WalDb& db, uint64_t a, uint64_t b, Model* model) {
  index::BtreeOptions options;
  options.logger = db.logger.get();
  options.contention_split_threshold = 2;
  options.test_every_write_waited = true;
  REQUIRE(BTree::Open(db.pool.get(), db.root, options, &db.tree).ok());
  auto t = db.Begin();
  for (uint64_t i = 0; db.tree->counters().contention_splits == 0; ++i) {
    REQUIRE(i < 4);
    uint64_t k = i % 2 == 0 ? a : b;
    std::string value = ValueFor(k, i + 1, 40);
    REQUIRE(db.tree->Update(Key64(k), value, In(t.get())).ok());
    if (model != nullptr) (*model)[Key64(k)] = value;
  }
  return t;
}

TEST_CASE("btree wal: a contention split is redone after a crash, whatever its writer's fate",
          "[unit][crash][btree][wal]") {
  for (CrashMode volume_mode : {CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced}) {
    INFO("volume crash mode " << static_cast<int>(volume_mode));
    WalDb db(9, 64);
    Model model;
    LoadCommitted(db, &model, 0, 20, 1, 40);
    // Committed: the split and the updates are redone.
    auto t = SplitByContention(db, 3, 15, &model);
    REQUIRE(db.txns->Commit(t.get()).ok());
    t.reset();
    REQUIRE(db.log->FlushAll().ok());
    index::BtreeStats stats;
    RequireVerified(*db.tree, &stats);
    REQUIRE(stats.pages_per_level[0] == 2);
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers.empty());
    db.RequireTree(model);
    RequireVerified(*db.tree, &stats);
    REQUIRE(stats.pages_per_level[0] == 2);
    // A loser: its updates are undone, the split (redo-only) stays.
    auto loser = SplitByContention(db, 16, 19, nullptr);
    REQUIRE(db.log->FlushAll().ok());
    db.in_flight.push_back(std::move(loser));
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers.size() == 1);
    db.RequireTree(model);
    RequireVerified(*db.tree, &stats);
    REQUIRE(stats.pages_per_level[0] == 3);
  }
}

TEST_CASE("btree wal: retired leaves are redone after a crash, and a loser's deletes come back",
          "[unit][crash][btree][wal]") {
  for (CrashMode volume_mode : {CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced}) {
    INFO("volume crash mode " << static_cast<int>(volume_mode));
    WalDb db(9, 64);
    Model model;
    LoadCommitted(db, &model, 0, 1200, 1, 80);
    index::BtreeStats before, stats;
    RequireVerified(*db.tree, &before);
    // Committed: the deletes and the retirements of the leaves they emptied are redone.
    auto t = db.Begin();
    for (uint64_t k = 200; k < 600; ++k) {
      REQUIRE(db.tree->Delete(Key64(k), In(t.get())).ok());
      model.erase(Key64(k));
    }
    REQUIRE(db.txns->Commit(t.get()).ok());
    t.reset();
    REQUIRE(db.tree->counters().leaf_merges >= 3);
    RequireVerified(*db.tree, &stats);
    const uint64_t leaves = stats.pages_per_level[0];
    REQUIRE(leaves < before.pages_per_level[0]);
    REQUIRE(db.log->FlushAll().ok());
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers.empty());
    db.RequireTree(model);
    RequireVerified(*db.tree, &stats);
    REQUIRE(stats.pages_per_level[0] == leaves);
    // A loser empties more leaves, which retire (redo-only); undo puts its keys back into the
    // leaves that took over their ranges.
    auto loser = db.Begin();
    for (uint64_t k = 700; k < 1000; ++k) REQUIRE(db.tree->Delete(Key64(k), In(loser.get())).ok());
    REQUIRE(db.tree->counters().leaf_merges >= 2);
    REQUIRE(db.log->FlushAll().ok());
    db.in_flight.push_back(std::move(loser));
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers.size() == 1);
    db.RequireTree(model);
    RequireVerified(*db.tree);
  }
}

// ---- Diff updates ----------------------------------------------------------------------------

namespace {

// old_value with diff's ranges copied from new_value: the value a redo of the diff makes.
std::string ApplyDiff(std::string old_value, std::string_view new_value,
                      const index::ValueDiff& diff) {
  for (uint8_t r = 0; r < diff.count; ++r) {
    const index::ValueRange& range = diff.ranges[r];
    old_value.replace(range.offset, range.bytes, new_value.substr(range.offset, range.bytes));
  }
  return old_value;
}

// A diff payload by hand (btree_wal.h): ranges of (offset, old bytes, new bytes).
struct RawRange {
  uint16_t offset;
  std::string old_bytes;
  std::string new_bytes;
};
std::string DiffPayload(PageId root, uint16_t index, std::string_view key, uint16_t value_bytes,
                        const std::vector<RawRange>& ranges) {
  std::string p;
  PutFixed64(&p, root.value());
  PutFixed16(&p, index);
  PutLengthPrefixed(&p, key);
  PutFixed16(&p, value_bytes);
  p.push_back(static_cast<char>(ranges.size()));
  for (const RawRange& r : ranges) {
    PutFixed16(&p, r.offset);
    PutFixed16(&p, static_cast<uint16_t>(r.old_bytes.size()));
    p += r.old_bytes;
    p += r.new_bytes;
  }
  return p;
}

// The record operations (kPageUndoRedo and kCompensation) of transaction `id`, in log order.
std::vector<log::LogRecordBuf> OpsOf(WalDb& db, TxnId id) {
  std::vector<log::LogRecordBuf> ops;
  for (log::LogRecordBuf& buf : LogRecords(db)) {
    const log::LogRecordView& r = buf.view();
    if (r.txn != id) continue;
    if (r.type == log::RecordType::kPageUndoRedo || r.type == log::RecordType::kCompensation) {
      ops.push_back(buf);
    }
  }
  return ops;
}

Status RedoOnCopy(uint8_t subtype, const std::string& payload, PageId page, Lsn lsn,
                  std::vector<char>* copy) {
  const txn::RecordHandler* handler =
      txn::FindRecordHandler(log::RecordType::kPageUndoRedo, subtype);
  REQUIRE(handler != nullptr);
  REQUIRE(handler->redo_page != nullptr);
  log::LogRecordView record;
  record.type = log::RecordType::kPageUndoRedo;
  record.subtype = subtype;
  record.page = page;
  record.payload = payload;
  record.lsn = lsn;
  record.length = 64;
  return handler->redo_page(record, copy->data());
}

}  // namespace

TEST_CASE("btree wal: DiffValues finds the changed ranges and merges short gaps",
          "[unit][btree][wal]") {
  index::ValueDiff diff;
  std::string old_value(300, 'x');
  auto changed = [&](std::initializer_list<size_t> at) {
    std::string v = old_value;
    for (size_t i : at) v[i] = 'y';
    return v;
  };
  SECTION("equal values: no range") {
    REQUIRE(index::DiffValues(old_value, old_value, &diff));
    REQUIRE(diff.count == 0);
  }
  SECTION("one range, at the start, in a word's middle and at the very end") {
    for (size_t at : {size_t{0}, size_t{13}, size_t{299}}) {
      REQUIRE(index::DiffValues(old_value, changed({at}), &diff));
      REQUIRE(diff.count == 1);
      REQUIRE(diff.ranges[0].offset == at);
      REQUIRE(diff.ranges[0].bytes == 1);
    }
    REQUIRE(index::DiffValues(old_value, changed({4, 5, 6, 7, 8, 9}), &diff));
    REQUIRE(diff.count == 1);
    REQUIRE(diff.ranges[0].offset == 4);
    REQUIRE(diff.ranges[0].bytes == 6);
  }
  SECTION("a gap of kDiffMergeGapBytes is merged, one byte more is not") {
    size_t gap = index::kDiffMergeGapBytes;
    REQUIRE(index::DiffValues(old_value, changed({10, 10 + gap + 1}), &diff));
    REQUIRE(diff.count == 1);
    REQUIRE(diff.ranges[0].offset == 10);
    REQUIRE(diff.ranges[0].bytes == gap + 2);
    REQUIRE(index::DiffValues(old_value, changed({10, 10 + gap + 2, 200}), &diff));
    REQUIRE(diff.count == 3);
    REQUIRE(diff.ranges[1].offset == 10 + gap + 2);
    REQUIRE(diff.ranges[2].offset == 200);
  }
  SECTION("no diff form: other lengths, or more than kMaxDiffRanges ranges") {
    REQUIRE(!index::DiffValues(old_value, old_value + "z", &diff));
    REQUIRE(!index::DiffValues(old_value, "", &diff));
    std::string many = old_value;
    for (size_t r = 0; r <= index::kMaxDiffRanges; ++r) many[r * 20] = 'y';
    REQUIRE(!index::DiffValues(old_value, many, &diff));
    many[index::kMaxDiffRanges * 20] = 'x';  // back to kMaxDiffRanges ranges
    REQUIRE(index::DiffValues(old_value, many, &diff));
    REQUIRE(diff.count == index::kMaxDiffRanges);
  }
  SECTION("payload sizes: a diff is never longer than the full update, even of every byte") {
    REQUIRE(index::DiffValues(old_value, changed({0, 1, 2, 3}), &diff));
    REQUIRE(index::DiffUpdatePayloadBytes(8, diff) + 2 * 296 <
            index::FullUpdatePayloadBytes(8, old_value.size(), old_value.size()));
    std::string all(300, 'y');
    REQUIRE(index::DiffValues(old_value, all, &diff));
    REQUIRE(diff.count == 1);
    REQUIRE(index::DiffUpdatePayloadBytes(8, diff) ==
            index::FullUpdatePayloadBytes(8, old_value.size(), old_value.size()) - 1);
  }
}

TEST_CASE("btree wal: DiffValues ranges turn the old value into the new one",
          "[random][btree][wal]") {
  uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("SM_SEED")) seed = std::strtoull(s, nullptr, 10);
  std::printf("btree wal diff seed: %llu (SM_SEED=%llu replays it)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 2000; ++round) {
    std::string old_value = ValueFor(rng() % 1000, rng() % 10, rng() % 700);
    std::string new_value = Patched(old_value, rng, static_cast<int>(rng() % 12));
    index::ValueDiff diff;
    if (!index::DiffValues(old_value, new_value, &diff)) {
      REQUIRE(old_value.size() == new_value.size());
      continue;  // too many ranges
    }
    REQUIRE(ApplyDiff(old_value, new_value, diff) == new_value);
    REQUIRE(index::DiffUpdatePayloadBytes(8, diff) <
            index::FullUpdatePayloadBytes(8, old_value.size(), new_value.size()));
    size_t end = 0;
    for (uint8_t r = 0; r < diff.count; ++r) {
      const index::ValueRange& range = diff.ranges[r];
      REQUIRE(range.bytes > 0);
      REQUIRE(range.offset >= end);
      if (r > 0) REQUIRE(range.offset - end > index::kDiffMergeGapBytes);  // else merged
      REQUIRE(old_value[range.offset] != new_value[range.offset]);
      REQUIRE(old_value[range.offset + range.bytes - 1] !=
              new_value[range.offset + range.bytes - 1]);
      size_t unchanged = 0;  // a run of unchanged bytes inside the range: a merged gap
      for (size_t i = range.offset; i < size_t{range.offset} + range.bytes; ++i) {
        unchanged = old_value[i] == new_value[i] ? unchanged + 1 : 0;
        REQUIRE(unchanged <= index::kDiffMergeGapBytes);
      }
      end = range.offset + range.bytes;
    }
  }
}

TEST_CASE("btree wal: a same-length update logs the changed bytes only", "[unit][btree][wal]") {
  WalDb db(21, 64);
  Model model;
  LoadCommitted(db, &model, 10, 5, 10, 300);
  std::string before = model[Key64(20)];
  std::string after = before;
  after[0] = '#';
  after[2] = '#';
  after[150] = '#';
  auto t = db.Begin();
  REQUIRE(db.tree->Update(Key64(20), after, In(t.get())).ok());
  REQUIRE(db.tree->Update(Key64(30), model[Key64(30)] + "longer", In(t.get())).ok());
  REQUIRE(db.tree->Update(Key64(40), std::string(300, '#'), In(t.get())).ok());
  REQUIRE(db.txns->Commit(t.get()).ok());
  std::vector<log::LogRecordBuf> ops = OpsOf(db, t->id());
  REQUIRE(ops.size() == 3);
  const log::LogRecordView& diff = ops[0].view();
  REQUIRE(diff.subtype == index::kSubtypeBtreeUpdateDiff);
  REQUIRE(diff.payload == DiffPayload(db.root, 1, Key64(20), 300,
                                      {{0, before.substr(0, 3), after.substr(0, 3)},
                                       {150, before.substr(150, 1), after.substr(150, 1)}}));
  REQUIRE(ops[1].view().subtype == index::kSubtypeBtreeUpdate);  // another length
  // Every byte changed: one range of the whole value, still a byte shorter than the full form.
  REQUIRE(ops[2].view().subtype == index::kSubtypeBtreeUpdateDiff);
  model[Key64(20)] = after;
  model[Key64(30)] += "longer";
  model[Key64(40)] = std::string(300, '#');
  db.RequireTree(model);
}

TEST_CASE("btree wal: redo of a diff record turns the before-page into the after-page",
          "[unit][btree][wal]") {
  WalDb db(22, 64);
  Model model;
  LoadCommitted(db, &model, 10, 5, 10, 200);  // keys 10..50 in the root leaf
  auto page_copy = [&] {
    buffer::PageHandle leaf;
    REQUIRE(db.pool->Fix(db.root, threads::LatchMode::kShared, &leaf).ok());
    return std::vector<char>(leaf.data(), leaf.data() + kPageBytes);
  };
  std::vector<char> before = page_copy();
  std::string value = model[Key64(30)];
  std::string patched = value;
  patched[5] = '!';
  patched[100] = '!';
  patched[199] = '!';
  auto t = db.Begin();
  REQUIRE(db.tree->Update(Key64(30), patched, In(t.get())).ok());
  REQUIRE(db.txns->Commit(t.get()).ok());
  std::vector<char> after = page_copy();
  std::vector<log::LogRecordBuf> ops = OpsOf(db, t->id());
  REQUIRE(ops.size() == 1);
  const log::LogRecordView& r = ops[0].view();
  REQUIRE(r.subtype == index::kSubtypeBtreeUpdateDiff);
  std::string payload(r.payload);

  SECTION("the matching page") {
    std::vector<char> redone = before;
    REQUIRE(RedoOnCopy(r.subtype, payload, db.root, r.lsn, &redone).ok());
    // Everything but the page header (its LSN and checksum are the caller's to stamp).
    REQUIRE(std::equal(redone.begin() + kPageHeaderBytes, redone.end(),
                       after.begin() + kPageHeaderBytes));
  }
  SECTION("a page that does not match: Corruption naming page, LSN and what differed") {
    auto require_mismatch = [&](const Status& s, const char* what) {
      INFO(s.ToString());
      REQUIRE(s.IsCorruption());
      REQUIRE(s.ToString().find("LSN 4242") != std::string::npos);
      REQUIRE(s.ToString().find("page " + std::to_string(db.root.value())) != std::string::npos);
      REQUIRE(s.ToString().find(what) != std::string::npos);
    };
    std::vector<char> copy = after;  // already applied: the old bytes are not there
    require_mismatch(RedoOnCopy(r.subtype, payload, db.root, Lsn(4242), &copy),
                     "does not hold the old bytes");
    REQUIRE(copy == after);  // and nothing was written
    copy = before;
    require_mismatch(RedoOnCopy(r.subtype, DiffPayload(db.root, 2, Key64(30), 199, {}), db.root,
                                Lsn(4242), &copy),
                     "bytes");
    require_mismatch(RedoOnCopy(r.subtype, DiffPayload(db.root, 1, Key64(30), 200, {}), db.root,
                                Lsn(4242), &copy),
                     "another key");
    require_mismatch(RedoOnCopy(r.subtype, DiffPayload(db.root, 9, Key64(30), 200, {}), db.root,
                                Lsn(4242), &copy),
                     "not below the count");
    require_mismatch(RedoOnCopy(r.subtype, DiffPayload(PageId(77), 2, Key64(30), 200, {}), db.root,
                                Lsn(4242), &copy),
                     "page 77");
  }
  SECTION("a malformed payload: Corruption, nothing read out of bounds") {
    auto require_malformed = [&](const std::string& p) {
      std::vector<char> copy = before;
      Status s = RedoOnCopy(index::kSubtypeBtreeUpdateDiff, p, db.root, Lsn(4242), &copy);
      INFO(s.ToString());
      REQUIRE(s.IsCorruption());
      REQUIRE(s.ToString().find("LSN 4242") != std::string::npos);
      REQUIRE(copy == before);
    };
    require_malformed(payload.substr(0, payload.size() - 1));
    require_malformed(payload + "x");
    // A range past the value's end, an empty range, ranges out of order, too many ranges.
    require_malformed(DiffPayload(db.root, 2, Key64(30), 200, {{199, "ab", "cd"}}));
    require_malformed(DiffPayload(db.root, 2, Key64(30), 200, {{10, "", ""}}));
    require_malformed(DiffPayload(db.root, 2, Key64(30), 200, {{20, "a", "b"}, {10, "a", "b"}}));
    require_malformed(DiffPayload(db.root, 2, Key64(30), 200, {{20, "ab", "cd"}, {21, "a", "b"}}));
    std::vector<RawRange> many;
    for (uint16_t i = 0; i <= index::kMaxDiffRanges; ++i)
      many.push_back({uint16_t(i * 10), "a", "b"});
    require_malformed(DiffPayload(db.root, 2, Key64(30), 200, many));
  }
}

TEST_CASE("btree wal: abort undoes several diff updates of one key, after splits moved it",
          "[unit][btree][wal]") {
  WalDb db(23, 64);
  Model model;
  LoadCommitted(db, &model, 0, 8, 100, 300);  // one leaf: the root
  std::mt19937_64 rng(23);
  auto t = db.Begin();
  std::string key = Key64(300);
  std::string value = model[key];
  for (int i = 0; i < 6; ++i) {
    value = Patched(value, rng, 1 + i % 3);
    REQUIRE(db.tree->Update(key, value, In(t.get())).ok());
  }
  // Another transaction splits the root leaf (other keys): the key lives elsewhere now.
  uint64_t changes = db.logger->structure_changes();
  auto t2 = db.Begin();
  for (uint64_t k = 1; k < 60; ++k) {
    std::string v = ValueFor(k, 2, 250);
    REQUIRE(db.tree->Insert(Key64(k), v, In(t2.get())).ok());
    model[Key64(k)] = v;
  }
  REQUIRE(db.txns->Commit(t2.get()).ok());
  REQUIRE(db.logger->structure_changes() > changes);
  REQUIRE(db.txns->Abort(t.get()).ok());
  db.RequireTree(model);
  std::vector<log::LogRecordBuf> ops = OpsOf(db, t->id());
  REQUIRE(ops.size() == 12);
  for (size_t i = 0; i < ops.size(); ++i) {
    INFO("record " << i);
    const log::LogRecordView& r = ops[i].view();
    if (i < 6) {
      REQUIRE(r.type == log::RecordType::kPageUndoRedo);
      REQUIRE(r.subtype == index::kSubtypeBtreeUpdateDiff);
    } else {
      REQUIRE(r.type == log::RecordType::kCompensation);
      REQUIRE(r.subtype == index::kSubtypeBtreeClrUpdateDiff);
      REQUIRE(r.page != db.root);  // the undo found the key in its new leaf
      // Each compensation points at the record before the one it undid.
      REQUIRE(r.undo_next == (i == 11 ? Lsn() : ops[10 - i].view().lsn));
    }
  }
}

TEST_CASE("btree wal: an undo of a diff update that finds other bytes is Corruption",
          "[unit][btree][wal]") {
  WalDb db(24, 64);
  Model model;
  LoadCommitted(db, &model, 10, 5, 10, 100);
  std::string value = model[Key64(20)];
  value[3] = '?';
  auto t = db.Begin();
  REQUIRE(db.tree->Update(Key64(20), value, In(t.get())).ok());
  std::vector<log::LogRecordBuf> ops = OpsOf(db, t->id());
  REQUIRE(ops.size() == 1);
  REQUIRE(ops[0].view().subtype == index::kSubtypeBtreeUpdateDiff);
  {
    // Damage behind the log's back: the byte the update wrote is not there any more.
    buffer::PageHandle leaf;
    REQUIRE(db.pool->Fix(db.root, threads::LatchMode::kExclusive, &leaf).ok());
    index::Node node(leaf.data());
    REQUIRE(node.KeyAt(1) == Key64(20));
    leaf.data()[node.ValueAt(1).data() + 3 - leaf.data()] = '!';
  }
  Status s = db.txns->Abort(t.get());
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  REQUIRE(s.ToString().find("LSN " + std::to_string(ops[0].view().lsn.value())) !=
          std::string::npos);
  REQUIRE(s.ToString().find("does not hold the bytes the update wrote") != std::string::npos);
}

TEST_CASE("btree wal: restart with diff updates undoes losers and redoes winners",
          "[unit][crash][btree][wal]") {
  for (CrashMode volume_mode : {CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced}) {
    INFO("volume crash mode " << static_cast<int>(volume_mode));
    WalDb db(25, 48);
    Model model;
    LoadCommitted(db, &model, 0, 1500, 3, 200);
    REQUIRE(db.txns->Checkpoint().ok());
    std::mt19937_64 rng(25);
    // The loser: several diff updates per key, some reaching the volume before the crash.
    auto loser = db.Begin();
    for (int round = 0; round < 3; ++round) {
      for (uint64_t k = 0; k < 4500; k += 9) {
        std::string v = Patched(model[Key64(k)], rng, 1 + round);
        if (round > 0) v = Patched(v, rng, 1);
        REQUIRE(db.tree->Update(Key64(k), v, In(loser.get())).ok());
      }
      if (round == 0) REQUIRE(db.pool->FlushAll().ok());
    }
    uint64_t loser_records = loser->records_logged();
    // A winner with diff updates of other keys, committed durably.
    auto winner = db.Begin();
    for (uint64_t k = 6; k < 4500; k += 9) {
      std::string v = Patched(model[Key64(k)], rng, 2);
      REQUIRE(db.tree->Update(Key64(k), v, In(winner.get())).ok());
      model[Key64(k)] = v;
    }
    REQUIRE(db.txns->Commit(winner.get()).ok());
    winner.reset();  // before Crash drops the lock manager its lock owner is registered with
    REQUIRE(db.log->FlushAll().ok());
    uint64_t diffs = 0;
    for (const log::LogRecordBuf& buf : LogRecords(db)) {
      if (buf.view().subtype == index::kSubtypeBtreeUpdateDiff &&
          buf.view().type == log::RecordType::kPageUndoRedo) {
        ++diffs;
      }
    }
    REQUIRE(diffs == loser_records + 500);
    TxnId loser_id = loser->id();
    db.in_flight.push_back(std::move(loser));
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers == std::vector<TxnId>{loser_id});
    REQUIRE(db.report.undo_records == loser_records);
    REQUIRE(db.report.redo_records > 0);
    db.RequireTree(model);
    // Again, with the compensation records in the log: nothing to undo, the same tree.
    db.Crash(CrashMode::kTearUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers.empty());
    db.RequireTree(model);
  }
}

namespace {
// The counter at value bytes [8, 16) of every test value (ValueFor values are longer).
int64_t CounterOf(const std::string& value) {
  int64_t v = 0;
  std::memcpy(&v, value.data() + 8, 8);
  return v;
}
std::string WithCounter(std::string value, int64_t v) {
  std::memcpy(value.data() + 8, &v, 8);
  return value;
}
}  // namespace

TEST_CASE("btree wal: an abort subtracts its additions and keeps another transaction's",
          "[unit][btree][wal]") {
  WalDb db(26, 64);
  Model model;
  LoadCommitted(db, &model, 0, 8, 100, 300);
  const std::string key = Key64(300);
  auto loser = db.Begin();
  auto winner = db.Begin();
  // Interleaved on one key (the increment lock lets adders share it; this test takes no locks).
  REQUIRE(db.tree->Add(key, 8, 5, nullptr, In(loser.get())).ok());
  REQUIRE(db.tree->Add(key, 8, 7, nullptr, In(winner.get())).ok());
  REQUIRE(db.tree->Add(key, 8, 1000, nullptr, In(loser.get())).ok());
  REQUIRE(db.tree->Add(Key64(500), 8, -9, nullptr, In(loser.get())).ok());
  REQUIRE(db.txns->Abort(loser.get()).ok());
  REQUIRE(db.txns->Commit(winner.get()).ok());
  model[key] = WithCounter(model[key], CounterOf(model[key]) + 7);  // not the old bytes
  db.RequireTree(model);
  std::vector<log::LogRecordBuf> ops = OpsOf(db, loser->id());
  REQUIRE(ops.size() == 6);
  for (size_t i = 0; i < ops.size(); ++i) {
    INFO("record " << i);
    const log::LogRecordView& r = ops[i].view();
    REQUIRE(r.type == (i < 3 ? log::RecordType::kPageUndoRedo : log::RecordType::kCompensation));
    REQUIRE(r.subtype == (i < 3 ? index::kSubtypeBtreeAdd : index::kSubtypeBtreeClrUpdateDiff));
    if (i >= 3) REQUIRE(r.undo_next == (i == 5 ? Lsn() : ops[4 - i].view().lsn));
  }
}

TEST_CASE("btree wal: restart undoes a loser's additions and redoes a winner's on the same keys",
          "[unit][crash][btree][wal]") {
  for (CrashMode volume_mode : {CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced}) {
    INFO("volume crash mode " << static_cast<int>(volume_mode));
    WalDb db(27, 48);
    Model model;
    LoadCommitted(db, &model, 0, 1500, 3, 200);
    REQUIRE(db.txns->Checkpoint().ok());
    auto loser = db.Begin();
    auto winner = db.Begin();
    for (int round = 0; round < 3; ++round) {
      for (uint64_t k = 0; k < 4500; k += 9) {
        REQUIRE(db.tree->Add(Key64(k), 8, 1000 + round, nullptr, In(loser.get())).ok());
        REQUIRE(db.tree->Add(Key64(k), 8, -int64_t(k), nullptr, In(winner.get())).ok());
        model[Key64(k)] = WithCounter(model[Key64(k)], CounterOf(model[Key64(k)]) - int64_t(k));
      }
      if (round == 0) REQUIRE(db.pool->FlushAll().ok());  // some additions reach the volume
    }
    REQUIRE(db.txns->Commit(winner.get()).ok());
    winner.reset();
    REQUIRE(db.log->FlushAll().ok());
    const uint64_t loser_records = loser->records_logged();
    REQUIRE(loser_records == 1500);
    TxnId loser_id = loser->id();
    db.in_flight.push_back(std::move(loser));
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers == std::vector<TxnId>{loser_id});
    REQUIRE(db.report.undo_records == loser_records);
    db.RequireTree(model);
    // Again, with the compensation records in the log: nothing to undo, the same tree.
    db.Crash(CrashMode::kTearUnsynced, volume_mode);
    db.Restart();
    db.RequireTree(model);
  }
}
