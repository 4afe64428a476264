// PosixFileSystem: POSIX system calls behind the File interface; data I/O on the reactor.
#include "sm/io/posix_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include "sm/common/assert.h"
#include "sm/io/aligned_buffer.h"
#include "threads/reactor.h"

namespace sm::io {
namespace {

// Runs a system call that may block on the device through the reactor's blocking-call
// threads (inline on a plain thread). Returns 0 or the errno it failed with.
int BlockingCall(const std::function<int()>& call) {
  int err = 0;
  threads::Reactor::RunBlocking([&] {
    int rc;
    do {
      rc = call();
    } while (rc < 0 && errno == EINTR);
    err = rc < 0 ? errno : 0;
  });
  return err;
}

// Opens path with flags, then asks for O_DIRECT if wanted. *direct says whether it stuck.
int OpenFd(const std::string& path, int flags, bool want_direct, int* fd, bool* direct) {
  *fd = -1;
  *direct = false;
  int err = BlockingCall([&] {
    *fd = ::open(path.c_str(), flags, 0644);
    return *fd;
  });
  if (err != 0 || !want_direct) return err;
  int current = ::fcntl(*fd, F_GETFL);
  if (current >= 0 && ::fcntl(*fd, F_SETFL, current | O_DIRECT) == 0) {
    *direct = true;
    return 0;
  }
  if (errno == EINVAL) return 0;  // no O_DIRECT on this file system: stay buffered
  err = errno;
  ::close(*fd);
  *fd = -1;
  return err;
}

}  // namespace

// --- PosixFile ------------------------------------------------------------------------------

PosixFile::PosixFile(std::string path, int fd, const OpenOptions& options, bool direct_io)
    : path_(std::move(path)),
      fd_(fd),
      read_only_(options.read_only),
      alignment_required_(options.direct),
      direct_io_(direct_io) {
  SM_ASSERT(fd_ >= 0);
}

PosixFile::~PosixFile() {
  // After fdatasync a close error carries no news; before it, durability was never promised.
  ::close(fd_);
}

Status PosixFile::CheckTransfer(const char* op, uint64_t offset, const void* buf,
                                size_t len) const {
  if (!alignment_required_) return Status::OK();
  return CheckDirectIoAlignment(path_, op, offset, buf, len);
}

Status PosixFile::Read(uint64_t offset, void* buf, size_t len) {
  SM_TRY(CheckTransfer("read", offset, buf, len));
  if (len == 0) return Status::OK();
  return WithPath(path_, threads::Reactor::Read(fd_, buf, len, offset));
}

Status PosixFile::ReadUpTo(uint64_t offset, void* buf, size_t len, size_t* got) {
  *got = 0;
  SM_TRY(CheckTransfer("read", offset, buf, len));
  if (len == 0) return Status::OK();
  return WithPath(path_, threads::Reactor::Read(fd_, buf, len, offset, got));
}

Status PosixFile::Write(uint64_t offset, const void* buf, size_t len) {
  if (read_only_) return Status::InvalidArgument(path_ + ": write to a file opened read-only");
  SM_TRY(CheckTransfer("write", offset, buf, len));
  if (len == 0) return Status::OK();
  return WithPath(path_, threads::Reactor::Write(fd_, buf, len, offset));
}

Status PosixFile::Sync() { return WithPath(path_, threads::Reactor::Sync(fd_)); }

Status PosixFile::Size(uint64_t* bytes) {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return ErrnoStatus(path_, "fstat", errno);
  *bytes = static_cast<uint64_t>(st.st_size);
  return Status::OK();
}

Status PosixFile::Resize(uint64_t bytes) {
  if (read_only_) return Status::InvalidArgument(path_ + ": resize of a file opened read-only");
  uint64_t current = 0;
  SM_TRY(Size(&current));
  if (bytes == current) return Status::OK();
  const char* what = "fallocate";
  int err = 0;
  bool use_ftruncate = bytes < current;
  if (!use_ftruncate) {
    err = BlockingCall([&] {
      return ::fallocate(fd_, 0, static_cast<off_t>(current), static_cast<off_t>(bytes - current));
    });
    // A file system without fallocate still grows, sparsely: ENOSPC then surfaces at a write.
    use_ftruncate = err == EOPNOTSUPP || err == ENOSYS;
  }
  if (use_ftruncate) {
    what = "ftruncate";
    err = BlockingCall([&] { return ::ftruncate(fd_, static_cast<off_t>(bytes)); });
  }
  if (err != 0) {
    return ErrnoStatus(path_, std::string(what) + " to " + std::to_string(bytes) + " bytes", err);
  }
  return Status::OK();
}

Status PosixFile::ResizeWritten(uint64_t bytes) {
  uint64_t current = 0;
  SM_TRY(Size(&current));
  SM_TRY(Resize(bytes));  // allocates first, so NoSpace shows up before any zero is written
  constexpr uint64_t kChunk = 1u << 20;
  const uint64_t block = threads::kDirectIoAlignment;
  const uint64_t first = (current + block - 1) / block * block;
  const uint64_t end = bytes / block * block;
  if (first >= end) return Status::OK();
  AlignedBuffer zeros(std::min(kChunk, end - first));
  for (uint64_t at = first; at < end; at += zeros.size()) {
    SM_TRY(Write(at, zeros.data(), std::min<uint64_t>(zeros.size(), end - at)));
  }
  return Status::OK();
}

// --- PosixFileSystem ------------------------------------------------------------------------

FileSystem* FileSystem::Default() {
  static PosixFileSystem* fs = new PosixFileSystem();  // never destroyed: files may outlive main
  return fs;
}

Status PosixFileSystem::Open(const std::string& path, const OpenOptions& options,
                             std::unique_ptr<File>* file) {
  file->reset();
  int flags = (options.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC;
  if (options.create) flags |= O_CREAT;
  if (options.create && options.exclusive) flags |= O_EXCL;
  int fd = -1;
  bool direct = false;
  if (int err = OpenFd(path, flags, options.direct, &fd, &direct)) {
    return ErrnoStatus(path, "open", err);
  }
  *file = std::make_unique<PosixFile>(path, fd, options, direct);
  return Status::OK();
}

Status PosixFileSystem::Exists(const std::string& path, bool* exists) {
  struct stat st;
  *exists = false;
  int err = BlockingCall([&] { return ::stat(path.c_str(), &st); });
  if (err == 0) {
    *exists = true;
    return Status::OK();
  }
  if (err == ENOENT || err == ENOTDIR) return Status::OK();
  return ErrnoStatus(path, "stat", err);
}

Status PosixFileSystem::Delete(const std::string& path) {
  int err = BlockingCall([&] { return ::unlink(path.c_str()); });
  if (err == EISDIR) {
    err = BlockingCall([&] { return ::rmdir(path.c_str()); });
    if (err != 0) return ErrnoStatus(path, "rmdir", err);
    return Status::OK();
  }
  if (err != 0) return ErrnoStatus(path, "unlink", err);
  return Status::OK();
}

Status PosixFileSystem::Rename(const std::string& from, const std::string& to) {
  int err = BlockingCall([&] { return ::rename(from.c_str(), to.c_str()); });
  if (err != 0) return ErrnoStatus(from, "rename to " + to, err);
  return Status::OK();
}

Status PosixFileSystem::CreateDir(const std::string& path) {
  // mkdir each prefix in turn; EEXIST is fine as long as the prefix is a directory.
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/') continue;
    std::string prefix = path.substr(0, end);
    int err = BlockingCall([&] { return ::mkdir(prefix.c_str(), 0755); });
    if (err == EEXIST) {
      struct stat st;
      if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
      return ErrnoStatus(prefix, "mkdir", ENOTDIR);
    }
    if (err != 0) return ErrnoStatus(prefix, "mkdir", err);
  }
  return Status::OK();
}

Status PosixFileSystem::ListDir(const std::string& path, std::vector<std::string>* names) {
  names->clear();
  DIR* dir = nullptr;
  int err = BlockingCall([&] {
    dir = ::opendir(path.c_str());
    return dir == nullptr ? -1 : 0;
  });
  if (err != 0) return ErrnoStatus(path, "opendir", err);
  errno = 0;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names->push_back(std::move(name));
  }
  err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoStatus(path, "readdir", err);
  std::sort(names->begin(), names->end());
  return Status::OK();
}

