// Leaf hints (index/btree.h, "Leaf hints"): a read for update followed by the update uses the
// remembered leaf; a hint whose leaf split (the key moved to the right sibling), a hint of
// another tree or of another BTree object of the same tree, and a hint of a root leaf that has
// grown are rejected and the operation still lands in the right leaf; keys whose first 8 bytes
// tie with the fences are decided on the page; consecutive inserts through one hint split and
// keep hitting; a leaf found ahead (PrefetchLeaf) that split away from the key is not searched;
// a batch's shared parent (ParentHint) finds the leaves a descent from the root finds, also
// after the parents split, and a parent of another tree is not used;
// a seeded random workload through a few hints equals a std::map model and
// verifies; KeyPrefix orders as keys do.
// (Concurrent use: btree_concurrency_test.cc; lock requests with hints: btree_hooks_test.cc.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"

using namespace sm;
using index::BTree;
using index::LeafHint;
using index::OpContext;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::RequireVerified;
using sm::test::TreeEnv;
using sm::test::ValueFor;

namespace {

OpContext With(LeafHint* hint) { return OpContext{nullptr, nullptr, hint}; }

// Keys n * 1000 for n < count, ascending: a tree of several levels with room between keys.
void FillSpaced(BTree& tree, uint64_t count, Model* model) {
  for (uint64_t n = 0; n < count; ++n) {
    REQUIRE(tree.Insert(Key64(n * 1000), ValueFor(n, 0)).ok());
    if (model != nullptr) (*model)[Key64(n * 1000)] = ValueFor(n, 0);
  }
}

// The fences of page `id` (latched shared while copied).
std::pair<std::string, std::string> Fences(TreeEnv& env, PageId id) {
  buffer::PageHandle page;
  REQUIRE(env.pool->Fix(id, threads::LatchMode::kShared, &page).ok());
  index::Node node(page.data());
  REQUIRE(node.is_leaf());
  return {std::string(node.low_fence()),
          node.high_infinite() ? std::string() : std::string(node.high_fence())};
}

}  // namespace

TEST_CASE("btree hint: KeyPrefix orders as the keys do", "[random][btree][hint]") {
  uint64_t seed = sm::test::TestSeed("btree hint key prefix");
  std::mt19937_64 rng(seed);
  auto random_key = [&] {
    std::string key(rng() % 13, '\0');
    for (char& c : key) c = "\0\1a\xff"[rng() % 4];
    return key;
  };
  for (int i = 0; i < 200000; ++i) {
    std::string a = random_key();
    std::string b = random_key();
    if (a <= b) REQUIRE(index::KeyPrefix(a) <= index::KeyPrefix(b));
    if (index::KeyPrefix(a) < index::KeyPrefix(b)) REQUIRE(a < b);
  }
  REQUIRE(index::KeyPrefix("") == 0);
  REQUIRE(index::KeyPrefix("\x01") == uint64_t{1} << 56);
  REQUIRE(index::KeyPrefix(std::string_view("abcde\0\0", 7)) == index::KeyPrefix("abcde"));
  REQUIRE(index::KeyPrefix("abcdefghij") == index::KeyPrefix("abcdefgh"));
  REQUIRE(index::KeyPrefix("abcdefg") < index::KeyPrefix("abcdefgh"));
}

