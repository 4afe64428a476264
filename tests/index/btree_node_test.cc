// Tests of the in-node search (index/btree_node.h): LowerBound (with and without `found`) and
// UpperBound on single nodes whose keys share prefixes of many lengths, against a sorted
// std::set model; and CompareKeys against std::string_view::compare.
#include "index/btree_node.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sm/io/aligned_buffer.h"
#include "sm/page/page.h"
#include "tests/test_util.h"

using namespace sm;
using index::Node;

namespace {

// Bytes that make heads tie or sit at the ends of their range: zero padding against a real
// zero byte, and 0xff heads (whose successor head wraps).
constexpr char kAlphabet[] = {'\0', '\x01', '\x7f', '\xff'};

std::string RandomBytes(std::mt19937_64& rng, size_t max_bytes) {
  std::string s(rng() % (max_bytes + 1), '\0');
  for (char& c : s) c = kAlphabet[rng() % sizeof(kAlphabet)];
  return s;
}

// A node of `level` over [low, high) (high_infinite: no upper bound) holding as many of the
// keys `prefix + RandomBytes(10)` as fit, with the keys it holds in `model`.
struct NodeCase {
  io::AlignedBuffer page{kPageBytes};
  std::set<std::string> model;
  std::string low;
  std::string high;
  bool high_infinite = false;

  NodeCase(std::mt19937_64& rng, uint16_t level) {
    std::string prefix = RandomBytes(rng, 12);
    high_infinite = rng() % 4 == 0;
    low = rng() % 4 == 0 ? "" : prefix;
    high = high_infinite ? "" : prefix + std::string(12, '\xff');
    InitPage(page.data(), PageId(7), index::NodePageType(level));
    Node::Format(page.data(), level, high_infinite ? index::kNodeHighInfinite : 0, PageId(7),
                 low, high);
    Node node(page.data());
    size_t inserts = 1 + rng() % 400;
    for (size_t i = 0; i < inserts; ++i) {
      std::string key = prefix + RandomBytes(rng, 10);
      if (rng() % 8 == 0) key = prefix + std::string(4 + rng() % 3, '\xff');
      if (model.count(key) != 0) continue;
      uint16_t at = node.LowerBound(key);
      REQUIRE(at == std::distance(model.begin(), model.lower_bound(key)));
      Status s = level == 0 ? node.InsertLeafRecord(at, key, "v")
                            : node.InsertInnerRecord(at, key, PageId(100 + i));
      if (s.IsNoSpace()) break;
      REQUIRE(s.ok());
      model.insert(key);
    }
  }

  // A key the search accepts (low <= key <= high): often a record's key or a neighbour of one.
  std::string Probe(std::mt19937_64& rng) const {
    std::string key;
    if (!model.empty() && rng() % 2 == 0) {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      key = *it;
      switch (rng() % 4) {
        case 0: break;
        case 1: key.push_back(kAlphabet[rng() % sizeof(kAlphabet)]); break;
        case 2: if (key.size() > low.size()) key.pop_back(); break;
        default: key.back() = kAlphabet[rng() % sizeof(kAlphabet)]; break;
      }
    } else {
      key = low + RandomBytes(rng, 12);
    }
    if (key < low) key = low;
    if (!high_infinite && key > high) key = high;
    return key;
  }
};

void RequireSearchesMatch(const NodeCase& c, const std::string& key) {
  Node node(const_cast<char*>(c.page.data()));
  INFO("key bytes " << key.size() << ", node prefix " << node.prefix_bytes());
  auto lower = static_cast<size_t>(std::distance(c.model.begin(), c.model.lower_bound(key)));
  auto upper = static_cast<size_t>(std::distance(c.model.begin(), c.model.upper_bound(key)));
  REQUIRE(node.LowerBound(key) == lower);
  REQUIRE(node.UpperBound(key) == upper);
  bool found = false;
  REQUIRE(node.LowerBound(key, &found) == lower);
  REQUIRE(found == (c.model.count(key) != 0));
}

}  // namespace

TEST_CASE("node: searches over keys sharing prefixes of many lengths agree with a model",
          "[unit][random][btree]") {
  uint64_t seed = test::TestSeed("node search");
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 60; ++round) {
    auto level = static_cast<uint16_t>(round % 2);
    NodeCase c(rng, level);
    for (const std::string& key : c.model) RequireSearchesMatch(c, key);
    for (int probe = 0; probe < 400; ++probe) RequireSearchesMatch(c, c.Probe(rng));
  }
}

