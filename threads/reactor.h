// Reactor: asynchronous file I/O for fibers on Linux AIO (libaio), one per worker.
//
// A fiber that reads or writes submits an iocb (io_submit) tagged with a completion record on
// its own stack and blocks; the worker reaps completions (io_getevents) in its event poll and
// wakes the fiber. Completions also bump the worker's eventfd (io_set_eventfd), so an idle
// worker sleeping on it wakes for I/O as it does for remote wake-ups.
//
// Callers that are not fibers (plain OS threads, a worker's scheduler context) get the same
// semantics synchronously through pread/pwrite, so one code path serves both.
//
// fdatasync has no dependable AIO form on common filesystems, so Sync() runs it on a small
// process-wide pool of blocking-call threads while the fiber is suspended.
//
// Buffers, offsets and lengths must be aligned to kDirectIoAlignment for O_DIRECT files.
// Errors (EIO, ENOSPC, EINVAL, short transfers) come back as Status; nothing throws.
//
// Invariants:
//   1. inflight_ counts submitted, not yet reaped iocbs; a worker reaps while it is > 0.
//   2. A completion record outlives its iocb: its fiber stays blocked until the record is
//      marked done (spurious wake-ups loop).
//
// Thread/fiber safety: the static functions may be called from anywhere; Reap() and the
// per-worker state only from the owning worker's thread.
#pragma once

#include <libaio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "sm/common/status.h"

namespace sm::threads {

class Worker;

inline constexpr size_t kDirectIoAlignment = 4096;

class Reactor {
 public:
  Reactor(Worker* worker, int event_fd, unsigned depth);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // Reads len bytes at offset. If `transferred` is null a short read is an IOError; else the
  // count read is stored there (0 at end of file) and a short read is OK.
  static Status Read(int fd, void* buf, size_t len, uint64_t offset,
                     size_t* transferred = nullptr);
  // Writes len bytes at offset; a short write is an IOError (or NoSpace for ENOSPC).
  static Status Write(int fd, const void* buf, size_t len, uint64_t offset);
  // fdatasync(fd), without blocking the worker thread when called from a fiber.
  static Status Sync(int fd);
  // Runs fn on a blocking-call thread; a fiber caller is suspended until it returns.
  static void RunBlocking(const std::function<void()>& fn);

  // Test hook: the `after`-th following I/O (0 = the next) completes with -err instead of
  // being issued. Process-wide; one pending injection at a time.
  static void TEST_InjectError(int err, uint32_t after);

  // Worker side.
  size_t inflight() const { return inflight_; }
  void Reap();

 private:
  enum class Op : uint8_t { kRead, kWrite };
  static Status Submit(Op op, int fd, void* buf, size_t len, uint64_t offset,
                       size_t* transferred);
  static Status SyncIo(Op op, int fd, void* buf, size_t len, uint64_t offset,
                       size_t* transferred);
  Status SubmitAndWait(Op op, int fd, void* buf, size_t len, uint64_t offset, long* result);

  bool EnsureContext();  // on the worker's own thread only

  Worker* worker_;
  int event_fd_;
  io_context_t ctx_ = nullptr;  // created lazily by EnsureContext
  unsigned depth_ = 0;
  bool setup_failed_ = false;
  size_t inflight_ = 0;
};

}  // namespace sm::threads
