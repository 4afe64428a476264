// BufferPool: a fixed set of 8 KiB frames caching the pages of one Volume.
//
// Owns: the frames and their memory, the page table (page id -> frame), pin counts, the
// clock hand, write-back (eviction and the background writer) and the pool statistics.
//
// Fixing a page keeps its frame from eviction and latches it shared or exclusive
// (threads::Latch: a fiber that waits is suspended). A PageHandle unfixes when it dies. The
// usual hit takes no lock and no pin: it looks the page up in the table without the
// partition lock, latches the frame it finds if the latch is free, and checks that the frame
// holds the page, loaded; the latch alone then keeps the frame (invariant 2). Anything else
// (a miss, a busy latch, a frame that moved) takes the partition lock, where a busy latch
// means pin first, then wait for the latch. A hit so costs two atomic read-modify-writes (the
// latch and its release) instead of five (lock, pin, latch, release, unpin), each of which
// also waits for the store buffer to drain. A hinted fix (FixHinted) latches the frame its
// caller remembers for the page and checks it the same way, so it skips the table too: the
// partition and slot a random fix misses in the CPU cache, one after the other, before the
// frame. The B-tree keeps such hints for its root, for each child of an inner node (the
// owner's ChildHints, 4 KiB per inner node's frame) and for the leaves it remembers.
//
// Frame state machine (Frame::state), transitions under the page-table partition lock:
//   kFree     --Claim (Fix miss / FixNew)-->           kLoading (mapped, pinned by the loader)
//   kLoading  --load succeeded (Load)-->               kResident
//   kLoading  --load failed (Load)-->                  kFailed (unmapped; waiters see the
//                                                      Status, last unpin frees the frame)
//   kResident --evicted (TryEvict, pin 0, clean)-->    kFree
//   kFailed   --last unpin (Unpin)-->                  kFree
//
// Invariants:
//   1. A page id maps to at most one frame; a mapped frame is kLoading or kResident.
//   2. A frame is in use while pin_count > 0 or its latch is held. pin_count is incremented
//      only under the partition lock of the frame's page. An eviction (or a Forget) checks
//      pin_count == 0 under the same lock and holds the frame's latch exclusively while it
//      unmaps the frame and clears its page id and state. So a pinned frame is never evicted,
//      and a fix that latched a frame without the lock (or under it) and then finds it holding
//      its page, resident, keeps that page until it unlatches. Unpinning and unlatching need
//      no lock. A new page's frame is latched before it is mapped.
//   3. A frame's bytes change only under its exclusive latch; write-back copies them under
//      a shared latch, so a page is never written half-modified.
//   4. WAL rule: before a dirty page is written, the log is made durable up to its page LSN
//      through the callback set by SetWalFlush (a no-op until the log manager sets one). The
//      callback may refuse every write (TxnManager does once the database is in its failed
//      state); the page then stays dirty as in 6. Checked just before each write: the copy's
//      page LSN is at most the durable LSN (SetDurableLsnSource).
//   5. Several fixers of a page that is not resident cause exactly one read: the first
//      claims a frame in kLoading, the others pin it and wait for the load; a failed read
//      reaches every waiter as the same Status.
//   6. A failed write-back leaves the page dirty and returns the error to the caller (the
//      writer or the fixer that needed the frame); nothing proceeds as if it were written.
//   7. At most one write-back of a frame is in flight (Frame::write_mu, held from the copy to
//      the end of the write): the writes of a page reach the file in the order their copies
//      were taken, so an older copy never lands on top of a newer one whose frame is clean.
//
// Checks: CheckInvariants walks every frame and the page table and needs a quiescent pool (no
// fix in progress; tests, the destructor). In paranoid builds (SM_PARANOID) the transitions
// check what holds at any moment: a fix hands over a latched, resident frame holding its
// page; an unfix finds it still mapped to its page (invariant 2) and walks the partition's
// entries (invariant 1); eviction, load, Forget and write-back completion walk the
// partition they changed; FlushAll ends with a walk of every partition and the free list.
//
// Write-back in batches. The background writer's rounds and FlushAll (checkpoints, Close)
// write their pages in page-id order, up to 64 at a time (at most a quarter of the frames, so
// that the pages a batch pins leave frames to the fixers): each page is copied as a single
// write-back copies it, the log is flushed once up to the newest page LSN among them, and each
// run of consecutive page ids goes to the file as one write. Written one by one, each page would
// be a system call, and under virtualization an exit to the hypervisor besides: at TPC-C's rate
// of page writes (tpcc run's buffer_pool.writes) a share of a core the workers need. A
// batch only tries a frame's write_mu and latch: one that is taken is skipped (FlushAll writes
// it alone afterwards, waiting as usual), so a batch never waits while it holds a write_mu.
//
// What the background writer writes (WriterRoundLimit, WriteDirtyRound): when a frame is
// needed (an eviction sweep met dirty frames, or clean frames run short), any unpinned dirty
// page; otherwise only pages whose oldest unwritten change lags the log's end by
// writer_log_lag_bytes and that have not changed for writer_quiet_ms. Such writes spread over
// time the writes a checkpoint would do in one burst; a page that is still changing would be
// dirty again at once, so writing it early buys nothing, and the checkpoint writes it anyway.
// Without the quiet rule random inserts into a large B-tree rewrite every leaf again and again
// in a run that needs no page write before its first checkpoint, and the writer takes CPU the
// workers share (bench_btree's inserts_per_s_2w and tpcc run's throughput_tx_per_s and
// buffer_pool.writes, each with --writer-quiet-ms 0 against the default).
//
// Thread/fiber safety: every public method may be called concurrently from fibers on any
// worker and from plain threads. A PageHandle belongs to the fiber or thread that fixed it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "sm/buffer/pool_memory.h"
#include "sm/common/assert.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/page/page.h"
#include "threads/ctx_point.h"
#include "threads/sync.h"
#include "threads/worker.h"

