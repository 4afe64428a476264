// PeriodicSync: the background thread behind the async commit mode of an engine whose commits
// do not wait for the disk (tpcc/engines/engines.h, rule 2): it calls the engine's sync every
// interval, so that what a commit wrote is durable within about one interval. The interval is
// our engine's async bound (log::LogOptions::async_flush_interval), so that both make the same
// promise.
//
// Invariants:
//   1. sync runs on this object's thread only, never after Stop returned.
//   2. A failed sync is kept (the first one) and reported by Stop: the async commits since the
//      last good sync may not be durable, which the run must not pass over in silence.
//
// Thread safety: Stop is called once, by the owner; nothing else is shared.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "sm/common/status.h"

namespace sm::tpcc {

class PeriodicSync {
 public:
  static constexpr std::chrono::milliseconds kInterval{10};

  explicit PeriodicSync(std::function<Status()> sync);
  ~PeriodicSync();  // Stop, its status dropped (the owner's Close reports it)
  PeriodicSync(const PeriodicSync&) = delete;
  PeriodicSync& operator=(const PeriodicSync&) = delete;

  // Ends the thread; the first failed sync, or OK.
  [[nodiscard]] Status Stop();

 private:
  void Main();

  std::function<Status()> sync_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  Status error_;           // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace sm::tpcc
