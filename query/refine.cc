// Buffer placement (contract in refine.h).
#include "query/refine.h"

#include <memory>
#include <string>

#include "query/nodes.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

bool IsBuffer(const Operator& op) { return op.name() == "Buffer"; }

// kOn: a buffer above every child that is neither blocking nor a buffer, all the way down.
void BufferEveryChild(Operator* op, uint32_t tuples) {
  for (size_t i = 0; i < op->children().size(); ++i) {
    Operator* child = op->children()[i].get();
    BufferEveryChild(child, tuples);
    if (!child->blocking() && !IsBuffer(*child) && !IsBuffer(*op)) {
      op->InsertAboveChild(i, MakeBufferOperator(child->schema(), tuples));
    }
  }
}

}  // namespace

Status PlaceBuffers(const BufferOptions& options, Operator* root) {
  SM_ASSERT(root != nullptr);
  if (options.tuples == 0 || options.tuples > kMaxBufferTuples) {
    return Status::InvalidArgument("a buffer holds 1 to " + std::to_string(kMaxBufferTuples) +
                                   " tuples, not " + std::to_string(options.tuples));
  }
  switch (options.mode) {
    case BufferMode::kOff:
      break;
    case BufferMode::kOn:
      BufferEveryChild(root, options.tuples);
      break;
  }
  return Status::OK();
}

}  // namespace sm::query
