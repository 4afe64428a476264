// LogManager's flusher: walks the completion slots, writes the filled prefix in 4 KiB blocks,
// syncs for group commit, rolls segments, and latches the fatal state on an I/O failure.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "log/log_manager.h"
#include "sm/common/assert.h"

namespace sm::log {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int GroupBucket(size_t waiters) {
  int bucket = 0;
  while (waiters > 0 && bucket + 1 < LogStats::kGroupBuckets) {
    ++bucket;
    waiters >>= 1;
  }
  return bucket;  // 0 -> 0, 1 -> 1, 2-3 -> 2, 4-7 -> 3, ...
}

}  // namespace

void LogManager::FlusherMain() {
  for (;;) {
    // Reset before looking at the requests: a request made after this point posts again, so
    // the wait below returns at once instead of losing it.
    wake_.Reset();
    if (killed_.load(std::memory_order_acquire)) return;
    bool stopping = stop_.load(std::memory_order_seq_cst);
    if (!FlushRound(stopping) || stopping) return;
    auto wake_at = NextWake();
    if (wake_at == std::chrono::steady_clock::time_point::max()) {
      wake_.Wait();
    } else {
      wake_.WaitUntil(wake_at);
    }
  }
}

std::chrono::steady_clock::time_point LogManager::NextWake() const {
  // A request beyond the walk: some piece below it was still being copied when the walk
  // passed, and its inserter may not have seen the request (Publish). Look again soon rather
  // than sleep on a wake that may never come; the piece is normally published within
  // microseconds.
  uint64_t filled = filled_walk_;
  if (durable_request_.load(std::memory_order_seq_cst) > filled ||
      write_request_.load(std::memory_order_seq_cst) > filled) {
    return std::chrono::steady_clock::now() + kUnpublishedPoll;
  }
  int64_t deadline = async_deadline_ns_.load(std::memory_order_seq_cst);
  if (gather_hold_ns_ != 0 && (deadline == 0 || gather_hold_ns_ < deadline)) {
    deadline = gather_hold_ns_;  // a held sync's group closes then, unless a request wakes us
  }
  if (deadline == 0) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline));
}

// One round: write what is filled if anyone needs it written, sync if anyone needs it durable.
// Returns false once the log is fatal.
bool LogManager::FlushRound(bool stopping) {
  bool deadline_due = false;
  int64_t deadline = async_deadline_ns_.load(std::memory_order_seq_cst);
  if (deadline != 0 && NowNs() >= deadline) {
    // Before the walk (seq_cst): async commits that saw this deadline armed are published.
    async_deadline_ns_.store(0, std::memory_order_seq_cst);
    deadline_due = true;
  }
  uint64_t durable = durable_.load(std::memory_order_relaxed);  // only this thread stores it
  uint64_t written = written_.load(std::memory_order_relaxed);
  bool sync_due =
      stopping || deadline_due || durable_request_.load(std::memory_order_seq_cst) > durable;
  // Only durable requests may wait for their group (GroupGather); a hold defers the write too,
  // so the records of the group go out in one write, not one per arriving commit.
  gather_hold_ns_ = 0;
  if (sync_due && !stopping && !deadline_due && options_.gather_groups) {
    gather_hold_ns_ = gather_.HoldUntil(NowNs(), last_request_ns_.load(std::memory_order_relaxed),
                                        durable_waiters_.size());
    if (gather_hold_ns_ != 0) sync_due = false;
  }
  bool write_due = sync_due || write_request_.load(std::memory_order_seq_cst) > written;
  uint64_t filled = AdvanceFilled();
  write_due = write_due || filled - written >= eager_write_bytes_;
  if (write_due && filled > written) {
    Status s = WriteOut(filled);
    if (!s.ok()) {
      SetFatal(s);
      return false;
    }
    written = filled;
  }
  if (sync_due && written > durable) {
    SM_DASSERT(DirtySegmentsCover(durable, written));  // invariant 4, before it is relied on
    const int64_t sync_start = NowNs();
    Status s = SyncDirty();
    if (!s.ok()) {
      SetFatal(s);
      return false;
    }
    const int64_t sync_end = NowNs();
    // The committers to expect next: those it released, who are running their next
    // transactions, and those that asked during the sync and wait still.
    const size_t released = ReleaseDurable(written);
    gather_.Synced(sync_end - sync_start, released + durable_waiters_.size());
  }
  PrepareAhead();
  SM_DASSERT(CheckInvariants());
  return true;
}

