// The SQLite adapter (tpcc/engine.h over SQLite 3, Debian's libsqlite3).
//
// Owns: the database file <path>/tpcc.sqlite in WAL mode, one table per TableId, created as
// `(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID` so that a table is one B-tree keyed by
// our keys in memcmp order (SQLite compares BLOBs with memcmp, then by length: a prefix sorts
// first, as in tpcc/keys.h); a connection per EngineTxn (one per terminal) with its prepared
// statements; the worker threads (WorkerThreads) that Spawn runs terminals on.
//
// Mapping (docs/design/engines.md gives the reasons):
//   TxnIsolation    kSerializable -> BEGIN IMMEDIATE (the database's one write lock from the
//                   start: SQLite serializes writers, and a deferred transaction that read
//                   first could only fail at its first write); kReadCommitted -> BEGIN
//                   (deferred): a snapshot, which is stronger than read committed.
//   CommitMode      durable -> PRAGMA synchronous=FULL (the WAL is synced at every commit);
//                   async -> NORMAL (synced at every checkpoint of the WAL, not at commit);
//                   none -> OFF. SQLite refuses a new setting inside a transaction, so the
//                   transaction after a CommitKind::kBulk commit (the loader's next batch)
//                   begins under OFF, and a commit that needs more durability than its
//                   transaction began with (kDurable, the load's last) syncs the WAL after
//                   it with a checkpoint under FULL.
//   Cache           PRAGMA cache_size per connection = cache_bytes / workers (workers
//                   connections run at once). SQLite drops a connection's cache whenever
//                   another connection has committed, so with two or more terminals most reads
//                   come from the operating system's page cache.
//   GetForUpdate    Get: the write lock is the database's, held since Begin.
//   Add             read, add, write back: under the database's write lock nothing interleaves.
//   Conflicts       SQLITE_BUSY / SQLITE_LOCKED after the busy timeout (lock_timeout_ms) ->
//                   Status::LockTimeout (retryable). SQLite has no deadlock: a writer waits
//                   for the one lock; a deferred reader never waits in WAL mode.
//
// Invariants:
//   1. A connection is used by one thread at a time (the terminal's), so the connections are
//      opened SQLITE_OPEN_NOMUTEX.
//   2. A statement is reset before it is used again and before its transaction ends; a scan
//      started by a visitor (nested) uses a statement of its own depth.
//
// Thread safety: SqliteEngine is shared by all terminals; its mutable state is the statistics
// (atomics) and the admin connection, used only by OpenSchema and Checkpoint, which the
// driver calls when no terminal runs.
#pragma once

#include <memory>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/engines/engines.h"

namespace sm::tpcc {

[[nodiscard]] Status OpenSqliteEngine(const ForeignEngineOptions& options,
                                      std::unique_ptr<Engine>* engine);

}  // namespace sm::tpcc
