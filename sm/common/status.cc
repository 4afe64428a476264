// Status: out-of-line parts (construction of error states, printing).
#include "sm/common/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sm {

Status::Status(Code code, std::string_view msg)
    : rep_(std::make_unique<Rep>(Rep{code, std::string(msg)})) {
  MarkUnchecked();
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {
  MarkUnchecked();
}

Status& Status::operator=(const Status& other) {
  if (this != &other) {
    CheckedOnDestroy();
    rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    MarkUnchecked();
  }
  return *this;
}

Status& Status::operator=(Status&& other) noexcept {
  if (this != &other) {
    CheckedOnDestroy();
    rep_ = std::move(other.rep_);
    MarkUnchecked();
    other.MarkChecked();
  }
  return *this;
}

Status Status::IOError(std::string_view what, int err) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  return Status(err == ENOSPC ? Code::kNoSpace : Code::kIOError, msg);
}

std::string_view Status::message() const {
  MarkChecked();
  return rep_ ? std::string_view(rep_->message) : std::string_view();
}

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kDuplicate: return "Duplicate";
    case Code::kCorruption: return "Corruption";
    case Code::kIOError: return "IOError";
    case Code::kNoSpace: return "NoSpace";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kDeadlock: return "Deadlock";
    case Code::kLockTimeout: return "LockTimeout";
    case Code::kAborted: return "Aborted";
    case Code::kLogFull: return "LogFull";
    case Code::kClosed: return "Closed";
    case Code::kTxnFinished: return "TxnFinished";
    case Code::kBusy: return "Busy";
    case Code::kNotSupported: return "NotSupported";
    case Code::kFatal: return "Fatal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  MarkChecked();
  if (!rep_) return "OK";
  std::string s = CodeName(rep_->code);
  if (!rep_->message.empty()) {
    s += ": ";
    s += rep_->message;
  }
  return s;
}

void Status::AbortUnchecked() const {
  std::fprintf(stderr, "unchecked Status destroyed: %s\n", rep_ ? rep_->message.c_str() : "OK");
  std::abort();
}

}  // namespace sm