namespace {
// flock(2) rather than fcntl record locks: a flock belongs to the open file description, so a
// second open of the same database in this process conflicts too, and closing some other
// descriptor of the file does not drop it.
class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // closing the last descriptor unlocks

 private:
  const int fd_;
};
}  // namespace

Status PosixFileSystem::LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) {
  int fd = -1;
  int err = BlockingCall([&] {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    return fd;
  });
  if (err == EACCES || err == EROFS) {
    // A directory or lock file without write permission (a database opened read-only): a
    // flock needs no write access, so an existing lock file still serves.
    err = BlockingCall([&] {
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      return fd;
    });
  }
  if (err != 0) return ErrnoStatus(path, "open lock file", err);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::Busy(path + ": locked: the database is open in another process or handle");
    }
    return ErrnoStatus(path, "flock", err);
  }
  *lock = std::make_unique<PosixFileLock>(fd);
  return Status::OK();
}

Status PosixFileSystem::SyncDir(const std::string& path) {
  int fd = -1;
  int err = BlockingCall([&] {
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd;
  });
  if (err != 0) return ErrnoStatus(path, "open directory", err);
  err = BlockingCall([&] { return ::fsync(fd); });
  ::close(fd);
  if (err != 0) return ErrnoStatus(path, "fsync directory", err);
  return Status::OK();
}

}  // namespace sm::io
