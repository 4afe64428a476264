// Helpers for the whole-database I/O-fault tests (io_fault_test.cc, disk_full_test.cc): the
// file targets of the engine, a file system wrapper that counts I/O per target and notices the
// first failed write or sync, and reading a table back for the model comparison.
//
// File targets (the names the engine creates under Options::path, see sm/sm.h, sm/api/catalog.cc
// and log/log_format.h):
//   volume   "<db>/data.sm"                                  data pages, allocation maps, header
//   log      "<db>/log/log.<16 hex digits>"                  log segments (the start LSN in hex)
//   control  "<db>/log/log.control" and "log.control.tmp"    the log's control file (checkpoint
//                                                            hint, start LSN, durable hint)
//   meta     "<db>/sm.meta" and "sm.meta.tmp"                written once, at creation
// Every segment name of a log smaller than 2^60 bytes starts with "log.0", which no other file
// name does, so "/log/log.0" selects exactly the segments.
#pragma once

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include <catch2/catch.hpp>

#include "tests/forwarding_fs.h"

namespace sm::test {

enum class FileTarget : uint8_t { kVolume, kLog, kControl };
inline constexpr FileTarget kFileTargets[] = {FileTarget::kVolume, FileTarget::kLog,
                                              FileTarget::kControl};

inline const char* TargetName(FileTarget target) {
  switch (target) {
    case FileTarget::kVolume:
      return "volume";
    case FileTarget::kLog:
      return "log";
    case FileTarget::kControl:
      return "control";
  }
  return "?";
}

// The FaultInjectionFileSystem filter (a path substring) that selects the target's files.
inline const char* TargetFilter(FileTarget target) {
  switch (target) {
    case FileTarget::kVolume:
      return "/data.sm";
    case FileTarget::kLog:
      return "/log/log.0";
    case FileTarget::kControl:
      return "/log/log.control";
  }
  return "";
}

// Counts writes and syncs per target and records whether a failure reached the engine that it
// must answer with its sticky failed state (sticky_fault_seen): a failed write of log records
// (anything past a segment's header block), a failed sync of a log segment that holds records,
// or a failed sync of the volume. A segment being created ahead holds only its header; a
// failure there is retried on a fresh file. The engine's own threads (flusher, buffer-pool
// writer, checkpointer) call through it, hence the atomics (release/acquire on the flag: a
// fiber that sees it set commits after the failure).
class CountingFileSystem final : public ForwardingFileSystem {
 public:
  struct Counts {
    std::atomic<uint64_t> writes{0}, syncs{0};
  };

  explicit CountingFileSystem(io::FileSystem* base) : ForwardingFileSystem(base) {}

  const Counts& counts(FileTarget target) const { return counts_[static_cast<int>(target)]; }
  bool sticky_fault_seen() const { return sticky_fault_seen_.load(std::memory_order_acquire); }

 protected:
  std::unique_ptr<io::File> WrapFile(std::unique_ptr<io::File> inner) override {
    return std::make_unique<File>(this, std::move(inner));
  }

 private:
  static constexpr uint64_t kSegmentHeaderBytes = 4096;  // log/log_format.h

  class File final : public ForwardingFile {
   public:
    File(CountingFileSystem* fs, std::unique_ptr<io::File> inner)
        : ForwardingFile(std::move(inner)), fs_(fs), target_(TargetOf(path())) {}
    Status Write(uint64_t off, const void* buf, size_t len) override {
      bool records = target_ == static_cast<int>(FileTarget::kLog) && off >= kSegmentHeaderBytes;
      if (records) holds_records_.store(true, std::memory_order_relaxed);
      Count(&Counts::writes);
      return fs_->Note(ForwardingFile::Write(off, buf, len), records);
    }
    Status Sync() override {
      bool sticky = target_ == static_cast<int>(FileTarget::kVolume) ||
                    holds_records_.load(std::memory_order_relaxed);
      Count(&Counts::syncs);
      return fs_->Note(ForwardingFile::Sync(), sticky);
    }

   private:
    void Count(std::atomic<uint64_t> Counts::*which) {
      if (target_ >= 0) (fs_->counts_[target_].*which).fetch_add(1, std::memory_order_relaxed);
    }

    CountingFileSystem* const fs_;
    const int target_;  // -1: a file of no target (the meta file)
    std::atomic<bool> holds_records_{false};
  };

  static int TargetOf(const std::string& path) {
    for (FileTarget target : kFileTargets) {
      if (path.find(TargetFilter(target)) != std::string::npos) return static_cast<int>(target);
    }
    return -1;
  }
  Status Note(Status s, bool sticky) {
    if (!s.ok() && sticky) sticky_fault_seen_.store(true, std::memory_order_release);
    return s;
  }

  Counts counts_[3];
  std::atomic<bool> sticky_fault_seen_{false};
};

using TableImage = std::map<std::string, std::string>;

inline std::string KeyOf(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%08d", i);
  return buf;
}

// Every row of table `name`, read in one transaction.
inline Status ReadTable(Database* db, const std::string& name, TableImage* out) {
  Table* table = nullptr;
  SM_TRY(db->OpenTable(name, &table));
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn));
  std::unique_ptr<Cursor> cursor;
  SM_TRY(table->NewCursor(txn.get(), ScanOptions::All(), &cursor));
  out->clear();
  while (cursor->Valid()) {
    (*out)[std::string(cursor->key())] = std::string(cursor->value());
    SM_TRY(cursor->Next());
  }
  cursor.reset();
  return txn->Commit();
}

// The first few keys on which two images differ, for a failure message.
inline std::string DescribeDifference(const TableImage& found, const TableImage& expected) {
  std::string out;
  int shown = 0;
  auto note = [&](const std::string& key, const std::string& what) {
    if (shown++ < 8) out += key + ": " + what + "\n";
  };
  for (const auto& [key, value] : expected) {
    auto it = found.find(key);
    if (it == found.end()) {
      note(key, "missing");
    } else if (it->second != value) {
      note(key, "is " + it->second.substr(0, 16) + ", expected " + value.substr(0, 16));
    }
  }
  for (const auto& [key, value] : found) {
    if (expected.count(key) == 0) note(key, "not expected");
  }
  return out + std::to_string(shown) + " key(s) differ";
}

// After a recovery: Verify passes and table "t" holds exactly `expected` (REQUIREs, naming the
// keys that differ).
inline void RequireVerifiedImage(Database* db, const TableImage& expected) {
  Status verified = db->Verify();
  INFO(verified.ToString());
  REQUIRE(verified.ok());
  TableImage found;
  REQUIRE(ReadTable(db, "t", &found).ok());
  INFO(DescribeDifference(found, expected));
  REQUIRE(found == expected);
}

// Opens the database (recovering it) and REQUIREs that it opens, verifies and holds exactly
// `expected` in table "t"; returns it open.
inline std::unique_ptr<Database> RequireReopensTo(const Options& options,
                                                  const TableImage& expected,
                                                  OpenReport* report = nullptr) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(options, &db, report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  RequireVerifiedImage(db.get(), expected);
  return db;
}

}  // namespace sm::test
