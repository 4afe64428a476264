// PoolMemory: the memory of a buffer pool's frames, and the background thread that asks the
// kernel to back it ahead of its first use.
//
// Owns: one mapping of whole 2 MiB pages, advised to be backed by transparent huge pages
// (a random page access over a pool of gigabytes otherwise misses the TLB almost every time,
// and the page walk costs as much as the cache miss it precedes), and the prefault thread.
//
// Why prefault: the kernel backs anonymous memory at its first touch, and zeroes a whole huge
// page then, which takes far longer than any operation on a cached page. The pool touches a
// frame first when it hands the frame out for a new or newly read page, inside a transaction,
// with the worker's other fibers waiting behind it: random inserts into an empty table, which
// take a new frame at every split, wait there most (bench_btree's inserts_per_s_1w with
// --prefault-pool false against true). So a thread keeps the memory a window ahead of the
// highest frame handed out so far backed (MADV_POPULATE_WRITE, which never changes what memory
// holds, so it needs no coordination with the frames' users). The zeroing is the same work, on
// another core and before anyone waits for it; the memory still grows with use, not to the
// whole pool at once.
//
// Invariants:
//   1. populated_ only grows, in whole huge pages (or to the end), and every byte below it
//      has been populated; after the kernel refused once (failed_) it grows no more.
//   2. The thread populates only below min(frontier_ + ahead, bytes), rounded up to a whole
//      huge page, and exits at the end.
//
// Thread/fiber safety: NoteFrontier may be called from any fiber or thread at any time; it
// never blocks (it wakes the thread only when the window lacks memory, which the thread adds a
// huge page at a time: a burst of wake-ups per 2 MiB of frontier at most). The destructor stops
// and joins the thread. The thread sleeps on wake_seq_ (a futex, C++20 atomic wait) until a
// NoteFrontier or the destructor moves it: no wake-up is lost (the wait returns at once if the
// sequence moved after the thread read the frontier), so an idle pool's thread never wakes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

namespace sm::buffer {

class PoolMemory {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  // Null if the memory cannot be had. ahead_bytes 0: no prefault thread (the kernel backs the
  // memory at first touch).
  static std::unique_ptr<PoolMemory> Allocate(size_t bytes, size_t ahead_bytes);
  ~PoolMemory();
  PoolMemory(const PoolMemory&) = delete;
  PoolMemory& operator=(const PoolMemory&) = delete;

  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // The memory below `used_bytes` has been handed out (it only ever grows): keep the window
  // after it backed.
  void NoteFrontier(size_t used_bytes) {
    // relaxed: a hint for the thread, which also wakes by its own timeout. Concurrent callers
    // keep the largest (an RMW only when the frontier moves: once per frame at most).
    size_t seen = frontier_.load(std::memory_order_relaxed);
    do {
      if (used_bytes <= seen) return;
    } while (!frontier_.compare_exchange_weak(seen, used_bytes, std::memory_order_relaxed));
    // Exactly when the thread has work: populated_ is a whole number of huge pages, so the
    // window lacks one. A stale (smaller) populated_ only wakes the thread for nothing.
    if (ahead_bytes_ > 0 &&
        used_bytes + ahead_bytes_ > populated_.load(std::memory_order_relaxed)) {
      Wake();
    }
  }

  // The largest used_bytes noted so far (relaxed: a caller racing a NoteFrontier may see the
  // smaller value).
  size_t frontier_bytes() const { return frontier_.load(std::memory_order_relaxed); }
  // Tests and statistics: bytes the thread has had backed so far.
  size_t populated_bytes() const { return populated_.load(std::memory_order_acquire); }
  // Whether the kernel refused to populate (an old kernel), which stopped the thread.
  bool prefault_failed() const { return failed_.load(std::memory_order_acquire); }
  // Tests: how often the thread woke from waiting for the frontier.
  uint64_t thread_wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

 private:
  PoolMemory(char* data, size_t bytes, size_t ahead_bytes);
  void Run();
  // Release: what the caller stored before (the frontier, stop_) is seen by the thread once
  // it sees the new sequence.
  void Wake() {
    wake_seq_.fetch_add(1, std::memory_order_release);
    wake_seq_.notify_one();
  }

  char* const data_;
  const size_t bytes_;
  const size_t ahead_bytes_;
  std::atomic<size_t> frontier_{0};
  std::atomic<size_t> populated_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<uint64_t> wakeups_{0};
  std::thread thread_;
};

}  // namespace sm::buffer