TEST_CASE("btree hint: a read for update, then the update, uses the remembered leaf",
          "[unit][btree][hint]") {
  TreeEnv env(256);
  FillSpaced(*env.tree, 5000, nullptr);
  index::BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 2);

  LeafHint hint;
  std::string value;
  const std::string key = Key64(2345 * 1000);
  REQUIRE(env.tree->Lookup(key, &value, With(&hint), /*for_update=*/true).ok());
  REQUIRE(value == ValueFor(2345, 0));
  REQUIRE(hint.hits == 0);  // an empty hint: descended, and remembered the leaf
  REQUIRE(hint.misses == 1);
  REQUIRE(hint.tree == env.tree->instance_id());
  const PageId leaf = hint.leaf;

  REQUIRE(env.tree->Update(key, ValueFor(2345, 1), With(&hint)).ok());
  REQUIRE(hint.hits == 1);
  REQUIRE(hint.leaf == leaf);
  REQUIRE(env.tree->Lookup(key, &value, With(&hint)).ok());
  REQUIRE(value == ValueFor(2345, 1));
  REQUIRE(hint.hits == 2);
  // Absent keys, deletes and inserts within the leaf's range use it too.
  REQUIRE(env.tree->Lookup(Key64(2345 * 1000 + 1), &value, With(&hint)).IsNotFound());
  REQUIRE(env.tree->Insert(Key64(2345 * 1000 + 1), "new", With(&hint)).ok());
  REQUIRE(env.tree->Delete(key, With(&hint)).ok());
  REQUIRE(env.tree->Update(key, "gone", With(&hint)).IsNotFound());
  REQUIRE(hint.hits == 6);
  REQUIRE(hint.rejected == 0);
  REQUIRE(hint.leaf == leaf);

  // A plain read elsewhere misses without fixing the page and leaves the hint alone; a read
  // for update elsewhere takes it along.
  REQUIRE(env.tree->Lookup(Key64(17 * 1000), &value, With(&hint)).ok());
  REQUIRE(value == ValueFor(17, 0));
  REQUIRE(hint.misses == 2);
  REQUIRE(hint.leaf == leaf);
  REQUIRE(env.tree->Lookup(Key64(17 * 1000), &value, With(&hint), /*for_update=*/true).ok());
  REQUIRE(hint.misses == 3);
  REQUIRE(hint.rejected == 0);
  REQUIRE(hint.leaf != leaf);
  REQUIRE(env.tree->Update(Key64(17 * 1000), "u", With(&hint)).ok());
  REQUIRE(hint.hits == 7);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hint: a hint whose leaf split is rejected, the key is found in its new leaf",
          "[unit][btree][hint]") {
  TreeEnv env(256);
  Model model;
  FillSpaced(*env.tree, 3000, &model);
  // The last key of some leaf, remembered with that leaf.
  LeafHint hint;
  std::string value;
  REQUIRE(env.tree->Lookup(Key64(1500 * 1000), &value, With(&hint), true).ok());
  const auto [old_low, old_high] = Fences(env, hint.leaf);
  REQUIRE(!hint.high_infinite);
  auto last = model.lower_bound(old_high);
  REQUIRE(last != model.begin());
  --last;
  const std::string key = last->first;
  REQUIRE(env.tree->Lookup(key, &value, With(&hint)).ok());
  REQUIRE(hint.hits == 1);
  const PageId old_leaf = hint.leaf;

  // Fill the gap just below the key (no hint): the leaf splits, and the key, the largest of
  // its range, goes to a right half.
  uint64_t base = 0;
  for (char c : key) base = (base << 8) | static_cast<uint8_t>(c);
  const uint64_t splits = env.tree->counters().leaf_splits;
  for (uint64_t i = 1; i < 600; ++i) {
    REQUIRE(env.tree->Insert(Key64(base - i), ValueFor(base - i, 0)).ok());
    model[Key64(base - i)] = ValueFor(base - i, 0);
  }
  REQUIRE(env.tree->counters().leaf_splits > splits);

  // The hint still claims the key by the fences it kept, so the page is fixed, found changed
  // and no longer covering the key: rejected, and the update descends.
  REQUIRE(env.tree->Update(key, "updated", With(&hint)).ok());
  model[key] = "updated";
  REQUIRE(hint.rejected == 1);
  REQUIRE(hint.hits == 1);
  REQUIRE(hint.leaf != old_leaf);
  const auto [new_low, new_high] = Fences(env, hint.leaf);
  REQUIRE(new_low != old_low);
  REQUIRE(new_low <= key);
  REQUIRE(key < new_high);
  REQUIRE(new_high == old_high);  // the right end of the old range is the new leaf's
  // The refreshed hint hits.
  REQUIRE(env.tree->Lookup(key, &value, With(&hint)).ok());
  REQUIRE(value == "updated");
  REQUIRE(hint.hits == 2);
  RequireSameAsModel(*env.tree, model);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hint: a batch's shared parent finds the leaves the root finds",
          "[unit][btree][hint]") {
  // Values of 1,000 bytes: a few keys a leaf, so a few thousand keys make a tree whose root
  // has several parents of leaves.
  TreeEnv env(2048);
  BTree& tree = *env.tree;
  auto insert = [&](uint64_t n) {
    REQUIRE(tree.Insert(Key64(n * 10), ValueFor(n, 0, 1000)).ok());
  };
  for (uint64_t n = 0; n < 4000; ++n) insert(n);
  // Every key in order through one ParentHint, each against a descent from the root.
  auto check_batch = [&](index::ParentHint* parent, uint64_t step) {
    size_t parents_used = 0;
    PageId last_parent;
    for (uint64_t n = 0; n < 4000; n += step) {
      const std::string key = Key64(n * 10 + 5);  // between two keys: the leaf of the gap
      LeafHint with_parent, from_root;
      REQUIRE(tree.PrefetchLeaf(key, &with_parent, parent).ok());
      REQUIRE(tree.PrefetchLeaf(key, &from_root).ok());
      REQUIRE(with_parent.leaf == from_root.leaf);
      REQUIRE(parent->tree == tree.instance_id());
      if (parent->page != last_parent) ++parents_used;
      last_parent = parent->page;
    }
    return parents_used;
  };
  index::ParentHint parent;
  const size_t parents = check_batch(&parent, 3);
  INFO("parents of leaves met in order: " << parents);
  REQUIRE(parents >= 2);  // the batch did cross parents
  // Splits everywhere (the parents split too); the hint names a parent that changed.
  for (uint64_t n = 0; n < 4000; n += 2) {
    REQUIRE(tree.Insert(Key64(n * 10 + 7), ValueFor(n, 1, 1000)).ok());
  }
  REQUIRE(check_batch(&parent, 1) > parents);
  // A hint of another tree is not used, nor one naming a page that is no parent of leaves
  // (here a leaf): the descent starts at the root and the hint then names the right parent.
  LeafHint leaf_hint;
  REQUIRE(tree.PrefetchLeaf(Key64(5), &leaf_hint).ok());
  index::ParentHint foreign = parent;
  foreign.tree = tree.instance_id() + 1;
  index::ParentHint not_a_parent = parent;
  not_a_parent.page = leaf_hint.leaf;
  not_a_parent.frame = nullptr;
  not_a_parent.low_prefix = 0;
  not_a_parent.high_infinite = true;
  for (index::ParentHint* bad : {&foreign, &not_a_parent}) {
    REQUIRE(check_batch(bad, 7) >= 2);
  }
  RequireVerified(tree);
}

