// Restart recovery through the transaction layer (TxnManager::Restart over log::Recover): after
// a crash, committed work is redone and losers are undone after redo; a crash in the middle of a
// rollback, and one between redo and undo, end as one full recovery; and a seeded random test
// of transactions, checkpoints, page writes and crashes at chosen log records (after a record
// operation, right after a split record, in the middle of a rollback) recovers to the committed
// state every time.
//
// Setup: tests/txn/txn_test_util.h. Replay: a seed replays the operations, crash points and
// crash modes exactly (SM_SEED; SM_WAL_CRASHES sets the number of crashes); how the log's
// flusher thread happened to cut the unsynced tail into writes (and so what a torn crash keeps
// of it) may differ between runs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"
#include "tests/txn/txn_test_util.h"

using namespace sm;
using io::CrashMode;
using sm::test::CrashingLogger;
using sm::test::In;
using sm::test::Key64;
using sm::test::LoadCommitted;
using sm::test::Model;
using sm::test::Patched;
using sm::test::RequireVerified;
using sm::test::ValueFor;
using sm::test::WalDb;

TEST_CASE("txn: restart redoes committed work and undoes a loser after redo",
          "[unit][crash][txn]") {
  for (CrashMode volume_mode : {CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced}) {
    INFO("volume crash mode " << static_cast<int>(volume_mode));
    WalDb db(7, 48);
    Model model;
    LoadCommitted(db, &model, 0, 1500, 3, 60);
    // The loser: inserts that split, updates and deletes; its changes reach the volume (the
    // pool writes them) and its records the durable log, so restart must undo them.
    auto loser = db.Begin();
    for (uint64_t k = 1; k < 4500; k += 9) {
      REQUIRE(db.tree->Insert(Key64(k), ValueFor(k, 1, 150), In(loser.get())).ok());
    }
    REQUIRE(db.pool->FlushAll().ok());
    for (uint64_t k = 0; k < 4500; k += 30) {
      REQUIRE(db.tree->Update(Key64(k), ValueFor(k, 9, 300), In(loser.get())).ok());
      REQUIRE(db.tree->Delete(Key64(k + 3), In(loser.get())).ok());
    }
    uint64_t loser_records = loser->records_logged();
    // A winner after the loser's records, committed durably.
    LoadCommitted(db, &model, 2, 300, 15, 80);
    REQUIRE(db.log->FlushAll().ok());
    TxnId loser_id = loser->id();
    db.in_flight.push_back(std::move(loser));
    db.Crash(CrashMode::kDropUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers == std::vector<TxnId>{loser_id});
    REQUIRE(db.report.undo_records == loser_records);
    REQUIRE(db.report.redo_records > 0);
    db.RequireTree(model);
    // And the database goes on: a restart with nothing to undo finds the same tree.
    LoadCommitted(db, &model, 100000, 50, 1, 30);
    db.Crash(CrashMode::kTearUnsynced, volume_mode);
    db.Restart();
    REQUIRE(db.report.losers.empty());
    db.RequireTree(model);
  }
}

TEST_CASE("txn: a crash during a rollback, and one between redo and undo", "[unit][crash][txn]") {
  WalDb db(9, 48);
  Model model;
  LoadCommitted(db, &model, 0, 800, 2, 80);
  auto t = db.Begin();
  for (uint64_t k = 1; k < 1600; k += 4) {
    REQUIRE(db.tree->Insert(Key64(k), ValueFor(k, 1, 90), In(t.get())).ok());
    REQUIRE(db.tree->Update(Key64(k - 1), ValueFor(k, 1, 10), In(t.get())).ok());
  }
  uint64_t records = t->records_logged();
  // Half the undo is done (and its compensation records durable) when the process dies.
  db.logger->Arm(CrashingLogger::Point::kCompensation, records / 2, true);
  REQUIRE(!db.txns->Abort(t.get()).ok());
  REQUIRE(db.logger->fired());
  db.in_flight.push_back(std::move(t));
  db.Crash(CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced);
  // Redo only (the losers stay), then die again before undo.
  db.Restart(/*undo=*/false);
  REQUIRE(db.report.losers.size() == 1);
  db.Crash(CrashMode::kDropUnsynced, CrashMode::kKeepUnsynced);
  db.Restart();
  REQUIRE(db.report.losers.size() == 1);
  // Restart undid only what the rollback had not: the compensation records made it skip the rest.
  REQUIRE(db.report.undo_records == records - records / 2);
  db.RequireTree(model);
}

// ---- Random crashes --------------------------------------------------------------------------

