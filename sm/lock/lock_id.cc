// LockId: key hashing and printing.
#include "sm/lock/lock_id.h"

#include <cstdio>
#include <cstring>

namespace sm::lock {
namespace {

// wyhash-style primitives: a 64x64->128 multiply folded by xor mixes every input bit into
// every output bit in one instruction pair.
inline uint64_t Mum(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
inline uint64_t Read8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t Read4(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

constexpr uint64_t kSecret0 = 0xa0761d6478bd642full;
constexpr uint64_t kSecret1 = 0xe7037ed1a0b428dbull;
constexpr uint64_t kSecret2 = 0x8ebc6af09c88c6e3ull;

}  // namespace

uint64_t LockId::HashKey(std::string_view key) {
  const char* p = key.data();
  size_t n = key.size();
  uint64_t seed = kSecret0;
  while (n > 16) {
    seed = Mum(Read8(p) ^ kSecret1, Read8(p + 8) ^ seed);
    p += 16;
    n -= 16;
  }
  // The last 1..16 bytes, read as two possibly overlapping words; the length is mixed in
  // below, so overlapping reads of different lengths cannot alias.
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = Read8(p);
    b = Read8(p + n - 8);
  } else if (n >= 4) {
    a = Read4(p);
    b = Read4(p + n - 4);
  } else if (n > 0) {
    a = (uint64_t{static_cast<uint8_t>(p[0])} << 16) |
        (uint64_t{static_cast<uint8_t>(p[n >> 1])} << 8) | static_cast<uint8_t>(p[n - 1]);
  }
  return Mum(kSecret2 ^ key.size(), Mum(a ^ kSecret1, b ^ seed));
}

std::string LockId::ToString() const {
  char buf[64];
  switch (kind()) {
    case Kind::kNone:
      return "none";
    case Kind::kDatabase:
      return "db";
    case Kind::kTable:
      std::snprintf(buf, sizeof(buf), "table:%u", table());
      return buf;
    case Kind::kKey:
      std::snprintf(buf, sizeof(buf), "key:%u/%016llx", table(),
                    static_cast<unsigned long long>(key_hash()));
      return buf;
    case Kind::kTableEnd:
      std::snprintf(buf, sizeof(buf), "end:%u", table());
      return buf;
  }
  return "?";
}

}  // namespace sm::lock
