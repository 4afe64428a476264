// LogDirectory: listing, control file, segment creation, recycling and removal.
#include "log/log_dir.h"

#include <mutex>

#include "sm/common/assert.h"
#include "sm/io/aligned_buffer.h"

namespace sm::log {

Status LogDirectory::Open(io::FileSystem* fs, const std::string& dir,
                          const LogDirectoryOptions& options, std::unique_ptr<LogDirectory>* out) {
  out->reset();
  std::unique_ptr<LogDirectory> d(new LogDirectory(fs, dir, options));
  SM_TRY(d->Load());
  *out = std::move(d);
  return Status::OK();
}

LogDirectory::~LogDirectory() = default;

io::OpenOptions LogDirectory::FileOptions(bool create) const {
  io::OpenOptions o;
  o.create = create;
  o.read_only = options_.read_only;
  o.direct = options_.direct_io;
  return o;
}

Status LogDirectory::Load() {
  std::lock_guard<threads::Mutex> guard(mu_);
  std::vector<std::string> names;
  Status listed = fs_->ListDir(dir_, &names);
  if (listed.IsNotFound() && options_.create_if_missing && !options_.read_only) {
    SM_TRY(fs_->CreateDir(dir_));
  } else {
    SM_TRY(listed);
  }
  for (const std::string& name : names) {
    uint64_t lsn;
    if (ParseSegmentFileName(name, &lsn)) {
      segments_.emplace(lsn, nullptr);
    } else if (ParseSpareFileName(name, &lsn)) {
      spares_.push_back(name);
    } else if (name == kControlTempFileName && !options_.read_only) {
      SM_TRY(fs_->Delete(PathOf(name)));  // a control update that did not reach its rename
    }
  }
  bool found = false;
  SM_TRY(ReadControlLocked(&found));
  if (found) return Status::OK();
  if (!segments_.empty()) {
    return Status::Corruption(dir_ + ": log segments but no " + kControlFileName);
  }
  if (!options_.create_if_missing || options_.read_only) {
    return Status::NotFound(dir_ + ": no log (" + kControlFileName + " missing)");
  }
  SM_TRY(SegmentGeometry::Validate(options_.segment_bytes));
  ControlBlock control;
  control.segment_bytes = options_.segment_bytes;
  SM_TRY(WriteControlLocked(control));
  geometry_ = SegmentGeometry(control.segment_bytes);
  created_ = true;
  return Status::OK();
}

Status LogDirectory::ReadControlLocked(bool* found) {
  mu_.AssertHeld();
  *found = false;
  std::unique_ptr<io::File> file;
  io::OpenOptions o = FileOptions(false);
  o.read_only = true;
  Status s = fs_->Open(PathOf(kControlFileName), o, &file);
  if (s.IsNotFound()) return Status::OK();
  SM_TRY(s);
  io::AlignedBuffer block(kLogBlockBytes);
  SM_TRY(file->Read(0, block.data(), kLogBlockBytes));
  ControlBlock control;
  SM_TRY(DecodeControl(block.data(), PathOf(kControlFileName), &control));
  SM_TRY(SegmentGeometry::Validate(control.segment_bytes));
  control_ = control;
  geometry_ = SegmentGeometry(control.segment_bytes);
  *found = true;
  return Status::OK();
}

ControlBlock LogDirectory::control() {
  std::lock_guard<threads::Mutex> guard(mu_);
  return control_;
}

Status LogDirectory::WriteControl(const ControlBlock& control) {
  std::lock_guard<threads::Mutex> guard(mu_);
  return WriteControlLocked(control);
}

Status LogDirectory::WriteControlLocked(const ControlBlock& control) {
  mu_.AssertHeld();
  if (options_.read_only) return Status::InvalidArgument(dir_ + ": log opened read-only");
  io::AlignedBuffer block(kLogBlockBytes);
  EncodeControl(control, block.data());
  std::string tmp = PathOf(kControlTempFileName);
  std::unique_ptr<io::File> file;
  SM_TRY(fs_->Open(tmp, FileOptions(true), &file));
  SM_TRY(file->Write(0, block.data(), kLogBlockBytes));
  SM_TRY(file->Sync());
  file.reset();
  SM_TRY(fs_->Rename(tmp, PathOf(kControlFileName)));
  SM_TRY(fs_->SyncDir(dir_));
  control_ = control;
  return Status::OK();
}

std::vector<uint64_t> LogDirectory::SegmentStarts() {
  std::lock_guard<threads::Mutex> guard(mu_);
  std::vector<uint64_t> starts;
  starts.reserve(segments_.size());
  for (const auto& [start, file] : segments_) starts.push_back(start);
  return starts;
}

size_t LogDirectory::spare_count() {
  std::lock_guard<threads::Mutex> guard(mu_);
  return spares_.size();
}

Status LogDirectory::GetSegment(uint64_t start, std::shared_ptr<io::File>* file) {
  std::lock_guard<threads::Mutex> guard(mu_);
  auto it = segments_.find(start);
  if (it == segments_.end()) {
    return Status::NotFound(PathOf(SegmentFileName(start)) + ": no such log segment");
  }
  if (it->second == nullptr) SM_TRY(OpenSegmentLocked(start, &it->second));
  *file = it->second;
  return Status::OK();
}

Status LogDirectory::OpenSegmentLocked(uint64_t start, std::shared_ptr<io::File>* file) {
  mu_.AssertHeld();
  std::string path = PathOf(SegmentFileName(start));
  std::unique_ptr<io::File> f;
  SM_TRY(fs_->Open(path, FileOptions(false), &f));
  io::AlignedBuffer block(kLogBlockBytes);
  size_t got = 0;
  SM_TRY(f->ReadUpTo(0, block.data(), kLogBlockBytes, &got));
  SegmentHeader header;
  SM_TRY(DecodeSegmentHeader(block.data(), path, &header));
  if (header.start_lsn != start || header.segment_bytes != geometry_.segment_bytes()) {
    return Status::Corruption(path + ": segment header names start " +
                              std::to_string(header.start_lsn) + " and size " +
                              std::to_string(header.segment_bytes));
  }
  *file = std::move(f);
  return Status::OK();
}

Status LogDirectory::CreateSegment(uint64_t start, std::shared_ptr<io::File>* file,
                                   SegmentBlocks blocks) {
  SM_ASSERT(geometry_.IsSegmentStart(start));
  std::string path = PathOf(SegmentFileName(start));
  bool recycled = false;
  {
    std::lock_guard<threads::Mutex> guard(mu_);
    if (options_.read_only) return Status::InvalidArgument(dir_ + ": log opened read-only");
    SM_ASSERT(segments_.count(start) == 0);
    // A file left by a failed attempt is deleted, never reused: its Sync may have failed, and
    // a second Sync of the same file could succeed without the writes the first one lost
    // (file.h, contract 4) - e.g. a Resize to the same size, which writes nothing. A fresh
    // file's durability depends on no earlier sync.
    bool exists = false;
    SM_TRY(fs_->Exists(path, &exists));
    if (exists) {
      SM_TRY(fs_->Delete(path));
    } else if (!spares_.empty()) {
      SM_TRY(fs_->Rename(PathOf(spares_.back()), path));
      spares_.pop_back();
      recycled = true;
    }
  }
  // Unregistered until complete, so nobody reads its header before it is written; the
  // mutex is not held, so readers are not kept waiting while a whole segment is written.
  std::unique_ptr<io::File> f;
  SM_TRY(fs_->Open(path, FileOptions(true), &f));
  io::AlignedBuffer block(kLogBlockBytes);
  EncodeSegmentHeader(SegmentHeader{geometry_.segment_bytes(), start}, block.data());
  SM_TRY(f->Write(0, block.data(), kLogBlockBytes));
  if (blocks == SegmentBlocks::kWritten && !recycled) {
    SM_TRY(f->ResizeWritten(geometry_.segment_bytes()));
  } else {
    SM_TRY(f->Resize(geometry_.segment_bytes()));
  }
  SM_TRY(f->Sync());
  SM_TRY(fs_->SyncDir(dir_));
  std::shared_ptr<io::File> shared(std::move(f));
  std::lock_guard<threads::Mutex> guard(mu_);
  SM_ASSERT(segments_.count(start) == 0);
  segments_[start] = shared;
  *file = std::move(shared);
  return Status::OK();
}

Status LogDirectory::RemoveSegmentsBefore(uint64_t lsn, uint32_t keep_spares, uint32_t* removed) {
  *removed = 0;
  // The registry changes under the mutex; the files are renamed and deleted outside it. The
  // flusher takes the mutex to create its next segment, and deleting many segments takes long
  // enough for the log buffer to fill and every inserter to wait (bench_log's
  // insert_mb_per_s_1w runs beside a truncator that retires segments).
  std::vector<uint64_t> to_spare, to_delete;
  {
    std::lock_guard<threads::Mutex> guard(mu_);
    size_t spares = spares_.size();
    while (!segments_.empty() && geometry_.SegmentEnd(segments_.begin()->first) <= lsn) {
      uint64_t start = segments_.begin()->first;
      if (spares < keep_spares) {
        to_spare.push_back(start);
        ++spares;
      } else {
        to_delete.push_back(start);
      }
      segments_.erase(segments_.begin());
    }
  }
  // A segment leaves the registry before its file goes: a crash in between leaves a file
  // below the control file's start, which the next Open retires. A reader holding the File
  // keeps using it.
  for (uint64_t start : to_spare) {
    SM_TRY(fs_->Rename(PathOf(SegmentFileName(start)), PathOf(SpareFileName(start))));
    std::lock_guard<threads::Mutex> guard(mu_);
    spares_.push_back(SpareFileName(start));
    ++*removed;
  }
  for (uint64_t start : to_delete) {
    SM_TRY(fs_->Delete(PathOf(SegmentFileName(start))));
    ++*removed;
  }
  if (*removed > 0) SM_TRY(fs_->SyncDir(dir_));
  return Status::OK();
}

Status LogDirectory::DeleteSegmentsFrom(uint64_t start, uint32_t* deleted) {
  *deleted = 0;
  std::lock_guard<threads::Mutex> guard(mu_);
  while (!segments_.empty() && segments_.rbegin()->first >= start) {
    auto last = std::prev(segments_.end());
    SM_TRY(fs_->Delete(PathOf(SegmentFileName(last->first))));
    segments_.erase(last);
    ++*deleted;
  }
  if (*deleted > 0) SM_TRY(fs_->SyncDir(dir_));
  return Status::OK();
}

}  // namespace sm::log
