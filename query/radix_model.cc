#include "query/radix_model.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "query/radix_join.h"
#include "sm/common/assert.h"

namespace sm::query {
namespace {

// Random misses per tuple of a hash join whose table outgrows a level: the build writes a
// bucket head; the probe reads a head, the tuple it names and that tuple's chain link.
constexpr double kHashMissesPerTuple = 4;

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Levels {
  double bytes[3];  // L1d, L2, L3
  double cost[3];   // the overlapped cost of missing that level
};

Levels LevelsOf(const CostParams& p) {
  const MachineInfo& m = p.machine;
  return {{double(m.l1d_bytes), double(m.l2_bytes), double(m.l3_bytes)},
          {p.miss_l2_ns, p.miss_l3_ns, p.miss_mem_ns}};
}

double PageBytes(const CostParams& p) {
  return p.huge_pages ? double(p.machine.huge_page_bytes) : double(p.machine.page_bytes);
}

double TlbReachBytes(const CostParams& p) { return p.machine.tlb_l2_entries * PageBytes(p); }

// Streaming `bytes_read` (and as many written) with `footprint` bytes live.
double StreamNs(const CostParams& p, double bytes_read, double footprint) {
  const double per_byte = footprint <= p.machine.l2_bytes   ? p.stream_l2_ns_per_byte
                          : footprint <= p.machine.l3_bytes ? p.stream_l3_ns_per_byte
                                                            : p.stream_mem_ns_per_byte;
  return bytes_read * per_byte;
}

// One pass writing C tuples to h clusters: the paper's M_Li,c and M_TLB,c beyond the
// compulsory misses (those are the stream). A level that holds the pass's input and output
// misses nothing.
double ClusterPassNs(const CostParams& p, double h, double c) {
  const Levels lv = LevelsOf(p);
  const double relation = 8 * c, footprint = 2 * relation;
  const double line = p.machine.line_bytes;
  double ns = c * p.w_c + StreamNs(p, relation, footprint);
  for (int i = 0; i < 3; ++i) {
    if (footprint <= lv.bytes[i]) continue;
    const double lines = lv.bytes[i] / line;
    const double misses = h <= lines ? c * h / lines : c * (1 + std::log(h / lines));
    ns += misses * lv.cost[i];
  }
  if (footprint > TlbReachBytes(p)) {
    const double entries = p.machine.tlb_l2_entries;
    const double pages = relation / PageBytes(p);
    const double misses = 2 * pages + (h <= entries ? pages * h / entries : c * (1 - entries / h));
    ns += misses * p.miss_tlb_ns;
  }
  return ns;
}

// Misses of a level of `level_bytes` when each of C tuples works in a cluster of
// `cluster_bytes`: the paper's second term of M_Li,h.
double HashLevelMisses(double c, double cluster_bytes, double level_bytes) {
  if (cluster_bytes <= level_bytes) return c * cluster_bytes / level_bytes;
  return c * kHashMissesPerTuple * (1 - level_bytes / cluster_bytes);
}

}  // namespace

std::string CostParams::Describe() const {
  std::ostringstream s;
  s.precision(3);
  s << "latency (dependent loads), ns: L2 +" << lat_l2_ns << ", L3 +" << lat_l3_ns << ", memory +"
    << lat_mem_ns << ", TLB miss +" << lat_tlb_ns << "\n";
  s << "miss cost (independent loads), ns: L2 +" << miss_l2_ns << ", L3 +" << miss_l3_ns
    << ", memory +" << miss_mem_ns << ", TLB miss +" << miss_tlb_ns << "\n";
  s << "miss cost (dependent pairs), ns: L2 +" << chain_l2_ns << ", L3 +" << chain_l3_ns
    << ", memory +" << chain_mem_ns << ", TLB miss +" << chain_tlb_ns << "\n";
  s << "stream, ns/byte: L2 " << stream_l2_ns_per_byte << ", L3 " << stream_l3_ns_per_byte
    << ", memory " << stream_mem_ns_per_byte << "\n";
  s << "cpu, ns: w_c " << w_c << ", w_h " << w_h << ", w'_h " << w_h_cluster << ", w_r " << w_r
    << ", w'_r " << w_r_result << ", w_rc " << w_rc << "\n";
  s << "pass ns/tuple by bits (inside L3 / beyond):";
  for (size_t k = 1; k < pass_mem_ns.size(); ++k) {
    s << " " << k << ":" << pass_l3_ns[k] << "/" << pass_mem_ns[k];
  }
  s << "\nphash join ns/tuple by cluster KiB:";
  for (const auto& [bytes, ns] : probe_ns_by_cluster_bytes) s << " " << bytes / 1024 << ":" << ns;
  s << "\n";
  s << "load / dependent pair ns by MiB:";
  for (size_t i = 0; i < load_ns_by_bytes.size(); ++i) {
    s << " " << load_ns_by_bytes[i].first / (1 << 20) << ":" << load_ns_by_bytes[i].second << "/"
      << pair_ns_by_bytes[i].second;
  }
  s << "\n";
  s << "pages: " << (huge_pages ? "huge" : "small") << ", TLB reach "
    << TlbReachBytes(*this) / (1 << 20) << " MiB\n";
  return s.str();
}

double PaperRadixClusterCostNs(const CostParams& p, int passes, int bits, double c) {
  SM_ASSERT(passes >= 1);
  SM_ASSERT(bits >= 0);
  if (bits == 0) return StreamNs(p, 8 * c, 16 * c);  // a copy
  double ns = 0;
  for (int b : SpreadBits(bits, passes)) ns += ClusterPassNs(p, std::ldexp(1.0, b), c);
  return ns;
}

double PaperPartitionedHashJoinCostNs(const CostParams& p, int bits, double c) {
  SM_ASSERT(bits >= 0);
  const double h = std::ldexp(1.0, bits);
  const double n = std::max(c / h, 1.0);  // tuples per cluster
  const double buckets = std::bit_ceil(static_cast<uint64_t>(std::max(n, 2.0)));
  const double cluster_bytes = n * (sizeof(Bun) + 4) + 4 * buckets;  // tuples, links, heads
  const double relation = 8 * c;
  double ns = c * p.w_h + h * p.w_h_cluster + StreamNs(p, 3 * relation, 3 * relation);
  // A probe's misses depend on one another (head, then tuple, then link): they are priced at
  // the cost of a dependent pair's misses, not of independent ones.
  const Levels lv = LevelsOf(p);
  const double chain[3] = {p.chain_l2_ns, p.chain_l3_ns, p.chain_mem_ns};
  for (int i = 0; i < 3; ++i) ns += HashLevelMisses(c, cluster_bytes, lv.bytes[i]) * chain[i];
  if (3 * relation > TlbReachBytes(p)) {
    ns += 3 * relation / PageBytes(p) * p.miss_tlb_ns +
          HashLevelMisses(c, cluster_bytes, TlbReachBytes(p)) * p.chain_tlb_ns;
  }
  return ns;
}

double RadixJoinCostNs(const CostParams& p, int bits, double c) {
  SM_ASSERT(bits >= 0);
  const double h = std::ldexp(1.0, bits);
  const double n = c / h;  // expected inner tuples an outer tuple is compared with
  const double cluster_bytes = std::max(n, 1.0) * sizeof(Bun);
  const double relation = 8 * c;
  const double sequential = 3 * relation + 2 * 4 * h;  // both inputs, the result, the bounds
  double ns = c * n * p.w_r + c * p.w_r_result + h * p.w_rc + StreamNs(p, sequential, sequential);
  const Levels lv = LevelsOf(p);
  const double line = p.machine.line_bytes;
  for (int i = 0; i < 3; ++i) {
    const double misses =
        cluster_bytes <= lv.bytes[i] ? c * cluster_bytes / lv.bytes[i] : c * cluster_bytes / line;
    ns += misses * lv.cost[i];
  }
  if (sequential > TlbReachBytes(p)) ns += sequential / PageBytes(p) * p.miss_tlb_ns;
  return ns;
}

namespace {

double ClusterBytes(double tuples) {
  const double buckets = std::bit_ceil(static_cast<uint64_t>(std::max(tuples, 2.0)));
  return tuples * (sizeof(Bun) + 4) + 4 * buckets;  // tuples, chain links, bucket heads
}

}  // namespace

namespace {

// y at x on a curve of (x, y) points, linear in log(x), clamped at its ends.
double Interpolate(const std::vector<std::pair<double, double>>& curve, double x) {
  if (curve.empty()) return 0;
  if (x <= curve.front().first) return curve.front().second;
  if (x >= curve.back().first) return curve.back().second;
  size_t i = 1;
  while (curve[i].first < x) ++i;
  const double f = std::log(x / curve[i - 1].first) / std::log(curve[i].first / curve[i - 1].first);
  return curve[i - 1].second + f * (curve[i].second - curve[i - 1].second);
}

// A pass over `footprint` bytes against the pass timed over 16 x kPassCurveTuples: each
// cluster's writes fill its line before moving on, so a pass misses once per line of tuples
// written, priced by the growth of an independent load's cost.
constexpr double kPassCurveTuples = 8 << 20;

double PassGrowthNs(const CostParams& p, double footprint) {
  const double measured = 16 * kPassCurveTuples;
  if (footprint <= measured) return 0;
  const double tuples_per_line = double(p.machine.line_bytes) / sizeof(Bun);
  return std::max(0.0, Interpolate(p.load_ns_by_bytes, footprint) -
                           Interpolate(p.load_ns_by_bytes, measured)) /
         tuples_per_line;
}

// A pass at fan-out 2^k over `footprint` bytes, between the two timed curves: the L3 is shared
// with the other cores, so its hits fade as the footprint grows from where pass_l3_ns was timed
// (a quarter of it) to where pass_mem_ns was, rather than stopping at its nominal size.
double PassBetweenCurvesNs(const CostParams& p, int k, double footprint) {
  const double l3_point = p.machine.l3_bytes / 4.0;
  const double mem_point = 16 * kPassCurveTuples;
  if (l3_point >= mem_point) {
    return footprint <= p.machine.l3_bytes ? p.pass_l3_ns[k] : p.pass_mem_ns[k];
  }
  return Interpolate({{l3_point, p.pass_l3_ns[k]}, {mem_point, p.pass_mem_ns[k]}}, footprint);
}

}  // namespace

double RadixClusterCostNs(const CostParams& p, int passes, int bits, double c) {
  if (p.pass_mem_ns.empty()) return PaperRadixClusterCostNs(p, passes, bits, c);
  if (bits == 0) return StreamNs(p, 8 * c, 16 * c);
  const double footprint = 16 * c;
  double ns = 0;
  for (int b : SpreadBits(bits, passes)) {
    const int k = std::min<int>(b, static_cast<int>(p.pass_mem_ns.size()) - 1);
    if (footprint <= p.machine.l2_bytes) {
      ns += ClusterPassNs(p, std::ldexp(1.0, b), c);  // no curve is timed inside the L2
    } else {
      ns += c * (PassBetweenCurvesNs(p, k, footprint) + PassGrowthNs(p, footprint));
    }
  }
  return ns;
}

double PartitionedHashJoinCostNs(const CostParams& p, int bits, double c) {
  const auto& curve = p.probe_ns_by_cluster_bytes;
  if (curve.empty()) return PaperPartitionedHashJoinCostNs(p, bits, c);
  const double bytes = ClusterBytes(std::max(c / std::ldexp(1.0, bits), 1.0));
  double ns = Interpolate(curve, bytes);
  // Beyond the largest timed cluster: a probe's misses come in about two dependent pairs
  // (build: a head; probe: head, tuple, link), priced by the growth of a pair's cost.
  if (bytes > curve.back().first) {
    ns += kHashMissesPerTuple / 2 *
          std::max(0.0, Interpolate(p.pair_ns_by_bytes, bytes) -
                            Interpolate(p.pair_ns_by_bytes, curve.back().first));
  }
  return c * ns;
}

double PlainHashJoinTotalNs(const CostParams& p, double c) {
  return PartitionedHashJoinCostNs(p, 0, c);
}

double PartitionedHashJoinTotalNs(const CostParams& p, int passes, int bits, double c) {
  return 2 * RadixClusterCostNs(p, passes, bits, c) + PartitionedHashJoinCostNs(p, bits, c);
}

double RadixJoinTotalNs(const CostParams& p, int passes, int bits, double c) {
  return 2 * RadixClusterCostNs(p, passes, bits, c) + RadixJoinCostNs(p, bits, c);
}

int MaxBitsPerPass(const MachineInfo& machine, bool huge_pages) {
  const uint64_t tlb_bound =
      huge_pages ? uint64_t{1} << 30 : static_cast<uint64_t>(machine.tlb_l2_entries);
  const uint64_t fanout = std::max<uint64_t>(
      2, std::min<uint64_t>(tlb_bound, machine.LineCount(machine.l2_bytes)));
  return static_cast<int>(std::bit_width(fanout)) - 1;
}

HashJoinChoice CheapestHashJoin(const CostParams& p, double c) {
  HashJoinChoice best{JoinAlgorithm::kPlainHash, 0, 1, PlainHashJoinTotalNs(p, c)};
  const int max_per_pass = MaxBitsPerPass(p.machine, p.huge_pages);
  const int max_bits = std::min(kMaxRadixBits, static_cast<int>(std::log2(std::max(c, 2.0))));
  for (int bits = 1; bits <= max_bits; ++bits) {
    for (int passes = 1; passes <= std::min(kMaxPasses, bits); ++passes) {
      if ((bits + passes - 1) / passes > max_per_pass) continue;
      const double ns = PartitionedHashJoinTotalNs(p, passes, bits, c);
      if (ns < best.predicted_ns) best = {JoinAlgorithm::kPartitionedHash, bits, passes, ns};
    }
  }
  return best;
}

// --- Calibration -------------------------------------------------------------------------

namespace {

// An anonymous mapping, in huge pages or explicitly not.
struct Region {
  Region(size_t bytes, bool huge) : bytes(bytes) {
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p = m == MAP_FAILED ? nullptr : static_cast<uint64_t*>(m);
    if (p != nullptr) {
      if (huge) {
        AdviseHugePages(p, bytes);
      } else {
        madvise(p, bytes, MADV_NOHUGEPAGE);
      }
      std::fill(p, p + bytes / 8, 0);  // fault every page in before timing
    }
  }
  ~Region() {
    if (p != nullptr) munmap(p, bytes);
  }
  size_t bytes;
  uint64_t* p;
};

// ns per dependent load over the first `bytes` of `mem`, one load per line in random order.
double DependentNs(uint64_t* mem, size_t bytes, size_t line, std::mt19937_64& rng) {
  const size_t lines = bytes / line, words_per_line = line / 8;
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < lines; ++i) {
    mem[order[i] * words_per_line] = order[(i + 1) % lines] * words_per_line;
  }
  uint64_t at = order[0] * words_per_line;
  for (size_t i = 0; i < std::min<size_t>(lines, 1 << 20); ++i) at = mem[at];
  const size_t loads = 1 << 21;
  const double start = Seconds();
  for (size_t i = 0; i < loads; ++i) at = mem[at];
  const double ns = (Seconds() - start) * 1e9 / loads;
  SM_ASSERT(at < bytes / 8);
  return ns;
}

// ns per independent load of a random line of the first `bytes` (a power of two) of `mem`;
// the addresses come from a register-only generator, so no index array competes for caches.
double IndependentNs(const uint64_t* mem, size_t bytes, size_t line) {
  const uint64_t mask = bytes / line - 1, words_per_line = line / 8;
  SM_ASSERT(std::has_single_bit(bytes / line));
  uint64_t x = 0x9E3779B97F4A7C15ull, sum = 0;
  const size_t loads = 1 << 23;
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const double start = Seconds();
    for (size_t i = 0; i < loads; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      sum += mem[(x & mask) * words_per_line];
    }
    best = std::min(best, (Seconds() - start) * 1e9 / loads);
  }
  SM_ASSERT(sum != 1);  // keeps the loads live
  return best;
}

