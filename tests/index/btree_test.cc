// B-tree unit tests: empty tree, one leaf, splits to height >= 3, root growth keeping the root
// id, duplicates and absent keys, update/upsert, delete to empty and reinsert, size limits,
// Open, non-unique flag, sequential fill, key heads (ties, Verify of heads and prefixes).
#include "index/btree.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/index/btree_test_util.h"

using namespace sm;
using index::BTree;
using index::BtreeStats;
using index::Cursor;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::RequireVerified;
using sm::test::TreeEnv;
using sm::test::ValueFor;

TEST_CASE("btree: an empty tree", "[unit][btree]") {
  TreeEnv env(16);
  std::string value;
  REQUIRE(env.tree->Lookup("a", &value).IsNotFound());
  REQUIRE(env.tree->Lookup("", &value).IsNotFound());
  REQUIRE(env.tree->Delete("a").IsNotFound());
  REQUIRE(env.tree->Update("a", "x").IsNotFound());
  Cursor cursor(env.tree.get());
  REQUIRE(cursor.SeekToFirst().ok());
  REQUIRE(!cursor.Valid());
  REQUIRE(cursor.SeekToLast().ok());
  REQUIRE(!cursor.Valid());
  REQUIRE(cursor.Next().IsInvalidArgument());
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height == 1);
  REQUIRE(stats.records == 0);
  REQUIRE(stats.empty_leaves == 1);
  REQUIRE(env.tree->root_page_id() == env.root);
}

TEST_CASE("btree: a single leaf, duplicates, absent keys and the empty key", "[unit][btree]") {
  TreeEnv env(16);
  Model model;
  for (std::string key : {"m", "a", "z", "ab", "", "b\0c", "zz"}) {
    REQUIRE(env.tree->Insert(key, "v" + key).ok());
    model[key] = "v" + key;
  }
  REQUIRE(env.tree->Insert("a", "other").IsDuplicate());
  REQUIRE(env.tree->Insert("", "other").IsDuplicate());
  std::string value;
  REQUIRE(env.tree->Lookup("a", &value).ok());
  REQUIRE(value == "va");
  REQUIRE(env.tree->Lookup("", &value).ok());
  REQUIRE(value == "v");
  REQUIRE(env.tree->Lookup("aa", &value).IsNotFound());
  REQUIRE(env.tree->Lookup("zzz", &value).IsNotFound());
  REQUIRE(env.tree->Delete("q").IsNotFound());
  RequireSameAsModel(*env.tree, model);
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height == 1);
}

TEST_CASE("btree: Add sums a counter in place and refuses one outside the value or an overflow",
          "[unit][btree]") {
  TreeEnv env(16);
  auto counters = [](int64_t a, int64_t b) {
    std::string value(20, 'x');  // two counters at 0 and 12, other bytes around them
    std::memcpy(value.data(), &a, 8);
    std::memcpy(value.data() + 12, &b, 8);
    return value;
  };
  REQUIRE(env.tree->Insert("c", counters(10, -3)).ok());
  std::string value;
  REQUIRE(env.tree->Add("c", 0, 32, &value).ok());
  CHECK(value == counters(42, -3));
  REQUIRE(env.tree->Add("c", 12, -4, nullptr).ok());
  REQUIRE(env.tree->Lookup("c", &value).ok());
  CHECK(value == counters(42, -7));
  CHECK(env.tree->Add("c", 13, 1, &value).IsInvalidArgument());  // bytes 13..21 of 20
  CHECK(env.tree->Add("c", UINT32_MAX, 1, &value).IsInvalidArgument());
  CHECK(env.tree->Add("d", 0, 1, &value).IsNotFound());
  CHECK(env.tree->Add("c", 0, INT64_MAX, &value).IsInvalidArgument());
  CHECK(env.tree->Add("c", 12, INT64_MIN, &value).IsInvalidArgument());
  REQUIRE(env.tree->Lookup("c", &value).ok());
  CHECK(value == counters(42, -7));  // the refused additions changed nothing
  // kWrap: two's complement, so adding d and then -d is exact.
  REQUIRE(env.tree->Add("c", 0, INT64_MAX, &value, {}, BTree::AddOverflow::kWrap).ok());
  CHECK(value == counters(static_cast<int64_t>(42ull + uint64_t{INT64_MAX}), -7));
  REQUIRE(env.tree->Add("c", 0, -INT64_MAX, &value, {}, BTree::AddOverflow::kWrap).ok());
  CHECK(value == counters(42, -7));
  RequireVerified(*env.tree);
}

