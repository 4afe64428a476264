// LsnWaitList: link under the spin lock, post outside it.
#include "log/lsn_wait_list.h"

#include <mutex>

namespace sm::log {

bool LsnWaitList::Wait(uint64_t target, const std::atomic<uint64_t>& progress,
                       const std::atomic<bool>& aborted) {
  Waiter waiter;
  waiter.target = target;
  {
    std::lock_guard<threads::SpinLock> guard(lock_);
    // acquire: pairs with the advancer's release store, so what it published before (the
    // durable bytes, the fatal status) is visible once we return.
    if (progress.load(std::memory_order_acquire) >= target ||
        aborted.load(std::memory_order_acquire)) {
      return false;
    }
    waiter.next = head_;
    head_ = &waiter;
    size_.fetch_add(1, std::memory_order_relaxed);
  }
  waiter.baton.Wait();
  return true;
}

size_t LsnWaitList::WakeUpTo(uint64_t lsn) {
  Waiter* ready = nullptr;
  size_t count = 0;
  {
    std::lock_guard<threads::SpinLock> guard(lock_);
    Waiter** link = &head_;
    while (Waiter* w = *link) {
      if (w->target <= lsn) {
        *link = w->next;
        w->next = ready;
        ready = w;
        ++count;
      } else {
        link = &w->next;
      }
    }
    size_.fetch_sub(count, std::memory_order_relaxed);
  }
  while (ready != nullptr) {
    Waiter* next = ready->next;  // read before the post: the record dies once its owner runs
    ready->baton.Post();
    ready = next;
  }
  return count;
}

}  // namespace sm::log