namespace sm::threads {
class Runtime;
}
namespace sm::space {
class Volume;
}

namespace sm::buffer {

struct BufferPoolOptions {
  size_t pool_bytes = 64 << 20;  // rounded down to whole frames; at least kMinFrames
  // Background writer: wakes every writer_interval_ms (0: never by time), or sooner when an
  // eviction sweep meets dirty frames, and writes unpinned dirty pages (see WriterLoop).
  uint32_t writer_interval_ms = 100;
  // A timed round writes only the pages whose rec_lsn is at least this many bytes of log behind
  // the log's end, unless clean frames run short; 0 (or no RecLsnSource): every dirty page.
  uint64_t writer_log_lag_bytes = 256ull << 20;
  // ... and, of those, only the pages that have not changed for this long (0: regardless): a
  // page still changing is dirty again at once, and the next checkpoint writes it anyway.
  uint32_t writer_quiet_ms = 5000;
  // Keep this much of the pool's memory after the highest frame handed out so far backed by
  // the kernel, in a background thread (pool_memory.h); 0: the kernel backs it at first touch.
  size_t prefault_ahead_bytes = 64 << 20;
};

struct BufferPoolStats {
  uint64_t hits = 0;
  uint64_t hinted_hits = 0;  // of the hits, those through a frame hint (FixHinted)
  uint64_t misses = 0;       // fixes that found the page not resident
  uint64_t reads = 0;        // page reads issued (misses minus coalesced waiters)
  uint64_t read_failures = 0;
  uint64_t writes = 0;  // page writes (eviction, background writer, flush)
  uint64_t write_failures = 0;
  uint64_t evictions = 0;
  uint64_t dirty_pages = 0;  // now
  uint64_t frames = 0;
  uint64_t prefaulted_bytes = 0;  // of the frames' memory, backed ahead of use (pool_memory.h)
};

class BufferPool;

// CTX points (threads/ctx_point.h), candidates for the STEPS placement: a page fix, before its
// latch (a fix may wait: for the latch or the read), and a page unfix, after its latch is
// released.
extern threads::CtxSite kCtxBufferFix;
extern threads::CtxSite kCtxBufferUnfix;

enum class FrameState : uint8_t { kFree, kLoading, kResident, kFailed };

// Words the page's owner keeps in memory beside Frame::owner_hint, with the same rules (never
// logged or written; zero when the frame gets a page; a heuristic, so any value must be safe):
// the B-tree's latch-contention counts of a leaf (index/btree.h, "Contention split"). Touched
// only by writes that waited for the latch, so they live outside the fix path's cache line.
struct FrameContention {
  uint16_t last_slot = 0;     // the record the last write that waited changed
  uint16_t contended = 0;     // such writes that changed another record than the one before
  uint16_t window_start = 0;  // the node version (low bits) the counting window began at
};

struct Frame;
// A frame that held a page when it was last fixed: a hint for fixing that page again without
// the page table (BufferPool::FixHinted checks it like a table hit, so a stale hint costs a
// fall-back, never a wrong page). Null: no hint.
using FrameHint = const Frame*;

// The owner's hints for the pages its page's records name (the B-tree: an inner node's
// children), by child index: where each was found last. Kept beside Frame::owner_hint, with
// its rules (memory only; dropped when the frame gets a page), allocated on first use.
struct ChildHints {
  static constexpr size_t kSlots = 512;  // an inner node's children beyond these go unhinted
  std::atomic<FrameHint> frames[kSlots] = {};
};

// One frame. Fields other than the atomics change only as the file comment describes.
// The fields a fix and its release touch (latch, pin_count, state, referenced, data) come
// first, in the frame's first cache line: a descent through pages not in the CPU cache then
// misses once per frame, not twice.
struct alignas(64) Frame {
  threads::Latch latch;                // guards the page bytes
  std::atomic<uint32_t> pin_count{0};  // see invariant 2
  std::atomic<FrameState> state{FrameState::kFree};
  std::atomic<bool> dirty{false};
  std::atomic<bool> referenced{false};  // clock second-chance bit
  // Written under the partition lock of the page it names; read without a lock only to find
  // which partition to lock (then re-checked), hence atomic (relaxed).
  std::atomic<PageId> page_id{PageId::Invalid()};
  char* data = nullptr;  // kPageBytes, aligned for O_DIRECT
  // The full-page-image epoch the page's image was last logged in (changed under the
  // exclusive latch; 0 after a load). See BufferPool::AdvanceFpiEpoch.
  uint32_t fpi_epoch = 0;
  // A word the page's owner keeps in memory only (never logged or written; 0 when the frame
  // gets a page, loaded or new): the B-tree's position of its last insert into the node
  // (PageHandle::owner_hint).
  uint16_t owner_hint = 0;
  // BufferPool::change_epoch_ at the page's last MarkDirty: how long it has been quiet
  // (WriteDirtyRound). Here because the marking fixer holds this line already.
  std::atomic<uint8_t> changed_epoch{0};
  // -- end of the first cache line --
  threads::Mutex write_mu;     // serializes write-backs (invariant 7)
  FrameContention contention;  // under the exclusive latch
  // When the page last became dirty: no older change is missing on disk. Stored before
  // `dirty` is set (release) so that DirtyPages, which reads it without the latch after
  // seeing `dirty`, never sees a stale value.
  std::atomic<Lsn> rec_lsn{Lsn::Invalid()};
  // While a write-back of the page is in flight: the rec_lsn it had when it was copied (the
  // page is already marked clean then). DirtyPages reports it, so a checkpoint taken during the
  // write still counts the page as dirty until the write has reached the file.
  std::atomic<Lsn> writing_rec_lsn{Lsn::Invalid()};
  threads::Event loaded;  // set when a kLoading state ends
  Status load_status;     // the failed load's Status, written before `loaded`
  // ChildHints, installed by the first RememberChild (a CAS: readers under a shared latch
  // race), read and written under either latch, freed when the frame gets a page.
  std::atomic<ChildHints*> child_hints{nullptr};

