// A transactional store for the tests of the transaction layer and of the B-tree's write-ahead
// logging: a log and a volume, each on its own FaultInjectionFileSystem (so that a crash can
// treat them differently: the log's unsynced tail dropped, torn or kept; the volume keeping
// what was synced and dropping or keeping what the pool wrote since), a buffer pool, locks,
// transactions, and one B-tree logged through a CrashingLogger that can kill the log at a
// chosen record. Torn data-page writes are not simulated: a torn page is reported as
// Corruption by its checksum.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "index/btree.h"
#include "index/btree_wal.h"
#include "log/log_manager.h"
#include "log/log_reader.h"
#include "log/recovery.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/io/testing/fault_file.h"
#include "sm/lock/lock_manager.h"
#include "sm/space/volume.h"
#include "sm/txn/txn.h"
#include "sm/txn/txn_manager.h"
#include "tests/index/btree_test_util.h"

namespace sm::test {

inline constexpr char kLogDir[] = "/db/log";
inline constexpr char kVolumePath[] = "/db/btree.vol";

// LogManager::TEST_Kill, once the flusher is idle. TEST_Kill can hang when it meets the
// flusher between the top of its loop (wake_.Reset(), then the load of killed_) and its wait:
// the relaxed Reset may be ordered after the load, wipe the kill's Post, and leave the flusher
// asleep while TEST_Kill joins it. Giving the flusher time to finish its round avoids that
// window; after a wait the flusher sees the kill.
inline void KillLog(log::LogManager* log) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  log->TEST_Kill();
}

// A BtreeLogger that forwards to a BtreeWal and can kill the log (a simulated process death)
// right after the n-th record of a chosen kind was inserted, optionally after making it
// durable. The operation that made that call then goes on and fails at its next log call, as
// it would in a dying process: a kill after a structure change lands between the split record
// and the record operation that needed the split.
class CrashingLogger final : public index::BtreeLogger {
 public:
  enum class Point : uint8_t { kNone, kStructureChange, kRecordOp, kCompensation };

  CrashingLogger(txn::TxnManager* txns, log::LogManager* log) : wal_(txns), log_(log) {}

  // Record and structure-change calls come through this logger; compensation records are
  // written by the undo handlers' own BtreeWal, whose test hook calls this after each undo.
  void AfterUndo() { After(Point::kCompensation, Status::OK(), log_->end_lsn()); }

  void Arm(Point point, uint64_t countdown, bool flush) {
    point_ = point;
    countdown_ = countdown;
    flush_ = flush;
  }
  bool fired() const { return fired_; }

  Status LogInsert(void* txn, const index::BTree& tree, buffer::PageHandle& leaf, uint16_t index,
                   std::string_view key, std::string_view value, bool external,
                   Lsn* lsn) override {
    Status s = wal_.LogInsert(txn, tree, leaf, index, key, value, external, lsn);
    After(Point::kRecordOp, s, *lsn);
    return s;
  }
  Status LogUpdate(void* txn, const index::BTree& tree, buffer::PageHandle& leaf, uint16_t index,
                   std::string_view key, std::string_view old_value, bool old_external,
                   std::string_view new_value, bool new_external, Lsn* lsn) override {
    Status s = wal_.LogUpdate(txn, tree, leaf, index, key, old_value, old_external, new_value,
                              new_external, lsn);
    After(Point::kRecordOp, s, *lsn);
    return s;
  }
  Status LogDelete(void* txn, const index::BTree& tree, buffer::PageHandle& leaf, uint16_t index,
                   std::string_view key, std::string_view old_value, bool old_external,
                   Lsn* lsn) override {
    Status s = wal_.LogDelete(txn, tree, leaf, index, key, old_value, old_external, lsn);
    After(Point::kRecordOp, s, *lsn);
    return s;
  }
  Status LogAdd(void* txn, const index::BTree& tree, buffer::PageHandle& leaf, uint16_t index,
                std::string_view key, std::string_view old_value, std::string_view new_value,
                uint16_t offset, Lsn* lsn) override {
    Status s = wal_.LogAdd(txn, tree, leaf, index, key, old_value, new_value, offset, lsn);
    After(Point::kRecordOp, s, *lsn);
    return s;
  }
  Status BeginStructureChange(const index::BTree& tree) override {
    return wal_.BeginStructureChange(tree);
  }
  Status EndStructureChange(const index::BTree& tree, std::span<buffer::PageHandle* const> pages,
                            Lsn* lsn) override {
    Status s = wal_.EndStructureChange(tree, pages, lsn);
    if (s.ok()) ++structure_changes_;
    largest_change_pages_ = std::max(largest_change_pages_, pages.size());
    After(Point::kStructureChange, s, *lsn);
    return s;
  }
  Status LogFormatRoot(const index::BTree& tree, buffer::PageHandle& root, Lsn* lsn) override {
    return wal_.LogFormatRoot(tree, root, lsn);
  }

  uint64_t structure_changes() const { return structure_changes_; }
  size_t largest_change_pages() const { return largest_change_pages_; }

 private:
  void After(Point point, const Status& s, Lsn end) {
    if (!s.ok() || fired_ || point != point_ || --countdown_ > 0) return;
    if (flush_) REQUIRE(log_->Flush(end).ok());
    KillLog(log_);
    fired_ = true;
  }

  index::BtreeWal wal_;
  log::LogManager* log_;
  Point point_ = Point::kNone;
  uint64_t countdown_ = 0;
  bool flush_ = false;
  bool fired_ = false;
  uint64_t structure_changes_ = 0;
  size_t largest_change_pages_ = 0;
};

