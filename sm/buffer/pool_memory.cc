// PoolMemory: allocation and the prefault thread (see pool_memory.h).
#include "sm/buffer/pool_memory.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace sm::buffer {

std::unique_ptr<PoolMemory> PoolMemory::Allocate(size_t bytes, size_t ahead_bytes) {
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // Mapped, not from malloc: memory the process has not touched before (which the kernel backs
  // as this file describes), given back whole at the end. Mapped a huge page larger, then
  // trimmed to a huge-page boundary at both ends.
  const size_t mapped = rounded + kHugePageBytes;
  void* base = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(base);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) (void)munmap(base, aligned - start);
  const uintptr_t end = start + mapped;
  if (end > aligned + rounded)
    (void)munmap(reinterpret_cast<void*>(aligned + rounded), end - aligned - rounded);
  char* data = reinterpret_cast<char*>(aligned);
  // Where the kernel gives no huge pages the advice is ignored.
  (void)madvise(data, rounded, MADV_HUGEPAGE);
  return std::unique_ptr<PoolMemory>(new PoolMemory(data, rounded, ahead_bytes));
}

PoolMemory::PoolMemory(char* data, size_t bytes, size_t ahead_bytes)
    : data_(data), bytes_(bytes), ahead_bytes_(ahead_bytes) {
  if (ahead_bytes_ > 0) thread_ = std::thread([this] { Run(); });
}

PoolMemory::~PoolMemory() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_relaxed);
    Wake();
    thread_.join();
  }
  (void)munmap(data_, bytes_);
}

void PoolMemory::Run() {
  pthread_setname_np(pthread_self(), "sm-prefault");  // in top and perf
  // A huge page at a time, so that a stop request waits for one at most.
  size_t done = 0;
  while (done < bytes_) {
    // The sequence first: a NoteFrontier or stop after this load moves it, so the wait below
    // returns at once instead of sleeping on what this pass read.
    const uint32_t seq = wake_seq_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed)) return;
    const size_t target =
        std::min(bytes_, frontier_.load(std::memory_order_relaxed) + ahead_bytes_);
    if (done >= target) {
      wake_seq_.wait(seq, std::memory_order_acquire);
      wakeups_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const size_t chunk = std::min(kHugePageBytes, bytes_ - done);
    if (madvise(data_ + done, chunk, MADV_POPULATE_WRITE) != 0) {
      // EINVAL before Linux 5.14 (or under a tool that does not know the advice): the
      // kernel backs the memory at first touch instead, as without this thread.
      failed_.store(true, std::memory_order_release);
      return;
    }
    done += chunk;
    populated_.store(done, std::memory_order_release);
  }
}

}  // namespace sm::buffer
