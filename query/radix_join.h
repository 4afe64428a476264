// Radix-cluster joins over binary relations of 8-byte [key, oid] tuples, after Manegold,
// Boncz and Kersten ("Optimizing database architecture for the new bottleneck: memory access",
// VLDB Journal 2000): the radix-cluster, the partitioned hash join and the radix (nested-loop)
// join on its clusters, and a plain bucket-chained hash join as the baseline. Every join
// produces a join index: the (left oid, right oid) pairs of the matching tuples.
//
// Owns: nothing between calls; a call allocates its clustered copies and hash tables and
// frees them before it returns (or keeps them in a caller's JoinScratch to reuse).
//
// The radix-cluster clusters a relation on the lowest `bits` bits of RadixHash(key) in
// `passes` passes; pass p splits every cluster of the previous pass on the next B_p bits,
// most significant first, with the bits spread evenly (SpreadBits). Each pass makes a
// histogram of its input cluster, turns it into offsets and scatters; the last pass's offsets
// are the cluster bounds, so no scan of radix bits is needed to find them.
//
// Invariants:
//   1. A clustered relation is a permutation of its input.
//   2. It is ordered on the radix bits: cluster c = [bounds[c], bounds[c + 1]) holds exactly
//      the tuples whose RadixHash(key) has c in its lowest `bits` bits; bounds[0] == 0 and
//      bounds[2^bits] == the cardinality.
//   3. A join emits each matching (left, right) pair exactly once, and nothing else.
//   4. With `threads` workers, pass 1 splits the input in contiguous halves whose histograms
//      give every worker disjoint write ranges; later passes and the joins split the clusters,
//      so no two workers write the same cluster or the same output part. The plain hash
//      join's workers build its one table together (a bucket's head swapped in by
//      compare-and-swap), then probe disjoint shares of the left relation.
//
// Threads: the operators run on std::thread workers of their own (JoinOptions::threads),
// started and joined inside one call. They are in-memory operators over arrays that never
// block, take no latch and reach no engine code, so they need neither fibers nor the worker
// pool's scheduling; a call returns only after its workers have ended.
//
// Thread/fiber safety: the functions are reentrant; a JoinIndex or JoinScratch belongs to one
// call at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sm/common/status.h"

namespace sm::query {

struct Bun {
  uint32_t key;
  uint32_t oid;
};
static_assert(sizeof(Bun) == 8, "the paper's 8-byte [key, oid] tuple");

struct OidPair {
  uint32_t left;
  uint32_t right;
};
static_assert(sizeof(OidPair) == 8);

// The radix bits come from a mixed key, so skewed or sequential keys still spread over the
// clusters. The finalizer of MurmurHash3 (32-bit): a bijection, so distinct keys never collide.
inline uint32_t RadixHash(uint32_t key) {
  key ^= key >> 16;
  key *= 0x85ebca6bu;
  key ^= key >> 13;
  key *= 0xc2b2ae35u;
  key ^= key >> 16;
  return key;
}

inline constexpr int kMaxRadixBits = 28;
inline constexpr int kMaxPasses = 4;
inline constexpr int kMaxThreads = 64;

// B_p of each pass: `bits` spread over `passes` as evenly as they go, the larger shares first.
std::vector<int> SpreadBits(int bits, int passes);

enum class JoinAlgorithm {
  kPlainHash,        // bucket-chained hash table on the whole right relation; no clustering
  kPartitionedHash,  // radix-cluster both, then a hash table per right cluster
  kRadix,            // radix-cluster both, then a nested loop per cluster pair
};
const char* JoinAlgorithmName(JoinAlgorithm algorithm);

struct JoinOptions {
  int bits = 0;    // B: 2^B clusters (ignored by kPlainHash)
  int passes = 1;  // P: 1 <= P <= max(B, 1)
  int threads = 1;
  // Ask for transparent huge pages on the clustered copies and hash tables (see machine.h):
  // a cluster pass then writes to regions a few TLB entries cover.
  bool huge_pages = true;
};

// The join index: the pairs of each worker in its own part (concatenating them would cost a
// copy of the result that no consumer needs).
struct JoinIndex {
  std::vector<std::vector<OidPair>> parts;

