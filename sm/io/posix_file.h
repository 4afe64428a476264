// PosixFileSystem: the real file system behind sm::io::FileSystem (FileSystem::Default()).
//
// Owns: file descriptors and the choice between direct and buffered I/O per file.
//
// Data transfers go through threads::Reactor, so a fiber that reads or writes is suspended on
// libaio while its worker runs other fibers, and a plain OS thread gets the same call
// synchronously (pread/pwrite). Every other system call that can block on the device
// (open, fdatasync, fallocate, rename, mkdir, directory fsync) runs through
// Reactor::RunBlocking for the same reason.
//
// Direct I/O: OpenOptions::direct asks for O_DIRECT. The file is opened without it and the
// flag is then set with fcntl(F_SETFL); a file system without O_DIRECT (tmpfs on older kernels,
// some FUSE file systems) refuses with EINVAL and the file stays buffered. Setting it
// afterwards rather than in open(2) matters for O_CREAT|O_EXCL: an open that creates the file
// and only then fails with EINVAL would make the buffered retry fail with EEXIST.
// PosixFile::direct_io() says which mode a file got; the alignment rule of file.h applies in
// both, so behaviour does not depend on the file system.
//
// Invariants:
//   1. fd_ is open for the whole life of a PosixFile and closed exactly once, by its destructor.
//   2. A read-only file never reaches write(2), fallocate(2) or ftruncate(2).
//
// Thread/fiber safety: as File and FileSystem (file.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sm/io/file.h"

namespace sm::io {

class PosixFile final : public File {
 public:
  PosixFile(std::string path, int fd, const OpenOptions& options, bool direct_io);
  ~PosixFile() override;
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  Status Read(uint64_t offset, void* buf, size_t len) override;
  Status ReadUpTo(uint64_t offset, void* buf, size_t len, size_t* got) override;
  Status Write(uint64_t offset, const void* buf, size_t len) override;
  Status Sync() override;
  Status Size(uint64_t* bytes) override;
  Status Resize(uint64_t bytes) override;
  Status ResizeWritten(uint64_t bytes) override;
  const std::string& path() const override { return path_; }

  // True if the kernel does direct I/O for this file (O_DIRECT was accepted).
  bool direct_io() const { return direct_io_; }

 private:
  Status CheckTransfer(const char* op, uint64_t offset, const void* buf, size_t len) const;

  const std::string path_;
  const int fd_;
  const bool read_only_;
  const bool alignment_required_;  // OpenOptions::direct, whatever the kernel granted
  const bool direct_io_;
};

class PosixFileSystem final : public FileSystem {
 public:
  Status Open(const std::string& path, const OpenOptions& options,
              std::unique_ptr<File>* file) override;
  Status Exists(const std::string& path, bool* exists) override;
  Status Delete(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status CreateDir(const std::string& path) override;
  Status ListDir(const std::string& path, std::vector<std::string>* names) override;
  Status SyncDir(const std::string& path) override;
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override;
};

}  // namespace sm::io
