// Multithreaded operators over fixed-width NSM tuples, after Krikellas, Cintra and Viglas
// ("Multithreaded query execution on multicore processors", VLDB 2009): the framework of
// their Figure 2 (split, stage, a team over disjoint partitions, per-thread outputs), the
// staging primitives (scan + selection + projection, hash / range / value-map partitioning
// with sorted partition pages, AlphaSort-style parallel sort), the joins (partition,
// sort-merge, map), the aggregations (sort, partition, map) and the choice rule of their
// section 5. The cost model of these operators is query/mt_model.h.
//
// Owns: a WorkerPool owns its threads; every operator call allocates its staged copies and
// frees them before it returns, except what it hands back in its result.
//
// Data flow of one operator:
//   1. Split: the table's tuples are cut into `threads` disjoint contiguous ranges.
//   2. Stage: worker t scans its range, applies the Selection and copies only the key and the
//      value (the projection, a Kv of 8 bytes) into its own partition buffers. A partition
//      buffer grows a page (kPageTuples) at a time and every full page is sorted on the key
//      while it is still in the cache ("busier is faster"), so a partition is a list of
//      sorted pages, merged later by a heap merge.
//   3. Process: a new round of the same team takes disjoint partitions (or key ranges); each
//      worker writes to its own output buffer. The outputs together are the result.
//
// Invariants:
//   1. Each staged tuple is written by exactly one worker, into that worker's buffers; no two
//      workers write one buffer, and per-worker state is alignas(64) (no false sharing).
//   2. A staged partition page holds kPageTuples tuples (the last of a buffer may hold fewer)
//      and, when pages are sorted, is ordered on the key.
//   3. An aggregation emits each distinct key of the selected tuples once, with the count and
//      the sum of its selected values; a join emits each matching (outer, inner) pair once.
//   4. The only shared writable structure is the map directory, whose slots change from empty
//      to a key once by compare-and-swap and never again.
//
// Threads: workers are std::threads of a small pool (WorkerPool) started once and reused.
// These operators work on in-memory arrays, take no latch or lock of the engine and never
// block inside a phase, so they need no transaction and no fiber; on the engine's fibers a
// phase would hold its worker until it ended anyway, and the fibers of one worker share one
// core, which is exactly what the operators must not do. A pool's round (Run) is the only
// synchronization: one hand-off to start and one to finish.
//
// Thread/fiber safety: a WorkerPool runs one round at a time (Run is not reentrant); the
// operators are reentrant given distinct pools; results belong to one caller.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "query/machine.h"
#include "sm/common/status.h"

namespace sm::query::mt {

inline constexpr int kMaxThreads = 64;
inline constexpr uint32_t kPageBytes = 4096;

// The staged (projected) tuple: the key and the value column.
struct Kv {
  uint32_t key;
  uint32_t value;
};
static_assert(sizeof(Kv) == 8);
inline constexpr uint32_t kPageTuples = kPageBytes / sizeof(Kv);

// A team of `threads` workers: the caller plus threads - 1 std::threads started once.
class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  int threads() const { return threads_; }
  // Runs fn(0 .. threads - 1), fn(0) on the calling thread, and returns when all have ended.
  void Run(const std::function<void(int)>& fn);

 private:
  void Loop(int index);

  int threads_ = 1;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* job_ = nullptr;  // guarded by mu_
  uint64_t round_ = 0;                             // guarded by mu_
  int running_ = 0;                                // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  std::vector<std::thread> workers_;
};

// A table of fixed-width NSM tuples: the key (uint32) at byte 0, the value (uint32) at byte
// 4, then filler up to tuple_bytes, as the rest of a wide row that staging must not copy.
class NsmTable {
 public:
  static constexpr uint32_t kMinTupleBytes = 8;

  // InvalidArgument if tuple_bytes < kMinTupleBytes or not a multiple of 4.
  [[nodiscard]] static Status Make(uint32_t tuple_bytes, size_t count, NsmTable* out);