// ns per pair of random loads of which the second depends on the first, pairs independent:
// the shape of a hash probe (a bucket head, then the tuple it names), whose misses overlap
// only across probes.
double ChainNs(const uint64_t* mem, size_t bytes, size_t line) {
  const uint64_t mask = bytes / line - 1, words_per_line = line / 8;
  uint64_t x = 0x2545F4914F6CDD1Dull, sum = 0;
  const size_t pairs = 1 << 22;
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const double start = Seconds();
    for (size_t i = 0; i < pairs; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const uint64_t a = mem[(x & mask) * words_per_line];
      sum += mem[((a ^ (x >> 20)) & mask) * words_per_line];
    }
    best = std::min(best, (Seconds() - start) * 1e9 / pairs);
  }
  SM_ASSERT(sum != 1);
  return best;
}

// ns per byte read of a copy of `bytes` within `mem` (source and destination halves). Each
// word is transformed, so the loop stays a loop of ordinary stores, as a cluster pass's are
// (a library copy may switch to non-temporal stores).
double StreamNsPerByte(uint64_t* mem, size_t bytes) {
  const size_t words = bytes / 16;
  const size_t reps = std::max<size_t>(1, (size_t{256} << 20) / bytes);
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const double start = Seconds();
    for (size_t rep = 0; rep < reps; ++rep) {
      for (size_t i = 0; i < words; ++i) mem[words + i] = mem[i] ^ rep;
    }
    best = std::min(best, (Seconds() - start) * 1e9 / (reps * 8.0 * words));
  }
  return best;
}

