// Fiber stacks and the per-fiber counters.
#include "threads/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#ifdef SM_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#else
// Built without valgrind's headers (a library-only build may lack them): stacks go
// unregistered, which only valgrind itself would notice.
#define VALGRIND_STACK_REGISTER(low, high) 0u
#define VALGRIND_STACK_DEREGISTER(id) static_cast<void>(id)
#endif

#include "sm/common/assert.h"
#include "threads/worker.h"

namespace sm::threads {
namespace {

// The bottom of every stack (just above the guard page) holds this header; the stack grows
// down from the top, so it is touched only by an overflow, which the guard page stops first.
struct StackHeader {
  size_t mapping_bytes;
  unsigned valgrind_id;
};

size_t PageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Stacks are recycled process-wide: mmap/munmap per fiber would dominate fiber creation.
class StackPool {
 public:
  static StackPool& Get() {
    static StackPool* pool = new StackPool();  // never destroyed: used until exit
    return *pool;
  }
  void* Take(size_t mapping_bytes) {
    std::lock_guard<std::mutex> guard(mu_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].second == mapping_bytes) {
        void* base = free_[i].first;
        free_[i] = free_.back();
        free_.pop_back();
        return base;
      }
    }
    return nullptr;
  }
  bool Give(void* base, size_t mapping_bytes) {
    std::lock_guard<std::mutex> guard(mu_);
    if (free_.size() >= kMaxCached) return false;
    free_.emplace_back(base, mapping_bytes);
    return true;
  }

 private:
  static constexpr size_t kMaxCached = 4096;
  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> free_;  // GUARDED_BY(mu_)
};

// TEST_FailNextAllocations: failures still to inject (relaxed: a test sets it before the
// spawns it affects), and as what.
std::atomic<int> test_failures{0};
std::atomic<bool> test_fail_guard_page{false};
std::atomic<int> test_fail_errno{0};

// The kernel's limit on a process's memory mappings, as text ("" if it cannot be read).
std::string MaxMapCount() {
  std::ifstream file("/proc/sys/vm/max_map_count");
  std::string value;
  file >> value;
  return value;
}

// Why a stack could not be had, with the limit that is the likely cause and what to change:
// the error reaches an operator (e.g. a benchmark asked for more clients than fit).
Status StackError(size_t mapping_bytes, bool guard_page, int err) {
  std::string msg = "no fiber stack of " + std::to_string(mapping_bytes >> 10) + " KiB: " +
                    (guard_page ? "mprotect of its guard page: " : "mmap: ") +
                    std::strerror(err);
  if (err == ENOMEM && guard_page) {
    const std::string limit = MaxMapCount();
    msg += " (the process has likely reached the kernel's limit on its memory mappings, "
           "vm.max_map_count" +
           (limit.empty() ? std::string() : " = " + limit) +
           "; each fiber stack takes two: run fewer fibers, or raise vm.max_map_count)";
  } else if (err == ENOMEM) {
    msg += " (the process's memory or address-space limit (ulimit -v) or the kernel's "
           "overcommit policy (vm.overcommit_memory) refuses it: run fewer fibers)";
  }
  return Status::IOError(msg);
}

}  // namespace

void FiberStackAllocator::TEST_FailNextAllocations(int count, bool guard_page, int err) {
  test_fail_guard_page.store(guard_page, std::memory_order_relaxed);
  test_fail_errno.store(err, std::memory_order_relaxed);
  test_failures.store(count, std::memory_order_relaxed);
}

Status FiberStackAllocator::Allocate(boost::context::stack_context* sctx) {
  const size_t page = PageBytes();
  const size_t usable = (stack_bytes_ + page - 1) / page * page;
  const size_t mapping_bytes = usable + page;  // + guard page
  if (test_failures.load(std::memory_order_relaxed) > 0 &&
      test_failures.fetch_sub(1, std::memory_order_relaxed) > 0) [[unlikely]] {
    return StackError(mapping_bytes, test_fail_guard_page.load(std::memory_order_relaxed),
                      test_fail_errno.load(std::memory_order_relaxed));
  }
  void* base = StackPool::Get().Take(mapping_bytes);
  if (base == nullptr) {
    base = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return StackError(mapping_bytes, /*guard_page=*/false, errno);
    if (mprotect(base, page, PROT_NONE) != 0) {
      const int err = errno;
      SM_ASSERT(munmap(base, mapping_bytes) == 0);
      return StackError(mapping_bytes, /*guard_page=*/true, err);
    }
  }
  char* low = static_cast<char*>(base) + page;
  char* high = static_cast<char*>(base) + mapping_bytes;
  auto* header = reinterpret_cast<StackHeader*>(low);
  header->mapping_bytes = mapping_bytes;
  header->valgrind_id = VALGRIND_STACK_REGISTER(low, high);
  // Colour the stack top: stacks are page-aligned, so without an offset every fiber's saved
  // registers would sit at the same page offset, competing for the same L1-D sets and
  // creating 4K-aliasing stalls on every switch (bench_switch's direct_switch_ns).
  // Successive stacks step 39 lines (about 64 / golden ratio) round the 64 line offsets of a
  // 4 KiB page, so that any number of them spreads evenly over the L1-D's sets: a STEPS team
  // of ten fibers then keeps its stacks' hot lines apart, where stacks one line apart would
  // put all ten within 640 bytes (steps_bench's payment_l1d_increase_pct, TPC-C Payment with
  // teams against without).
  static std::atomic<uint32_t> next_colour{0};
  const size_t colour = (next_colour.fetch_add(1, std::memory_order_relaxed) * 39 % 64) * 64;
  sctx->size = usable - sizeof(StackHeader) - colour;
  sctx->sp = high - colour;
  SM_DASSERT(static_cast<char*>(sctx->sp) - sctx->size == low + sizeof(StackHeader));
  return Status::OK();
}

void FiberStackAllocator::deallocate(boost::context::stack_context& sctx) noexcept {
  const size_t page = PageBytes();
  char* high = static_cast<char*>(sctx.sp);
  char* low = high - sctx.size - sizeof(StackHeader);
  auto* header = reinterpret_cast<StackHeader*>(low);
  const size_t mapping_bytes = header->mapping_bytes;
  VALGRIND_STACK_DEREGISTER(header->valgrind_id);
  void* base = low - page;
  if (!StackPool::Get().Give(base, mapping_bytes)) munmap(base, mapping_bytes);
}

void Fiber::NoteExclusiveReleased() {
  SM_ASSERT(exclusive_held_ > 0);
  --exclusive_held_;
}

const char* WaitReasonName(WaitReason reason) {
  switch (reason) {
    case WaitReason::kOther: return "other";
    case WaitReason::kLock: return "lock";
    case WaitReason::kLatch: return "latch";
    case WaitReason::kIo: return "io";
    case WaitReason::kLogFlush: return "log flush";
    case WaitReason::kYield: return "yield";
    case WaitReason::kSleep: return "sleep";
  }
  return "?";
}

Fiber* Fiber::Current() { return Worker::CurrentFiber(); }

}  // namespace sm::threads