TEST_CASE("node: a run of equal heads is searched on whole keys", "[unit][btree]") {
  // Between "A" and "Z" (which keep the node's prefix empty), keys whose first 4 bytes are all
  // equal, including the 0xffffffff head: every search for one of them lands in a run of ties.
  for (char fill : {'\0', 'a', '\xff'}) {
    io::AlignedBuffer page(kPageBytes);
    InitPage(page.data(), PageId(7), PageType::kBtreeLeaf);
    Node::Format(page.data(), 0, 0, PageId(7), "", "\xff\xff\xff\xff\xff\xff\xff\xff\xff");
    Node node(page.data());
    std::set<std::string> model{"", std::string(1, '\xff')};
    for (int i = 0; i < 50; ++i) model.insert(std::string(4, fill) + std::to_string(1000 + i * 2));
    uint16_t at = 0;
    for (const std::string& key : model) REQUIRE(node.InsertLeafRecord(at++, key, "v").ok());
    REQUIRE(node.prefix_bytes() == 0);
    for (int i = 0; i < 101; ++i) {
      std::string key = std::string(4, fill) + std::to_string(999 + i);
      auto lower = std::distance(model.begin(), model.lower_bound(key));
      auto upper = std::distance(model.begin(), model.upper_bound(key));
      REQUIRE(node.LowerBound(key) == lower);
      REQUIRE(node.UpperBound(key) == upper);
    }
  }
}

namespace {

std::string BigEndian64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) s[static_cast<size_t>(i)] = static_cast<char>(n & 0xff);
  return s;
}

// Whether the node's searches agree with `model` for its keys, their neighbours, and keys
// that do not share the bytes its heads skip (below and above all of them, and short ones).
void RequireSearchesAgree(Node& node, const std::set<std::string>& model) {
  std::vector<std::string> probes{"", std::string(1, '\0'), std::string(3, '\0'),
                                  std::string(9, '\xff'), BigEndian64(uint64_t{1} << 56)};
  for (const std::string& key : model) {
    probes.push_back(key);
    probes.push_back(key + '\0');
    probes.push_back(key.substr(0, key.size() - 1));
  }
  for (const std::string& key : probes) {
    INFO("probe of " << key.size() << " bytes, head_skip " << int{node.head_skip()});
    bool found = false;
    auto lower = std::distance(model.begin(), model.lower_bound(key));
    REQUIRE(node.LowerBound(key, &found) == lower);
    REQUIRE(found == (model.count(key) != 0));
    REQUIRE(node.UpperBound(key) == std::distance(model.begin(), model.upper_bound(key)));
  }
}

}  // namespace

