// PeriodicSync: see periodic_sync.h.
#include "tpcc/engines/periodic_sync.h"

#include <utility>

namespace sm::tpcc {

PeriodicSync::PeriodicSync(std::function<Status()> sync) : sync_(std::move(sync)) {
  thread_ = std::thread([this] { Main(); });
}

PeriodicSync::~PeriodicSync() { Stop().PermitUnchecked(); }

void PeriodicSync::Main() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, kInterval, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    Status s = sync_();
    lock.lock();
    if (!s.ok() && error_.ok()) error_ = std::move(s);  // invariant 2
    s.PermitUnchecked();
  }
}

Status PeriodicSync::Stop() {
  {
    std::lock_guard<std::mutex> guard(mu_);
    if (stopping_ && !thread_.joinable()) return Status::OK();
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> guard(mu_);
  Status s = std::move(error_);
  error_ = Status::OK();
  return s;
}

}  // namespace sm::tpcc
