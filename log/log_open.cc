// LogManager::Open: finds the end of an existing log, tells a torn tail from corruption in the
// middle (the rule is in log_manager.h), cuts the tail, positions the insert point and starts
// the flusher.
#include <algorithm>
#include <cstring>

#include "log/log_manager.h"
#include "sm/common/assert.h"

namespace sm::log {
namespace {

Status ValidateOptions(const LogOptions& options) {
  if (options.buffer_bytes < 4 * kLogBlockBytes || options.buffer_bytes % kLogBlockBytes != 0) {
    return Status::InvalidArgument("log buffer_bytes must be a multiple of 4096 and >= 16 KiB");
  }
  if (options.async_flush_interval.count() <= 0) {
    return Status::InvalidArgument("log async_flush_interval must be positive");
  }
  return Status::OK();
}

}  // namespace

Status LogManager::Open(io::FileSystem* fs, const std::string& dir, const LogOptions& options,
                        std::unique_ptr<LogManager>* log, LogOpenReport* report) {
  log->reset();
  SM_TRY(ValidateOptions(options));
  LogDirectoryOptions dir_options;
  dir_options.create_if_missing = options.create_if_missing && !options.read_only;
  dir_options.read_only = options.read_only;
  dir_options.direct_io = options.direct_io;
  dir_options.segment_bytes = options.segment_bytes;
  std::unique_ptr<LogDirectory> directory;
  SM_TRY(LogDirectory::Open(fs, dir, dir_options, &directory));
  std::unique_ptr<LogManager> manager(
      new LogManager(fs, options, std::shared_ptr<LogDirectory>(std::move(directory))));
  LogOpenReport local;
  if (report == nullptr) report = &local;
  *report = LogOpenReport{};
  SM_TRY(manager->FindEnd(report));
  *log = std::move(manager);
  return Status::OK();
}

// Scans from the checkpoint hint (else the start) to the first position without a valid record.
Status LogManager::FindEnd(LogOpenReport* report) {
  ControlBlock control = dir_->control();
  report->created = dir_->created();
  report->segment_bytes = dir_->geometry().segment_bytes();
  report->start_lsn = Lsn(control.start_lsn);
  report->checkpoint_lsn = Lsn(control.checkpoint_lsn);
  uint64_t scan_start = control.checkpoint_lsn != 0 ? control.checkpoint_lsn : control.start_lsn;
  report->scan_start_lsn = Lsn(scan_start);
  // A crash inside Truncate (control file moved, segments not yet retired) leaves some behind
  // (a read-only open leaves them: the reader never goes below start_lsn).
  if (!options_.read_only) {
    uint32_t retired = 0;
    SM_TRY(dir_->RemoveSegmentsBefore(control.start_lsn, SpareSegments(), &retired));
  }

  LogReader reader(dir_);
  SM_TRY(reader.Seek(Lsn(scan_start)));
  LogRecordView record;
  Status s;
  while ((s = reader.Next(&record)).ok()) {
    ++report->records_scanned;
    report->bytes_scanned += record.length;
  }
  if (!s.IsNotFound()) return s;  // a read error, or a checksummed record that is wrong
  uint64_t end = reader.position().value();
  SM_ASSERT(end >= scan_start);  // the scan only moves forward, record by record
  SM_ASSERT(end % kRecordAlignment == 0);
  uint64_t cut_until = end;
  SM_TRY(ClassifyStop(end, reader.last_stop(), &reader, &cut_until));
  SM_ASSERT(cut_until >= end);  // only what lies past the end is cut
  tail_bytes_ = cut_until - end;
  if (options_.read_only) {
    // Nothing is cut, synced or recorded: the positions start at the end, and readers stop
    // there whatever lies after it.
    report->bytes_cut = tail_bytes_;
    report->end_lsn = Lsn(end);
    SetPositions(end);
    report->spares = static_cast<uint32_t>(dir_->spare_count());
    report->segments = static_cast<uint32_t>(dir_->SegmentStarts().size());
    SM_ASSERT(!started_);  // Close writes nothing
    return Status::OK();
  }
  SM_TRY(CutTail(end, cut_until, report));
  SM_TRY(SyncScanned(scan_start, end));
  {
    // Everything below the end is on disk now: later opens report damage there as corruption.
    ControlBlock updated = dir_->control();
    updated.durable_hint = std::max(updated.durable_hint, end);
    SM_TRY(dir_->WriteControl(updated));
  }
  report->end_lsn = Lsn(end);
  SM_TRY(Start(end));
  report->spares = static_cast<uint32_t>(dir_->spare_count());
  report->segments = static_cast<uint32_t>(dir_->SegmentStarts().size());
  return Status::OK();
}

// Decides whether the invalid position `stop` is the torn end of the log or corruption, and how
// far the remnants after it reach (*cut_until).
Status LogManager::ClassifyStop(uint64_t stop, const LogReader::Probe& probe, LogReader* reader,
                                uint64_t* cut_until) {
  std::string what = "log " + dir_->dir() + ": record at LSN " + std::to_string(stop) + " (" +
                     RecordCheckName(probe.check) + ") ";
  // The bytes that must be intact for a record to start here: the length its header gives if
  // the header is plausible, else the header itself.
  uint64_t needed = probe.length != 0 ? probe.length : kRecordHeaderBytes;
  // The durable LSN may lie inside a record: one longer than the free log buffer is written in
  // pieces, and a sync between two pieces makes the first durable. So a record that merely
  // starts below the hint may still be a torn tail; only one that ends below it was synced.
  uint64_t hint = dir_->control().durable_hint;
  if (stop + needed <= hint) {
    return Status::Corruption(what + "lies below LSN " + std::to_string(hint) +
                              ", up to which the log was known to be synced");
  }
  LogReader::Survey survey;
  SM_TRY(reader->SurveyAfter(stop + kRecordAlignment, &survey));
  if (survey.valid_records > 0 && survey.max_durable_hint >= stop + needed) {
    return Status::Corruption(what + "was synced before a later valid record was written (" +
                              std::to_string(survey.valid_records) +
                              " valid records follow, the first at LSN " +
                              std::to_string(survey.first_valid_lsn) + ")");
  }
  *cut_until = std::max({stop, survey.last_valid_end, stop + probe.length});
  return Status::OK();
}

// Makes `end` the end of the log on disk: zeroes the remnants in its segment and deletes the
// segments after it (and its own segment if that one never got a valid header).
Status LogManager::CutTail(uint64_t end, uint64_t cut_until, LogOpenReport* report) {
  const SegmentGeometry& g = dir_->geometry();
  report->bytes_cut = cut_until - end;
  uint64_t segment = g.SegmentStart(end);
  uint64_t segment_end = g.SegmentEnd(segment);
  std::shared_ptr<io::File> file;
  Status s = dir_->GetSegment(segment, &file);
  uint32_t deleted = 0;
  if (s.IsCorruption()) {
    // A segment whose creation a crash interrupted holds no record, so the end is its start;
    // it is made anew by the flusher.
    if (end != segment) return s;
    SM_TRY(dir_->DeleteSegmentsFrom(segment, &deleted));
    report->segments_deleted = deleted;
    return Status::OK();
  }
  if (s.ok()) {
    SM_TRY(ZeroRange(file, segment, end, std::min(cut_until, segment_end)));
  } else if (!s.IsNotFound()) {
    return s;
  }
  SM_TRY(dir_->DeleteSegmentsFrom(segment_end, &deleted));
  report->segments_deleted = deleted;
  return Status::OK();
}

// Overwrites [from, to) of a segment with zeros, keeping the bytes before `from` in its block.
Status LogManager::ZeroRange(const std::shared_ptr<io::File>& file, uint64_t segment, uint64_t from,
                             uint64_t to) {
  if (to <= from) return Status::OK();
  const SegmentGeometry& g = dir_->geometry();
  constexpr uint64_t kChunkBytes = 64 * kLogBlockBytes;
  io::AlignedBuffer chunk(kChunkBytes);
  uint64_t pos = BlockFloor(from);
  while (pos < to) {
    uint64_t n = std::min(kChunkBytes, BlockCeil(to) - pos);
    std::memset(chunk.data(), 0, n);
    if (pos < from) {
      size_t got = 0;
      SM_TRY(file->ReadUpTo(g.FileOffset(segment, pos), chunk.data(), kLogBlockBytes, &got));
      std::memset(chunk.data() + (from - pos), 0, kLogBlockBytes - (from - pos));
    }
    SM_TRY(file->Write(g.FileOffset(segment, pos), chunk.data(), n));
    pos += n;
  }
  return file->Sync();
}

// Syncs the segments the scan read: after a process crash (not a machine crash) their bytes may
// still be only in the page cache, and Open is about to declare them durable.
Status LogManager::SyncScanned(uint64_t scan_start, uint64_t end) {
  const SegmentGeometry& g = dir_->geometry();
  for (uint64_t segment : dir_->SegmentStarts()) {
    if (g.SegmentEnd(segment) <= scan_start || segment > end) continue;
    std::shared_ptr<io::File> file;
    Status s = dir_->GetSegment(segment, &file);
    if (s.IsNotFound()) continue;
    SM_TRY(s);
    SM_TRY(file->Sync());
  }
  return Status::OK();
}

// Positions every LSN at `end`, loads the partial block before it into the ring (the first write
// rewrites that block), makes sure its segment exists, and starts the flusher.
Status LogManager::Start(uint64_t end) {
  SM_ASSERT(!started_);
  SM_ASSERT(!options_.read_only);  // a read-only log never writes, so it needs no flusher
  const SegmentGeometry& g = dir_->geometry();
  SetPositions(end);
  uint64_t segment = g.SegmentStart(end);
  std::shared_ptr<io::File> file;
  SM_TRY(SegmentForWrite(segment, &file));
  uint64_t block = BlockFloor(end);
  if (block < end) {
    SM_TRY(file->Read(g.FileOffset(segment, block), ring_.data() + block % ring_bytes_,
                      kLogBlockBytes));
  }
  preparer_ = std::make_unique<SegmentPreparer>(dir_.get());
  flusher_ = std::thread(&LogManager::FlusherMain, this);
  started_ = true;
  return Status::OK();
}

// Every LSN position at `end` (invariant 1 from the start), before any flusher runs.
void LogManager::SetPositions(uint64_t end) {
  SM_ASSERT(!started_);
  SM_ASSERT(end >= kFirstLsn && end % kRecordAlignment == 0);
  open_end_ = end;
  filled_walk_ = end;
  walk_record_start_ = end;
  for (std::atomic<uint64_t>* position :
       {&insert_, &filled_, &written_, &durable_, &durable_request_, &write_request_}) {
    position->store(end, std::memory_order_relaxed);  // the flusher thread starts after this
  }
}

}  // namespace sm::log