  ~Frame() { delete child_hints.load(std::memory_order_relaxed); }
};
static_assert(offsetof(Frame, changed_epoch) < 64,
              "the fix path's fields of a Frame fit in one cache line");

// A fixed page: latched (and pinned, unless the latch was taken under the partition lock)
// until Release() or destruction. Movable, not copyable.
class PageHandle {
 public:
  PageHandle() = default;
  ~PageHandle() { Release(); }
  PageHandle(PageHandle&& other) noexcept { *this = std::move(other); }
  PageHandle& operator=(PageHandle&& other) noexcept;
  PageHandle(const PageHandle&) = delete;
  PageHandle& operator=(const PageHandle&) = delete;

  bool valid() const { return frame_ != nullptr; }
  PageId page_id() const { return frame_->page_id.load(std::memory_order_relaxed); }
  char* data() const { return frame_->data; }
  threads::LatchMode mode() const { return mode_; }
  // Marks the page modified; requires the exclusive latch. The caller sets the page LSN. A
  // clean page's rec_lsn becomes the pool's RecLsnSource (the log's end: below the record
  // about to be written for this change), or the page LSN if none is set.
  void MarkDirty();
  // The same with an explicit rec_lsn (redo: the LSN of the record being repeated).
  void MarkDirty(Lsn rec_lsn);
  // Torn-write protection (BufferPool::AdvanceFpiEpoch): true if the next change must be
  // logged together with a full image of the page; *epoch is what FullImageLogged records.
  // Requires the exclusive latch.
  bool NeedsFullImage(uint32_t* epoch) const;
  void FullImageLogged(uint32_t epoch) const;
  // The frame's owner hint (Frame::owner_hint): a heuristic, so any value must be safe to
  // read. Written under the exclusive latch; read under either.
  uint16_t owner_hint() const { return frame_->owner_hint; }
  void set_owner_hint(uint16_t hint) const { frame_->owner_hint = hint; }
  // The fix found the page resident with its latch held and waited for it (the partition-lock
  // path's blocking acquire), rather than taking it at once or after a load: a contention
  // signal for the page's owner. Costs the hit path nothing: only the waiting path sets it.
  bool latch_waited() const { return (fix_flags_ & kLatchWaited) != 0; }
  // The frame's contention words (FrameContention); under the exclusive latch.
  FrameContention& contention() const { return frame_->contention; }
  // This fix's frame, as a hint for the next fix of the page (BufferPool::FixHinted).
  FrameHint frame_hint() const { return frame_; }
  // The owner's hint for the page its child `index` names (ChildHints), or null; and
  // remembering one. Under either latch; any value is safe (FixHinted validates).
  FrameHint ChildHint(size_t index) const {
    const ChildHints* hints = frame_->child_hints.load(std::memory_order_acquire);
    if (hints == nullptr || index >= ChildHints::kSlots) return nullptr;
    return hints->frames[index].load(std::memory_order_relaxed);
  }
  void RememberChild(size_t index, FrameHint hint) const;
  // Keeping the hints with their children when the records move, under the exclusive latch
  // (without it, every split of a child shifts the hints of the children after it onto the
  // wrong children, and a tree growing by random inserts finds almost none right). `children`
  // is the page's child count after the change.
  //   A child inserted at `index` (with its hint): the later children's hints move up one.
  void InsertChildHint(size_t index, FrameHint hint, size_t children) const;
  //   The child at `index` removed: the later children's hints move down one.
  void EraseChildHint(size_t index, size_t children) const;
  //   This page's children from `first` on, `count` of them, moved to `to` as its first ones.
  void MoveChildHints(size_t first, size_t count, const PageHandle& to) const;
  // Shared -> exclusive if this is the only shared holder; false otherwise (still shared).
  bool TryUpgrade();
  void Release();

