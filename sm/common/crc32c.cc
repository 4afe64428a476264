// CRC32C: SSE4.2 crc32 instruction when the CPU has it, slicing-by-8 tables otherwise.
#include "sm/common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sm {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

// kTables[k][b]: the CRC of byte b followed by k zero bytes (slicing-by-8).
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolyReflected : 0);
    t[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));  // x86-64 is little-endian, which the tables assume
  return v;
}

#if defined(__x86_64__)
// The CRC register after `bytes` zero bytes from register `crc` (no inversion: the register
// itself, as the crc32 instruction keeps it).
constexpr uint32_t AfterZeros(uint32_t crc, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) crc = (crc >> 8) ^ kTables[0][crc & 0xff];
  return crc;
}

// kShift[k][b]: AfterZeros(b << 8k, kStripeBytes). AfterZeros is linear in the register, so
// four lookups shift any register past a stripe of zeros.
constexpr size_t kStripeBytes = 256;
using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTable MakeShiftTable() {
  std::array<uint32_t, 32> bit_after{};
  for (int i = 0; i < 32; ++i) bit_after[i] = AfterZeros(uint32_t{1} << i, kStripeBytes);
  ShiftTable t{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t x = b << (8 * k), sum = 0;
      for (int i = 0; i < 32; ++i) sum ^= ((x >> i) & 1) ? bit_after[i] : 0;
      t[k][b] = sum;
    }
  }
  return t;
}

constexpr ShiftTable kShift = MakeShiftTable();

uint32_t ShiftPastStripe(uint32_t crc) {
  return kShift[0][crc & 0xff] ^ kShift[1][(crc >> 8) & 0xff] ^ kShift[2][(crc >> 16) & 0xff] ^
         kShift[3][crc >> 24];
}

// Pages and full-page images are 8 KiB, so most of the bytes checksummed are in long buffers.
// One dependent chain of crc32 instructions runs at the instruction's latency (3 cycles per 8
// bytes); three chains over three adjacent stripes run at its throughput (1 per cycle), and
// since the register after A ++ B is AfterZeros(register after A, |B|) ^ (register of B from
// 0), two shifts join them.
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const uint8_t* p, size_t n,
                                                       uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 3 * kStripeBytes; n -= 3 * kStripeBytes, p += 3 * kStripeBytes) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kStripeBytes; i += 8) {
      c = _mm_crc32_u64(c, LoadLe64(p + i));
      c1 = _mm_crc32_u64(c1, LoadLe64(p + kStripeBytes + i));
      c2 = _mm_crc32_u64(c2, LoadLe64(p + 2 * kStripeBytes + i));
    }
    c = ShiftPastStripe(ShiftPastStripe(static_cast<uint32_t>(c)) ^ static_cast<uint32_t>(c1)) ^
        c2;
  }
  // What is left (most log records are shorter than three stripes): one chain, unrolled so that
  // the loop's own instructions do not outnumber the crc32s, then 4-, 2- and 1-byte steps.
  for (; n >= 32; n -= 32, p += 32) {
    c = _mm_crc32_u64(c, LoadLe64(p));
    c = _mm_crc32_u64(c, LoadLe64(p + 8));
    c = _mm_crc32_u64(c, LoadLe64(p + 16));
    c = _mm_crc32_u64(c, LoadLe64(p + 24));
  }
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, LoadLe64(p));
  uint32_t c32 = static_cast<uint32_t>(c);
  if (n & 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    c32 = _mm_crc32_u32(c32, v);
    p += 4;
  }
  if (n & 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    c32 = _mm_crc32_u16(c32, v);
    p += 2;
  }
  if (n & 1) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}
#endif

bool DetectHardware() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

// Decided once, at static initialization rather than through a function-local static, whose
// guard check (and the registers its slow path saves) would cost more per call than a short
// checksum. A call from another file's static initializer that runs first reads false (static
// storage is zeroed before) and takes the portable path, whose result is the same.
const bool kHardwareAvailable = DetectHardware();

bool HardwareAvailable() { return kHardwareAvailable; }

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t n, uint32_t init) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t crc = ~init;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v = LoadLe64(p) ^ crc;
    crc = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^ kTables[5][(v >> 16) & 0xff] ^
          kTables[4][(v >> 24) & 0xff] ^ kTables[3][(v >> 32) & 0xff] ^
          kTables[2][(v >> 40) & 0xff] ^ kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
  }
  for (; n > 0; --n, ++p) crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xff];
  return ~crc;
}

uint32_t Crc32cHardware(const void* data, size_t n, uint32_t init) {
#if defined(__x86_64__)
  return ~Crc32cSse42(static_cast<const uint8_t*>(data), n, ~init);
#else
  return Crc32cPortable(data, n, init);
#endif
}

bool Crc32cHardwareAvailable() { return HardwareAvailable(); }

uint32_t Crc32c(const void* data, size_t n, uint32_t init) {
  if (HardwareAvailable()) [[likely]]
    return Crc32cHardware(data, n, init);
  return Crc32cPortable(data, n, init);
}

}  // namespace sm
