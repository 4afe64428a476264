// Runtime: worker creation, fiber placement, shutdown.
#include "threads/runtime.h"

#include <thread>

namespace sm::threads {

Status Runtime::Create(const RuntimeOptions& options, std::unique_ptr<Runtime>* runtime) {
  unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0) cores = 1;
  unsigned workers = options.workers == 0 ? cores : options.workers;
  if (workers > 1024) return Status::InvalidArgument("workers must be at most 1024");
  if (options.fiber_stack_bytes < 16 * 1024) {
    return Status::InvalidArgument("fiber stacks must be at least 16 KiB");
  }
  if (options.aio_depth == 0) return Status::InvalidArgument("aio_depth must be positive");
  std::unique_ptr<Runtime> rt(new Runtime());
  for (unsigned i = 0; i < workers; ++i) {
    int pin = options.pin_workers ? static_cast<int>(i % cores) : -1;
    rt->workers_.push_back(std::make_unique<Worker>(static_cast<int>(i),
                                                    options.fiber_stack_bytes,
                                                    options.aio_depth, pin));
  }
  *runtime = std::move(rt);
  return Status::OK();
}

Runtime::~Runtime() { Shutdown(); }

Status Runtime::TrySpawn(std::function<void()> fn, int worker, Fiber** fiber,
                         std::string name) {
  unsigned index = worker >= 0 ? static_cast<unsigned>(worker) % worker_count()
                               : next_worker_.fetch_add(1, std::memory_order_relaxed) %
                                     worker_count();
  return workers_[index]->TrySpawn(std::move(fn), std::move(name), fiber);
}

Fiber* Runtime::Spawn(std::function<void()> fn, int worker, std::string name) {
  Fiber* fiber = nullptr;
  TrySpawn(std::move(fn), worker, &fiber, std::move(name)).PermitUnchecked();  // null: failed
  return fiber;
}

void Runtime::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& w : workers_) w->Stop();
  for (auto& w : workers_) w->Join();
}

}  // namespace sm::threads
