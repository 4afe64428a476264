// CRC32C: the SSE4.2 crc32 instruction when the CPU has it, else slicing-by-4 tables.
#include "log/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sm::log {
namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

struct Slices {
  uint32_t t[4][256];
};

// t[0] is the byte-at-a-time table; t[k][b] advances t[k-1][b] over one more zero byte.
constexpr Slices BuildSlices() {
  Slices s{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int i = 0; i < 8; ++i) r = (r & 1) ? (r >> 1) ^ kCastagnoliReflected : r >> 1;
    s.t[0][b] = r;
  }
  for (int k = 1; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b)
      s.t[k][b] = s.t[0][s.t[k - 1][b] & 0xff] ^ (s.t[k - 1][b] >> 8);
  }
  return s;
}

constexpr Slices kSlices = BuildSlices();

uint32_t TableUpdate(uint32_t reg, const uint8_t* p, size_t n) {
  while (n >= 4) {
    uint32_t word;
    std::memcpy(&word, p, 4);  // little-endian, as the tables assume
    reg ^= word;
    reg = kSlices.t[3][reg & 0xff] ^ kSlices.t[2][(reg >> 8) & 0xff] ^
          kSlices.t[1][(reg >> 16) & 0xff] ^ kSlices.t[0][reg >> 24];
    p += 4;
    n -= 4;
  }
  while (n-- > 0) reg = kSlices.t[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
  return reg;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareUpdate(uint32_t reg, const uint8_t* p,
                                                          size_t n) {
  uint64_t r = reg;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    r = _mm_crc32_u64(r, word);
    p += 8;
    n -= 8;
  }
  uint32_t r32 = static_cast<uint32_t>(r);
  while (n-- > 0) r32 = _mm_crc32_u8(r32, *p++);
  return r32;
}

bool CpuHasSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

}  // namespace

uint32_t Crc32cTable(const void* data, size_t n, uint32_t init) {
  return ~TableUpdate(~init, static_cast<const uint8_t*>(data), n);
}

uint32_t Crc32c(const void* data, size_t n, uint32_t init) {
#if defined(__x86_64__)
  // Probed once; the initialization of a function-local static is thread-safe.
  static const bool hardware = CpuHasSse42();
  if (hardware) [[likely]]
    return ~HardwareUpdate(~init, static_cast<const uint8_t*>(data), n);
#endif
  return Crc32cTable(data, n, init);
}

}  // namespace sm::log
