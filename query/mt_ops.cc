// The framework and staging primitives of query/mt_ops.h: the worker pool, the NSM table,
// scan/select/project, partitioning with sorted pages, the heap merge of sorted runs and the
// AlphaSort-style parallel sort. The aggregations and joins built on them are in
// mt_agg_join.cc.
#include "query/mt_ops.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <system_error>

#include "query/mt_internal.h"
#include "query/radix_join.h"
#include "sm/common/assert.h"

namespace sm::query::mt {

// ---- WorkerPool ------------------------------------------------------------------------

WorkerPool::WorkerPool(int threads) {
  SM_ASSERT(threads >= 1);
  SM_ASSERT(threads <= kMaxThreads);
  workers_.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) {
    try {
      workers_.emplace_back([this, t] { Loop(t); });
    } catch (const std::system_error&) {
      break;  // a smaller team: every operator works with any count of workers
    }
  }
  threads_ = static_cast<int>(workers_.size()) + 1;
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void WorkerPool::Run(const std::function<void(int)>& fn) {
  if (threads_ > 1) {
    std::lock_guard<std::mutex> lock(mu_);
    SM_ASSERT(job_ == nullptr);  // one round at a time
    job_ = &fn;
    running_ = threads_ - 1;
    ++round_;
  }
  start_cv_.notify_all();
  fn(0);
  if (threads_ == 1) return;
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
}

void WorkerPool::Loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stopping_ || round_ != seen; });
      if (stopping_) return;
      seen = round_;
      job = job_;
    }
    SM_ASSERT(job != nullptr);
    (*job)(index);
    std::lock_guard<std::mutex> lock(mu_);
    SM_ASSERT(running_ > 0);
    if (--running_ == 0) done_cv_.notify_one();
  }
}

// ---- NsmTable, splits, scan ------------------------------------------------------------

Status NsmTable::Make(uint32_t tuple_bytes, size_t count, NsmTable* out) {
  if (tuple_bytes < kMinTupleBytes || tuple_bytes % 4 != 0) {
    return Status::InvalidArgument("tuple bytes " + std::to_string(tuple_bytes));
  }
  out->tuple_bytes_ = tuple_bytes;
  out->count_ = count;
  // Value-initialized: the filler is part of the row and is read by nobody, but a table's
  // bytes must be defined.
  out->data_ = std::make_unique<std::byte[]>(std::max<size_t>(1, count * tuple_bytes));
  return Status::OK();
}

Kv NsmTable::Get(size_t i) const {
  SM_DASSERT(i < count_);
  Kv kv;
  std::memcpy(&kv, Row(i), sizeof(kv));
  return kv;
}

void NsmTable::Set(size_t i, Kv kv) {
  SM_DASSERT(i < count_);
  std::memcpy(data_.get() + i * tuple_bytes_, &kv, sizeof(kv));
}

Split SplitOf(size_t count, int t, int threads) {
  SM_DASSERT(t >= 0 && t < threads);
  const auto at = [&](int k) { return static_cast<size_t>(uint64_t{count} * k / threads); };
  return {at(t), at(t + 1)};
}

void ScanSelect(WorkerPool& pool, const NsmTable& table, Selection sel,
                std::vector<PerThread<Kv>>* out) {
  const int n = pool.threads();
  out->assign(n, {});
  pool.Run([&](int t) {
    const Split s = SplitOf(table.size(), t, n);
    auto& items = (*out)[t].items;
    items.reserve(s.end - s.begin);
    for (size_t i = s.begin; i < s.end; ++i) {
      const Kv kv = table.Get(i);
      if (sel.Keep(kv.value)) items.push_back(kv);
    }
  });
}

// ---- MapDirectory ----------------------------------------------------------------------

MapDirectory::MapDirectory(uint32_t capacity)
    : capacity_(capacity),
      limit_(capacity / 4 * 3 - kMaxThreads),
      slots_(std::make_unique<std::atomic<uint64_t>[]>(capacity)) {
  SM_ASSERT(std::has_single_bit(capacity));
  SM_ASSERT(capacity >= 4 * kMaxThreads);
  for (uint32_t i = 0; i < capacity; ++i) slots_[i].store(0, std::memory_order_relaxed);
}

