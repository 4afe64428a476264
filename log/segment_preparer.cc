// SegmentPreparer: the thread that makes the next log segment ready (segment_preparer.h).
#include "log/segment_preparer.h"

#include <pthread.h>

#include <utility>

#include "sm/common/assert.h"

namespace sm::log {

SegmentPreparer::SegmentPreparer(LogDirectory* dir) : dir_(dir) {}

SegmentPreparer::~SegmentPreparer() { Stop(); }

void SegmentPreparer::Request(uint64_t start) {
  std::lock_guard<std::mutex> guard(mu_);
  if (state_ != State::kIdle || stop_) return;
  state_ = State::kPreparing;
  start_ = start;
  // Started by the first request: a log that never fills half a segment never needs it.
  if (!thread_.joinable()) thread_ = std::thread(&SegmentPreparer::Main, this);
  cv_.notify_all();
}

bool SegmentPreparer::Take(uint64_t start, Status* status, std::shared_ptr<io::File>* file,
                           bool* created) {
  std::unique_lock<std::mutex> lock(mu_);
  SM_ASSERT(!stop_);  // the flusher takes segments only before the log stops the preparer
  if (state_ == State::kIdle || start_ != start) return false;
  cv_.wait(lock, [&] { return state_ == State::kReady; });
  *status = std::move(status_);
  status_ = Status::OK();
  *file = std::move(file_);
  *created = created_;
  state_ = State::kIdle;
  return true;
}

void SegmentPreparer::Stop() {
  {
    std::lock_guard<std::mutex> guard(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  // A segment made and never taken stays registered past the end of the log; Open deletes
  // segments past the end.
  std::lock_guard<std::mutex> guard(mu_);
  if (state_ == State::kReady) status_.PermitUnchecked();
}

void SegmentPreparer::Main() {
  pthread_setname_np(pthread_self(), "sm-log-prepare");  // in top and perf
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || state_ == State::kPreparing; });
    if (stop_) return;  // a request not yet begun is dropped: the log is closing
    const uint64_t start = start_;
    lock.unlock();
    std::shared_ptr<io::File> file;
    bool created = false;
    Status s = dir_->GetSegment(start, &file);
    if (s.IsNotFound()) {
      s = dir_->CreateSegment(start, &file, SegmentBlocks::kWritten);
      created = s.ok();
    }
    lock.lock();
    status_ = std::move(s);
    file_ = std::move(file);
    created_ = created;
    state_ = State::kReady;
    cv_.notify_all();
  }
}

}  // namespace sm::log
