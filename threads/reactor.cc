// Reactor: libaio submission/reaping, the synchronous fallback, and blocking-call threads.
#include "threads/reactor.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sm/common/assert.h"
#include "threads/baton.h"
#include "threads/fiber.h"
#include "threads/worker.h"

namespace sm::threads {
namespace {

// Pending injected error: err in the high half, countdown in the low half (0 = none).
std::atomic<uint64_t> g_injection{0};

// Returns the errno to fail this I/O with, or 0.
int TakeInjectedError() {
  uint64_t cur = g_injection.load(std::memory_order_relaxed);
  while (cur != 0) {
    uint32_t countdown = static_cast<uint32_t>(cur);
    uint64_t next = countdown > 1 ? cur - 1 : 0;
    if (g_injection.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      return countdown == 1 ? static_cast<int>(cur >> 32) : 0;
    }
  }
  return 0;
}

// A few OS threads that run blocking system calls (fdatasync) for fibers.
class BlockingPool {
 public:
  static BlockingPool& Get() {
    static BlockingPool* pool = new BlockingPool();  // never destroyed: threads are detached
    return *pool;
  }
  void Run(const std::function<void()>& fn) {
    Baton done;
    {
      std::lock_guard<std::mutex> guard(mu_);
      jobs_.push_back([&fn, &done] {
        fn();
        done.Post();
      });
      if (idle_ == 0 && threads_ < kMaxThreads) {
        ++threads_;
        std::thread([this] { Loop(); }).detach();
      }
    }
    cv_.notify_one();
    done.Wait();
  }

 private:
  static constexpr int kMaxThreads = 8;
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [this] { return !jobs_.empty(); });
      --idle_;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // GUARDED_BY(mu_)
  int idle_ = 0;                            // GUARDED_BY(mu_)
  int threads_ = 0;                         // GUARDED_BY(mu_)
};

Status TransferStatus(const char* what, long result, size_t len, uint64_t offset,
                      size_t* transferred) {
  if (result < 0) {
    return Status::IOError(std::string(what) + " at offset " + std::to_string(offset),
                           static_cast<int>(-result));
  }
  if (transferred != nullptr) {
    *transferred = static_cast<size_t>(result);
    return Status::OK();
  }
  if (static_cast<size_t>(result) != len) {
    return Status::IOError(std::string("short ") + what + " at offset " +
                           std::to_string(offset) + ": " + std::to_string(result) + " of " +
                           std::to_string(len) + " bytes");
  }
  return Status::OK();
}

struct Completion {
  Fiber* fiber;
  long result = 0;
  bool done = false;
};

}  // namespace

Reactor::Reactor(Worker* worker, int event_fd, unsigned depth)
    : worker_(worker), event_fd_(event_fd), depth_(depth) {}

// The AIO context is set up on the worker's first asynchronous I/O, not with the worker:
// io_destroy waits for an RCU grace period (tens of milliseconds), which a runtime that never
// touches a disk (in-memory file systems in tests) should not pay at every shutdown.
bool Reactor::EnsureContext() {
  if (ctx_ != nullptr) return true;
  if (setup_failed_) return false;
  // Without an AIO context (e.g. fs.aio-max-nr exhausted) fibers fall back to synchronous
  // I/O on the worker thread: slower, still correct.
  if (io_setup(static_cast<int>(depth_), &ctx_) != 0) {
    ctx_ = nullptr;
    setup_failed_ = true;
  }
  return ctx_ != nullptr;
}

Reactor::~Reactor() {
  SM_ASSERT(inflight_ == 0);
  if (ctx_ != nullptr) io_destroy(ctx_);
}

void Reactor::TEST_InjectError(int err, uint32_t after) {
  g_injection.store((static_cast<uint64_t>(err) << 32) | (after + 1), std::memory_order_relaxed);
}

Status Reactor::Read(int fd, void* buf, size_t len, uint64_t offset, size_t* transferred) {
  return Submit(Op::kRead, fd, buf, len, offset, transferred);
}

Status Reactor::Write(int fd, const void* buf, size_t len, uint64_t offset) {
  return Submit(Op::kWrite, fd, const_cast<void*>(buf), len, offset, nullptr);
}

Status Reactor::Submit(Op op, int fd, void* buf, size_t len, uint64_t offset,
                       size_t* transferred) {
  const char* what = op == Op::kRead ? "read" : "write";
  if (int err = TakeInjectedError()) {
    return TransferStatus(what, -err, len, offset, transferred);
  }
  Fiber* fiber = Fiber::Current();
  if (fiber == nullptr || !fiber->worker()->reactor().EnsureContext()) {
    return SyncIo(op, fd, buf, len, offset, transferred);
  }
  long result = 0;
  SM_TRY(fiber->worker()->reactor().SubmitAndWait(op, fd, buf, len, offset, &result));
  return TransferStatus(what, result, len, offset, transferred);
}

Status Reactor::SyncIo(Op op, int fd, void* buf, size_t len, uint64_t offset,
                       size_t* transferred) {
  const char* what = op == Op::kRead ? "read" : "write";
  size_t done = 0;
  while (done < len) {
    ssize_t n = op == Op::kRead
                    ? pread(fd, static_cast<char*>(buf) + done, len - done, offset + done)
                    : pwrite(fd, static_cast<char*>(buf) + done, len - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return TransferStatus(what, -errno, len, offset, transferred);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return TransferStatus(what, static_cast<long>(done), len, offset, transferred);
}

Status Reactor::SubmitAndWait(Op op, int fd, void* buf, size_t len, uint64_t offset,
                              long* result) {
  Completion completion{Fiber::Current()};
  iocb cb;
  if (op == Op::kRead) {
    io_prep_pread(&cb, fd, buf, len, static_cast<long long>(offset));
  } else {
    io_prep_pwrite(&cb, fd, buf, len, static_cast<long long>(offset));
  }
  io_set_eventfd(&cb, event_fd_);
  cb.data = &completion;
  iocb* cbs[1] = {&cb};
  for (;;) {
    int rc = io_submit(ctx_, 1, cbs);
    if (rc == 1) break;
    if (rc == -EAGAIN) {  // queue full: let completions drain, then retry
      worker_->Yield();
      continue;
    }
    *result = rc < 0 ? rc : -EIO;
    return Status::OK();
  }
  ++inflight_;
  WaitReasonScope reason(WaitReason::kIo);
  while (!completion.done) worker_->Block();
  *result = completion.result;
  return Status::OK();
}

void Reactor::Reap() {
  io_event events[64];
  for (;;) {
    timespec zero{0, 0};
    int n = io_getevents(ctx_, 0, 64, events, &zero);
    if (n <= 0) return;  // -EINTR or nothing: the next poll tries again
    for (int i = 0; i < n; ++i) {
      auto* completion = static_cast<Completion*>(events[i].data);
      completion->result = static_cast<long>(events[i].res);
      completion->done = true;
      --inflight_;
      worker_->Wake(completion->fiber);
    }
    if (n < 64) return;
  }
}

void Reactor::RunBlocking(const std::function<void()>& fn) {
  if (Fiber::Current() == nullptr) {
    fn();
    return;
  }
  WaitReasonScope reason(WaitReason::kIo);
  BlockingPool::Get().Run(fn);
}

Status Reactor::Sync(int fd) {
  if (int err = TakeInjectedError()) return Status::IOError("fdatasync", err);
  int rc = 0;
  int err = 0;
  RunBlocking([&] {
    rc = fdatasync(fd);
    err = errno;
  });
  if (rc != 0) return Status::IOError("fdatasync", err);
  return Status::OK();
}

}  // namespace sm::threads