std::vector<Bun> UniqueShuffled(uint32_t n, uint32_t oid_base, std::mt19937_64& rng) {
  std::vector<Bun> r(n);
  const uint32_t salt = static_cast<uint32_t>(rng());
  for (uint32_t i = 0; i < n; ++i) r[i] = {RadixHash(i) ^ salt, oid_base + i};  // unique, uniform
  std::shuffle(r.begin(), r.end(), rng);
  return r;
}

// Best ns per call of fn over a few batches of `calls` calls.
template <class F>
double TimeCallNs(int calls, const F& fn) {
  double best = 1e30;
  for (int batch = 0; batch < 5; ++batch) {
    const double start = Seconds();
    for (int i = 0; i < calls; ++i) fn();
    best = std::min(best, (Seconds() - start) * 1e9 / calls);
  }
  return best;
}

// The CPU constants, on inputs that stay in the L1 cache (the paper's calibration of w_c).
void CalibrateCpu(CostParams* p, std::mt19937_64& rng) {
  constexpr uint32_t kTuples = 1024;
  const double c = kTuples;
  const std::vector<Bun> left = UniqueShuffled(kTuples, 0, rng);
  const std::vector<Bun> right = UniqueShuffled(kTuples, 1u << 20, rng);
  JoinOptions o;
  o.huge_pages = false;
  ClusteredRelation cl, cr;
  JoinIndex index;
  JoinScratch scratch;
  auto check = [](const Status& s) { SM_ASSERT(s.ok()); };
  o.bits = 4;
  p->w_c = TimeCallNs(2000, [&] { check(RadixCluster(left, o, &cl)); }) / c;
  auto join_ns = [&](JoinAlgorithm algorithm, int bits) {
    o.bits = bits;
    check(RadixCluster(left, o, &cl));
    check(RadixCluster(right, o, &cr));
    return TimeCallNs(1000, [&] { check(JoinClustered(algorithm, cl, cr, o, &index, &scratch)); });
  };
  p->w_h = join_ns(JoinAlgorithm::kPartitionedHash, 0) / c;
  p->w_h_cluster = std::max(0.0, (join_ns(JoinAlgorithm::kPartitionedHash, 6) - c * p->w_h) / 64.0);
  // t / C = s w_r + w'_r + w_rc / s for clusters of s = 1, 4 and 16 tuples.
  const double t1 = join_ns(JoinAlgorithm::kRadix, 10) / c;
  const double t4 = join_ns(JoinAlgorithm::kRadix, 8) / c;
  const double t16 = join_ns(JoinAlgorithm::kRadix, 6) / c;
  // Subtracting pairs: t4 - t1 = 3 w_r - 0.75 w_rc; t16 - t4 = 12 w_r - 0.1875 w_rc.
  const double a1 = 3, b1 = -0.75, r1 = t4 - t1, a2 = 12, b2 = -0.1875, r2 = t16 - t4;
  const double det = a1 * b2 - a2 * b1;
  p->w_r = std::max(0.0, (r1 * b2 - r2 * b1) / det);
  p->w_rc = std::max(0.0, (a1 * r2 - a2 * r1) / det);
  p->w_r_result = std::max(0.0, t1 - p->w_r - p->w_rc);
}