TEST_CASE("btree hint: a leaf found ahead that split away from the key is not searched",
          "[unit][btree][hint]") {
  // PrefetchLeaf names the leaf that covers the key then; before the lookup, a split leaves
  // that leaf with fences sharing a prefix the key does not have. Searching it would break
  // Node::Search's precondition (a debug assertion); the lookup descends instead.
  TreeEnv env(256);
  Model model;
  const std::string value_bytes(100, 'v');
  auto insert = [&](const std::string& key) {
    REQUIRE(env.tree->Insert(key, value_bytes + key).ok());
    model[key] = value_bytes + key;
  };
  char name[8];
  for (int i = 0; i < 200; ++i) {
    std::snprintf(name, sizeof name, "m%03d", i);
    insert(name);
  }
  insert("z");
  LeafHint hint;
  REQUIRE(env.tree->PrefetchLeaf("z", &hint).ok());
  REQUIRE(hint.ahead);
  const PageId ahead_leaf = hint.leaf;
  // The rightmost leaf (it holds "z") takes keys below "z" until it splits.
  for (int i = 0; i < 200; ++i) {
    std::snprintf(name, sizeof name, "m2%03d", i);
    insert(name);
  }
  const auto [low, high] = Fences(env, ahead_leaf);
  INFO("the leaf found ahead now covers [" << low << ", " << high << ")");
  REQUIRE(!high.empty());
  REQUIRE(index::CommonPrefixBytes(low, high) > 0);
  REQUIRE(low[0] != 'z');

  std::string value;
  REQUIRE(env.tree->Lookup("z", &value, With(&hint)).ok());
  REQUIRE(value == value_bytes + "z");
  RequireSameAsModel(*env.tree, model);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hint: a hint of another tree is never used", "[unit][btree][hint]") {
  TreeEnv env(256);
  PageId other_root;
  std::unique_ptr<BTree> other;
  REQUIRE(BTree::Create(env.pool.get(), {}, &other_root, &other).ok());
  Model model;
  FillSpaced(*env.tree, 2000, &model);
  for (uint64_t n = 0; n < 2000; ++n) REQUIRE(other->Insert(Key64(n * 1000), "other").ok());

  LeafHint hint;
  std::string value;
  const std::string key = Key64(700 * 1000);
  REQUIRE(other->Lookup(key, &value, With(&hint), /*for_update=*/true).ok());
  REQUIRE(value == "other");
  REQUIRE(hint.tree == other->instance_id());
  REQUIRE(hint.tree != env.tree->instance_id());

  SECTION("as it is: a miss without fixing the page") {
    REQUIRE(env.tree->Update(key, "mine", With(&hint)).ok());
    REQUIRE(hint.hits == 0);
    REQUIRE(hint.rejected == 0);
    REQUIRE(hint.misses == 2);
    REQUIRE(hint.tree == env.tree->instance_id());
  }
  SECTION("claiming to be this tree's: the page's tree_root rejects it") {
    hint.tree = env.tree->instance_id();  // as if the other tree's page had become this one's
    REQUIRE(env.tree->Update(key, "mine", With(&hint)).ok());
    REQUIRE(hint.hits == 0);
    REQUIRE(hint.rejected == 1);
  }
  model[key] = "mine";
  REQUIRE(other->Lookup(key, &value).ok());
  REQUIRE(value == "other");
  RequireSameAsModel(*env.tree, model);
  RequireVerified(*env.tree);
  RequireVerified(*other);
}

