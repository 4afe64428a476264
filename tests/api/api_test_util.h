// What the tests of the public API share: a small database on a given file system.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "sm/io/file.h"
#include "sm/sm.h"

namespace sm::test {

// A database at "/db" on `fs` with a 4 MiB pool, 1 MiB log segments, a 256 KiB log buffer,
// one worker and no background checkpoints; tests change what their workload needs.
inline Options SmallDbOptions(io::FileSystem* fs) {
  Options o;
  o.path = "/db";
  o.file_system = fs;
  o.buffer_pool_bytes = 4u << 20;
  o.log_segment_bytes = 1u << 20;
  o.log_buffer_bytes = 256u << 10;
  o.checkpoint_interval = std::chrono::milliseconds(0);
  o.workers = 1;
  return o;
}

// Opens the database at o.path; the test fails with the status if it does not open.
inline std::unique_ptr<Database> MustOpen(const Options& o) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(o, &db);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return db;
}

// "k00042": keys whose byte order is their numbers' order.
inline std::string NumberedKey(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%05d", i);
  return buf;
}

}  // namespace sm::test
