// File and FileSystem: the one interface every file of the engine goes through (the data
// volume, log segments, the control file), so that tests can swap in a file system that
// injects faults and simulates crashes (sm/io/testing/fault_file.h) under unchanged engine code.
//
// Owns: the I/O contract shared by every implementation, the errno -> Status mapping, and the
// direct-I/O alignment rule.
//
// Contract:
//   1. Alignment. A file opened with OpenOptions::direct (the default) takes buffers, offsets
//      and lengths that are multiples of threads::kDirectIoAlignment (4096) for Read, ReadUpTo
//      and Write. A violation returns InvalidArgument before anything reaches the kernel. The
//      rule holds even where the file system has no O_DIRECT and the file fell back to
//      buffered I/O, so that code tested on tmpfs or in memory cannot break on a real disk.
//   2. Read is all-or-nothing: a read that crosses the end of the file is an IOError naming
//      the path and offset. ReadUpTo stores the byte count (0 at or past the end) and a short
//      read is OK.
//   3. Write either writes all bytes or returns an error; ENOSPC (or an injected size limit)
//      is NoSpace. After a failed write the bytes of the range are unspecified.
//   4. Data is durable only after a successful Sync (fdatasync: data and the size needed to
//      read it back). A failed Sync leaves the file's durability unknowable: the caller must
//      latch a fatal state and must not retry (Linux may drop the dirty pages, and a second
//      fsync then succeeds without having written them).
//   5. Errors name the path. A missing file is NotFound; ENOSPC is NoSpace; everything else
//      from the OS is IOError with strerror. Nothing throws.
//
// Thread/fiber safety: a File is safe for concurrent Read/Write/Sync at distinct offsets from
// any fibers and threads; overlapping concurrent writes leave unspecified bytes. A FileSystem
// is safe from anywhere. A File must not outlive the FileSystem that opened it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sm/common/status.h"

namespace sm::io {

struct OpenOptions {
  bool create = false;     // create the file if it does not exist
  bool exclusive = false;  // with create: fail if it exists
  bool read_only = false;  // Write and Resize return InvalidArgument
  bool direct = true;      // O_DIRECT when the file system supports it; alignment rule 1
};

class File {
 public:
  virtual ~File() = default;

  // Reads exactly len bytes at offset; a short read (past the end) is an IOError.
  virtual Status Read(uint64_t offset, void* buf, size_t len) = 0;
  // Reads up to len bytes at offset; *got is the count read (short at the end of the file).
  virtual Status ReadUpTo(uint64_t offset, void* buf, size_t len, size_t* got) = 0;
  // Writes len bytes at offset, extending the file if needed. ENOSPC -> NoSpace.
  virtual Status Write(uint64_t offset, const void* buf, size_t len) = 0;
  // fdatasync: every completed Write and Resize of this file becomes durable.
  virtual Status Sync() = 0;
  virtual Status Size(uint64_t* bytes) = 0;
  // Grows the file (allocating blocks with fallocate where possible, so that ENOSPC shows up
  // here rather than at a later write; the new bytes read as zero) or shrinks it.
  virtual Status Resize(uint64_t bytes) = 0;
  // Resize, and where the file system tells blocks that were written from blocks that were
  // only allocated, also writes zeros over every new block that starts at or above the old
  // size: a later overwrite of them and Sync then change no file-system metadata, so the
  // Sync costs one device round trip, not a journal commit too. The contents are those of
  // Resize either way, so a file system without that distinction (in memory) just resizes.
  virtual Status ResizeWritten(uint64_t bytes) { return Resize(bytes); }
  virtual const std::string& path() const = 0;
};

// An exclusive advisory lock on a file (FileSystem::LockFile), held until destroyed. Like a
// POSIX flock it also ends with the process that holds it.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Status Open(const std::string& path, const OpenOptions& options,
                      std::unique_ptr<File>* file) = 0;
  virtual Status Exists(const std::string& path, bool* exists) = 0;
  // Removes a file (or an empty directory).
  virtual Status Delete(const std::string& path) = 0;
  // rename(2): atomically replaces `to` if it exists.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // mkdir -p; OK if the directory exists.
  virtual Status CreateDir(const std::string& path) = 0;
  // The entries of a directory (no "." or ".."), sorted.
  virtual Status ListDir(const std::string& path, std::vector<std::string>* names) = 0;
  // fsync on the directory: makes creates, renames and deletes in it durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // Creates `path` if it is missing and locks it exclusively for as long as *lock lives. Busy
  // if it is locked already, by another process or by another LockFile call of this one: a
  // database directory is opened by one Database at a time. An existing file is locked even
  // where it (or its directory) may not be written, as a read-only open needs.
  virtual Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) = 0;

  // The POSIX file system (sm/io/posix_file.h), process-wide and never destroyed.
  static FileSystem* Default();
};

// --- Helpers shared by the implementations ---------------------------------------------------

// True if offset, buffer address and length are multiples of threads::kDirectIoAlignment.
bool IsDirectIoAligned(uint64_t offset, const void* buf, size_t len);

// InvalidArgument naming path, operation, offset and length unless IsDirectIoAligned.
Status CheckDirectIoAlignment(const std::string& path, const char* op, uint64_t offset,
                              const void* buf, size_t len);

// The Status for an errno: ENOENT -> NotFound, ENOSPC -> NoSpace, else IOError; the message
// is "<path>: <what>: <strerror>".
Status ErrnoStatus(const std::string& path, const std::string& what, int err);

// Prefixes a non-OK Status's message with "<path>: ", keeping its code.
Status WithPath(const std::string& path, Status status);

// The parent directory of a path ("a/b/c" -> "a/b", "c" -> ".", "/c" -> "/").
std::string ParentDir(const std::string& path);

}  // namespace sm::io