 private:
  friend class BufferPool;
  Frame* frame_ = nullptr;
  BufferPool* pool_ = nullptr;
  threads::LatchMode mode_ = threads::LatchMode::kShared;
  // How the fix went, in one byte (moving a handle copies no more than a bool would): kPinned
  // (else the latch alone keeps the frame, invariant 2) and kLatchWaited (latch_waited()).
  static constexpr uint8_t kPinned = 1;
  static constexpr uint8_t kLatchWaited = 2;
  uint8_t fix_flags_ = kPinned;
};

// How FlushAll spreads its writes (BufferPool::FlushAll).
struct FlushPace {
  std::chrono::milliseconds spread{0};  // 0: at once
  std::function<bool()> hurry;          // polled between batches; may be empty
};

class BufferPool {
 public:
  static constexpr size_t kMinFrames = 8;
  // Ensures the log is durable up to the LSN (the WAL rule); returns its error otherwise.
  using WalFlush = std::function<Status(Lsn)>;

  static Status Create(space::Volume* volume, const BufferPoolOptions& options,
                       std::unique_ptr<BufferPool>* pool);
  ~BufferPool();  // stops the writer; does not write dirty pages (call FlushAll first)
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Pins and latches page `id`, reading it from the volume if it is not resident.
  Status Fix(PageId id, threads::LatchMode mode, PageHandle* handle);
  // Fix, trying the frame `hint` first (PageHandle::frame_hint, ChildHint): if its latch is
  // free and it holds the page, resident, that is the hit, found without the page table's
  // partition and slot (two cache misses of a random fix). Anything else: Fix. Always inline:
  // it is every descent's step, and out of line its call costs more than its hit path.
  [[gnu::always_inline]] Status FixHinted(PageId id, FrameHint hint, threads::LatchMode mode,
                                          PageHandle* handle);
  // Starts loading a hinted frame's first cache line and the first `page_lines` lines of its
  // page into the CPU cache, ahead of a FixHinted of it, so that the caller can do other work
  // (the B-tree: another fiber's) while they arrive. Any hint is safe: nothing is read.
  void PrefetchForFix(FrameHint hint, size_t page_lines) const;
  // The frame the page table maps `id` to now, or null: read without the partition's lock, so
  // only a hint (FixHinted checks what it finds there).
  FrameHint FrameOf(PageId id) const;
  // Fix for recovery redo: exclusive. With may_be_new, a page the volume has never written
  // (all zeros) is handed over initialized as an empty kFree page with LSN 0 instead of
  // failing verification. With torn non-null, a page that fails verification otherwise (a
  // torn write) is handed over the same way with *torn set, for redo to rebuild from a full
  // image; with torn null it fails as in Fix.
  Status FixForRedo(PageId id, bool may_be_new, PageHandle* handle, bool* torn = nullptr);
  // Allocates a new page in the volume and fixes it exclusively, initialized as `type`
  // and dirty. No read is issued.
  Status FixNew(PageType type, PageHandle* handle);
  // Frees page `id` in the volume and drops it from the pool. The page must not be fixed
  // (Busy, and nothing changes: a write-back may hold it for a moment).
  Status FreePage(PageId id);
  // Recovery's redo of a logged free: the same, except that a page already free stays free.
  Status RedoFreePage(PageId id);

