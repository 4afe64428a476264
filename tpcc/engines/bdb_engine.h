// The Berkeley DB adapter (tpcc/engine.h over Berkeley DB 5.3's transactional data store,
// Debian's libdb5.3, through its C API: the C++ API throws, and no exception may cross into
// the driver).
//
// Owns: the environment in <path> (its region files, the log, and one B-tree database file
// per TableId, under Berkeley DB's default key order: bytes compared unsigned, a prefix
// first, the order of tpcc/keys.h), the worker threads (WorkerThreads), and in async mode the
// thread that flushes the log (PeriodicSync).
//
// Mapping (docs/design/engines.md gives the reasons):
//   TxnIsolation    kSerializable -> a transaction at Berkeley DB's default degree 3: read
//                   locks held to commit, on B-tree pages, so a scanned range admits no
//                   phantom; kReadCommitted -> DB_READ_COMMITTED (degree 2).
//   CommitMode      The log is on (DB_INIT_LOG). durable -> commits sync the log (the
//                   default); async -> DB_TXN_WRITE_NOSYNC (the log is written at commit,
//                   not synced) and a log flush every PeriodicSync::kInterval; none ->
//                   DB_TXN_NOSYNC (not even written). CommitKind::kBulk commits with
//                   DB_TXN_NOSYNC, kDurable with DB_TXN_SYNC.
//   Cache           set_cachesize(cache_bytes), one region.
//   GetForUpdate    DB_RMW: the page's write lock at the read, as our exclusive row lock.
//   Conflicts       deadlock detection at every blocked request (set_lk_detect
//                   DB_LOCK_DEFAULT): DB_LOCK_DEADLOCK -> Status::Deadlock; the lock timeout
//                   (lock_timeout_ms): DB_LOCK_NOTGRANTED -> Status::LockTimeout.
//   Log bytes       log_stat's bytes written; syncs its st_scount.
//   Read-only       the verbs that only read open the environment as usual (it runs
//                   recovery if the last run did not close it: Berkeley DB has no read-only
//                   open of a transactional environment) and the adapter refuses writes.
//
// Invariants:
//   1. The database handles are opened once, by OpenSchema, before any terminal runs
//      (DB_THREAD: shared by all threads), and closed only by Close.
//   2. Every cursor is closed before its transaction ends; a Scan's cursor is its own.
//   3. Returned keys and values go into memory the adapter owns (DB_DBT_REALLOC), as
//      DB_THREAD handles require.
//
// Thread safety: the environment and database handles are free-threaded; an EngineTxn
// belongs to one terminal.
#pragma once

#include <memory>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/engines/engines.h"

namespace sm::tpcc {

[[nodiscard]] Status OpenBdbEngine(const ForeignEngineOptions& options,
                                   std::unique_ptr<Engine>* engine);

}  // namespace sm::tpcc
