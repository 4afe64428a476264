// LargeValues: the chunks of large values in a table's value tree (format and rules in
// large_values.h).
#include "sm/api/large_values.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "sm/common/assert.h"
#include "sm/common/coding.h"
#include "sm/common/crc32c.h"

namespace sm::api {

namespace {

std::string ChunkKey(uint64_t id, uint32_t chunk) {
  std::string key(kValueKeyBytes, '\0');
  for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(id >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i) key[8 + i] = static_cast<char>(chunk >> (24 - 8 * i));
  return key;
}

// The value id and chunk number of a value tree key; false if it is not one.
bool ParseChunkKey(std::string_view key, uint64_t* id, uint32_t* chunk) {
  if (key.size() != kValueKeyBytes) return false;
  *id = 0;
  *chunk = 0;
  for (int i = 0; i < 8; ++i) *id = (*id << 8) | static_cast<uint8_t>(key[i]);
  for (int i = 0; i < 4; ++i) *chunk = (*chunk << 8) | static_cast<uint8_t>(key[8 + i]);
  return true;
}

uint32_t ChunkCount(uint64_t bytes) {
  return static_cast<uint32_t>((bytes + kChunkBytes - 1) / kChunkBytes);
}

std::string ValueName(uint64_t id) { return "large value " + std::to_string(id); }

}  // namespace

std::string EncodeStub(const StubInfo& stub) {
  std::string out;
  out.reserve(kStubBytes);
  PutFixed64(&out, stub.id);
  PutFixed64(&out, stub.bytes);
  PutFixed32(&out, stub.chunks);
  PutFixed32(&out, stub.crc);
  SM_DASSERT(out.size() == kStubBytes);
  return out;
}

Status DecodeStub(std::string_view bytes, StubInfo* stub) {
  ByteReader in(bytes);
  if (!in.GetFixed64(&stub->id) || !in.GetFixed64(&stub->bytes) || !in.GetFixed32(&stub->chunks) ||
      !in.GetFixed32(&stub->crc) || !in.done() || stub->id == 0 || stub->bytes > kMaxValueBytes ||
      stub->chunks != ChunkCount(stub->bytes)) {
    return Status::Corruption("a large value's stub is damaged");
  }
  return Status::OK();
}

Status LargeValues::Attach(std::unique_ptr<index::BTree> tree) {
  SM_ASSERT(owned_ == nullptr);
  index::Cursor cursor(tree.get());
  SM_TRY(cursor.SeekToLast());
  uint64_t next = 1;
  if (cursor.Valid()) {
    uint64_t id = 0;
    uint32_t chunk = 0;
    if (!ParseChunkKey(cursor.key(), &id, &chunk)) {
      return Status::Corruption("a value tree holds a key that names no chunk");
    }
    next = id + 1;
  }
  next_id_.store(next, std::memory_order_relaxed);
  owned_ = std::move(tree);
  tree_.store(owned_.get(), std::memory_order_release);
  return Status::OK();
}

StubInfo LargeValues::NewStub(std::string_view value) {
  SM_ASSERT(value.size() <= kMaxValueBytes);
  StubInfo stub;
  stub.id = next_id_.fetch_add(1, std::memory_order_relaxed);
  stub.bytes = value.size();
  stub.chunks = ChunkCount(value.size());
  stub.crc = Crc32c(value.data(), value.size());
  return stub;
}

Status LargeValues::WriteChunks(void* txn, const StubInfo& stub, std::string_view value) {
  index::BTree* values = tree();
  SM_ASSERT(values != nullptr);
  // Consecutive keys: the hint finds the last chunk's leaf without a descent.
  index::LeafHint hint;
  index::OpContext ctx{txn, nullptr, &hint};
  for (uint32_t chunk = 0; chunk < stub.chunks; ++chunk) {
    const size_t at = size_t{chunk} * kChunkBytes;
    SM_TRY(values->Insert(ChunkKey(stub.id, chunk),
                          value.substr(at, std::min(kChunkBytes, value.size() - at)), ctx));
  }
  return Status::OK();
}

Status LargeValues::Free(void* txn, std::string_view stub_bytes) {
  StubInfo stub;
  SM_TRY(DecodeStub(stub_bytes, &stub));
  index::BTree* values = tree();
  if (values == nullptr) return Status::Corruption("a stub in a table without a value tree");
  index::LeafHint hint;
  index::OpContext ctx{txn, nullptr, &hint};
  for (uint32_t chunk = 0; chunk < stub.chunks; ++chunk) {
    Status s = values->Delete(ChunkKey(stub.id, chunk), ctx);
    if (s.IsNotFound()) {
      return Status::Corruption(ValueName(stub.id) + " lacks chunk " + std::to_string(chunk));
    }
    SM_TRY(s);
  }
  return Status::OK();
}

Status LargeValues::Resolve(std::string_view stub_bytes, std::string* value) {
  StubInfo stub;
  SM_TRY(DecodeStub(stub_bytes, &stub));
  const index::BTree* values = tree();
  if (values == nullptr) return Status::Corruption("a stub in a table without a value tree");
  value->clear();
  value->reserve(stub.bytes);
  index::Cursor cursor(values);
  cursor.SetLower(ChunkKey(stub.id, 0), true);
  cursor.SetUpper(ChunkKey(stub.id + 1, 0), false);
  SM_TRY(cursor.SeekToFirst());
  uint32_t expected = 0;
  bool in_order = true;
  if (cursor.Valid()) {
    auto append = [&](std::string_view key, std::string_view chunk) {
      uint64_t id = 0;
      uint32_t number = 0;
      in_order = ParseChunkKey(key, &id, &number) && id == stub.id && number == expected;
      if (!in_order) return false;
      value->append(chunk);
      ++expected;
      return true;
    };
    append(cursor.key(), cursor.value());
    size_t visited = 0;
    while (in_order && cursor.Valid()) SM_TRY(cursor.NextBatch(stub.chunks + 1, append, &visited));
  }
  if (!in_order || expected != stub.chunks || value->size() != stub.bytes) {
    return Status::Corruption(ValueName(stub.id) + ": its chunks do not add up to its " +
                              std::to_string(stub.bytes) + " bytes");
  }
  if (Crc32c(value->data(), value->size()) != stub.crc) {
    return Status::Corruption(ValueName(stub.id) + ": checksum mismatch");
  }
  return Status::OK();
}

namespace {

// Collects the stubs a walk of a table meets instead of expanding them.
class StubCollector final : public index::ExternalValues {
 public:
  Status Resolve(std::string_view stub_bytes, std::string* value) override {
    StubInfo stub;
    SM_TRY(DecodeStub(stub_bytes, &stub));
    if (!stubs_.emplace(stub.id, stub).second) {
      return Status::Corruption(ValueName(stub.id) + " is named by two stubs");
    }
    value->clear();
    return Status::OK();
  }
  std::map<uint64_t, StubInfo>& stubs() { return stubs_; }