  uint32_t tuple_bytes() const { return tuple_bytes_; }
  size_t size() const { return count_; }
  uint64_t bytes() const { return uint64_t{tuple_bytes_} * count_; }
  const std::byte* Row(size_t i) const { return data_.get() + i * tuple_bytes_; }
  Kv Get(size_t i) const;
  void Set(size_t i, Kv kv);

 private:
  uint32_t tuple_bytes_ = kMinTupleBytes;
  size_t count_ = 0;
  std::unique_ptr<std::byte[]> data_;
};

// The selection pushed into staging: keep the tuples whose value is below value_below.
struct Selection {
  uint64_t value_below = uint64_t{1} << 32;  // all tuples
  bool Keep(uint32_t value) const { return value < value_below; }
};

// The disjoint contiguous range of worker t of `threads` over `count` tuples.
struct Split {
  size_t begin;
  size_t end;
};
Split SplitOf(size_t count, int t, int threads);

// A buffer written by one worker only, on cache lines of its own.
template <class T>
struct alignas(64) PerThread {
  std::vector<T> items;
};

// ---- Scan, select, project -------------------------------------------------------------

// The selected tuples' (key, value), worker t's share in out[t] in table order.
void ScanSelect(WorkerPool& pool, const NsmTable& table, Selection sel,
                std::vector<PerThread<Kv>>* out);

// ---- Partitioning ----------------------------------------------------------------------

enum class PartitionKind { kHash, kRange, kValueMap };

// The map directory of value mapping: an open-addressing table of keys, shared by all
// workers. A slot goes from empty to one key by compare-and-swap (invariant 4), so a lookup
// needs no lock; the slot's index is the key's partition. Holds at most capacity * 3 / 4 keys.
class MapDirectory {
 public:
  // capacity: a power of two >= 4 * kMaxThreads.
  explicit MapDirectory(uint32_t capacity);
  uint32_t capacity() const { return capacity_; }
  // The slot of `key`, inserted if absent; -1 once the directory is full.
  int64_t Slot(uint32_t key);
  // The key in `slot`, if it holds one.
  bool KeyAt(uint32_t slot, uint32_t* key) const;
  uint32_t used() const { return used_.load(std::memory_order_relaxed); }
  // The capacity to hold `distinct` keys.
  static uint32_t CapacityFor(uint64_t distinct);

 private:
  uint32_t capacity_;
  uint32_t limit_;
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;  // 0: empty; else (1 << 32) | key
  alignas(64) std::atomic<uint32_t> used_{0};
};

struct PartitionSpec {
  PartitionKind kind = PartitionKind::kHash;
  int fanout = 0;                      // kHash and kRange; kValueMap uses the directory's
  std::vector<uint32_t> range_splits;  // kRange: fanout - 1 ascending keys
  MapDirectory* directory = nullptr;   // kValueMap
  bool sort_pages = true;
};

// The staged partitions: worker t's share of partition p is runs[t].items[p], a list of
// pages of kPageTuples (invariant 2).
struct Partitions {
  int fanout = 0;
  bool pages_sorted = false;
  struct alignas(64) Worker {
    std::vector<std::vector<Kv>> items;
  };
  std::vector<Worker> runs;

  size_t PartitionSize(int p) const;
  size_t size() const;
  // Every page sorted when pages_sorted, every tuple in the partition its key routes to.
  bool CheckInvariants(const PartitionSpec& spec) const;
};

// The partition of `key` under `spec` (the routing every staging worker applies).
int PartitionOf(const PartitionSpec& spec, uint32_t key);

// Stages the selected tuples of `table` into spec's partitions. InvalidArgument for a fanout
// below 1, range splits that are not fanout - 1 ascending keys, or a missing directory;
// NotSupported when the directory fills.
[[nodiscard]] Status Partition(WorkerPool& pool, const NsmTable& table, Selection sel,
                               const PartitionSpec& spec, Partitions* out);

// ---- Sorting ---------------------------------------------------------------------------

