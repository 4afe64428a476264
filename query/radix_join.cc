#include "query/radix_join.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <numeric>
#include <string>
#include <system_error>
#include <thread>

#include "query/machine.h"
#include "query/mt_ops.h"
#include "sm/common/assert.h"

namespace sm::query {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs fn(0..threads-1), fn(0) on the calling thread. A worker that cannot be started runs
// inline instead, so no exception leaves the call.
template <class F>
void RunWorkers(int threads, const F& fn) {
  SM_ASSERT(threads >= 1);
  if (threads == 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) {
    try {
      workers.emplace_back(fn, t);
    } catch (const std::system_error&) {
      fn(t);
    }
  }
  fn(0);
  for (auto& w : workers) w.join();
}

// The bucket of `key` in a table of 2^log_buckets buckets: Fibonacci hashing of the key, whose
// top bits do not depend on the radix bits (those come from RadixHash), so one cluster's keys
// still spread over its table.
inline uint32_t BucketOf(uint32_t key, int log_buckets) {
  return (key * 0x9E3779B1u) >> (32 - log_buckets);
}

Status CheckOptions(size_t left_count, size_t right_count, const JoinOptions& o) {
  if (o.bits < 0 || o.bits > kMaxRadixBits) {
    return Status::InvalidArgument("radix bits " + std::to_string(o.bits) + " outside [0, " +
                                   std::to_string(kMaxRadixBits) + "]");
  }
  if (o.passes < 1 || o.passes > kMaxPasses || o.passes > std::max(o.bits, 1)) {
    return Status::InvalidArgument("passes " + std::to_string(o.passes) + " for " +
                                   std::to_string(o.bits) + " bits");
  }
  if (o.threads < 1 || o.threads > kMaxThreads) {
    return Status::InvalidArgument("threads " + std::to_string(o.threads));
  }
  if (left_count >= (uint64_t{1} << 32) || right_count >= (uint64_t{1} << 32)) {
    return Status::InvalidArgument("a relation of 2^32 tuples or more");
  }
  return Status::OK();
}

// One cluster [lo, hi) of src split on `mask` bits at `shift` into dst[lo, hi); writes the
// start of each new cluster to starts[0 .. mask].
void ClusterOne(const Bun* src, Bun* dst, uint32_t lo, uint32_t hi, int shift, uint32_t mask,
                uint32_t* starts, std::vector<uint32_t>* hist) {
  hist->assign(mask + 1, 0);
  uint32_t* h = hist->data();
  for (uint32_t i = lo; i < hi; ++i) ++h[(RadixHash(src[i].key) >> shift) & mask];
  uint32_t pos = lo;
  for (uint32_t j = 0; j <= mask; ++j) {
    starts[j] = pos;
    const uint32_t count = h[j];
    h[j] = pos;
    pos += count;
  }
  SM_DASSERT(pos == hi);
  for (uint32_t i = lo; i < hi; ++i) {
    const Bun b = src[i];
    dst[h[(RadixHash(b.key) >> shift) & mask]++] = b;
  }
}

// Pass 1 with several workers: each takes a contiguous share of the input; the histograms of
// all shares give each worker its own write position in every cluster (invariant 4).
void ClusterFirstPassParallel(const Bun* src, Bun* dst, uint32_t n, int shift, uint32_t mask,
                              int threads, uint32_t* starts) {
  std::vector<std::vector<uint32_t>> hists(threads, std::vector<uint32_t>(mask + 1, 0));
  RunWorkers(threads, [&](int t) {
    uint32_t* h = hists[t].data();
    const mt::Split share = mt::SplitOf(n, t, threads);
    for (size_t i = share.begin; i < share.end; ++i) ++h[(RadixHash(src[i].key) >> shift) & mask];
  });
  uint32_t pos = 0;
  for (uint32_t j = 0; j <= mask; ++j) {
    starts[j] = pos;
    for (int t = 0; t < threads; ++t) {
      const uint32_t count = hists[t][j];
      hists[t][j] = pos;
      pos += count;
    }
  }
  SM_ASSERT(pos == n);
  RunWorkers(threads, [&](int t) {
    uint32_t* h = hists[t].data();
    const mt::Split share = mt::SplitOf(n, t, threads);
    for (size_t i = share.begin; i < share.end; ++i) {
      const Bun b = src[i];
      dst[h[(RadixHash(b.key) >> shift) & mask]++] = b;
    }
  });
}

// The first cluster of each of `threads` shares of clusters with about equal tuple counts;
// splits[threads] == cluster count.
std::vector<size_t> SplitClusters(const std::vector<uint32_t>& bounds, size_t weight_total,
                                  const std::vector<uint32_t>* other_bounds, int threads) {
  const size_t clusters = bounds.size() - 1;
  std::vector<size_t> splits(threads + 1, clusters);
  splits[0] = 0;
  size_t c = 0, seen = 0;
  for (int t = 1; t < threads; ++t) {
    const size_t target = weight_total * t / threads;
    while (c < clusters && seen < target) {
      seen += bounds[c + 1] - bounds[c];
      if (other_bounds != nullptr) seen += (*other_bounds)[c + 1] - (*other_bounds)[c];
      ++c;
    }
    splits[t] = c;
  }
  return splits;
}

void EnsureWorkers(JoinScratch* scratch, int threads) {
  if (static_cast<int>(scratch->workers.size()) < threads) scratch->workers.resize(threads);
}

int LogBuckets(uint32_t inner_count) {
  return std::max(1, static_cast<int>(std::bit_width(std::max<uint32_t>(inner_count, 2) - 1)));
}

// The bucket-chained table on an inner input of ni tuples, in a worker's scratch.
struct Table {
  int log_buckets;
  uint32_t buckets;
  uint32_t* heads;
  uint32_t* next;
};

Table TableFor(uint32_t ni, JoinScratch::Worker* w) {
  const int log_buckets = LogBuckets(ni);
  const Table t{log_buckets, uint32_t{1} << log_buckets, w->heads.data(), w->next.data()};
  SM_DASSERT(w->heads.size() >= t.buckets);
  SM_DASSERT(w->next.size() >= ni);
  return t;
}

// Builds a bucket-chained table on inner[0, ni) in w's scratch.
void BuildTable(const Bun* inner, uint32_t ni, JoinScratch::Worker* w) {
  const Table t = TableFor(ni, w);
  std::memset(t.heads, 0, t.buckets * sizeof(uint32_t));
  for (uint32_t i = 0; i < ni; ++i) {
    const uint32_t b = BucketOf(inner[i].key, t.log_buckets);
    t.next[i] = t.heads[b];
    t.heads[b] = i + 1;
  }
}

// BuildTable with `threads` workers, each inserting a contiguous share of inner: a chain's head
// is swapped in by compare-and-swap, so concurrent inserts into one bucket each link the head
// they displaced. Only the order within a chain differs from BuildTable's. One worker takes
// the plain loop, which needs no atomic instruction.
void BuildTableShared(const Bun* inner, uint32_t ni, int threads, JoinScratch::Worker* w) {
  if (threads == 1) {
    BuildTable(inner, ni, w);
    return;
  }
  const Table table = TableFor(ni, w);
  RunWorkers(threads, [&](int t) {
    const mt::Split buckets = mt::SplitOf(table.buckets, t, threads);
    std::memset(table.heads + buckets.begin, 0, (buckets.end - buckets.begin) * sizeof(uint32_t));
  });
  // The workers' end orders every insert before every probe (RunWorkers joins them).
  RunWorkers(threads, [&](int t) {
    const mt::Split share = mt::SplitOf(ni, t, threads);
    for (uint32_t i = static_cast<uint32_t>(share.begin); i < share.end; ++i) {
      std::atomic_ref<uint32_t> head(table.heads[BucketOf(inner[i].key, table.log_buckets)]);
      uint32_t first = head.load(std::memory_order_relaxed);
      do {
        table.next[i] = first;
      } while (!head.compare_exchange_weak(first, i + 1, std::memory_order_relaxed));
    }
  });
}

// Probes the table BuildTable made on inner[0, ni) with outer[0, no). Every hash join runs
// this one loop: the plain hash join once ran a copy of it inside a lambda, through captured
// references, and took far longer than the partitioned join on a single cluster of the
// same tuples (`tools/run bench radix-join`, hash_ms_* against hash_pred_ms_*, the latter
// calibrated on that single cluster).
void ProbeTable(const Bun* outer, uint32_t no, const Bun* inner, uint32_t ni,
                const JoinScratch::Worker& w, std::vector<OidPair>* out) {
  const int log_buckets = LogBuckets(ni);
  const uint32_t* heads = w.heads.data();
  const uint32_t* next = w.next.data();
  for (uint32_t o = 0; o < no; ++o) {
    const Bun probe = outer[o];
    for (uint32_t at = heads[BucketOf(probe.key, log_buckets)]; at != 0; at = next[at - 1]) {
      if (inner[at - 1].key == probe.key) out->push_back({probe.oid, inner[at - 1].oid});
    }
  }
}

void NestedLoopRange(const Bun* outer, uint32_t no, const Bun* inner, uint32_t ni,
                     std::vector<OidPair>* out) {
  for (uint32_t o = 0; o < no; ++o) {
    const Bun probe = outer[o];
    for (uint32_t i = 0; i < ni; ++i) {
      if (inner[i].key == probe.key) out->push_back({probe.oid, inner[i].oid});
    }
  }
}

// Sizes worker w's hash table for an inner input of at most `max_inner` tuples.
bool SizeHashScratch(JoinScratch::Worker* w, uint32_t max_inner, bool huge) {
  const uint32_t buckets = std::bit_ceil(std::max<uint32_t>(max_inner, 2));
  if (w->heads.size() < buckets && !w->heads.Resize(buckets, huge)) return false;
  if (w->next.size() < max_inner && !w->next.Resize(std::max<uint32_t>(max_inner, 1), huge)) {
    return false;
  }
  return true;
}

void ReserveParts(JoinIndex* out, size_t expected, int threads) {
  out->Reset(threads);
  for (auto& part : out->parts) part.reserve(expected / threads + 1024);
}

}  // namespace

