// Cost models of the radix-cluster joins (query/radix_join.h), after section 4 of Manegold,
// Boncz and Kersten (VLDB Journal 2000): the radix-cluster T_c(P, B, C), the partitioned hash
// join T_h(B, C) and the radix join T_r(B, C), each CPU work per tuple plus misses of every
// cache level and of the TLB times their cost; and the calibration that times those costs on
// the machine it runs on, as the paper's calibration tool does.
//
// Where the models differ from the paper's, and why:
//   - Three cache levels, not two: a miss of level i is priced at the cost of reaching level
//     i + 1 (L2, L3, memory), so a tuple that misses all three pays all three increments.
//   - Misses are priced at their cost under overlap, not at the latency of one dependent load:
//     the CPU keeps many misses in flight (the paper's degree of overlap q, section 2).
//     A cluster pass's scattered writes are independent and are priced at the cost of
//     independent random loads; a hash probe's loads depend on one another (bucket head, then
//     tuple) and overlap only across probes, so they are priced at the cost of a dependent pair.
//     The calibration times the latency by pointer-chasing as well, and reports all three.
//   - The sequential terms (each pass reads and writes the relation once) are priced as bytes
//     streamed, timed by a copy loop, rather than per line at a latency.
//   - The radix-cluster's write-back TLB term is left out: the caches are physically tagged,
//     so writing a line back needs no translation.
//   - The radix join walks per-cluster bounds, so it has a per-cluster cost, w_rc.
//   - With huge pages the TLB covers entries x the huge page size.
//
// The paper's models, so priced, miss by a factor on a machine whose misses overlap this much
// and whose memory cost grows with the footprint (nested paging under a hypervisor): the
// benchmark's `paper_model_error_pct` measures by how much. The calibrated models keep the
// same terms but read the memory part of a cluster pass (by fan-out) and of a hash join (by
// cluster bytes) off the operators' kernels timed at one calibration size each, and carry
// them to larger footprints by how the cost of a random load (a pass's scattered line) or of a
// dependent pair of loads (a probe) grows with the region's bytes; `model_error_pct` measures
// those.
//
// Thread/fiber safety: the models are pure functions; Calibrate allocates arrays far larger
// than the caches and runs its microbenchmarks on the calling thread, so it belongs to a
// benchmark's start, not to query execution.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "query/machine.h"
#include "query/radix_join.h"

namespace sm::query {

struct CostParams {
  MachineInfo machine;
  bool huge_pages = false;  // whether the joins' arrays are in huge pages
  // Latencies of one dependent load, ns: the extra cost of reaching the level named.
  double lat_l2_ns = 4, lat_l3_ns = 15, lat_mem_ns = 80, lat_tlb_ns = 20;
  // Costs of one independent (overlapped) miss, ns: what the models charge.
  double miss_l2_ns = 1, miss_l3_ns = 3, miss_mem_ns = 10, miss_tlb_ns = 5;
  // Costs of a miss in a pair of dependent loads, pairs independent, ns: what the hash joins'
  // probes are charged.
  double chain_l2_ns = 2, chain_l3_ns = 8, chain_mem_ns = 30, chain_tlb_ns = 10;
  // Streaming (read once, write once), ns per byte read, by where the bytes live.
  double stream_l2_ns_per_byte = 0.05, stream_l3_ns_per_byte = 0.1, stream_mem_ns_per_byte = 0.2;
  // CPU work, ns, timed on L1-resident inputs (the paper's w constants).
  double w_c = 2;           // radix-cluster, per tuple and pass
  double w_h = 10;          // partitioned hash join: build, probe and result, per tuple
  double w_h_cluster = 20;  // per cluster: the table's setup
  double w_r = 0.5;         // radix join: per comparison
  double w_r_result = 2;    // per tuple (result and loop)
  double w_rc = 5;          // per cluster pair

  // The timed kernels (the calibrated model): ns per tuple of one cluster pass at fan-out
  // 2^k (index k, 1..14) for a pass whose input and output fit the L3 cache (`_l3`) and for
  // one that does not (`_mem`); and ns per tuple of the partitioned hash join's join phase by
  // the bytes of a cluster with its table (pairs of bytes and ns, bytes ascending).
  std::vector<double> pass_l3_ns, pass_mem_ns;
  std::vector<std::pair<double, double>> probe_ns_by_cluster_bytes;
  // ns per independent load and per dependent pair of loads over regions of growing bytes
  // (pairs of bytes and ns), beyond the L3: how a miss's cost grows with the footprint (on a
  // virtual machine, nested paging makes it grow well past the TLB's reach). The kernels'
  // costs are extrapolated to footprints beyond the calibration's with them.
  std::vector<std::pair<double, double>> load_ns_by_bytes, pair_ns_by_bytes;

  std::string Describe() const;
};

// Measures the latencies, miss costs and CPU constants; `machine` should carry the pointer-chased
// TLB (MeasureTlb). Prints nothing.
CostParams Calibrate(const MachineInfo& machine, bool huge_pages);

// Two models of each operator. The paper's (Paper*): CPU work plus misses counted per level
// times their calibrated costs. The calibrated one: the same terms, with a cluster pass's and
// a hash join's memory costs read off the kernels timed at calibration sizes
// (`pass_*_ns`, `probe_ns_by_cluster_bytes`) by fan-out and cluster bytes, and extrapolated to
// other cardinalities; the radix join's is the paper's. The benchmark reports both.
//
// Predicted nanoseconds for C tuples (each relation of a join has C tuples, the result C).
double RadixClusterCostNs(const CostParams& p, int passes, int bits, double c);
double PartitionedHashJoinCostNs(const CostParams& p, int bits, double c);  // join phase only
double RadixJoinCostNs(const CostParams& p, int bits, double c);            // join phase only
// Whole joins: clustering both relations plus the join phase; the plain hash join is the
// partitioned one on one cluster, without clustering.
double PlainHashJoinTotalNs(const CostParams& p, double c);
double PaperRadixClusterCostNs(const CostParams& p, int passes, int bits, double c);
double PaperPartitionedHashJoinCostNs(const CostParams& p, int bits, double c);
double PartitionedHashJoinTotalNs(const CostParams& p, int passes, int bits, double c);
double RadixJoinTotalNs(const CostParams& p, int passes, int bits, double c);

// The most radix bits one cluster pass may split on: 2^B clusters at most the TLB's entries
// (for the pages in use; huge pages lift that bound) and the L2 cache's lines, so that every
// cluster being written keeps its page translated and its line cached.
int MaxBitsPerPass(const MachineInfo& machine, bool huge_pages);

// A hash join the models price: the plain one (bits 0) or a partitioned one on `bits` bits in
// `passes` passes, with its predicted nanoseconds.
struct HashJoinChoice {
  JoinAlgorithm algorithm = JoinAlgorithm::kPlainHash;
  int bits = 0;
  int passes = 1;
  double predicted_ns = 0;
};
// The cheapest by the models for c tuples a side: the plain hash join or the partitioned hash
// join at the (B, P) priced lowest, with at most MaxBitsPerPass bits in a pass.
HashJoinChoice CheapestHashJoin(const CostParams& p, double c);

}  // namespace sm::query
