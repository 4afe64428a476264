// Volume: creation, opening and validation, page I/O, allocation, growth and Sync.
// Format, durability and locking are described in volume.h.
#include "sm/space/volume.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <random>

#include "sm/common/assert.h"
#include "sm/io/aligned_buffer.h"

namespace sm::space {
namespace {

constexpr char kMagic[8] = {'S', 'M', 'V', 'O', 'L', 'U', 'M', 'E'};
constexpr size_t kAtomicSectorBytes = 512;

struct HeaderBody {
  char magic[8];
  uint32_t format_version;
  uint32_t page_bytes;
  uint64_t page_count;
  uint32_t extent_pages;
  uint32_t pages_per_range;
  uint64_t creation_id;
};
static_assert(sizeof(HeaderBody) == 40);
// Durability rule 2 of volume.h: everything a header rewrite changes is in the first sector.
static_assert(kPageHeaderBytes + sizeof(HeaderBody) <= kAtomicSectorBytes);

uint64_t RandomCreationId() {
  std::random_device device;
  uint64_t id = (uint64_t{device()} << 32) ^ device() ^
                static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return id == 0 ? 1 : id;
}

void FillHeader(void* page, uint64_t page_count, uint32_t extent_pages, uint64_t creation_id) {
  InitPage(page, PageId(0), PageType::kVolumeHeader);
  HeaderBody body;
  std::memcpy(body.magic, kMagic, sizeof(kMagic));
  body.format_version = kVolumeFormatVersion;
  body.page_bytes = kPageBytes;
  body.page_count = page_count;
  body.extent_pages = extent_pages;
  body.pages_per_range = kPagesPerRange;
  body.creation_id = creation_id;
  std::memcpy(static_cast<char*>(page) + kPageHeaderBytes, &body, sizeof(body));
  SealPage(page);
}

// Checks a header page read from a file of file_bytes bytes; the reasons are user-facing.
Status ParseHeader(const void* page, uint64_t file_bytes, HeaderBody* body) {
  std::memcpy(body, static_cast<const char*>(page) + kPageHeaderBytes, sizeof(*body));
  if (std::memcmp(body->magic, kMagic, sizeof(kMagic)) != 0) {
    return Status::InvalidArgument("not a volume (bad magic)");
  }
  if (body->format_version > kVolumeFormatVersion) {
    return Status::InvalidArgument("volume format version " +
                                   std::to_string(body->format_version) +
                                   " is newer than this build's " +
                                   std::to_string(kVolumeFormatVersion));
  }
  SM_TRY(VerifyPage(page, PageId(0)));
  if (PageTypeOf(page) != PageType::kVolumeHeader || body->format_version == 0) {
    return Status::Corruption("page 0 is not a volume header");
  }
  if (body->page_bytes != kPageBytes) {
    return Status::InvalidArgument("volume page size " + std::to_string(body->page_bytes) +
                                   " differs from this build's " + std::to_string(kPageBytes));
  }
  if (body->pages_per_range != kPagesPerRange || body->extent_pages == 0 ||
      body->extent_pages > kMaxExtentPages || body->page_count > kMaxVolumePages ||
      body->page_count != AllocMap::RoundUpForMapSlots(body->page_count)) {
    return Status::Corruption("volume header holds impossible geometry (page count " +
                              std::to_string(body->page_count) + ", extent " +
                              std::to_string(body->extent_pages) + ")");
  }
  if (file_bytes < body->page_count * kPageBytes) {
    return Status::Corruption("truncated: the header says " + std::to_string(body->page_count) +
                              " pages but the file holds " + std::to_string(file_bytes) +
                              " bytes");
  }
  return Status::OK();
}

}  // namespace

// --- Creating and opening -------------------------------------------------------------------

Volume::Volume(std::string path, std::unique_ptr<io::File> file, uint64_t creation_id,
               uint32_t extent_pages)
    : path_(std::move(path)),
      file_(std::move(file)),
      creation_id_(creation_id),
      extent_pages_(extent_pages) {}

Volume::~Volume() = default;

Status Volume::Create(io::FileSystem* fs, const std::string& path, const VolumeOptions& options,
                      std::unique_ptr<Volume>* out) {
  out->reset();
  if (options.extent_pages == 0 || options.extent_pages > kMaxExtentPages) {
    return Status::InvalidArgument(path + ": extent_pages must be in 1.." +
                                   std::to_string(kMaxExtentPages));
  }
  bool exists = false;
  SM_TRY(fs->Exists(path, &exists));
  if (exists) return Status::InvalidArgument(path + ": cannot create a volume: file exists");
  SM_TRY(BuildNew(fs, path, options));
  return Open(fs, path, out);
}

// Writes a complete new volume under a temporary name, syncs it, renames it into place.
Status Volume::BuildNew(io::FileSystem* fs, const std::string& path,
                        const VolumeOptions& options) {
  const std::string temp = path + ".creating";
  io::OpenOptions open_options;
  open_options.create = true;
  std::unique_ptr<io::File> file;
  SM_TRY(fs->Open(temp, open_options, &file));
  uint64_t creation_id = options.creation_id != 0 ? options.creation_id : RandomCreationId();
  uint64_t page_count = AllocMap::RoundUpForMapSlots(options.extent_pages);
  SM_TRY(file->Resize(0));  // a leftover from a crashed Create
  SM_TRY(file->Resize(page_count * kPageBytes));

  AllocMap map;
  map.Grow(page_count);
  io::AlignedBuffer page(kPageBytes);
  for (uint64_t range = 0; range < map.range_count(); ++range) {
    map.Serialize(range, 0, creation_id, 1, page.data());
    SealPage(page.data());
    SM_TRY(file->Write(MapSlotPage(range, 0) * kPageBytes, page.data(), kPageBytes));
  }
  FillHeader(page.data(), page_count, options.extent_pages, creation_id);
  SM_TRY(file->Write(0, page.data(), kPageBytes));
  SM_TRY(file->Sync());
  file.reset();
  SM_TRY(fs->Rename(temp, path));
  return fs->SyncDir(io::ParentDir(path));
}

Status Volume::Open(io::FileSystem* fs, const std::string& path, std::unique_ptr<Volume>* out,
                    bool read_only) {
  out->reset();
  std::unique_ptr<io::File> file;
  // Never creates; Open writes nothing.
  SM_TRY(fs->Open(path, io::OpenOptions{.read_only = read_only}, &file));
  uint64_t file_bytes = 0;
  SM_TRY(file->Size(&file_bytes));
  if (file_bytes == 0) return Status::InvalidArgument(path + ": empty file, not a volume");
  if (file_bytes < kPageBytes) {
    return Status::Corruption(path + ": truncated: " + std::to_string(file_bytes) +
                              " bytes, less than one page");
  }
  io::AlignedBuffer page(kPageBytes);
  SM_TRY(file->Read(0, page.data(), kPageBytes));
  HeaderBody header;
  SM_TRY(io::WithPath(path, ParseHeader(page.data(), file_bytes, &header)));

  std::unique_ptr<Volume> volume(
      new Volume(path, std::move(file), header.creation_id, header.extent_pages));
  volume->file_bytes_ = file_bytes;
  volume->header_page_count_ = header.page_count;
  volume->read_only_ = read_only;
  SM_TRY(volume->LoadMaps(header.page_count));
  SM_DASSERT(volume->CheckInvariants());
  *out = std::move(volume);
  return Status::OK();
}

// Reads both map slots of every range and keeps the valid one with the higher sequence.
// Runs before the Volume is shared, so it takes no locks.
Status Volume::LoadMaps(uint64_t page_count) {
  map_.Grow(page_count);
  slots_.assign(map_.range_count(), SlotState{});
  io::AlignedBuffer copies[2] = {io::AlignedBuffer(kPageBytes), io::AlignedBuffer(kPageBytes)};
  for (uint64_t range = 0; range < map_.range_count(); ++range) {
    Status problems[2];
    uint64_t sequences[2] = {0, 0};
    for (int slot = 0; slot < 2; ++slot) {
      SM_TRY(file_->Read(MapSlotPage(range, slot) * kPageBytes, copies[slot].data(), kPageBytes));
      problems[slot] =
          AllocMap::Validate(copies[slot].data(), range, slot, creation_id_, &sequences[slot]);
    }
    bool valid[2] = {problems[0].ok(), problems[1].ok()};
    if (!valid[0] && !valid[1]) {
      return Status::Corruption(path_ + ": no valid allocation map for pages " +
                                std::to_string(range * kPagesPerRange) + "..: " +
                                problems[0].ToString() + "; " + problems[1].ToString());
    }
    // A slot never written is not a damaged copy: Create writes only slot 0 (sequence 1), and
    // slot 1 stays all zero until the first Sync that changes the range. Any other invalid
    // copy was torn or damaged.
    if (valid[0] != valid[1]) {
      const int good = valid[0] ? 0 : 1;
      const bool never_written = sequences[good] == 1 && IsZeroPage(copies[1 - good].data());
      if (!never_written) ++map_copies_rejected_;
    }
    int newest = !valid[0] || (valid[1] && sequences[1] > sequences[0]) ? 1 : 0;
    map_.Load(range, copies[newest].data());
    slots_[range] = SlotState{newest, sequences[newest]};
  }
  page_count_.store(map_.page_count(), std::memory_order_release);
  allocated_.store(map_.allocated(), std::memory_order_relaxed);
  return Status::OK();
}

// --- Page I/O -------------------------------------------------------------------------------

Status Volume::CheckOpen() const {
  if (closed_.load(std::memory_order_acquire)) return Status::Closed(path_ + ": volume closed");
  return Status::OK();
}

Status Volume::CheckWritable() const {
  SM_TRY(CheckOpen());
  if (fatal_.load(std::memory_order_acquire)) return Status::Fatal(fatal_message_);
  return Status::OK();
}

Status Volume::CheckDataPage(PageId id, const char* op) const {
  if (id.value() < map_.page_count() && !AllocMap::IsMetadataPage(id.value()) &&
      map_.IsAllocated(id.value())) [[likely]] {
    return Status::OK();
  }
  std::string what = path_ + ": " + op + " of page " + std::to_string(id.value()) + ": ";
  if (id.value() >= map_.page_count()) {
    return Status::InvalidArgument(what + "beyond the end of the volume (" +
                                   std::to_string(map_.page_count()) + " pages)");
  }
  if (AllocMap::IsMetadataPage(id.value())) {
    return Status::InvalidArgument(what + "the page holds volume metadata");
  }
  if (!map_.IsAllocated(id.value())) {
    return Status::InvalidArgument(what + "the page is not allocated");
  }
  return Status::OK();
}

Status Volume::ReadPage(PageId id, void* buf) {
  SM_TRY(CheckOpen());
  uint64_t count = page_count();
  if (id.value() >= count) {
    return Status::InvalidArgument(path_ + ": read of page " + std::to_string(id.value()) +
                                   ": beyond the end of the volume (" + std::to_string(count) +
                                   " pages)");
  }
  SM_TRY(file_->Read(id.value() * kPageBytes, buf, kPageBytes));
  return io::WithPath(path_, VerifyPage(buf, id));  // paired with SealPage in WritePage
}

Status Volume::WritePage(PageId id, void* buf) { return WritePages(id, 1, buf); }

Status Volume::WritePages(PageId first, size_t count, void* buf) {
  SM_ASSERT(count > 0);
  SM_TRY(CheckWritable());
  {
    threads::LatchGuard guard(map_latch_, threads::LatchMode::kShared);
    for (size_t i = 0; i < count; ++i) SM_TRY(CheckDataPage(PageId(first.value() + i), "write"));
  }
  char* pages = static_cast<char*>(buf);
  for (size_t i = 0; i < count; ++i) {
    SM_TRY(SealDataPage(PageId(first.value() + i), pages + i * kPageBytes));
  }
  return file_->Write(first.value() * kPageBytes, buf, count * kPageBytes);
}

Status Volume::SealDataPage(PageId id, void* page) const {
  const PageHeader* header = HeaderOf(page);
  if (header->page_id != id.value()) {
    return Status::InvalidArgument(path_ + ": write of page " + std::to_string(id.value()) +
                                   ": the buffer holds page " + std::to_string(header->page_id));
  }
  PageType type = PageTypeOf(page);
  if (type == PageType::kVolumeHeader || type == PageType::kAllocMap ||
      header->type > kMaxPageType) {
    return Status::InvalidArgument(path_ + ": write of page " + std::to_string(id.value()) +
                                   ": a data page cannot have type " +
                                   std::to_string(header->type));
  }
  SealPage(page);
  SM_DASSERT(VerifyPage(page, id).ok());  // what ReadPage will check, checked before it leaves
  return Status::OK();
}

// --- Allocation -----------------------------------------------------------------------------

bool Volume::IsAllocated(PageId id) const {
  threads::LatchGuard guard(map_latch_, threads::LatchMode::kShared);
  return map_.IsAllocated(id.value());
}

Status Volume::AllocatePage(PageId* id) {
  SM_TRY(CheckWritable());
  for (;;) {
    uint64_t count;
    {
      threads::LatchGuard guard(map_latch_, threads::LatchMode::kExclusive);
      uint64_t page = 0;
      if (map_.AllocateLowest(&page)) {
        allocated_.store(map_.allocated(), std::memory_order_relaxed);
        *id = PageId(page);
        SM_PARANOID(map_.CheckInvariants());
        return Status::OK();
      }
      count = map_.page_count();
    }
    SM_TRY(Grow(count + 1));  // another allocator may take the new pages first: loop
  }
}

Status Volume::Reserve(uint64_t free_pages) {
  SM_TRY(CheckWritable());
  if (free_pages > kMaxVolumePages) {
    return Status::NoSpace(path_ + ": cannot reserve " + std::to_string(free_pages) +
                           " pages: a volume holds at most " + std::to_string(kMaxVolumePages));
  }
  for (;;) {  // growth into a new map range adds map pages too: then grow again
    uint64_t count, allocated;
    {
      threads::LatchGuard guard(map_latch_, threads::LatchMode::kShared);
      count = map_.page_count();
      allocated = map_.allocated();
    }
    if (count - allocated >= free_pages) return Status::OK();
    SM_TRY(Grow(count + free_pages - (count - allocated)));
  }
}

Status Volume::FreePage(PageId id) {
  SM_TRY(CheckWritable());
  threads::LatchGuard guard(map_latch_, threads::LatchMode::kExclusive);
  SM_TRY(CheckDataPage(id, "free"));  // a double free lands here: nothing changes
  map_.Clear(id.value());
  allocated_.store(map_.allocated(), std::memory_order_relaxed);
  SM_PARANOID(map_.CheckInvariants());
  return Status::OK();
}

Status Volume::RedoAllocate(PageId id) {
  SM_TRY(CheckWritable());
  if (AllocMap::IsMetadataPage(id.value()) || id.value() >= kMaxVolumePages) {
    return Status::InvalidArgument(path_ + ": redo allocation of page " +
                                   std::to_string(id.value()) + ": not a data page");
  }
  for (;;) {
    {
      threads::LatchGuard guard(map_latch_, threads::LatchMode::kExclusive);
      if (id.value() < map_.page_count()) {
        if (!map_.IsAllocated(id.value())) map_.Set(id.value());
        allocated_.store(map_.allocated(), std::memory_order_relaxed);
        return Status::OK();
      }
    }
    SM_TRY(Grow(id.value() + 1));
  }
}

Status Volume::RedoFree(PageId id) {
  SM_TRY(CheckWritable());
  if (AllocMap::IsMetadataPage(id.value())) {
    return Status::InvalidArgument(path_ + ": redo free of page " + std::to_string(id.value()) +
                                   ": not a data page");
  }
  threads::LatchGuard guard(map_latch_, threads::LatchMode::kExclusive);
  if (map_.IsAllocated(id.value())) map_.Clear(id.value());
  allocated_.store(map_.allocated(), std::memory_order_relaxed);
  return Status::OK();
}

// Grows the volume by whole extents until it has at least min_page_count pages. The file is
// resized first; only when that succeeded do the new pages enter the map, so a NoSpace leaves
// the volume exactly as it was.
Status Volume::Grow(uint64_t min_page_count) {
  std::lock_guard<threads::Mutex> guard(grow_mu_);
  uint64_t current = page_count();
  if (current >= min_page_count) return Status::OK();  // another fiber grew it meanwhile
  uint64_t extents = (min_page_count - current + extent_pages_ - 1) / extent_pages_;
  uint64_t target = AllocMap::RoundUpForMapSlots(current + extents * extent_pages_);
  if (target > kMaxVolumePages) {
    return Status::NoSpace(path_ + ": the volume reached its maximum of " +
                           std::to_string(kMaxVolumePages) + " pages");
  }
  uint64_t bytes = target * kPageBytes;
  if (file_bytes_ < bytes) {
    Status s = file_->Resize(bytes);
    if (!s.ok()) {
      uint64_t actual = 0;  // a failed fallocate may have grown the file part of the way
      if (file_->Size(&actual).ok()) file_bytes_ = std::max(file_bytes_, actual);
      return s;
    }
    file_bytes_ = bytes;
  }
  threads::LatchGuard latch(map_latch_, threads::LatchMode::kExclusive);
  map_.Grow(target);
  page_count_.store(target, std::memory_order_release);
  allocated_.store(map_.allocated(), std::memory_order_relaxed);
  return Status::OK();
}

// --- Sync and Close -------------------------------------------------------------------------

Status Volume::SyncFile() {
  Status s = file_->Sync();
  if (s.ok()) return s;
  SetFatal(s);
  return Status::Fatal(fatal_message_);
}

void Volume::SetFatal(const Status& cause) {
  sync_mu_.AssertHeld();
  if (fatal_.load(std::memory_order_relaxed)) return;
  fatal_message_ = path_ + ": fdatasync failed, the volume's durable state is unknown: " +
                   cause.ToString();
  fatal_.store(true, std::memory_order_release);
}

// Writes each range's map into the slot that does not hold its newest durable copy. A range
// new to the volume has no known durable copy, and its slots may hold valid-looking pages from
// before a crash (written by a Sync whose header never made it), so both slots are written,
// the second with the higher sequence.
Status Volume::WriteDirtyMaps(const std::vector<uint64_t>& ranges,
                              std::vector<MapWrite>* written) {
  sync_mu_.AssertHeld();
  io::AlignedBuffer page(kPageBytes);
  for (uint64_t range : ranges) {
    if (range >= slots_.size()) slots_.resize(range + 1);
    const SlotState& state = slots_[range];
    std::vector<MapWrite> writes;
    if (state.newest < 0) {
      writes = {MapWrite{range, 1, state.sequence + 1}, MapWrite{range, 0, state.sequence + 2}};
    } else {
      writes = {MapWrite{range, 1 - state.newest, state.sequence + 1}};
    }
    for (const MapWrite& w : writes) {
      {
        threads::LatchGuard guard(map_latch_, threads::LatchMode::kShared);
        map_.Serialize(w.range, w.slot, creation_id_, w.sequence, page.data());
      }
      SealPage(page.data());
      SM_TRY(file_->Write(MapSlotPage(w.range, w.slot) * kPageBytes, page.data(), kPageBytes));
      written->push_back(w);
    }
  }
  return Status::OK();
}

// The map pages of `written` are durable: their slots now hold the newest copies.
void Volume::CommitSlots(const std::vector<MapWrite>& written) {
  sync_mu_.AssertHeld();
  for (const MapWrite& w : written) slots_[w.range] = SlotState{w.slot, w.sequence};
}

Status Volume::WriteHeader(uint64_t page_count) {
  io::AlignedBuffer page(kPageBytes);
  FillHeader(page.data(), page_count, extent_pages_, creation_id_);
  return file_->Write(0, page.data(), kPageBytes);
}

Status Volume::Sync() {
  SM_TRY(CheckWritable());
  if (read_only_) return Status::InvalidArgument(path_ + ": Sync of a volume opened read-only");
  std::lock_guard<threads::Mutex> guard(sync_mu_);
  SM_TRY(CheckWritable());
  std::vector<uint64_t> ranges;
  uint64_t page_count;
  {
    threads::LatchGuard latch(map_latch_, threads::LatchMode::kExclusive);
    ranges = map_.TakeDirty();
    page_count = map_.page_count();
  }
  std::vector<MapWrite> written;
  Status s = WriteDirtyMaps(ranges, &written);
  if (s.ok() && page_count != header_page_count_) {
    s = SyncFile();  // durability rule 3: the maps and the file size before the header
    if (s.ok()) {
      CommitSlots(written);
      written.clear();
      s = WriteHeader(page_count);
    }
  }
  if (s.ok()) s = SyncFile();
  if (!s.ok()) {
    if (!s.IsFatal()) {  // a write failed: the ranges not yet durable must be written again
      threads::LatchGuard latch(map_latch_, threads::LatchMode::kExclusive);
      for (uint64_t range : ranges) map_.MarkDirty(range);
    }
    return s;
  }
  CommitSlots(written);
  header_page_count_ = page_count;
  return Status::OK();
}

Status Volume::Close() {
  SM_TRY(CheckOpen());
  Status s = read_only_ ? Status::OK() : Sync();
  std::lock_guard<threads::Mutex> guard(sync_mu_);
  closed_.store(true, std::memory_order_release);
  file_.reset();
  return s;
}

bool Volume::CheckInvariants() const {
  std::lock_guard<threads::Mutex> grow_guard(grow_mu_);
  threads::LatchGuard guard(map_latch_, threads::LatchMode::kShared);
  if (!map_.CheckInvariants()) return false;                                 // 1
  if (page_count_.load(std::memory_order_relaxed) != map_.page_count()) return false;
  if (file_bytes_ < map_.page_count() * kPageBytes) return false;          // 2
  if (allocated_.load(std::memory_order_relaxed) != map_.allocated()) return false;  // 3
  return true;
}

}  // namespace sm::space