TEST_CASE("btree: large keys split to height >= 3 in a small pool, the root id stays",
          "[unit][btree]") {
  TreeEnv env(24);  // far fewer frames than pages: every descent may read
  Model model;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> order(600);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (uint64_t n : order) {
    // ~1000-byte keys that differ only at the end, so that separators (shortest prefixes)
    // stay long and inner nodes hold few of them.
    std::string key = std::string(1000, static_cast<char>('a' + n % 3)) + Key64(n);
    std::string value = ValueFor(n, 0, 200);
    REQUIRE(env.tree->Insert(key, value).ok());
    model[key] = value;
  }
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 3);
  REQUIRE(env.tree->root_page_id() == env.root);
  REQUIRE(env.tree->counters().root_grows == stats.height - 1);
  REQUIRE(env.tree->counters().inner_splits > 0);
  // Splits of level-1 nodes escalate to exclusive latches from the root; leaf splits do not.
  REQUIRE(env.tree->counters().root_exclusive_descents > 0);
  REQUIRE(env.tree->counters().root_exclusive_descents < env.tree->counters().pessimistic_descents);
  REQUIRE(env.pool->stats().evictions > 0);
  RequireSameAsModel(*env.tree, model);
  // A second handle over the same root sees the same tree.
  std::unique_ptr<BTree> reopened;
  REQUIRE(BTree::Open(env.pool.get(), env.root, {}, &reopened).ok());
  RequireSameAsModel(*reopened, model);
}

TEST_CASE("btree: the root splits in place", "[unit][btree]") {
  TreeEnv env(64);
  uint64_t n = 0;
  while (env.tree->counters().root_grows == 0) {
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0, 100)).ok());
    ++n;
  }
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height == 2);
  REQUIRE(stats.pages_per_level[1] == 1);
  REQUIRE(stats.pages_per_level[0] == 2);
  REQUIRE(env.tree->root_page_id() == env.root);
  std::string value;
  for (uint64_t i = 0; i < n; ++i) {
    REQUIRE(env.tree->Lookup(Key64(i), &value).ok());
    REQUIRE(value == ValueFor(i, 0, 100));
  }
}

TEST_CASE("btree: update and upsert, including values that grow into splits", "[unit][btree]") {
  TreeEnv env(64);
  Model model;
  for (uint64_t n = 0; n < 400; ++n) {
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0, 10)).ok());
    model[Key64(n)] = ValueFor(n, 0, 10);
  }
  REQUIRE(env.tree->Update(Key64(1000), "x").IsNotFound());
  // Grow every value far beyond what the leaves had room for: updates must split.
  for (uint64_t n = 0; n < 400; n += 1) {
    std::string value = ValueFor(n, 1, 300 + n % 500);
    REQUIRE(env.tree->Update(Key64(n), value).ok());
    model[Key64(n)] = value;
  }
  REQUIRE(env.tree->counters().leaf_splits > 10);
  for (uint64_t n = 0; n < 400; n += 3) {  // and shrink some
    REQUIRE(env.tree->Update(Key64(n), "s").ok());
    model[Key64(n)] = "s";
  }
  for (uint64_t n = 350; n < 450; ++n) {  // upsert: 50 replace, 50 insert
    REQUIRE(env.tree->Upsert(Key64(n), ValueFor(n, 2, 60)).ok());
    model[Key64(n)] = ValueFor(n, 2, 60);
  }
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree: delete down to empty and reinsert", "[unit][btree]") {
  TreeEnv env(64);
  constexpr uint64_t kKeys = 5000;
  std::vector<uint64_t> order(kKeys);
  for (uint64_t i = 0; i < kKeys; ++i) order[i] = i;
  std::mt19937_64 rng(11);
  std::shuffle(order.begin(), order.end(), rng);
  for (uint64_t n : order) REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0)).ok());
  BtreeStats before;
  RequireVerified(*env.tree, &before);
  std::shuffle(order.begin(), order.end(), rng);
  for (uint64_t n : order) REQUIRE(env.tree->Delete(Key64(n)).ok());
  REQUIRE(env.tree->Delete(Key64(order[0])).IsNotFound());
  BtreeStats empty;
  RequireVerified(*env.tree, &empty);
  REQUIRE(empty.records == 0);
  // Each emptied leaf left the tree, except the one leaf each parent keeps; the height stays.
  REQUIRE(before.height >= 2);
  REQUIRE(empty.height == before.height);
  REQUIRE(empty.pages_per_level[0] == empty.pages_per_level[1]);
  REQUIRE(empty.empty_leaves == empty.pages_per_level[0]);
  REQUIRE(env.tree->counters().leaf_merges ==
          before.pages_per_level[0] - empty.pages_per_level[0]);
  RequireSameAsModel(*env.tree, {});
  Model model;
  for (uint64_t n : order) {
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 1)).ok());
    model[Key64(n)] = ValueFor(n, 1);
  }
  BtreeStats after;
  RequireVerified(*env.tree, &after);
  REQUIRE(after.records == kKeys);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree: with retirement off, emptied leaves stay and are reused", "[unit][btree]") {
  index::BtreeOptions keep_empty;
  keep_empty.retire_empty_leaves = false;
  TreeEnv env(64, keep_empty);
  constexpr uint64_t kKeys = 5000;
  for (uint64_t n = 0; n < kKeys; ++n) REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0)).ok());
  BtreeStats before;
  RequireVerified(*env.tree, &before);
  for (uint64_t n = 0; n < kKeys; ++n) REQUIRE(env.tree->Delete(Key64(n)).ok());
  BtreeStats empty;
  RequireVerified(*env.tree, &empty);
  REQUIRE(empty.empty_leaves == before.pages_per_level[0]);
  REQUIRE(env.tree->counters().leaf_merges == 0);
  for (uint64_t n = 0; n < kKeys; ++n) REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 1)).ok());
  BtreeStats after;
  RequireVerified(*env.tree, &after);
  REQUIRE(after.pages_per_level[0] == before.pages_per_level[0]);  // the old leaves were reused
}

