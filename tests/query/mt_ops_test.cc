// The multithreaded operators (query/mt_ops.h) against serial references on seeded random
// NSM tables: uniform, skewed, few-distinct and single-value keys, empty tables and empty
// partitions, with 1, 2 and 3 workers; the sort's output sorted and a permutation; joins equal
// to a nested-loop join; the choice rule; and the model's sanity (query/mt_model.h).
#include "query/mt_ops.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "query/machine.h"
#include "query/mt_model.h"
#include "tests/test_util.h"

namespace sm::query::mt {
namespace {

using test::TestSeed;

enum class Keys { kUniform, kSkewed, kFewDistinct, kSingleValue };

NsmTable MakeTable(size_t n, uint32_t tuple_bytes, Keys keys, std::mt19937_64& rng) {
  NsmTable table;
  REQUIRE(NsmTable::Make(tuple_bytes, n, &table).ok());
  std::uniform_real_distribution<double> unit(0, 1);
  for (size_t i = 0; i < n; ++i) {
    uint32_t key = 0;
    switch (keys) {
      case Keys::kUniform:
        key = static_cast<uint32_t>(rng() % (2 * n + 1));
        break;
      case Keys::kSkewed:  // about half the tuples on a few keys
        key = static_cast<uint32_t>(std::pow(unit(rng), 4) * 2 * n);
        break;
      case Keys::kFewDistinct:
        key = static_cast<uint32_t>(rng() % 7) * 1000003u;
        break;
      case Keys::kSingleValue:
        key = 42;
        break;
    }
    table.Set(i, {key, static_cast<uint32_t>(rng() % 1000)});
  }
  return table;
}

std::vector<Kv> Selected(const NsmTable& table, Selection sel) {
  std::vector<Kv> out;
  for (size_t i = 0; i < table.size(); ++i) {
    if (sel.Keep(table.Get(i).value)) out.push_back(table.Get(i));
  }
  return out;
}

std::vector<Group> ReferenceGroups(const NsmTable& table, Selection sel) {
  std::map<uint32_t, Group> groups;
  for (const Kv& kv : Selected(table, sel)) {
    Group& g = groups.try_emplace(kv.key, Group{kv.key, 0, 0}).first->second;
    ++g.count;
    g.sum += kv.value;
  }
  std::vector<Group> out;
  for (const auto& [key, g] : groups) out.push_back(g);
  return out;
}

bool SameGroups(const std::vector<Group>& a, const std::vector<Group>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Group& x, const Group& y) {
    return x.key == y.key && x.count == y.count && x.sum == y.sum;
  });
}

bool KvLess(const Kv& a, const Kv& b) { return a.key != b.key ? a.key < b.key : a.value < b.value; }

// Whether got and want hold the same tuples, in any order.
bool SameTuples(std::vector<Kv> got, std::vector<Kv> want) {
  std::sort(got.begin(), got.end(), KvLess);
  std::sort(want.begin(), want.end(), KvLess);
  return std::equal(got.begin(), got.end(), want.begin(), want.end(),
                    [](const Kv& a, const Kv& b) { return a.key == b.key && a.value == b.value; });
}

std::vector<Kv> Concat(const std::vector<PerThread<Kv>>& parts) {
  std::vector<Kv> all;
  for (const auto& part : parts) all.insert(all.end(), part.items.begin(), part.items.end());
  return all;
}

const Keys kAllKeys[] = {Keys::kUniform, Keys::kSkewed, Keys::kFewDistinct, Keys::kSingleValue};