// ns per tuple of one pass at each fan-out 2^k over `tuples` tuples.
std::vector<double> PassCurve(uint32_t tuples, bool huge_pages, std::mt19937_64& rng) {
  // The input in the kind of pages the joins read, so a pass streams it as they do.
  const std::vector<Bun> shuffled = UniqueShuffled(tuples, 0, rng);
  PageBuffer<Bun> input;
  SM_ASSERT(input.Resize(tuples, huge_pages));
  std::copy(shuffled.begin(), shuffled.end(), input.data());
  JoinOptions o;
  o.huge_pages = huge_pages;
  ClusteredRelation out;
  std::vector<double> curve(15, 0);
  for (int k = 1; k <= 14; ++k) {
    o.bits = k;
    SM_ASSERT(RadixCluster(input.span(), o, &out).ok());  // faults the pages in
    // The least of a few runs: noise from other work only ever adds time.
    curve[k] = TimeCallNs(1, [&] { SM_ASSERT(RadixCluster(input.span(), o, &out).ok()); }) / tuples;
  }
  curve[0] = curve[1];
  return curve;
}

// The partitioned hash join's join phase per tuple, over clusters of 2^-B of `tuples`.
std::vector<std::pair<double, double>> ProbeCurve(uint32_t tuples, std::mt19937_64& rng) {
  const std::vector<Bun> left = UniqueShuffled(tuples, 0, rng);
  std::vector<Bun> right = left;
  std::shuffle(right.begin(), right.end(), rng);
  JoinOptions o;
  o.passes = 2;
  ClusteredRelation cl, cr;
  JoinIndex index;
  JoinScratch scratch;
  std::vector<std::pair<double, double>> curve;
  const int max_bits = std::bit_width(tuples) - 5;  // down to clusters of about 16 tuples
  for (int bits = max_bits; bits >= 0; bits -= 2) {
    o.bits = bits;
    o.passes = bits >= 2 ? 2 : 1;
    SM_ASSERT(RadixCluster(left, o, &cl).ok());
    SM_ASSERT(RadixCluster(right, o, &cr).ok());
    SM_ASSERT(JoinClustered(JoinAlgorithm::kPartitionedHash, cl, cr, o, &index, &scratch).ok());
    const double ns = TimeCallNs(1, [&] {
                        SM_ASSERT(JoinClustered(JoinAlgorithm::kPartitionedHash, cl, cr, o,
                                                &index, &scratch).ok());
                      }) / tuples;
    curve.emplace_back(ClusterBytes(tuples / std::ldexp(1.0, bits)), ns);
  }
  return curve;
}

}  // namespace