  // Writes every dirty page (checkpoint, close) and waits for write-backs already in flight,
  // so every page clean when it returns is on the volume. Returns the first error; pages
  // that failed stay dirty. With a pace, the writes are spread over pace.spread (batch by
  // batch, sleeping while ahead of schedule) until pace.hurry() says to finish at once.
  Status FlushAll(const FlushPace& pace = FlushPace());
  // Full-page images against torn writes (PostgreSQL's full_page_writes, per checkpoint):
  // a checkpoint advances the epoch (after its begin record, before its FlushAll), and the
  // first change of each page in a new epoch is logged with a full image of the page. A page
  // written after the checkpoint's volume sync - the only writes a crash can tear - was
  // changed in the epoch, so the log after the checkpoint holds an image to rebuild it from.
  void AdvanceFpiEpoch() { fpi_epoch_.fetch_add(1, std::memory_order_seq_cst); }
  // Starts the background writer: a fiber on worker 0 of `runtime` (I/O through the
  // reactor), or a plain thread if runtime is null. StopWriter joins it.
  void StartWriter(threads::Runtime* runtime);
  void StopWriter();

  void SetWalFlush(WalFlush flush);
  // The log's durable LSN, read just before each page write to check invariant 4 (unset: not
  // checked). Set before the pool is used concurrently.
  using DurableLsnSource = std::function<Lsn()>;
  void SetDurableLsnSource(DurableLsnSource source) { durable_lsn_source_ = std::move(source); }
  // Where MarkDirty takes a clean page's rec_lsn from (the log's end LSN). Set before the pool
  // is used concurrently.
  using RecLsnSource = std::function<Lsn()>;
  void SetRecLsnSource(RecLsnSource source) { rec_lsn_source_ = std::move(source); }
  BufferPoolStats stats() const;
  size_t frame_count() const { return frame_count_; }
  // Walks every frame and the page table; only meaningful with no fix in progress (tests,
  // quiescent points such as a clean shutdown).
  bool CheckInvariants() const;
  // What holds at any moment, each partition under its lock: every page-table entry maps a
  // page to a frame that names it, resident or loading, in the right partition (invariant 1);
  // every frame on the free list is free, unpinned, clean and names no page.
  bool CheckMapping() const;