TEST_CASE("mt: scan-select and partitioning keep every selected tuple once", "[random][query]") {
  std::mt19937_64 rng(TestSeed("mt partition"));
  const MachineInfo machine = ReadMachine();
  for (int threads : {1, 2, 3}) {
    WorkerPool pool(threads);
    for (Keys keys : kAllKeys) {
      const size_t n = std::uniform_int_distribution<size_t>(0, 5000)(rng);
      const NsmTable table = MakeTable(n, 8 + 4 * (rng() % 10), keys, rng);
      const Selection sel{rng() % 2 ? 1000u : 500u};
      const std::vector<Kv> want = Selected(table, sel);
      INFO("threads " << threads << " n " << n << " keys " << static_cast<int>(keys));

      std::vector<PerThread<Kv>> scanned;
      ScanSelect(pool, table, sel, &scanned);
      REQUIRE(SameTuples(Concat(scanned), want));

      MapDirectory directory(MapDirectory::CapacityFor(n));
      for (PartitionKind kind :
           {PartitionKind::kHash, PartitionKind::kRange, PartitionKind::kValueMap}) {
        PartitionSpec spec;
        spec.kind = kind;
        spec.fanout = 1 + static_cast<int>(rng() % 40);  // many partitions stay empty
        for (int s = 1; s < spec.fanout; ++s) spec.range_splits.push_back(rng() % (2 * n + 1));
        std::sort(spec.range_splits.begin(), spec.range_splits.end());
        spec.directory = &directory;
        Partitions parts;
        REQUIRE(Partition(pool, table, sel, spec, &parts).ok());
        REQUIRE(parts.CheckInvariants(spec));
        std::vector<Kv> all;
        for (const auto& w : parts.runs) {
          for (const auto& p : w.items) all.insert(all.end(), p.begin(), p.end());
        }
        REQUIRE(SameTuples(all, want));
      }
    }
  }
}

TEST_CASE("mt: bad partition specs are refused", "[unit][query]") {
  WorkerPool pool(2);
  NsmTable table;
  REQUIRE(!NsmTable::Make(6, 10, &table).ok());
  REQUIRE(NsmTable::Make(8, 10, &table).ok());
  Partitions parts;
  PartitionSpec spec;
  spec.fanout = 0;
  REQUIRE(!Partition(pool, table, {}, spec, &parts).ok());
  spec.kind = PartitionKind::kRange;
  spec.fanout = 3;
  spec.range_splits = {5};
  REQUIRE(!Partition(pool, table, {}, spec, &parts).ok());
  spec.range_splits = {5, 1};
  REQUIRE(!Partition(pool, table, {}, spec, &parts).ok());
  spec.kind = PartitionKind::kValueMap;
  REQUIRE(!Partition(pool, table, {}, spec, &parts).ok());
}

TEST_CASE("mt: parallel sort output is sorted and a permutation", "[random][query]") {
  std::mt19937_64 rng(TestSeed("mt sort"));
  MachineInfo machine = ReadMachine();
  for (int threads : {1, 2, 3}) {
    WorkerPool pool(threads);
    for (Keys keys : kAllKeys) {
      const size_t n = std::uniform_int_distribution<size_t>(0, 20000)(rng);
      const NsmTable table = MakeTable(n, 16, keys, rng);
      const Selection sel{700};
      INFO("threads " << threads << " n " << n << " keys " << static_cast<int>(keys));
      std::vector<PerThread<Kv>> out;
      ParallelSort(pool, table, sel, machine, &out, 1 + rng() % 3000);  // many small blocks
      const std::vector<Kv> got = Concat(out);
      REQUIRE(std::is_sorted(got.begin(), got.end(),
                             [](const Kv& a, const Kv& b) { return a.key < b.key; }));
      REQUIRE(SameTuples(got, Selected(table, sel)));
    }
  }
}

