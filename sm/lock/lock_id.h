// LockId: the name of a lockable resource in the hierarchy database > table > key.
//
// Owns: the lock name space and the hashing of key bytes into fixed-size ids.
//
//   kind        table   hash               parent
//   kDatabase   0       0                  (none)
//   kTable      t       0                  Database()
//   kKey        t       Hash64(key bytes)  Table(t)
//   kTableEnd   t       0                  Table(t)   the "end of table" supremum key: the
//                                                     next key after the last key of table t
//
// A key lock names (table, 64-bit hash of the key's bytes), not the bytes themselves, so a
// LockId is 16 bytes and trivially copyable and a lock request never allocates. Two distinct
// keys of one table whose hashes collide share one lock. That can only cause false conflicts
// (a transaction waits for, or deadlocks with, one that touched the other key), never a
// missed conflict: equal keys always hash equally. With a 64-bit hash the chance of a
// collision among n keys locked at once is about n^2 / 2^65.
//
// Invariants:
//   1. Equal (kind, table, key bytes) give equal LockIds (the hash is a pure function of the
//      bytes; the table id is part of the id, so equal keys of different tables differ).
//   2. kTableEnd never equals any kKey id (the kind differs), whatever the key hash.
//   3. The default LockId (kind kNone) names nothing and is never locked.
//
// Thread/fiber safety: a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sm::lock {

// The id of a table (a B-tree store). The lock manager treats it as an opaque number.
using TableId = uint32_t;

class LockId {
 public:
  enum class Kind : uint8_t { kNone = 0, kDatabase, kTable, kKey, kTableEnd };

  constexpr LockId() = default;

  static constexpr LockId Database() { return LockId(Kind::kDatabase, 0, 0); }
  static constexpr LockId Table(TableId table) { return LockId(Kind::kTable, table, 0); }
  static LockId Key(TableId table, std::string_view key) {
    return LockId(Kind::kKey, table, HashKey(key));
  }
  // A key lock from an already computed HashKey() value (callers that lock the same key
  // repeatedly may cache the hash).
  static constexpr LockId KeyHash(TableId table, uint64_t key_hash) {
    return LockId(Kind::kKey, table, key_hash);
  }
  static constexpr LockId TableEnd(TableId table) { return LockId(Kind::kTableEnd, table, 0); }

  // 64-bit hash of key bytes (wyhash-style multiply-xor mixing; stable across runs).
  static uint64_t HashKey(std::string_view key);

  constexpr Kind kind() const { return static_cast<Kind>(meta_ >> 32); }
  constexpr TableId table() const { return static_cast<TableId>(meta_); }
  constexpr uint64_t key_hash() const { return hash_; }
  constexpr bool valid() const { return kind() != Kind::kNone; }
  constexpr bool is_key() const { return kind() == Kind::kKey || kind() == Kind::kTableEnd; }

  // The enclosing resource (key -> table -> database); kNone for the database.
  constexpr LockId Parent() const {
    switch (kind()) {
      case Kind::kKey:
      case Kind::kTableEnd:
        return Table(table());
      case Kind::kTable:
        return Database();
      default:
        return LockId();
    }
  }

  // Spreads ids over lock-table buckets: every bit of the id affects the result.
  constexpr uint64_t Mix() const {
    uint64_t x = hash_ ^ (meta_ * 0x9e3779b97f4a7c15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
  }

  constexpr bool operator==(const LockId& o) const {
    return hash_ == o.hash_ && meta_ == o.meta_;
  }

  std::string ToString() const;

 private:
  constexpr LockId(Kind kind, TableId table, uint64_t hash)
      : hash_(hash), meta_((uint64_t{static_cast<uint8_t>(kind)} << 32) | table) {}

  uint64_t hash_ = 0;
  uint64_t meta_ = 0;  // kind << 32 | table: one word so that equality is two compares
};

static_assert(sizeof(LockId) == 16);
static_assert(!(LockId::TableEnd(7) == LockId::KeyHash(7, 0)));  // invariant 2

}  // namespace sm::lock
