// Volume: the data file of a database and the allocation of its pages.
//
// Owns: the volume file (through io::FileSystem), the volume header, the allocation bitmap
// (sm/space/alloc_map.h) and its persistence, and the file's growth.
//
// Byte format. The file is an array of kPageBytes pages; page N sits at byte N * kPageBytes.
//   page 0              volume header (PageType::kVolumeHeader); after the page header:
//                         +48 char[8] magic "SMVOLUME"
//                         +56 u32     volume format version (kVolumeFormatVersion)
//                         +60 u32     page size in bytes (kPageBytes)
//                         +64 u64     page count as of the last Sync
//                         +72 u32     extent size in pages
//                         +76 u32     pages per allocation-map range
//                         +80 u64     creation id (random, also stamped on every map page)
//                       and zeros to the end of the page.
//   map slots           two ping-pong allocation-map pages per range of kPagesPerRange pages,
//                       at pages 1, 2 and then r * kPagesPerRange, r * kPagesPerRange + 1
//                       (format and geometry in alloc_map.h).
//   everything else     data pages, each sealed with the common page header (page.h).
//
// Durability (plainly): allocation state lives in memory and reaches the disk only at Sync,
// Close or a checkpoint (which calls Sync). After a crash the allocation map is as of the
// last completed Sync, or newer for a range whose map write had completed; recovery (a later
// layer) redoes allocations and frees from the log with RedoAllocate / RedoFree. Because the
// map is not WAL-protected, callers must log an allocation before using the page and must
// FreePage only once the freeing transaction is durable (deferred free, as Shore does); then
// a map that is older than the log loses nothing and one that is newer leaks at most pages.
//
// Crash safety of the metadata itself:
//   1. Map pages are written to the slot that does not hold the newest durable copy, so a
//      torn map write leaves the previous copy valid; Open takes the valid slot with the
//      higher sequence. A range's first write after it joined the volume writes both slots,
//      overwriting any leftovers of an earlier, interrupted growth.
//   2. The header changes only in its page count, and all its changing bytes (checksum and
//      fields) lie in the first 512-byte sector while the rest of the page is constant, so a
//      rewrite is atomic on a device with atomic sector writes (the pg_control argument).
//   3. Sync orders: map pages, fdatasync, header, fdatasync. The header never claims pages
//      whose map or file space is not durable; a grown file larger than the header says is
//      fine (the extra pages are outside the volume until growth reaches them again).
//   4. Create builds the volume under "<path>.creating", syncs it, and renames it into place,
//      so a crash during Create never leaves a half-made file at `path`.
//
// Invariants (CheckInvariants):
//   1. The allocation map's invariants (alloc_map.h), and page_count() == its page count.
//   2. The file holds at least page_count() pages.
//   3. allocated_pages() equals the map's count; metadata pages are allocated.
//   4. Once a fatal error is latched (a failed fdatasync), every write path returns Fatal.
//
// State machine: Create/Open -> open --Close--> closed (every call returns Closed; a
//                read-only volume's Close writes nothing);
//                open --failed fdatasync--> fatal (writes return Fatal; ReadPage works).
//
// Thread/fiber safety: all methods may be called concurrently from fibers on any worker and
// from plain threads. ReadPage and WritePage of distinct pages run in parallel; allocation
// takes a short exclusive latch; growth and Sync are serialized by their own mutexes.
// Lock order: sync_mu_ before map_latch_, grow_mu_ before map_latch_; map_latch_ is never held
// across I/O, so readers and allocators never wait for a disk.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/io/file.h"
#include "sm/page/page.h"
#include "sm/space/alloc_map.h"
#include "threads/sync.h"

namespace sm::space {

inline constexpr uint32_t kVolumeFormatVersion = 1;
inline constexpr uint32_t kMaxExtentPages = 1u << 20;       // 8 GiB per growth step
inline constexpr uint64_t kMaxVolumePages = uint64_t{1} << 40;  // 8 PiB

struct VolumeOptions {
  uint32_t extent_pages = 256;  // the file grows by this many pages (1..kMaxExtentPages)
  uint64_t creation_id = 0;     // 0: random. Fixed ids make files byte-identical across runs.
};

class Volume {
 public:
  // Creates a new volume at path; fails if anything exists there.
  static Status Create(io::FileSystem* fs, const std::string& path, const VolumeOptions& options,
                       std::unique_ptr<Volume>* out);
  // Opens an existing volume. A file that is not a volume, is truncated, or has a newer
  // format is rejected with InvalidArgument or Corruption saying why; Open never writes.
  // read_only: the file is opened read-only, Sync refuses (InvalidArgument), Close writes
  // nothing, and page writes and growth fail at the file; allocation changes stay in memory.
  static Status Open(io::FileSystem* fs, const std::string& path, std::unique_ptr<Volume>* out,
                     bool read_only = false);

  // Destroying an open Volume without Close discards unsynced allocation changes, as a crash
  // would.
  ~Volume();
  Volume(const Volume&) = delete;
  Volume& operator=(const Volume&) = delete;