  // The frames currently dirty, or being written back, with their recovery LSN (first
  // dirtying), for checkpoints: a page missing from the list was written (the write call
  // returned) before the call began.
  std::vector<std::pair<PageId, Lsn>> DirtyPages() const;

 private:
  friend class PageHandle;
  struct Partition;
  BufferPool(space::Volume* volume, const BufferPoolOptions& options, size_t frames);

  // SM_PARANOID checks at the state transitions (see the file comment). The ...Locked ones
  // need the partition's lock held.
  static bool CheckHandedOver(const Frame* frame, threads::LatchMode mode);
  bool CheckFixed(const Frame* frame, threads::LatchMode mode, bool pinned) const;
  bool CheckPinned(const Frame* frame) const;
  bool CheckPartition(const Partition& part) const;
  bool CheckPartitionLocked(const Partition& part) const;
  // The WAL rule just before a write (invariant 4): false if the copy carries a page LSN
  // above the durable LSN.
  bool WalRuleHolds(const char* copy) const;

  Partition& PartitionOf(PageId id) const;
  Status FixExisting(Frame* frame, threads::LatchMode mode, PageHandle* handle);
  // Latches a pinned, resident frame and hands it to *handle; waited: the latch was seen held
  // (PageHandle::latch_waited).
  void LatchPinned(Frame* frame, threads::LatchMode mode, PageHandle* handle, bool waited = false);
  // Prefetches the first lines of the frame's page.
  void PrefetchPage(const Frame* frame) const;
  // Takes the latch if it is free now (never waits).
  static bool TryLatch(Frame* frame, threads::LatchMode mode);
  // The hit without a lock or pin (invariant 2), shared by the table and hinted fixes: latches
  // `frame` if its latch is free, then checks that it holds page `id`, loaded, and if so hands
  // it over; otherwise unlatches and returns false. The caller counts the hit.
  bool TryFixUnlocked(Frame* frame, PageId id, threads::LatchMode mode, PageHandle* handle);
  // Fills *handle with a frame the caller latched (and pinned, if `pinned`; waited: see
  // PageHandle::latch_waited).
  void HandOver(Frame* frame, threads::LatchMode mode, bool pinned, PageHandle* handle,
                bool waited = false);
  // Pinned or latched (invariant 2).
  static bool InUse(const Frame& frame);
  Status ClaimFrame(Frame** frame);
  bool PinIfResident(Frame* frame);
  bool TryEvict(Frame* frame);
  Status WriteBack(Frame* frame);
  Status WriteBackUnpinned(Frame* frame);
  // The steps of a write-back (buffer_pool.cc), shared by the one-page and batched paths.
  enum class CopyResult : uint8_t { kCopied, kClean, kBusy };
  CopyResult CopyForWrite(Frame* frame, char* staging, bool wait, Lsn* old_rec_lsn);
  Status FlushWal(Lsn page_lsn);
  void EndWrite(Frame* frame, Lsn old_rec_lsn, const Status& written);
  Status WriteBackBatch(const std::vector<Frame*>& frames, std::vector<Frame*>* skipped);
  size_t BatchPages() const;
  size_t WriteBackFrames(std::vector<Frame*> frames, bool wait_for_busy, Status* first);
  struct LoadKind {
    bool may_be_new = false;  // a zero page is handed over empty
    bool* torn = nullptr;     // a page failing verification is handed over empty, *torn set
  };
  Status FixImpl(PageId id, threads::LatchMode mode, LoadKind kind, PageHandle* handle);
  static void ForgetOwnerWords(Frame* frame);
  // Hits through FixHinted, counted per worker (the partitions' counters are the lines a
  // hinted fix avoids); lossy like those.
  void CountHintedHit();
  static constexpr size_t kHitShards = 16;
  struct alignas(64) HitShard {
    std::atomic<uint64_t> hits{0};
  };
  Status Load(Frame* frame, PageId id, LoadKind kind);
  void Unpin(Frame* frame);
  void FreeFailedFrame(Frame* frame);  // at the last unpin of a kFailed frame
  void ReturnToFreeList(Frame* frame);
  // Drops page `id` from the pool (its frame, dirty or not, returns to the free list) unless it
  // is fixed: Busy then. Not cached: OK.
  Status Forget(PageId id);
  void WriterLoop();
  Lsn WriterRoundLimit();
  // Writes up to max_pages unpinned dirty pages whose rec_lsn is below rec_lsn_limit (with
  // only_quiet: that have not changed for options_.writer_quiet_ms).
  size_t WriteDirtyRound(size_t max_pages, Lsn rec_lsn_limit, bool only_quiet);
  // Advances change_epoch_ once per quarter of writer_quiet_ms.
  void TickChangeEpoch();
  // Stamps the frame with change_epoch_ (MarkDirty, under the exclusive latch).
  void NoteChange(Frame* frame) {
    frame->changed_epoch.store(change_epoch_.load(std::memory_order_relaxed),
                               std::memory_order_relaxed);
  }
  bool Quiet(const Frame& frame) const;

