// The TPC-C loader: the initial population of clause 4.3.3.1, in parallel on every worker.
//
// Owns: the rows of a fresh database and the order in which they are written.
//
// How it runs: the population is cut into units (ITEM in chunks; per warehouse the WAREHOUSE
// and DISTRICT rows, STOCK in chunks; per district the customers with their name-index
// entries and HISTORY rows, and the orders with their index entries, ORDER-LINE and NEW-ORDER
// rows). Every unit has its own random stream, derived from the load seed and the unit, so a
// seed gives the same database whatever the number of workers. `fibers_per_worker` fibers per
// worker take units from a shared counter, largest first; each writes its rows in
// transactions of about `rows_per_txn` rows committed with CommitKind::kBulk (not durable one
// by one). A batch that loses a deadlock or lock wait is retried whole. At the end the meta row
// (tpcc/rows.h) is committed durably, which makes all the load durable, and the engine
// checkpoints, so a restart has nothing to redo.
//
// State: an empty database -> Load -> loaded (the meta row exists). A database with tables but
// no meta row is a load that did not finish; Load refuses it rather than mixing two loads.
//
// Thread/fiber safety: Load is called from a plain thread (not a worker of the engine); it
// waits for its fibers, calling `progress` from that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/schema.h"

namespace sm::tpcc {

struct LoadProgress {
  uint64_t rows_done = 0;
  uint64_t rows_total = 0;  // an estimate (order lines are random)
  double seconds = 0;
};

struct LoadOptions {
  uint32_t warehouses = 1;
  Scale scale;
  uint64_t seed = 1;
  unsigned fibers_per_worker = 2;
  uint32_t rows_per_txn = 500;
  std::chrono::milliseconds progress_interval{1000};
  std::function<void(const LoadProgress&)> progress;  // may be empty
};

struct LoadResult {
  DatabaseInfo info;
  uint64_t rows = 0;
  uint64_t retried_batches = 0;
  double seconds = 0;
};

// Loads an empty database. InvalidArgument if it already holds a load or part of one.
[[nodiscard]] Status Load(Engine* engine, const LoadOptions& options, LoadResult* result);

// The rows a load of `warehouses` writes (ORDER-LINE at its mean of 10 per order).
uint64_t ExpectedRows(uint32_t warehouses, const Scale& scale);

// The disk space a load of `warehouses` takes, about: the data file at kDataBytesPerRow per row
// (records, B-tree slack and indexes), and the log, which holds what was written since the last
// checkpoint (kLogBytesPerRow per row) until background checkpoints recycle its segments; the
// bound kLogBytesMax is that recycling, assumed, not measured. tests/tpcc/cli_test.sh compares
// the estimate with a one-warehouse load on disk.
inline constexpr uint64_t kDataBytesPerRow = 140;
inline constexpr uint64_t kLogBytesPerRow = 520;
inline constexpr uint64_t kLogBytesMax = 8ull << 30;
uint64_t ExpectedLoadBytes(uint32_t warehouses, const Scale& scale);

// The units a load of `warehouses` is cut into (tests: the unit builder at kMaxWarehouses,
// without loading them).
size_t LoadUnitCount(uint32_t warehouses, const Scale& scale);

}  // namespace sm::tpcc
