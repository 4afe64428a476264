// The radix-cluster joins of query/radix_join.h against the plain hash join, after section 4.4
// and Table 2 of Manegold, Boncz and Kersten (VLDB Journal 2000): 8-byte [key, oid] tuples,
// unique uniform keys, hit rate 1, C tuples a side (1m = 1,000,000, as the paper counts).
//
// At start it reads the machine (query/machine.h), measures its TLB when cpuid does not say,
// and calibrates the cost models (query/radix_model.h). Per size it times the plain hash join,
// then the partitioned hash join and the radix join at the (B, P) the models rank best, plus
// the paper's rules of thumb (phash on clusters that fit the L2 cache with their table; radix
// on clusters of 8 tuples). The models prune the sweep: every (B, P) whose bits per pass stay
// within the fan-out bound is predicted, and only the best --candidates of each algorithm run.
// With --threads 1,2 the best configurations and the plain join run again on one and on two
// workers, the runs alternating, and the speedup is the ratio of those runs' medians.
//
// JSON keys: radix_speedup_{S} (plain hash join time / best radix-clustered join time, both
// run again alternating: hash_alt_ms_{S}, best_alt_ms_{S}),
// best_bits_{S}, best_passes_{S}, best_algo_{S}, {hash,phash,radix}_ms_{S} and
// {hash,phash,radix}_pred_ms_{S} (measured and predicted), phash_bits_{S}, phash_passes_{S},
// radix_bits_{S}, radix_passes_{S}, {hash,phash,radix}_2t_ms_{S} and
// {hash,phash,radix}_2t_speedup_{S} (1-worker time / 2-worker time, alternating),
// model_error_pct (the largest |predicted - measured| / measured over the plain, best phash and
// best radix joins of every size), paper_model_error_pct (the same for the paper's model),
// max_bits_per_pass, huge_pages, anon_huge_mib, and the calibration's constants.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "query/machine.h"
#include "query/radix_join.h"
#include "query/radix_model.h"
#include "tools/bench/bench_util.h"

