// Shared scans (contract and invariants in shared_scan.h).
//
// State machine of a reader (SharedScanReader::phase_):
//   kFirst -> kFirstLap       its first batch (BeginBatch)
//   kFirstLap -> kSecondLap   the end of its first lap, unless it attached at the lap's start
//                             (EndBatch)
//   kFirstLap -> kDone        the end of the lap it attached at the start of (EndBatch)
//   kSecondLap -> kDone       a key at or past its start key, or the lap's end (Offer, EndBatch)
//   any but kDone -> kSolo    detached by a driver (Fetch -> StartSolo)
//   kSolo -> kDone            its own ranges read (ReadSolo)
#include "query/shared_scan.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "sm/common/assert.h"

namespace sm::query {

// Rows copied out of the pages by a driver; immutable once in the ring.
struct SharedBatch {
  SharedBatchMeta meta;
  std::string bytes;
  std::vector<uint32_t> ends;  // per row: where its key ends, then where its value ends

  size_t rows() const { return ends.size() / 2; }
  std::string_view key(size_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends[2 * i - 1];
    return std::string_view(bytes).substr(begin, ends[2 * i] - begin);
  }
  std::string_view value(size_t i) const {
    return std::string_view(bytes).substr(ends[2 * i], ends[2 * i + 1] - ends[2 * i]);
  }
  void Append(std::string_view key, std::string_view value) {
    bytes.append(key);
    ends.push_back(static_cast<uint32_t>(bytes.size()));
    bytes.append(value);
    ends.push_back(static_cast<uint32_t>(bytes.size()));
  }
};

// A scan of one table in progress. Fields marked DRIVER are used only by the reader whose
// `reading` is set (one at a time, outside the mutex); the rest are GUARDED_BY(owner mu_).
struct SharedScan {
  Table* table = nullptr;            // immutable
  SharedScans::Limits limits;        // immutable
  std::unique_ptr<Transaction> txn;  // DRIVER (and the last reader, to commit it)
  std::unique_ptr<Cursor> cursor;    // DRIVER
  bool pending_first = false;        // DRIVER: the cursor is on a row no batch has had yet
  bool opened = false;               // a lap has begun
  bool at_end = true;                // the next batch begins a lap
  uint64_t lap = 0;                  // the lap of the last batch
  bool reading = false;              // a driver is reading the batch next_seq
  bool failed = false;               // a read failed: nobody attaches any more
  uint64_t next_seq = 0;             // the batch a driver reads next
  uint64_t ring_base = 0;            // the sequence number of ring.front()
  std::deque<std::shared_ptr<const SharedBatch>> ring;
  std::vector<SharedScanReader*> readers;  // attached, not detached
  uint32_t throttled = 0;                  // drivers waiting for a reader a window behind
  std::condition_variable cv;  // `reading` cleared, readers detached, a throttled reader moved

