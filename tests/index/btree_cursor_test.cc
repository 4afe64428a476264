// B-tree cursor tests against a std::map model: forward and backward scans with every
// combination of inclusive/exclusive/absent bounds, Seek/SeekForPrev, alternating Next/Prev,
// empty leaves, and a tree changing between the steps of a scan.
#include <catch2/catch.hpp>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"

using namespace sm;
using index::Cursor;
using index::ScanBound;
using index::ScanRange;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::RequireVerified;
using sm::test::TreeEnv;
using sm::test::ValueFor;

namespace {

bool InRange(const ScanRange& range, const std::string& key) {
  if (range.lower.bounded &&
      (range.lower.inclusive ? key < range.lower.key : key <= range.lower.key)) {
    return false;
  }
  if (range.upper.bounded &&
      (range.upper.inclusive ? key > range.upper.key : key >= range.upper.key)) {
    return false;
  }
  return true;
}

std::vector<std::string> ExpectedKeys(const Model& model, const ScanRange& range) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : model) {
    if (InRange(range, key)) keys.push_back(key);
  }
  return keys;
}

std::vector<std::string> ScanForward(Cursor& cursor) {
  std::vector<std::string> keys;
  REQUIRE(cursor.SeekToFirst().ok());
  while (cursor.Valid()) {
    keys.emplace_back(cursor.key());
    REQUIRE(cursor.Next().ok());
  }
  return keys;
}

std::vector<std::string> ScanBackward(Cursor& cursor) {
  std::vector<std::string> keys;
  REQUIRE(cursor.SeekToLast().ok());
  while (cursor.Valid()) {
    keys.emplace_back(cursor.key());
    REQUIRE(cursor.Prev().ok());
  }
  return keys;
}

std::vector<ScanBound> BoundsAround(const std::string& key) {
  return {ScanBound::None(), ScanBound::Inclusive(key), ScanBound::Exclusive(key)};
}

// Keys 2, 4, ..., 2 * count (even numbers), values naming them.
Model Fill(index::BTree& tree, uint64_t count) {
  Model model;
  for (uint64_t n = 1; n <= count; ++n) {
    REQUIRE(tree.Insert(Key64(2 * n), ValueFor(2 * n, 0, 60)).ok());
    model[Key64(2 * n)] = ValueFor(2 * n, 0, 60);
  }
  return model;
}

}  // namespace

TEST_CASE("btree cursor: every bound combination, forward and backward", "[unit][btree][cursor]") {
  TreeEnv env(64);
  Model model = Fill(*env.tree, 3000);
  RequireVerified(*env.tree);
  // On a key, between keys, before everything, after everything, on a leaf edge region.
  std::vector<std::string> points = {Key64(0),    Key64(1),    Key64(2),    Key64(777),
                                     Key64(778),  Key64(3000), Key64(3001), Key64(6000),
                                     Key64(6001), Key64(9999), ""};
  int combinations = 0;
  for (const std::string& lo : points) {
    for (const std::string& hi : points) {
      for (const ScanBound& lower : BoundsAround(lo)) {
        for (const ScanBound& upper : BoundsAround(hi)) {
          ScanRange range{lower, upper};
          std::vector<std::string> expected = ExpectedKeys(model, range);
          Cursor cursor(env.tree.get(), range);
          REQUIRE(ScanForward(cursor) == expected);
          std::vector<std::string> backward = ScanBackward(cursor);
          REQUIRE(std::vector<std::string>(backward.rbegin(), backward.rend()) == expected);
          ++combinations;
        }
      }
    }
  }
  REQUIRE(combinations == 11 * 11 * 9);
}

TEST_CASE("btree cursor: Seek, SeekForPrev and values", "[unit][btree][cursor]") {
  TreeEnv env(64);
  Model model = Fill(*env.tree, 2000);
  ScanRange range{ScanBound::Inclusive(Key64(100)), ScanBound::Exclusive(Key64(3000))};
  Cursor cursor(env.tree.get(), range);
  for (uint64_t probe : {0, 99, 100, 101, 102, 1501, 2998, 2999, 3000, 5000}) {
    std::string key = Key64(probe);
    REQUIRE(cursor.Seek(key).ok());
    std::optional<std::string> want;
    for (auto it = model.lower_bound(std::max(key, range.lower.key)); it != model.end(); ++it) {
      if (InRange(range, it->first)) want = it->first;
      break;
    }
    REQUIRE(cursor.Valid() == want.has_value());
    if (want) {
      REQUIRE(cursor.key() == *want);
      REQUIRE(cursor.value() == model[*want]);
    }
    REQUIRE(cursor.SeekForPrev(key).ok());
    want.reset();
    auto it = model.upper_bound(std::min(key, Key64(2999)));
    if (it != model.begin() && InRange(range, std::prev(it)->first)) want = std::prev(it)->first;
    REQUIRE(cursor.Valid() == want.has_value());
    if (want) REQUIRE(cursor.key() == *want);
  }
}

TEST_CASE("btree cursor: alternating Next and Prev follows the model", "[unit][btree][cursor]") {
  TreeEnv env(64);
  Model model = Fill(*env.tree, 4000);
  std::mt19937_64 rng(5);
  Cursor cursor(env.tree.get());
  REQUIRE(cursor.Seek(Key64(4000)).ok());
  auto it = model.find(Key64(4000));
  for (int step = 0; step < 20000; ++step) {
    REQUIRE(cursor.Valid());
    REQUIRE(cursor.key() == it->first);
    bool forward = rng() % 2 == 0;
    if (forward && std::next(it) == model.end()) forward = false;
    if (!forward && it == model.begin()) forward = true;
    REQUIRE((forward ? cursor.Next() : cursor.Prev()).ok());
    it = forward ? std::next(it) : std::prev(it);
  }
}

