// WorkerThreads: see worker_threads.h.
#include "tpcc/engines/worker_threads.h"

#include <string>
#include <utility>

#include "sm/common/assert.h"

namespace sm::tpcc {

WorkerThreads::WorkerThreads(unsigned workers) {
  SM_ASSERT(workers > 0);
  for (unsigned i = 0; i < workers; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker* w = workers_.back().get();
    w->thread = std::thread([w] { Main(w); });
  }
}

WorkerThreads::~WorkerThreads() { Stop(); }

Status WorkerThreads::Spawn(std::function<void()> fn, int worker) {
  if (worker < 0 || static_cast<size_t>(worker) >= workers_.size()) {
    return Status::InvalidArgument("Spawn on worker " + std::to_string(worker) + " of " +
                                   std::to_string(workers_.size()));
  }
  Worker& w = *workers_[worker];
  {
    std::lock_guard<std::mutex> guard(w.mu);
    if (w.stopping) return Status::Closed("the engine's worker threads have stopped");
    w.queue.push_back(std::move(fn));
  }
  w.cv.notify_one();
  return Status::OK();
}

void WorkerThreads::Main(Worker* w) {
  std::unique_lock<std::mutex> lock(w->mu);
  for (;;) {
    w->cv.wait(lock, [w] { return w->stopping || !w->queue.empty(); });
    if (w->queue.empty()) {
      SM_DASSERT(w->stopping);
      return;
    }
    std::function<void()> fn = std::move(w->queue.front());
    w->queue.pop_front();
    lock.unlock();
    fn();  // alone on this worker: nothing else of its queue runs until it returns
    lock.lock();
  }
}

void WorkerThreads::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& w : workers_) {
    std::lock_guard<std::mutex> guard(w->mu);
    w->stopping = true;
    w->cv.notify_one();
  }
  for (auto& w : workers_) w->thread.join();
  for (auto& w : workers_) SM_ASSERT(w->queue.empty());  // invariant 2: every function ran
}

}  // namespace sm::tpcc