  bool CheckInvariants() const;
};

// ---- SharedScans ------------------------------------------------------------------------------

SharedScans::~SharedScans() {
  std::lock_guard<std::mutex> lock(mu_);
  SM_ASSERT(scans_.empty() && "a shared scan outlives its catalog");
}

Status SharedScans::Attach(Database* db, Table* table, Transaction* txn, bool in_order,
                           std::unique_ptr<SharedScanReader>* out) {
  SM_ASSERT(db != nullptr);
  SM_ASSERT(table != nullptr);
  out->reset();
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<SharedScan>& slot = scans_[table];
  if (slot != nullptr && !slot->failed) {
    // Its first batch would begin a lap (first_of_lap) only if none is being read and the
    // last one ended a lap.
    if (in_order && (slot->reading || !slot->at_end)) return Status::OK();
    ++stats_.attaches;
  } else {
    auto scan = std::make_shared<SharedScan>();
    scan->table = table;
    scan->limits = limits_;
    if (Status s = db->Begin(&scan->txn, Isolation::kReadCommitted); !s.ok()) {
      if (slot == nullptr) scans_.erase(table);
      return s;
    }
    slot = std::move(scan);
    ++stats_.scans;
  }
  SharedScan& scan = *slot;
  // A batch being read was begun before this reader: it takes the one after (invariant 1).
  const uint64_t first = scan.next_seq + (scan.reading ? 1 : 0);
  out->reset(new SharedScanReader(this, slot, txn, first));
  scan.readers.push_back(out->get());
  SM_DASSERT(scan.CheckInvariants());
  return Status::OK();
}

SharedScanStats SharedScans::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void SharedScans::TEST_SetLimits(Limits limits) {
  SM_ASSERT(limits.batch_rows >= 1);
  SM_ASSERT(limits.window_batches >= 1);
  std::lock_guard<std::mutex> lock(mu_);
  SM_ASSERT(scans_.empty());
  limits_ = limits;
}

// ---- SharedScan -------------------------------------------------------------------------------

bool SharedScan::CheckInvariants() const {
  if (ring_base + ring.size() != next_seq) return false;
  if (ring.size() > limits.window_batches) return false;
  for (const auto& batch : ring) {
    if (batch == nullptr || batch->ends.size() % 2 != 0) return false;
  }
  return true;
}

// ---- SharedScanReader -------------------------------------------------------------------------

SharedScanReader::SharedScanReader(SharedScans* owner, std::shared_ptr<SharedScan> scan,
                                   Transaction* txn, uint64_t next_seq)
    : owner_(owner),
      scan_(std::move(scan)),
      txn_(txn),
      next_seq_(next_seq),
      progress_(std::chrono::steady_clock::now()) {
  SM_ASSERT(txn_ != nullptr);
}

SharedScanReader::~SharedScanReader() {
  if (attached_) Leave();
}

Status SharedScanReader::Read(const Cursor::RowVisitor& row, bool* done) {
  *done = false;
  Status s;
  if (phase_ == Phase::kSolo) {
    s = ReadSolo(row);
  } else if (phase_ != Phase::kDone) {
    if (batch_ == nullptr) s = Fetch(row);
    if (s.ok() && batch_ != nullptr) ReadBatch(row);
  }
  if (phase_ == Phase::kDone && attached_) Leave();  // frees its place in the ring at once
  *done = phase_ == Phase::kDone;
  return s;
}

void SharedScanReader::ReadBatch(const Cursor::RowVisitor& row) {
  SM_ASSERT(batch_ != nullptr);
  const size_t rows = batch_->rows();
  while (batch_row_ < rows) {
    const size_t i = batch_row_++;
    bool more = true;
    if (!Offer(batch_->key(i), batch_->value(i), row, &more)) {
      batch_.reset();
      return;
    }
    if (!more) return;  // the caller goes on from the next row
  }
  EndBatch(batch_->meta, rows > 0, rows > 0 ? batch_->key(rows - 1) : std::string_view());
  batch_.reset();
}

// Takes the next batch from the ring, or reads it (Drive), or finds this reader detached.
Status SharedScanReader::Fetch(const Cursor::RowVisitor& row) {
  SM_ASSERT(batch_ == nullptr);
  std::unique_lock<std::mutex> lock(owner_->mu_);
  SharedScan& scan = *scan_;
  for (;;) {
    if (detached_) {
      lock.unlock();
      StartSolo();
      return Status::OK();
    }
    if (next_seq_ < scan.next_seq) {
      SM_ASSERT(next_seq_ >= scan.ring_base);
      batch_ = scan.ring[next_seq_ - scan.ring_base];
      batch_row_ = 0;
      ++next_seq_;
      progress_ = std::chrono::steady_clock::now();
      TrimRing(&scan);
      if (scan.throttled > 0) scan.cv.notify_all();
      lock.unlock();
      BeginBatch(batch_->meta);
      return Status::OK();
    }
    if (scan.reading) {
      scan.cv.wait(lock);
      continue;
    }
    SM_ASSERT(next_seq_ == scan.next_seq);
    if (Throttle(&lock)) continue;
    bool taken = false;
    SM_TRY(Drive(&lock, row, &taken));
    if (taken) return Status::OK();
  }
}

// With the mutex held and this reader at the scan's head: reads the next batch. Alone, it
// visits the rows itself (*taken); else it puts a copy in the ring for everyone.
Status SharedScanReader::Drive(std::unique_lock<std::mutex>* lock, const Cursor::RowVisitor& row,
                               bool* taken) {
  SharedScan& scan = *scan_;
  SM_ASSERT(!scan.reading);
  SM_ASSERT(scan.ring.size() < scan.limits.window_batches);
  const bool direct = scan.readers.size() == 1;
  SM_ASSERT(!direct || scan.ring.empty());
  BatchMeta meta;
  meta.first_of_lap = scan.at_end;
  meta.lap = !scan.at_end ? scan.lap : scan.opened ? scan.lap + 1 : 0;
  if (scan.at_end && scan.opened) ++owner_->stats_.laps;
  scan.opened = true;
  scan.lap = meta.lap;
  scan.reading = true;
  std::shared_ptr<SharedBatch> copy = direct ? nullptr : std::make_shared<SharedBatch>();
  lock->unlock();
  Status s = ReadFromCursor(direct, row, copy.get(), &meta);
  lock->lock();
  scan.reading = false;
  scan.at_end = meta.end_of_lap;
  ++scan.next_seq;
  if (!s.ok()) {
    // Nobody attaches to a failed scan; the others go on alone and meet the error, or not.
    scan.failed = true;
    for (SharedScanReader* r : scan.readers) {
      if (r != this) r->detached_ = true;
    }
    scan.readers.assign(1, this);
    scan.ring.clear();
    scan.ring_base = scan.next_seq;
    scan.cv.notify_all();
    return s;
  }
  if (direct) {
    ++scan.ring_base;
    ++next_seq_;
    *taken = true;
  } else {
    copy->meta = meta;
    scan.ring.push_back(std::move(copy));
    ++owner_->stats_.batches;
  }
  SM_DASSERT(scan.CheckInvariants());
  scan.cv.notify_all();
  return Status::OK();
}

// Outside the mutex, as the only driver: one batch of the scan's cursor, opening it at the
// table's start for a new lap.
Status SharedScanReader::ReadFromCursor(bool direct, const Cursor::RowVisitor& row,
                                        SharedBatch* copy, BatchMeta* meta) {
  SharedScan& scan = *scan_;
  if (meta->first_of_lap) {
    SM_TRY(scan.table->NewCursor(scan.txn.get(), ScanOptions::All(), &scan.cursor));
    scan.pending_first = scan.cursor->Valid();
  }
  Cursor& cursor = *scan.cursor;
  bool stopped = false;  // direct: this reader is done, or its caller wants no more now
  Cursor::RowVisitor visit;
  if (direct) {
    BeginBatch(*meta);
    visit = [&](std::string_view key, std::string_view value) {
      bool more = true;
      stopped = !Offer(key, value, row, &more) || !more;
      return !stopped;
    };
  } else {
    copy->bytes.reserve(size_t{scan.limits.batch_rows} * 128);
    visit = [copy](std::string_view key, std::string_view value) {
      copy->Append(key, value);
      return true;
    };
  }
  size_t max_rows = scan.limits.batch_rows;
  if (scan.pending_first) {
    scan.pending_first = false;
    visit(cursor.key(), cursor.value());
    --max_rows;
  }
  if (!stopped && max_rows > 0 && cursor.Valid()) {
    size_t visited = 0;
    SM_TRY(cursor.NextBatch(max_rows, visit, &visited));
  }
  meta->end_of_lap = !cursor.Valid();
  // The cursor is on the last row visited; one this reader refused (it was done) is another's.
  if (direct && phase_ != Phase::kDone) {
    EndBatch(*meta, cursor.Valid(), cursor.Valid() ? cursor.key() : std::string_view());
  }
  return Status::OK();
}

// With the mutex held, before a driver reads a batch: while a reader is a window behind, the
// driver waits for it, unless it has taken no batch for stall_ms, when it goes on alone
// (invariant 3). True if it waited (the caller looks at the scan again).
bool SharedScanReader::Throttle(std::unique_lock<std::mutex>* lock) {
  SharedScan& scan = *scan_;
  const uint64_t window = scan.limits.window_batches;
  const auto now = std::chrono::steady_clock::now();
  const auto stall = std::chrono::milliseconds(scan.limits.stall_ms);
  bool wait = false;
  auto stalled = [&](SharedScanReader* r) {
    if (r == this || r->next_seq_ + window > scan.next_seq) return false;
    if (now - r->progress_ < stall) {
      wait = true;
      return false;
    }
    r->detached_ = true;
    ++owner_->stats_.detaches;
    return true;
  };
  scan.readers.erase(std::remove_if(scan.readers.begin(), scan.readers.end(), stalled),
                     scan.readers.end());
  TrimRing(&scan);
  if (!wait) return false;
  ++scan.throttled;
  scan.cv.wait_until(*lock, now + stall);
  --scan.throttled;
  return true;
}

// With the mutex held: drops the batches every attached reader has taken.
void SharedScanReader::TrimRing(SharedScan* scan) {
  uint64_t slowest = scan->next_seq;
  for (const SharedScanReader* r : scan->readers) slowest = std::min(slowest, r->next_seq_);
  while (!scan->ring.empty() && scan->ring_base < slowest) {
    scan->ring.pop_front();
    ++scan->ring_base;
  }
  SM_ASSERT(scan->ring_base + scan->ring.size() == scan->next_seq);
}

// Leaves the scan; the last reader ends it (invariant 5).
void SharedScanReader::Leave() {
  SM_ASSERT(attached_);
  attached_ = false;
  std::unique_ptr<Transaction> txn;
  std::unique_ptr<Cursor> cursor;
  {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    SharedScan& scan = *scan_;
    if (detached_) return;  // a driver removed it already
    SM_ASSERT(!scan.reading || scan.readers.size() > 1);
    scan.readers.erase(std::remove(scan.readers.begin(), scan.readers.end(), this),
                       scan.readers.end());
    if (scan.readers.empty()) {
      auto it = owner_->scans_.find(scan.table);
      if (it != owner_->scans_.end() && it->second == scan_) owner_->scans_.erase(it);
      txn = std::move(scan.txn);
      cursor = std::move(scan.cursor);
      scan.ring.clear();
      scan.ring_base = scan.next_seq;
    } else {
      TrimRing(&scan);
      scan.cv.notify_all();  // a driver may wait for this reader
    }
    SM_DASSERT(scan.CheckInvariants());
  }
  cursor.reset();
  // It only read, so there is nothing to keep or lose: the commit only ends it.
  if (txn != nullptr && txn->active()) txn->Commit().PermitUnchecked();
}

// Detached: what it still needs becomes key ranges that it reads on its own cursors.
void SharedScanReader::StartSolo() {
  SM_ASSERT(batch_ == nullptr);
  attached_ = false;
  solo_ranges_.clear();
  ScanOptions rest;  // after the last key taken
  if (has_last_) {
    rest.lower = last_key_;
    rest.has_lower = true;
    rest.lower_inclusive = false;
  }
  switch (phase_) {
    case Phase::kFirst:
      solo_ranges_.push_back(ScanOptions::All());
      break;
    case Phase::kFirstLap:
      solo_ranges_.push_back(rest);
      if (has_last_ && !from_lap_start_) {
        SM_ASSERT(has_start_);
        ScanOptions before;  // the rows it missed, before its start key
        before.upper = start_key_;
        before.has_upper = true;
        before.upper_inclusive = false;
        solo_ranges_.push_back(before);
      }
      break;
    case Phase::kSecondLap:
      if (has_start_) {
        rest.upper = start_key_;
        rest.has_upper = true;
        rest.upper_inclusive = false;
      }
      solo_ranges_.push_back(rest);
      break;
    case Phase::kSolo:
    case Phase::kDone:
      SM_UNREACHABLE();
  }
  phase_ = Phase::kSolo;
  solo_cursor_.reset();
}

Status SharedScanReader::ReadSolo(const Cursor::RowVisitor& row) {
  SM_ASSERT(phase_ == Phase::kSolo);
  for (;;) {
    if (solo_cursor_ == nullptr) {
      if (solo_ranges_.empty()) {
        phase_ = Phase::kDone;
        return Status::OK();
      }
      SM_TRY(scan_->table->NewCursor(txn_, solo_ranges_.front(), &solo_cursor_));
      solo_ranges_.erase(solo_ranges_.begin());
      solo_pending_first_ = solo_cursor_->Valid();
    }
    if (solo_pending_first_) {
      solo_pending_first_ = false;
      if (!row(solo_cursor_->key(), solo_cursor_->value())) return Status::OK();
    }
    if (!solo_cursor_->Valid()) {
      solo_cursor_.reset();
      continue;
    }
    size_t visited = 0;
    SM_TRY(solo_cursor_->NextBatch(scan_->limits.batch_rows, row, &visited));
    if (solo_cursor_->Valid()) {
      SM_ASSERT(visited > 0);  // a cursor that visits nothing is at its end
      return Status::OK();
    }
    solo_cursor_.reset();
    if (visited > 0) return Status::OK();
  }
}

void SharedScanReader::BeginBatch(const BatchMeta& meta) {
  if (phase_ == Phase::kFirst) {
    phase_ = Phase::kFirstLap;
    lap_ = meta.lap;
    from_lap_start_ = meta.first_of_lap;
    return;
  }
  // Batches come in order, a lap's end among them (invariant 2).
  SM_ASSERT(phase_ == Phase::kFirstLap || phase_ == Phase::kSecondLap);
  SM_ASSERT(meta.lap == lap_ + (phase_ == Phase::kSecondLap ? 1 : 0));
}

void SharedScanReader::EndBatch(const BatchMeta& meta, bool has_key, std::string_view last_key) {
  SM_ASSERT(phase_ == Phase::kFirstLap || phase_ == Phase::kSecondLap);
  if (meta.end_of_lap) {
    if (phase_ == Phase::kFirstLap && !from_lap_start_) {
      phase_ = Phase::kSecondLap;  // from the table's start up to its start key
      has_last_ = false;
    } else {
      phase_ = Phase::kDone;
    }
    return;
  }
  if (has_key) {
    last_key_.assign(last_key);
    has_last_ = true;
  }
}

bool SharedScanReader::Offer(std::string_view key, std::string_view value,
                             const Cursor::RowVisitor& row, bool* more) {
  SM_DASSERT(phase_ == Phase::kFirstLap || phase_ == Phase::kSecondLap);
  if (phase_ == Phase::kSecondLap && has_start_ && key >= start_key_) {
    phase_ = Phase::kDone;  // taken in its first lap already
    return false;
  }
  if (!has_start_ && phase_ == Phase::kFirstLap) {
    start_key_.assign(key);
    has_start_ = true;
  }
  *more = row(key, value);
  return true;
}

}  // namespace sm::query
