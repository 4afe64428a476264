// The WiredTiger adapter (tpcc/engine.h over WiredTiger 3.2's C API, Debian's
// libwiredtiger).
//
// Owns: the connection to the home directory <path>, a row-store table per TableId with raw
// byte keys and values (key_format=u, value_format=u: WiredTiger compares raw keys byte by
// byte, a prefix first, the order of tpcc/keys.h), a session per EngineTxn with a cursor per
// table (overwrite=false: an insert of a present key and an update or remove of an absent one
// fail, as ours do), the worker threads (WorkerThreads), and in async mode the thread that
// syncs the log (PeriodicSync).
//
// Mapping (docs/design/engines.md gives the reasons):
//   TxnIsolation    kSerializable -> isolation=snapshot. WiredTiger has no serializable
//                   level and no read locks: snapshot isolation admits write skew, which is
//                   weaker than what we promise. It is what the engine offers, and TPC-C's
//                   five transactions are known to run serializably under snapshot isolation
//                   (Fekete et al., "Making snapshot isolation serializable", 2005), so the
//                   workload's results stay comparable; the run reports it in Describe.
//                   kReadCommitted -> isolation=read-committed.
//   CommitMode      log=(enabled), so commits are logged. durable ->
//                   transaction_sync=(enabled,method=fsync); async -> transaction_sync off and
//                   a log flush with sync every PeriodicSync::kInterval; none -> off, synced
//                   by Checkpoint and Close. CommitKind::kBulk commits sync=off, kDurable
//                   sync=on.
//   Cache           cache_size = cache_bytes.
//   GetForUpdate    a plain read: WiredTiger detects conflicts at the write (first updater
//                   wins), and an update of a row another transaction changed since the
//                   snapshot fails with WT_ROLLBACK.
//   Conflicts       WT_ROLLBACK (write conflict, or a transaction the cache evicts) ->
//                   Status::Deadlock (retryable). There are no lock waits, so no timeouts.
//   Log bytes       the log_bytes_written and log_sync statistics (statistics=(fast)).
//
// Invariants:
//   1. The tables exist before any session opens a cursor on them (OpenSchema runs before
//      any terminal).
//   2. A session, with its cursors, is used by one thread at a time: its terminal's.
//   3. A cursor is reset when its scan ends, so it pins no page between operations; a scan
//      started by a visitor opens a cursor of its own.
//
// Thread safety: the connection is thread-safe; an EngineTxn (its session) belongs to one
// terminal.
#pragma once

#include <memory>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/engines/engines.h"

namespace sm::tpcc {

[[nodiscard]] Status OpenWiredTigerEngine(const ForeignEngineOptions& options,
                                          std::unique_ptr<Engine>* engine);

}  // namespace sm::tpcc