TEST_CASE("btree cursor: scans skip empty leaves in both directions", "[unit][btree][cursor]") {
  index::BtreeOptions keep_empty;  // empty leaves stay linked, as a retirement may leave one
  keep_empty.retire_empty_leaves = false;
  TreeEnv env(64, keep_empty);
  Model model = Fill(*env.tree, 5000);
  // Empty a run of whole leaves in the middle, and the first and last leaves.
  for (uint64_t n = 1; n <= 5000; ++n) {
    if ((n > 1000 && n < 3000) || n < 200 || n > 4800) {
      REQUIRE(env.tree->Delete(Key64(2 * n)).ok());
      model.erase(Key64(2 * n));
    }
  }
  index::BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.empty_leaves > 10);
  Cursor cursor(env.tree.get());
  std::vector<std::string> keys = ScanForward(cursor);
  REQUIRE(keys == ExpectedKeys(model, {}));
  std::vector<std::string> backward = ScanBackward(cursor);
  REQUIRE(std::vector<std::string>(backward.rbegin(), backward.rend()) == keys);
  ScanRange empty_run{ScanBound::Inclusive(Key64(2100)), ScanBound::Inclusive(Key64(5900))};
  Cursor in_gap(env.tree.get(), empty_run);
  REQUIRE(in_gap.SeekToFirst().ok());
  REQUIRE(!in_gap.Valid());
  REQUIRE(in_gap.SeekToLast().ok());
  REQUIRE(!in_gap.Valid());
}

TEST_CASE("btree cursor: continues after its key while the tree changes between steps",
          "[unit][btree][cursor]") {
  TreeEnv env(64);
  Model model = Fill(*env.tree, 1000);
  std::mt19937_64 rng(9);
  for (bool forward : {true, false}) {
    Cursor cursor(env.tree.get());
    REQUIRE((forward ? cursor.SeekToFirst() : cursor.SeekToLast()).ok());
    int steps = 0;
    while (cursor.Valid()) {
      std::string current(cursor.key());
      // Change the tree: inserts that split leaves around the cursor, deletes of its own key
      // and of its neighbours.
      for (int i = 0; i < 8; ++i) {
        uint64_t n = rng() % 4000;
        if (rng() % 3 == 0) {
          if (env.tree->Delete(Key64(n)).ok()) model.erase(Key64(n));
        } else {
          REQUIRE(env.tree->Upsert(Key64(n), ValueFor(n, 1, 60)).ok());
          model[Key64(n)] = ValueFor(n, 1, 60);
        }
      }
      if (rng() % 4 == 0 && env.tree->Delete(current).ok()) model.erase(current);
      REQUIRE((forward ? cursor.Next() : cursor.Prev()).ok());
      if (forward) {
        auto it = model.upper_bound(current);
        REQUIRE(cursor.Valid() == (it != model.end()));
        if (it != model.end()) REQUIRE(cursor.key() == it->first);
      } else {
        auto it = model.lower_bound(current);
        REQUIRE(cursor.Valid() == (it != model.begin()));
        if (it != model.begin()) REQUIRE(cursor.key() == std::prev(it)->first);
      }
      if (cursor.Valid()) REQUIRE(cursor.value() == model[std::string(cursor.key())]);
      ++steps;
    }
    REQUIRE(steps > 500);
  }
  RequireVerified(*env.tree);
}

// A cursor remembers its leaf by page id and version. The leaf is emptied, retired and then
// reused by a split as another node: the cursor must notice and find its place again.
TEST_CASE("btree cursor: its leaf retired and reused meanwhile", "[unit][btree][cursor]") {
  TreeEnv env(256);
  Model model;
  for (uint64_t n = 0; n < 4000; ++n) {
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0)).ok());
    model[Key64(n)] = ValueFor(n, 0);
  }
  Cursor cursor(env.tree.get());
  REQUIRE(cursor.Seek(Key64(1000)).ok());
  REQUIRE(cursor.key() == Key64(1000));
  for (uint64_t n = 900; n < 1400; ++n) {
    REQUIRE(env.tree->Delete(Key64(n)).ok());
    model.erase(Key64(n));
  }
  REQUIRE(env.tree->counters().leaf_merges > 0);
  for (uint64_t n = 10000; n < 14000; ++n) {
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 1)).ok());
    model[Key64(n)] = ValueFor(n, 1);
  }
  REQUIRE(env.tree->counters().pages_reused > 0);
  REQUIRE(cursor.Next().ok());
  REQUIRE(cursor.Valid());
  REQUIRE(cursor.key() == Key64(1400));
  REQUIRE(cursor.Prev().ok());
  REQUIRE(cursor.key() == Key64(899));
  RequireVerified(*env.tree);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree cursor: each step fixes the cursor's leaf through the frame it remembers",
          "[unit][btree][cursor]") {
  TreeEnv env(64);
  for (uint64_t k = 0; k < 20; ++k) REQUIRE(env.tree->Insert(Key64(k), ValueFor(k, 0)).ok());
  Cursor cursor(env.tree.get());
  REQUIRE(cursor.SeekToFirst().ok());  // the root's frame is remembered from here on
  const buffer::BufferPoolStats before = env.pool->stats();
  uint64_t steps = 0;
  for (; cursor.Valid(); ++steps) REQUIRE(cursor.Next().ok());
  const buffer::BufferPoolStats after = env.pool->stats();
  REQUIRE(steps == 20);
  CHECK(after.hits - before.hits >= steps);
  CHECK(after.hinted_hits - before.hinted_hits == after.hits - before.hits);
}