namespace sm::bench {
namespace {

using query::Bun;
using query::JoinAlgorithm;

struct Config {
  JoinAlgorithm algorithm;
  int bits;
  int passes;
  double predicted_ms;
};

double PredictMs(const query::CostParams& p, const Config& c, double tuples) {
  switch (c.algorithm) {
    case JoinAlgorithm::kPlainHash:
      return query::PlainHashJoinTotalNs(p, tuples) / 1e6;
    case JoinAlgorithm::kPartitionedHash:
      return query::PartitionedHashJoinTotalNs(p, c.passes, c.bits, tuples) / 1e6;
    case JoinAlgorithm::kRadix:
      return query::RadixJoinTotalNs(p, c.passes, c.bits, tuples) / 1e6;
  }
  return 0;
}

// The paper's model, misses counted times their calibrated costs.
double PaperPredictMs(const query::CostParams& p, const Config& c, double tuples) {
  switch (c.algorithm) {
    case JoinAlgorithm::kPlainHash:
      return query::PaperPartitionedHashJoinCostNs(p, 0, tuples) / 1e6;
    case JoinAlgorithm::kPartitionedHash:
      return (2 * query::PaperRadixClusterCostNs(p, c.passes, c.bits, tuples) +
              query::PaperPartitionedHashJoinCostNs(p, c.bits, tuples)) /
             1e6;
    case JoinAlgorithm::kRadix:
      return (2 * query::PaperRadixClusterCostNs(p, c.passes, c.bits, tuples) +
              query::RadixJoinCostNs(p, c.bits, tuples)) /
             1e6;
  }
  return 0;
}

// Unique uniform keys: a bijection of 0..C-1 (so no key repeats), in a random order on each
// side, so that neither side's order says anything about the other's.
void MakeRelations(uint32_t n, uint64_t seed, query::PageBuffer<Bun>* left,
                   query::PageBuffer<Bun>* right, bool huge) {
  if (!left->Resize(n, huge) || !right->Resize(n, huge)) {
    std::fprintf(stderr, "out of memory for %u tuples\n", n);
    std::exit(1);
  }
  std::mt19937_64 rng(seed);
  const uint32_t salt = static_cast<uint32_t>(rng());
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t key = query::RadixHash(i) ^ salt;  // a bijection of i
    (*left)[i] = {key, i};
    (*right)[i] = {key, i};
  }
  for (auto* r : {left, right}) {
    for (uint32_t i = n - 1; i > 0; --i) {
      const uint32_t j = static_cast<uint32_t>(rng() % (i + 1));
      std::swap((*r)[i], (*r)[j]);
    }
  }
}

struct Measured {
  double ms = 0;
  double cluster_ms = 0;
};

// One timed join of `c` on `threads` workers; exits on a failure or a wrong result.
Measured RunOnce(const Config& c, int threads, const query::PageBuffer<Bun>& left,
                 const query::PageBuffer<Bun>& right, bool huge, query::JoinScratch* scratch,
                 query::JoinIndex* index) {
  query::JoinOptions o;
  o.bits = c.algorithm == JoinAlgorithm::kPlainHash ? 0 : c.bits;
  o.passes = c.algorithm == JoinAlgorithm::kPlainHash ? 1 : c.passes;
  o.threads = threads;
  o.huge_pages = huge;
  query::JoinStats stats;
  const double start = NowSeconds();
  const Status s = query::Join(c.algorithm, left.span(), right.span(), o, index, &stats, scratch);
  const double elapsed = NowSeconds() - start;
  if (!s.ok()) {
    std::fprintf(stderr, "join failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  if (index->size() != left.size()) {  // unique keys, hit rate 1
    std::fprintf(stderr, "%s B=%d P=%d: %zu pairs, expected %zu\n",
                 query::JoinAlgorithmName(c.algorithm), c.bits, c.passes, index->size(),
                 left.size());
    std::exit(1);
  }
  return {elapsed * 1e3, stats.cluster_seconds * 1e3};
}

Measured MedianOf(const std::vector<Measured>& runs) {
  std::vector<double> total, cluster;
  for (const Measured& m : runs) total.push_back(m.ms), cluster.push_back(m.cluster_ms);
  return {Median(total), Median(cluster)};
}

Measured Run(const Config& c, int threads, int repeat, const query::PageBuffer<Bun>& left,
             const query::PageBuffer<Bun>& right, bool huge, query::JoinScratch* scratch,
             query::JoinIndex* index) {
  std::vector<Measured> runs;
  for (int r = 0; r < repeat; ++r) {
    runs.push_back(RunOnce(c, threads, left, right, huge, scratch, index));
  }
  return MedianOf(runs);
}

// `a` on a_threads workers and `b` on b_threads, the runs alternating (which goes first
// alternates too), so that the ratio of the two medians compares runs the machine's load
// shifted alike.
std::pair<Measured, Measured> RunAlternating(const Config& a, int a_threads, const Config& b,
                                             int b_threads, int repeat,
                                             const query::PageBuffer<Bun>& left,
                                             const query::PageBuffer<Bun>& right, bool huge,
                                             query::JoinScratch* scratch,
                                             query::JoinIndex* index) {
  std::vector<Measured> of_a, of_b;
  for (int r = 0; r < repeat; ++r) {
    for (int k = 0; k < 2; ++k) {
      if ((r + k) % 2 == 0) {
        of_a.push_back(RunOnce(a, a_threads, left, right, huge, scratch, index));
      } else {
        of_b.push_back(RunOnce(b, b_threads, left, right, huge, scratch, index));
      }
    }
  }
  return {MedianOf(of_a), MedianOf(of_b)};
}

std::vector<uint32_t> ParseSizes(const std::string& text, std::vector<std::string>* names) {
  std::vector<uint32_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    double v = std::stod(item);
    const char unit = item.back();
    if (unit == 'm' || unit == 'M') v *= 1e6;
    if (unit == 'k' || unit == 'K') v *= 1e3;
    sizes.push_back(static_cast<uint32_t>(v));
    std::string name = item;
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    names->push_back(name);
  }
  return sizes;
}

std::vector<int> ParseInts(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::stoi(item));
  }
  return out;
}

// The configurations of one algorithm the models rank best, plus the paper's rule of thumb.
std::vector<Config> Candidates(const query::CostParams& p, JoinAlgorithm algorithm, double tuples,
                               int max_bits_per_pass, int keep, int rule_bits) {
  std::vector<Config> all;
  const int log_c = static_cast<int>(std::floor(std::log2(tuples)));
  const int lo = algorithm == JoinAlgorithm::kRadix ? std::max(1, log_c - 5) : 1;
  const int hi = std::min(query::kMaxRadixBits, log_c);
  for (int bits = lo; bits <= hi; ++bits) {
    for (int passes = 1; passes <= std::min(3, bits); ++passes) {
      if ((bits + passes - 1) / passes > max_bits_per_pass) continue;
      Config c{algorithm, bits, passes, 0};
      c.predicted_ms = PredictMs(p, c, tuples);
      all.push_back(c);
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Config& a, const Config& b) { return a.predicted_ms < b.predicted_ms; });
  std::vector<Config> chosen(all.begin(), all.begin() + std::min<size_t>(keep, all.size()));
  // The rule of thumb at the passes the model prefers for its bits.
  for (const Config& c : all) {
    if (c.bits != rule_bits) continue;
    const bool seen = std::any_of(chosen.begin(), chosen.end(), [&](const Config& x) {
      return x.bits == c.bits && x.passes == c.passes;
    });
    if (!seen) chosen.push_back(c);
    break;
  }
  return chosen;
}

}  // namespace
}  // namespace sm::bench

