// Runtime: a set of workers (OS threads, optionally pinned) that run fibers.
//
// Lifecycle: Create -> Spawn* -> Shutdown (stop accepting fibers, let every fiber finish,
// join the workers). The destructor shuts down if the caller did not.
//
// Thread/fiber safety: Spawn may be called from any thread or fiber; Shutdown from a plain
// thread that is not one of the workers (it waits for them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sm/common/status.h"
#include "threads/fiber.h"
#include "threads/worker.h"

namespace sm::threads {

struct RuntimeOptions {
  unsigned workers = 0;                  // 0 = one per online core
  bool pin_workers = false;              // pin worker i to core i % cores
  size_t fiber_stack_bytes = 256 * 1024;
  unsigned aio_depth = 256;              // in-flight AIO requests per worker
};

class Runtime {
 public:
  static Status Create(const RuntimeOptions& options, std::unique_ptr<Runtime>* runtime);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Runs fn in a new fiber on worker `worker` (-1: round robin): Worker::TrySpawn (Closed
  // after Shutdown, IOError if no fiber stack can be had).
  [[nodiscard]] Status TrySpawn(std::function<void()> fn, int worker, Fiber** fiber,
                                std::string name = {});
  // TrySpawn for callers that need no reason: nullptr if it fails.
  Fiber* Spawn(std::function<void()> fn, int worker = -1, std::string name = {});
  // Stops accepting fibers, waits until every fiber has finished, joins the workers.
  void Shutdown();

  unsigned worker_count() const { return static_cast<unsigned>(workers_.size()); }
  Worker& worker(unsigned index) { return *workers_[index]; }

 private:
  Runtime() = default;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<unsigned> next_worker_{0};
  bool shut_down_ = false;
};

}  // namespace sm::threads