uint32_t MapDirectory::CapacityFor(uint64_t distinct) {
  const uint64_t want = std::max<uint64_t>(4 * kMaxThreads, (distinct + kMaxThreads) * 2);
  return static_cast<uint32_t>(std::bit_ceil(std::min<uint64_t>(want, uint64_t{1} << 30)));
}

int64_t MapDirectory::Slot(uint32_t key) {
  const uint64_t tagged = (uint64_t{1} << 32) | key;
  const uint32_t mask = capacity_ - 1;
  for (uint32_t h = RadixHash(key) & mask;; h = (h + 1) & mask) {
    // Relaxed: a slot's word is the only datum it publishes (the aggregates are private to
    // each worker), and the word is written once (invariant 4).
    uint64_t seen = slots_[h].load(std::memory_order_relaxed);
    if (seen == tagged) return h;
    if (seen != 0) continue;
    // The limit leaves room for every worker's racing insert, so a probe always ends.
    if (used_.load(std::memory_order_relaxed) >= limit_) return -1;
    if (slots_[h].compare_exchange_strong(seen, tagged, std::memory_order_relaxed)) {
      used_.fetch_add(1, std::memory_order_relaxed);
      return h;
    }
    if (seen == tagged) return h;  // another worker inserted the same key first
  }
}

bool MapDirectory::KeyAt(uint32_t slot, uint32_t* key) const {
  SM_DASSERT(slot < capacity_);
  const uint64_t v = slots_[slot].load(std::memory_order_relaxed);
  if (v == 0) return false;
  *key = static_cast<uint32_t>(v);
  return true;
}

// ---- Partitioning ----------------------------------------------------------------------

int PartitionOf(const PartitionSpec& spec, uint32_t key) {
  switch (spec.kind) {
    case PartitionKind::kHash:
      return static_cast<int>((uint64_t{RadixHash(key)} * spec.fanout) >> 32);
    case PartitionKind::kRange:
      return static_cast<int>(
          std::upper_bound(spec.range_splits.begin(), spec.range_splits.end(), key) -
          spec.range_splits.begin());
    case PartitionKind::kValueMap:
      return static_cast<int>(spec.directory->Slot(key));
  }
  return -1;
}

size_t Partitions::PartitionSize(int p) const {
  size_t n = 0;
  for (const auto& w : runs) n += w.items[p].size();
  return n;
}

size_t Partitions::size() const {
  size_t n = 0;
  for (const auto& w : runs) {
    for (const auto& part : w.items) n += part.size();
  }
  return n;
}

bool Partitions::CheckInvariants(const PartitionSpec& spec) const {
  for (const auto& w : runs) {
    if (static_cast<int>(w.items.size()) != fanout) return false;
    for (int p = 0; p < fanout; ++p) {
      const auto& part = w.items[p];
      for (size_t i = 0; i < part.size(); ++i) {
        if (spec.kind != PartitionKind::kValueMap && PartitionOf(spec, part[i].key) != p) {
          return false;
        }
        const bool page_start = i % kPageTuples == 0;
        if (pages_sorted && !page_start && part[i - 1].key > part[i].key) return false;
      }
    }
  }
  return true;
}

