// Helpers for the B-tree tests: an in-memory database (fault-injection file system, volume,
// buffer pool, tree), key makers, and comparison against a std::map model. (Seeds and the fiber
// runtime come from tests/test_util.h.)
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "index/btree.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/io/testing/fault_file.h"
#include "sm/space/volume.h"
#include "tests/test_util.h"

namespace sm::test {

using Model = std::map<std::string, std::string>;

// A tree over a pool of `frames` pages on an in-memory volume.
struct TreeEnv {
  explicit TreeEnv(size_t frames, index::BtreeOptions options = {}, uint64_t fs_seed = 1)
      : fs(fs_seed) {
    REQUIRE(space::Volume::Create(&fs, "btree.vol", space::VolumeOptions{}, &volume).ok());
    buffer::BufferPoolOptions pool_options;
    pool_options.pool_bytes = frames * kPageBytes;
    REQUIRE(buffer::BufferPool::Create(volume.get(), pool_options, &pool).ok());
    REQUIRE(index::BTree::Create(pool.get(), options, &root, &tree).ok());
  }

  io::FaultInjectionFileSystem fs;
  std::unique_ptr<space::Volume> volume;
  std::unique_ptr<buffer::BufferPool> pool;
  PageId root;
  std::unique_ptr<index::BTree> tree;
};

// 8-byte big-endian: memcmp order is numeric order.
inline std::string Key64(uint64_t n) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i) {
    key[i] = static_cast<char>(n & 0xff);
    n >>= 8;
  }
  return key;
}

// A value that names its key and a version, `bytes` long (at least 12).
inline std::string ValueFor(uint64_t n, uint64_t version, size_t bytes = 24) {
  std::string v = std::to_string(n) + "/" + std::to_string(version) + ":";
  v.resize(std::max<size_t>(bytes, v.size()), static_cast<char>('a' + n % 26));
  return v;
}

inline void RequireVerified(const index::BTree& tree, index::BtreeStats* stats = nullptr) {
  Status s = tree.Verify(stats);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Forward and backward full scans both equal the model.
inline void RequireSameAsModel(const index::BTree& tree, const Model& model) {
  index::Cursor cursor(&tree);
  REQUIRE(cursor.SeekToFirst().ok());
  auto it = model.begin();
  size_t n = 0;
  for (; cursor.Valid(); ++it, ++n) {
    REQUIRE(it != model.end());
    REQUIRE(cursor.key() == it->first);
    REQUIRE(cursor.value() == it->second);
    REQUIRE(cursor.Next().ok());
  }
  REQUIRE(it == model.end());
  REQUIRE(cursor.SeekToLast().ok());
  auto rit = model.rbegin();
  for (; cursor.Valid(); ++rit) {
    REQUIRE(rit != model.rend());
    REQUIRE(cursor.key() == rit->first);
    REQUIRE(cursor.Prev().ok());
  }
  REQUIRE(rit == model.rend());
  index::BtreeStats stats;
  RequireVerified(tree, &stats);
  REQUIRE(stats.records == model.size());
}

}  // namespace sm::test
