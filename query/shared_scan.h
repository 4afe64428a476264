// Shared scans: QPipe's on-demand simultaneous pipelining for table scans. Concurrent
// full-table scans of one table read its pages once: the first becomes the scan in progress,
// and a scan that starts while it runs attaches to it, takes the rows it reads from then on,
// and after the table's end reads (circularly) the part it missed, from the table's start up
// to where it attached.
//
// Owns: SharedScans (the registry of scans in progress, one per table), the scan in progress
// (its own read committed transaction and cursor, the ring of batches it has read), and
// SharedScanReader (one query's view of it: which rows it still needs).
//
// A batch is up to `batch_rows` consecutive rows, read by one Cursor::NextBatch call of the
// scan's cursor. The reader that needs a batch nobody has read yet reads it (the driver): with
// other readers attached it copies the rows into an immutable batch in the ring, which every
// reader then decodes in its own way; alone it visits the rows straight from the page, with no
// copy. A lap is one pass of the cursor over the table; the cursor starts another lap when a
// reader still needs rows before its attach point.
//
// Invariants:
//   1. A reader takes exactly the batches produced after it attached: it attaches at the
//      sequence number after any batch being read, so every row it takes was read after it
//      began (read committed: it sees every row committed before it started).
//   2. A reader that attached at the start of a lap ends with that lap. Any other reader, whose
//      first batch starts at key K, takes every row of its first lap and, in the next lap, the
//      rows with keys below K; keys ascend within a lap, so no row is taken twice.
//   3. The ring holds the batches from the slowest attached reader's next one up to the
//      newest, never more than `window_batches`: a driver that would exceed it waits for the
//      readers that far behind, and detaches those that take no batch for `stall_ms`; they
//      then read what they still need on cursors of their own in their own transactions. So
//      a driver waits for a slower reader only a bounded time, and never for good on another
//      scan of its own query (which cannot move while it waits).
//   4. The scan's cursor is used by one driver at a time (`reading`), outside the mutex.
//   5. The scan ends with its last reader: the registry forgets it and its transaction
//      commits.
//
// Which scans share: ScanOperator asks for a reader only for a scan of a whole table (no key
// range, not a part of a parallel pipeline) in a query that runs read committed in a
// transaction of its own (ExecContext::shared_scans). Another read committed transaction then
// reads what the query's own would (query.md, "Shared scans"). A scan whose key order some
// operator above it needs attaches only where a lap begins, so that it never wraps.
//
// Thread/fiber safety: SharedScans is safe from any number of threads (one mutex). A reader
// belongs to one thread at a time. Readers may block a thread on a condition variable while a
// batch is read, so they are meant for plain threads, as the query streams run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "sm/common/status.h"
#include "sm/sm.h"

namespace sm::query {

class SharedScanReader;
struct SharedScan;

struct SharedScanStats {
  uint64_t scans = 0;     // scans in progress begun
  uint64_t attaches = 0;  // readers that joined a scan in progress
  uint64_t batches = 0;   // batches copied into a ring for several readers
  uint64_t laps = 0;      // laps begun after a scan's first
  uint64_t detaches = 0;  // readers that fell a window behind and went on alone
};

class SharedScans {
 public:
  struct Limits {
    uint32_t batch_rows = 256;
    uint32_t window_batches = 256;
    // A driver a window ahead of a reader waits for it; after this long without the reader
    // taking a batch, the reader is detached instead.
    uint32_t stall_ms = 20;
  };
  SharedScans() = default;
  ~SharedScans();
  SharedScans(const SharedScans&) = delete;
  SharedScans& operator=(const SharedScans&) = delete;

  // A reader of every row of `table` that attaches to the scan of it in progress, or begins
  // one. `txn` is the query's own transaction, which a detached reader reads in. A reader that
  // needs the rows in key order (`in_order`) attaches only where a lap begins, so that it never
  // wraps; elsewhere *out stays empty and the caller reads alone.
  [[nodiscard]] Status Attach(Database* db, Table* table, Transaction* txn, bool in_order,
                              std::unique_ptr<SharedScanReader>* out);
  SharedScanStats stats() const;
  // Smaller batches and windows, so that tests reach wraps and detaches on small tables. Only
  // while no scan is in progress.
  void TEST_SetLimits(Limits limits);

