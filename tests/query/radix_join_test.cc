// The radix-cluster joins (query/radix_join.h): the cluster's output is a permutation of its
// input ordered on the radix bits for every B and P, and every join equals a sort-merge
// reference on seeded inputs: uniform unique keys, skewed keys, clusters left empty, a single
// distinct value and empty relations, with one and two workers.
#include "query/radix_join.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "query/machine.h"
#include "tests/test_util.h"

namespace sm::query {
namespace {

using test::TestSeed;

bool BunLess(const Bun& a, const Bun& b) { return a.key != b.key ? a.key < b.key : a.oid < b.oid; }
bool PairLess(const OidPair& a, const OidPair& b) {
  return a.left != b.left ? a.left < b.left : a.right < b.right;
}
bool PairEq(const OidPair& a, const OidPair& b) { return a.left == b.left && a.right == b.right; }

// The reference: both sides sorted on key, each group of equal keys crossed.
std::vector<OidPair> SortMergeJoin(std::vector<Bun> left, std::vector<Bun> right) {
  std::sort(left.begin(), left.end(), BunLess);
  std::sort(right.begin(), right.end(), BunLess);
  std::vector<OidPair> out;
  size_t r = 0;
  for (size_t l = 0; l < left.size(); ++l) {
    while (r < right.size() && right[r].key < left[l].key) ++r;
    for (size_t i = r; i < right.size() && right[i].key == left[l].key; ++i) {
      out.push_back({left[l].oid, right[i].oid});
    }
  }
  std::sort(out.begin(), out.end(), PairLess);
  return out;
}

enum class Keys { kUniqueUniform, kSkewed, kFewDistinct, kSingleValue };

std::vector<Bun> MakeRelation(size_t n, Keys keys, uint32_t oid_base, std::mt19937_64& rng) {
  std::vector<Bun> r(n);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_real_distribution<double> unit(0, 1);
  for (size_t i = 0; i < n; ++i) {
    uint32_t key = 0;
    switch (keys) {
      case Keys::kUniqueUniform:
        key = static_cast<uint32_t>(i);  // shuffled below
        break;
      case Keys::kSkewed:  // about half the tuples on a few keys, the rest spread thin
        key = static_cast<uint32_t>(std::pow(unit(rng), 4) * 2 * n);
        break;
      case Keys::kFewDistinct:
        key = any(rng) % 7;
        break;
      case Keys::kSingleValue:
        key = 42;
        break;
    }
    r[i] = {key, oid_base + static_cast<uint32_t>(i)};
  }
  std::shuffle(r.begin(), r.end(), rng);
  return r;
}

TEST_CASE("radix bits spread evenly over the passes", "[unit][query]") {
  for (int bits = 0; bits <= kMaxRadixBits; ++bits) {
    for (int passes = 1; passes <= kMaxPasses; ++passes) {
      const std::vector<int> per_pass = SpreadBits(bits, passes);
      REQUIRE(static_cast<int>(per_pass.size()) == passes);
      int sum = 0;
      for (int b : per_pass) sum += b;
      REQUIRE(sum == bits);
      const auto [lo, hi] = std::minmax_element(per_pass.begin(), per_pass.end());
      REQUIRE(*hi - *lo <= 1);
      REQUIRE(std::is_sorted(per_pass.rbegin(), per_pass.rend()));  // larger shares first
    }
  }
}

TEST_CASE("radix-cluster output is a permutation ordered on the radix bits", "[random][query]") {
  std::mt19937_64 rng(TestSeed("radix-cluster"));
  ClusteredRelation out;
  for (int bits = 0; bits <= 12; ++bits) {
    for (int passes = 1; passes <= std::min(std::max(bits, 1), kMaxPasses); ++passes) {
      for (int threads : {1, 2}) {
        const size_t n = std::uniform_int_distribution<size_t>(0, 3000)(rng);
        const Keys keys = (bits + passes) % 3 == 0 ? Keys::kSkewed : Keys::kUniqueUniform;
        const std::vector<Bun> input = MakeRelation(n, keys, 0, rng);
        JoinOptions options;
        options.bits = bits;
        options.passes = passes;
        options.threads = threads;
        options.huge_pages = (bits % 2) == 0;
        INFO("bits " << bits << " passes " << passes << " threads " << threads << " n " << n);
        REQUIRE(RadixCluster(input, options, &out).ok());
        REQUIRE(out.tuples.size() == n);
        REQUIRE(out.cluster_count() == (size_t{1} << bits));
        REQUIRE(out.CheckOrdered());
        std::vector<Bun> got(out.tuples.data(), out.tuples.data() + n), want = input;
        std::sort(got.begin(), got.end(), BunLess);
        std::sort(want.begin(), want.end(), BunLess);
        REQUIRE(std::equal(
            got.begin(), got.end(), want.begin(), want.end(),
            [](const Bun& a, const Bun& b) { return a.key == b.key && a.oid == b.oid; }));
      }
    }
  }
}

void CheckJoins(const std::vector<Bun>& left, const std::vector<Bun>& right, int bits,
                std::mt19937_64& rng) {
  const std::vector<OidPair> want = SortMergeJoin(left, right);
  JoinIndex index;
  JoinScratch scratch;
  for (JoinAlgorithm algorithm :
       {JoinAlgorithm::kPlainHash, JoinAlgorithm::kPartitionedHash, JoinAlgorithm::kRadix}) {
    JoinOptions options;
    options.bits = bits;
    options.passes = std::uniform_int_distribution<int>(1, std::min(std::max(bits, 1), 3))(rng);
    options.threads = std::uniform_int_distribution<int>(1, 4)(rng);
    INFO(JoinAlgorithmName(algorithm)
         << " bits " << bits << " passes " << options.passes << " threads " << options.threads
         << " left " << left.size() << " right " << right.size());
    JoinStats stats;
    REQUIRE(Join(algorithm, left, right, options, &index, &stats, &scratch).ok());
    REQUIRE(static_cast<int>(index.parts.size()) == options.threads);
    std::vector<OidPair> got = index.Flatten();
    std::sort(got.begin(), got.end(), PairLess);
    REQUIRE(got.size() == want.size());
    REQUIRE(std::equal(got.begin(), got.end(), want.begin(), PairEq));
  }
}

TEST_CASE("radix joins equal a sort-merge reference", "[random][query]") {
  std::mt19937_64 rng(TestSeed("radix-join"));
  for (int round = 0; round < 40; ++round) {
    const size_t nl = std::uniform_int_distribution<size_t>(0, 4000)(rng);
    const size_t nr = std::uniform_int_distribution<size_t>(0, 4000)(rng);
    const int bits = std::uniform_int_distribution<int>(0, 10)(rng);
    INFO("round " << round);
    // Unique uniform keys with hit rate 1, as in the paper's experiments.
    CheckJoins(MakeRelation(nl, Keys::kUniqueUniform, 0, rng),
               MakeRelation(nl, Keys::kUniqueUniform, 1u << 20, rng), bits, rng);
    CheckJoins(MakeRelation(nl, Keys::kSkewed, 0, rng),
               MakeRelation(nr, Keys::kSkewed, 1u << 20, rng), bits, rng);
    // Overlapping halves of the key range: some keys find no partner.
    std::vector<Bun> right = MakeRelation(nr, Keys::kUniqueUniform, 1u << 20, rng);
    for (Bun& b : right) b.key += static_cast<uint32_t>(nl / 2);
    CheckJoins(MakeRelation(nl, Keys::kUniqueUniform, 0, rng), right, bits, rng);
  }
}

TEST_CASE("radix joins with empty clusters, one value and empty inputs", "[random][query]") {
  std::mt19937_64 rng(TestSeed("radix-join-edges"));
  // Fewer tuples than clusters: most clusters are empty on one side or both.
  CheckJoins(MakeRelation(20, Keys::kUniqueUniform, 0, rng),
             MakeRelation(30, Keys::kUniqueUniform, 100, rng), 10, rng);
  // A single distinct value: one cluster holds everything, the result is the cross product.
  CheckJoins(MakeRelation(60, Keys::kSingleValue, 0, rng),
             MakeRelation(50, Keys::kSingleValue, 100, rng), 6, rng);
  CheckJoins(MakeRelation(300, Keys::kFewDistinct, 0, rng),
             MakeRelation(200, Keys::kFewDistinct, 1000, rng), 3, rng);
  // Empty relations, on either side and both.
  CheckJoins({}, MakeRelation(50, Keys::kUniqueUniform, 0, rng), 4, rng);
  CheckJoins(MakeRelation(50, Keys::kUniqueUniform, 0, rng), {}, 4, rng);
  CheckJoins({}, {}, 0, rng);
}

TEST_CASE("a join index reset to fewer parts keeps the others' memory", "[unit][query]") {
  JoinIndex index;
  index.Reset(3);
  index.parts[1].assign(1000, OidPair{1, 2});
  index.parts[2].assign(500, OidPair{3, 4});
  index.Reset(1);
  REQUIRE(index.parts.size() == 1);
  index.parts[0].push_back({5, 6});
  index.Reset(3);
  REQUIRE(index.parts.size() == 3);
  size_t capacity = 0;
  for (const auto& part : index.parts) {
    REQUIRE(part.empty());
    capacity += part.capacity();
  }
  REQUIRE(capacity >= 1500);
  REQUIRE(index.size() == 0);
}

TEST_CASE("radix joins refuse options outside their ranges", "[unit][query]") {
  const std::vector<Bun> r = {{1, 0}, {2, 1}};
  JoinIndex index;
  ClusteredRelation out;
  JoinOptions options;
  options.bits = kMaxRadixBits + 1;
  REQUIRE(Join(JoinAlgorithm::kRadix, r, r, options, &index).IsInvalidArgument());
  options.bits = 3;
  options.passes = 4;
  REQUIRE(RadixCluster(r, options, &out).IsInvalidArgument());
  options.passes = 0;
  REQUIRE(RadixCluster(r, options, &out).IsInvalidArgument());
  options.passes = 1;
  options.threads = 0;
  REQUIRE(Join(JoinAlgorithm::kPartitionedHash, r, r, options, &index).IsInvalidArgument());
  options.threads = 1;
  REQUIRE(Join(JoinAlgorithm::kPartitionedHash, r, r, options, &index).ok());
  REQUIRE(index.size() == 2);
  // Relations clustered on different bits do not join.
  ClusteredRelation other;
  REQUIRE(RadixCluster(r, options, &out).ok());
  options.bits = 2;
  REQUIRE(RadixCluster(r, options, &other).ok());
  REQUIRE(JoinClustered(JoinAlgorithm::kRadix, out, other, options, &index).IsInvalidArgument());
}

TEST_CASE("the machine's memory hierarchy reads as consistent", "[unit][query]") {
  const MachineInfo m = ReadMachine();
  REQUIRE(m.CheckInvariants());
  REQUIRE(m.l1d_bytes >= 4096);
  REQUIRE(m.cpu_count >= 1);
  REQUIRE_FALSE(m.Describe().empty());
}

}  // namespace
}  // namespace sm::query
