// The other embedded engines that can run the TPC-C workload through tpcc/engine.h, beside our
// own (tpcc/sm_engine.h), for side-by-side figures: one adapter per engine in this directory,
// each compiled in only when CMake found its library (tpcc/engines/CMakeLists.txt).
//
// Owns: the options every such adapter takes, and opening one by name.
//
// Every adapter keeps the contract of tpcc/engine.h and these rules (docs/design/engines.md
// maps each engine's settings and gives the reasons):
//   1. Its database is the directory ForeignEngineOptions::path, which holds nothing else.
//   2. Commit modes: kDurable - durable when Commit returns; kAsync - Commit does not wait for
//      the disk, and what it committed reaches the disk within a bounded delay; kNone - no
//      durability until Checkpoint or Close. CommitKind::kBulk need not be durable (it
//      commits as kNone where the engine lets a commit choose); CommitKind::kDurable is
//      durable when Commit returns, whatever the mode.
//   3. Its cache is cache_bytes (our buffer pool's size), as far as the engine lets one set it.
//   4. A conflict the engine resolves by failing a transaction (deadlock, busy, write
//      conflict) is Status::Deadlock or Status::LockTimeout: retryable (Status::IsRetryable).
//   5. An isolation level or a mode it cannot provide is refused with NotSupported, or provided
//      by a stronger one, as its adapter's header says; it is never faked.
//   6. Spawn runs functions on WorkerThreads (tpcc/engines/worker_threads.h): `workers`
//      terminals run at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sm/common/status.h"
#include "tpcc/engine.h"

namespace sm::tpcc {

enum class ForeignCommit : uint8_t { kDurable, kAsync, kNone };

struct ForeignEngineOptions {
  std::string path;  // the engine's database directory
  bool create = false;
  bool read_only = false;  // the verbs that only read (an engine that cannot says so)
  uint64_t cache_bytes = 1ull << 30;
  ForeignCommit commit = ForeignCommit::kDurable;
  unsigned workers = 1;
  uint64_t lock_timeout_ms = 10000;
};

// The engines this build can open, in the order a comparison runs them ("sqlite", "lmdb",
// "rocksdb", "bdb", "wiredtiger": those whose library was found).
std::vector<std::string> ForeignEngineNames();
// Every engine name an adapter exists for, built in or not.
std::vector<std::string> KnownForeignEngineNames();
// Opens engine `name`; NotSupported if this build has no such adapter (the message says why).
[[nodiscard]] Status OpenForeignEngine(const std::string& name, const ForeignEngineOptions& options,
                                       std::unique_ptr<Engine>* engine);

}  // namespace sm::tpcc