// A queue: inserts at the high end, deletes from the low end (TPC-C's NEW-ORDER). The emptied
// leaves leave the tree, so the search for the head passes at most one empty leaf.
TEST_CASE("btree: a queue's emptied leaves leave the tree", "[unit][btree]") {
  TreeEnv env(256);
  uint64_t head = 0, tail = 0;
  for (; tail < 3000; ++tail) REQUIRE(env.tree->Insert(Key64(tail), ValueFor(tail, 0)).ok());
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 500; ++i, ++tail) {
      REQUIRE(env.tree->Insert(Key64(tail), ValueFor(tail, 0)).ok());
    }
    for (int i = 0; i < 500; ++i, ++head) REQUIRE(env.tree->Delete(Key64(head)).ok());
    Cursor cursor(env.tree.get());
    REQUIRE(cursor.SeekToFirst().ok());
    REQUIRE(cursor.Valid());
    REQUIRE(cursor.key() == Key64(head));
  }
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.records == tail - head);
  // Without retirement about 20,000 deletes would have left some 250 empty leaves in front.
  REQUIRE(stats.empty_leaves <= stats.pages_per_level[1]);
  REQUIRE(env.tree->counters().leaf_merges > 100);
  // The splits at the tail took the retired pages: the volume holds the tree and little more.
  REQUIRE(env.tree->counters().pages_reused > 50);
  REQUIRE(env.volume->allocated_pages() <= stats.pages() + 16);
  Model model;
  for (uint64_t n = head; n < tail; ++n) model[Key64(n)] = ValueFor(n, 0);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree: key and record size limits are InvalidArgument naming the limit",
          "[unit][btree]") {
  TreeEnv env(32);
  std::string max_key(index::kMaxKeyBytes, 'k');
  std::string long_key(index::kMaxKeyBytes + 1, 'k');
  Status s = env.tree->Insert(long_key, "v");
  REQUIRE(s.IsInvalidArgument());
  REQUIRE(s.ToString().find("kMaxKeyBytes") != std::string::npos);
  std::string value;
  REQUIRE(env.tree->Lookup(long_key, &value).IsInvalidArgument());
  REQUIRE(env.tree->Delete(long_key).IsInvalidArgument());
  // key + value + 2 == kMaxRecordBytes fits; one more byte does not.
  size_t max_value = SlottedPage::kMaxRecordBytes - 2 - max_key.size();
  REQUIRE(env.tree->Insert(max_key, std::string(max_value, 'v')).ok());
  s = env.tree->Insert(max_key + "", std::string(max_value + 1, 'v'));
  REQUIRE(s.IsInvalidArgument());
  REQUIRE(s.ToString().find("kMaxRecordBytes") != std::string::npos);
  s = env.tree->Update(max_key, std::string(max_value + 1, 'v'));
  REQUIRE(s.IsInvalidArgument());
  REQUIRE(env.tree->Upsert("", std::string(SlottedPage::kMaxRecordBytes - 2, 'e')).ok());
  REQUIRE(
      env.tree->Upsert("", std::string(SlottedPage::kMaxRecordBytes - 1, 'e')).IsInvalidArgument());
  RequireVerified(*env.tree);
}