TEST_CASE("btree hint: a tree opened again is another tree for hints", "[unit][btree][hint]") {
  TreeEnv env(256);
  FillSpaced(*env.tree, 2000, nullptr);
  LeafHint hint;
  std::string value;
  REQUIRE(env.tree->Lookup(Key64(5000), &value, With(&hint), /*for_update=*/true).ok());
  std::unique_ptr<BTree> again;
  REQUIRE(BTree::Open(env.pool.get(), env.root, {}, &again).ok());
  REQUIRE(again->instance_id() != env.tree->instance_id());
  REQUIRE(again->Update(Key64(5000), "again", With(&hint)).ok());
  REQUIRE(hint.hits == 0);
  REQUIRE(hint.rejected == 0);  // not even fixed
  REQUIRE(hint.tree == again->instance_id());
  REQUIRE(again->Lookup(Key64(5000), &value, With(&hint)).ok());
  REQUIRE(value == "again");
  REQUIRE(hint.hits == 1);
}

TEST_CASE("btree hint: a root leaf that grew into an inner node is rejected",
          "[unit][btree][hint]") {
  TreeEnv env(256);
  LeafHint hint;
  REQUIRE(env.tree->Insert(Key64(1), "one", With(&hint)).ok());
  REQUIRE(hint.leaf == env.root);
  REQUIRE(env.tree->Insert(Key64(2), "two", With(&hint)).ok());
  REQUIRE(hint.hits == 1);
  for (uint64_t n = 3; n < 1000; ++n) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  REQUIRE(env.tree->counters().root_grows > 0);
  // Fences "" and +infinity cover every key: the page is fixed and found an inner node.
  std::string value;
  REQUIRE(env.tree->Lookup(Key64(1), &value, With(&hint), /*for_update=*/true).ok());
  REQUIRE(value == "one");
  REQUIRE(hint.rejected == 1);
  REQUIRE(hint.leaf != env.root);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hint: keys whose first 8 bytes tie with the fences are decided on the page",
          "[unit][btree][hint]") {
  TreeEnv env(256);
  const std::string prefix(200, 'p');  // every key and every separator shares its first 8 bytes
  for (uint64_t n = 0; n < 2000; ++n) REQUIRE(env.tree->Insert(prefix + Key64(n), "v").ok());
  LeafHint hint;
  std::string value;
  REQUIRE(env.tree->Lookup(prefix + Key64(1000), &value, With(&hint), true).ok());
  REQUIRE(hint.tree == env.tree->instance_id());
  REQUIRE(hint.low_prefix == index::KeyPrefix(prefix));
  REQUIRE(hint.high_prefix == index::KeyPrefix(prefix));
  // The same leaf: fixed, and found to cover the key (Node::Covers).
  REQUIRE(env.tree->Update(prefix + Key64(1000), "w", With(&hint)).ok());
  REQUIRE(hint.hits == 1);
  // Another leaf: the prefixes cannot tell, so the page is fixed and rejected.
  REQUIRE(env.tree->Update(prefix + Key64(10), "w", With(&hint)).ok());
  REQUIRE(hint.hits == 1);
  REQUIRE(hint.rejected == 1);
  // A key below every separator but with the same first 8 bytes: the leftmost leaf.
  REQUIRE(env.tree->Insert("pppppppp", "v", With(&hint)).ok());
  REQUIRE(env.tree->Lookup(prefix + Key64(1000), &value).ok());
  REQUIRE(value == "w");
  REQUIRE(env.tree->Lookup(prefix + Key64(10), &value).ok());
  REQUIRE(value == "w");
  RequireVerified(*env.tree);
}