TEST_CASE("mt: the aggregations equal a serial GROUP BY", "[random][query]") {
  std::mt19937_64 rng(TestSeed("mt aggregate"));
  MachineInfo machine = ReadMachine();
  for (int threads : {1, 2, 3}) {
    WorkerPool pool(threads);
    for (Keys keys : kAllKeys) {
      const size_t n = std::uniform_int_distribution<size_t>(0, 20000)(rng);
      const NsmTable table = MakeTable(n, 12, keys, rng);
      const Selection sel{rng() % 2 ? 1000u : 300u};
      const std::vector<Group> want = ReferenceGroups(table, sel);
      INFO("threads " << threads << " n " << n << " keys " << static_cast<int>(keys));
      for (AggAlgorithm a : {AggAlgorithm::kSort, AggAlgorithm::kPartition, AggAlgorithm::kMap}) {
        INFO(AggAlgorithmName(a));
        AggOptions options;
        options.fanout = rng() % 2 ? 0 : 1 + static_cast<int>(rng() % 64);
        options.map_distinct = n;
        GroupResult out;
        REQUIRE(Aggregate(a, pool, table, sel, machine, options, &out).ok());
        REQUIRE(SameGroups(out.SortedGroups(), want));
      }
      // Merge aggregation, on the table sorted on the key.
      std::vector<Kv> rows;
      for (size_t i = 0; i < table.size(); ++i) rows.push_back(table.Get(i));
      std::sort(rows.begin(), rows.end(), KvLess);
      NsmTable sorted;
      REQUIRE(NsmTable::Make(12, n, &sorted).ok());
      for (size_t i = 0; i < n; ++i) sorted.Set(i, rows[i]);
      GroupResult out;
      REQUIRE(Aggregate(AggAlgorithm::kMerge, pool, sorted, sel, machine, {}, &out).ok());
      REQUIRE(SameGroups(out.SortedGroups(), want));
      if (n > 10 && keys == Keys::kUniform) {
        REQUIRE(!Aggregate(AggAlgorithm::kMerge, pool, table, sel, machine, {}, &out).ok());
      }
    }
  }
}

TEST_CASE("mt: map aggregation refuses more keys than its directory holds", "[unit][query]") {
  std::mt19937_64 rng(7);
  WorkerPool pool(2);
  const NsmTable table = MakeTable(100000, 8, Keys::kUniform, rng);
  GroupResult out;
  AggOptions options;
  options.map_distinct = 100;
  REQUIRE(!Aggregate(AggAlgorithm::kMap, pool, table, {}, ReadMachine(), options, &out).ok());
}

// The nested-loop reference: count and checksum of every matching pair.
void NestedLoop(const std::vector<Kv>& outer, const std::vector<Kv>& inner, uint64_t* count,
                uint64_t* checksum) {
  *count = 0;
  *checksum = 0;
  for (const Kv& o : outer) {
    for (const Kv& i : inner) {
      if (o.key != i.key) continue;
      ++*count;
      *checksum += uint64_t{o.key} + o.value + i.value;
    }
  }
}

TEST_CASE("mt: the joins equal a nested-loop join", "[random][query]") {
  std::mt19937_64 rng(TestSeed("mt join"));
  MachineInfo machine = ReadMachine();
  for (int threads : {1, 2, 3}) {
    WorkerPool pool(threads);
    for (Keys keys : kAllKeys) {
      const size_t n_outer = std::uniform_int_distribution<size_t>(0, 1500)(rng);
      const size_t n_inner = std::uniform_int_distribution<size_t>(0, 1500)(rng);
      const NsmTable outer = MakeTable(n_outer, 20, keys, rng);
      const NsmTable inner = MakeTable(n_inner, 8, keys, rng);
      const Selection outer_sel{800}, inner_sel{rng() % 2 ? 1000u : 400u};
      uint64_t want_count, want_sum;
      NestedLoop(Selected(outer, outer_sel), Selected(inner, inner_sel), &want_count, &want_sum);
      INFO("threads " << threads << " keys " << static_cast<int>(keys) << " outer " << n_outer
                      << " inner " << n_inner);
      for (MtJoinAlgorithm a :
           {MtJoinAlgorithm::kPartition, MtJoinAlgorithm::kSortMerge, MtJoinAlgorithm::kMap}) {
        INFO(MtJoinAlgorithmName(a));
        MtJoinOptions options;
        options.materialize = rng() % 2 == 0;
        options.fanout = rng() % 2 ? 0 : 1 + static_cast<int>(rng() % 64);
        options.map_distinct = n_outer + n_inner;
        JoinResult out;
        REQUIRE(Join(a, pool, outer, outer_sel, inner, inner_sel, machine, options, &out).ok());
        REQUIRE(out.count() == want_count);
        REQUIRE(out.checksum() == want_sum);
        size_t rows = 0;
        uint64_t row_sum = 0;
        for (const auto& part : out.parts) {
          rows += part.rows.size();
          for (const JoinRow& r : part.rows)
            row_sum += uint64_t{r.key} + r.outer_value + r.inner_value;
        }
        REQUIRE(rows == (options.materialize ? want_count : 0));
        if (options.materialize) REQUIRE(row_sum == want_sum);
        if (options.materialize && a == MtJoinAlgorithm::kSortMerge) {
          // Its parts in worker order are ordered on the key: what lets merge aggregation
          // follow it without a sort.
          std::vector<uint32_t> keys;
          for (const auto& part : out.parts) {
            for (const JoinRow& r : part.rows) keys.push_back(r.key);
          }
          REQUIRE(std::is_sorted(keys.begin(), keys.end()));
        }
      }
    }
  }
}