TEST_CASE("btree: maximal keys and records split correctly", "[unit][btree]") {
  TreeEnv env(64);
  Model model;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1500; ++i) {
    size_t key_bytes = rng() % 4 == 0 ? index::kMaxKeyBytes : 1 + rng() % index::kMaxKeyBytes;
    std::string key(key_bytes, '\0');
    for (char& c : key) c = static_cast<char>('a' + rng() % 3);  // long shared prefixes
    size_t room = SlottedPage::kMaxRecordBytes - 2 - key_bytes;
    size_t value_bytes = rng() % 2 == 0 ? room : rng() % (room + 1);
    std::string value(value_bytes, static_cast<char>('0' + i % 10));
    Status s = env.tree->Upsert(key, value);
    INFO(s.ToString());
    REQUIRE(s.ok());
    model[key] = value;
  }
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 3);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree: Open checks the page and reads the index kind", "[unit][btree]") {
  TreeEnv env(32, index::BtreeOptions{false, nullptr});
  REQUIRE(!env.tree->unique());
  for (uint64_t n = 0; n < 2000; ++n) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  std::unique_ptr<BTree> reopened;
  REQUIRE(BTree::Open(env.pool.get(), env.root, {}, &reopened).ok());
  REQUIRE(!reopened->unique());
  RequireVerified(*reopened);
  // A page that is a node but not the root, and a page that is no node at all.
  buffer::PageHandle page;
  REQUIRE(env.pool->FixNew(PageType::kCatalog, &page).ok());
  PageId other = page.page_id();
  page.Release();
  REQUIRE(BTree::Open(env.pool.get(), other, {}, &reopened).IsInvalidArgument());
  // A root of another node format (a database written by an older build) is named as such.
  {
    buffer::PageHandle root;
    REQUIRE(env.pool->Fix(env.root, threads::LatchMode::kExclusive, &root).ok());
    index::Node(root.data()).mutable_header().format_version = 2;
  }
  Status old_format = BTree::Open(env.pool.get(), env.root, {}, &reopened);
  REQUIRE(old_format.code() == Status::Code::kNotSupported);
  REQUIRE(old_format.ToString().find("format version 2") != std::string::npos);
  TreeEnv unique_env(16);
  REQUIRE(unique_env.tree->unique());
}

TEST_CASE("btree: ascending inserts fill the leaves", "[unit][btree]") {
  TreeEnv env(256);
  constexpr uint64_t kKeys = 20000;
  for (uint64_t n = 0; n < kKeys; ++n)
    REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0, 100)).ok());
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  // (2 + 8 + 100 + 8 slot) bytes a record: ~68 fit a leaf; a 50/50 split would need ~2x leaves.
  uint64_t per_leaf = index::kNodeRecordAreaBytes / (2 + 8 + 100 + SlottedPage::kSlotBytes);
  REQUIRE(stats.pages_per_level[0] <= kKeys / per_leaf + kKeys / per_leaf / 10 + 1);
}

TEST_CASE("btree: interleaved ascending streams fill the leaves", "[unit][btree]") {
  // Ten streams, each ascending inside its own key range (as TPC-C's order lines grow at the
  // end of each district): the splits inside the level must keep the left nodes full too.
  TreeEnv env(256);
  constexpr uint64_t kStreams = 10;
  constexpr uint64_t kPerStream = 2000;
  for (uint64_t n = 0; n < kPerStream; ++n) {
    for (uint64_t s = 0; s < kStreams; ++s) {
      uint64_t key = s * 1'000'000 + n;
      REQUIRE(env.tree->Insert(Key64(key), ValueFor(key, 0, 100)).ok());
    }
  }
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  uint64_t keys = kStreams * kPerStream;
  uint64_t per_leaf = index::kNodeRecordAreaBytes / (2 + 8 + 100 + SlottedPage::kSlotBytes);
  // Each stream's last leaf may be partly filled; the rest are full.
  REQUIRE(stats.pages_per_level[0] <= keys / per_leaf + keys / per_leaf / 10 + kStreams);
}