template <class T>
bool PageBuffer<T>::Resize(size_t count, bool huge_pages) {
  const size_t bytes = std::max<size_t>(count * sizeof(T), 1);
  if (bytes <= capacity_bytes_) {
    size_ = count;
    return true;
  }
  Free();
  // Huge pages come only for whole aligned 2 MiB extents: round the mapping up to one.
  const size_t mapped =
      huge_pages ? (bytes + (size_t{2} << 20) - 1) & ~((size_t{2} << 20) - 1) : bytes;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  if (huge_pages) {
    AdviseHugePages(p, mapped);
  } else {
    madvise(p, mapped, MADV_NOHUGEPAGE);  // the 4 KiB-page variant must not get them anyway
  }
  data_ = static_cast<T*>(p);
  size_ = count;
  capacity_bytes_ = mapped;
  return true;
}

template <class T>
void PageBuffer<T>::Free() {
  if (data_ != nullptr) munmap(data_, capacity_bytes_);
  data_ = nullptr;
  size_ = 0;
  capacity_bytes_ = 0;
}

template class PageBuffer<Bun>;
template class PageBuffer<uint32_t>;

std::vector<int> SpreadBits(int bits, int passes) {
  SM_ASSERT(passes >= 1);
  SM_ASSERT(bits >= 0);
  std::vector<int> per_pass(passes, bits / passes);
  for (int p = 0; p < bits % passes; ++p) ++per_pass[p];
  SM_DASSERT(std::accumulate(per_pass.begin(), per_pass.end(), 0) == bits);
  return per_pass;
}

