// Contention split (index/btree.h, "Contention split"): a leaf whose writers wait for its latch
// while they change different records splits between them, not when they wait for the same
// record, not with the split turned off, not at an end of the leaf; inside a taller tree the
// separator goes into the parent; and fibers on two workers updating different records of a
// few leaves (really contending, then with every write counted as contended) leave a tree
// equal to the model that Verify passes.
//
// The deterministic cases count every write as having waited for the latch
// (BtreeOptions::test_every_write_waited) on a tree opened again with that option over records
// loaded without it, so that the loading inserts count nothing.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"
#include "threads/runtime.h"
#include "threads/sync.h"

using namespace sm;
using index::BTree;
using index::BtreeOptions;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::RequireVerified;
using sm::test::TreeEnv;
using sm::test::ValueFor;

namespace {

// Loads keys [0, count) and opens the tree again with `options` (the contention knobs).
void LoadAndReopen(TreeEnv& env, uint64_t count, size_t value_bytes, const BtreeOptions& options,
                   Model* model) {
  for (uint64_t k = 0; k < count; ++k) {
    std::string value = ValueFor(k, 0, value_bytes);
    REQUIRE(env.tree->Insert(Key64(k), value).ok());
    (*model)[Key64(k)] = value;
  }
  REQUIRE(env.tree->counters().contention_splits == 0);
  REQUIRE(BTree::Open(env.pool.get(), env.root, options, &env.tree).ok());
}

BtreeOptions Contended(uint16_t threshold) {
  BtreeOptions options;
  options.contention_split_threshold = threshold;
  options.test_every_write_waited = true;
  return options;
}

void UpdateAndModel(BTree& tree, uint64_t k, uint64_t version, Model* model) {
  std::string value = ValueFor(k, version, 24);
  REQUIRE(tree.Update(Key64(k), value).ok());
  (*model)[Key64(k)] = value;
}

// The leaf that holds key k now (a read for update remembers it in the hint).
PageId LeafOf(const BTree& tree, uint64_t k) {
  index::LeafHint hint;
  std::string value;
  REQUIRE(tree.Lookup(Key64(k), &value, index::OpContext{nullptr, nullptr, &hint}, true).ok());
  return hint.leaf;
}

}  // namespace

