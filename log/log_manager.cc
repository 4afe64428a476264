// LogManager: construction, the insert path, commit and flush, reads, checkpoint hint,
// truncation, close, statistics. The flusher is in log_flusher.cc, Open in log_open.cc.
#include "log/log_manager.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <span>
#include <string_view>

#include "sm/common/assert.h"
#include "sm/common/crc32c.h"
#include "threads/ctx_point.h"

namespace sm::log {

// A CTX point (threads/ctx_point.h), a candidate for the STEPS placement: a log insert, before
// its reservation (an insert may wait for room in the ring). Most inserts log a page change
// under the page's exclusive latch, where the handler does not switch.
SM_DEFINE_CTX_SITE(kCtxLogInsert, "log.insert");

namespace {

constexpr char kZeroPadding[kRecordAlignment] = {};

// Raises `target` to at least `value`. seq_cst: see LogManager::durable_request_.
void FetchMax(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t cur = target.load(std::memory_order_seq_cst);
  while (cur < value && !target.compare_exchange_weak(cur, value, std::memory_order_seq_cst)) {
  }
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* CommitModeName(CommitMode mode) {
  switch (mode) {
    case CommitMode::kDurable:
      return "durable";
    case CommitMode::kAsync:
      return "async";
    case CommitMode::kNone:
      return "none";
  }
  return "?";
}

LogManager::LogManager(io::FileSystem* fs, const LogOptions& options,
                       std::shared_ptr<LogDirectory> dir)
    : fs_(fs),
      options_(options),
      dir_(std::move(dir)),
      ring_bytes_(options.buffer_bytes),
      slot_count_(options.buffer_bytes / kRecordAlignment),
      eager_write_bytes_(options.buffer_bytes / 4),
      ring_(options.buffer_bytes),
      slots_(new std::atomic<uint64_t>[slot_count_]),
      staging_(kStagedWriteBytes) {
  for (uint64_t i = 0; i < slot_count_; ++i) slots_[i].store(0, std::memory_order_relaxed);
}

LogManager::~LogManager() {
  if (!closed_.load(std::memory_order_acquire)) Close().PermitUnchecked();
}

// --- Insert path ------------------------------------------------------------------------------

Status LogManager::Refuse() const {
  if (fatal_.load(std::memory_order_acquire)) {
    std::lock_guard<threads::SpinLock> guard(fatal_lock_);
    return fatal_status_;
  }
  return Status::Closed("log is closed");
}

Status LogManager::RefuseReadOnly(const char* what) const {
  return Status::InvalidArgument(std::string(what) + ": the log " + dir_->dir() +
                                 " is open read-only");
}

Status LogManager::Insert(const LogRecord& record, Lsn* lsn, Lsn* end_lsn) {
  SM_CTX(kCtxLogInsert);
  if (fatal_.load(std::memory_order_acquire) || closed_.load(std::memory_order_acquire))
      [[unlikely]]
    return Refuse();
  if (options_.read_only) [[unlikely]]
    return RefuseReadOnly("Insert");
  if (!IsKnownType(static_cast<uint8_t>(record.type)) || (record.flags & ~kFlagsDefined) != 0) {
    return Status::InvalidArgument("log record: unknown type or flags");
  }
  SM_ASSERT(record.payload_parts.empty() || record.payload.empty());
  const size_t payload_bytes = record.payload_bytes();
  if (payload_bytes > kMaxPayloadBytes) {
    return Status::InvalidArgument(
        "log record payload of " + std::to_string(payload_bytes) +
        " bytes exceeds the format's limit of " + std::to_string(kMaxPayloadBytes));
  }
  const uint64_t length = RecordBytes(payload_bytes);
  SM_DASSERT(length % kRecordAlignment == 0 && length <= kMaxRecordBytes);
  // acquire: the copy into the ring stays below the reservation (ReadFromRing relies on it).
  // release: what the caller stored before stays above it, for whoever reserves later
  // (TxnManager's chain count, Txn::chain_seq_). Both are the one locked add on x86.
  const uint64_t start = insert_.fetch_add(length, std::memory_order_acq_rel);
  SM_DASSERT(start % kRecordAlignment == 0);  // invariant 1: positions stay 8-aligned
  PrefetchNextRecord(start + length);
  // A link that does not point backwards would make the record read back as corrupt.
  SM_ASSERT(record.prev_lsn.value() < start);
  SM_ASSERT(record.undo_next.value() < start);
  const uint64_t offset = start % ring_bytes_;
  if (record.payload_parts.empty() && offset + length <= ring_bytes_ &&
      start + length <= ReuseLimit()) [[likely]] {
    CopyWhole(start, offset, length, record);
  } else {
    SM_TRY(CopyInPieces(start, offset, length, record));
  }
  *lsn = Lsn(start);
  if (end_lsn != nullptr) *end_lsn = Lsn(start + length);
  return Status::OK();
}

// prfchw: __builtin_prefetch(p, 1) becomes PREFETCHW (x86-64 since Broadwell and on every AMD
// CPU; older CPUs execute it as a NOP) instead of a plain read prefetch.
__attribute__((target("prfchw"))) void LogManager::PrefetchNextRecord(uint64_t pos) const {
  // The next record's lines, for writing, while this one is copied: a copy into lines not in
  // the cache leaves its stores waiting for them, and the next locked instruction (a latch
  // release, the next reservation) waits for those stores (x86 drains the store buffer
  // first). Ownership requested now arrives before the next insert.
  const char* next = ring_.data() + pos % ring_bytes_;
  const char* ring_end = ring_.data() + ring_bytes_;
  for (int line = 0; line < kPrefetchLines && next + line * 64 < ring_end; ++line) {
    __builtin_prefetch(next + line * 64, 1);
  }
}

uint64_t LogManager::ReuseLimit() const {
  // acquire: the flusher's reads of the ring bytes we are about to overwrite happened before
  // its release store of written_.
  return BlockFloor(written_.load(std::memory_order_acquire)) + ring_bytes_;
}

// Copies n bytes to the ring at `offset` (wrapping at its end); returns the offset after them.
uint64_t LogManager::CopyToRing(uint64_t offset, const char* src, size_t n) {
  while (n > 0) {
    size_t piece = std::min<uint64_t>(n, ring_bytes_ - offset);
    std::memcpy(ring_.data() + offset, src, piece);
    offset += piece;
    if (offset == ring_bytes_) offset = 0;
    src += piece;
    n -= piece;
  }
  return offset;
}

namespace {

// A record's image as consecutive runs of bytes: its header, its payload (whole or in parts),
// its zero padding. Next is called only while bytes remain.
class ImageSource {
 public:
  ImageSource(const RecordHeader& header, const LogRecord& record)
      : current_(reinterpret_cast<const char*>(&header), kRecordHeaderBytes),
        parts_(record.parts()),
        padding_(kZeroPadding, header.length - kRecordHeaderBytes - header.payload_bytes) {}

  // The next run of at most max (> 0) bytes.
  std::string_view Next(size_t max) {
    while (at_ == current_.size()) {
      at_ = 0;
      if (part_ < parts_.size()) {
        current_ = parts_[part_++];
      } else {
        SM_ASSERT(!padding_.empty());  // asked for more than the image holds
        current_ = padding_;
        padding_ = {};
      }
    }
    size_t n = std::min(max, current_.size() - at_);
    std::string_view run = current_.substr(at_, n);
    at_ += n;
    return run;
  }

 private:
  std::string_view current_;
  size_t at_ = 0;
  std::span<const std::string_view> parts_;
  size_t part_ = 0;
  std::string_view padding_;
};

}  // namespace

// Nearly every record: one payload, room for all of it in the ring, no wrap at the ring's end.
// The payload and its padding are checksummed where they were copied to, in one pass.
void LogManager::CopyWhole(uint64_t start, uint64_t offset, uint64_t length,
                           const LogRecord& record) {
  char* to = ring_.data() + offset;
  // The padding, shorter than kRecordAlignment, is zeroed by one store of that size at the
  // record's end before the payload (and the header, for an empty payload) is copied over it.
  static_assert(kRecordHeaderBytes >= kRecordAlignment);
  std::memset(to + length - kRecordAlignment, 0, kRecordAlignment);
  // An empty payload (a commit) may have no data pointer, which memcpy must not be given.
  if (!record.payload.empty()) {
    std::memcpy(to + kRecordHeaderBytes, record.payload.data(), record.payload.size());
  }
  RecordHeader header;
  // acquire: the hint must not run ahead of the sync that produced it (log_record.h).
  EncodeHeader(record, start, durable_.load(std::memory_order_acquire),
               Crc32c(to + kRecordHeaderBytes, length - kRecordHeaderBytes), &header);
  std::memcpy(to, &header, kRecordHeaderBytes);
  Publish(start, offset, start + length, false);
}

// Any other record: its image is copied in runs, and published in pieces as the ring makes
// room for them (a record may be longer than the ring).
Status LogManager::CopyInPieces(uint64_t start, uint64_t offset, uint64_t length,
                                const LogRecord& record) {
  RecordHeader header;
  EncodeHeader(record, start, durable_.load(std::memory_order_acquire), PayloadCrc(record),
               &header);
  const uint64_t end = start + length;
  ImageSource image(header, record);
  uint64_t pos = start;
  while (pos < end) {
    uint64_t limit = ReuseLimit();
    if (limit <= pos) {
      SM_TRY(WaitForSpace(pos));
      continue;
    }
    uint64_t piece_end = std::min(end, limit);
    const uint64_t piece_offset = offset;  // of pos
    for (uint64_t p = pos; p < piece_end;) {
      std::string_view run = image.Next(piece_end - p);
      offset = CopyToRing(offset, run.data(), run.size());
      p += run.size();
    }
    Publish(pos, piece_offset, piece_end, piece_end < end);
    pos = piece_end;
  }
  return Status::OK();
}

void LogManager::Publish(uint64_t from, uint64_t from_offset, uint64_t to, bool continued) {
  SM_DASSERT(to - from <= ring_bytes_);
  SM_DASSERT(from_offset == from % ring_bytes_);
  // The ring is slot_count_ slots of kRecordAlignment bytes, so from's slot is its offset's.
  // release: publishes the ring bytes to the flusher's walk. Not seq_cst: on x86 that store is
  // an xchg, which waits for every store before it (the record's copy into the ring) to
  // drain, and it was the costliest instruction of an insert. Without it the checks below
  // may miss a request made while this piece was in flight; the flusher covers that case
  // itself (NextWake polls while a request lies beyond what it could walk).
  slots_[from_offset / kRecordAlignment].store(to | (continued ? 1 : 0),
                                               std::memory_order_release);
  if (durable_request_.load(std::memory_order_relaxed) > from ||
      write_request_.load(std::memory_order_relaxed) > from ||
      to - written_.load(std::memory_order_relaxed) >= eager_write_bytes_) {
    wake_.Post();
  }
}

Status LogManager::WaitForSpace(uint64_t pos) {
  counters_.space_waits.fetch_add(1, std::memory_order_relaxed);
  // Byte pos may be overwritten once BlockFloor(written) + ring_bytes_ > pos.
  uint64_t target = BlockCeil(pos + 1 - ring_bytes_);
  FetchMax(write_request_, target);
  wake_.Post();
  space_waiters_.Wait(target, written_, fatal_);
  if (fatal_.load(std::memory_order_acquire)) return Refuse();
  return Status::OK();
}

void LogManager::RequestDurable(uint64_t lsn) {
  last_request_ns_.store(NowNs(), std::memory_order_relaxed);
  FetchMax(durable_request_, lsn);
  wake_.Post();
}

void LogManager::ArmAsyncDeadline() {
  // The fence orders the commit record's publication (a release store) before the load: either
  // this load sees the deadline the flusher has not yet taken, whose exchange and later walk
  // then see the record, or it sees none and arms one (Dekker's pattern, with the flusher's
  // seq_cst exchange and walk). One fence per async commit instead of one per record.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (async_deadline_ns_.load(std::memory_order_seq_cst) != 0) return;
  int64_t expected = 0;
  int64_t deadline =
      NowNs() +
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.async_flush_interval).count();
  if (async_deadline_ns_.compare_exchange_strong(expected, deadline, std::memory_order_seq_cst)) {
    wake_.Post();  // the flusher may be asleep with no deadline
  }
}

// --- Commit and flush ---------------------------------------------------------------------

Status LogManager::Commit(TxnId txn, Lsn prev_lsn, CommitMode mode, Lsn* lsn) {
  LogRecord record;
  record.type = RecordType::kTxnCommit;
  record.txn = txn;
  record.prev_lsn = prev_lsn;
  Lsn end;
  SM_TRY(Insert(record, lsn, &end));
  return AwaitCommit(end, mode);
}

Status LogManager::AwaitCommit(Lsn commit_end, CommitMode mode) {
  SM_DASSERT(commit_end.value() <= insert_.load(std::memory_order_relaxed));
  counters_.commits[static_cast<int>(mode)].fetch_add(1, std::memory_order_relaxed);
  switch (mode) {
    case CommitMode::kDurable: {
      Status s = Flush(commit_end);
      // A durable commit is acknowledged only once its record is (paired with the flusher's
      // ReleaseDurable; TxnManager::Commit checks it again at the acknowledgement).
      SM_ASSERT(!s.ok() || durable_.load(std::memory_order_acquire) >= commit_end.value());
      return s;
    }
    case CommitMode::kAsync:
      ArmAsyncDeadline();
      return Status::OK();
    case CommitMode::kNone:
      return Status::OK();
  }
  SM_UNREACHABLE();
}

Status LogManager::Flush(Lsn lsn) {
  if (lsn.value() > insert_.load(std::memory_order_relaxed)) {
    return Status::InvalidArgument("Flush past the end of the log");
  }
  if (durable_.load(std::memory_order_acquire) >= lsn.value()) return Status::OK();
  if (fatal_.load(std::memory_order_acquire) || closed_.load(std::memory_order_acquire)) {
    return Refuse();
  }
  RequestDurable(lsn.value());
  if (durable_waiters_.Wait(lsn.value(), durable_, fatal_)) {
    counters_.flush_waits.fetch_add(1, std::memory_order_relaxed);
  }
  if (durable_.load(std::memory_order_acquire) >= lsn.value()) return Status::OK();
  return Refuse();
}

// --- Reads ------------------------------------------------------------------------------------

std::unique_ptr<LogReader> LogManager::NewReader() {
  auto reader = std::make_unique<LogReader>(dir_);
  reader->SetEnd(durable_lsn());
  return reader;
}

#ifdef SM_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

// A seqlock read (ReadFromRing): an insert that overwrites these bytes meanwhile is detected
// afterwards and the copy thrown away, so ThreadSanitizer is told not to report that race.
void LogManager::CopyFromRing(uint64_t lsn, char* dst, size_t n) const {
#ifdef SM_TSAN
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
  uint64_t offset = lsn % ring_bytes_;
  while (n > 0) {
    size_t piece = std::min<uint64_t>(n, ring_bytes_ - offset);
    std::memcpy(dst, ring_.data() + offset, piece);
    offset = 0;
    dst += piece;
    n -= piece;
  }
#ifdef SM_TSAN
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
}

// A seqlock read. A record that this run inserted (at >= open_end_) and whose Insert has
// returned is complete in the ring, and its bytes y are overwritten only by the bytes
// y + ring_bytes_, which an inserter copies only after reserving them (insert_'s fetch_add,
// an acquire, so the copy cannot move above it). So if insert_ is still at most
// at + ring_bytes_ after the copy (the acquire fence orders the copy before that load),
// every byte copied was the record's. Its checksum is checked all the same, and anything
// unexpected falls back to the file.
bool LogManager::ReadFromRing(uint64_t at, LogRecordBuf* record) const {
  if (at < open_end_) return false;  // the ring holds only what was inserted since Start
  RecordHeader header;
  CopyFromRing(at, reinterpret_cast<char*>(&header), sizeof header);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (insert_.load(std::memory_order_relaxed) > at + ring_bytes_) return false;
  if (CheckHeader(header, at) != RecordCheck::kValid || header.length > ring_bytes_) return false;
  std::string image(header.length, '\0');
  CopyFromRing(at, image.data(), image.size());
  std::atomic_thread_fence(std::memory_order_acquire);
  if (insert_.load(std::memory_order_relaxed) > at + ring_bytes_) return false;
  if (CheckRecord(image.data()) != RecordCheck::kValid) return false;
  LogRecordView view;
  DecodeRecord(image.data(), &view);
  record->Assign(view);
  return true;
}

Status LogManager::ReadRecord(Lsn lsn, LogRecordBuf* record) {
  uint64_t at = lsn.value();
  if (at < kFirstLsn || at + kRecordHeaderBytes > insert_.load(std::memory_order_relaxed)) {
    return Status::InvalidArgument("ReadRecord: no record can start at LSN " + std::to_string(at));
  }
  if (at % kRecordAlignment == 0 && ReadFromRing(at, record)) {
    SM_DASSERT(record->view().lsn == lsn);  // the header names its own position (checked)
    return Status::OK();
  }
  SM_TRY(Flush(Lsn(at + kRecordHeaderBytes)));
  // A small window: a random read should not pull in a megabyte.
  LogReader reader(dir_, 8 * kLogBlockBytes);
  LogReader::Probe probe;
  SM_TRY(reader.ProbeAt(at, &probe));
  if (probe.length == 0) {
    return Status::Corruption("log record at LSN " + std::to_string(at) + ": " +
                              RecordCheckName(probe.check));
  }
  SM_TRY(Flush(Lsn(at + probe.length)));
  reader.SetEnd(durable_lsn());
  LogRecordView view;
  SM_TRY(reader.ReadAt(lsn, &view));
  SM_DASSERT(view.lsn == lsn && view.end_lsn().value() <= durable_lsn().value());
  record->Assign(view);
  return Status::OK();
}

// --- Control file: checkpoint hint, truncation ----------------------------------------------

Lsn LogManager::start_lsn() { return Lsn(dir_->control().start_lsn); }

Lsn LogManager::checkpoint_lsn() { return Lsn(dir_->control().checkpoint_lsn); }

Status LogManager::SetCheckpoint(Lsn checkpoint_begin) {
  if (options_.read_only) return RefuseReadOnly("SetCheckpoint");
  uint64_t durable = durable_.load(std::memory_order_acquire);
  if (checkpoint_begin.value() < kFirstLsn || checkpoint_begin.value() >= durable) {
    return Status::InvalidArgument("SetCheckpoint: LSN " +
                                   std::to_string(checkpoint_begin.value()) +
                                   " is not a durable record");
  }
  std::lock_guard<threads::Mutex> guard(control_mu_);
  ControlBlock control = dir_->control();
  if (checkpoint_begin.value() < control.start_lsn) {
    return Status::InvalidArgument("SetCheckpoint: LSN is below the log's start");
  }
  SM_DASSERT(checkpoint_begin.value() % kRecordAlignment == 0);  // a record's LSN
  control.checkpoint_lsn = checkpoint_begin.value();
  control.durable_hint = std::max(control.durable_hint, durable);
  return dir_->WriteControl(control);
}

uint32_t LogManager::SpareSegments() const {
  uint64_t fit = options_.spare_bytes / dir_->geometry().segment_bytes();
  return static_cast<uint32_t>(std::clamp<uint64_t>(fit, 2, UINT32_MAX));
}

Status LogManager::Truncate(Lsn oldest_needed) {
  if (options_.read_only) return RefuseReadOnly("Truncate");
  uint64_t durable = durable_.load(std::memory_order_acquire);
  if (oldest_needed.value() > durable) {
    return Status::InvalidArgument("Truncate: LSN " + std::to_string(oldest_needed.value()) +
                                   " is not durable yet");
  }
  std::lock_guard<threads::Mutex> guard(control_mu_);
  ControlBlock control = dir_->control();
  if (oldest_needed.value() <= control.start_lsn) return Status::OK();
  control.start_lsn = oldest_needed.value();
  if (control.checkpoint_lsn < control.start_lsn) control.checkpoint_lsn = 0;
  control.durable_hint = std::max(control.durable_hint, durable);
  // The control file moves first: a crash between the two never leaves it naming a segment
  // that is gone.
  SM_TRY(dir_->WriteControl(control));
  uint32_t removed = 0;
  Status s = dir_->RemoveSegmentsBefore(oldest_needed.value(), SpareSegments(), &removed);
  counters_.segments_removed.fetch_add(removed, std::memory_order_relaxed);
  return s;
}

// --- Close ------------------------------------------------------------------------------------

Status LogManager::Close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return Status::OK();
  stop_.store(true, std::memory_order_seq_cst);
  wake_.Post();
  if (flusher_.joinable()) flusher_.join();
  if (preparer_ != nullptr) preparer_->Stop();
  current_segment_.reset();
  dirty_segments_.clear();
  // Open failed, or the log is read-only: leave the files as they were.
  if (!started_) return Status::OK();
  if (fatal_.load(std::memory_order_acquire)) return Refuse();
  // The flusher's last round (stopping) wrote and synced everything inserted.
  SM_ASSERT(durable_.load(std::memory_order_relaxed) == insert_.load(std::memory_order_relaxed));
  SM_ASSERT(CheckInvariants());
  std::lock_guard<threads::Mutex> guard(control_mu_);
  ControlBlock control = dir_->control();
  control.durable_hint = durable_.load(std::memory_order_relaxed);
  return dir_->WriteControl(control);
}

void LogManager::TEST_Kill() { Abandon(Status::Aborted("killed by TEST_Kill")); }

void LogManager::Abandon(Status why) {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  killed_.store(true, std::memory_order_release);
  wake_.Post();
  if (flusher_.joinable()) flusher_.join();
  if (preparer_ != nullptr) preparer_->Stop();
  started_ = false;  // no control-file update by a later Close
  SetFatal(std::move(why));
  current_segment_.reset();
  dirty_segments_.clear();
}

// --- Inspection -------------------------------------------------------------------------------

bool LogManager::CheckInvariants() const {
  uint64_t durable = durable_.load(std::memory_order_acquire);
  uint64_t written = written_.load(std::memory_order_acquire);
  uint64_t filled = filled_.load(std::memory_order_acquire);
  uint64_t insert = insert_.load(std::memory_order_acquire);
  if (!(open_end_ <= durable && durable <= written && written <= filled && filled <= insert)) {
    return false;
  }
  for (uint64_t x : {durable, written, filled, insert}) {
    if (x % kRecordAlignment != 0) return false;
  }
  return true;
}

LogStats LogManager::stats() const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  LogStats s;
  s.records = get(counters_.records);
  s.bytes = insert_.load(std::memory_order_relaxed) - open_end_;
  s.writes = get(counters_.writes);
  s.bytes_written = get(counters_.bytes_written);
  s.syncs = get(counters_.syncs);
  for (int i = 0; i < kCommitModeCount; ++i) s.commits[i] = get(counters_.commits[i]);
  s.flush_waits = get(counters_.flush_waits);
  s.waiters_released = get(counters_.waiters_released);
  s.max_group = get(counters_.max_group);
  for (int i = 0; i < LogStats::kGroupBuckets; ++i) {
    s.group_histogram[i] = get(counters_.group_histogram[i]);
  }
  s.space_waits = get(counters_.space_waits);
  s.segments_created = get(counters_.segments_created);
  s.segments_removed = get(counters_.segments_removed);
  return s;
}

