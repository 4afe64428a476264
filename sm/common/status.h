// Status: the result of an operation that can fail in an expected way.
//
// Owns: the error vocabulary of the whole engine (Code), the propagation macro SM_TRY, and the
// unchecked-Status discipline.
//
// Invariants:
//   1. An OK Status holds no heap state (one null pointer): returning OK costs a register.
//   2. A non-OK Status owns a heap block with its code and message; copies deep-copy it.
//   3. In Debug builds (SM_DEBUG) a non-OK Status that is destroyed without having been inspected
//      (ok(), code(), Is*(), ToString(), PermitUnchecked(), or moved from) aborts the process,
//      after RocksDB's ASSERT_STATUS_CHECKED. Deliberate ignoring is spelled PermitUnchecked().
//   4. The layout does not depend on SM_DEBUG (static_assert below): the checked flag is always
//      there and always kept, and an application and the library may be built in different
//      modes.
//
// Thread/fiber safety: a Status is a value; distinct objects may be used concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace sm {

class [[nodiscard]] Status {
 public:
  enum class Code : uint8_t {
    kOk = 0,
    kNotFound,
    kDuplicate,        // unique key already present
    kCorruption,       // checksum or structure check failed
    kIOError,          // the OS or device failed
    kNoSpace,          // disk (or injected size limit) full
    kInvalidArgument,  // caller error: bad key, bad option, bad file
    kDeadlock,         // chosen as a deadlock victim: retryable
    kLockTimeout,      // lock wait timed out: retryable
    kAborted,          // the transaction was aborted
    kLogFull,          // no log space can be reclaimed now
    kClosed,           // the database or runtime is shut down
    kTxnFinished,      // the transaction already committed or aborted
    kBusy,             // resource temporarily unavailable (try later)
    kNotSupported,
    kFatal,            // sticky failed state after an unrecoverable error
  };

  Status() noexcept = default;
  ~Status() { CheckedOnDestroy(); }
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&& other) noexcept : rep_(std::move(other.rep_)) {
    MarkUnchecked();
    other.MarkChecked();
  }
  Status& operator=(Status&& other) noexcept;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg = {}) { return Status(Code::kNotFound, msg); }
  static Status Duplicate(std::string_view msg = {}) { return Status(Code::kDuplicate, msg); }
  static Status Corruption(std::string_view msg) { return Status(Code::kCorruption, msg); }
  static Status IOError(std::string_view msg) { return Status(Code::kIOError, msg); }
  static Status IOError(std::string_view what, int err);  // appends strerror(err)
  static Status NoSpace(std::string_view msg) { return Status(Code::kNoSpace, msg); }
  static Status InvalidArgument(std::string_view msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status Deadlock(std::string_view msg = {}) { return Status(Code::kDeadlock, msg); }
  static Status LockTimeout(std::string_view msg = {}) {
    return Status(Code::kLockTimeout, msg);
  }
  static Status Aborted(std::string_view msg = {}) { return Status(Code::kAborted, msg); }
  static Status LogFull(std::string_view msg = {}) { return Status(Code::kLogFull, msg); }
  static Status Closed(std::string_view msg = {}) { return Status(Code::kClosed, msg); }
  static Status TxnFinished(std::string_view msg = {}) {
    return Status(Code::kTxnFinished, msg);
  }
  static Status Busy(std::string_view msg = {}) { return Status(Code::kBusy, msg); }
  static Status NotSupported(std::string_view msg) { return Status(Code::kNotSupported, msg); }
  static Status Fatal(std::string_view msg) { return Status(Code::kFatal, msg); }

  bool ok() const { MarkChecked(); return rep_ == nullptr; }
  Code code() const { MarkChecked(); return rep_ ? rep_->code : Code::kOk; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsDuplicate() const { return code() == Code::kDuplicate; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsNoSpace() const { return code() == Code::kNoSpace; }
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsDeadlock() const { return code() == Code::kDeadlock; }
  bool IsLockTimeout() const { return code() == Code::kLockTimeout; }
  bool IsClosed() const { return code() == Code::kClosed; }
  bool IsTxnFinished() const { return code() == Code::kTxnFinished; }
  bool IsFatal() const { return code() == Code::kFatal; }
  // A retry of the whole transaction can succeed: deadlock victim or lock timeout.
  bool IsRetryable() const {
    Code c = code();
    return c == Code::kDeadlock || c == Code::kLockTimeout;
  }

  // The message without the code name ("" for OK).
  std::string_view message() const;
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;
  static const char* CodeName(Code code);

  // Marks this Status as deliberately ignored.
  void PermitUnchecked() const { MarkChecked(); }

 private:
  struct Rep {
    Code code;
    std::string message;
  };
  Status(Code code, std::string_view msg);

  // The checked flag is kept in every build mode, so that the class has one layout (invariant
  // 4): only the check at destruction depends on SM_DEBUG, in the code compiled with it.
  void MarkChecked() const { checked_ = true; }
  void MarkUnchecked() const { checked_ = (rep_ == nullptr); }
#ifdef SM_DEBUG
  void CheckedOnDestroy() const {
    if (!checked_) [[unlikely]] AbortUnchecked();
  }
#else
  void CheckedOnDestroy() const {}
#endif
  [[noreturn]] void AbortUnchecked() const;  // defined in every build mode

  std::unique_ptr<Rep> rep_;
  mutable bool checked_ = true;  // OK-by-default Status needs no check
};

// Invariant 4: the same size with and without SM_DEBUG, so that an application built in either
// mode can use a library built in the other.
static_assert(sizeof(Status) == 2 * sizeof(void*), "Status must not depend on the build mode");

// Evaluates an expression yielding Status and returns it from the enclosing function if it is
// not OK (Shore's W_DO).
#define SM_TRY(expr)                          \
  do {                                        \
    ::sm::Status sm_try_status_ = (expr);     \
    if (!sm_try_status_.ok()) [[unlikely]]    \
      return sm_try_status_;                  \
  } while (0)

}  // namespace sm