TEST_CASE("btree contention: writes of two records that waited split their leaf between them",
          "[unit][btree][contention]") {
  TreeEnv env(32);
  Model model;
  LoadAndReopen(env, 10, 24, Contended(4), &model);
  // Alternating writers of records 2 and 7: each write changes another record than the one
  // before it (for the first, the frame's initial 0). The fourth reaches the threshold; its
  // contender (2) is on its left, so the right half starts at 7.
  for (uint64_t i = 0; i < 3; ++i) {
    UpdateAndModel(*env.tree, i % 2 == 0 ? 2 : 7, i + 1, &model);
    REQUIRE(env.tree->counters().contention_splits == 0);
  }
  UpdateAndModel(*env.tree, 7, 4, &model);
  index::BtreeCounters c = env.tree->counters();
  REQUIRE(c.contention_splits == 1);
  REQUIRE(c.leaf_splits == 1);  // a contention split is a leaf split
  REQUIRE(c.root_grows == 1);   // of the root leaf, which grew first
  index::BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height == 2);
  REQUIRE(stats.pages_per_level[0] == 2);
  REQUIRE(LeafOf(*env.tree, 2) == LeafOf(*env.tree, 6));
  REQUIRE(LeafOf(*env.tree, 6) != LeafOf(*env.tree, 7));
  REQUIRE(LeafOf(*env.tree, 7) == LeafOf(*env.tree, 9));
  RequireSameAsModel(*env.tree, model);

  // Now on different leaves, each writer changes one record of its leaf: no more splits.
  for (uint64_t i = 0; i < 50; ++i) UpdateAndModel(*env.tree, i % 2 == 0 ? 2 : 7, i + 10, &model);
  REQUIRE(env.tree->counters().contention_splits == 1);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree contention: additions to two counters that waited split their leaf too",
          "[unit][btree][contention]") {
  TreeEnv env(32);
  Model model;
  LoadAndReopen(env, 10, 24, Contended(4), &model);
  // As above, with Add: alternating adders of records 2 and 7, the fourth reaches the threshold.
  for (uint64_t i = 0; i < 4; ++i) {
    REQUIRE(env.tree->counters().contention_splits == 0);
    REQUIRE(env.tree->Add(Key64(i % 2 == 0 ? 2 : 7), 0, 1, nullptr).ok());
  }
  REQUIRE(env.tree->counters().contention_splits == 1);
  REQUIRE(LeafOf(*env.tree, 6) != LeafOf(*env.tree, 7));
  for (uint64_t k : {2, 7}) {
    std::string& value = model[Key64(k)];
    int64_t counter = 0;
    std::memcpy(&counter, value.data(), 8);
    counter += 2;
    std::memcpy(value.data(), &counter, 8);
  }
  RequireVerified(*env.tree);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree contention: a contender on the right splits after the written record",
          "[unit][btree][contention]") {
  TreeEnv env(32);
  Model model;
  LoadAndReopen(env, 10, 24, Contended(2), &model);
  UpdateAndModel(*env.tree, 7, 1, &model);
  UpdateAndModel(*env.tree, 3, 2, &model);  // contender 7 on its right: split between 3 and 4
  REQUIRE(env.tree->counters().contention_splits == 1);
  REQUIRE(LeafOf(*env.tree, 0) == LeafOf(*env.tree, 3));
  REQUIRE(LeafOf(*env.tree, 3) != LeafOf(*env.tree, 4));
  REQUIRE(LeafOf(*env.tree, 4) == LeafOf(*env.tree, 7));
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree contention: no split for one record, when turned off, or at the leaf's end",
          "[unit][btree][contention]") {
  SECTION("every write waits for the same record") {
    TreeEnv env(32);
    Model model;
    LoadAndReopen(env, 10, 24, Contended(2), &model);
    for (uint64_t i = 0; i < 100; ++i) UpdateAndModel(*env.tree, 5, i + 1, &model);
    // Only the first write changes another record than the one before it (the initial 0).
    REQUIRE(env.tree->counters().contention_splits == 0);
    REQUIRE(env.tree->counters().leaf_splits == 0);
    RequireSameAsModel(*env.tree, model);
  }
  SECTION("the threshold 0 turns the split off") {
    TreeEnv env(32);
    Model model;
    LoadAndReopen(env, 10, 24, Contended(0), &model);
    for (uint64_t i = 0; i < 100; ++i) UpdateAndModel(*env.tree, i % 2 == 0 ? 2 : 7, i, &model);
    REQUIRE(env.tree->counters().leaf_splits == 0);
    RequireSameAsModel(*env.tree, model);
  }
  SECTION("no wait: the real signal, with no other writer, never fires") {
    TreeEnv env(32);
    Model model;
    BtreeOptions options;
    options.contention_split_threshold = 1;
    LoadAndReopen(env, 10, 24, options, &model);
    for (uint64_t i = 0; i < 100; ++i) UpdateAndModel(*env.tree, i % 10, i, &model);
    REQUIRE(env.tree->counters().leaf_splits == 0);
  }
  SECTION("the written record ends the leaf on the contender's side") {
    TreeEnv env(32);
    Model model;
    LoadAndReopen(env, 10, 24, Contended(1), &model);
    // Each write below changes another record than the one before, to its left: the split
    // would go right after the written record (or after the deleted one's gap), which is the
    // end of the leaf.
    REQUIRE(env.tree->Delete(Key64(9)).ok());  // after 0: its gap ends the leaf
    REQUIRE(env.tree->Delete(Key64(8)).ok());
    model.erase(Key64(9));
    model.erase(Key64(8));
    UpdateAndModel(*env.tree, 7, 1, &model);
    REQUIRE(env.tree->counters().leaf_splits == 0);
    // Record 0 with its contender (7) on its right: the right half starts at 1.
    UpdateAndModel(*env.tree, 0, 2, &model);
    REQUIRE(env.tree->counters().contention_splits == 1);
    REQUIRE(LeafOf(*env.tree, 0) != LeafOf(*env.tree, 1));
    REQUIRE(LeafOf(*env.tree, 1) == LeafOf(*env.tree, 7));
    RequireSameAsModel(*env.tree, model);
  }
}