namespace {

Status CheckSpec(const PartitionSpec& spec) {
  if (spec.kind == PartitionKind::kValueMap) {
    return spec.directory == nullptr ? Status::InvalidArgument("value map without a directory")
                                     : Status::OK();
  }
  if (spec.fanout < 1) return Status::InvalidArgument("fanout " + std::to_string(spec.fanout));
  if (spec.kind == PartitionKind::kRange) {
    if (spec.range_splits.size() + 1 != static_cast<size_t>(spec.fanout) ||
        !std::is_sorted(spec.range_splits.begin(), spec.range_splits.end())) {
      return Status::InvalidArgument("range splits are not fanout - 1 ascending keys");
    }
  }
  return Status::OK();
}

void SortPage(Kv* begin, Kv* end) {
  std::sort(begin, end, [](const Kv& a, const Kv& b) { return a.key < b.key; });
}

// Worker t's staging of its split: route, append, and sort each page as it fills.
bool StageSplit(const NsmTable& table, Split s, Selection sel, const PartitionSpec& spec,
                int fanout, std::vector<std::vector<Kv>>* parts) {
  parts->assign(fanout, {});
  const size_t per_part = (s.end - s.begin) / fanout;
  if (spec.kind != PartitionKind::kValueMap) {
    for (auto& p : *parts) p.reserve(per_part + per_part / 4 + kPageTuples);
  }
  for (size_t i = s.begin; i < s.end; ++i) {
    const Kv kv = table.Get(i);
    if (!sel.Keep(kv.value)) continue;
    const int p = PartitionOf(spec, kv.key);
    if (p < 0) return false;  // the directory is full
    SM_DASSERT(p < fanout);
    auto& part = (*parts)[p];
    part.push_back(kv);
    if (spec.sort_pages && part.size() % kPageTuples == 0) {
      SortPage(part.data() + part.size() - kPageTuples, part.data() + part.size());
    }
  }
  if (spec.sort_pages) {
    for (auto& part : *parts) {
      const size_t tail = part.size() % kPageTuples;
      SortPage(part.data() + part.size() - tail, part.data() + part.size());
    }
  }
  return true;
}

}  // namespace

Status Partition(WorkerPool& pool, const NsmTable& table, Selection sel, const PartitionSpec& spec,
                 Partitions* out) {
  SM_TRY(CheckSpec(spec));
  const int n = pool.threads();
  const int fanout = spec.kind == PartitionKind::kValueMap
                         ? static_cast<int>(spec.directory->capacity())
                         : spec.fanout;
  out->fanout = fanout;
  out->pages_sorted = spec.sort_pages;
  out->runs.assign(n, {});
  std::vector<PerThread<char>> full(n);
  pool.Run([&](int t) {
    if (!StageSplit(table, SplitOf(table.size(), t, n), sel, spec, fanout, &out->runs[t].items)) {
      full[t].items.push_back(1);
    }
  });
  for (const auto& f : full) {
    if (!f.items.empty()) return Status::NotSupported("more distinct keys than the directory");
  }
  SM_DASSERT(out->size() <= table.size());  // selection only drops tuples
  SM_PARANOID(out->CheckInvariants(spec));
  return Status::OK();
}

// ---- Heap merge of sorted runs ---------------------------------------------------------

void RunMerger::Add(const Kv* begin, const Kv* end) {
  SM_DASSERT(begin <= end);
  if (begin != end) heap_.push_back({begin, end});
}

void RunMerger::Build() {
  for (size_t i = heap_.size() / 2; i-- > 0;) SiftDown(i);
}

void RunMerger::SiftDown(size_t i) {
  const size_t n = heap_.size();
  const Cursor c = heap_[i];
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].cur->key < heap_[child].cur->key) ++child;
    if (heap_[child].cur->key >= c.cur->key) break;
    heap_[i] = heap_[child];
    i = child;
  }
  heap_[i] = c;
}

void AddPartitionRuns(const Partitions& parts, int p, RunMerger* merger) {
  for (const auto& w : parts.runs) {
    const auto& items = w.items[p];
    for (size_t at = 0; at < items.size(); at += kPageTuples) {
      const size_t end = std::min<size_t>(items.size(), at + kPageTuples);
      merger->Add(items.data() + at, items.data() + end);
    }
  }
}

// ---- Parallel sort ---------------------------------------------------------------------

size_t DefaultBlockTuples(const MachineInfo& machine) {
  // A block and the quicksort's working set fit the worker's L2 with room to spare.
  return std::max<size_t>(kPageTuples, machine.l2_bytes / 2 / sizeof(Kv));
}