double LogStats::CommitsPerSync() const {
  uint64_t durable_commits = commits[static_cast<int>(CommitMode::kDurable)];
  return syncs == 0 ? 0.0 : static_cast<double>(durable_commits) / static_cast<double>(syncs);
}

std::string LogStats::ToString() const {
  std::string s = "records=" + std::to_string(records) + " bytes=" + std::to_string(bytes) +
                  " writes=" + std::to_string(writes) +
                  " bytes_written=" + std::to_string(bytes_written) +
                  " syncs=" + std::to_string(syncs);
  for (int i = 0; i < kCommitModeCount; ++i) {
    s += std::string(" commits_") + CommitModeName(static_cast<CommitMode>(i)) + "=" +
         std::to_string(commits[i]);
  }
  s += " flush_waits=" + std::to_string(flush_waits) + " max_group=" + std::to_string(max_group) +
       " space_waits=" + std::to_string(space_waits) +
       " segments_created=" + std::to_string(segments_created) +
       " segments_removed=" + std::to_string(segments_removed);
  return s;
}

std::string LogOpenReport::ToString() const {
  return std::string(created ? "created" : "opened") +
         " segment_bytes=" + std::to_string(segment_bytes) +
         " segments=" + std::to_string(segments) + " spares=" + std::to_string(spares) +
         " deleted=" + std::to_string(segments_deleted) +
         " start=" + std::to_string(start_lsn.value()) +
         " checkpoint=" + std::to_string(checkpoint_lsn.value()) +
         " scan_start=" + std::to_string(scan_start_lsn.value()) +
         " end=" + std::to_string(end_lsn.value()) +
         " records_scanned=" + std::to_string(records_scanned) +
         " bytes_scanned=" + std::to_string(bytes_scanned) +
         " bytes_cut=" + std::to_string(bytes_cut);
}

}  // namespace sm::log