// Log, volume, pool, locks, transactions and one tree logged through a CrashingLogger.
struct WalDb {
  WalDb(uint64_t seed, size_t frames) : log_fs(seed), vol_fs(seed + 1), frames(frames) {
    REQUIRE(log_fs.CreateDir("/db").ok());
    REQUIRE(vol_fs.CreateDir("/db").ok());
    space::VolumeOptions volume_options;
    volume_options.extent_pages = 64;
    REQUIRE(space::Volume::Create(&vol_fs, kVolumePath, volume_options, &volume).ok());
    Start();
    index::BtreeOptions options;
    options.logger = logger.get();
    REQUIRE(index::BTree::Create(pool.get(), options, &root, &tree).ok());
    REQUIRE(log->FlushAll().ok());  // the root's format record: the tree exists from here on
  }
  ~WalDb() {
    in_flight.clear();
    index::BtreeWal::TEST_SetUndoHook({});
  }

  void Start() {
    log::LogOptions log_options;
    log_options.segment_bytes = 256 * 1024;
    log_options.buffer_bytes = 64 * 1024;
    Status s = log::LogManager::Open(&log_fs, kLogDir, log_options, &log);
    INFO(s.ToString());
    REQUIRE(s.ok());
    buffer::BufferPoolOptions pool_options;
    pool_options.pool_bytes = frames * kPageBytes;
    REQUIRE(buffer::BufferPool::Create(volume.get(), pool_options, &pool).ok());
    locks = std::make_unique<lock::LockManager>();
    txns = std::make_unique<txn::TxnManager>(log.get(), locks.get(), pool.get(), volume.get());
    logger = std::make_unique<CrashingLogger>(txns.get(), log.get());
    index::BtreeWal::TEST_SetUndoHook([this] { logger->AfterUndo(); });
  }

  // Opens everything again after Crash and runs restart recovery.
  void Restart(bool undo = true) {
    Status s = space::Volume::Open(&vol_fs, kVolumePath, &volume);
    INFO(s.ToString());
    REQUIRE(s.ok());
    Start();
    log::RecoveryOptions options;
    options.undo = undo;
    report = log::RecoveryReport{};
    s = txns->Restart(options, &report);
    INFO(s.ToString());
    REQUIRE(s.ok());
    index::BtreeOptions tree_options;
    tree_options.logger = logger.get();
    REQUIRE(index::BTree::Open(pool.get(), root, tree_options, &tree).ok());
  }

  // A process death: nothing more reaches the log; in-flight transactions are dropped (their
  // rollback finds the log dead, so they are losers for the next restart); then the file
  // systems lose what the crash modes say.
  void Crash(io::CrashMode log_mode, io::CrashMode volume_mode) {
    if (!logger->fired()) KillLog(log.get());
    index::BtreeWal::TEST_SetUndoHook({});
    in_flight.clear();
    tree.reset();
    logger.reset();
    txns.reset();
    locks.reset();
    pool.reset();
    volume.reset();
    log.reset();
    log_fs.SimulateCrash(log_mode);
    vol_fs.SimulateCrash(volume_mode);
  }

  std::unique_ptr<txn::Txn> Begin() {
    std::unique_ptr<txn::Txn> t;
    REQUIRE(txns->Begin(txn::Isolation::kSerializable, &t).ok());
    return t;
  }

  void RequireTree(const Model& model) {
    RequireSameAsModel(*tree, model);
    index::VerifyOptions options;
    options.max_page_lsn = log->end_lsn();
    Status s = tree->Verify(nullptr, options);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }

  io::FaultInjectionFileSystem log_fs;
  io::FaultInjectionFileSystem vol_fs;
  size_t frames;
  std::unique_ptr<log::LogManager> log;
  std::unique_ptr<space::Volume> volume;
  std::unique_ptr<buffer::BufferPool> pool;
  std::unique_ptr<lock::LockManager> locks;
  std::unique_ptr<txn::TxnManager> txns;
  std::unique_ptr<CrashingLogger> logger;
  PageId root;
  std::unique_ptr<index::BTree> tree;
  std::vector<std::unique_ptr<txn::Txn>> in_flight;  // dropped by Crash
  log::RecoveryReport report;
};

inline index::OpContext In(txn::Txn* t) { return index::OpContext{t, nullptr}; }

// `value` with `runs` runs of 1..3 bytes changed at random offsets (same length).
inline std::string Patched(std::string value, std::mt19937_64& rng, int runs) {
  for (int r = 0; r < runs && !value.empty(); ++r) {
    size_t at = rng() % value.size();
    size_t bytes = std::min<size_t>(1 + rng() % 3, value.size() - at);
    for (size_t i = at; i < at + bytes; ++i) value[i] = static_cast<char>(value[i] ^ 0x5a);
  }
  return value;
}

// Commits `count` inserts of keys first, first + step, ... in one transaction.
inline void LoadCommitted(WalDb& db, Model* model, uint64_t first, uint64_t count, uint64_t step,
                          size_t value_bytes) {
  auto t = db.Begin();
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t k = first + i * step;
    std::string value = ValueFor(k, 0, value_bytes);
    REQUIRE(db.tree->Insert(Key64(k), value, In(t.get())).ok());
    (*model)[Key64(k)] = value;
  }
  REQUIRE(db.txns->Commit(t.get()).ok());
}

// Every durable record of the log, from its start.
inline std::vector<log::LogRecordBuf> LogRecords(WalDb& db) {
  REQUIRE(db.log->FlushAll().ok());
  std::unique_ptr<log::LogReader> reader = db.log->NewReader();
  REQUIRE(reader->Seek(db.log->start_lsn()).ok());
  std::vector<log::LogRecordBuf> records;
  log::LogRecordView view;
  Status s;
  while ((s = reader->Next(&view)).ok()) records.emplace_back().Assign(view);
  INFO(s.ToString());
  REQUIRE(s.IsNotFound());
  return records;
}

}  // namespace sm::test
