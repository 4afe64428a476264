// CRC32C (Castagnoli) for log record and log-file block checksums.
//
// Owns: the log's checksum function. log/ may include only sm/common, threads/ and sm/io, so it
// cannot use the page checksum in sm/page/crc32c.h; the two compute the same function (same
// polynomial and conventions: Crc32c("123456789") == 0xE3069283) and should become one in
// sm/common.
//
// Chaining: Crc32c(b, nb, Crc32c(a, na)) == Crc32c(a ++ b, na + nb), which lets a record's
// payload be summed before its LSN is known and the header afterwards.
//
// Thread/fiber safety: pure functions, safe from anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sm::log {

uint32_t Crc32c(const void* data, size_t n, uint32_t init = 0);

// The table-driven path, always available (tests compare it with the hardware path).
uint32_t Crc32cTable(const void* data, size_t n, uint32_t init = 0);

}  // namespace sm::log
