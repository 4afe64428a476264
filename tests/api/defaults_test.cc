// The default Options are an embedded database's: a small one costs a few MiB of disk and
// memory and a handful of threads, on the real file system.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "sm/common/key_encoding.h"
#include "sm/sm.h"
#include "tests/io/io_test_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

namespace fs = std::filesystem;

// The bytes the files under `dir` take on disk (allocated blocks, so preallocation counts).
uint64_t DiskBytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    if (entry.is_regular_file() && ::stat(entry.path().c_str(), &st) == 0) {
      bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return bytes;
}

// A field of /proc/self/status ("Threads", "VmRSS" in kB).
uint64_t ProcStatus(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  }
  FAIL("no " << field << " in /proc/self/status");
  return 0;
}

TEST_CASE("a small database with the default options is small on disk and in memory",
          "[unit][api]") {
  test::ScratchDir dir;
  Options options;
  options.path = dir.path() + "/db";
  // ThreadSanitizer starts a thread of its own at the process's first thread creation.
  std::thread([] {}).join();
  const uint64_t threads_before = ProcStatus("Threads");
  const uint64_t rss_before_kib = ProcStatus("VmRSS");
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  for (uint32_t i = 0; i < 1000; ++i) {
    REQUIRE(
        table->Insert(txn.get(), KeyEncoder().AppendU32(i).Release(), std::string(100, 'v')).ok());
  }
  REQUIRE(txn->Commit().ok());

  // The workers, the log's flusher, the background writer and the checkpointer: no thread
  // that backs the pool's memory ahead of use.
  const uint64_t threads = ProcStatus("Threads") - threads_before;
  INFO("threads started by Open: " << threads);
  CHECK(threads <= options.workers + 3);
  // The pool's memory is taken as frames are used, not at open (sanitizers add their own).
  const uint64_t rss_mib = (ProcStatus("VmRSS") - rss_before_kib) >> 10;
  INFO("resident memory added: " << rss_mib << " MiB");
  if (!test::kSanitized) CHECK(rss_mib < 16);

  txn.reset();
  REQUIRE(db->Close().ok());
  db.reset();
  const uint64_t disk_mib = DiskBytes(options.path) >> 20;
  INFO("on disk after close: " << disk_mib << " MiB");
  CHECK(disk_mib < 8);
}

}  // namespace
}  // namespace sm
