// The aggregations, joins and choice rule of query/mt_ops.h, built on the staging primitives
// of mt_ops.cc: every operator stages its input (partitions of sorted pages, sorted blocks or
// a value map) in one round of the pool and processes disjoint partitions or key ranges in a
// second, each worker into its own output part.
#include <algorithm>
#include <bit>
#include <string>

#include "query/mt_internal.h"
#include "query/mt_ops.h"
#include "sm/common/assert.h"

namespace sm::query::mt {
namespace {

// Folds a key-ordered stream of tuples into groups: a group ends where the key changes.
class GroupFolder {
 public:
  explicit GroupFolder(std::vector<Group>* out) : out_(out) {}
  void Add(Kv kv) {
    if (open_ && group_.key == kv.key) {
      ++group_.count;
      group_.sum += kv.value;
      return;
    }
    SM_DASSERT(!open_ || group_.key < kv.key);
    Flush();
    group_ = {kv.key, 1, kv.value};
    open_ = true;
  }
  void Flush() {
    if (open_) out_->push_back(group_);
    open_ = false;
  }

 private:
  std::vector<Group>* out_;
  Group group_{};
  bool open_ = false;
};

void DrainInto(RunMerger* merger, GroupFolder* folder) {
  merger->Build();
  Kv kv;
  while (merger->Next(&kv)) folder->Add(kv);
  folder->Flush();
}

Status SortAggregate(WorkerPool& pool, const NsmTable& table, Selection sel,
                     const MachineInfo& machine, GroupResult* out) {
  SortedBlocks blocks;
  SortBlocks(pool, table, sel, DefaultBlockTuples(machine), &blocks);
  const int n = pool.threads();
  const std::vector<uint32_t> splits = RangeSplits({&blocks}, n);
  pool.Run([&](int t) {
    RunMerger merger;
    AddRangeRuns(blocks, splits, t, &merger);
    GroupFolder folder(&out->parts[t].items);
    DrainInto(&merger, &folder);  // the aggregates come out of the merge: no sorted copy
  });
  return Status::OK();
}

Status PartitionAggregate(WorkerPool& pool, const NsmTable& table, Selection sel,
                          const MachineInfo& machine, const AggOptions& options, GroupResult* out) {
  const int n = pool.threads();
  PartitionSpec spec;
  spec.kind = PartitionKind::kHash;
  spec.fanout = options.fanout > 0 ? options.fanout : FanoutFor(machine, n, table.size());
  Partitions parts;
  SM_TRY(Partition(pool, table, sel, spec, &parts));
  pool.Run([&](int t) {
    RunMerger merger;
    GroupFolder folder(&out->parts[t].items);
    for (int p = t; p < parts.fanout; p += n) {
      merger.Clear();
      AddPartitionRuns(parts, p, &merger);
      DrainInto(&merger, &folder);
    }
  });
  return Status::OK();
}

struct alignas(64) MapRows {
  std::vector<uint64_t> sums;
  std::vector<uint32_t> counts;
  bool full = false;
};

Status MapAggregate(WorkerPool& pool, const NsmTable& table, Selection sel,
                    const AggOptions& options, GroupResult* out) {
  const int n = pool.threads();
  MapDirectory directory(
      MapDirectory::CapacityFor(options.map_distinct ? options.map_distinct : 1024));
  const uint32_t capacity = directory.capacity();
  std::vector<MapRows> rows(n);
  pool.Run([&](int t) {
    MapRows& mine = rows[t];  // the aggregate rows are private: only the directory is shared
    mine.sums.assign(capacity, 0);
    mine.counts.assign(capacity, 0);
    const Split s = SplitOf(table.size(), t, n);
    for (size_t i = s.begin; i < s.end; ++i) {
      const Kv kv = table.Get(i);
      if (!sel.Keep(kv.value)) continue;
      const int64_t slot = directory.Slot(kv.key);
      if (slot < 0) {
        mine.full = true;
        return;
      }
      mine.sums[slot] += kv.value;
      ++mine.counts[slot];
    }
  });
  for (const auto& r : rows) {
    if (r.full) return Status::NotSupported("more distinct keys than the map directory");
  }
  pool.Run([&](int t) {  // merge the private rows, each worker over its own slots
    const Split s = SplitOf(capacity, t, n);
    for (size_t slot = s.begin; slot < s.end; ++slot) {
      Group g{0, 0, 0};
      if (!directory.KeyAt(static_cast<uint32_t>(slot), &g.key)) continue;
      for (const auto& r : rows) {
        g.count += r.counts[slot];
        g.sum += r.sums[slot];
      }
      SM_DASSERT(g.count > 0);
      out->parts[t].items.push_back(g);
    }
  });
  return Status::OK();
}

// One pass over a table sorted on the key: worker t owns the groups that start in its split.
Status MergeAggregate(WorkerPool& pool, const NsmTable& table, Selection sel, GroupResult* out) {
  const int n = pool.threads();
  std::vector<PerThread<char>> unsorted(n);
  pool.Run([&](int t) {
    const Split s = SplitOf(table.size(), t, n);
    size_t i = s.begin;
    if (i > 0) {
      const uint32_t before = table.Get(i - 1).key;
      while (i < s.end && table.Get(i).key == before) ++i;  // the previous worker's group
    }
    if (i >= s.end) return;  // the split lies inside a group that started before it
    GroupFolder folder(&out->parts[t].items);
    uint32_t last = 0;
    for (size_t j = i; j < table.size(); ++j) {
      const Kv kv = table.Get(j);
      if (j > i && kv.key < last) {
        unsorted[t].items.push_back(1);
        return;
      }
      if (j >= s.end && kv.key != last) break;  // past the split, only to finish a group
      last = kv.key;
      if (sel.Keep(kv.value)) folder.Add(kv);
    }
    folder.Flush();
  });
  for (const auto& u : unsorted) {
    if (!u.items.empty()) return Status::InvalidArgument("merge aggregation of unsorted input");
  }
  return Status::OK();
}

}  // namespace

const char* AggAlgorithmName(AggAlgorithm a) {
  switch (a) {
    case AggAlgorithm::kSort:
      return "sort";
    case AggAlgorithm::kPartition:
      return "partition";
    case AggAlgorithm::kMap:
      return "map";
    case AggAlgorithm::kMerge:
      return "merge";
  }
  return "?";
}

size_t GroupResult::size() const {
  size_t n = 0;
  for (const auto& p : parts) n += p.items.size();
  return n;
}

std::vector<Group> GroupResult::SortedGroups() const {
  std::vector<Group> all;
  for (const auto& p : parts) all.insert(all.end(), p.items.begin(), p.items.end());
  std::sort(all.begin(), all.end(), [](const Group& a, const Group& b) { return a.key < b.key; });
  return all;
}

Status Aggregate(AggAlgorithm algorithm, WorkerPool& pool, const NsmTable& table, Selection sel,
                 const MachineInfo& machine, const AggOptions& options, GroupResult* out) {
  out->parts.assign(pool.threads(), {});
  switch (algorithm) {
    case AggAlgorithm::kSort:
      return SortAggregate(pool, table, sel, machine, out);
    case AggAlgorithm::kPartition:
      return PartitionAggregate(pool, table, sel, machine, options, out);
    case AggAlgorithm::kMap:
      return MapAggregate(pool, table, sel, options, out);
    case AggAlgorithm::kMerge:
      return MergeAggregate(pool, table, sel, out);
  }
  return Status::InvalidArgument("aggregation algorithm");
}

AggAlgorithm ChooseAggregation(uint64_t distinct_estimate, bool sorted_on_key,
                               const MachineInfo& machine) {
  if (sorted_on_key) return AggAlgorithm::kMerge;
  // A group costs two directory slots (the directory stays at most half full) and a row of
  // the aggregate array; map aggregation pays off while they stay in L1.
  constexpr uint64_t kMapBytesPerGroup = 2 * sizeof(uint64_t) + sizeof(uint64_t) + 4;
  if (distinct_estimate * kMapBytesPerGroup <= machine.l1d_bytes) return AggAlgorithm::kMap;
  return AggAlgorithm::kPartition;
}

int FanoutFor(const MachineInfo& machine, int threads, size_t tuples) {
  SM_ASSERT(threads >= 1);
  const uint64_t target = std::max<uint64_t>(kPageBytes, machine.l2_bytes / (2 * threads));
  const uint64_t bytes = uint64_t{tuples} * sizeof(Kv);
  const uint64_t needed = (bytes + target - 1) / target;
  const uint64_t fanout = std::bit_ceil(std::max<uint64_t>(1, 2 * needed));
  return static_cast<int>(std::min<uint64_t>(fanout, 1 << 16));
}

// ---- Joins -----------------------------------------------------------------------------

namespace {

// Merge-joins two key-ordered buffers: each group of equal keys is crossed in L1.
void MergeJoin(const std::vector<Kv>& outer, const std::vector<Kv>& inner, bool materialize,
               JoinResult::Part* part) {
  const auto key_less = [](const Kv& a, const Kv& b) { return a.key < b.key; };
  SM_DASSERT(std::is_sorted(outer.begin(), outer.end(), key_less));
  SM_DASSERT(std::is_sorted(inner.begin(), inner.end(), key_less));
  size_t i = 0, j = 0;
  while (i < outer.size() && j < inner.size()) {
    const uint32_t k = outer[i].key;
    if (k < inner[j].key) {
      ++i;
    } else if (inner[j].key < k) {
      ++j;
    } else {
      size_t i_end = i, j_end = j;
      while (i_end < outer.size() && outer[i_end].key == k) ++i_end;
      while (j_end < inner.size() && inner[j_end].key == k) ++j_end;
      CrossGroup(k, outer.data() + i, i_end - i, inner.data() + j, j_end - j, materialize, part);
      i = i_end;
      j = j_end;
    }
  }
}

void MergeInto(RunMerger* merger, std::vector<Kv>* buffer) {
  buffer->clear();  // the worker's merge buffer: reused, so it stays in the cache
  merger->Build();
  Kv kv;
  while (merger->Next(&kv)) buffer->push_back(kv);
}

Status PartitionJoin(WorkerPool& pool, const NsmTable& outer, Selection outer_sel,
                     const NsmTable& inner, Selection inner_sel, const MachineInfo& machine,
                     const MtJoinOptions& options, JoinResult* out) {
  const int n = pool.threads();
  PartitionSpec spec;
  spec.kind = PartitionKind::kHash;
  spec.fanout = options.fanout > 0 ? options.fanout
                                   : FanoutFor(machine, n, std::max(outer.size(), inner.size()));
  Partitions outer_parts, inner_parts;
  SM_TRY(Partition(pool, outer, outer_sel, spec, &outer_parts));
  SM_TRY(Partition(pool, inner, inner_sel, spec, &inner_parts));
  pool.Run([&](int t) {
    RunMerger merger;
    std::vector<Kv> outer_buffer, inner_buffer;
    for (int p = t; p < spec.fanout; p += n) {
      merger.Clear();
      AddPartitionRuns(outer_parts, p, &merger);
      MergeInto(&merger, &outer_buffer);
      merger.Clear();
      AddPartitionRuns(inner_parts, p, &merger);
      MergeInto(&merger, &inner_buffer);
      MergeJoin(outer_buffer, inner_buffer, options.materialize, &out->parts[t]);
    }
  });
  return Status::OK();
}

Status SortMergeJoin(WorkerPool& pool, const NsmTable& outer, Selection outer_sel,
                     const NsmTable& inner, Selection inner_sel, const MachineInfo& machine,
                     const MtJoinOptions& options, JoinResult* out) {
  SortedBlocks outer_blocks, inner_blocks;
  SortBlocks(pool, outer, outer_sel, DefaultBlockTuples(machine), &outer_blocks);
  SortBlocks(pool, inner, inner_sel, DefaultBlockTuples(machine), &inner_blocks);
  // One set of key ranges for both inputs, so range r of the outer meets range r of the inner.
  const std::vector<uint32_t> splits = RangeSplits({&outer_blocks, &inner_blocks}, pool.threads());
  pool.Run([&](int t) {
    RunMerger merger;
    std::vector<Kv> outer_buffer, inner_buffer;
    AddRangeRuns(outer_blocks, splits, t, &merger);
    MergeInto(&merger, &outer_buffer);
    merger.Clear();
    AddRangeRuns(inner_blocks, splits, t, &merger);
    MergeInto(&merger, &inner_buffer);
    MergeJoin(outer_buffer, inner_buffer, options.materialize, &out->parts[t]);
  });
  return Status::OK();
}

Status MapJoin(WorkerPool& pool, const NsmTable& outer, Selection outer_sel, const NsmTable& inner,
               Selection inner_sel, const MtJoinOptions& options, JoinResult* out) {
  const int n = pool.threads();
  MapDirectory directory(
      MapDirectory::CapacityFor(options.map_distinct ? options.map_distinct : 1024));
  PartitionSpec spec;
  spec.kind = PartitionKind::kValueMap;
  spec.directory = &directory;
  spec.sort_pages = false;  // a value's partition holds one key: nothing to order
  Partitions outer_parts, inner_parts;
  SM_TRY(Partition(pool, outer, outer_sel, spec, &outer_parts));
  SM_TRY(Partition(pool, inner, inner_sel, spec, &inner_parts));
  pool.Run([&](int t) {
    const Split slots = SplitOf(directory.capacity(), t, n);
    for (size_t s = slots.begin; s < slots.end; ++s) {
      for (const auto& ow : outer_parts.runs) {
        const std::vector<Kv>& o = ow.items[s];
        if (o.empty()) continue;
        for (const auto& iw : inner_parts.runs) {
          const std::vector<Kv>& i = iw.items[s];
          CrossGroup(o[0].key, o.data(), o.size(), i.data(), i.size(), options.materialize,
                     &out->parts[t]);
        }
      }
    }
  });
  return Status::OK();
}

}  // namespace

void CrossGroup(uint32_t key, const Kv* outer, size_t outer_count, const Kv* inner,
                size_t inner_count, bool materialize, JoinResult::Part* part) {
  SM_DASSERT(outer_count == 0 || outer[0].key == key);
  SM_DASSERT(inner_count == 0 || inner[0].key == key);
  // The sums stay in registers; the part's counters are written once per group.
  uint64_t checksum = 0;
  for (size_t o = 0; o < outer_count; ++o) {
    const uint64_t left = uint64_t{key} + outer[o].value;
    if (materialize) {
      for (size_t i = 0; i < inner_count; ++i) {
        part->rows.push_back({key, outer[o].value, inner[i].value});
        checksum += left + inner[i].value;
      }
    } else {
      for (size_t i = 0; i < inner_count; ++i) checksum += left + inner[i].value;
    }
  }
  part->count += uint64_t{outer_count} * inner_count;
  part->checksum += checksum;
}

const char* MtJoinAlgorithmName(MtJoinAlgorithm a) {
  switch (a) {
    case MtJoinAlgorithm::kPartition:
      return "partition";
    case MtJoinAlgorithm::kSortMerge:
      return "sort-merge";
    case MtJoinAlgorithm::kMap:
      return "map";
  }
  return "?";
}

uint64_t JoinResult::count() const {
  uint64_t n = 0;
  for (const auto& p : parts) n += p.count;
  return n;
}

uint64_t JoinResult::checksum() const {
  uint64_t n = 0;
  for (const auto& p : parts) n += p.checksum;
  return n;
}

Status Join(MtJoinAlgorithm algorithm, WorkerPool& pool, const NsmTable& outer, Selection outer_sel,
            const NsmTable& inner, Selection inner_sel, const MachineInfo& machine,
            const MtJoinOptions& options, JoinResult* out) {
  out->parts.assign(pool.threads(), {});
  switch (algorithm) {
    case MtJoinAlgorithm::kPartition:
      return PartitionJoin(pool, outer, outer_sel, inner, inner_sel, machine, options, out);
    case MtJoinAlgorithm::kSortMerge:
      return SortMergeJoin(pool, outer, outer_sel, inner, inner_sel, machine, options, out);
    case MtJoinAlgorithm::kMap:
      return MapJoin(pool, outer, outer_sel, inner, inner_sel, options, out);
  }
  return Status::InvalidArgument("join algorithm");
}

}  // namespace sm::query::mt