const char* JoinAlgorithmName(JoinAlgorithm algorithm) {
  switch (algorithm) {
    case JoinAlgorithm::kPlainHash:
      return "hash";
    case JoinAlgorithm::kPartitionedHash:
      return "phash";
    case JoinAlgorithm::kRadix:
      return "radix";
  }
  SM_UNREACHABLE();
}

size_t JoinIndex::size() const {
  size_t n = 0;
  for (const auto& part : parts) n += part.size();
  return n;
}

std::vector<OidPair> JoinIndex::Flatten() const {
  std::vector<OidPair> all;
  all.reserve(size());
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

void JoinIndex::Reset(int count) {
  SM_ASSERT(count >= 1);
  const size_t want = static_cast<size_t>(count);
  while (parts.size() > want) {
    spare_.push_back(std::move(parts.back()));
    parts.pop_back();
  }
  while (parts.size() < want && !spare_.empty()) {
    parts.push_back(std::move(spare_.back()));
    spare_.pop_back();
  }
  parts.resize(want);
  for (auto& part : parts) part.clear();
}

bool ClusteredRelation::CheckOrdered() const {
  SM_ASSERT(bounds.size() == (size_t{1} << bits) + 1);
  SM_ASSERT(bounds.front() == 0);
  SM_ASSERT(bounds.back() == tuples.size());
  const uint32_t mask = (uint32_t{1} << bits) - 1;
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    SM_ASSERT(bounds[c] <= bounds[c + 1]);
    for (uint32_t i = bounds[c]; i < bounds[c + 1]; ++i) {
      SM_ASSERT((RadixHash(tuples[i].key) & mask) == c);
    }
  }
  return true;
}