  space::Volume* volume_;
  const BufferPoolOptions options_;
  std::unique_ptr<PoolMemory> memory_;  // the frames' pages, prefaulted ahead of use
  char* const pages_;                   // memory_->data(): the fix path's address base
  // The frame descriptors, in huge pages too; the deleter destroys them, frame_memory_ frees.
  std::unique_ptr<PoolMemory> frame_memory_;
  struct FrameArrayDeleter {
    size_t count = 0;
    void operator()(Frame* frames) const;
  };
  std::unique_ptr<Frame[], FrameArrayDeleter> frames_;
  size_t frame_count_;
  std::unique_ptr<Partition[]> partitions_;
  size_t partition_mask_;
  std::unique_ptr<HitShard[]> hinted_hits_;  // CountHintedHit

  mutable threads::SpinLock free_lock_;
  std::vector<Frame*> free_frames_;  // GUARDED_BY(free_lock_)
  std::atomic<size_t> clock_hand_{0};

  threads::Mutex wal_mu_;
  WalFlush wal_flush_;  // copied out to be called; GUARDED_BY(wal_mu_)
  RecLsnSource rec_lsn_source_;
  DurableLsnSource durable_lsn_source_;
  std::atomic<uint32_t> fpi_epoch_{1};

  // Background writer.
  std::atomic<bool> writer_stop_{false};
  std::atomic<bool> eviction_waiting_{false};  // an eviction sweep met dirty frames
  // A clock for Frame::changed_epoch, advanced by the writer (wrapping: a page quiet for 256
  // epochs may look busy again, which only leaves it to the next checkpoint).
  std::atomic<uint8_t> change_epoch_{0};
  std::chrono::steady_clock::time_point change_epoch_start_;  // the writer's
  threads::Event writer_wake_;
  threads::Event writer_done_;
  std::thread writer_thread_;
  bool writer_running_ = false;
  size_t writer_scan_next_ = 0;  // where WriteDirtyRound's next scan starts (the writer's)

