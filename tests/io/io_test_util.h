// Helpers for the I/O and storage tests: scratch directories on the real file system, a way to
// run the same test against every FileSystem implementation, and a fiber runtime.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "sm/io/file.h"
#include "sm/io/testing/fault_file.h"
#include "tests/test_util.h"
#include "threads/runtime.h"

namespace sm::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/sm-io-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A FileSystem to test against plus the directory to work in: the POSIX one in a scratch
// directory, or a fresh in-memory fault-injection one (which needs its directory created).
struct TestFs {
  explicit TestFs(bool posix, uint64_t seed = 1) {
    if (posix) {
      scratch = std::make_unique<ScratchDir>();
      fs = io::FileSystem::Default();
      dir = scratch->path();
    } else {
      fault = std::make_unique<io::FaultInjectionFileSystem>(seed);
      fs = fault.get();
      dir = "/db";
      REQUIRE(fs->CreateDir(dir).ok());
    }
  }
  std::string Path(const std::string& name) const { return dir + "/" + name; }

  std::unique_ptr<ScratchDir> scratch;
  std::unique_ptr<io::FaultInjectionFileSystem> fault;
  io::FileSystem* fs = nullptr;
  std::string dir;
};

// A fiber runtime with `workers` workers.
inline io::OpenOptions CreateOptions(bool direct = true) {
  io::OpenOptions options;
  options.create = true;
  options.direct = direct;
  return options;
}

}  // namespace sm::test