Status RadixCluster(std::span<const Bun> input, const JoinOptions& options,
                    ClusteredRelation* out) {
  SM_ASSERT(out != nullptr);
  SM_TRY(CheckOptions(input.size(), 0, options));
  const uint32_t n = static_cast<uint32_t>(input.size());
  const std::vector<int> per_pass = SpreadBits(options.bits, options.passes);
  out->bits = options.bits;
  if (!out->tuples.Resize(n, options.huge_pages) ||
      (options.passes > 1 && !out->scratch.Resize(n, options.huge_pages))) {
    return Status::NoSpace("radix-cluster: out of memory for " + std::to_string(n) + " tuples");
  }
  if (options.bits == 0) {
    if (n > 0) std::memcpy(out->tuples.data(), input.data(), n * sizeof(Bun));
    out->bounds.assign({0, n});
    return Status::OK();
  }
  std::vector<uint32_t> bounds = {0, n}, next_bounds;
  const Bun* src = input.data();
  int shift = options.bits;
  for (int p = 0; p < options.passes; ++p) {
    shift -= per_pass[p];
    const uint32_t mask = (uint32_t{1} << per_pass[p]) - 1;
    // The passes alternate between the two buffers so that the last one writes `tuples`.
    Bun* dst = (options.passes - 1 - p) % 2 == 0 ? out->tuples.data() : out->scratch.data();
    const size_t clusters = bounds.size() - 1;
    next_bounds.resize(clusters * (mask + 1) + 1);
    next_bounds.back() = n;
    if (clusters == 1 && options.threads > 1) {
      ClusterFirstPassParallel(src, dst, n, shift, mask, options.threads, next_bounds.data());
    } else {
      const std::vector<size_t> splits = SplitClusters(bounds, n, nullptr, options.threads);
      RunWorkers(options.threads, [&](int t) {
        std::vector<uint32_t> hist;
        for (size_t c = splits[t]; c < splits[t + 1]; ++c) {
          ClusterOne(src, dst, bounds[c], bounds[c + 1], shift, mask, &next_bounds[c * (mask + 1)],
                     &hist);
        }
      });
    }
    bounds.swap(next_bounds);
    src = dst;
  }
  SM_ASSERT(shift == 0);
  SM_ASSERT(src == out->tuples.data());
  out->bounds = std::move(bounds);
  SM_ASSERT(out->bounds.size() == (size_t{1} << options.bits) + 1);
  SM_DASSERT(out->CheckOrdered());
  return Status::OK();
}