TEST_CASE("node: heads skip the bytes every record shares beyond the fences' prefix",
          "[unit][btree]") {
  // A root-like node (no fences) holding 8-byte integer keys that share their first six bytes:
  // without the skip every head would be their first four bytes, all zero, and every probe a
  // tie.
  for (uint16_t level : {uint16_t{0}, uint16_t{1}}) {
    io::AlignedBuffer page(kPageBytes);
    InitPage(page.data(), PageId(7), index::NodePageType(level));
    Node::Format(page.data(), level, index::kNodeHighInfinite, PageId(7), "", "");
    Node node(page.data());
    std::set<std::string> model;
    auto insert = [&](const std::string& key) {
      auto at = static_cast<uint16_t>(std::distance(model.begin(), model.lower_bound(key)));
      Status s = level == 0 ? node.InsertLeafRecord(at, key, "v")
                            : node.InsertInnerRecord(at, key, PageId(100 + model.size()));
      REQUIRE(s.ok());
      model.insert(key);
      REQUIRE(node.head_skip() == node.ExpectedHeadSkip());
    };
    auto erase = [&](const std::string& key) {
      node.EraseRecord(static_cast<uint16_t>(std::distance(model.begin(), model.find(key))));
      model.erase(key);
      REQUIRE(node.head_skip() == node.ExpectedHeadSkip());
    };
    constexpr uint64_t kBase = 0x30000;
    insert(BigEndian64(kBase + 1000));
    REQUIRE(node.head_skip() == 0);  // one record: nothing to skip
    for (uint64_t n = 1004; n < 1400; n += 4) insert(BigEndian64(kBase + n));
    REQUIRE(node.prefix_bytes() == 0);
    REQUIRE(node.head_skip() == 6);
    // The heads tell every key apart.
    for (uint16_t i = 1; i < node.count(); ++i) REQUIRE(node.HeadAt(i - 1) < node.HeadAt(i));
    RequireSearchesAgree(node, model);
    // A last key that shares one byte with the first: skipping one byte is not worth a read.
    insert(BigEndian64(uint64_t{1} << 48));
    REQUIRE(node.head_skip() == 0);
    RequireSearchesAgree(node, model);
    // Erasing it lengthens the skip again; so does erasing a first key that held it short.
    erase(BigEndian64(uint64_t{1} << 48));
    REQUIRE(node.head_skip() == 6);
    insert(BigEndian64(0x20000));
    REQUIRE(node.head_skip() == 5);
    RequireSearchesAgree(node, model);
    erase(BigEndian64(0x20000));
    REQUIRE(node.head_skip() == 6);
    // Down to one record, then none.
    while (model.size() > 1) erase(*model.rbegin());
    REQUIRE(node.head_skip() == 0);
    RequireSearchesAgree(node, model);
    erase(*model.begin());
    RequireSearchesAgree(node, model);
  }
}

TEST_CASE("node: CompareKeys orders as memcmp with a proper prefix first",
          "[unit][random][btree]") {
  uint64_t seed = test::TestSeed("compare keys");
  std::mt19937_64 rng(seed);
  auto sign = [](int c) { return (c > 0) - (c < 0); };
  for (int i = 0; i < 200000; ++i) {
    // Short keys over a small alphabet, so that equal prefixes and equal lengths are common;
    // now and then one over the 32 bytes that go to memcmp.
    size_t max_bytes = rng() % 16 == 0 ? 40 : 12;
    std::string a = RandomBytes(rng, max_bytes);
    std::string b = rng() % 2 == 0 ? RandomBytes(rng, max_bytes) : a;
    if (!b.empty() && rng() % 2 == 0) b[rng() % b.size()] = kAlphabet[rng() % sizeof(kAlphabet)];
    INFO("a " << a.size() << " bytes, b " << b.size() << " bytes");
    REQUIRE(sign(index::CompareKeys(a, b)) == sign(std::string_view(a).compare(b)));
  }
}

TEST_CASE("node: a page read with sound checksum but a damaged layout is refused",
          "[unit][random][btree]") {
  Node::RegisterStructureCheck();
  std::mt19937_64 rng(test::TestSeed("node structure"));
  for (uint16_t level : {uint16_t{0}, uint16_t{1}}) {
    NodeCase c(rng, level);
    if (c.model.empty()) continue;
    char* page = c.page.data();
    SealPage(page);
    REQUIRE(VerifyPage(page, PageId(7)).ok());
    // Slot directory entries: kNodeAreaOffset + 8 (area header) + 8 per slot; u16 offset,
    // u16 length. The first record's offset pointed past the page, resealed.
    char* entry = page + index::kNodeAreaOffset + SlottedPage::kAreaHeaderBytes +
                  index::kFirstRecordSlot * SlottedPage::kSlotBytes;
    uint16_t offset, saved;
    std::memcpy(&saved, entry, sizeof(saved));
    offset = static_cast<uint16_t>(kPageBytes - 1);
    std::memcpy(entry, &offset, sizeof(offset));
    SealPage(page);
    Status s = VerifyPage(page, PageId(7));
    REQUIRE(s.IsCorruption());
    REQUIRE(s.ToString().find("damaged layout") != std::string::npos);
    std::memcpy(entry, &saved, sizeof(saved));
    SealPage(page);
    REQUIRE(VerifyPage(page, PageId(7)).ok());
    if (level != 0) continue;
    // A leaf record whose key length runs past the record.
    uint16_t key_bytes = 0xffff;
    std::memcpy(page + saved, &key_bytes, sizeof(key_bytes));
    SealPage(page);
    REQUIRE(VerifyPage(page, PageId(7)).IsCorruption());
  }
}