void SortBlocks(WorkerPool& pool, const NsmTable& table, Selection sel, size_t block_tuples,
                SortedBlocks* out) {
  SM_ASSERT(block_tuples > 0);
  const int n = pool.threads();
  out->data.assign(n, {});
  out->blocks.assign(n, {});
  pool.Run([&](int t) {
    const Split s = SplitOf(table.size(), t, n);
    auto& items = out->data[t].items;
    items.reserve(s.end - s.begin);
    auto& blocks = out->blocks[t].items;
    size_t block_begin = 0;
    for (size_t i = s.begin; i < s.end; ++i) {
      const Kv kv = table.Get(i);
      if (!sel.Keep(kv.value)) continue;
      items.push_back(kv);
      if (items.size() - block_begin == block_tuples) {
        SortPage(items.data() + block_begin, items.data() + items.size());
        blocks.push_back({block_begin, items.size()});
        block_begin = items.size();
      }
    }
    if (items.size() > block_begin) {
      SortPage(items.data() + block_begin, items.data() + items.size());
      blocks.push_back({block_begin, items.size()});
    }
    SM_DASSERT(blocks.empty() || blocks.back().end == items.size());  // blocks cover the data
  });
}

std::vector<uint32_t> RangeSplits(const std::vector<const SortedBlocks*>& inputs, int ranges) {
  SM_ASSERT(ranges >= 1);
  // Value statistics from the sorted blocks themselves: evenly spaced keys of each block.
  constexpr size_t kSamplesPerBlock = 64;
  std::vector<uint32_t> sample;
  for (const SortedBlocks* in : inputs) {
    for (size_t t = 0; t < in->data.size(); ++t) {
      for (const Split& b : in->blocks[t].items) {
        const size_t len = b.end - b.begin;
        const size_t step = std::max<size_t>(1, len / kSamplesPerBlock);
        for (size_t i = b.begin; i < b.end; i += step) sample.push_back(in->data[t].items[i].key);
      }
    }
  }
  std::sort(sample.begin(), sample.end());
  std::vector<uint32_t> splits;
  for (int r = 1; r < ranges; ++r) {
    splits.push_back(sample.empty() ? UINT32_MAX : sample[sample.size() * r / ranges]);
  }
  SM_DASSERT(std::is_sorted(splits.begin(), splits.end()));
  return splits;
}

void AddRangeRuns(const SortedBlocks& in, const std::vector<uint32_t>& splits, int r,
                  RunMerger* merger) {
  const auto less = [](const Kv& a, uint32_t k) { return a.key < k; };
  for (size_t t = 0; t < in.data.size(); ++t) {
    const Kv* base = in.data[t].items.data();
    for (const Split& b : in.blocks[t].items) {
      const Kv* lo = base + b.begin;
      const Kv* hi = base + b.end;
      if (r > 0) lo = std::lower_bound(lo, hi, splits[r - 1], less);
      if (r < static_cast<int>(splits.size())) hi = std::lower_bound(lo, hi, splits[r], less);
      merger->Add(lo, hi);
    }
  }
}

void ParallelSort(WorkerPool& pool, const NsmTable& table, Selection sel,
                  const MachineInfo& machine, std::vector<PerThread<Kv>>* out,
                  size_t block_tuples) {
  SortedBlocks blocks;
  SortBlocks(pool, table, sel, block_tuples ? block_tuples : DefaultBlockTuples(machine), &blocks);
  const int n = pool.threads();
  const std::vector<uint32_t> splits = RangeSplits({&blocks}, n);
  out->assign(n, {});
  pool.Run([&](int t) {
    RunMerger merger;
    AddRangeRuns(blocks, splits, t, &merger);
    merger.Build();
    auto& items = (*out)[t].items;
    items.reserve(blocks.data[t].items.size());  // about one split's worth
    Kv kv;
    while (merger.Next(&kv)) items.push_back(kv);
    SM_DASSERT(std::is_sorted(items.begin(), items.end(),
                              [](const Kv& a, const Kv& b) { return a.key < b.key; }));
  });
  size_t in = 0, merged = 0;
  for (const auto& d : blocks.data) in += d.items.size();
  for (const auto& o : *out) merged += o.items.size();
  SM_ASSERT(in == merged);  // the ranges cover every key once
}

}  // namespace sm::query::mt