TEST_CASE("btree hint: ascending inserts through one hint split leaves and keep hitting",
          "[unit][btree][hint]") {
  TreeEnv env(256);
  Model model;
  LeafHint hint;
  constexpr uint64_t kKeys = 20000;
  for (uint64_t n = 0; n < kKeys; ++n) {
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0), With(&hint)).ok());
    model[Key64(n)] = ValueFor(n, 0);
  }
  const index::BtreeCounters counters = env.tree->counters();
  REQUIRE(counters.leaf_splits > 50);
  // Only the first insert descends: the hint then remembers the rightmost leaf, and after each
  // split (the insert that found the leaf full went on pessimistically) the half that took the
  // key, the new rightmost leaf.
  REQUIRE(hint.hits == kKeys - 1);
  REQUIRE(hint.misses == 1);
  std::printf(
      "  %llu ascending inserts: %llu hint hits, %llu misses (%llu rejected), %llu "
      "splits\n",
      static_cast<unsigned long long>(kKeys), static_cast<unsigned long long>(hint.hits),
      static_cast<unsigned long long>(hint.misses), static_cast<unsigned long long>(hint.rejected),
      static_cast<unsigned long long>(counters.leaf_splits));
  RequireSameAsModel(*env.tree, model);
  RequireVerified(*env.tree);
}