  // Reads page id into buf (kPageBytes, aligned to threads::kDirectIoAlignment) and verifies
  // it (VerifyPage). Beyond the end -> InvalidArgument; a bad page -> Corruption naming it.
  Status ReadPage(PageId id, void* buf);
  // Seals buf (the caller's private copy; its header must name id) and writes it. The page
  // must be an allocated data page: metadata or unallocated pages -> InvalidArgument.
  Status WritePage(PageId id, void* buf);
  // WritePage of pages first .. first + count - 1, laid out one after another in buf, as one
  // write to the file (a system call for the run instead of one per page). Every page is
  // checked before anything is written.
  Status WritePages(PageId first, size_t count, void* buf);
  // Allocates the lowest free page, growing the file by an extent when the volume is full.
  // NoSpace if the file cannot grow; nothing is recorded then.
  Status AllocatePage(PageId* id);
  // Frees an allocated data page. Double free, metadata or out of range -> InvalidArgument,
  // and nothing changes.
  Status FreePage(PageId id);
  bool IsAllocated(PageId id) const;
  // Grows the file (by whole extents) until at least free_pages of its pages are unallocated,
  // so that the allocations they cover never wait for the file to grow. NoSpace if it cannot
  // grow; the volume stays as it was then.
  Status Reserve(uint64_t free_pages);
  // OK, or the sticky Fatal status after a failed fdatasync (Closed once closed). Higher layers
  // check it so that the whole database refuses changes once the volume's durable state is
  // unknown (sm/sm.h, Status::Fatal).
  Status health() const {
    // Inline for the usual answer: every logged change asks (TxnManager::health).
    if (!closed_.load(std::memory_order_acquire) && !fatal_.load(std::memory_order_acquire))
        [[likely]] {
      return Status::OK();
    }
    return CheckWritable();
  }

  // Recovery: redo of a logged allocation or free. Idempotent; RedoAllocate grows the volume
  // if the page lies beyond its end.
  Status RedoAllocate(PageId id);
  Status RedoFree(PageId id);

  uint64_t page_count() const { return page_count_.load(std::memory_order_acquire); }
  uint64_t allocated_pages() const { return allocated_.load(std::memory_order_relaxed); }
  uint64_t creation_id() const { return creation_id_; }
  // Allocation-map copies Open found damaged (invalid, yet not the all-zero page of a copy never
  // written) while the other copy of their range was valid and used. A crash during a map write
  // leaves one, and then redo brings the older copy up to date; after a clean close there is
  // no redo, so the database layer re-marks the pages of its trees (a stale copy may miss
  // allocations) and reports the count.
  uint64_t map_copies_rejected() const { return map_copies_rejected_; }
  uint32_t extent_pages() const { return extent_pages_; }
  bool read_only() const { return read_only_; }
  const std::string& path() const { return path_; }

  // Writes the dirty allocation-map pages and (if the volume grew) the header, then
  // fdatasync: afterwards every completed WritePage and allocation change is durable.
  Status Sync();
  // Sync, then close the file. The Volume is unusable afterwards (Closed), even if Sync failed.
  // No other call may run concurrently with Close.
  Status Close();

  bool CheckInvariants() const;

 private:
  struct SlotState {
    int newest = -1;        // slot holding the newest durable copy, -1 if neither
    uint64_t sequence = 0;  // its sequence
  };
  struct MapWrite {
    uint64_t range;
    int slot;
    uint64_t sequence;
  };

  Volume(std::string path, std::unique_ptr<io::File> file, uint64_t creation_id,
         uint32_t extent_pages);
  static Status BuildNew(io::FileSystem* fs, const std::string& path,
                         const VolumeOptions& options);
  Status LoadHeader(uint64_t file_bytes, uint64_t* page_count);
  Status LoadMaps(uint64_t page_count);
  // Checks that page holds data page id and seals it (WritePages).
  Status SealDataPage(PageId id, void* page) const;
  Status WriteHeader(uint64_t page_count);
  Status WriteDirtyMaps(const std::vector<uint64_t>& ranges, std::vector<MapWrite>* written);
  void CommitSlots(const std::vector<MapWrite>& written);
  Status SyncFile();
  Status Grow(uint64_t min_page_count);
  Status CheckOpen() const;
  Status CheckWritable() const;
  Status CheckDataPage(PageId id, const char* op) const;  // map_latch_ held
  void SetFatal(const Status& cause);

  const std::string path_;
  std::unique_ptr<io::File> file_;
  const uint64_t creation_id_;
  const uint32_t extent_pages_;
  bool read_only_ = false;  // set by Open, then constant

  mutable threads::Latch map_latch_;  // shared: lookups; exclusive: changes
  AllocMap map_;  // GUARDED_BY(map_latch_)
  std::atomic<uint64_t> page_count_{0};  // == map_.page_count(); stored under map_latch_
  std::atomic<uint64_t> allocated_{0};   // == map_.allocated(); stored under map_latch_

  mutable threads::Mutex grow_mu_;  // serializes growth
  uint64_t file_bytes_ = 0;  // the file's size as last set or observed; GUARDED_BY(grow_mu_)

  threads::Mutex sync_mu_;             // serializes Sync and Close
  std::vector<SlotState> slots_;       // per range; GUARDED_BY(sync_mu_)
  uint64_t map_copies_rejected_ = 0;   // set by Open (LoadMaps), then constant
  uint64_t header_page_count_ = 0;     // in the durable header; GUARDED_BY(sync_mu_)

  std::atomic<bool> closed_{false};
  // fatal_message_ is written once, under sync_mu_, before fatal_ is set (release); readers
  // load fatal_ (acquire) before reading it.
  std::atomic<bool> fatal_{false};
  std::string fatal_message_;
};

}  // namespace sm::space