uint64_t LogManager::AdvanceFilled() {
  uint64_t pos = filled_walk_;
  uint64_t records = 0;
  const uint64_t walk_start = pos;
  for (;;) {
    // seq_cst: pairs with Publish (see durable_request_).
    uint64_t value = slots_[(pos / kRecordAlignment) % slot_count_].load(std::memory_order_seq_cst);
    uint64_t end = value & ~uint64_t{1};
    if (end <= pos) break;  // not yet published (a value from an older lap is <= pos)
    if ((value & 1) == 0) {
      ++records;
      // A record begun in an earlier walk may be longer than the ring: its first bytes can be
      // overwritten by now, so only records begun in this walk are read back.
      if (walk_record_start_ >= walk_start) {
        SM_PARANOID(CheckPublishedRecord(walk_record_start_, end));
      }
      walk_record_start_ = end;
    }
    pos = end;
  }
  // Published bytes were reserved first (invariant 1: filled <= insert).
  SM_ASSERT(pos <= insert_.load(std::memory_order_relaxed));
  SM_DASSERT(pos % kRecordAlignment == 0);
  filled_walk_ = pos;
  filled_.store(pos, std::memory_order_release);
  counters_.records.fetch_add(records, std::memory_order_relaxed);
  return pos;
}

// Writes [BlockFloor(written), to) and publishes written = to.
Status LogManager::WriteOut(uint64_t to) {
  const SegmentGeometry& g = dir_->geometry();
  // Only what the walk found published is written (invariant 1: written <= filled), and
  // written only moves forward.
  SM_ASSERT(to <= filled_walk_);
  SM_ASSERT(to > written_.load(std::memory_order_relaxed));
  uint64_t from = BlockFloor(written_.load(std::memory_order_relaxed));
  while (from < to) {
    uint64_t segment_end = g.SegmentEnd(g.SegmentStart(from));
    uint64_t ring_wrap = from - from % ring_bytes_ + ring_bytes_;
    uint64_t chunk_end = std::min({to, segment_end, ring_wrap});
    SM_TRY(WriteChunk(from, chunk_end));
    from = chunk_end;
  }
  // release: our reads of the ring happened before; inserters may now overwrite those bytes.
  written_.store(to, std::memory_order_release);
  space_waiters_.WakeUpTo(to);
  return Status::OK();
}

// Copies the published [from, to) of the ring into staging_ and zeros the rest of to's block.
void LogManager::StageTail(uint64_t from, uint64_t to) {
  SM_DASSERT(from % kLogBlockBytes == 0);
  SM_DASSERT(BlockCeil(to) - from <= staging_.size());
  const size_t n = to - from;
  std::memcpy(staging_.data(), ring_.data() + from % ring_bytes_, n);
  std::memset(staging_.data() + n, 0, BlockCeil(to) - to);
}

