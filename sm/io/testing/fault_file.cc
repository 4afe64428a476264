// FaultInjectionFileSystem: in-memory images, pending-operation lists, the fault plan and
// crash resolution. The model is described in fault_file.h.
//
// Images are sparse and copy-on-write: a file is a vector of shared 16 KiB chunks (a missing
// chunk reads as zeros). "durable = current" after a Sync and "current = durable" after a crash
// copy chunk pointers, not bytes, so thousands of crash cycles over a multi-megabyte database
// cost little; a write clones only the chunks it touches that are still shared.
#include "sm/io/testing/fault_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "sm/common/assert.h"

namespace sm::io {
namespace {

constexpr size_t kChunkBytes = 16 * 1024;
constexpr size_t kSectorBytes = FaultInjectionFileSystem::kSectorBytes;

struct Chunk {
  uint8_t bytes[kChunkBytes];
};

// The contents of one file: a size and copy-on-write chunks.
class Image {
 public:
  uint64_t size() const { return size_; }

  void Read(uint64_t offset, void* buf, size_t len) const {
    SM_DASSERT(offset + len <= size_);
    auto* out = static_cast<uint8_t*>(buf);
    while (len > 0) {
      size_t index = offset / kChunkBytes;
      size_t within = offset % kChunkBytes;
      size_t n = std::min(len, kChunkBytes - within);
      const Chunk* chunk = index < chunks_.size() ? chunks_[index].get() : nullptr;
      if (chunk != nullptr) {
        std::memcpy(out, chunk->bytes + within, n);
      } else {
        std::memset(out, 0, n);
      }
      out += n;
      offset += n;
      len -= n;
    }
  }

  void Write(uint64_t offset, const void* data, size_t len) {
    if (len == 0) return;
    size_ = std::max<uint64_t>(size_, offset + len);
    auto* in = static_cast<const uint8_t*>(data);
    while (len > 0) {
      size_t within = offset % kChunkBytes;
      size_t n = std::min(len, kChunkBytes - within);
      std::memcpy(Mutable(offset / kChunkBytes)->bytes + within, in, n);
      in += n;
      offset += n;
      len -= n;
    }
  }

  void Resize(uint64_t bytes) {
    if (bytes < size_) {
      size_t keep = (bytes + kChunkBytes - 1) / kChunkBytes;
      if (chunks_.size() > keep) chunks_.resize(keep);
      size_t within = bytes % kChunkBytes;
      // Bytes cut off must read as zero if the file grows again.
      if (within != 0 && keep <= chunks_.size() && chunks_[keep - 1] != nullptr) {
        std::memset(Mutable(keep - 1)->bytes + within, 0, kChunkBytes - within);
      }
    }
    size_ = bytes;
  }

 private:
  Chunk* Mutable(size_t index) {
    if (index >= chunks_.size()) chunks_.resize(index + 1);
    std::shared_ptr<Chunk>& slot = chunks_[index];
    if (slot == nullptr) {
      slot = std::make_shared<Chunk>();  // value-initialized: zeros
    } else if (slot.use_count() > 1) {
      slot = std::make_shared<Chunk>(*slot);
    }
    return slot.get();
  }