// Point operations through a few hints (as a few transactions would), on keys that often stay
// near the previous one, mixed with operations without a hint; values of all sizes, so that
// updates split too. The model decides every result.
TEST_CASE("btree hint: random operations through hints against a model", "[random][btree][hint]") {
  uint64_t seed = sm::test::TestSeed("btree hint random operations");
  std::mt19937_64 rng(seed);
  TreeEnv env(48);
  Model model;
  LeafHint hints[3];
  uint64_t near[3] = {0, 0, 0};
  constexpr uint64_t kKeySpace = 8000;
  constexpr uint64_t kOps = 60000;
  for (uint64_t op = 0; op < kOps; ++op) {
    size_t h = rng() % 3;
    // Mostly near the hint's last key (the same, or a neighbour), sometimes anywhere.
    uint64_t n = rng() % 4 == 0 ? rng() % kKeySpace : (near[h] + rng() % 5) % kKeySpace;
    near[h] = n;
    // Some keys with a long shared prefix: fences whose first 8 bytes tie (KeyPrefix), so the
    // hint is decided on the page.
    std::string key = n % 16 == 0 ? std::string(60 + n % 100, 'p') + Key64(n) : Key64(n);
    LeafHint* hint = rng() % 8 == 0 ? nullptr : &hints[h];
    OpContext ctx = With(hint);
    bool present = model.count(key) != 0;
    size_t bytes = rng() % 64 == 0 ? 1000 + rng() % 900 : 12 + rng() % 100;
    std::string value = ValueFor(n, op, bytes);
    value.resize(std::min(value.size(), SlottedPage::kMaxRecordBytes - 2 - key.size()));
    switch (rng() % 6) {
      case 0: {
        Status s = env.tree->Insert(key, value, ctx);
        REQUIRE(s.code() == (present ? Status::Code::kDuplicate : Status::Code::kOk));
        if (!present) model[key] = value;
        break;
      }
      case 1: {
        Status s = env.tree->Update(key, value, ctx);
        REQUIRE(s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound));
        if (present) model[key] = value;
        break;
      }
      case 2:
        REQUIRE(env.tree->Upsert(key, value, ctx).ok());
        model[key] = value;
        break;
      case 3: {
        Status s = env.tree->Delete(key, ctx);
        REQUIRE(s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound));
        model.erase(key);
        break;
      }
      default: {
        std::string got;
        Status s = env.tree->Lookup(key, &got, ctx, rng() % 2 == 0);
        REQUIRE(s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound));
        if (present) REQUIRE(got == model[key]);
      }
    }
    if ((op + 1) % 10000 == 0) RequireVerified(*env.tree);
  }
  uint64_t hits = 0, misses = 0, rejected = 0;
  for (const LeafHint& hint : hints) {
    hits += hint.hits;
    misses += hint.misses;
    rejected += hint.rejected;
  }
  std::printf("  %llu ops: %llu hint hits, %llu misses (%llu rejected), %llu leaf splits\n",
              static_cast<unsigned long long>(kOps), static_cast<unsigned long long>(hits),
              static_cast<unsigned long long>(misses), static_cast<unsigned long long>(rejected),
              static_cast<unsigned long long>(env.tree->counters().leaf_splits));
  REQUIRE(hits > misses);
  RequireSameAsModel(*env.tree, model);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hint: the children's frame hints follow them through splits",
          "[random][btree][hint]") {
  // Random inserts split leaves all over the tree; each split inserts a child into its parent
  // and so moves the later children's positions. Their frame hints must move with them: then
  // a lookup of every key afterwards fixes every node through a hint (root, inner, leaf), and
  // none through the page table.
  const uint64_t seed = sm::test::TestSeed("btree hint children follow splits");
  TreeEnv env(4096);
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(100000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i * 7;
  std::shuffle(keys.begin(), keys.end(), rng);
  for (uint64_t k : keys) REQUIRE(env.tree->Insert(Key64(k), ValueFor(k, 0, 100)).ok());
  index::BtreeStats tree_stats;
  RequireVerified(*env.tree, &tree_stats);
  REQUIRE(tree_stats.height >= 3);  // inner nodes below the root split too
  REQUIRE(env.pool->stats().misses == 0);

  const buffer::BufferPoolStats before = env.pool->stats();
  std::string value;
  for (uint64_t k : keys) REQUIRE(env.tree->Lookup(Key64(k), &value).ok());
  const buffer::BufferPoolStats after = env.pool->stats();
  const uint64_t fixes = after.hits - before.hits;
  const uint64_t hinted = after.hinted_hits - before.hinted_hits;
  INFO("fixes " << fixes << ", through hints " << hinted);
  CHECK(fixes >= keys.size() * tree_stats.height);
  CHECK(hinted == fixes);
}
