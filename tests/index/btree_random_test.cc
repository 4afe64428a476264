// Seeded random workloads against a std::map model (replay: SM_SEED=<seed>): point operations
// with their expected Status, short bounded scans in both directions, Verify along the way and
// a full comparison at the end. The default tier runs tens of thousands of operations; the
// hidden [.slow] case runs millions.
#include <catch2/catch.hpp>
#include <cstdio>
#include <iterator>
#include <map>
#include <random>
#include <string>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"

using namespace sm;
using index::Cursor;
using index::ScanBound;
using index::ScanRange;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::RequireVerified;
using sm::test::TreeEnv;

namespace {

struct WorkloadShape {
  uint64_t ops;
  uint64_t key_space;
  size_t pool_frames;
  uint64_t verify_every;
};

class RandomWorkload {
 public:
  RandomWorkload(uint64_t seed, const WorkloadShape& shape)
      : rng_(seed), shape_(shape), env_(shape.pool_frames) {}

  void Run() {
    for (uint64_t op = 0; op < shape_.ops; ++op) {
      Step();
      if ((op + 1) % shape_.verify_every == 0) RequireVerified(*env_.tree);
    }
    RequireSameAsModel(*env_.tree, model_);
    index::BtreeStats stats;
    RequireVerified(*env_.tree, &stats);
    std::printf("  %llu ops: height %u, %llu pages, %llu records, %llu empty leaves\n",
                static_cast<unsigned long long>(shape_.ops), stats.height,
                static_cast<unsigned long long>(stats.pages()),
                static_cast<unsigned long long>(stats.records),
                static_cast<unsigned long long>(stats.empty_leaves));
  }

 private:
  // Mostly 8-byte keys; some long keys with shared prefixes (long separators) and the empty key.
  std::string RandomKey() {
    uint64_t n = rng_() % shape_.key_space;
    switch (rng_() % 16) {
      case 0:
        return std::string(40 + n % 400, static_cast<char>('p' + n % 3)) + Key64(n);
      case 1:
        return n % 97 == 0 ? std::string() : Key64(n).substr(0, 1 + n % 8);
      default:
        return Key64(n);
    }
  }

  std::string RandomValue(std::string_view key) {
    size_t room = SlottedPage::kMaxRecordBytes - 2 - key.size();
    size_t bytes = rng_() % 32 == 0 ? rng_() % (room + 1) : rng_() % 120;
    return std::string(bytes, static_cast<char>('a' + rng_() % 26));
  }

  void Step() {
    std::string key = RandomKey();
    bool present = model_.count(key) != 0;
    switch (rng_() % 10) {
      case 0:
      case 1: {
        std::string value = RandomValue(key);
        Status s = env_.tree->Insert(key, value);
        REQUIRE(s.code() == (present ? Status::Code::kDuplicate : Status::Code::kOk));
        if (!present) model_[key] = value;
        break;
      }
      case 2: {
        std::string value = RandomValue(key);
        Status s = env_.tree->Update(key, value);
        REQUIRE(s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound));
        if (present) model_[key] = value;
        break;
      }
      case 3: {
        std::string value = RandomValue(key);
        REQUIRE(env_.tree->Upsert(key, value).ok());
        model_[key] = value;
        break;
      }
      case 4:
      case 5: {
        Status s = env_.tree->Delete(key);
        REQUIRE(s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound));
        model_.erase(key);
        break;
      }
      case 6:
      case 7: {
        std::string value;
        Status s = env_.tree->Lookup(key, &value);
        REQUIRE(s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound));
        if (present) REQUIRE(value == model_[key]);
        break;
      }
      default:
        ShortScan(key);
    }
  }

  ScanBound RandomBound(std::string key) {
    switch (rng_() % 3) {
      case 0:
        return ScanBound::None();
      case 1:
        return ScanBound::Inclusive(key);
      default:
        return ScanBound::Exclusive(key);
    }
  }

  // Up to 20 keys from a random bounded range, forward or backward.
  void ShortScan(const std::string& from) {
    std::string to = RandomKey();
    ScanRange range{RandomBound(std::min(from, to)), RandomBound(std::max(from, to))};
    bool forward = rng_() % 2 == 0;
    Cursor cursor(env_.tree.get(), range);
    REQUIRE((forward ? cursor.SeekToFirst() : cursor.SeekToLast()).ok());
    const ScanBound& lo = range.lower;
    const ScanBound& hi = range.upper;
    auto first = !lo.bounded    ? model_.begin()
                 : lo.inclusive ? model_.lower_bound(lo.key)
                                : model_.upper_bound(lo.key);
    auto last = !hi.bounded    ? model_.end()
                : hi.inclusive ? model_.upper_bound(hi.key)
                               : model_.lower_bound(hi.key);
    // [first, last) is the range; both exclusive on one key makes first pass last: empty.
    bool empty = first != model_.end() && last != model_.end() && last->first < first->first;
    std::vector<std::string> expected;
    for (auto it = first; !empty && forward && it != last && expected.size() < 20; ++it) {
      expected.push_back(it->first);
    }
    for (auto it = last; !empty && !forward && it != first && expected.size() < 20;) {
      --it;
      expected.push_back(it->first);
    }
    for (const std::string& want : expected) {
      REQUIRE(cursor.Valid());
      REQUIRE(cursor.key() == want);
      REQUIRE(cursor.value() == model_[want]);
      REQUIRE((forward ? cursor.Next() : cursor.Prev()).ok());
    }
    if (expected.size() < 20) REQUIRE(!cursor.Valid());
  }

  std::mt19937_64 rng_;
  WorkloadShape shape_;
  TreeEnv env_;
  Model model_;
};

}  // namespace

TEST_CASE("btree: random operations against a model", "[random][btree]") {
  uint64_t seed = sm::test::TestSeed("btree random operations");
  RandomWorkload(seed, {40000, 6000, 48, 5000}).Run();
}

TEST_CASE("btree: millions of random operations against a model", "[.slow][btree]") {
  uint64_t seed = sm::test::TestSeed("btree random operations, slow");
  RandomWorkload(seed, {3000000, 300000, 16384, 250000}).Run();
}
