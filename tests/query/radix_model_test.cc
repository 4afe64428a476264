// The cost models of the radix-cluster joins (query/radix_model.h) on fixed constants: more
// work is priced higher, and the calibrated models read their kernels' curves in between
// the measured points. Their accuracy against the clock is the benchmark's to measure
// (`tools/run bench radix-join`, `model_error_pct`).
#include "query/radix_model.h"

#include "tests/test_util.h"

namespace sm::query {
namespace {

TEST_CASE("radix cost models price more work higher", "[unit][query]") {
  CostParams p;  // the defaults: no calibration, the paper's models
  const double c = 1 << 24;
  // A pass more over the same few bits only adds work.
  REQUIRE(RadixClusterCostNs(p, 1, 4, c) < RadixClusterCostNs(p, 2, 4, c));
  // Twice the tuples cost at least about twice as much.
  REQUIRE(PlainHashJoinTotalNs(p, 2 * c) > 1.9 * PlainHashJoinTotalNs(p, c));
  REQUIRE(RadixClusterCostNs(p, 2, 12, 2 * c) > 1.9 * RadixClusterCostNs(p, 2, 12, c));
  // The radix join's nested loops grow with the cluster size.
  REQUIRE(RadixJoinCostNs(p, 10, c) > RadixJoinCostNs(p, 20, c));
  // A hash join over clusters that fit a cache misses less than one over the whole relation.
  REQUIRE(PartitionedHashJoinCostNs(p, 14, c) < PartitionedHashJoinCostNs(p, 0, c));
  for (int bits = 0; bits <= 24; ++bits) {
    REQUIRE(PartitionedHashJoinTotalNs(p, 2, std::max(bits, 2), c) > 0);
    REQUIRE(RadixJoinTotalNs(p, 3, std::max(bits, 3), c) > 0);
  }
}

TEST_CASE("calibrated radix cost models read their curves", "[unit][query]") {
  CostParams p;
  p.probe_ns_by_cluster_bytes = {{1e3, 10}, {1e6, 100}};
  p.pair_ns_by_bytes = {{1e6, 50}, {1e9, 250}};
  const double c = 1 << 20;
  // Clusters of 64 tuples (about 1 KiB with their table) lie on the measured part.
  const double inside = PartitionedHashJoinCostNs(p, 14, c) / c;
  REQUIRE(inside >= 10);
  REQUIRE(inside <= 100);
  // The whole relation (about 17 MiB) lies beyond it: the last point plus the growth of two
  // dependent pairs per tuple.
  const double beyond = PartitionedHashJoinCostNs(p, 0, c) / c;
  REQUIRE(beyond > 100);
  REQUIRE(beyond < 100 + 2 * 200);
  p.pass_l3_ns.assign(15, 5);
  p.pass_mem_ns.assign(15, 8);
  // Input and output beyond the L3: the curve measured beyond it, per tuple and pass.
  const double big = double(p.machine.l3_bytes);
  REQUIRE(RadixClusterCostNs(p, 2, 12, big) >= 2 * 8 * big);
}

}  // namespace
}  // namespace sm::query
