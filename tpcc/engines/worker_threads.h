// WorkerThreads: the Spawn of an engine adapter without fibers (tpcc/engine.h, contract 5).
//
// Owns: one OS thread per worker and a FIFO queue of functions per worker. A worker's thread
// runs the functions spawned on it one after another, each to its end, so functions spawned
// on one worker never run at the same time (the driver's per-worker statistics rely on it).
//
// What that does to a TPC-C run: a terminal runs until it thinks or the run ends, so a worker
// runs one terminal at a time and a run has `workers` terminals running at once; the others
// wait in the queue (with think times they take turns). An engine whose transactions block in
// the library (a lock wait, an fsync) blocks its worker's thread for that time, which is how
// such an engine is meant to be used: one thread per concurrent transaction.
//
// Invariants:
//   1. A function is run at most once, by its worker's thread, after Spawn returned OK.
//   2. Stop runs every function queued before it, then joins the threads; Spawn after Stop
//      fails with Closed and runs nothing.
//
// Thread safety: Spawn may be called from any thread, including a worker's own thread (a
// function that spawns more runs them after itself). Stop is called once, by the owner, from a
// thread that is not a worker.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sm/common/status.h"

namespace sm::tpcc {

class WorkerThreads {
 public:
  explicit WorkerThreads(unsigned workers);
  ~WorkerThreads();  // Stop, if not stopped yet
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  [[nodiscard]] Status Spawn(std::function<void()> fn, int worker);
  unsigned workers() const { return static_cast<unsigned>(workers_.size()); }
  void Stop();

 private:
  struct Worker {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;  // GUARDED_BY(mu)
    bool stopping = false;                    // GUARDED_BY(mu)
    std::thread thread;
  };
  static void Main(Worker* w);

  std::vector<std::unique_ptr<Worker>> workers_;
  bool stopped_ = false;  // owner-only
};

}  // namespace sm::tpcc