// Sorts the selected tuples on the key (AlphaSort: each worker quicksorts cache-sized blocks
// of its split; then each worker heap-merges one key range of every block). out[t] is the
// t-th range; their concatenation is sorted. block_tuples 0 takes the L2 default.
void ParallelSort(WorkerPool& pool, const NsmTable& table, Selection sel,
                  const MachineInfo& machine, std::vector<PerThread<Kv>>* out,
                  size_t block_tuples = 0);

// ---- Aggregation -----------------------------------------------------------------------

// One group: GROUP BY key, COUNT(*), SUM(value).
struct Group {
  uint32_t key;
  uint32_t count;
  uint64_t sum;
};
static_assert(sizeof(Group) == 16);

struct GroupResult {
  std::vector<PerThread<Group>> parts;
  size_t size() const;
  std::vector<Group> SortedGroups() const;  // all parts, ordered on the key
};

enum class AggAlgorithm {
  kSort,       // AlphaSort with the aggregates computed in the merge
  kPartition,  // hash partitions of sorted pages, aggregated while merging each partition
  kMap,        // one pass over the input: map directory plus private aggregate arrays
  kMerge,      // one pass over input already sorted on the key
};
const char* AggAlgorithmName(AggAlgorithm a);

struct AggOptions {
  int fanout = 0;             // kPartition; 0 picks from the cache sizes
  uint64_t map_distinct = 0;  // kMap: directory sized for this many keys (0: 1024)
};

// Aggregates the selected tuples (invariant 3). kMerge requires the table sorted on the key
// (InvalidArgument when a split is not); kMap returns NotSupported when more distinct keys
// come than the directory holds.
[[nodiscard]] Status Aggregate(AggAlgorithm algorithm, WorkerPool& pool, const NsmTable& table,
                               Selection sel, const MachineInfo& machine, const AggOptions& options,
                               GroupResult* out);

// The choice rule of the paper's section 5: merge when the input is sorted on the key, map
// when the distinct keys' directory and aggregate rows fit the L1 data cache, partition
// otherwise.
AggAlgorithm ChooseAggregation(uint64_t distinct_estimate, bool sorted_on_key,
                               const MachineInfo& machine);

// The partition fanout for staging `tuples` tuples so that one partition takes about
// |L2| / (2 * threads) bytes, doubled for the variance of partition sizes; a power of two.
int FanoutFor(const MachineInfo& machine, int threads, size_t tuples);

// ---- Joins -----------------------------------------------------------------------------

struct JoinRow {
  uint32_t key;
  uint32_t outer_value;
  uint32_t inner_value;
};

enum class MtJoinAlgorithm {
  kPartition,  // hash partitions of sorted pages, merged into L2 buffers, then merge-joined
  kSortMerge,  // parallel sort of both inputs on shared key ranges, then merge-joined
  kMap,        // value-mapped partitions, crossed per key (few distinct keys only)
};
const char* MtJoinAlgorithmName(MtJoinAlgorithm a);

struct MtJoinOptions {
  bool materialize = true;    // false: count the pairs and sum them, emit nothing
  int fanout = 0;             // kPartition; 0: FanoutFor the larger input
  uint64_t map_distinct = 0;  // kMap: directory sized for this many keys (0: 1024)
};

struct JoinResult {
  struct alignas(64) Part {
    std::vector<JoinRow> rows;
    uint64_t count = 0;
    uint64_t checksum = 0;  // sum over the pairs of key + outer value + inner value
  };
  std::vector<Part> parts;
  uint64_t count() const;
  uint64_t checksum() const;
};

// Joins the selected tuples of outer and inner on the key (invariant 3).
[[nodiscard]] Status Join(MtJoinAlgorithm algorithm, WorkerPool& pool, const NsmTable& outer,
                          Selection outer_sel, const NsmTable& inner, Selection inner_sel,
                          const MachineInfo& machine, const MtJoinOptions& options,
                          JoinResult* out);

}  // namespace sm::query::mt