TEST_CASE("mt: the choice rule and the fanout follow the cache sizes", "[unit][query]") {
  MachineInfo machine = ReadMachine();
  REQUIRE(ChooseAggregation(10, true, machine) == AggAlgorithm::kMerge);
  REQUIRE(ChooseAggregation(1'000'000, true, machine) == AggAlgorithm::kMerge);
  REQUIRE(ChooseAggregation(100, false, machine) == AggAlgorithm::kMap);
  REQUIRE(ChooseAggregation(1'000'000, false, machine) == AggAlgorithm::kPartition);
  for (int threads : {1, 2, 4}) {
    const int fanout = FanoutFor(machine, threads, 1 << 22);
    REQUIRE(fanout >= 1);
    REQUIRE((fanout & (fanout - 1)) == 0);
    // A partition stays within |L2| / (2N) bytes.
    REQUIRE((uint64_t{1} << 22) * sizeof(Kv) / fanout <= machine.l2_bytes / (2 * threads));
  }
  REQUIRE(FanoutFor(machine, 2, 0) == 1);
}

TEST_CASE("mt: the model's effective memory cost and speedups are sane", "[unit][query]") {
  REQUIRE(EffectiveMemoryNs(10, 0.3, 2) == 10);
  REQUIRE(EffectiveMemoryNs(10, 0.9, 2) == 18);
  MtModelParams p;
  p.machine = ReadMachine();
  MtWorkload w;
  w.k = w.k_staged = 1e6;
  w.t = 64;
  w.distinct = 1000;
  for (AggAlgorithm a : {AggAlgorithm::kSort, AggAlgorithm::kPartition, AggAlgorithm::kMap}) {
    const double one = ModelAggregationNs(p, a, w, 1), two = ModelAggregationNs(p, a, w, 2);
    REQUIRE(one > 0);
    REQUIRE(one / two > 1);
    // Two workers double the partition fanout, so each partition merges fewer pages: a
    // little above linear, never far.
    REQUIRE(one / two <= 2.2);
    MtWorkload wider = w;
    wider.t = 256;
    REQUIRE(ModelAggregationNs(p, a, wider, 1) > one);  // more bytes to fetch
  }
  for (MtJoinAlgorithm a : {MtJoinAlgorithm::kPartition, MtJoinAlgorithm::kSortMerge}) {
    const double one = ModelJoinNs(p, a, w, w, 1e7, 1), two = ModelJoinNs(p, a, w, w, 1e7, 2);
    REQUIRE(one / two > 1);
    REQUIRE(one / two <= 2.2);
  }
  WorkerPool pool(2);
  const MtModelParams calibrated = CalibrateModel(p.machine, pool);
  REQUIRE(calibrated.l1_ns > 0);
  REQUIRE(calibrated.l2_ns > 0);
  REQUIRE(calibrated.mem_ns > 0);
  REQUIRE(calibrated.out_ns > 0);
}

}  // namespace
}  // namespace sm::query::mt