Status JoinClustered(JoinAlgorithm algorithm, const ClusteredRelation& left,
                     const ClusteredRelation& right, const JoinOptions& options, JoinIndex* out,
                     JoinScratch* scratch) {
  SM_ASSERT(out != nullptr);
  SM_TRY(CheckOptions(left.tuples.size(), right.tuples.size(), options));
  if (left.bits != right.bits || left.bounds.size() != right.bounds.size()) {
    return Status::InvalidArgument("join of relations clustered on different bits");
  }
  SM_ASSERT(left.bounds.back() == left.tuples.size());
  SM_ASSERT(right.bounds.back() == right.tuples.size());
  JoinScratch local;
  if (scratch == nullptr) scratch = &local;
  const int threads = options.threads;
  EnsureWorkers(scratch, threads);
  const size_t clusters = left.cluster_count();
  if (algorithm != JoinAlgorithm::kRadix) {
    uint32_t max_inner = 0;
    for (size_t c = 0; c < clusters; ++c) {
      max_inner = std::max(max_inner, right.bounds[c + 1] - right.bounds[c]);
    }
    for (int t = 0; t < threads; ++t) {
      if (!SizeHashScratch(&scratch->workers[t], max_inner, options.huge_pages)) {
        return Status::NoSpace("partitioned hash join: out of memory for its hash table");
      }
    }
  }
  ReserveParts(out, left.tuples.size(), threads);
  const std::vector<size_t> splits =
      SplitClusters(left.bounds, left.tuples.size() + right.tuples.size(), &right.bounds, threads);
  RunWorkers(threads, [&](int t) {
    std::vector<OidPair>* part = &out->parts[t];
    for (size_t c = splits[t]; c < splits[t + 1]; ++c) {
      const uint32_t lo = left.bounds[c], no = left.bounds[c + 1] - lo;
      const uint32_t ri = right.bounds[c], ni = right.bounds[c + 1] - ri;
      if (no == 0 || ni == 0) continue;  // an empty cluster matches nothing
      if (algorithm == JoinAlgorithm::kRadix) {
        NestedLoopRange(left.tuples.data() + lo, no, right.tuples.data() + ri, ni, part);
      } else {
        BuildTable(right.tuples.data() + ri, ni, &scratch->workers[t]);
        ProbeTable(left.tuples.data() + lo, no, right.tuples.data() + ri, ni,
                   scratch->workers[t], part);
      }
    }
  });
  return Status::OK();
}

namespace {

// The baseline: one table on the whole right relation, built and then probed by `threads`
// workers.
Status PlainHashJoin(std::span<const Bun> left, std::span<const Bun> right,
                     const JoinOptions& options, JoinIndex* out, JoinScratch* scratch) {
  const int threads = options.threads;
  EnsureWorkers(scratch, 1);
  JoinScratch::Worker* w = &scratch->workers[0];
  const uint32_t ni = static_cast<uint32_t>(right.size());
  if (!SizeHashScratch(w, ni, options.huge_pages)) {
    return Status::NoSpace("hash join: out of memory for its hash table");
  }
  ReserveParts(out, left.size(), threads);
  BuildTableShared(right.data(), ni, threads, w);
  RunWorkers(threads, [&](int t) {
    const mt::Split share = mt::SplitOf(left.size(), t, threads);
    ProbeTable(left.data() + share.begin, static_cast<uint32_t>(share.end - share.begin),
               right.data(), ni, *w, &out->parts[t]);
  });
  return Status::OK();
}

}  // namespace

Status Join(JoinAlgorithm algorithm, std::span<const Bun> left, std::span<const Bun> right,
            const JoinOptions& options, JoinIndex* out, JoinStats* stats, JoinScratch* scratch) {
  SM_ASSERT(out != nullptr);
  SM_TRY(CheckOptions(left.size(), right.size(), options));
  JoinScratch local;
  if (scratch == nullptr) scratch = &local;
  JoinStats timing;
  const double start = Now();
  if (algorithm == JoinAlgorithm::kPlainHash) {
    SM_TRY(PlainHashJoin(left, right, options, out, scratch));
    timing.join_seconds = Now() - start;
  } else {
    SM_TRY(RadixCluster(left, options, &scratch->left));
    SM_TRY(RadixCluster(right, options, &scratch->right));
    const double clustered = Now();
    timing.cluster_seconds = clustered - start;
    SM_TRY(JoinClustered(algorithm, scratch->left, scratch->right, options, out, scratch));
    timing.join_seconds = Now() - clustered;
  }
  if (stats != nullptr) *stats = timing;
  return Status::OK();
}

}  // namespace sm::query
