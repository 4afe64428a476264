// BufferPool: fixing, loading, clock eviction, write-back and the background writer.
#include "sm/buffer/buffer_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "sm/buffer/frame_table.h"
#include "sm/common/assert.h"
#include "sm/space/volume.h"
#include "threads/runtime.h"

namespace sm::buffer {

using threads::LatchMode;

SM_DEFINE_CTX_SITE(kCtxBufferFix, "buffer.fix");
SM_DEFINE_CTX_SITE(kCtxBufferUnfix, "buffer.unfix");

// A slice of the page table. hits is counted on the line the hit reads anyway (the table's
// array pointer), without a read-modify-write: two fixes of one partition at the same moment
// on two workers may count one hit.
struct alignas(64) BufferPool::Partition {
  mutable threads::SpinLock lock;
  FrameTable map;  // GUARDED_BY(lock), except FindUnlocked
  std::atomic<uint64_t> hits{0};

  void CountHit() {
    hits.store(hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

namespace {

// O_DIRECT-aligned room for the copies of `pages` pages being written back.
struct StagingBuffer {
  explicit StagingBuffer(size_t pages)
      : data(static_cast<char*>(std::aligned_alloc(4096, pages * kPageBytes))) {}
  ~StagingBuffer() { std::free(data); }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  char* data;
};

// The most pages one batched write-back copies and writes (512 KiB of staging); a small pool
// allows fewer (BufferPool::BatchPages).
constexpr size_t kWriteBatchPages = 64;

// The frame descriptors, constructed in memory of their own (PoolMemory without prefault: the
// construction touches it all). Null if the memory cannot be had (Create reports it).
Frame* NewFrames(PoolMemory* memory, size_t count) {
  if (memory == nullptr) return nullptr;
  auto* frames = reinterpret_cast<Frame*>(memory->data());
  for (size_t i = 0; i < count; ++i) new (&frames[i]) Frame();
  return frames;
}

size_t PartitionCountFor(size_t frames) {
  size_t want = std::clamp<size_t>(frames / 16, 16, 4096);
  size_t count = 16;
  while (count < want) count <<= 1;
  return count;
}

}  // namespace

// ---- PageHandle ------------------------------------------------------------------------

void PageHandle::MarkDirty() {
  SM_DASSERT(frame_->latch.HeldExclusive());
  SM_DASSERT(mode_ == LatchMode::kExclusive);
  if (!frame_->dirty.load(std::memory_order_relaxed)) {
    MarkDirty(pool_->rec_lsn_source_ ? pool_->rec_lsn_source_() : PageLsn(frame_->data));
  } else {
    pool_->NoteChange(frame_);
  }
}

void PageHandle::MarkDirty(Lsn rec_lsn) {
  SM_DASSERT(frame_->latch.HeldExclusive());
  SM_DASSERT(mode_ == LatchMode::kExclusive);
  pool_->NoteChange(frame_);
  // Only the exclusive holder sets `dirty`, and write-back clears it only under a shared latch,
  // so load-then-store is race-free here.
  if (!frame_->dirty.load(std::memory_order_relaxed)) {
    frame_->rec_lsn.store(rec_lsn, std::memory_order_relaxed);
    frame_->dirty.store(true, std::memory_order_release);
    pool_->dirty_count_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool PageHandle::NeedsFullImage(uint32_t* epoch) const {
  SM_DASSERT(mode_ == LatchMode::kExclusive);
  *epoch = pool_->fpi_epoch_.load(std::memory_order_seq_cst);
  return frame_->fpi_epoch != *epoch;
}

void PageHandle::FullImageLogged(uint32_t epoch) const {
  SM_DASSERT(mode_ == LatchMode::kExclusive);
  frame_->fpi_epoch = epoch;
}

bool PageHandle::TryUpgrade() {
  if (mode_ == LatchMode::kExclusive) return true;
  if (!frame_->latch.TryUpgrade()) return false;
  mode_ = LatchMode::kExclusive;
  return true;
}

// ---- construction ------------------------------------------------------------------------

Status BufferPool::Create(space::Volume* volume, const BufferPoolOptions& options,
                          std::unique_ptr<BufferPool>* pool) {
  size_t frames = options.pool_bytes / kPageBytes;
  if (frames < kMinFrames) {
    return Status::InvalidArgument("buffer pool of " + std::to_string(options.pool_bytes) +
                                   " bytes holds fewer than " + std::to_string(kMinFrames) +
                                   " pages of 8 KiB");
  }
  if (volume == nullptr) return Status::InvalidArgument("buffer pool needs a volume");
  pool->reset(new BufferPool(volume, options, frames));
  if ((*pool)->pages_ == nullptr || (*pool)->frames_ == nullptr) {
    pool->reset();
    return Status::NoSpace("cannot allocate the buffer pool's memory");
  }
  return Status::OK();
}

BufferPool::BufferPool(space::Volume* volume, const BufferPoolOptions& options, size_t frames)
    : volume_(volume),
      options_(options),
      memory_(PoolMemory::Allocate(frames * kPageBytes, options.prefault_ahead_bytes)),
      pages_(memory_ != nullptr ? memory_->data() : nullptr),
      frame_memory_(PoolMemory::Allocate(frames * sizeof(Frame), 0)),
      frames_(NewFrames(frame_memory_.get(), frames), FrameArrayDeleter{frames}),
      frame_count_(frames),
      partitions_(new Partition[PartitionCountFor(frames)]),
      partition_mask_(PartitionCountFor(frames) - 1),
      hinted_hits_(new HitShard[kHitShards]) {
  if (pages_ == nullptr || frames_ == nullptr) return;
  free_frames_.reserve(frames);
  for (size_t i = frames; i-- > 0;) {
    frames_[i].data = pages_ + i * kPageBytes;
    free_frames_.push_back(&frames_[i]);
  }
}

BufferPool::~BufferPool() {
  StopWriter();
  // Every handle is gone by now (a handle outliving its pool would unlatch freed memory).
  SM_PARANOID(CheckInvariants());
}

void BufferPool::FrameArrayDeleter::operator()(Frame* frames) const {
  if (frames == nullptr) return;
  for (size_t i = 0; i < count; ++i) frames[i].~Frame();
}

BufferPool::Partition& BufferPool::PartitionOf(PageId id) const {
  // Fibonacci hashing spreads consecutive page ids over partitions.
  uint64_t h = id.value() * 0x9E3779B97F4A7C15ull;
  return partitions_[(h >> 32) & partition_mask_];
}

void BufferPool::SetWalFlush(WalFlush flush) {
  std::lock_guard<threads::Mutex> guard(wal_mu_);
  wal_flush_ = std::move(flush);
}

// ---- fixing ------------------------------------------------------------------------------

Status BufferPool::FixForRedo(PageId id, bool may_be_new, PageHandle* handle, bool* torn) {
  if (torn != nullptr) *torn = false;
  return FixImpl(id, LatchMode::kExclusive, LoadKind{may_be_new, torn}, handle);
}

// prfchw: __builtin_prefetch(p, 1) becomes PREFETCHW (see LogManager::PrefetchNextRecord).
__attribute__((target("prfchw"))) void BufferPool::PrefetchForFix(FrameHint hint,
                                                                  size_t page_lines) const {
  // The frame's line for writing: the fix's latch is a read-modify-write of it, and a line
  // another core has read (the background writer looks at frames) would otherwise come back
  // shared and need a second round trip to be owned.
  __builtin_prefetch(hint, 1);
  const char* data = pages_ + static_cast<size_t>(hint - frames_.get()) * kPageBytes;
  for (size_t line = 0; line < page_lines && line < kPageBytes / 64; ++line) {
    __builtin_prefetch(data + line * 64);
  }
}

FrameHint BufferPool::FrameOf(PageId id) const {
  if (!id.valid()) return nullptr;
  return PartitionOf(id).map.FindUnlocked(id.value());
}

Status BufferPool::FixImpl(PageId id, LatchMode mode, LoadKind kind, PageHandle* handle) {
  handle->Release();
  if (!id.valid()) return Status::InvalidArgument("page id 0 is the volume header");
  Partition& part = PartitionOf(id);
  // The usual hit takes no lock (invariant 2): latch the frame the table seems to map, then
  // check that it holds the page, loaded. Anything else goes the locked way.
  if (Frame* seen = part.map.FindUnlocked(id.value());
      seen != nullptr && TryFixUnlocked(seen, id, mode, handle)) [[likely]] {
    part.CountHit();
    return Status::OK();
  }
  Frame* frame = nullptr;
  {
    std::lock_guard<threads::SpinLock> guard(part.lock);
    frame = part.map.Find(id.value());
    if (frame != nullptr) {
      part.CountHit();
      // Resident with its latch free (the unlocked try met a move in the table or a latch
      // that was just released): the latch alone keeps the frame.
      if (frame->state.load(std::memory_order_acquire) == FrameState::kResident &&
          TryLatch(frame, mode)) {
        HandOver(frame, mode, /*pinned=*/false, handle);
        return Status::OK();
      }
      // relaxed: ordered against eviction by the partition lock (invariant 2).
      frame->pin_count.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (frame != nullptr) {
    // A resident page whose latch is taken (pinned above, now waiting for the latch) needs
    // neither FixExisting's wait for a load nor its failed-load check.
    if (frame->state.load(std::memory_order_acquire) != FrameState::kResident) [[unlikely]] {
      return FixExisting(frame, mode, handle);
    }
    LatchPinned(frame, mode, handle, /*waited=*/true);
    return Status::OK();
  }

  misses_.fetch_add(1, std::memory_order_relaxed);
  Frame* fresh = nullptr;
  SM_TRY(ClaimFrame(&fresh));
  {
    std::unique_lock<threads::SpinLock> guard(part.lock);
    frame = part.map.Find(id.value());
    if (frame != nullptr) {  // another fiber started loading it meanwhile
      frame->pin_count.fetch_add(1, std::memory_order_relaxed);
      guard.unlock();
      ReturnToFreeList(fresh);
      return FixExisting(frame, mode, handle);
    }
    fresh->page_id.store(id, std::memory_order_relaxed);
    fresh->loaded.Reset();
    fresh->pin_count.store(1, std::memory_order_relaxed);
    fresh->state.store(FrameState::kLoading, std::memory_order_relaxed);
    part.map.Insert(id.value(), fresh);
  }
  Status s = Load(fresh, id, kind);
  if (!s.ok()) {
    Unpin(fresh);
    return s;
  }
  return FixExisting(fresh, mode, handle);
}

Status BufferPool::FixExisting(Frame* frame, LatchMode mode, PageHandle* handle) {
  if (frame->state.load(std::memory_order_acquire) == FrameState::kLoading) {
    frame->loaded.Wait();
  }
  if (frame->state.load(std::memory_order_acquire) == FrameState::kFailed) {
    Status s = frame->load_status;
    Unpin(frame);
    return s;
  }
  LatchPinned(frame, mode, handle);
  return Status::OK();
}

void BufferPool::LatchPinned(Frame* frame, LatchMode mode, PageHandle* handle, bool waited) {
  frame->latch.Acquire(mode);
  HandOver(frame, mode, /*pinned=*/true, handle, waited);
}

bool BufferPool::TryLatch(Frame* frame, LatchMode mode) {
  return mode == LatchMode::kShared ? frame->latch.TryAcquireShared()
                                    : frame->latch.TryAcquireExclusive();
}

void BufferPool::HandOver(Frame* frame, LatchMode mode, bool pinned, PageHandle* handle,
                          bool waited) {
  SM_PARANOID(CheckHandedOver(frame, mode));
  SM_DASSERT(!pinned || frame->pin_count.load(std::memory_order_relaxed) > 0);
  frame->referenced.store(true, std::memory_order_relaxed);
  handle->frame_ = frame;
  handle->pool_ = this;
  handle->mode_ = mode;
  handle->fix_flags_ = static_cast<uint8_t>((pinned ? PageHandle::kPinned : 0) |
                                            (waited ? PageHandle::kLatchWaited : 0));
}

bool BufferPool::InUse(const Frame& frame) {
  // acquire: pairs with the last Unpin's or unlatch's release, so the last user's accesses to
  // the page happen before the frame is reused.
  return frame.pin_count.load(std::memory_order_acquire) != 0 || !frame.latch.IsFree();
}

// The page owner's in-memory words (owner_hint, contention, child_hints) described the
// frame's previous page: a frame that gets a page, loaded or new, starts without them. Nobody
// else holds the frame then (it is kLoading, or latched before it is mapped), so nobody reads
// the hints being freed.
void BufferPool::ForgetOwnerWords(Frame* frame) {
  frame->owner_hint = 0;
  frame->contention = FrameContention{};
  delete frame->child_hints.exchange(nullptr, std::memory_order_relaxed);
}

namespace {

ChildHints* EnsureChildHints(Frame* frame) {
  ChildHints* hints = frame->child_hints.load(std::memory_order_acquire);
  if (hints == nullptr) {
    auto fresh = std::make_unique<ChildHints>();
    // acq_rel: a reader that loads the array sees it zeroed; a loser uses the winner's.
    if (frame->child_hints.compare_exchange_strong(hints, fresh.get(), std::memory_order_acq_rel)) {
      hints = fresh.release();
    }
  }
  return hints;
}

}  // namespace

void PageHandle::RememberChild(size_t index, FrameHint hint) const {
  if (index >= ChildHints::kSlots) return;
  EnsureChildHints(frame_)->frames[index].store(hint, std::memory_order_relaxed);
}

// The three below run under the exclusive latch, so no reader or RememberChild is concurrent;
// the slots are atomics for the shared-latch races of the other two.
void PageHandle::InsertChildHint(size_t index, FrameHint hint, size_t children) const {
  SM_DASSERT(mode_ == threads::LatchMode::kExclusive);
  SM_DASSERT(index < children);
  if (index >= ChildHints::kSlots) return;
  std::atomic<FrameHint>* slots = EnsureChildHints(frame_)->frames;
  for (size_t j = std::min(children, ChildHints::kSlots) - 1; j > index; --j) {
    slots[j].store(slots[j - 1].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  slots[index].store(hint, std::memory_order_relaxed);
}

void PageHandle::EraseChildHint(size_t index, size_t children) const {
  SM_DASSERT(mode_ == threads::LatchMode::kExclusive);
  ChildHints* hints = frame_->child_hints.load(std::memory_order_relaxed);
  if (hints == nullptr || index >= ChildHints::kSlots) return;
  const size_t end = std::min(children, ChildHints::kSlots - 1);
  for (size_t j = index; j < end; ++j) {
    hints->frames[j].store(hints->frames[j + 1].load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  }
  hints->frames[end].store(nullptr, std::memory_order_relaxed);
}

void PageHandle::MoveChildHints(size_t first, size_t count, const PageHandle& to) const {
  SM_DASSERT(mode_ == threads::LatchMode::kExclusive);
  SM_DASSERT(to.mode_ == threads::LatchMode::kExclusive);
  const ChildHints* from = frame_->child_hints.load(std::memory_order_relaxed);
  if (from == nullptr || first >= ChildHints::kSlots) return;
  std::atomic<FrameHint>* slots = EnsureChildHints(to.frame_)->frames;
  for (size_t k = 0; k < count && first + k < ChildHints::kSlots; ++k) {
    slots[k].store(from->frames[first + k].load(std::memory_order_relaxed),
                   std::memory_order_relaxed);
  }
}

Status BufferPool::Load(Frame* frame, PageId id, LoadKind kind) {
  // The loader holds the kLoading frame's pin (invariant 5: the other fixers wait on it).
  SM_DASSERT(frame->state.load(std::memory_order_relaxed) == FrameState::kLoading);
  SM_DASSERT(frame->pin_count.load(std::memory_order_relaxed) > 0);
  reads_.fetch_add(1, std::memory_order_relaxed);
  Status s = volume_->ReadPage(id, frame->data);
  frame->fpi_epoch = 0;
  ForgetOwnerWords(frame);
  if (!s.ok() && s.IsCorruption() && kind.may_be_new && IsZeroPage(frame->data)) {
    // A page allocated before the crash whose first write never reached the disk: the
    // record being redone formats it (invariant: page LSN 0 makes every record apply).
    s.PermitUnchecked();
    InitPage(frame->data, id, PageType::kFree);
    s = Status::OK();
  } else if (!s.ok() && s.IsCorruption() && kind.torn != nullptr) {
    // Torn (or otherwise damaged): redo rebuilds it from the full image the log holds after
    // the last checkpoint, or reports it (TxnManager::EndRedo).
    s.PermitUnchecked();
    InitPage(frame->data, id, PageType::kFree);
    *kind.torn = true;
    s = Status::OK();
  }
  if (s.ok()) {
    // A page whose bytes name another page never becomes resident (VerifyPage, InitPage).
    SM_DASSERT(PageIdOf(frame->data) == id);
    frame->dirty.store(false, std::memory_order_relaxed);
    frame->state.store(FrameState::kResident, std::memory_order_release);
    frame->loaded.Set();
    SM_PARANOID(CheckPartition(PartitionOf(id)));
    return s;
  }
  read_failures_.fetch_add(1, std::memory_order_relaxed);
  {
    Partition& part = PartitionOf(id);
    std::lock_guard<threads::SpinLock> guard(part.lock);
    part.map.Erase(id.value());
    frame->load_status.PermitUnchecked();
    frame->load_status = s;
    frame->state.store(FrameState::kFailed, std::memory_order_release);
    SM_PARANOID(CheckPartitionLocked(part));
  }
  frame->loaded.Set();
  return s;
}

void BufferPool::FreeFailedFrame(Frame* frame) {
  frame->load_status.PermitUnchecked();  // every waiter got its own copy
  frame->load_status = Status::OK();
  ReturnToFreeList(frame);
}

void BufferPool::ReturnToFreeList(Frame* frame) {
  SM_DASSERT(!frame->dirty.load(std::memory_order_relaxed));
  SM_DASSERT(frame->pin_count.load(std::memory_order_relaxed) == 0);
  frame->state.store(FrameState::kFree, std::memory_order_relaxed);
  frame->page_id.store(PageId::Invalid(), std::memory_order_relaxed);
  std::lock_guard<threads::SpinLock> guard(free_lock_);
  free_frames_.push_back(frame);
}

Status BufferPool::FixNew(PageType type, PageHandle* handle) {
  handle->Release();
  PageId id;
  SM_TRY(volume_->AllocatePage(&id));
  Frame* frame = nullptr;
  Status s = ClaimFrame(&frame);
  if (!s.ok()) {
    volume_->FreePage(id).PermitUnchecked();  // best effort: the page was never used
    return s;
  }
  // Latched before it is mapped: no fix (an unlocked one either) sees the page unformatted.
  // An unlocked fix may hold the free frame's latch for a moment, until it finds no page.
  frame->latch.AcquireExclusive();
  Partition& part = PartitionOf(id);
  {
    std::lock_guard<threads::SpinLock> guard(part.lock);
    if (part.map.Find(id.value()) != nullptr) {
      // A freed page must have left the pool (FreePage); finding it means the volume
      // handed out a page that is still in use.
      SM_ASSERT(!"allocated page is still cached");
    }
    frame->page_id.store(id, std::memory_order_relaxed);
    frame->pin_count.store(1, std::memory_order_relaxed);
    frame->state.store(FrameState::kResident, std::memory_order_release);
    part.map.Insert(id.value(), frame);
  }
  InitPage(frame->data, id, type);
  ForgetOwnerWords(frame);
  HandOver(frame, LatchMode::kExclusive, /*pinned=*/true, handle);
  handle->MarkDirty();
  return Status::OK();
}

Status BufferPool::FreePage(PageId id) {
  SM_TRY(Forget(id));
  return volume_->FreePage(id);
}

Status BufferPool::RedoFreePage(PageId id) {
  SM_TRY(Forget(id));
  return volume_->RedoFree(id);
}

Status BufferPool::Forget(PageId id) {
  Partition& part = PartitionOf(id);
  Frame* frame = nullptr;
  {
    std::lock_guard<threads::SpinLock> guard(part.lock);
    frame = part.map.Find(id.value());
    if (frame != nullptr) {
      // As in TryEvict: not pinned, and latched through the unmapping (invariant 2).
      if (frame->pin_count.load(std::memory_order_acquire) != 0 ||
          !frame->latch.TryAcquireExclusive()) {
        return Status::Busy("page " + std::to_string(id.value()) + " is fixed and cannot be freed");
      }
      part.map.Erase(id.value());
      SM_PARANOID(CheckPartitionLocked(part));
    }
  }
  if (frame != nullptr) {
    if (frame->dirty.exchange(false, std::memory_order_relaxed)) {
      dirty_count_.fetch_sub(1, std::memory_order_relaxed);
    }
    frame->state.store(FrameState::kFree, std::memory_order_relaxed);
    frame->page_id.store(PageId::Invalid(), std::memory_order_relaxed);
    frame->latch.ReleaseExclusive();
    ReturnToFreeList(frame);
  }
  return Status::OK();
}

// ---- eviction and write-back ---------------------------------------------------------------

Status BufferPool::ClaimFrame(Frame** out) {
  Frame* free_frame = nullptr;
  {
    std::lock_guard<threads::SpinLock> guard(free_lock_);
    if (!free_frames_.empty()) {
      free_frame = free_frames_.back();
      free_frames_.pop_back();
    }
  }
  if (free_frame != nullptr) {
    // The free list hands never-used frames out in index order (the constructor's), so the
    // memory up to this frame is the memory in use.
    memory_->NoteFrontier(static_cast<size_t>(free_frame - frames_.get() + 1) * kPageBytes);
    *out = free_frame;
    return Status::OK();
  }
  // Clock with second chance. The first two sweeps take only clean frames (and wake the
  // writer); after that a dirty victim is written back by this fiber.
  const size_t n = frame_count_;
  for (size_t step = 0; step < 4 * n; ++step) {
    Frame* f = &frames_[clock_hand_.fetch_add(1, std::memory_order_relaxed) % n];
    if (f->state.load(std::memory_order_acquire) != FrameState::kResident) continue;
    if (InUse(*f)) continue;
    if (f->referenced.exchange(false, std::memory_order_relaxed)) continue;
    if (f->dirty.load(std::memory_order_acquire)) {
      if (step < 2 * n) {
        eviction_waiting_.store(true, std::memory_order_relaxed);
        writer_wake_.Set();
        continue;
      }
      SM_TRY(WriteBackUnpinned(f));
    }
    if (TryEvict(f)) {
      *out = f;
      return Status::OK();
    }
  }
  return Status::Busy("buffer pool: every frame is fixed or being loaded");
}

bool BufferPool::TryEvict(Frame* f) {
  PageId id = f->page_id.load(std::memory_order_relaxed);
  if (!id.valid()) return false;
  Partition& part = PartitionOf(id);
  std::lock_guard<threads::SpinLock> guard(part.lock);
  if (part.map.Find(id.value()) != f) return false;  // remapped meanwhile
  // acquire: pairs with the last Unpin's release, so the last user's accesses to the page
  // happen before the frame is reused.
  if (f->pin_count.load(std::memory_order_acquire) != 0) return false;
  // Held through the unmapping (invariant 2): an unlocked fix that latches the frame later
  // finds it holding no page.
  if (!f->latch.TryAcquireExclusive()) return false;
  bool evict = !f->dirty.load(std::memory_order_acquire) &&
               f->state.load(std::memory_order_relaxed) == FrameState::kResident;
  if (evict) {
    // Invariant 2: nobody pins or latches it (checked above), and only a clean page leaves.
    SM_DASSERT(!f->writing_rec_lsn.load(std::memory_order_relaxed).valid());
    part.map.Erase(id.value());
    f->state.store(FrameState::kFree, std::memory_order_relaxed);
    f->page_id.store(PageId::Invalid(), std::memory_order_relaxed);
    evictions_.fetch_add(1, std::memory_order_relaxed);
    SM_PARANOID(CheckPartitionLocked(part));
  }
  f->latch.ReleaseExclusive();
  return evict;
}

bool BufferPool::PinIfResident(Frame* f) {
  PageId id = f->page_id.load(std::memory_order_relaxed);
  if (!id.valid()) return false;
  Partition& part = PartitionOf(id);
  std::lock_guard<threads::SpinLock> guard(part.lock);
  if (part.map.Find(id.value()) != f) return false;
  if (f->state.load(std::memory_order_relaxed) != FrameState::kResident) return false;
  f->pin_count.fetch_add(1, std::memory_order_relaxed);
  return true;
}

Status BufferPool::WriteBackUnpinned(Frame* f) {
  if (!PinIfResident(f)) return Status::OK();  // evicted or remapped: nothing to write
  Status s = WriteBack(f);
  Unpin(f);
  return s;
}

// The caller holds a pin on f (so it stays mapped to the same page).
Status BufferPool::WriteBack(Frame* f) {
  StagingBuffer staging(1);
  if (staging.data == nullptr) return Status::NoSpace("no memory for a write-back buffer");
  // Invariant 7: a write-back that started earlier finishes before this one copies the page.
  // Without this, a slow write of an older copy (the background writer's) could complete after
  // a checkpoint's write of the newer copy and leave the file stale behind a clean frame.
  std::lock_guard<threads::Mutex> one_writer(f->write_mu);
  Lsn old_rec_lsn;
  if (CopyForWrite(f, staging.data, /*wait=*/true, &old_rec_lsn) == CopyResult::kClean) {
    return Status::OK();
  }
  Status s = FlushWal(PageLsn(staging.data));
  if (s.ok()) {
    SM_ASSERT(WalRuleHolds(staging.data));  // invariant 4, just before the write
    s = volume_->WritePage(f->page_id.load(std::memory_order_relaxed), staging.data);
  }
  EndWrite(f, old_rec_lsn, s);
  return s;
}

// Caller: holds f->write_mu and a pin on f.
BufferPool::CopyResult BufferPool::CopyForWrite(Frame* f, char* staging, bool wait,
                                                Lsn* old_rec_lsn) {
  if (wait) {
    f->latch.AcquireShared();
  } else if (!f->latch.TryAcquireShared()) {
    return CopyResult::kBusy;
  }
  if (!f->dirty.load(std::memory_order_acquire)) {
    f->latch.ReleaseShared();
    return CopyResult::kClean;
  }
  // The caller's pin keeps the dirty page resident (invariant 2); only one write-back copies
  // it at a time (invariant 7: the previous one has cleared writing_rec_lsn).
  SM_DASSERT(f->pin_count.load(std::memory_order_relaxed) > 0);
  SM_DASSERT(f->state.load(std::memory_order_relaxed) == FrameState::kResident);
  SM_DASSERT(!f->writing_rec_lsn.load(std::memory_order_relaxed).valid());
  std::memcpy(staging, f->data, kPageBytes);
  *old_rec_lsn = f->rec_lsn.load(std::memory_order_relaxed);
  f->writing_rec_lsn.store(*old_rec_lsn, std::memory_order_release);
  f->dirty.store(false, std::memory_order_release);  // a later change re-dirties it
  dirty_count_.fetch_sub(1, std::memory_order_relaxed);
  f->latch.ReleaseShared();
  return CopyResult::kCopied;
}

Status BufferPool::FlushWal(Lsn page_lsn) {
  WalFlush flush;
  {
    std::lock_guard<threads::Mutex> guard(wal_mu_);
    flush = wal_flush_;
  }
  return flush ? flush(page_lsn) : Status::OK();
}

void BufferPool::EndWrite(Frame* f, Lsn old_rec_lsn, const Status& written) {
  SM_DASSERT(f->writing_rec_lsn.load(std::memory_order_relaxed) == old_rec_lsn);
  if (written.ok()) {
    f->writing_rec_lsn.store(Lsn::Invalid(), std::memory_order_release);
    writes_.fetch_add(1, std::memory_order_relaxed);
    SM_PARANOID(CheckPinned(f));
    return;
  }
  // Invariant 6: the page is not on disk, so it must stay dirty with its older rec_lsn. It is
  // dirty again before writing_rec_lsn is cleared: in between, DirtyPages would see the page
  // neither dirty nor being written, and a checkpoint (whose FlushAll had just waited for this
  // write) would record it as clean although its changes from before the checkpoint are not
  // on disk.
  write_failures_.fetch_add(1, std::memory_order_relaxed);
  f->latch.AcquireExclusive();
  if (f->dirty.load(std::memory_order_relaxed)) {  // changed again meanwhile: keep the older
    Lsn newer = f->rec_lsn.load(std::memory_order_relaxed);
    f->rec_lsn.store(std::min(newer, old_rec_lsn), std::memory_order_relaxed);
  } else {
    f->rec_lsn.store(old_rec_lsn, std::memory_order_relaxed);
    f->dirty.store(true, std::memory_order_release);
    dirty_count_.fetch_add(1, std::memory_order_relaxed);
  }
  f->writing_rec_lsn.store(Lsn::Invalid(), std::memory_order_release);
  f->latch.ReleaseExclusive();
  SM_PARANOID(CheckPinned(f));
}

// Batched write-back ("Write-back in batches" in buffer_pool.h). It never waits while it holds
// a frame's write_mu: a frame whose write_mu or latch is taken is left to the caller
// (*skipped), so a fixer that holds a latch and waits for a write_mu (an eviction's
// write-back) cannot close a cycle with it. Frames: pinned, in ascending page-id order.
Status BufferPool::WriteBackBatch(const std::vector<Frame*>& frames, std::vector<Frame*>* skipped) {
  SM_ASSERT(frames.size() <= kWriteBatchPages);
  StagingBuffer staging(frames.size());
  if (staging.data == nullptr) return Status::NoSpace("no memory for a write-back buffer");
  struct Copied {
    Frame* frame;
    PageId id;
    Lsn old_rec_lsn;
  };
  std::vector<Copied> copied;
  copied.reserve(frames.size());
  Lsn newest;  // the WAL rule for the whole batch at once
  for (Frame* f : frames) {
    if (!f->write_mu.try_lock()) {
      skipped->push_back(f);
      continue;
    }
    char* slot = staging.data + copied.size() * kPageBytes;
    Lsn old_rec_lsn;
    CopyResult copy = CopyForWrite(f, slot, /*wait=*/false, &old_rec_lsn);
    if (copy != CopyResult::kCopied) {
      f->write_mu.unlock();
      if (copy == CopyResult::kBusy) skipped->push_back(f);
      continue;
    }
    copied.push_back({f, f->page_id.load(std::memory_order_relaxed), old_rec_lsn});
    newest = std::max(newest, PageLsn(slot));
  }
  if (copied.empty()) return Status::OK();
  Status wal = FlushWal(newest);
  Status first = Status::OK();
  // Runs of consecutive page ids, each one write; their copies lie next to each other.
  for (size_t begin = 0; begin < copied.size();) {
    size_t end = begin + 1;
    while (end < copied.size() && copied[end].id.value() == copied[end - 1].id.value() + 1) {
      ++end;
    }
    for (size_t i = begin; wal.ok() && i < end; ++i) {
      SM_ASSERT(WalRuleHolds(staging.data + i * kPageBytes));  // invariant 4, before the write
    }
    Status s = wal.ok() ? volume_->WritePages(copied[begin].id, end - begin,
                                              staging.data + begin * kPageBytes)
                        : wal;
    for (size_t i = begin; i < end; ++i) {
      EndWrite(copied[i].frame, copied[i].old_rec_lsn, s);
      copied[i].frame->write_mu.unlock();
    }
    if (!s.ok() && first.ok()) first = s;
    s.PermitUnchecked();
    begin = end;
  }
  wal.PermitUnchecked();
  return first;
}

// A batch pins its pages from before its log flush until its writes return, and a fixer that
// needs a frame can take none of them (ClaimFrame answers Busy once every frame is in use). A
// batch as large as the pool would make rollbacks fail that way; a quarter of the frames
// leaves the rest to the fixers.
size_t BufferPool::BatchPages() const {
  return std::clamp<size_t>(frame_count_ / 4, 1, kWriteBatchPages);
}

// Pins the frames among `frames` still holding a page, writes them in page-id order in batches
// and unpins them; frames a batch had to skip are written one by one afterwards if
// `wait_for_busy`, else left for later. Returns the pages written and *first the first error.
size_t BufferPool::WriteBackFrames(std::vector<Frame*> frames, bool wait_for_busy, Status* first) {
  std::vector<std::pair<PageId, Frame*>> order;
  order.reserve(frames.size());
  for (Frame* f : frames) order.emplace_back(f->page_id.load(std::memory_order_relaxed), f);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first.value() < b.first.value(); });
  const uint64_t writes_before = writes_.load(std::memory_order_relaxed);
  std::vector<Frame*> batch, skipped;
  auto note = [first](Status s) {
    if (!s.ok() && first->ok()) *first = s;
    s.PermitUnchecked();
  };
  const size_t batch_pages = BatchPages();
  for (size_t next = 0; next < order.size();) {
    batch.clear();
    for (; next < order.size() && batch.size() < batch_pages; ++next) {
      if (PinIfResident(order[next].second)) batch.push_back(order[next].second);
    }
    note(WriteBackBatch(batch, &skipped));
    for (Frame* f : batch) Unpin(f);
  }
  if (wait_for_busy) {
    for (Frame* f : skipped) note(WriteBackUnpinned(f));
  }
  return writes_.load(std::memory_order_relaxed) - writes_before;
}

// A paced flush (a timed checkpoint, PostgreSQL's checkpoint_completion_target): written in
// slices of a batch, each slice no earlier than its share of the spread. Written at once, a
// checkpoint of a large dirty set takes the CPU and the device from the workers until it is
// done (bench_btree's updates_per_s_1w with --checkpoint-spread 0 against the default, and
// against --checkpoint-interval-ms 0).
Status BufferPool::FlushAll(const FlushPace& pace) {
  std::vector<Frame*> dirty;
  for (size_t i = 0; i < frame_count_; ++i) {
    if (frames_[i].dirty.load(std::memory_order_acquire)) dirty.push_back(&frames_[i]);
  }
  Status first = Status::OK();
  if (pace.spread.count() > 0 && !dirty.empty()) {
    // Page-id order over the whole set, as WriteBackFrames would write it.
    std::sort(dirty.begin(), dirty.end(), [](const Frame* a, const Frame* b) {
      return a->page_id.load(std::memory_order_relaxed).value() <
             b->page_id.load(std::memory_order_relaxed).value();
    });
    const auto start = std::chrono::steady_clock::now();
    const size_t slice = BatchPages();
    for (size_t done = 0; done < dirty.size();) {
      const size_t end = std::min(dirty.size(), done + slice);
      WriteBackFrames(std::vector<Frame*>(dirty.begin() + done, dirty.begin() + end),
                      /*wait_for_busy=*/true, &first);
      done = end;
      const auto due = start + pace.spread * done / dirty.size();
      while (std::chrono::steady_clock::now() < due && !(pace.hurry && pace.hurry())) {
        threads::SleepFor(std::min<std::chrono::steady_clock::duration>(
            due - std::chrono::steady_clock::now(), std::chrono::milliseconds(20)));
      }
    }
  } else {
    WriteBackFrames(std::move(dirty), /*wait_for_busy=*/true, &first);
  }
  // A write-back another fiber or the writer started (the page already marked clean) must
  // reach the file before we return: a checkpoint's volume sync must cover it.
  for (size_t i = 0; i < frame_count_; ++i) {
    while (frames_[i].writing_rec_lsn.load(std::memory_order_acquire).valid()) {
      threads::SleepFor(std::chrono::microseconds(50));
    }
  }
  SM_PARANOID(CheckMapping());
  return first;
}

// Epochs are a quarter of the quiet time: a page counts as quiet after four to five of them.
constexpr uint8_t kQuietEpochs = 4;

void BufferPool::TickChangeEpoch() {
  const auto now = std::chrono::steady_clock::now();
  const auto epoch =
      std::chrono::milliseconds(std::max<uint32_t>(options_.writer_quiet_ms / kQuietEpochs, 1));
  if (now - change_epoch_start_ < epoch) return;
  change_epoch_start_ = now;
  change_epoch_.store(change_epoch_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

bool BufferPool::Quiet(const Frame& frame) const {
  const auto age = static_cast<uint8_t>(change_epoch_.load(std::memory_order_relaxed) -
                                        frame.changed_epoch.load(std::memory_order_relaxed));
  return age >= kQuietEpochs;
}

size_t BufferPool::WriteDirtyRound(size_t max_pages, Lsn rec_lsn_limit, bool only_quiet) {
  std::vector<Frame*> due;
  // Only the frames handed out so far can be dirty (the free list gives never-used frames out
  // in index order): a 1 GiB pool holding TPC-C's 90 MB no longer has 131,072 descriptors read
  // every round. A round that stops at max_pages leaves the rest to the next one, which starts
  // there: one that always started at frame 0 took the lowest frames' pages first.
  const size_t used = std::min(frame_count_, memory_->frontier_bytes() / kPageBytes);
  size_t step = 0;
  for (; step < used && due.size() < max_pages; ++step) {
    Frame* f = &frames_[(writer_scan_next_ + step) % used];
    if (!f->dirty.load(std::memory_order_acquire)) continue;
    if (InUse(*f)) continue;                                                    // in use: later
    if (f->rec_lsn.load(std::memory_order_relaxed) >= rec_lsn_limit) continue;  // young: later
    if (only_quiet && !Quiet(*f)) continue;  // still changing: the checkpoint writes it
    due.push_back(f);
  }
  if (used > 0) writer_scan_next_ = (writer_scan_next_ + step) % used;
  // A failure leaves the page dirty (invariant 6): the writer retries next round and the fixer
  // that needs the frame gets the error.
  Status ignored = Status::OK();
  size_t written = WriteBackFrames(std::move(due), /*wait_for_busy=*/false, &ignored);
  ignored.PermitUnchecked();
  return written;
}

// ---- background writer -------------------------------------------------------------------

// A round writes the dirty pages whose rec_lsn is below the limit returned here. Writing every
// dirty page every round rewrote the hot pages (a TPC-C warehouse's stock and customers) each
// interval, once per handful of changes, and a checkpoint writes every dirty page anyway. A page
// is worth writing early only when a frame is needed (an eviction sweep met dirty frames, or
// fewer than an eighth of the frames are clean), or once its oldest unwritten change lags the
// log's end by writer_log_lag_bytes, which spreads over time the writes a checkpoint would
// otherwise do in one burst.
Lsn BufferPool::WriterRoundLimit() {
  const uint64_t lag = options_.writer_log_lag_bytes;
  const auto clean_min = static_cast<int64_t>(frame_count_ / 8);
  const bool frames_short =
      dirty_count_.load(std::memory_order_relaxed) > static_cast<int64_t>(frame_count_) - clean_min;
  if (eviction_waiting_.exchange(false, std::memory_order_relaxed) || frames_short || lag == 0 ||
      !rec_lsn_source_) {
    return Lsn(UINT64_MAX);
  }
  const uint64_t end = rec_lsn_source_().value();
  return Lsn(end > lag ? end - lag : 0);
}

void BufferPool::WriterLoop() {
  while (!writer_stop_.load(std::memory_order_acquire)) {
    if (options_.writer_interval_ms == 0) {
      writer_wake_.Wait();
    } else {
      writer_wake_.WaitUntil(threads::Baton::Clock::now() +
                             std::chrono::milliseconds(options_.writer_interval_ms));
    }
    writer_wake_.Reset();
    if (writer_stop_.load(std::memory_order_acquire)) break;
    TickChangeEpoch();
    const Lsn rec_lsn_limit = WriterRoundLimit();
    // Writes for a frame (no limit) or for every dirty page (lag 0) take busy pages too.
    const bool only_quiet = options_.writer_quiet_ms != 0 && rec_lsn_limit != Lsn(UINT64_MAX);
    // Early writes are never urgent: one batch a round, so that when a phase of changes ends
    // and its pages all go quiet together, their writes trickle out beside the next phase
    // instead of an eighth of the pool at once.
    const size_t limit = only_quiet ? BatchPages() : std::max<size_t>(frame_count_ / 8, 1);
    WriteDirtyRound(limit, rec_lsn_limit, only_quiet);
  }
  writer_done_.Set();
}

void BufferPool::StartWriter(threads::Runtime* runtime) {
  SM_ASSERT(!writer_running_);
  writer_running_ = true;
  writer_stop_.store(false, std::memory_order_release);
  writer_done_.Reset();
  if (runtime != nullptr &&
      runtime->Spawn([this] { WriterLoop(); }, 0, "buffer-writer") != nullptr) {
    return;
  }
  writer_thread_ = std::thread([this] { WriterLoop(); });
}

void BufferPool::StopWriter() {
  if (!writer_running_) return;
  writer_stop_.store(true, std::memory_order_release);
  writer_wake_.Set();
  writer_done_.Wait();
  if (writer_thread_.joinable()) writer_thread_.join();
  writer_running_ = false;
}

// ---- introspection -------------------------------------------------------------------------

BufferPoolStats BufferPool::stats() const {
  BufferPoolStats st;
  for (size_t p = 0; p <= partition_mask_; ++p) {
    std::lock_guard<threads::SpinLock> guard(partitions_[p].lock);
    st.hits += partitions_[p].hits.load(std::memory_order_relaxed);
  }
  for (size_t i = 0; i < kHitShards; ++i) {
    st.hinted_hits += hinted_hits_[i].hits.load(std::memory_order_relaxed);
  }
  st.hits += st.hinted_hits;
  st.misses = misses_.load(std::memory_order_relaxed);
  st.reads = reads_.load(std::memory_order_relaxed);
  st.read_failures = read_failures_.load(std::memory_order_relaxed);
  st.writes = writes_.load(std::memory_order_relaxed);
  st.write_failures = write_failures_.load(std::memory_order_relaxed);
  st.evictions = evictions_.load(std::memory_order_relaxed);
  int64_t dirty = dirty_count_.load(std::memory_order_relaxed);
  st.dirty_pages = dirty > 0 ? static_cast<uint64_t>(dirty) : 0;
  st.frames = frame_count_;
  st.prefaulted_bytes = memory_->populated_bytes();
  return st;
}

std::vector<std::pair<PageId, Lsn>> BufferPool::DirtyPages() const {
  std::vector<std::pair<PageId, Lsn>> out;
  for (size_t i = 0; i < frame_count_; ++i) {
    const Frame& f = frames_[i];
    // `dirty` first: a write-back sets writing_rec_lsn before it clears `dirty` and resets it
    // only after the write, so a page seen clean here is then seen writing, or was written.
    bool dirty = f.dirty.load(std::memory_order_acquire);
    Lsn writing = f.writing_rec_lsn.load(std::memory_order_acquire);
    if (f.state.load(std::memory_order_acquire) != FrameState::kResident) continue;
    if (!dirty && !writing.valid()) continue;
    Lsn rec = dirty ? f.rec_lsn.load(std::memory_order_relaxed) : writing;
    if (dirty && writing.valid()) rec = std::min(rec, writing);
    out.emplace_back(f.page_id.load(std::memory_order_relaxed), rec);
  }
  return out;
}

bool BufferPool::CheckInvariants() const {
  // Meaningful only when no fix is in progress (tests call it at quiescent points).
  size_t mapped = 0;
  bool entries_ok = true;
  for (size_t p = 0; p <= partition_mask_; ++p) {
    std::lock_guard<threads::SpinLock> guard(partitions_[p].lock);
    partitions_[p].map.ForEach([&](uint64_t id, const Frame* frame) {
      FrameState st = frame->state.load(std::memory_order_relaxed);
      entries_ok = entries_ok && frame->page_id.load(std::memory_order_relaxed).value() == id &&
                   (st == FrameState::kResident || st == FrameState::kLoading) &&
                   &PartitionOf(PageId(id)) == &partitions_[p];
    });
    mapped += partitions_[p].map.size();
  }
  if (!entries_ok) return false;
  size_t free_count;
  {
    std::lock_guard<threads::SpinLock> guard(free_lock_);
    free_count = free_frames_.size();
    for (Frame* f : free_frames_) {
      if (f->state.load(std::memory_order_relaxed) != FrameState::kFree) return false;
      if (InUse(*f)) return false;
    }
  }
  size_t dirty = 0, pinned = 0, evicted_free = 0;
  for (size_t i = 0; i < frame_count_; ++i) {
    const Frame& f = frames_[i];
    if (f.dirty.load(std::memory_order_relaxed)) ++dirty;
    if (InUse(f)) ++pinned;
    if (f.state.load(std::memory_order_relaxed) == FrameState::kFree) ++evicted_free;
    if (f.dirty.load(std::memory_order_relaxed) &&
        f.state.load(std::memory_order_relaxed) != FrameState::kResident) {
      return false;  // only mapped, resident pages can be dirty
    }
  }
  if (pinned != 0) return false;
  if (static_cast<int64_t>(dirty) != dirty_count_.load(std::memory_order_relaxed)) return false;
  // Every frame is mapped or free (failed frames return to free at their last unpin).
  if (mapped + evicted_free != frame_count_) return false;
  return free_count <= evicted_free;
}

bool BufferPool::CheckMapping() const {
  for (size_t p = 0; p <= partition_mask_; ++p) {
    if (!CheckPartition(partitions_[p])) return false;
  }
  std::lock_guard<threads::SpinLock> guard(free_lock_);
  for (const Frame* f : free_frames_) {
    // Nothing pins a free frame (pins are taken under the lock of a page that maps it), and
    // only a clean page's frame is freed. An unlocked fix may latch it for a moment (a stale
    // hint), so the latch is not checked.
    if (f->state.load(std::memory_order_relaxed) != FrameState::kFree ||
        f->page_id.load(std::memory_order_relaxed).valid() ||
        f->pin_count.load(std::memory_order_acquire) != 0 ||
        f->dirty.load(std::memory_order_relaxed) ||
        f->writing_rec_lsn.load(std::memory_order_relaxed).valid()) {
      return false;
    }
  }
  return true;
}

bool BufferPool::CheckPartition(const Partition& part) const {
  std::lock_guard<threads::SpinLock> guard(part.lock);
  return CheckPartitionLocked(part);
}

bool BufferPool::CheckPartitionLocked(const Partition& part) const {
  bool ok = true;
  part.map.ForEach([&](uint64_t id, const Frame* frame) {
    // page_id changes only under this lock; a loading frame's loader holds a pin.
    const FrameState st = frame->state.load(std::memory_order_acquire);
    ok = ok && frame->page_id.load(std::memory_order_relaxed).value() == id &&
         (st == FrameState::kResident ||
          (st == FrameState::kLoading && frame->pin_count.load(std::memory_order_relaxed) > 0)) &&
         &PartitionOf(PageId(id)) == &part;
  });
  return ok;
}

bool BufferPool::CheckHandedOver(const Frame* frame, LatchMode mode) {
  const bool latched = mode == LatchMode::kExclusive
                           ? frame->latch.HeldExclusive()
                           : !frame->latch.IsFree() && !frame->latch.HeldExclusive();
  const PageId id = frame->page_id.load(std::memory_order_relaxed);
  return latched && id.valid() &&
         frame->state.load(std::memory_order_acquire) == FrameState::kResident &&
         PageIdOf(frame->data) == id;
}

bool BufferPool::CheckFixed(const Frame* frame, LatchMode mode, bool pinned) const {
  if (!CheckHandedOver(frame, mode)) return false;
  if (pinned && frame->pin_count.load(std::memory_order_relaxed) == 0) return false;
  // Invariant 2: a latched frame keeps its page, so the table still maps the page to it.
  const PageId id = frame->page_id.load(std::memory_order_relaxed);
  const Partition& part = PartitionOf(id);
  std::lock_guard<threads::SpinLock> guard(part.lock);
  return part.map.Find(id.value()) == frame && CheckPartitionLocked(part);
}

bool BufferPool::CheckPinned(const Frame* frame) const {
  const PageId id = frame->page_id.load(std::memory_order_relaxed);
  if (!id.valid()) return false;
  const Partition& part = PartitionOf(id);
  std::lock_guard<threads::SpinLock> guard(part.lock);
  return frame->pin_count.load(std::memory_order_relaxed) > 0 &&
         frame->state.load(std::memory_order_acquire) == FrameState::kResident &&
         part.map.Find(id.value()) == frame && CheckPartitionLocked(part);
}

bool BufferPool::WalRuleHolds(const char* copy) const {
  return !durable_lsn_source_ || PageLsn(copy) <= durable_lsn_source_();
}

}  // namespace sm::buffer
