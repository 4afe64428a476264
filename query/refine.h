// Plan refinement (Zhou & Ross, SIGMOD 2004, section 6): where buffer operators go in an
// instantiated operator tree, before it is opened.
//
// Owns: BufferMode, BufferOptions and PlaceBuffers.
//
// Invariants of a refined tree: no buffer above the root (its rows go to the client), above a
// blocking operator (it has already materialized its output) or above another buffer; a buffer
// has its child's schema, so the operators above it are unchanged.
#pragma once

#include <cstdint>

#include "query/operator.h"
#include "query/plan.h"
#include "sm/common/status.h"

namespace sm::query {

enum class BufferMode : uint8_t {
  kOff,  // no buffers
  kOn,   // a buffer above every non-blocking operator but the root
};

struct BufferOptions {
  BufferMode mode = BufferMode::kOff;
  uint32_t tuples = kDefaultBufferTuples;  // 1 to kMaxBufferTuples
};

// Inserts buffers into the tree at `root` as `options` say. InvalidArgument for a buffer size
// out of range.
[[nodiscard]] Status PlaceBuffers(const BufferOptions& options, Operator* root);

}  // namespace sm::query
