// File/FileSystem helpers shared by the POSIX and the fault-injecting implementations, so that
// both report the same Status for the same mistake.
#include "sm/io/file.h"

#include <cerrno>
#include <cstring>

#include "threads/reactor.h"

namespace sm::io {

bool IsDirectIoAligned(uint64_t offset, const void* buf, size_t len) {
  constexpr uint64_t kMask = threads::kDirectIoAlignment - 1;
  return (offset & kMask) == 0 && (reinterpret_cast<uintptr_t>(buf) & kMask) == 0 &&
         (len & kMask) == 0;
}

Status CheckDirectIoAlignment(const std::string& path, const char* op, uint64_t offset,
                              const void* buf, size_t len) {
  if (IsDirectIoAligned(offset, buf, len)) [[likely]]
    return Status::OK();
  return Status::InvalidArgument(
      path + ": " + op + " of " + std::to_string(len) + " bytes at offset " +
      std::to_string(offset) + " is not aligned to " +
      std::to_string(threads::kDirectIoAlignment) + " bytes (buffer, offset and length must be)");
}

Status ErrnoStatus(const std::string& path, const std::string& what, int err) {
  std::string msg = path + ": " + what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return Status::NotFound(msg);
    case ENOSPC: return Status::NoSpace(msg);
    default: return Status::IOError(msg);
  }
}

Status WithPath(const std::string& path, Status status) {
  if (status.ok()) return status;
  std::string msg = path + ": " + std::string(status.message());
  using Code = Status::Code;
  switch (status.code()) {
    case Code::kNotFound: return Status::NotFound(msg);
    case Code::kCorruption: return Status::Corruption(msg);
    case Code::kNoSpace: return Status::NoSpace(msg);
    case Code::kInvalidArgument: return Status::InvalidArgument(msg);
    case Code::kClosed: return Status::Closed(msg);
    case Code::kNotSupported: return Status::NotSupported(msg);
    case Code::kFatal: return Status::Fatal(msg);
    case Code::kDuplicate: return Status::Duplicate(msg);
    case Code::kDeadlock: return Status::Deadlock(msg);
    case Code::kLockTimeout: return Status::LockTimeout(msg);
    case Code::kAborted: return Status::Aborted(msg);
    case Code::kLogFull: return Status::LogFull(msg);
    case Code::kTxnFinished: return Status::TxnFinished(msg);
    case Code::kBusy: return Status::Busy(msg);
    case Code::kIOError:
    case Code::kOk: break;
  }
  return Status::IOError(msg);
}

std::string ParentDir(const std::string& path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;  // "a/b/" names "a/b"
  size_t slash = path.rfind('/', end - 1);
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace sm::io