 private:
  friend class SharedScanReader;
  mutable std::mutex mu_;
  Limits limits_;                                        // GUARDED_BY(mu_)
  std::map<Table*, std::shared_ptr<SharedScan>> scans_;  // GUARDED_BY(mu_)
  SharedScanStats stats_;                                // GUARDED_BY(mu_)
};

struct SharedBatch;

// Where a batch lies in the scan's laps.
struct SharedBatchMeta {
  uint64_t lap = 0;
  bool first_of_lap = false;  // read by a cursor just opened at the table's start
  bool end_of_lap = false;    // the cursor reached the table's end after it
};

// One query's scan of a whole table through a shared scan. Used by one thread at a time.
class SharedScanReader {
 public:
  ~SharedScanReader();  // detaches (a scan that stops early, such as under a LIMIT)
  SharedScanReader(const SharedScanReader&) = delete;
  SharedScanReader& operator=(const SharedScanReader&) = delete;

  // Calls row(key, value) for the next rows of the table this reader has not taken, at most a
  // batch's, and stops after a row for which it returns false (the next call goes on after it).
  // *done once every row has been taken.
  [[nodiscard]] Status Read(const Cursor::RowVisitor& row, bool* done);

 private:
  friend class SharedScans;
  enum class Phase : uint8_t { kFirst, kFirstLap, kSecondLap, kSolo, kDone };
  using BatchMeta = SharedBatchMeta;
  SharedScanReader(SharedScans* owner, std::shared_ptr<SharedScan> scan, Transaction* txn,
                   uint64_t next_seq);

  void ReadBatch(const Cursor::RowVisitor& row);
  Status Fetch(const Cursor::RowVisitor& row);
  Status Drive(std::unique_lock<std::mutex>* lock, const Cursor::RowVisitor& row, bool* taken);
  Status ReadFromCursor(bool direct, const Cursor::RowVisitor& row, SharedBatch* copy,
                        BatchMeta* meta);
  bool Throttle(std::unique_lock<std::mutex>* lock);
  static void TrimRing(SharedScan* scan);
  void Leave();
  void StartSolo();
  Status ReadSolo(const Cursor::RowVisitor& row);
  void BeginBatch(const BatchMeta& meta);
  void EndBatch(const BatchMeta& meta, bool has_key, std::string_view last_key);
  // Applies the lap rules to one row; false when the reader is done (the row is not its).
  bool Offer(std::string_view key, std::string_view value, const Cursor::RowVisitor& row,
             bool* more);

  SharedScans* owner_;
  std::shared_ptr<SharedScan> scan_;
  Transaction* txn_;       // the query's, for reading alone
  uint64_t next_seq_;      // GUARDED_BY(owner_->mu_): the next batch this reader takes
  bool detached_ = false;  // GUARDED_BY(owner_->mu_)
  std::chrono::steady_clock::time_point progress_;  // GUARDED_BY(owner_->mu_): last batch taken
  bool attached_ = true;                            // in scan_->readers (until Leave)

  // Only this reader's thread touches these.
  Phase phase_ = Phase::kFirst;
  uint64_t lap_ = 0;             // the lap of its first batch
  bool from_lap_start_ = false;  // its first batch began a lap: it ends with that lap
  bool has_start_ = false;       // start_key_ is set (else: no row in its first lap)
  std::string start_key_;        // K: the first key of its first batch
  bool has_last_ = false;        // last_key_ is set (for the lap in progress)
  std::string last_key_;         // the last key taken, where a detached reader goes on
  std::shared_ptr<const SharedBatch> batch_;
  BatchMeta batch_meta_;
  size_t batch_row_ = 0;
  // Alone (detached): the key ranges still to read, in order, and the cursor over the first.
  std::vector<ScanOptions> solo_ranges_;
  std::unique_ptr<Cursor> solo_cursor_;
  bool solo_pending_first_ = false;
};

}  // namespace sm::query