 private:
  std::map<uint64_t, StubInfo> stubs_;
};

}  // namespace

Status LargeValues::Check(const index::BTree& table, uint64_t* values) const {
  StubCollector collector;
  index::OpContext collect;
  collect.external = &collector;
  index::Cursor rows(&table, {}, collect);
  size_t visited = 0;
  auto skip = [](std::string_view, std::string_view) { return true; };
  SM_TRY(rows.SeekToFirst());  // the cursor's reads hand each stub to the collector
  while (rows.Valid()) SM_TRY(rows.NextBatch(4096, skip, &visited));
  std::map<uint64_t, StubInfo>& stubs = collector.stubs();
  *values = stubs.size();
  const index::BTree* chunks = tree();
  if (chunks == nullptr) {
    if (stubs.empty()) return Status::OK();
    return Status::Corruption("stubs of large values in a table without a value tree");
  }
  // The chunks in key order: by value id, then chunk number.
  uint64_t id = 0;
  uint32_t expected = 0;
  uint64_t bytes = 0;
  uint32_t crc = 0;
  const StubInfo* stub = nullptr;
  Status bad;
  auto finish = [&]() {
    if (stub != nullptr && bad.ok() &&
        (expected != stub->chunks || bytes != stub->bytes || crc != stub->crc)) {
      bad = Status::Corruption(ValueName(id) + ": its chunks do not match its stub");
    }
    if (stub != nullptr) stubs.erase(id);
    stub = nullptr;
  };
  auto chunk = [&](std::string_view key, std::string_view value) {
    uint64_t key_id = 0;
    uint32_t number = 0;
    if (!ParseChunkKey(key, &key_id, &number)) {
      bad = Status::Corruption("a value tree holds a key that names no chunk");
      return false;
    }
    if (stub == nullptr || key_id != id) {
      finish();
      if (!bad.ok()) return false;
      auto it = stubs.find(key_id);
      if (it == stubs.end()) {
        bad = Status::Corruption(ValueName(key_id) + " has chunks but no stub");
        return false;
      }
      id = key_id;
      stub = &it->second;
      expected = 0;
      bytes = 0;
      crc = 0;
    }
    if (number != expected++) {
      bad = Status::Corruption(ValueName(id) + " lacks chunk " + std::to_string(expected - 1));
      return false;
    }
    bytes += value.size();
    crc = Crc32c(value.data(), value.size(), crc);
    return true;
  };
  index::Cursor cursor(chunks);
  SM_TRY(cursor.SeekToFirst());
  if (cursor.Valid() && chunk(cursor.key(), cursor.value())) {
    while (cursor.Valid() && bad.ok()) {
      SM_TRY(cursor.NextBatch(4096, chunk, &visited));
      if (visited == 0) break;
    }
  }
  if (bad.ok()) finish();
  if (!bad.ok()) return bad;  // (SM_TRY would leave `bad` itself unchecked)
  if (!stubs.empty()) {
    return Status::Corruption(ValueName(stubs.begin()->first) + " has no chunks");
  }
  return Status::OK();
}

}  // namespace sm::api
