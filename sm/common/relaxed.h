// Relaxed<T>: a value one thread writes and others may read at any moment, as an atomic whose
// loads and stores are relaxed (plain moves on x86). For fields whose readers order their reads
// by other means - a sequence count, a lock - and need only that no read is torn or a data race.
//
// Thread/fiber safety: every operation is atomic; nothing is ordered.
#pragma once

#include <atomic>

namespace sm {

template <typename T>
class Relaxed {
 public:
  Relaxed() = default;
  Relaxed(T value) : value_(value) {}  // NOLINT(google-explicit-constructor): a drop-in field
  Relaxed(const Relaxed&) = delete;
  Relaxed& operator=(const Relaxed&) = delete;

  T get() const { return value_.load(std::memory_order_relaxed); }
  operator T() const { return get(); }  // NOLINT(google-explicit-constructor)
  Relaxed& operator=(T value) {
    value_.store(value, std::memory_order_relaxed);
    return *this;
  }

 private:
  std::atomic<T> value_{};
  static_assert(std::atomic<T>::is_always_lock_free, "a relaxed field is a plain word");
};

}  // namespace sm