  mutable std::atomic<uint64_t> misses_{0}, reads_{0}, read_failures_{0};
  mutable std::atomic<uint64_t> writes_{0}, write_failures_{0}, evictions_{0};
  std::atomic<int64_t> dirty_count_{0};
};

// Inline: every step of a B-tree descent fixes a page, and moves and releases handles.

inline Status BufferPool::Fix(PageId id, threads::LatchMode mode, PageHandle* handle) {
  SM_CTX(kCtxBufferFix);
  return FixImpl(id, mode, LoadKind{}, handle);
}

inline void BufferPool::PrefetchPage(const Frame* frame) const {
  // The page's first two cache lines (every page type's headers, a B-tree node's first
  // slots), fetched while the latch waits for the frame's own line. The address comes from
  // the frame's index, not from frame->data, which would wait for that line.
  const char* data = pages_ + static_cast<size_t>(frame - frames_.get()) * kPageBytes;
  __builtin_prefetch(data);
  __builtin_prefetch(data + 64);
}

inline void BufferPool::CountHintedHit() {
  threads::Worker* worker = threads::Worker::Current();
  size_t shard = worker != nullptr ? static_cast<size_t>(worker->index()) % (kHitShards - 1)
                                   : kHitShards - 1;  // plain threads share the last
  std::atomic<uint64_t>& hits = hinted_hits_[shard].hits;
  hits.store(hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

inline Status BufferPool::FixHinted(PageId id, FrameHint hint, threads::LatchMode mode,
                                    PageHandle* handle) {
  SM_CTX(kCtxBufferFix);
  if (hint != nullptr) {
    handle->Release();
    // Frames are never freed while the pool lives, so the hint is a frame.
    if (TryFixUnlocked(const_cast<Frame*>(hint), id, mode, handle)) [[likely]] {
      CountHintedHit();
      return Status::OK();
    }
  }
  return FixImpl(id, mode, LoadKind{}, handle);
}

inline bool BufferPool::TryFixUnlocked(Frame* frame, PageId id, threads::LatchMode mode,
                                       PageHandle* handle) {
  PrefetchPage(frame);
  if (!TryLatch(frame, mode)) [[unlikely]] return false;
  if (frame->page_id.load(std::memory_order_acquire) == id &&
      frame->state.load(std::memory_order_acquire) == FrameState::kResident) [[likely]] {
    HandOver(frame, mode, /*pinned=*/false, handle);
    return true;
  }
  frame->latch.Release(mode);
  return false;
}

inline PageHandle& PageHandle::operator=(PageHandle&& other) noexcept {
  if (this != &other) {
    Release();
    frame_ = other.frame_;
    pool_ = other.pool_;
    mode_ = other.mode_;
    fix_flags_ = other.fix_flags_;
    other.frame_ = nullptr;
  }
  return *this;
}

inline void PageHandle::Release() {
  if (frame_ == nullptr) return;
  SM_PARANOID(pool_->CheckFixed(frame_, mode_, (fix_flags_ & kPinned) != 0));
  frame_->latch.Release(mode_);
  if (fix_flags_ & kPinned) pool_->Unpin(frame_);
  frame_ = nullptr;
  SM_CTX(kCtxBufferUnfix);
}

inline void BufferPool::Unpin(Frame* frame) {
  // acq_rel: the last unpin of a failed frame must see every waiter's reads done.
  uint32_t old = frame->pin_count.fetch_sub(1, std::memory_order_acq_rel);
  SM_ASSERT(old > 0);
  if (old == 1 && frame->state.load(std::memory_order_acquire) == FrameState::kFailed)
      [[unlikely]] {
    FreeFailedFrame(frame);
  }
}

}  // namespace sm::buffer
