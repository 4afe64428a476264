// Plan refinement (Zhou & Ross, SIGMOD 2004, section 6): where buffer operators go in an
// instantiated operator tree, before it is opened.
//
// Owns: BufferMode, BufferOptions and PlaceBuffers.
//
// The automatic placement (kAuto) follows section 6.2. Only operators that are not blocking and
// whose estimated output exceeds the cardinality threshold join execution groups. Bottom-up,
// each such operator starts a group of its own code (footprints.h modules); a child's group is
// merged into its parent's while the union of their functions, with the code the parent runs to
// take the child's tuples in, fits the L1-I; when it does not, a buffer goes above the child's
// group and the parent's group starts afresh. A group whose consumer cannot join it (a blocking
// operator, one below the threshold, or an input taken in another phase such as a hash join's
// build) gets a buffer only if the group and the consumer's input code together exceed the
// L1-I: where they fit, buffering cannot save misses (the paper's Query 2).
//
// Invariants of a refined tree: no buffer above the root (its rows go to the client), above a
// blocking operator (it has already materialized its output) or above another buffer; a buffer
// has its child's schema, so the operators above it are unchanged.
#pragma once

#include <cstdint>

#include "query/footprints.h"
#include "query/operator.h"
#include "query/plan.h"
#include "sm/common/status.h"

namespace sm::query {

enum class BufferMode : uint8_t {
  kOff,   // no buffers
  kOn,    // a buffer above every non-blocking operator but the root
  kAuto,  // where the refinement above puts them
};

// The paper's calibrated threshold (a Pentium 4 running PostgreSQL).
inline constexpr double kDefaultBufferThreshold = 600;

struct BufferOptions {
  BufferMode mode = BufferMode::kOff;
  uint32_t tuples = kDefaultBufferTuples;  // 1 to kMaxBufferTuples
  // kAuto: operators whose estimated output is at most this many rows join no group; < 0
  // means the footprint table's calibrated threshold, or kDefaultBufferThreshold if it has none.
  double threshold_rows = -1;
  // kAuto: the L1-I's size in bytes; 0 reads the machine's (32 KiB if it does not say).
  uint64_t l1i_bytes = 0;
  // kAuto: the modules' footprints; null means FootprintTable::Default().
  const FootprintTable* footprints = nullptr;
};

// Inserts buffers into the tree at `root` as `options` say; each buffer kAuto places says
// why in its EXPLAIN detail. InvalidArgument for a buffer size out of range.
[[nodiscard]] Status PlaceBuffers(const BufferOptions& options, Operator* root);

// The L1-I's size of this machine, or 32 KiB if it does not say.
uint64_t MachineL1iBytes();

}  // namespace sm::query
