// sm_admin dump and load: a database's tables and indexes as a portable file, and a new database
// rebuilt from one. The way to move data from one on-disk format version to another
// (docs/design/api.md, "On-disk format versions"): dump with the build that reads the old
// database, load with the build that writes the new one.
//
// The dump goes through the public API only (every table's rows in key order, read by a
// cursor), so it does not depend on the on-disk format, and its own format has a version that
// later builds keep reading.
//
// Byte format, version 1 (integers little-endian):
//   header   8 bytes "sm-dump\n", u32 version (1)
//   table    u8 'T', u8 kind (1: table, 0: index made by CreateIndex), u32 name bytes, name;
//            then per row, in key order: u8 'R', u32 key bytes, key, u32 value bytes, value;
//            then u8 'E', u64 rows
//   trailer  u8 'Z', u32 tables, u32 CRC32C of every byte before the CRC
//
// Invariants:
//   1. load reads the whole file and checks its structure, counts and CRC before it creates
//      the database: a damaged or truncated dump creates nothing.
//   2. load creates a new database (InvalidArgument if DIR holds one), so it never mixes
//      loaded rows with others.
//   3. Dumping a loaded database gives the same bytes as the dump it was loaded from (tested in
//      tests/admin/dump_load_test.sh).
//
// Thread/fiber safety: each function opens and closes its database; one call at a time per
// directory (a second Open of a directory returns Busy).
#pragma once

#include <string>

#include "sm/sm.h"

namespace sm::admin {

inline constexpr uint32_t kDumpFormatVersion = 1;

// Writes every table and index of the open database `db` to `path` (through a temporary file
// renamed into place once synced); *tables and *rows (if not null) get the counts written.
[[nodiscard]] Status DumpDatabase(Database* db, const std::string& path, uint64_t* tables,
                                  uint64_t* rows);

// Checks the dump at `path`, then creates a database in `dir` (which must not hold one) with
// its tables, indexes and rows, and closes it. *tables and *rows (if not null) get the counts
// loaded.
[[nodiscard]] Status LoadDatabase(const std::string& path, const std::string& dir,
                                  uint64_t* tables, uint64_t* rows);

}  // namespace sm::admin
