// Fiber stacks and the per-fiber counters.
#include "threads/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
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

}  // namespace

boost::context::stack_context FiberStackAllocator::allocate() {
  const size_t page = PageBytes();
  const size_t usable = (stack_bytes_ + page - 1) / page * page;
  const size_t mapping_bytes = usable + page;  // + guard page
  void* base = StackPool::Get().Take(mapping_bytes);
  if (base == nullptr) {
    base = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // Out of address space for a stack: nothing sensible can continue (no exceptions here).
    SM_ASSERT(base != MAP_FAILED);
    SM_ASSERT(mprotect(base, page, PROT_NONE) == 0);
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
  boost::context::stack_context sctx;
  sctx.size = usable - sizeof(StackHeader) - colour;
  sctx.sp = high - colour;
  return sctx;
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