Status LogManager::WriteBytes(io::File* file, uint64_t offset, const void* data, size_t n) {
  SM_TRY(file->Write(offset, data, n));
  counters_.bytes_written.fetch_add(n, std::memory_order_relaxed);
  counters_.writes.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

// Writes [from, to), which lies in one segment and one lap of the ring; from is block-aligned.
Status LogManager::WriteChunk(uint64_t from, uint64_t to) {
  SM_DASSERT(from % kLogBlockBytes == 0);
  SM_DASSERT(from < to);
  const SegmentGeometry& g = dir_->geometry();
  uint64_t segment = g.SegmentStart(from);
  SM_DASSERT(to <= g.SegmentEnd(segment));
  SM_DASSERT(from / ring_bytes_ == (to - 1) / ring_bytes_);
  std::shared_ptr<io::File> file;
  SM_TRY(SegmentForWrite(segment, &file));
  const uint64_t full_end = BlockFloor(to);
  const uint64_t offset = g.FileOffset(segment, from);
  if (to == full_end) {
    SM_TRY(WriteBytes(file.get(), offset, ring_.data() + from % ring_bytes_, to - from));
  } else if (BlockCeil(to) - from <= staging_.size()) {
    // The usual write of a commit group ends in a partial block. Inserters may be copying into
    // the rest of that block right now, so the whole write is staged, zeros after the end, and
    // goes out in one call: a second call would cost the group another device round trip.
    StageTail(from, to);
    SM_TRY(WriteBytes(file.get(), offset, staging_.data(), BlockCeil(to) - from));
  } else {
    SM_TRY(WriteBytes(file.get(), offset, ring_.data() + from % ring_bytes_, full_end - from));
    StageTail(full_end, to);
    SM_TRY(WriteBytes(file.get(), g.FileOffset(segment, full_end), staging_.data(),
                      kLogBlockBytes));
  }
  if (std::find(dirty_segments_.begin(), dirty_segments_.end(), file) == dirty_segments_.end()) {
    dirty_segments_.push_back(std::move(file));
  }
  return Status::OK();
}

Status LogManager::SyncDirty() {
  for (const std::shared_ptr<io::File>& file : dirty_segments_) SM_TRY(file->Sync());
  dirty_segments_.clear();
  counters_.syncs.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

size_t LogManager::ReleaseDurable(uint64_t lsn) {
  // Invariant 1: durable moves forward, and never past what was written; and everything
  // written was synced just now (invariant 4 leaves nothing dirty).
  SM_ASSERT(lsn > durable_.load(std::memory_order_relaxed));
  SM_ASSERT(lsn <= written_.load(std::memory_order_relaxed));
  SM_ASSERT(dirty_segments_.empty());
  // release: what the waiters read after waking (the durable bytes) is in place.
  durable_.store(lsn, std::memory_order_release);
  size_t released = durable_waiters_.WakeUpTo(lsn);
  counters_.waiters_released.fetch_add(released, std::memory_order_relaxed);
  counters_.group_histogram[GroupBucket(released)].fetch_add(1, std::memory_order_relaxed);
  if (released > counters_.max_group.load(std::memory_order_relaxed)) {
    counters_.max_group.store(released, std::memory_order_relaxed);  // only this thread stores
  }
  return released;
}

Status LogManager::SegmentForWrite(uint64_t segment_start, std::shared_ptr<io::File>* file) {
  if (current_segment_ != nullptr && segment_start == current_segment_start_) {
    *file = current_segment_;
    return Status::OK();
  }
  Status s;
  bool created = false;
  if (preparer_ == nullptr || !preparer_->Take(segment_start, &s, &current_segment_, &created) ||
      !s.ok()) {
    // Not prepared ahead (the first segment, or a roll-over that came too soon), or its
    // preparation failed: made here, and a failure now is the caller's to latch.
    s.PermitUnchecked();
    current_segment_.reset();
    s = dir_->GetSegment(segment_start, &current_segment_);
    if (s.IsNotFound()) {
      s = dir_->CreateSegment(segment_start, &current_segment_);
      created = s.ok();
    }
    SM_TRY(s);
  }
  if (created) counters_.segments_created.fetch_add(1, std::memory_order_relaxed);
  current_segment_start_ = segment_start;
  next_segment_requested_ = false;
  *file = current_segment_;
  return Status::OK();
}

// Asks the preparer for the next segment once the current one is half written.
void LogManager::PrepareAhead() {
  if (preparer_ == nullptr || current_segment_ == nullptr || next_segment_requested_) return;
  const SegmentGeometry& g = dir_->geometry();
  uint64_t written = written_.load(std::memory_order_relaxed);
  if (written - current_segment_start_ < g.data_bytes() / 2) return;
  preparer_->Request(g.SegmentEnd(current_segment_start_));
  next_segment_requested_ = true;
}

bool LogManager::CheckPublishedRecord(uint64_t start, uint64_t end) const {
  if (end - start > ring_bytes_ || start < BlockFloor(written_.load(std::memory_order_relaxed))) {
    return true;  // no longer whole in the ring (a record streamed in pieces): nothing to read
  }
  RecordHeader header;
  CopyFromRing(start, reinterpret_cast<char*>(&header), sizeof header);
  if (CheckHeader(header, start) != RecordCheck::kValid || header.length != end - start) {
    return false;
  }
  std::string image(header.length, '\0');
  CopyFromRing(start, image.data(), image.size());
  return CheckRecord(image.data()) == RecordCheck::kValid;
}

bool LogManager::DirtySegmentsCover(uint64_t durable, uint64_t written) const {
  const SegmentGeometry& g = dir_->geometry();
  size_t spanned = 0;
  for (uint64_t s = g.SegmentStart(durable); s < written; s = g.SegmentEnd(s)) ++spanned;
  return spanned <= dirty_segments_.size();
}

void LogManager::SetFatal(const Status& cause) {
  cause.PermitUnchecked();  // only the first cause is kept
  {
    std::lock_guard<threads::SpinLock> guard(fatal_lock_);
    if (!fatal_.load(std::memory_order_relaxed)) {
      fatal_status_ = Status::Fatal("log failed and accepts no more records: " + cause.ToString());
      fatal_status_.PermitUnchecked();  // a record, handed out as copies by Refuse
    }
  }
  // release: fatal_status_ is set before anyone can see the flag.
  fatal_.store(true, std::memory_order_release);
  durable_waiters_.WakeAll();
  space_waiters_.WakeAll();
}

}  // namespace sm::log
