// The LMDB adapter (tpcc/engine.h over LMDB 0.9, Debian's liblmdb).
//
// Owns: the environment in <path> (data.mdb, lock.mdb; a map of 1 TiB of address space, halved
// at Open until it fits where address space is scarce), one named database per TableId in
// LMDB's default key order (memcmp, then the shorter key first: the order of tpcc/keys.h),
// the worker threads (WorkerThreads), and in async mode the thread that syncs (PeriodicSync).
//
// Mapping (docs/design/engines.md gives the reasons):
//   TxnIsolation    kSerializable -> a write transaction. LMDB has one writer at a time: a
//                   write transaction begins only once the one before it committed, so
//                   serializable transactions run one after another, however many terminals
//                   there are (Stock-Level's read-only snapshots run beside them). A
//                   multi-terminal run therefore measures the write path of one terminal plus
//                   the waits of the others; there are no deadlocks and no conflicts.
//                   kReadCommitted -> a read-only transaction: a snapshot (stronger); writing
//                   in it is refused with NotSupported.
//   CommitMode      durable -> LMDB's default (each commit syncs); async -> MDB_NOSYNC and a
//                   sync every PeriodicSync::kInterval; none -> MDB_NOSYNC, synced by
//                   Checkpoint and Close. Under MDB_NOSYNC, LMDB warns that an operating
//                   system crash may lose the last transactions or corrupt the database (its
//                   meta page can reach the disk before the pages it names): a process crash
//                   loses nothing. CommitKind::kBulk commits as configured (syncing is more
//                   than it needs); kDurable syncs after committing when the mode does not.
//   Cache           none of its own: the database is mapped, and the operating system's page
//                   cache holds it. --buffer-pool cannot be applied; Describe says so.
//   GetForUpdate    Get: the write transaction excludes every other writer already.
//
// Invariants:
//   1. A write transaction is begun, used and ended on one thread (LMDB's writer mutex is
//      the thread's); a terminal's transaction stays on its worker's thread.
//   2. The table handles (MDB_dbi) are opened once, by OpenSchema, before any terminal runs.
//
// Thread safety: the environment is shared (MDB_NOTLS: a read transaction is not tied to its
// thread); an EngineTxn belongs to one terminal.
#pragma once

#include <memory>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/engines/engines.h"

namespace sm::tpcc {

[[nodiscard]] Status OpenLmdbEngine(const ForeignEngineOptions& options,
                                    std::unique_ptr<Engine>* engine);

}  // namespace sm::tpcc
