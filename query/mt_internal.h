// Pieces of the multithreaded operators (query/mt_ops.h) shared by mt_ops.cc and
// mt_agg_join.cc and not meant for users: the heap merge of sorted runs and the sorted blocks
// of the parallel sort's first phase.
//
// Invariants:
//   1. A RunMerger's runs are each sorted on the key; Next returns their tuples in key order.
//   2. SortedBlocks: worker t's blocks are disjoint ranges of data[t], each sorted on the key.
//
// Thread/fiber safety: a RunMerger belongs to one worker; SortedBlocks are written in the
// sort phase by their own worker and only read afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "query/mt_ops.h"
#include "sm/common/assert.h"

namespace sm::query::mt {

// The paper's merge heap: the current tuple of every run, the smallest on top.
class RunMerger {
 public:
  void Clear() { heap_.clear(); }
  void Add(const Kv* begin, const Kv* end);  // an empty run is dropped
  void Build();                              // after the last Add
  size_t remaining_runs() const { return heap_.size(); }

  bool Next(Kv* out) {
    if (heap_.empty()) return false;
    Cursor& top = heap_[0];
    *out = *top.cur;
    if (++top.cur == top.end) {
      top = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return true;
    }
    SiftDown(0);
    return true;
  }

 private:
  struct Cursor {
    const Kv* cur;
    const Kv* end;
  };
  void SiftDown(size_t i);
  std::vector<Cursor> heap_;
};

// Every page of partition p, from every worker, as runs of `merger`.
void AddPartitionRuns(const Partitions& parts, int p, RunMerger* merger);

struct SortedBlocks {
  std::vector<PerThread<Kv>> data;
  std::vector<PerThread<Split>> blocks;
};

size_t DefaultBlockTuples(const MachineInfo& machine);
// Phase 1 of the sort: worker t selects and projects its split into data[t] and quicksorts
// it in blocks of block_tuples.
void SortBlocks(WorkerPool& pool, const NsmTable& table, Selection sel, size_t block_tuples,
                SortedBlocks* out);
// ranges - 1 ascending keys that cut the inputs' keys into `ranges` ranges of about equal
// tuple counts, from samples of the sorted blocks.
std::vector<uint32_t> RangeSplits(const std::vector<const SortedBlocks*>& inputs, int ranges);
// The part of every block of `in` in key range r: [splits[r - 1], splits[r]).
void AddRangeRuns(const SortedBlocks& in, const std::vector<uint32_t>& splits, int r,
                  RunMerger* merger);

// Crosses the outer_count outer tuples with the inner_count inner tuples of one key: the
// per-pair work of every join (counted and summed, and materialized on request).
void CrossGroup(uint32_t key, const Kv* outer, size_t outer_count, const Kv* inner,
                size_t inner_count, bool materialize, JoinResult::Part* part);

}  // namespace sm::query::mt