TEST_CASE("btree: key heads order keys that differ only in length or in zero bytes",
          "[unit][btree]") {
  // Keys over {0x00, 0x01, 'z'} of 0..7 bytes after a shared 5-byte prefix: many keys have
  // equal (zero-padded) heads, so searches must break ties on the whole key. Splits give the
  // nodes non-empty fence prefixes.
  TreeEnv env(64);
  Model model;
  const std::string prefix = "PFX/_";
  const char alphabet[] = {'\0', '\x01', 'z'};
  std::vector<std::string> keys{prefix};
  for (size_t len = 1; len <= 7; ++len) {
    size_t combos = 1;
    for (size_t i = 0; i < len; ++i) combos *= 3;
    for (size_t c = 0; c < combos && c < 400; ++c) {
      std::string key = prefix;
      for (size_t i = 0, x = c; i < len; ++i, x /= 3) key.push_back(alphabet[x % 3]);
      keys.push_back(key);
    }
  }
  std::mt19937_64 rng(7);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 2 != 0) continue;  // every other key stays absent
    std::string value = ValueFor(i, 0, 40);
    REQUIRE(env.tree->Insert(keys[i], value).ok());
    model[keys[i]] = value;
  }
  BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 2);
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string got;
    Status s = env.tree->Lookup(keys[i], &got);
    REQUIRE(s.code() == (i % 2 == 0 ? Status::Code::kOk : Status::Code::kNotFound));
  }
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree: Verify reports a key head, prefix or head skip that does not match the keys",
          "[unit][btree]") {
  TreeEnv env(64);
  for (uint64_t n = 0; n < 3000; ++n) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  RequireVerified(*env.tree);
  // A leaf in the middle of the key space: not the root, fences with a common prefix.
  PageId leaf_id;
  {
    buffer::PageHandle root;
    REQUIRE(env.pool->Fix(env.root, threads::LatchMode::kShared, &root).ok());
    index::Node r(root.data());
    REQUIRE(!r.is_leaf());
    leaf_id = r.ChildAt(r.count() / 2);
    REQUIRE(index::Node(root.data()).level() == 1);
  }
  auto poke = [&](auto&& change) {
    buffer::PageHandle page;
    REQUIRE(env.pool->Fix(leaf_id, threads::LatchMode::kExclusive, &page).ok());
    index::Node node(page.data());
    REQUIRE(node.is_leaf());
    REQUIRE(node.count() > 1);
    change(node);
  };
  uint32_t head = 0;
  poke([&](index::Node& node) {
    REQUIRE(node.prefix_bytes() > 0);
    head = node.slots().Tag(index::kFirstRecordSlot + 1);
    node.slots().SetTag(index::kFirstRecordSlot + 1, head + 1);
  });
  Status s = env.tree->Verify();
  REQUIRE(s.IsCorruption());
  REQUIRE(s.ToString().find("head does not match") != std::string::npos);
  poke([&](index::Node& node) { node.slots().SetTag(index::kFirstRecordSlot + 1, head); });
  RequireVerified(*env.tree);
  poke([&](index::Node& node) { node.mutable_header().prefix_bytes--; });
  s = env.tree->Verify();
  REQUIRE(s.IsCorruption());
  REQUIRE(s.ToString().find("prefix_bytes") != std::string::npos);
  poke([&](index::Node& node) { node.mutable_header().prefix_bytes++; });
  RequireVerified(*env.tree);
  // The root's fences share nothing, but its separators (keys below 3000) share their first
  // six bytes, which its heads skip. Heads taken without the skip, consistently, are still
  // caught: the skip is a function of the records.
  buffer::PageHandle root;
  REQUIRE(env.pool->Fix(env.root, threads::LatchMode::kExclusive, &root).ok());
  index::Node r(root.data());
  REQUIRE(r.prefix_bytes() == 0);
  REQUIRE(r.head_skip() >= index::kMinHeadSkip);
  r.mutable_header().head_skip = 0;
  for (uint16_t i = 0; i < r.count(); ++i) {
    r.slots().SetTag(static_cast<uint16_t>(index::kFirstRecordSlot + i),
                     index::KeyHead(r.KeyAt(i), 0));
  }
  root.Release();
  s = env.tree->Verify();
  REQUIRE(s.IsCorruption());
  REQUIRE(s.ToString().find("head_skip") != std::string::npos);
}