namespace {

// One transaction of the random test: its writes over the committed state.
struct Writer {
  std::unique_ptr<txn::Txn> txn;
  std::map<std::string, std::optional<std::string>> writes;  // nullopt: deleted
};

struct CrashStats {
  uint64_t commits = 0;
  uint64_t aborts = 0;
  uint64_t structure_crashes = 0;
  uint64_t losers = 0;
  uint64_t undo_records = 0;
  uint64_t redo_only_restarts = 0;
  size_t largest_change_pages = 0;  // of a structure change (5: a cascade through a grown root)
};

// Runs transactions on `db` until the armed crash point fires or `steps` operations ran.
// Transaction slot s only touches keys k with k % slots == s, so that the interleaved
// transactions never touch the same key (no key locks here; logical undo relies on them).
void RunUntilCrash(WalDb& db, std::mt19937_64& rng, Model* committed, CrashStats* stats,
                   int steps) {
  constexpr uint64_t kSlots = 3;
  constexpr uint64_t kKeys = 30000;
  Writer writers[kSlots];
  auto visible = [&](const Writer& w, const std::string& key) -> std::optional<std::string> {
    auto it = w.writes.find(key);
    if (it != w.writes.end()) return it->second;
    auto c = committed->find(key);
    if (c == committed->end()) return std::nullopt;
    return c->second;
  };
  for (int step = 0; step < steps && !db.logger->fired(); ++step) {
    uint64_t slot = rng() % kSlots;
    Writer& w = writers[slot];
    if (!w.txn) w.txn = db.Begin();
    uint64_t dice = rng() % 100;
    if (dice < 4) {
      Status s = db.txns->Commit(w.txn.get());
      REQUIRE(s.ok());
      for (auto& [key, value] : w.writes) {
        if (value) {
          (*committed)[key] = *value;
        } else {
          committed->erase(key);
        }
      }
      ++stats->commits;
      w = Writer{};
      continue;
    }
    if (dice < 6) {
      Status s = db.txns->Abort(w.txn.get());
      if (db.logger->fired()) {  // died during the rollback
        REQUIRE(!s.ok());
        break;
      }
      REQUIRE(s.ok());
      ++stats->aborts;
      w = Writer{};
      continue;
    }
    if (dice < 7) REQUIRE(db.pool->FlushAll().ok());
    if (dice == 7) REQUIRE(db.volume->Sync().ok());
    if (dice == 8 && rng() % 4 == 0) REQUIRE(db.txns->Checkpoint().ok());
    uint64_t k = (rng() % (kKeys / kSlots)) * kSlots + slot;
    // A long common prefix: separators stay long (suffix truncation cannot shorten them), so
    // inner nodes hold few and splits cascade within a few thousand keys.
    std::string key = std::string(120, 'w') + Key64(k);
    std::optional<std::string> current = visible(w, key);
    std::string value = ValueFor(k, rng() % 1000, 12 + rng() % 400);
    Status s;
    if (!current) {
      s = db.tree->Insert(key, value, In(w.txn.get()));
      if (s.ok()) w.writes[key] = value;
    } else if (rng() % 3 != 0) {
      // Half the updates keep the length and change a few bytes: the diff form (or, with many
      // changed runs, the full one).
      if (rng() % 2 == 0) value = Patched(*current, rng, 1 + static_cast<int>(rng() % 10));
      s = db.tree->Update(key, value, In(w.txn.get()));
      if (s.ok()) w.writes[key] = value;
    } else {
      s = db.tree->Delete(key, In(w.txn.get()));
      if (s.ok()) w.writes[key] = std::nullopt;
    }
    if (!s.ok()) {
      INFO(s.ToString());
      REQUIRE(db.logger->fired());  // the only way an operation fails here
    }
  }
  for (Writer& w : writers) {
    if (w.txn) db.in_flight.push_back(std::move(w.txn));
  }
}

CrashMode RandomMode(std::mt19937_64& rng, bool tear) {
  switch (rng() % 3) {
    case 0:
      return CrashMode::kDropUnsynced;
    case 1:
      return tear ? CrashMode::kTearUnsynced : CrashMode::kDropUnsynced;
    default:
      return CrashMode::kKeepUnsynced;
  }
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

}  // namespace

TEST_CASE("txn: random transactions and crashes recover to the committed state",
          "[random][crash][txn]") {
  uint64_t seed = test::TestSeed("txn_random_crash");
  std::mt19937_64 rng(seed);
  int crashes = EnvInt("SM_WAL_CRASHES", 40);
  WalDb db(seed, 48);
  Model committed;
  CrashStats stats;
  for (int round = 0; round < crashes; ++round) {
    INFO("seed " << seed << ", crash " << round);
    // The crash point: between operations, right after a split record (before the record
    // that needed it), after a record operation, or in the middle of a rollback.
    auto point = static_cast<CrashingLogger::Point>(round % 4);
    db.logger->Arm(point, 1 + rng() % (point == CrashingLogger::Point::kRecordOp ? 60 : 3),
                   rng() % 2 == 0);
    RunUntilCrash(db, rng, &committed, &stats, 200 + static_cast<int>(rng() % 600));
    stats.largest_change_pages =
        std::max(stats.largest_change_pages, db.logger->largest_change_pages());
    if (db.logger->fired() && point == CrashingLogger::Point::kStructureChange) {
      ++stats.structure_crashes;
    }
    db.Crash(RandomMode(rng, true), RandomMode(rng, false));
    if (rng() % 5 == 0) {  // a crash between redo and undo: recovery must start over
      db.Restart(/*undo=*/false);
      ++stats.redo_only_restarts;
      db.Crash(RandomMode(rng, true), RandomMode(rng, false));
    }
    db.Restart();
    stats.losers += db.report.losers.size();
    stats.undo_records += db.report.undo_records;
    db.RequireTree(committed);
  }
  index::BtreeStats tree_stats;
  RequireVerified(*db.tree, &tree_stats);
  std::printf(
      "[txn_random_crash] %d crashes: %llu commits, %llu aborts, %llu crashes after a "
      "split record, %llu losers (%llu records undone at restart), %llu redo-only restarts; "
      "%zu keys, height %u, largest structure change %zu pages\n",
      crashes, static_cast<unsigned long long>(stats.commits),
      static_cast<unsigned long long>(stats.aborts),
      static_cast<unsigned long long>(stats.structure_crashes),
      static_cast<unsigned long long>(stats.losers),
      static_cast<unsigned long long>(stats.undo_records),
      static_cast<unsigned long long>(stats.redo_only_restarts), committed.size(),
      tree_stats.height, stats.largest_change_pages);
  if (crashes >= 20) {
    REQUIRE(stats.structure_crashes > 0);
    REQUIRE(stats.undo_records > 0);
  }
}