int main(int argc, char** argv) {
  using namespace sm;
  using namespace sm::bench;
  CLI::App app{"Radix-cluster joins (Manegold, Boncz, Kersten) against the plain hash join"};
  std::string sizes_text = "1m,4m,16m,64m", threads_text = "1,2", huge_text = "auto";
  int repeat = 3, keep = 3;
  uint64_t seed = 1;
  app.add_option("--sizes", sizes_text, "tuples a side, comma-separated (1m = 1,000,000)");
  app.add_option("--repeat", repeat, "runs per figure (median reported)");
  app.add_option("--threads", threads_text, "worker counts: 1, or 1,2");
  app.add_option("--candidates", keep, "configurations per algorithm the models pick to run");
  app.add_option("--huge-pages", huge_text, "on, off or auto (on where the kernel allows)");
  app.add_option("--seed", seed, "seed of the key permutations");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> names;
  const std::vector<uint32_t> sizes = ParseSizes(sizes_text, &names);
  const std::vector<int> thread_counts = ParseInts(threads_text);
  const bool two = std::find(thread_counts.begin(), thread_counts.end(), 2) != thread_counts.end();

  query::MachineInfo machine = query::ReadMachine();
  query::MeasureTlb(&machine);
  const bool huge = huge_text == "on" || (huge_text == "auto" && machine.HugePagesAvailable());
  std::printf("%s", machine.Describe().c_str());
  const double calibrate_start = NowSeconds();
  const query::CostParams params = query::Calibrate(machine, huge);
  std::printf("calibration (%.1f s):\n%s", NowSeconds() - calibrate_start,
              params.Describe().c_str());
  const int max_bits_per_pass = query::MaxBitsPerPass(machine, huge);
  std::printf("fan-out bound: %d bits per pass (%s)\n", max_bits_per_pass,
              huge ? "L2 lines; huge pages lift the TLB bound" : "TLB entries and L2 lines");

  nlohmann::json json;
  json["max_bits_per_pass"] = max_bits_per_pass;
  json["huge_pages"] = huge ? "on" : "off";
  json["tlb_l1_entries"] = machine.tlb_l1_entries;
  json["tlb_l2_entries"] = machine.tlb_l2_entries;
  json["tlb_source"] = machine.tlb_source;
  json["lat_mem_ns"] = params.lat_mem_ns;
  json["lat_tlb_ns"] = params.lat_tlb_ns;
  json["miss_mem_ns"] = params.miss_mem_ns;
  json["miss_tlb_ns"] = params.miss_tlb_ns;
  double model_error = 0, paper_error = 0;
  query::PageBuffer<Bun> left, right;
  for (size_t si = 0; si < sizes.size(); ++si) {
    const uint32_t n = sizes[si];
    const std::string& name = names[si];
    const double c = n;
    MakeRelations(n, seed + si, &left, &right, huge);
    query::JoinScratch scratch;
    query::JoinIndex index;
    // Untimed runs that fault in the hash table, the clustered copies and the result.
    const Config plain{JoinAlgorithm::kPlainHash, 0, 1, 0};
    Run(plain, 1, 1, left, right, huge, &scratch, &index);
    Run({JoinAlgorithm::kPartitionedHash, 2, 2, 0}, 1, 1, left, right, huge, &scratch, &index);
    const int log_c = static_cast<int>(std::lround(std::log2(c)));
    const int l2_rule = std::max(
        1, static_cast<int>(std::ceil(std::log2(c * 16 / static_cast<double>(machine.l2_bytes)))));
    std::vector<Config> configs = {plain};
    for (const Config& x :
         Candidates(params, JoinAlgorithm::kPartitionedHash, c, max_bits_per_pass, keep, l2_rule)) {
      configs.push_back(x);
    }
    for (const Config& x :
         Candidates(params, JoinAlgorithm::kRadix, c, max_bits_per_pass, keep, log_c - 3)) {
      configs.push_back(x);
    }
    std::printf("\n%s tuples a side (%u); anonymous huge pages in use: %lld MiB\n", name.c_str(), n,
                static_cast<long long>(query::AnonHugePagesKib() / 1024));
    std::printf("  %-6s %4s %3s %12s %12s %12s %8s %12s\n", "join", "B", "P", "measured ms",
                "cluster ms", "model ms", "error", "paper ms");
    Config best_of[3] = {plain, plain, plain};
    double best_ms[3] = {1e300, 1e300, 1e300}, best_paper[3] = {0, 0, 0};
    for (Config& x : configs) {
      x.predicted_ms = PredictMs(params, x, c);
      const Measured m = Run(x, 1, repeat, left, right, huge, &scratch, &index);
      const double error = 100 * (x.predicted_ms - m.ms) / m.ms;
      const double paper_ms = PaperPredictMs(params, x, c);
      std::printf("  %-6s %4d %3d %12.1f %12.1f %12.1f %7.1f%% %12.1f\n",
                  query::JoinAlgorithmName(x.algorithm), x.bits, x.passes, m.ms, m.cluster_ms,
                  x.predicted_ms, error, paper_ms);
      std::fflush(stdout);
      const int a = static_cast<int>(x.algorithm);
      if (m.ms < best_ms[a]) best_ms[a] = m.ms, best_of[a] = x, best_paper[a] = paper_ms;
    }
    const int kp = static_cast<int>(JoinAlgorithm::kPartitionedHash);
    const int kr = static_cast<int>(JoinAlgorithm::kRadix);
    const int winner = best_ms[kp] <= best_ms[kr] ? kp : kr;
    json["hash_ms_" + name] = best_ms[0];
    json["hash_pred_ms_" + name] = best_of[0].predicted_ms;
    json["phash_ms_" + name] = best_ms[kp];
    json["phash_pred_ms_" + name] = best_of[kp].predicted_ms;
    json["phash_bits_" + name] = best_of[kp].bits;
    json["phash_passes_" + name] = best_of[kp].passes;
    json["radix_ms_" + name] = best_ms[kr];
    json["radix_pred_ms_" + name] = best_of[kr].predicted_ms;
    json["radix_bits_" + name] = best_of[kr].bits;
    json["radix_passes_" + name] = best_of[kr].passes;
    json["best_algo_" + name] = query::JoinAlgorithmName(best_of[winner].algorithm);
    json["best_bits_" + name] = best_of[winner].bits;
    json["best_passes_" + name] = best_of[winner].passes;
    json["best_ms_" + name] = best_ms[winner];
    json["best_pred_ms_" + name] = best_of[winner].predicted_ms;
    // The sweep's runs lie minutes apart on a shared machine: the headline ratio comes from
    // the plain join and the winner run again, alternating.
    const auto [plain_alt, best_alt] = RunAlternating(best_of[0], 1, best_of[winner], 1, repeat,
                                                      left, right, huge, &scratch, &index);
    json["hash_alt_ms_" + name] = plain_alt.ms;
    json["best_alt_ms_" + name] = best_alt.ms;
    json["radix_speedup_" + name] = plain_alt.ms / best_alt.ms;
    for (int a : {0, kp, kr}) {
      model_error =
          std::max(model_error, 100 * std::abs(best_of[a].predicted_ms - best_ms[a]) / best_ms[a]);
      paper_error = std::max(paper_error, 100 * std::abs(best_paper[a] - best_ms[a]) / best_ms[a]);
    }
    std::printf("  best: %s B=%d P=%d, %.2fx the plain hash join (%.1f ms against %.1f ms in "
                "alternating runs)\n",
                query::JoinAlgorithmName(best_of[winner].algorithm), best_of[winner].bits,
                best_of[winner].passes, plain_alt.ms / best_alt.ms, best_alt.ms, plain_alt.ms);
    if (two) {
      for (int a : {0, kp, kr}) {
        const auto [m1, m2] = RunAlternating(best_of[a], 1, best_of[a], 2, repeat, left, right,
                                             huge, &scratch, &index);
        const std::string algo = query::JoinAlgorithmName(best_of[a].algorithm);
        json[algo + "_2t_ms_" + name] = m2.ms;
        json[algo + "_2t_speedup_" + name] = m1.ms / m2.ms;
        std::printf("  2 workers: %-6s B=%d P=%d %10.1f ms (cluster %.1f), %.2fx 1 worker's "
                    "%.1f ms (cluster %.1f) in alternating runs\n",
                    algo.c_str(), best_of[a].bits, best_of[a].passes, m2.ms, m2.cluster_ms,
                    m1.ms / m2.ms, m1.ms, m1.cluster_ms);
      }
    }
  }
  json["model_error_pct"] = model_error;
  json["paper_model_error_pct"] = paper_error;
  json["anon_huge_mib"] = query::AnonHugePagesKib() / 1024;
  PrintJsonLine(json);
  return 0;
}
