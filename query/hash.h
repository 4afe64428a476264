// Hashing and equality of tuples' key values, for hash joins and hash aggregation.
//
// Invariants:
//   1. Values equal under KeysEqual hash alike: integers by their 64 bits, doubles by their
//      bits with -0.0 made 0.0, strings by their bytes.
//   2. KeysEqual treats NULL as equal to NULL (grouping); joins skip NULL keys before asking.
//
// Thread/fiber safety: pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "query/expr_eval.h"
#include "query/value.h"

namespace sm::query {

inline uint64_t MixHash(uint64_t h) {
  // The finalizer of MurmurHash3's 64-bit variant: every input bit affects every output bit.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb3fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

inline uint64_t HashBytes(std::string_view s) {
  // FNV-1a over 8-byte words, then mixed.
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001b3ULL;
  return MixHash(h);
}

inline uint64_t HashValue(const Value& v, Type type) {
  if (v.null) return 0x9e3779b97f4a7c15ULL;
  if (type == Type::kString) return HashBytes(v.str());
  if (type == Type::kDouble) {
    double d = v.d == 0.0 ? 0.0 : v.d;
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return MixHash(bits);
  }
  return MixHash(static_cast<uint64_t>(v.i));
}

inline uint64_t HashKeys(const Value* keys, const std::vector<Type>& types) {
  if (types.size() == 1) return HashValue(keys[0], types[0]);  // most joins and groups
  // Several keys: integers enter by their bits, each step a multiply and a shift that carry
  // every earlier key into the high bits, and one full mix at the end.
  uint64_t h = types.size();
  for (size_t i = 0; i < types.size(); ++i) {
    const Value& v = keys[i];
    uint64_t x =
        IsIntegral(types[i]) && !v.null ? static_cast<uint64_t>(v.i) : HashValue(v, types[i]);
    h = (h ^ x) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 32;
  }
  return MixHash(h);
}

// Equality of two non-NULL key values of one type; integers compared inline.
inline bool KeyValuesEqual(const Value& a, const Value& b, Type type) {
  return IsIntegral(type) ? a.i == b.i : CompareValues(a, b, type) == 0;
}

inline bool KeysEqual(const Value* a, const Value* b, const std::vector<Type>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (a[i].null || b[i].null) {
      if (a[i].null != b[i].null) return false;
      continue;
    }
    if (!KeyValuesEqual(a[i], b[i], types[i])) return false;
  }
  return true;
}

}  // namespace sm::query
