// Large values: a value too large for a leaf lives in its table's value tree, cut into chunks,
// and the table's leaf holds a stub that names it, marked as external (index/btree_node.h,
// kLeafExternalBit). The scheme is PostgreSQL's TOAST over this engine's own B-tree, so that
// the chunks are logged, recovered, rolled back, freed and verified by the machinery every
// other record already goes through, crash tests included.
//
// Owns: the stub's format, the value tree's keys and chunks, the value ids, the reading,
// writing and freeing of a value's chunks, and the check that a table's stubs and chunks agree.
//
// A value is large when its record (key + value + 2) would exceed index::kMaxLeafRecordBytes;
// it may hold up to kMaxValueBytes.
//   Stub (kStubBytes, little-endian): u64 value id | u64 value bytes | u32 chunk count |
//     u32 CRC32C of the value.
//   Value tree key: u64 value id | u32 chunk number, both big-endian (a value's chunks are
//     adjacent and in order); value: kChunkBytes of the value, the last chunk the rest.
//   The value tree is made with the table's first large value, in a catalog transaction of its
//   own (DatabaseImpl::CreateValueTree), and is dropped with the table.
//
// Invariants:
//   1. A committed stub's chunks are all in the value tree: numbered 0 .. count - 1, each
//      kChunkBytes long but the last, together the stub's length and checksum. Every read
//      checks the length and the checksum; Verify checks the rest.
//   2. A value id names the chunks of one stub: ids come from a counter that starts above the
//      largest id in the tree when the tree is opened and only grows.
//
// Concurrency. The value tree takes no key locks: a stub's key lock guards its chunks. The
// writer of a stub (which holds the key's exclusive lock until it ends) writes the stub, then
// its chunks; the writer that replaces or deletes a stub (which holds it too) frees the old
// chunks after changing the stub. A reader expands a stub while it holds the stub's leaf
// latched, after its key lock was granted (index/btree_hooks.h, ExternalValues): the stub is
// then committed or its own, and no one frees its chunks before changing the stub, which the
// latch prevents. Latch order: a table's leaf may be held while its value tree is read, never
// the other way round, and writers never hold both.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "index/btree.h"
#include "index/btree_hooks.h"
#include "index/btree_node.h"
#include "sm/common/status.h"

namespace sm::api {

inline constexpr size_t kStubBytes = 8 + 8 + 4 + 4;
inline constexpr size_t kValueKeyBytes = 8 + 4;
// As much of a leaf as one record may take: four chunks fill a leaf.
inline constexpr size_t kChunkBytes =
    index::kMaxLeafRecordBytes - index::kLeafRecordOverheadBytes - kValueKeyBytes;
inline constexpr uint64_t kMaxValueBytes = uint64_t{256} << 20;

// Whether a record of this key and value needs a large value's stub.
inline bool IsLargeRecord(std::string_view key, std::string_view value) {
  return index::LeafRecordBytes(key.size(), value.size()) > index::kMaxLeafRecordBytes;
}

struct StubInfo {
  uint64_t id = 0;
  uint64_t bytes = 0;
  uint32_t chunks = 0;
  uint32_t crc = 0;
};
std::string EncodeStub(const StubInfo& stub);
// Corruption if the bytes are not a stub (a length, count or size out of bounds).
Status DecodeStub(std::string_view bytes, StubInfo* stub);

// The large values of one table: its value tree (absent until the first large value) and the
// next value id. Thread/fiber safety: Resolve, Write and Free may run concurrently with each
// other (on different value ids, as the concurrency rule above makes them); Attach happens
// once, before any of them can meet a stub.
class LargeValues final : public index::ExternalValues {
 public:
  // The value tree once Attach ran, else null.
  index::BTree* tree() const { return tree_.load(std::memory_order_acquire); }
  // Takes the value tree (opened or just created) and starts the ids above its largest.
  [[nodiscard]] Status Attach(std::unique_ptr<index::BTree> tree);

  // The stub for `value` under a new value id (the chunks are written by WriteChunks).
  StubInfo NewStub(std::string_view value);
  // Writes the chunks of `value` under the stub's id, logged in `txn` (a txn::Txn*).
  [[nodiscard]] Status WriteChunks(void* txn, const StubInfo& stub, std::string_view value);
  // Deletes the chunks a stub names, logged in `txn`.
  [[nodiscard]] Status Free(void* txn, std::string_view stub_bytes);
  // index::ExternalValues: reads the chunks and checks their length and checksum.
  Status Resolve(std::string_view stub_bytes, std::string* value) override;

  // Verify: every stub of `table` has its chunks (invariant 1) and every chunk a stub. Reads
  // without locks: only for a database no transaction is changing. *values: the stubs seen.
  [[nodiscard]] Status Check(const index::BTree& table, uint64_t* values) const;

 private:
  std::unique_ptr<index::BTree> owned_;
  std::atomic<index::BTree*> tree_{nullptr};
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace sm::api
