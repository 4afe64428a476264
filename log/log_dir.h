// LogDirectory: the files of one log directory - segment files, spare segments and the control
// file (formats in log_format.h).
//
// Owns: the registry of segment files (start LSN -> open File, opened lazily and shared with
// readers and the flusher through shared_ptr, so a segment removed by Truncate stays usable by
// whoever still holds it), the list of spares, and the last control block written or read.
//
// Segment life cycle (each transition performed by the named function):
//   absent  --CreateSegment-->         live (durable header, full size preallocated, directory
//                                      entry synced before any record is written into it)
//   live    --RemoveSegmentsBefore-->  spare (renamed "spare.*", contents stale) or deleted
//   spare   --CreateSegment-->         live under a new, higher start LSN. Records left in it
//                                      carry their old LSNs, which no longer match their
//                                      positions, so readers never take them for records
//   live    --DeleteSegmentsFrom-->    deleted (Open, for segments past the end of the log; never
//                                      recycled, since the log may reach the same LSNs again)
//
// Invariants:
//   1. A segment in the registry has a header naming its start and the log's segment size, or
//      GetSegment reports Corruption for it.
//   2. A spare's old start is below every live segment's start (Truncate removes from the
//      front), so a spare is reused only for higher LSNs.
//   3. The control file is replaced atomically: a crash leaves the old or the new block.
//
// Thread/fiber safety: all methods are safe from any fiber and thread; one fiber-aware mutex
// (held across the directory's own file operations, except the making of a new segment's file
// before it is registered, and never across record I/O) serializes them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "log/log_format.h"
#include "sm/common/status.h"
#include "sm/io/file.h"
#include "threads/sync.h"

namespace sm::log {

// How CreateSegment makes a fresh segment's blocks (a recycled spare's are written already).
enum class SegmentBlocks {
  kAllocated,  // preallocated only: quick to make
  kWritten,    // written as zeros (io::File::ResizeWritten): cheaper syncs once in use
};

struct LogDirectoryOptions {
  bool read_only = false;
  bool create_if_missing = false;
  bool direct_io = true;
  uint64_t segment_bytes = 0;  // for a log created here; an existing log keeps its own
};

class LogDirectory {
 public:
  // Lists `dir` and reads its control file. A directory without one is a new log when
  // create_if_missing (the directory is created, a control block written, created() true) and
  // NotFound otherwise; segment files without a control file are Corruption.
  static Status Open(io::FileSystem* fs, const std::string& dir, const LogDirectoryOptions& options,
                     std::unique_ptr<LogDirectory>* out);
  ~LogDirectory();
  LogDirectory(const LogDirectory&) = delete;
  LogDirectory& operator=(const LogDirectory&) = delete;

  const SegmentGeometry& geometry() const { return geometry_; }
  const std::string& dir() const { return dir_; }
  bool created() const { return created_; }

  ControlBlock control();
  // Replaces the control file durably (log_format.h).
  Status WriteControl(const ControlBlock& control);

  std::vector<uint64_t> SegmentStarts();
  size_t spare_count();

  // The segment starting at `start`, opened and its header checked on first use. NotFound if
  // there is no such file; Corruption if its header is not this segment's.
  Status GetSegment(uint64_t start, std::shared_ptr<io::File>* file);
  // Makes the segment at `start` live: not registered, its file absent or left half-made by a
  // failed attempt (which it deletes and creates afresh: a file whose sync failed is never
  // synced again in the hope that the second sync covers what the first lost). The file is
  // made outside the mutex and registered once complete; callers must not create one start
  // twice at once (the flusher and its SegmentPreparer take turns).
  Status CreateSegment(uint64_t start, std::shared_ptr<io::File>* file,
                       SegmentBlocks blocks = SegmentBlocks::kAllocated);
  // Retires every segment that ends at or before `lsn`: the first ones become spares while
  // fewer than `keep_spares` exist, the rest are deleted. The files are renamed and deleted
  // outside the mutex (CreateSegment, on the flusher's path, does not wait for them); calls
  // must not overlap (LogManager::Truncate holds its control mutex, Open runs alone).
  Status RemoveSegmentsBefore(uint64_t lsn, uint32_t keep_spares, uint32_t* removed);
  // Deletes every segment starting at or after `start`.
  Status DeleteSegmentsFrom(uint64_t start, uint32_t* deleted);

 private:
  LogDirectory(io::FileSystem* fs, std::string dir, const LogDirectoryOptions& options)
      : fs_(fs), dir_(std::move(dir)), options_(options) {}
  Status Load();
  Status ReadControlLocked(bool* found);
  Status WriteControlLocked(const ControlBlock& control);
  Status OpenSegmentLocked(uint64_t start, std::shared_ptr<io::File>* file);
  std::string PathOf(const std::string& name) const { return dir_ + "/" + name; }
  io::OpenOptions FileOptions(bool create) const;

  io::FileSystem* const fs_;
  const std::string dir_;
  const LogDirectoryOptions options_;
  SegmentGeometry geometry_;
  bool created_ = false;

  threads::Mutex mu_;
  ControlBlock control_;                                    // GUARDED_BY(mu_)
  std::map<uint64_t, std::shared_ptr<io::File>> segments_;  // null: not open; GUARDED_BY(mu_)
  std::vector<std::string> spares_;                         // GUARDED_BY(mu_)
};

}  // namespace sm::log