TEST_CASE("btree contention: a leaf inside a taller tree posts its separator to the parent",
          "[unit][btree][contention]") {
  TreeEnv env(64);
  Model model;
  LoadAndReopen(env, 3000, 40, Contended(4), &model);
  index::BtreeStats before;
  RequireVerified(*env.tree, &before);
  REQUIRE(before.height >= 2);
  // Two records of one leaf, away from its ends: the leaf of 1500 holds [lo, hi].
  const PageId leaf = LeafOf(*env.tree, 1500);
  uint64_t lo = 1500;
  uint64_t hi = 1500;
  while (LeafOf(*env.tree, lo - 1) == leaf) --lo;
  while (LeafOf(*env.tree, hi + 1) == leaf) ++hi;
  REQUIRE(hi - lo >= 3);
  const uint64_t a = lo + 1;
  const uint64_t b = hi - 1;
  // The first write may change the frame's initial record 0 (not counted); the rest count.
  for (uint64_t i = 0; i < 5 && env.tree->counters().contention_splits == 0; ++i) {
    UpdateAndModel(*env.tree, i % 2 == 0 ? a : b, i + 1, &model);
  }
  REQUIRE(env.tree->counters().contention_splits == 1);
  REQUIRE(LeafOf(*env.tree, a) != LeafOf(*env.tree, b));
  index::BtreeStats after;
  RequireVerified(*env.tree, &after);
  REQUIRE(after.pages_per_level[0] == before.pages_per_level[0] + 1);
  REQUIRE(after.height == before.height);
  RequireSameAsModel(*env.tree, model);
}

namespace {

// Fibers on two workers, each updating its own records (n % fibers == self) of a tree of
// `keys` records, so that every leaf is written by fibers of both workers; then the contents
// equal the model and Verify passes.
void RunUpdaters(const BtreeOptions& options, uint64_t keys, int fibers, uint64_t rounds,
                 index::BtreeCounters* counters) {
  TreeEnv env(128);
  Model model;
  LoadAndReopen(env, keys, 60, options, &model);
  auto runtime = sm::test::MakeRuntime(2);
  std::atomic<int> failures{0};
  std::vector<Model> models(fibers);
  threads::WaitGroup done;
  done.Add(fibers);
  for (int f = 0; f < fibers; ++f) {
    runtime->Spawn(
        [&, f] {
          index::LeafHint hint;
          const index::OpContext ctx{nullptr, nullptr, &hint};
          for (uint64_t r = 0; r < rounds; ++r) {
            for (uint64_t n = f; n < keys; n += fibers) {
              std::string value = ValueFor(n, r + 1, 60);
              if (!env.tree->Update(Key64(n), value, ctx).ok()) failures.fetch_add(1);
              models[f][Key64(n)] = value;
            }
          }
          done.Done();
        },
        f % 2);
  }
  done.Wait();
  runtime->Shutdown();
  REQUIRE(failures.load() == 0);
  for (const Model& m : models) {
    for (const auto& [key, value] : m) model[key] = value;
  }
  RequireSameAsModel(*env.tree, model);
  *counters = env.tree->counters();
  std::printf("  contention splits %llu (leaf splits %llu)\n",
              static_cast<unsigned long long>(counters->contention_splits),
              static_cast<unsigned long long>(counters->leaf_splits));
}

}  // namespace

TEST_CASE("btree contention: fibers on two workers update different records of a small tree",
          "[unit][btree][contention][concurrency]") {
  index::BtreeCounters c;
  SECTION("the real signal") {
    RunUpdaters(BtreeOptions{}, 40, 8, 3000, &c);
    REQUIRE(c.leaf_splits == c.contention_splits);  // updates of equal size split nothing else
  }
  SECTION("every write counted as contended") {
    RunUpdaters(Contended(2), 200, 8, 200, &c);
    REQUIRE(c.contention_splits > 0);
    REQUIRE(c.leaf_splits == c.contention_splits);
  }
}
