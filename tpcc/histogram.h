// A latency histogram with bounded relative error (1/16), for the drivers' percentiles, and a
// counter with one writer.
//
// Owns: the bucket layout. Values below 16 have a bucket each; above, every power of two is cut
// into 16 equal sub-buckets, so a bucket's width is at most 1/16 of its lower bound and a
// percentile read back as the bucket's midpoint is off by at most ~3 %. 976 buckets cover all
// of uint64_t.
//
// Thread/fiber safety: one writer (the fibers of one worker, which never run at the same time)
// and any number of racy readers (the progress line): every bucket is an atomic written with
// a relaxed load and store, never a read-modify-write, which is enough for one writer and
// costs no more than a plain increment.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace sm::tpcc {

class Histogram {
 public:
  static constexpr int kSubBuckets = 16;
  static constexpr int kBuckets = (64 - 4 + 1) * kSubBuckets;  // up to msb 63

  static int BucketOf(uint64_t v) {
    if (v < kSubBuckets) return static_cast<int>(v);
    int msb = 63 - std::countl_zero(v);
    int shift = msb - 4;
    return (shift + 1) * kSubBuckets + static_cast<int>((v >> shift) & (kSubBuckets - 1));
  }
  static uint64_t LowerBound(int bucket) {
    if (bucket < kSubBuckets) return static_cast<uint64_t>(bucket);
    int shift = bucket / kSubBuckets - 1;
    return (uint64_t(kSubBuckets) + bucket % kSubBuckets) << shift;
  }
  static uint64_t Width(int bucket) {
    return bucket < kSubBuckets ? 1 : uint64_t(1) << (bucket / kSubBuckets - 1);
  }

  // The single writer.
  void Record(uint64_t v) {
    Bump(counts_[BucketOf(v)], 1);
    Bump(count_, 1);
    Bump(sum_, v);
    if (v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
  }

  // Forgets the maximum (at the end of a warm-up). A Record racing with it may keep a value
  // from just before, which only blurs the boundary.
  void ResetMax() { max_.store(0, std::memory_order_relaxed); }

  // A plain copy, for arithmetic (Snapshot - Snapshot over an interval, merging workers).
  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};
    uint64_t count = 0, sum = 0, max = 0;

    void Add(const Snapshot& o) {
      for (int i = 0; i < kBuckets; ++i) counts[i] += o.counts[i];
      count += o.count;
      sum += o.sum;
      max = std::max(max, o.max);
    }
    // this - earlier (max is this one's: a maximum cannot be subtracted; see ResetMax).
    Snapshot Since(const Snapshot& earlier) const {
      Snapshot d = *this;
      for (int i = 0; i < kBuckets; ++i) d.counts[i] -= earlier.counts[i];
      d.count -= earlier.count;
      d.sum -= earlier.sum;
      return d;
    }
    // The q-quantile (0 < q <= 1) as the midpoint of its bucket; 0 if empty.
    uint64_t Quantile(double q) const {
      if (count == 0) return 0;
      uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count) + 0.5);
      rank = std::clamp<uint64_t>(rank, 1, count);
      uint64_t seen = 0;
      for (int i = 0; i < kBuckets; ++i) {
        seen += counts[i];
        if (seen >= rank) return std::min(max, LowerBound(i) + Width(i) / 2);
      }
      return max;
    }
    double Mean() const { return count == 0 ? 0 : static_cast<double>(sum) / count; }
  };

  Snapshot Read() const {
    Snapshot s;
    for (int i = 0; i < kBuckets; ++i) s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count = count_.load(std::memory_order_relaxed);
    s.sum = sum_.load(std::memory_order_relaxed);
    s.max = max_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  static void Bump(std::atomic<uint64_t>& a, uint64_t by) {
    a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> count_{0}, sum_{0}, max_{0};
};

// A counter with one writer (see Histogram for why a load and a store suffice).
class Counter {
 public:
  void Add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t Read() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace sm::tpcc
