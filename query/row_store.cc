// Arena and RowStore (contract in row_store.h).
#include "query/row_store.h"

#include "sm/common/assert.h"

namespace sm::query {

char* Arena::Allocate(size_t bytes) {
  if (blocks_.empty() || used_ + bytes > blocks_.back().size) {
    size_t size = bytes > kBlockBytes ? bytes : kBlockBytes;
    blocks_.push_back(Block{std::make_unique<char[]>(size), size});
    used_ = 0;
  }
  char* p = blocks_.back().bytes.get() + used_;
  used_ += bytes;
  SM_DASSERT(used_ <= blocks_.back().size);
  return p;
}

void Arena::Reset() {
  if (blocks_.size() > 1) blocks_.resize(1);
  used_ = 0;
}

void Arena::Clear() {
  blocks_.clear();
  used_ = 0;
}

Value* RowStore::AppendEmpty() {
  SM_ASSERT(width_ > 0);
  size_t chunk = rows_ / kRowsPerChunk;
  if (chunk == chunks_.size()) {
    chunks_.push_back(std::make_unique<Value[]>(kRowsPerChunk * width_));
  }
  Value* row = &chunks_[chunk][(rows_ % kRowsPerChunk) * width_];
  ++rows_;
  return row;
}

void RowStore::Reset() {
  if (chunks_.size() > 1) chunks_.resize(1);
  rows_ = 0;
  arena_.Reset();
}

void RowStore::Clear() {
  chunks_.clear();
  rows_ = 0;
  arena_.Clear();
}

}  // namespace sm::query
