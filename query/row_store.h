// RowStore: the tuples a materializing operator keeps (a sort's input, a hash join's build
// side, aggregation groups, a materialized subquery), copied with their string bytes.
//
// Owns: the Values of its rows, in chunks, and the bytes of their strings, in an arena.
//
// Invariants:
//   1. A stored row and the strings it points at keep their addresses until Clear or
//      destruction: chunks and arena blocks are never moved or freed before then.
//   2. Every row has width() Values.
//
// Thread/fiber safety: one thread at a time; a filled store may be read by several.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "query/value.h"

namespace sm::query {

// Bytes with stable addresses, handed out in blocks.
class Arena {
 public:
  char* Allocate(size_t bytes);
  // A Value whose string bytes (if any: len > 0) now live in the arena.
  Value Own(Value v) {
    if (v.null || v.len == 0) return v;
    char* p = Allocate(v.len);
    std::memcpy(p, v.s, v.len);
    v.s = p;
    return v;
  }
  // Forgets every allocation; keeps the first block for reuse (a merge join's groups fill and
  // empty the same arena over and over).
  void Reset();
  void Clear();  // forgets every allocation and frees every block

 private:
  static constexpr size_t kBlockBytes = 64 * 1024;
  struct Block {
    std::unique_ptr<char[]> bytes;
    size_t size;
  };
  std::vector<Block> blocks_;
  size_t used_ = 0;  // of the last block
};

class RowStore {
 public:
  explicit RowStore(size_t width = 0) : width_(width) {}
  void Reset(size_t width) {
    if (width != width_) Clear();
    width_ = width;
    Reset();
  }
  size_t width() const { return width_; }
  size_t size() const { return rows_; }
  bool empty() const { return rows_ == 0; }

  // Width() uninitialized Values for a new row (strings in it must be owned through arena()).
  Value* AppendEmpty();
  // A copy of `tuple`, strings included.
  Value* Append(const Value* tuple) {
    Value* row = AppendEmpty();
    for (size_t i = 0; i < width_; ++i) row[i] = arena_.Own(tuple[i]);
    return row;
  }
  Value* row(size_t i) { return &chunks_[i / kRowsPerChunk][(i % kRowsPerChunk) * width_]; }
  const Value* row(size_t i) const {
    return &chunks_[i / kRowsPerChunk][(i % kRowsPerChunk) * width_];
  }
  Arena& arena() { return arena_; }
  // Forgets the rows, keeping the memory of the first chunk and arena block for the next ones.
  void Reset();
  // Forgets the rows and frees their memory.
  void Clear();

 private:
  static constexpr size_t kRowsPerChunk = 1024;
  size_t width_;
  size_t rows_ = 0;
  std::vector<std::unique_ptr<Value[]>> chunks_;
  Arena arena_;
};

}  // namespace sm::query
