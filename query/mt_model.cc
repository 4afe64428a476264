#include "query/mt_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "query/mt_internal.h"
#include "sm/common/assert.h"

namespace sm::query::mt {
namespace {

double Log2(double x) { return std::log2(std::max(2.0, x)); }

double NowNs() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Keeps a computed value alive so the compiler cannot drop the loop that made it.
// Relaxed: nobody reads it; the store only has to happen, from any worker.
std::atomic<uint64_t> g_sink{0};
void Sink(uint64_t v) { g_sink.store(v, std::memory_order_relaxed); }

struct Cost {
  double fetch_ns;    // C_f: lines from memory at M
  double process_ns;  // C_p: cache-resident work
};

double Ratio(const Cost& c, double lock_ns) {
  const double total = c.fetch_ns + c.process_ns + lock_ns;
  return total > 0 ? c.fetch_ns / total : 0;
}

// The quicksort's levels over `tuples` tuples: log2 of the tuples, or of the distinct keys
// when fewer, since a partition step that meets only equal keys ends the recursion.
double SortLevels(double tuples, const MtWorkload& w) {
  return Log2(std::min(tuples, std::max(2.0, w.distinct)));
}

double StagedBytes(const MtWorkload& w) { return w.k_staged * w.t_staged; }

double BlockBytes(const MtModelParams& p) {
  return static_cast<double>(DefaultBlockTuples(p.machine) * sizeof(Kv));
}

// Equations 3-6: quicksort of cache-sized blocks.
double SortNs(const MtModelParams& p, const MtWorkload& w, int n) {
  const double cl = p.machine.line_bytes, b = BlockBytes(p);
  const double staged = std::max(1.0, StagedBytes(w));
  const double blocks = std::max(1.0, staged / b);
  const double block_b = std::min(b, staged);
  const Cost block{(1 + w.k * w.t / staged) * (block_b / cl) * p.mem_ns,
                   2 * (block_b / cl) * p.l2_ns + 4 * (block_b / w.t_staged) *
                                                      SortLevels(block_b / w.t_staged, w) *
                                                      p.block_l1_ns};
  const double m = EffectiveMemoryNs(p.mem_ns, Ratio(block, 0), n);
  return (w.k * w.t + staged) * m / (n * cl) + blocks * block.process_ns / n;
}

// Equations 7-10: the heap merge of the sorted blocks; s = 2 when it materializes.
double SortMergeNs(const MtModelParams& p, const MtWorkload& w, double s, int n) {
  const double cl = p.machine.line_bytes;
  const double staged = StagedBytes(w);
  const Cost c{s * staged * p.mem_ns / cl,
               2 * w.k_staged * Log2(staged / BlockBytes(p)) * p.merge_l1_ns};
  const double m = EffectiveMemoryNs(p.mem_ns, Ratio(c, 0), n);
  return s * staged * m / (n * cl) + c.process_ns / n;
}

// Equations 11-14: partitioning into pages sorted as they fill.
double PartitionNs(const MtModelParams& p, const MtWorkload& w, int n) {
  const double cl = p.machine.line_bytes, pg = kPageBytes;
  const double staged = std::max(1.0, StagedBytes(w));
  const double pages = staged / pg;
  const Cost page{(1 + w.k * w.t / staged) * (pg / cl) * p.mem_ns,
                  (pg / w.t_staged) * p.route_ns +
                      4 * (pg / w.t_staged) * SortLevels(pg / w.t_staged, w) * p.l1_ns};
  const double m = EffectiveMemoryNs(p.mem_ns, Ratio(page, p.lk_ns), n);
  return (w.k * w.t + staged) * m / (n * cl) + pages * page.process_ns / n + pages * p.lk_ns;
}

// Equations 15-18: merging each partition's pages; s = 0 aggregates on the fly, 3 fills the
// merge buffers and joins from them.
double PartitionMergeNs(const MtModelParams& p, const MtWorkload& w, double s, int n, int fanout) {
  const double cl = p.machine.line_bytes;
  const double staged = StagedBytes(w);
  const double pages_per_partition = staged / (fanout * double{kPageBytes});
  const auto fetch = [&](double m) { return staged * m / cl + s * staged * p.l2_ns / cl; };
  const double process = 2 * w.k_staged * Log2(pages_per_partition) * p.merge_l1_ns;
  const double r = Ratio({fetch(p.mem_ns), process}, 0);
  return (fetch(EffectiveMemoryNs(p.mem_ns, r, n)) + process) / n;
}

// Equations 22-25.
double MapNs(const MtModelParams& p, const MtWorkload& w, int n) {
  const double cl = p.machine.line_bytes;
  constexpr double kAggregates = 2;  // count and sum
  const Cost c{w.k * w.t / cl * p.mem_ns,
               (Log2(w.distinct) * p.map_l1_ns + kAggregates * p.l2_ns) * w.k_staged};
  const double m = EffectiveMemoryNs(p.mem_ns, Ratio(c, 0), n);
  return w.k * w.t * m / (n * cl) + c.process_ns / n;
}

MtWorkload Combined(const MtWorkload& a, const MtWorkload& b) {
  MtWorkload c = a;
  c.k = a.k + b.k;
  c.k_staged = a.k_staged + b.k_staged;
  return c;
}

}  // namespace

double EffectiveMemoryNs(double m, double r, int threads) {
  SM_ASSERT(threads >= 1);
  SM_ASSERT(r >= 0 && r <= 1);
  return r <= 1.0 / threads ? m : m * threads * r;
}

double ModelAggregationNs(const MtModelParams& p, AggAlgorithm algorithm, const MtWorkload& w,
                          int n) {
  const double overhead = n * p.to_ns;
  switch (algorithm) {
    case AggAlgorithm::kSort:
      return SortNs(p, w, n) + SortMergeNs(p, w, 1, n) + overhead;
    case AggAlgorithm::kPartition: {
      const int fanout = FanoutFor(p.machine, n, static_cast<size_t>(w.k));
      return PartitionNs(p, w, n) + PartitionMergeNs(p, w, 0, n, fanout) + overhead;
    }
    case AggAlgorithm::kMap:
      return MapNs(p, w, n) + overhead;
    case AggAlgorithm::kMerge: {  // one pass: the fetch of equation 22 and a fold per tuple
      MtWorkload one = w;
      one.distinct = 2;
      return MapNs(p, one, n) + overhead;
    }
  }
  return 0;
}

double ModelJoinNs(const MtModelParams& p, MtJoinAlgorithm algorithm, const MtWorkload& outer,
                   const MtWorkload& inner, double pairs, int n) {
  const double cl = p.machine.line_bytes;
  const double out = pairs * p.out_ns / n;  // equation 19
  const double overhead = n * p.to_ns;
  switch (algorithm) {
    case MtJoinAlgorithm::kPartition: {
      const int fanout = FanoutFor(p.machine, n, static_cast<size_t>(std::max(outer.k, inner.k)));
      return PartitionNs(p, outer, n) + PartitionNs(p, inner, n) +
             PartitionMergeNs(p, Combined(outer, inner), 3, n, fanout) + out + overhead;
    }
    case MtJoinAlgorithm::kSortMerge: {
      const double fetch =  // equation 20
          (StagedBytes(outer) + StagedBytes(inner)) * p.mem_ns / (n * cl);
      return SortNs(p, outer, n) + SortMergeNs(p, outer, 2, n) + SortNs(p, inner, n) +
             SortMergeNs(p, inner, 2, n) + fetch + out + overhead;
    }
    case MtJoinAlgorithm::kMap:
      return MapNs(p, outer, n) + MapNs(p, inner, n) + out + overhead;
  }
  return 0;
}

// ---- Calibration -----------------------------------------------------------------------

namespace {

// The least of `rounds` timings of fn: the run that other processes disturbed least.
template <class F>
double BestNs(int rounds, const F& fn) {
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const double start = NowNs();
    fn();
    best = std::min(best, NowNs() - start);
  }
  return best;
}

// ns per line of a streaming read of `bytes` by each of `workers` workers at once.
double StreamLineNs(WorkerPool& pool, int workers, size_t bytes, uint32_t line_bytes) {
  const size_t words = bytes / sizeof(uint64_t);
  std::vector<std::unique_ptr<uint64_t[]>> arrays(pool.threads());
  std::vector<double> ns(pool.threads(), 0);
  pool.Run([&](int t) {
    if (t >= workers) return;
    arrays[t] = std::make_unique<uint64_t[]>(words);
    for (size_t i = 0; i < words; ++i) arrays[t][i] = i;  // fault the pages in first
  });
  pool.Run([&](int t) {
    if (t >= workers) return;
    const uint64_t* a = arrays[t].get();
    ns[t] = BestNs(3, [&] {
      uint64_t sum = 0;
      for (size_t i = 0; i < words; ++i) sum += a[i];
      Sink(sum);
    });
  });
  double worst = 0;
  for (int t = 0; t < workers; ++t) worst = std::max(worst, ns[t]);
  return worst / (bytes / line_bytes);
}

// ns per line read and written back within an L2-resident buffer.
double L2LineNs(const MachineInfo& machine) {
  const size_t bytes = std::max<size_t>(machine.l1d_bytes * 4, machine.l2_bytes / 4);
  const size_t words = bytes / sizeof(uint64_t);
  std::vector<uint64_t> a(words, 1);
  constexpr int kRounds = 16;
  const double ns = BestNs(5, [&] {
    for (int r = 0; r < kRounds; ++r) {
      for (size_t i = 0; i < words; i += machine.line_bytes / sizeof(uint64_t)) a[i] += r;
    }
  });
  Sink(a[words / 2]);
  return ns / (kRounds * double(bytes / machine.line_bytes));
}

// ns per L1 access of a quicksort of `tuples` tuples, counted as the paper does: 4 n log2 n.
double L1AccessNs(size_t tuples) {
  std::mt19937 rng(42);
  std::vector<Kv> input(tuples), work(tuples);
  for (auto& kv : input) kv = {static_cast<uint32_t>(rng()), 0};
  const int rounds = static_cast<int>(std::max<size_t>(4, 200'000 / tuples));
  double best = 1e300;
  for (int trial = 0; trial < 3; ++trial) {
    const double start = NowNs();
    for (int r = 0; r < rounds; ++r) {
      std::memcpy(work.data(), input.data(), sizeof(Kv) * tuples);
      std::sort(work.begin(), work.end(), [](const Kv& a, const Kv& b) { return a.key < b.key; });
    }
    best = std::min(best, NowNs() - start);
  }
  Sink(work[0].key);
  return best / (rounds * 4.0 * tuples * std::log2(double(tuples)));
}

// ns per output pair of a join's cross product (counted and summed, not materialized).
double OutputNs() {
  std::vector<Kv> outer(64, Kv{5, 1}), inner(256, Kv{5, 2});
  constexpr int kRounds = 400;
  JoinResult::Part part;
  const double ns = BestNs(5, [&] {
    for (int r = 0; r < kRounds; ++r) {
      CrossGroup(5, outer.data(), outer.size(), inner.data(), inner.size(), false, &part);
    }
  });
  Sink(part.checksum);
  return ns / (double(kRounds) * outer.size() * inner.size());
}

// An in-cache table of 8-byte tuples: what the kernels below run on, so that they time
// processing and no fetch.
NsmTable CacheTable(const MachineInfo& machine, uint32_t distinct) {
  const size_t n = std::max<size_t>(kPageTuples, machine.l2_bytes / 8 / sizeof(Kv));
  NsmTable table;
  SM_ASSERT(NsmTable::Make(sizeof(Kv), n, &table).ok());
  std::mt19937 rng(7);
  for (size_t i = 0; i < n; ++i) table.Set(i, {static_cast<uint32_t>(rng() % distinct), 1});
  return table;
}

// ns per tuple routed and copied into 64 partitions without sorting pages.
double RouteNs(const MachineInfo& machine, WorkerPool& one) {
  const NsmTable table = CacheTable(machine, 1u << 30);
  PartitionSpec spec;
  spec.fanout = 64;
  spec.sort_pages = false;
  Partitions parts;
  const double ns = BestNs(20, [&] { SM_ASSERT(Partition(one, table, {}, spec, &parts).ok()); });
  return ns / table.size();
}

// ns per counted access of a heap merge over 64 in-cache runs: 2 n log2(64).
double MergeAccessNs(const MachineInfo& machine) {
  constexpr int kRuns = 64;
  const size_t per_run = std::max<size_t>(64, machine.l2_bytes / 8 / sizeof(Kv) / kRuns);
  std::vector<Kv> data(kRuns * per_run);
  std::mt19937 rng(9);
  for (auto& kv : data) kv = {static_cast<uint32_t>(rng()), 0};
  for (int r = 0; r < kRuns; ++r) {
    std::sort(data.begin() + r * per_run, data.begin() + (r + 1) * per_run,
              [](const Kv& a, const Kv& b) { return a.key < b.key; });
  }
  uint64_t sum = 0;
  const double ns = BestNs(20, [&] {
    RunMerger merger;
    for (int r = 0; r < kRuns; ++r) {
      merger.Add(data.data() + r * per_run, data.data() + (r + 1) * per_run);
    }
    merger.Build();
    Kv kv;
    while (merger.Next(&kv)) sum += kv.key;
  });
  Sink(sum);
  return ns / (2.0 * data.size() * std::log2(double{kRuns}));
}

// ns per directory probe of map aggregation over 1024 keys, its aggregate updates (priced at
// L2 each) taken out.
double MapProbeNs(const MachineInfo& machine, WorkerPool& one, double l2_ns) {
  constexpr uint32_t kDistinct = 1024;
  const NsmTable table = CacheTable(machine, kDistinct);
  AggOptions options;
  options.map_distinct = kDistinct;
  GroupResult out;
  const double ns = BestNs(20, [&] {
    SM_ASSERT(Aggregate(AggAlgorithm::kMap, one, table, {}, machine, options, &out).ok());
  });
  const double per_tuple = ns / table.size();
  return std::max(per_tuple / 4, per_tuple - 2 * l2_ns) / std::log2(double{kDistinct});
}

double RoundNs(WorkerPool& pool) {
  constexpr int kRounds = 40;
  const double ns = BestNs(5, [&] {
    for (int r = 0; r < kRounds; ++r) pool.Run([](int) {});
  });
  return ns / kRounds / pool.threads();
}

}  // namespace

MtModelParams CalibrateModel(const MachineInfo& machine, WorkerPool& pool) {
  MtModelParams p;
  p.machine = machine;
  // Well past the last-level cache, so every line comes from memory.
  const size_t bytes = std::max<uint64_t>(64 << 20, machine.l3_bytes * 4);
  p.mem_ns = StreamLineNs(pool, 1, bytes, machine.line_bytes);
  p.mem_ns_2t =
      pool.threads() >= 2 ? StreamLineNs(pool, 2, bytes / 2, machine.line_bytes) : p.mem_ns;
  p.l2_ns = L2LineNs(machine);
  p.l1_ns = L1AccessNs(kPageTuples);
  p.block_l1_ns = L1AccessNs(DefaultBlockTuples(machine));
  p.out_ns = OutputNs();
  p.to_ns = RoundNs(pool);
  WorkerPool one(1);
  p.route_ns = RouteNs(machine, one);
  p.merge_l1_ns = MergeAccessNs(machine);
  p.map_l1_ns = MapProbeNs(machine, one, p.l2_ns);
  p.lk_ns = 0;
  SM_ASSERT(p.mem_ns > 0);
  SM_ASSERT(p.l1_ns > 0);
  return p;
}

std::string MtModelParams::Describe() const {
  char buf[640];
  std::snprintf(buf, sizeof(buf),
                "L1 %.3f ns/access (page sort), %.3f (block sort), %.3f (merge), %.3f (map probe), "
                "routing %.2f "
                "ns/tuple, L2 %.2f ns/line, M %.2f ns/line (1 worker), %.2f ns/line (2 "
                "workers at once), LK %.0f ns, TO %.0f ns, OUT %.2f ns",
                l1_ns, block_l1_ns, merge_l1_ns, map_l1_ns, route_ns, l2_ns, mem_ns, mem_ns_2t,
                lk_ns, to_ns, out_ns);
  return buf;
}

}  // namespace sm::query::mt
