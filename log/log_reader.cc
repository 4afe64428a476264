// LogReader: windowed reads over segment files, record checks, and the survey of a log's tail.
#include "log/log_reader.h"

#include <algorithm>
#include <cstring>

#include "sm/common/assert.h"

namespace sm::log {

Status LogReader::Open(io::FileSystem* fs, const std::string& dir,
                       std::unique_ptr<LogReader>* reader) {
  reader->reset();
  LogDirectoryOptions options;
  options.read_only = true;
  std::unique_ptr<LogDirectory> d;
  SM_TRY(LogDirectory::Open(fs, dir, options, &d));
  *reader = std::make_unique<LogReader>(std::shared_ptr<LogDirectory>(std::move(d)));
  return Status::OK();
}

LogReader::LogReader(std::shared_ptr<LogDirectory> dir, size_t window_bytes)
    : dir_(std::move(dir)),
      window_bytes_(std::max<size_t>(BlockCeil(window_bytes), kLogBlockBytes)),
      window_(io::AlignedBuffer::Uninitialized(window_bytes_)) {}

void LogReader::SetEnd(Lsn end) {
  end_ = end;
  win_len_ = 0;
}

Status LogReader::Seek(Lsn lsn) {
  if (lsn.value() < kFirstLsn || lsn.value() % kRecordAlignment != 0) {
    return Status::InvalidArgument("log reader: " + std::to_string(lsn.value()) +
                                   " is not a record position");
  }
  pos_ = lsn.value();
  return Status::OK();
}

Status LogReader::Refill(uint64_t pos) {
  const SegmentGeometry& g = dir_->geometry();
  uint64_t segment = g.SegmentStart(pos);
  uint64_t lo = BlockFloor(pos);
  uint64_t hi = std::min<uint64_t>(lo + window_bytes_, g.SegmentEnd(segment));
  win_lo_ = lo;
  win_len_ = 0;
  std::shared_ptr<io::File> file;
  Status s = dir_->GetSegment(segment, &file);
  if (s.IsNotFound() || s.IsCorruption()) return Status::OK();  // no bytes here
  SM_TRY(s);
  size_t got = 0;
  SM_TRY(file->ReadUpTo(g.FileOffset(segment, lo), window_.data(), hi - lo, &got));
  win_len_ = got;
  bytes_read_ += got;
  return Status::OK();
}

Status LogReader::Fetch(uint64_t pos, size_t n, const char** out, bool* available) {
  *available = true;
  if (pos >= win_lo_ && pos + n <= window_end()) {
    *out = window_.data() + (pos - win_lo_);
    return Status::OK();
  }
  const SegmentGeometry& g = dir_->geometry();
  bool fits =
      pos - BlockFloor(pos) + n <= window_bytes_ && pos + n <= g.SegmentEnd(g.SegmentStart(pos));
  if (!fits) {
    SM_TRY(Assemble(pos, n, available));
    *out = scratch_.data();
    return Status::OK();
  }
  SM_TRY(Refill(pos));
  if (pos + n > window_end()) {
    *available = false;
    return Status::OK();
  }
  *out = window_.data() + (pos - win_lo_);
  return Status::OK();
}

// Copies [pos, pos + n) piece by piece through the window into scratch_.
Status LogReader::Assemble(uint64_t pos, size_t n, bool* available) {
  scratch_.resize(n);
  uint64_t p = pos;
  while (p < pos + n) {
    if (!(p >= win_lo_ && p < window_end())) {
      SM_TRY(Refill(p));
      if (p >= window_end()) {
        *available = false;
        return Status::OK();
      }
    }
    size_t piece = std::min<uint64_t>(pos + n - p, window_end() - p);
    std::memcpy(scratch_.data() + (p - pos), window_.data() + (p - win_lo_), piece);
    p += piece;
  }
  return Status::OK();
}

Status LogReader::ProbeAt(uint64_t pos, Probe* probe) {
  *probe = Probe{};
  probe->check = RecordCheck::kTruncated;
  const char* bytes = nullptr;
  bool available = false;
  SM_TRY(Fetch(pos, kRecordHeaderBytes, &bytes, &available));
  if (!available) return Status::OK();
  RecordHeader header;
  std::memcpy(&header, bytes, sizeof(header));
  probe->check = CheckHeader(header, pos);
  if (probe->check != RecordCheck::kValid) return Status::OK();
  probe->length = header.length;
  SM_TRY(Fetch(pos, header.length, &bytes, &available));
  if (!available) {
    probe->check = RecordCheck::kTruncated;
    return Status::OK();
  }
  probe->check = CheckRecord(bytes);
  if (probe->check == RecordCheck::kValid) DecodeRecord(bytes, &probe->view);
  return Status::OK();
}

Status LogReader::Classify(uint64_t pos, bool bounded, LogRecordView* record) {
  Probe probe;
  SM_TRY(ProbeAt(pos, &probe));
  std::string where = "log record at LSN " + std::to_string(pos);
  if (probe.check == RecordCheck::kValid) {
    if (bounded && probe.view.end_lsn() > end_) {
      return Status::NotFound(where + " ends past the end of the log (" +
                              std::to_string(end_.value()) + ")");
    }
    *record = probe.view;
    return Status::OK();
  }
  // A live log becomes durable in pieces (a large record is published piece by piece), so a
  // bounded reader's end can fall inside a record: its bytes past the end are not written
  // yet, and it is the end of the log, not corruption.
  const uint64_t claimed = probe.length != 0 ? probe.length : kRecordHeaderBytes;
  if (bounded && pos + claimed > end_.value()) {
    return Status::NotFound(where + " ends past the end of the log (" +
                            std::to_string(end_.value()) + ")");
  }
  if (bounded || probe.check == RecordCheck::kBadLinks) {
    return Status::Corruption(where + ": " + RecordCheckName(probe.check));
  }
  last_stop_ = probe;
  return Status::NotFound("end of log at LSN " + std::to_string(pos) + " (" +
                          RecordCheckName(probe.check) + ")");
}

Status LogReader::Next(LogRecordView* record) {
  bool bounded = end_.valid();
  if (bounded && pos_ >= end_.value()) {
    return Status::NotFound("end of log at LSN " + std::to_string(pos_));
  }
  SM_TRY(Classify(pos_, bounded, record));
  pos_ = record->end_lsn().value();
  return Status::OK();
}

Status LogReader::ReadAt(Lsn lsn, LogRecordView* record) {
  if (lsn.value() < kFirstLsn || lsn.value() % kRecordAlignment != 0) {
    return Status::Corruption("log record at LSN " + std::to_string(lsn.value()) +
                              ": not a record position");
  }
  bool bounded = end_.valid();
  if (bounded && lsn >= end_) {
    return Status::NotFound("LSN " + std::to_string(lsn.value()) + " is past the end of the log");
  }
  return Classify(lsn.value(), bounded, record);
}

Status LogReader::SurveyAfter(uint64_t from, Survey* survey) {
  *survey = Survey{};
  const SegmentGeometry& g = dir_->geometry();
  for (uint64_t segment : dir_->SegmentStarts()) {
    uint64_t segment_end = g.SegmentEnd(segment);
    if (segment_end <= from) continue;
    uint64_t p = (std::max(from, segment) + kRecordAlignment - 1) & ~uint64_t{kRecordAlignment - 1};
    while (p + kRecordHeaderBytes <= segment_end) {
      if (!(p >= win_lo_ && p + 16 <= window_end())) {
        SM_TRY(Refill(p));
        if (p + 16 > window_end()) break;  // the rest of this segment is unreadable
      }
      // Fast path: a record written for position p has p in its lsn field (offset 8).
      uint64_t last = window_end() - 16;
      uint64_t field;
      while (p <= last) {
        std::memcpy(&field, window_.data() + (p - win_lo_) + 8, 8);
        if (field == p) break;
        p += kRecordAlignment;
      }
      if (p > last) continue;
      Probe probe;
      SM_TRY(ProbeAt(p, &probe));
      if (probe.check != RecordCheck::kValid) {
        p += kRecordAlignment;
        continue;
      }
      if (survey->valid_records++ == 0) survey->first_valid_lsn = p;
      survey->last_valid_end = p + probe.length;
      survey->max_durable_hint =
          std::max(survey->max_durable_hint, probe.view.durable_hint.value());
      p += probe.length;
    }
  }
  return Status::OK();
}

}  // namespace sm::log
