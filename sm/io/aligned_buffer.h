// AlignedBuffer: an owned heap buffer aligned for direct I/O, zero-filled unless made by
// Uninitialized.
//
// Owns: one allocation of `size` bytes aligned to threads::kDirectIoAlignment, rounded up to a
// multiple of it (aligned_alloc requires that), freed on destruction.
//
// Thread/fiber safety: a value type; the bytes are the caller's to synchronize.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "sm/common/assert.h"
#include "threads/reactor.h"

namespace sm::io {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size) : AlignedBuffer(size, /*zero=*/true) {}
  // For a buffer that is only ever read into, and read back no further than was filled (a log
  // reader's window): zeroing it first would cost as much as a read.
  static AlignedBuffer Uninitialized(size_t size) { return AlignedBuffer(size, /*zero=*/false); }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  AlignedBuffer(size_t size, bool zero) : size_(size) {
    size_t rounded = (size + threads::kDirectIoAlignment - 1) / threads::kDirectIoAlignment *
                     threads::kDirectIoAlignment;
    if (rounded == 0) rounded = threads::kDirectIoAlignment;
    data_ = static_cast<char*>(std::aligned_alloc(threads::kDirectIoAlignment, rounded));
    SM_ASSERT(data_ != nullptr);
    if (zero) std::memset(data_, 0, rounded);
  }

  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sm::io
