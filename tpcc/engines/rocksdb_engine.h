// The RocksDB adapter (tpcc/engine.h over RocksDB 7.8's pessimistic TransactionDB, Debian's
// librocksdb).
//
// Owns: the database in <path>, a column family per TableId (each its own LSM tree, as each
// of our tables is its own B-tree) under the bytewise comparator (memcmp order, a prefix
// first: the order of tpcc/keys.h), one block cache shared by them, the worker threads
// (WorkerThreads), and in async mode the thread that syncs the WAL (PeriodicSync).
//
// Mapping (docs/design/engines.md gives the reasons):
//   TxnIsolation    kSerializable -> a pessimistic transaction with a snapshot taken at Begin
//                   (set_snapshot): every read locks its key (GetForUpdate: shared for Get,
//                   exclusive for GetForUpdate and every write) and fails with a write
//                   conflict if the key changed after the snapshot. RocksDB's point locks
//                   cannot lock a range: a row inserted into a range a serializable Scan read
//                   is not detected, so serializable scans may see phantoms (the one part of
//                   contract 2 this engine cannot keep; TPC-C's conditions do not depend on
//                   it, as every insert follows a locked counter or key).
//                   kReadCommitted -> no snapshot and no read locks: each Get reads the latest
//                   committed value; a scan reads the state at its start.
//   CommitMode      The WAL is always on. durable -> WriteOptions::sync; async -> no sync at
//                   commit (the WAL reaches the OS at once) and SyncWAL every
//                   PeriodicSync::kInterval; none -> no sync until Checkpoint or Close.
//                   CommitKind::kBulk commits without sync, kDurable with.
//   Cache           an LRU block cache of cache_bytes, shared by the column families; the
//                   memtables (write buffers) are beside it, as RocksDB sizes them.
//   Conflicts       Busy (write conflict or deadlock; deadlock detection on) and TryAgain ->
//                   Status::Deadlock; TimedOut (lock_timeout_ms) -> Status::LockTimeout.
//   Log bytes       the WAL_FILE_BYTES and WAL_FILE_SYNCED tickers (statistics on, without
//                   histograms or timers).
//
//   Read-only       a TransactionDB has no read-only open (opening replays its WAL): the verbs
//                   that only read open it read-write and the adapter refuses every write.
//
// Invariants:
//   1. The column family handles are created or opened once, by Open and OpenSchema, before
//      any terminal runs, and destroyed only by Close.
//   2. A Scan's iterator is its own: a visitor's scan gets another.
//
// Thread safety: the TransactionDB is thread-safe; an EngineTxn belongs to one terminal.
#pragma once

#include <memory>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/engines/engines.h"

namespace sm::tpcc {

[[nodiscard]] Status OpenRocksDbEngine(const ForeignEngineOptions& options,
                                       std::unique_ptr<Engine>* engine);

}  // namespace sm::tpcc
