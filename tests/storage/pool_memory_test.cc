// PoolMemory: the prefault thread backs the memory a window ahead of the frontier and no
// further (checked with mincore, which reports what the kernel has backed), sleeps until the
// frontier moves, follows it, and stops at the end; without a window nothing is backed ahead of use.
#include "sm/buffer/pool_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

using sm::buffer::PoolMemory;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Whether the kernel backs each byte range's pages: the count of resident pages in
// [offset, offset + bytes) of the memory.
size_t ResidentPages(const PoolMemory& memory, size_t offset, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident(bytes / page);
  REQUIRE(mincore(memory.data() + offset, bytes, resident.data()) == 0);
  size_t count = 0;
  for (unsigned char r : resident) count += r & 1;
  return count;
}

size_t Pages(size_t bytes) { return bytes / static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Waits (up to 10 s) until the thread has backed `bytes`; the populated mark it reports.
size_t WaitPopulated(const PoolMemory& memory, size_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (memory.populated_bytes() < bytes && !memory.prefault_failed() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return memory.populated_bytes();
}

}  // namespace

TEST_CASE("the prefault thread backs the pool's memory a window ahead of the frontier",
          "[unit][buffer]") {
  auto memory = PoolMemory::Allocate(32 * kMiB, 8 * kMiB);
  REQUIRE(memory != nullptr);
  REQUIRE(memory->bytes() == 32 * kMiB);
  if (WaitPopulated(*memory, 8 * kMiB) < 8 * kMiB) {
    REQUIRE(memory->prefault_failed());
    WARN("this kernel refuses MADV_POPULATE_WRITE: the pool's memory is backed at first touch");
    return;
  }
  // The first window, and nothing after it, even given time; the thread sleeps until told.
  const uint64_t wakeups = memory->thread_wakeups();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(memory->thread_wakeups() == wakeups);
  CHECK(memory->populated_bytes() == 8 * kMiB);
  CHECK(ResidentPages(*memory, 0, 8 * kMiB) == Pages(8 * kMiB));
  CHECK(ResidentPages(*memory, 8 * kMiB, 24 * kMiB) == 0);

  // The frontier moves: the window follows it; a smaller frontier changes nothing.
  memory->NoteFrontier(12 * kMiB);
  memory->NoteFrontier(2 * kMiB);
  CHECK(WaitPopulated(*memory, 20 * kMiB) == 20 * kMiB);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(memory->populated_bytes() == 20 * kMiB);
  CHECK(ResidentPages(*memory, 0, 20 * kMiB) == Pages(20 * kMiB));
  CHECK(ResidentPages(*memory, 20 * kMiB, 12 * kMiB) == 0);

  // Past the end: the rest, and the thread is done (the destructor joins it).
  memory->NoteFrontier(30 * kMiB);
  CHECK(WaitPopulated(*memory, 32 * kMiB) == 32 * kMiB);
  CHECK(ResidentPages(*memory, 0, 32 * kMiB) == Pages(32 * kMiB));
}

TEST_CASE("populating never changes what the memory holds", "[unit][buffer]") {
  auto memory = PoolMemory::Allocate(8 * kMiB, 2 * kMiB);
  REQUIRE(memory != nullptr);
  // Written before the thread reaches it: a frame handed out early, or the thread still asleep.
  memory->data()[5 * kMiB + 17] = 42;
  memory->NoteFrontier(8 * kMiB);
  if (WaitPopulated(*memory, 8 * kMiB) < 8 * kMiB) {
    REQUIRE(memory->prefault_failed());
    return;
  }
  CHECK(memory->data()[5 * kMiB + 17] == 42);
  CHECK(memory->data()[5 * kMiB + 16] == 0);
}

TEST_CASE("without a window nothing is backed ahead of use", "[unit][buffer]") {
  auto memory = PoolMemory::Allocate(8 * kMiB, 0);
  REQUIRE(memory != nullptr);
  memory->NoteFrontier(4 * kMiB);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(memory->populated_bytes() == 0);
  CHECK(ResidentPages(*memory, 0, 8 * kMiB) == 0);
}