CostParams Calibrate(const MachineInfo& machine, bool huge_pages) {
  CostParams p;
  p.machine = machine;
  p.huge_pages = huge_pages;
  std::mt19937_64 rng(7);
  const size_t line = machine.line_bytes;
  // Sizes well inside each level (the L3 is shared with the other cores), and beyond all.
  const size_t in_l1 = std::bit_floor(machine.l1d_bytes / 4);
  const size_t in_l2 = std::bit_floor(machine.l2_bytes / 2);
  const size_t in_l3 = std::bit_floor(machine.l3_bytes / 4);
  const size_t in_mem = std::max<size_t>(size_t{512} << 20, std::bit_ceil(machine.l3_bytes * 8));
  {
    Region huge(in_mem, true);
    SM_ASSERT(huge.p != nullptr);
    const double d1 = DependentNs(huge.p, in_l1, line, rng);
    const double d2 = DependentNs(huge.p, in_l2, line, rng);
    const double d3 = DependentNs(huge.p, in_l3, line, rng);
    const double dm = DependentNs(huge.p, in_mem, line, rng);
    p.lat_l2_ns = std::max(0.0, d2 - d1);
    p.lat_l3_ns = std::max(0.0, d3 - d2);
    p.lat_mem_ns = std::max(0.0, dm - d3);
    const double i1 = IndependentNs(huge.p, in_l1, line);
    const double i2 = IndependentNs(huge.p, in_l2, line);
    const double i3 = IndependentNs(huge.p, in_l3, line);
    const double im = IndependentNs(huge.p, in_mem, line);
    p.miss_l2_ns = std::max(0.0, i2 - i1);
    p.miss_l3_ns = std::max(0.0, i3 - i2);
    p.miss_mem_ns = std::max(0.0, im - i3);
    // Per miss of a dependent pair, beyond the pair's cost in the L1.
    const double c1 = ChainNs(huge.p, in_l1, line);
    const double c2 = ChainNs(huge.p, in_l2, line);
    const double c3 = ChainNs(huge.p, in_l3, line);
    const double cm = ChainNs(huge.p, in_mem, line);
    p.chain_l2_ns = std::max(0.0, (c2 - c1) / 2);
    p.chain_l3_ns = std::max(0.0, (c3 - c2) / 2);
    p.chain_mem_ns = std::max(0.0, (cm - c3) / 2);
    Region small(in_mem, false);
    SM_ASSERT(small.p != nullptr);
    p.lat_tlb_ns = std::max(0.0, DependentNs(small.p, in_mem, line, rng) - dm);
    p.miss_tlb_ns = std::max(0.0, IndependentNs(small.p, in_mem, line) - im);
    p.chain_tlb_ns = std::max(0.0, (ChainNs(small.p, in_mem, line) - cm) / 2);
    Region& stream = huge_pages ? huge : small;
    p.stream_l2_ns_per_byte = StreamNsPerByte(stream.p, in_l2);
    p.stream_l3_ns_per_byte = StreamNsPerByte(stream.p, in_l3);
    p.stream_mem_ns_per_byte = StreamNsPerByte(stream.p, size_t{256} << 20);
  }
  {
    // How a miss's cost grows with the footprint, up to twice the largest relation pair
    // the benchmark joins.
    const size_t most = size_t{2} << 30;
    Region big(most, true);
    SM_ASSERT(big.p != nullptr);
    for (size_t bytes = size_t{64} << 20; bytes <= most; bytes *= 2) {
      p.load_ns_by_bytes.emplace_back(double(bytes), IndependentNs(big.p, bytes, line));
      p.pair_ns_by_bytes.emplace_back(double(bytes), ChainNs(big.p, bytes, line));
    }
  }
  CalibrateCpu(&p, rng);
  // The kernels: inside the L3 (input and output a quarter of it) and well beyond it.
  p.pass_l3_ns = PassCurve(static_cast<uint32_t>(machine.l3_bytes / 64), huge_pages, rng);
  p.pass_mem_ns = PassCurve(static_cast<uint32_t>(kPassCurveTuples), huge_pages, rng);
  p.probe_ns_by_cluster_bytes = ProbeCurve(1u << 22, rng);
  return p;
}

}  // namespace sm::query
