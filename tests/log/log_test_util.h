// Helpers shared by the log tests (besides tests/test_util.h): small log options, payloads that
// identify their writer, reading a whole log back, and a file system whose Sync is slow (to make
// group commit observable on the in-memory fault file system, whose Sync costs nothing).
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "log/log_format.h"
#include "log/log_manager.h"
#include "log/log_reader.h"
#include "sm/io/testing/fault_file.h"
#include "tests/forwarding_fs.h"

namespace sm::logtest {
using namespace ::sm::log;  // test helper header: the log types unqualified

inline constexpr char kDir[] = "/db/log";

// Segments of 64 KiB (60 KiB of log each) and a 16 KiB buffer: roll-overs, ring wrap-around
// and buffer-space waits happen within a few hundred records.
inline LogOptions SmallOptions() {
  LogOptions options;
  options.segment_bytes = 64 * 1024;
  options.buffer_bytes = 16 * 1024;
  options.async_flush_interval = std::chrono::milliseconds(5);
  return options;
}

inline std::unique_ptr<LogManager> OpenLog(io::FileSystem* fs, const LogOptions& options,
                                           LogOpenReport* report = nullptr) {
  std::unique_ptr<LogManager> log;
  Status s = LogManager::Open(fs, kDir, options, &log, report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return log;
}

// A payload of `bytes` bytes that names its writer and sequence number and is otherwise a
// pseudo-random function of them, so a misplaced or damaged byte is noticed.
inline std::string MakePayload(uint32_t writer, uint32_t seq, size_t bytes) {
  std::string p(bytes, '\0');
  uint64_t x = (uint64_t{writer} << 32 | seq) * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<char>(x);
  }
  if (bytes >= 8) {
    std::memcpy(p.data(), &writer, 4);
    std::memcpy(p.data() + 4, &seq, 4);
  }
  return p;
}

inline LogRecord CommentRecord(std::string_view payload, TxnId txn = TxnId(1),
                               Lsn prev = Lsn::Invalid()) {
  LogRecord r;
  r.type = RecordType::kComment;
  r.txn = txn;
  r.prev_lsn = prev;
  r.payload = payload;
  return r;
}

// Every record of the log in `kDir` from `from`, read by an unbounded reader (as a recovery tool
// would) until the end. The status of the stop is returned in *stop.
inline std::vector<LogRecordBuf> ReadAll(io::FileSystem* fs, Lsn from, Status* stop = nullptr) {
  std::unique_ptr<LogReader> reader;
  Status s = LogReader::Open(fs, kDir, &reader);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(reader->Seek(from).ok());
  std::vector<LogRecordBuf> records;
  LogRecordView view;
  while ((s = reader->Next(&view)).ok()) records.emplace_back().Assign(view);
  if (stop != nullptr) {
    *stop = s;
  } else {
    INFO(s.ToString());
    REQUIRE(s.IsNotFound());
  }
  return records;
}

// Forwards to another FileSystem; every File's Sync sleeps first (like a real disk's flush).
class SlowSyncFileSystem final : public test::ForwardingFileSystem {
 public:
  SlowSyncFileSystem(io::FileSystem* base, std::chrono::microseconds delay)
      : ForwardingFileSystem(base), delay_(delay) {}

 protected:
  std::unique_ptr<io::File> WrapFile(std::unique_ptr<io::File> inner) override {
    return std::make_unique<SlowFile>(std::move(inner), delay_);
  }

 private:
  class SlowFile final : public test::ForwardingFile {
   public:
    SlowFile(std::unique_ptr<io::File> inner, std::chrono::microseconds delay)
        : ForwardingFile(std::move(inner)), delay_(delay) {}
    Status Sync() override {
      std::this_thread::sleep_for(delay_);
      return ForwardingFile::Sync();
    }

   private:
    std::chrono::microseconds delay_;
  };

  std::chrono::microseconds delay_;
};

// Flips the bits of n bytes at `lsn` in the segment files, durably (a bad disk, not a crash).
inline void Damage(io::FileSystem* fs, const SegmentGeometry& g, uint64_t lsn, size_t n) {
  uint64_t segment = g.SegmentStart(lsn);
  std::unique_ptr<io::File> file;
  io::OpenOptions options;
  options.direct = false;
  REQUIRE(fs->Open(std::string(kDir) + "/" + SegmentFileName(segment), options, &file).ok());
  std::string bytes(n, '\0');
  REQUIRE(file->Read(g.FileOffset(segment, lsn), bytes.data(), n).ok());
  for (char& c : bytes) c ^= 0x5a;
  REQUIRE(file->Write(g.FileOffset(segment, lsn), bytes.data(), n).ok());
  REQUIRE(file->Sync().ok());
}

}  // namespace sm::logtest