  uint64_t size_ = 0;
  std::vector<std::shared_ptr<Chunk>> chunks_;  // index i covers [i, i + 1) * kChunkBytes
};

// A Write or Resize not yet synced.
struct PendingOp {
  bool is_resize = false;
  uint64_t offset = 0;        // a write's offset, or a resize's new size
  std::vector<uint8_t> data;  // a write's bytes
};

struct FileNode {
  Image durable;
  Image current;
  std::vector<PendingOp> pending;
  // A failed Sync lost some pending operations: current is no longer durable + pending.
  bool diverged = false;
  // Reachable by a name (false once deleted or replaced by a rename).
  bool linked = true;
};

std::string Normalize(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  while (path.size() > 2 && path.compare(0, 2, "./") == 0) path.erase(0, 2);
  if (path.empty()) path = ".";
  return path;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

// --- Shared state ---------------------------------------------------------------------------

struct FaultInjectionFileSystem::State {
  explicit State(uint64_t seed) : rng(seed) {}

  // Every member below is GUARDED_BY(mu).
  mutable std::mutex mu;
  std::mt19937_64 rng;
  std::map<std::string, std::shared_ptr<FileNode>> files;  // ordered: crashes are replayable
  std::set<std::string> dirs;
  uint64_t epoch = 0;  // bumped by a crash; handles of an older epoch are dead
  uint64_t used_bytes = 0;
  uint64_t nth[kFaultOpCount] = {};
  double probability[kFaultOpCount] = {};
  uint64_t size_limit = kNoSizeLimit;
  std::string filter;
  FaultCounters counters;
  // LockFile locks: path -> the id of the FaultFileLock holding it. A crash ends them all.
  std::map<std::string, uint64_t> locks;
  uint64_t next_lock_id = 1;

  bool DirExists(const std::string& dir) const {
    return dir == "." || dir == "/" || dirs.count(dir) != 0;
  }

  // Whether to inject a fault of kind op into this operation on path. Ticks the countdown.
  bool Inject(FaultOp op, const std::string& path) {
    if (!filter.empty() && path.find(filter) == std::string::npos) return false;
    int i = static_cast<int>(op);
    if (nth[i] > 0 && --nth[i] == 0) return true;
    // 53 random bits as a double in [0, 1): the same on every platform, unlike
    // std::uniform_real_distribution.
    return probability[i] > 0 && static_cast<double>(rng() >> 11) * 0x1.0p-53 < probability[i];
  }

  // NoSpace unless the file may grow to end bytes under the size limit.
  Status Reserve(const FileNode& node, uint64_t end, const std::string& path) {
    uint64_t size = node.current.size();
    if (end <= size || !node.linked) return Status::OK();
    if (end - size <= size_limit && used_bytes <= size_limit - (end - size)) return Status::OK();
    ++counters.no_space;
    return ErrnoStatus(path, "growing to " + std::to_string(end) + " bytes", ENOSPC);
  }

  void Account(const FileNode& node, uint64_t size_before) {
    if (node.linked) used_bytes = used_bytes - size_before + node.current.size();
  }

  void Unlink(FileNode* node) {
    if (node->linked) used_bytes -= node->current.size();
    node->linked = false;
  }

  void ApplyTorn(Image* image, const PendingOp& op, CrashReport* report) {
    uint64_t pos = op.offset;
    uint64_t end = op.offset + op.data.size();
    while (pos < end) {
      uint64_t piece_end = std::min(end, (pos / kSectorBytes + 1) * kSectorBytes);
      if (rng() & 1) {
        image->Write(pos, op.data.data() + (pos - op.offset), piece_end - pos);
        ++report->torn_sectors_kept;
      } else {
        ++report->torn_sectors_dropped;
      }
      pos = piece_end;
    }
  }

  // Moves node's pending operations into its durable image as a crash in `mode` would.
  void Resolve(FileNode* node, CrashMode mode, CrashReport* report) {
    for (const PendingOp& op : node->pending) {
      int choice = 0;  // 0 keep, 1 drop, 2 tear
      if (mode == CrashMode::kDropUnsynced) choice = 1;
      if (mode == CrashMode::kTearUnsynced) choice = static_cast<int>(rng() % 3);
      if (choice == 2 && op.is_resize) choice = 0;  // a size change is atomic
      if (choice == 0) {
        Apply(&node->durable, op);
        ++report->ops_kept;
      } else if (choice == 1) {
        ++report->ops_dropped;
      } else {
        ApplyTorn(&node->durable, op, report);
        ++report->ops_torn;
      }
    }
    node->pending.clear();
  }

  static void Apply(Image* image, const PendingOp& op) {
    if (op.is_resize) {
      image->Resize(op.offset);
    } else {
      image->Write(op.offset, op.data.data(), op.data.size());
    }
  }
};

// --- File handles ---------------------------------------------------------------------------

namespace {

using State = FaultInjectionFileSystem::State;

class FaultFile final : public File {
 public:
  FaultFile(std::shared_ptr<State> state, std::shared_ptr<FileNode> node, std::string path,
            const OpenOptions& options, uint64_t epoch)
      : state_(std::move(state)),
        node_(std::move(node)),
        path_(std::move(path)),
        read_only_(options.read_only),
        alignment_required_(options.direct),
        epoch_(epoch) {}

  Status Read(uint64_t offset, void* buf, size_t len) override {
    size_t got = 0;
    SM_TRY(ReadUpTo(offset, buf, len, &got));
    if (got == len) return Status::OK();
    return Status::IOError(path_ + ": short read at offset " + std::to_string(offset) + ": " +
                           std::to_string(got) + " of " + std::to_string(len) + " bytes");
  }

  Status ReadUpTo(uint64_t offset, void* buf, size_t len, size_t* got) override {
    *got = 0;
    std::lock_guard<std::mutex> guard(state_->mu);
    SM_TRY(CheckTransfer("read", offset, buf, len));
    ++state_->counters.reads;
    if (state_->Inject(FaultOp::kRead, path_)) {
      ++state_->counters.read_faults;
      return ErrnoStatus(path_, "read at offset " + std::to_string(offset), EIO);
    }
    uint64_t size = node_->current.size();
    if (offset >= size) return Status::OK();
    *got = static_cast<size_t>(std::min<uint64_t>(len, size - offset));
    node_->current.Read(offset, buf, *got);
    return Status::OK();
  }

  Status Write(uint64_t offset, const void* buf, size_t len) override {
    std::lock_guard<std::mutex> guard(state_->mu);
    if (!Live()) return Dead();
    if (read_only_) return Status::InvalidArgument(path_ + ": write to a file opened read-only");
    SM_TRY(CheckTransfer("write", offset, buf, len));
    ++state_->counters.writes;
    bool fail = state_->Inject(FaultOp::kWrite, path_);
    bool short_write = state_->Inject(FaultOp::kShortWrite, path_);
    if (fail) {
      ++state_->counters.write_faults;
      return ErrnoStatus(path_, "write at offset " + std::to_string(offset), EIO);
    }
    size_t stored = len;
    if (short_write && len > 0) {
      uint64_t sectors = (len + kSectorBytes - 1) / kSectorBytes;
      stored = std::min<size_t>(len, state_->rng() % sectors * kSectorBytes);
      ++state_->counters.short_writes;
    }
    SM_TRY(state_->Reserve(*node_, offset + stored, path_));
    if (stored > 0) {
      uint64_t before = node_->current.size();
      node_->current.Write(offset, buf, stored);
      state_->Account(*node_, before);
      const auto* bytes = static_cast<const uint8_t*>(buf);
      node_->pending.push_back(PendingOp{false, offset, {bytes, bytes + stored}});
    }
    if (stored != len) {
      return Status::IOError(path_ + ": short write at offset " + std::to_string(offset) +
                             ": " + std::to_string(stored) + " of " + std::to_string(len) +
                             " bytes");
    }
    state_->counters.bytes_written += len;
    return Status::OK();
  }

  Status Sync() override {
    std::lock_guard<std::mutex> guard(state_->mu);
    if (!Live()) return Dead();
    ++state_->counters.syncs;
    if (state_->Inject(FaultOp::kSync, path_)) {
      ++state_->counters.sync_faults;
      CrashReport ignored;
      state_->Resolve(node_.get(), CrashMode::kTearUnsynced, &ignored);
      node_->diverged = true;
      return ErrnoStatus(path_, "fdatasync", EIO);
    }
    if (node_->diverged) {
      for (const PendingOp& op : node_->pending) State::Apply(&node_->durable, op);
    } else {
      node_->durable = node_->current;  // shares chunks: copies pointers only
    }
    node_->pending.clear();
    return Status::OK();
  }

  Status Size(uint64_t* bytes) override {
    std::lock_guard<std::mutex> guard(state_->mu);
    if (!Live()) return Dead();
    *bytes = node_->current.size();
    return Status::OK();
  }

  Status Resize(uint64_t bytes) override {
    std::lock_guard<std::mutex> guard(state_->mu);
    if (!Live()) return Dead();
    if (read_only_) return Status::InvalidArgument(path_ + ": resize of a file opened read-only");
    ++state_->counters.resizes;
    SM_TRY(state_->Reserve(*node_, bytes, path_));
    uint64_t before = node_->current.size();
    if (bytes == before) return Status::OK();
    node_->current.Resize(bytes);
    state_->Account(*node_, before);
    node_->pending.push_back(PendingOp{true, bytes, {}});
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  bool Live() const { return epoch_ == state_->epoch; }
  Status Dead() const {
    return Status::IOError(path_ + ": file handle invalidated by a simulated crash");
  }
  Status CheckTransfer(const char* op, uint64_t offset, const void* buf, size_t len) const {
    if (!Live()) return Dead();
    if (!alignment_required_) return Status::OK();
    return CheckDirectIoAlignment(path_, op, offset, buf, len);
  }

  const std::shared_ptr<State> state_;
  const std::shared_ptr<FileNode> node_;
  const std::string path_;
  const bool read_only_;
  const bool alignment_required_;
  const uint64_t epoch_;
};

}  // namespace

// --- FaultInjectionFileSystem ---------------------------------------------------------------

FaultInjectionFileSystem::FaultInjectionFileSystem(uint64_t seed)
    : state_(std::make_shared<State>(seed)) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() {
  std::lock_guard<std::mutex> guard(state_->mu);
  ++state_->epoch;  // handles that outlive us fail from now on
  state_->files.clear();
}

Status FaultInjectionFileSystem::Open(const std::string& raw_path, const OpenOptions& options,
                                      std::unique_ptr<File>* file) {
  file->reset();
  std::string path = Normalize(raw_path);
  std::lock_guard<std::mutex> guard(state_->mu);
  std::shared_ptr<FileNode> node;
  auto it = state_->files.find(path);
  if (it != state_->files.end()) {
    if (options.create && options.exclusive) return ErrnoStatus(path, "open", EEXIST);
    node = it->second;
  } else {
    if (state_->DirExists(path)) return ErrnoStatus(path, "open", EISDIR);
    if (!options.create || !state_->DirExists(ParentDir(path))) {
      return ErrnoStatus(path, "open", ENOENT);
    }
    node = std::make_shared<FileNode>();
    state_->files.emplace(path, node);
  }
  *file = std::make_unique<FaultFile>(state_, std::move(node), path, options, state_->epoch);
  return Status::OK();
}

namespace {
// A LockFile lock: unlocks on destruction unless a crash ended it (and someone else may hold
// the path now), which the id tells.
class FaultFileLock final : public FileLock {
 public:
  FaultFileLock(std::shared_ptr<FaultInjectionFileSystem::State> state, std::string path,
                uint64_t id)
      : state_(std::move(state)), path_(std::move(path)), id_(id) {}
  ~FaultFileLock() override;

 private:
  std::shared_ptr<FaultInjectionFileSystem::State> state_;
  const std::string path_;
  const uint64_t id_;
};
}  // namespace

Status FaultInjectionFileSystem::LockFile(const std::string& raw_path,
                                          std::unique_ptr<FileLock>* lock) {
  std::string path = Normalize(raw_path);
  {
    std::unique_ptr<File> file;  // creates it, as the POSIX implementation does
    SM_TRY(Open(path, OpenOptions{.create = true, .direct = false}, &file));
  }
  std::lock_guard<std::mutex> guard(state_->mu);
  if (state_->locks.count(path) != 0) {
    return Status::Busy(path + ": locked: the database is open in another process or handle");
  }
  const uint64_t id = state_->next_lock_id++;
  state_->locks.emplace(path, id);
  *lock = std::make_unique<FaultFileLock>(state_, path, id);
  return Status::OK();
}

FaultFileLock::~FaultFileLock() {
  std::lock_guard<std::mutex> guard(state_->mu);
  auto it = state_->locks.find(path_);
  if (it != state_->locks.end() && it->second == id_) state_->locks.erase(it);
}

Status FaultInjectionFileSystem::Exists(const std::string& raw_path, bool* exists) {
  std::string path = Normalize(raw_path);
  std::lock_guard<std::mutex> guard(state_->mu);
  *exists = state_->files.count(path) != 0 || state_->DirExists(path);
  return Status::OK();
}

Status FaultInjectionFileSystem::Delete(const std::string& raw_path) {
  std::string path = Normalize(raw_path);
  std::lock_guard<std::mutex> guard(state_->mu);
  auto it = state_->files.find(path);
  if (it != state_->files.end()) {
    state_->Unlink(it->second.get());
    state_->files.erase(it);
    return Status::OK();
  }
  if (state_->dirs.count(path) == 0) return ErrnoStatus(path, "unlink", ENOENT);
  for (const auto& [name, node] : state_->files) {
    if (ParentDir(name) == path) return ErrnoStatus(path, "rmdir", ENOTEMPTY);
  }
  for (const std::string& dir : state_->dirs) {
    if (ParentDir(dir) == path) return ErrnoStatus(path, "rmdir", ENOTEMPTY);
  }
  state_->dirs.erase(path);
  return Status::OK();
}

Status FaultInjectionFileSystem::Rename(const std::string& raw_from, const std::string& raw_to) {
  std::string from = Normalize(raw_from);
  std::string to = Normalize(raw_to);
  std::lock_guard<std::mutex> guard(state_->mu);
  auto it = state_->files.find(from);
  if (it == state_->files.end()) {
    if (state_->DirExists(from)) {
      return Status::NotSupported(from + ": renaming directories is not modeled");
    }
    return ErrnoStatus(from, "rename to " + to, ENOENT);
  }
  if (from == to) return Status::OK();
  if (state_->DirExists(to)) return ErrnoStatus(from, "rename to " + to, EISDIR);
  if (!state_->DirExists(ParentDir(to))) return ErrnoStatus(from, "rename to " + to, ENOENT);
  std::shared_ptr<FileNode> node = std::move(it->second);
  state_->files.erase(it);
  auto target = state_->files.find(to);
  if (target != state_->files.end()) {
    state_->Unlink(target->second.get());
    target->second = std::move(node);
  } else {
    state_->files.emplace(to, std::move(node));
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::CreateDir(const std::string& raw_path) {
  std::string path = Normalize(raw_path);
  std::lock_guard<std::mutex> guard(state_->mu);
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/') continue;
    std::string prefix = path.substr(0, end);
    if (state_->files.count(prefix) != 0) return ErrnoStatus(prefix, "mkdir", ENOTDIR);
    if (!state_->DirExists(prefix)) state_->dirs.insert(prefix);
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::ListDir(const std::string& raw_path,
                                         std::vector<std::string>* names) {
  names->clear();
  std::string path = Normalize(raw_path);
  std::lock_guard<std::mutex> guard(state_->mu);
  if (!state_->DirExists(path)) return ErrnoStatus(path, "opendir", ENOENT);
  for (const auto& [name, node] : state_->files) {
    if (ParentDir(name) == path) names->push_back(BaseName(name));
  }
  for (const std::string& dir : state_->dirs) {
    if (ParentDir(dir) == path && dir != path) names->push_back(BaseName(dir));
  }
  std::sort(names->begin(), names->end());
  return Status::OK();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& raw_path) {
  std::string path = Normalize(raw_path);
  std::lock_guard<std::mutex> guard(state_->mu);
  if (!state_->DirExists(path)) return ErrnoStatus(path, "open directory", ENOENT);
  return Status::OK();
}

void FaultInjectionFileSystem::FailNth(FaultOp op, uint64_t n) {
  std::lock_guard<std::mutex> guard(state_->mu);
  state_->nth[static_cast<int>(op)] = n;
}

void FaultInjectionFileSystem::SetFailProbability(FaultOp op, double p) {
  std::lock_guard<std::mutex> guard(state_->mu);
  state_->probability[static_cast<int>(op)] = p;
}

void FaultInjectionFileSystem::SetSizeLimit(uint64_t bytes) {
  std::lock_guard<std::mutex> guard(state_->mu);
  state_->size_limit = bytes;
}

void FaultInjectionFileSystem::SetFaultFilter(std::string substring) {
  std::lock_guard<std::mutex> guard(state_->mu);
  state_->filter = std::move(substring);
}

void FaultInjectionFileSystem::ClearFaults() {
  std::lock_guard<std::mutex> guard(state_->mu);
  std::fill(std::begin(state_->nth), std::end(state_->nth), 0);
  std::fill(std::begin(state_->probability), std::end(state_->probability), 0.0);
  state_->size_limit = kNoSizeLimit;
  state_->filter.clear();
}

void FaultInjectionFileSystem::Reseed(uint64_t seed) {
  std::lock_guard<std::mutex> guard(state_->mu);
  state_->rng.seed(seed);
}

CrashReport FaultInjectionFileSystem::SimulateCrash(CrashMode mode) {
  std::lock_guard<std::mutex> guard(state_->mu);
  CrashReport report;
  state_->used_bytes = 0;
  for (auto& [path, node] : state_->files) {
    state_->Resolve(node.get(), mode, &report);
    node->current = node->durable;
    node->diverged = false;
    state_->used_bytes += node->current.size();
  }
  ++state_->epoch;
  ++state_->counters.crashes;
  state_->locks.clear();  // the "process" that held them is gone
  return report;
}

FaultCounters FaultInjectionFileSystem::counters() const {
  std::lock_guard<std::mutex> guard(state_->mu);
  return state_->counters;
}

uint64_t FaultInjectionFileSystem::used_bytes() const {
  std::lock_guard<std::mutex> guard(state_->mu);
  return state_->used_bytes;
}

uint64_t FaultInjectionFileSystem::pending_ops() const {
  std::lock_guard<std::mutex> guard(state_->mu);
  uint64_t count = 0;
  for (const auto& [path, node] : state_->files) count += node->pending.size();
  return count;
}

}  // namespace sm::io