  size_t size() const;
  std::vector<OidPair> Flatten() const;
  // Empties the parts and makes `count` of them. Every part keeps its capacity, also one set
  // aside while a call makes fewer parts, so that an index reused by calls on different worker
  // counts writes to memory it has already faulted in.
  void Reset(int count);

 private:
  std::vector<std::vector<OidPair>> spare_;  // parts beyond the last Reset's count, emptied
};

// An array in anonymous pages of its own, left uninitialized (a clustered copy is written in
// full before it is read, so zeroing it would be one more pass over memory), and advised to
// use transparent huge pages on request. Kept across calls, it is reused without new faults.
template <class T>
class PageBuffer {
 public:
  PageBuffer() = default;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  PageBuffer(PageBuffer&& other) noexcept { Swap(other); }
  PageBuffer& operator=(PageBuffer&& other) noexcept {
    Swap(other);
    return *this;
  }
  ~PageBuffer() { Free(); }

  // Makes room for `count` elements (contents undefined); false if memory ran out.
  [[nodiscard]] bool Resize(size_t count, bool huge_pages);
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  std::span<const T> span() const { return {data_, size_}; }

 private:
  void Free();
  void Swap(PageBuffer& other) {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_bytes_, other.capacity_bytes_);
  }
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_bytes_ = 0;
};

// A relation clustered on `bits` radix bits (invariants 1 and 2).
struct ClusteredRelation {
  int bits = 0;
  PageBuffer<Bun> tuples;
  PageBuffer<Bun> scratch;       // the other buffer of a multi-pass cluster
  std::vector<uint32_t> bounds;  // 2^bits + 1 entries

  size_t cluster_count() const { return bounds.empty() ? 0 : bounds.size() - 1; }
  // Walks the whole relation: invariant 2 (not 1, which needs the input).
  bool CheckOrdered() const;
};

// The memory a join works in: clustered copies and per-worker hash tables. A caller that joins
// repeatedly keeps one so that later calls find their pages mapped.
struct JoinScratch {
  ClusteredRelation left;
  ClusteredRelation right;
  struct Worker {
    PageBuffer<uint32_t> heads;  // bucket -> 1 + index of the chain's first tuple, 0 if empty
    PageBuffer<uint32_t> next;   // tuple -> 1 + index of the next tuple in its chain
  };
  std::vector<Worker> workers;
};

// Time spent per phase by the last call, for the cost models' validation.
struct JoinStats {
  double cluster_seconds = 0;
  double join_seconds = 0;
};

// Clusters `input` (invariants 1, 2, 4). InvalidArgument for bits outside [0, kMaxRadixBits],
// passes outside [1, kMaxPasses] or above max(bits, 1), threads outside [1, kMaxThreads], or a
// relation of 2^32 tuples or more.
[[nodiscard]] Status RadixCluster(std::span<const Bun> input, const JoinOptions& options,
                                  ClusteredRelation* out);

// Joins left and right on key with `algorithm` (invariant 3); `out` is reset first. The
// pairs of one part come in cluster order, and within a cluster in left order.
[[nodiscard]] Status Join(JoinAlgorithm algorithm, std::span<const Bun> left,
                          std::span<const Bun> right, const JoinOptions& options, JoinIndex* out,
                          JoinStats* stats = nullptr, JoinScratch* scratch = nullptr);

// The joins of two relations clustered on the same bits, without the clustering.
[[nodiscard]] Status JoinClustered(JoinAlgorithm algorithm, const ClusteredRelation& left,
                                   const ClusteredRelation& right, const JoinOptions& options,
                                   JoinIndex* out, JoinScratch* scratch = nullptr);

}  // namespace sm::query
