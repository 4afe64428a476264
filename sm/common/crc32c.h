// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78): the checksum of pages
// and log records.
//
// Owns: the dispatch between the SSE4.2 crc32 instruction and a portable slicing-by-8 table
// implementation. The choice is made once per process (__builtin_cpu_supports("sse4.2")).
//
// Convention (the usual one, as in iSCSI, ext4 and LevelDB): the register starts as ~init and
// the result is complemented, so Crc32c("123456789") == 0xE3069283 and checksums chain:
//   Crc32c(b, nb, Crc32c(a, na)) == Crc32c(a ++ b, na + nb).
//
// Thread/fiber safety: pure functions, safe from anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sm {

uint32_t Crc32c(const void* data, size_t n, uint32_t init = 0);

// The two implementations behind Crc32c, for tests and benchmarks. Crc32cHardware may only be
// called when Crc32cHardwareAvailable().
uint32_t Crc32cPortable(const void* data, size_t n, uint32_t init = 0);
uint32_t Crc32cHardware(const void* data, size_t n, uint32_t init = 0);
bool Crc32cHardwareAvailable();

}  // namespace sm
