// LogManager: the write-ahead log - concurrent record insertion into a log buffer, a flusher
// that writes and syncs the filled prefix, group commit with three commit modes, segment files
// (created ahead, recycled, truncated), and opening an existing log (finding and cutting its end).
//
// Owns: the log buffer (a ring of buffer_bytes, aligned for direct I/O) and its completion
// slots, the flusher thread, the LSN positions below, the wait lists of committers and of
// inserters waiting for buffer space, the sticky fatal state, and the statistics. The files
// belong to a LogDirectory (log_dir.h) shared with readers.
//
// Positions (byte offsets in the log stream, all monotonic):
//   durable <= written <= filled <= insert
//   insert   next free byte: Insert reserves [insert, insert + length) with one fetch_add
//   filled   every byte below is copied into the buffer and published (flusher-private walk)
//   written  every byte below is in the segment files (not necessarily synced)
//   durable  every byte below has been synced: Flush(lsn) returns once durable >= lsn
//
// Insert protocol:
//   1. reserve with insert_.fetch_add (the LSN);
//   2. copy header, payload and zero padding into the ring at lsn % buffer_bytes, in pieces
//      whenever the ring lacks room: byte x may be overwritten only once x < BlockFloor(written)
//      + buffer_bytes (the flusher rewrites the partial block at written, so it stays). The
//      usual record (one payload, room for all of it, no wrap) is copied in one go and its
//      checksum taken from the copy; a payload may also come in parts (LogRecord), which are
//      copied one after another with no assembly first;
//   3. publish each piece [a, b) by storing b in slot (a / 8) % slot_count. The flusher walks
//      slots from filled: a slot holding an end > its position is a published piece (an older
//      lap's value is always <= the position, so no slot is ever cleared); bit 0 of the stored
//      end marks a piece that is not the last of its record.
//   A record longer than the buffer is therefore streamed in pieces; the only limit is the
//   format's kMaxRecordBytes (64 MiB), above which Insert returns InvalidArgument.
//
// Flusher (one OS thread per log, so it works with or without a fiber runtime; it blocks in
// write and fdatasync, which would otherwise need a blocking-call thread anyway). Each round:
//   advance filled over published slots; write [BlockFloor(written), filled) from the ring in
//   4 KiB blocks, the last partial block staged with zeros after filled (it is written again,
//   longer, by the next round) - a write of at most kStagedWriteBytes is staged whole, so a
//   commit group's write is one call; publish written and wake inserters waiting for space; if
//   anyone needs durability (a Flush, an async-commit deadline, Close), Sync every segment file
//   written since the last sync, publish durable and wake the committers it satisfies - one
//   fdatasync for all of them (group commit). A sync that only durable requests ask for may be
//   held back, and its write with it, until the committers the last sync released have asked
//   again (GroupGather, group_gather.h: at most half a sync). Then it sleeps on its Baton until
//   a Flush, a space waiter, an eager-write threshold, an async deadline, the end of a hold or
//   Close wakes it (or, while a request lies beyond the published prefix, for at most
//   kUnpublishedPoll: see Publish).
//
// Commit modes (Commit): kDurable waits for the commit record to be durable; kAsync returns at
// once and guarantees the flusher syncs it within async_flush_interval; kNone returns at once
// and promises nothing (the record becomes durable with the next sync anyone asks for).
//
// Segments: once the current segment is half written, the flusher asks its SegmentPreparer
// (segment_preparer.h) for the next one (a recycled spare if any, else a new file whose blocks
// are written as zeros, so that syncs into it commit no file-system metadata), made on the
// preparer's thread, so a roll-over rarely waits for file creation. Truncate(oldest_needed)
// retires whole segments below oldest_needed, keeping up to spare_bytes of them as spares for
// reuse. A recycled segment's blocks have been written before, so a write into one changes no
// file-system metadata and the sync after it commits none, whereas fresh preallocated blocks
// must be marked written by the file system, through its journal, which lengthens every sync
// a durable commit waits for (bench_log's durable_commits_per_s_1fiber times that wait).
//
// Open (log_open.cc) and how the end of the log is found:
//   The scan starts at the control file's checkpoint hint, else at its start LSN, and reads
//   records until position P holds no valid record. Then P is either a torn tail (the crash
//   interrupted writes that were never acknowledged) or corruption in the middle. A record's
//   durable_hint is the durable LSN when it was inserted: everything below it had been synced
//   before the record was even written, so no crash can have torn it. Open surveys every 8-byte
//   position after P (to the end of the last segment) for valid records (header naming its own
//   position, matching checksum) and reports Corruption at P if, with n the length in P's header
//   if that header is intact, else the header size,
//     - P + n is at or below the control file's durable hint (the durable LSN may lie inside a
//       record written in pieces, so a record that only starts below it may be torn), or
//     - some valid record after P has durable_hint >= P + n: the bytes at P were synced
//       before that record was written.
//   The survey reads the log files after P - the rest of P's segment and the one created
//   ahead, so its cost at open is bounded by two segments. Otherwise P is the end: the bytes
//   from P to the end of the last valid-looking record after it are zeroed (so a stale record
//   can never reappear at its own position once new records reach it), segments after P's are
//   deleted, and the next insert goes to P. Corruption in the last group-commit window (no
//   later record inserted after it became durable) cannot be told from a torn tail and is cut;
//   after a clean shutdown the durable hint written at Close leaves no such window.
//
// Read-only (LogOptions::read_only): Open finds the end as above but changes nothing - no
// retired segments removed, no tail cut or zeroed, no sync, no control-file update, no segment
// created, and no flusher. Every position starts at the end, so Flush and the readers see the
// whole log; Insert, Commit with a record, SetCheckpoint and Truncate return InvalidArgument,
// and Close writes nothing. A torn tail is reported (LogOpenReport::bytes_cut, tail_bytes())
// and left for a read-write open to cut.
//
// Sticky fatal state: a failed write or sync of a segment (sm/io/file.h contract 4), or a
// segment that cannot be created when needed, latches Status::Fatal: the flusher stops, every
// waiter is woken, and every later Insert, Flush, Commit returns Fatal. Nothing is retried.
//
// State machine of the manager:
//   open   --Close-->      closed (everything inserted is durable; later calls return Closed)
//   open   --SetFatal-->   fatal  (flusher I/O failed; later calls return the fatal status)
//   fatal  --Close-->      closed (returns the fatal status; the files are released)
//   open   --Close-->      closed, read-only: nothing written
//   open   --TEST_Kill-->  fatal, flusher gone, nothing more written (a simulated process death)
//
// Invariants (CheckInvariants checks 1; the flusher asserts 4 before each sync, and in paranoid
// builds checks each record it walks: its header names its own position and its length reaches
// the end of its last piece, so reservations are contiguous and LSNs increase on append):
//   1. open end <= durable <= written <= filled <= insert, all multiples of 8.
//   2. An inserter copies byte x into the ring only while x < BlockFloor(written) + buffer_bytes,
//      so nothing the flusher has yet to write (or rewrite: the partial block) is overwritten.
//   3. Every published piece is at most buffer_bytes long (it fits below the reuse limit), which
//      makes a slot value left from an older lap <= the slot's position.
//   4. Every byte in [durable, written) lies in a segment listed in dirty_segments_.
//
// The rewrite of the partial block at `written` relies on sector atomicity (as does every WAL
// that rewrites its last page): the block's bytes below `written` are rewritten unchanged, so a
// torn rewrite leaves them intact either way.
//
// Thread/fiber safety: Insert, Commit, Flush, ReadRecord, NewReader, Truncate, SetCheckpoint and
// the accessors are safe from any number of fibers (on any workers) and threads. Close must not
// run concurrently with other calls. A fiber that waits (Flush, buffer space) is suspended and
// its worker runs other fibers; a plain thread blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "log/group_gather.h"
#include "log/log_dir.h"
#include "log/log_reader.h"
#include "log/log_record.h"
#include "log/segment_preparer.h"
#include "log/lsn_wait_list.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/io/aligned_buffer.h"
#include "sm/io/file.h"
#include "threads/baton.h"
#include "threads/sync.h"

namespace sm::log {

enum class CommitMode : uint8_t { kDurable, kAsync, kNone };
inline constexpr int kCommitModeCount = 3;
// "durable", "async", "none": the names benchmark reports use.
const char* CommitModeName(CommitMode mode);

struct LogOptions {
  uint64_t segment_bytes = 64ull << 20;           // for a new log; an existing log keeps its own
  size_t buffer_bytes = 8u << 20;                 // log buffer (multiple of 4096, >= 16 KiB)
  CommitMode commit_mode = CommitMode::kDurable;  // for Commit without a mode
  std::chrono::microseconds async_flush_interval{10000};  // kAsync durability bound
  // Hold a sync that durable commits ask for until the last round's committers have asked
  // again (GroupGather): fewer syncs and whole groups when one worker runs many committers.
  bool gather_groups = true;
  // Retired segments kept for reuse (Truncate), up to this many bytes; at least two.
  uint64_t spare_bytes = 0;
  bool create_if_missing = true;
  bool direct_io = true;  // O_DIRECT segment files (alignment is kept either way)
  // Opens an existing log for reading only (see "Read-only" in the file comment); implies
  // !create_if_missing.
  bool read_only = false;
};

// What Open found.
struct LogOpenReport {
  bool created = false;        // a new, empty log
  uint64_t segment_bytes = 0;  // in use (an existing log's own)
  uint32_t segments = 0;       // segment files after opening
  uint32_t spares = 0;
  uint32_t segments_deleted = 0;  // past the end of the log
  Lsn start_lsn;                  // oldest record needed (control file)
  Lsn checkpoint_lsn;             // checkpoint hint (invalid: none)
  Lsn scan_start_lsn;             // where the end-of-log scan began
  Lsn end_lsn;                    // the end: the next record goes here
  uint64_t records_scanned = 0;
  uint64_t bytes_scanned = 0;
  uint64_t bytes_cut = 0;  // torn tail discarded: from the end to the last byte of a
                           // partial or stale record image found after it (read-only: found
                           // and left in place)
  std::string ToString() const;
};

// What LogManager::Verify read.
struct LogVerifyReport {
  Lsn start_lsn;  // the oldest retained record, where the scan began
  Lsn end_lsn;    // the durable end, where it stopped
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t segments = 0;      // segment files the range spans
  uint64_t transactions = 0;  // distinct transaction ids whose chains were followed
  std::string ToString() const;  // one line
};

struct LogStats {
  static constexpr int kGroupBuckets = 8;  // waiters per sync: 0, 1, 2-3, 4-7, ..., 64+

  uint64_t records = 0;        // records written to the segment files
  uint64_t bytes = 0;          // bytes inserted since open (headers and padding included)
  uint64_t writes = 0;         // segment write calls
  uint64_t bytes_written = 0;  // including rewrites of partial blocks
  uint64_t syncs = 0;
  uint64_t commits[kCommitModeCount] = {};  // Commit calls by CommitMode
  uint64_t flush_waits = 0;                 // Flush calls that suspended
  uint64_t waiters_released = 0;            // by syncs, summed
  uint64_t max_group = 0;                   // most waiters one sync released
  uint64_t group_histogram[kGroupBuckets] = {};
  uint64_t space_waits = 0;       // inserts that waited for log buffer space
  uint64_t segments_created = 0;  // including recycled spares
  uint64_t segments_removed = 0;  // by Truncate

  // Durable commits per sync: how well group commit batched.
  double CommitsPerSync() const;
  std::string ToString() const;
};

class LogManager {
 public:
  // Opens (or creates) the log in `dir` on `fs` (which must outlive the manager): finds the
  // segments, scans from the checkpoint hint to the end, cuts a torn tail, starts the flusher.
  // Corruption if the log is damaged before its end (see the file comment).
  static Status Open(io::FileSystem* fs, const std::string& dir, const LogOptions& options,
                     std::unique_ptr<LogManager>* log, LogOpenReport* report = nullptr);
  ~LogManager();  // Closes if Close was not called (ignoring its status)
  LogManager(const LogManager&) = delete;
  LogManager& operator=(const LogManager&) = delete;

  // Makes everything inserted durable, records the end in the control file, stops the flusher.
  Status Close();

  // Appends a record; *lsn is where it starts, *end_lsn (optional) where the next one does.
  Status Insert(const LogRecord& record, Lsn* lsn, Lsn* end_lsn = nullptr);
  // Appends a kTxnCommit record for txn and makes it as durable as `mode` says. *lsn is set
  // once the record is appended, also when the wait for durability then fails (it stays
  // untouched if nothing was appended).
  Status Commit(TxnId txn, Lsn prev_lsn, CommitMode mode, Lsn* lsn);
  Status Commit(TxnId txn, Lsn prev_lsn, Lsn* lsn) {
    return Commit(txn, prev_lsn, options_.commit_mode, lsn);
  }
  // The second half of Commit, for a caller that appended the kTxnCommit record itself with
  // Insert (commit_end: its end LSN), e.g. to update its transaction table in between.
  Status AwaitCommit(Lsn commit_end, CommitMode mode);
  // Waits until every byte below lsn is durable (group commit: the caller is suspended while
  // other fibers run; one sync serves every waiter it covers). lsn <= end_lsn().
  Status Flush(Lsn lsn);
  // Flush(end_lsn()).
  Status FlushAll() { return Flush(end_lsn()); }

  // Reads one record whose Insert has returned (e.g. to undo it): from the log buffer if it
  // is still there (a rollback of a recent transaction reads and syncs nothing), else from
  // the log file, flushing first if it is not yet durable.
  Status ReadRecord(Lsn lsn, LogRecordBuf* record);
  // A reader bounded at the current durable LSN (recovery, log dumps).
  std::unique_ptr<LogReader> NewReader();

  // Records the begin LSN of a complete checkpoint as the place Open starts scanning. The
  // checkpoint's end record must be durable.
  Status SetCheckpoint(Lsn checkpoint_begin);
  // Retires the segments entirely below oldest_needed, which must be a record's LSN (it becomes
  // the scan start when there is no checkpoint hint) and durable.
  Status Truncate(Lsn oldest_needed);
  // Flushes, then reads the whole retained log from start_lsn() to the end and checks every
  // record (log_verify.cc): Corruption naming the LSN of the first bad one. Open reads only
  // from the checkpoint hint on, so this is what finds damage in the records before it.
  Status Verify(LogVerifyReport* report);

  Lsn start_lsn();  // oldest record needed
  Lsn checkpoint_lsn();
  bool read_only() const { return options_.read_only; }
  // Bytes of a torn tail Open found after the end (a read-write open cuts them, so 0 there).
  uint64_t tail_bytes() const { return tail_bytes_; }
  Lsn end_lsn() const { return Lsn(insert_.load(std::memory_order_relaxed)); }
  // The same, read with acquire: what any inserter stored before reserving space below the
  // returned end is visible to the caller (Insert's reservation is a release).
  Lsn end_lsn_acquire() const { return Lsn(insert_.load(std::memory_order_acquire)); }
  Lsn written_lsn() const { return Lsn(written_.load(std::memory_order_acquire)); }
  Lsn durable_lsn() const { return Lsn(durable_.load(std::memory_order_acquire)); }
  const LogOptions& options() const { return options_; }
  const SegmentGeometry& geometry() const { return dir_->geometry(); }
  LogStats stats() const;
  // OK, or the sticky fatal status.
  // Inline: every logged change asks (TxnManager::health).
  Status health() const {
    if (fatal_.load(std::memory_order_acquire)) [[unlikely]] {
      return Refuse();
    }
    return Status::OK();
  }
  bool CheckInvariants() const;

  // Abandons the log as a crashed process would: the flusher stops without a final write or
  // sync and the control file is not updated. Waiters are woken with `why` (a fatal status)
  // and every later call is refused. For a database whose Open failed, which must leave the
  // files as the failure found them.
  void Abandon(Status why);
  // Test hook: Abandon, paired with FaultInjectionFileSystem::SimulateCrash.
  void TEST_Kill();

 private:
  LogManager(io::FileSystem* fs, const LogOptions& options, std::shared_ptr<LogDirectory> dir);

  // --- Open (log_open.cc) ---
  Status FindEnd(LogOpenReport* report);
  Status ClassifyStop(uint64_t stop, const LogReader::Probe& probe, LogReader* reader,
                      uint64_t* cut_until);
  Status CutTail(uint64_t end, uint64_t cut_until, LogOpenReport* report);
  Status ZeroRange(const std::shared_ptr<io::File>& file, uint64_t segment, uint64_t from,
                   uint64_t to);
  Status SyncScanned(uint64_t scan_start, uint64_t end);
  Status Start(uint64_t end);
  void SetPositions(uint64_t end);
  Status RefuseReadOnly(const char* what) const;

  // --- Insert path (log_manager.cc) ---
  // Copy the record reserved at `start` (ring offset `offset`, `length` bytes with header and
  // padding) into the ring and publish it: CopyWhole when it fits at once and is one payload.
  void CopyWhole(uint64_t start, uint64_t offset, uint64_t length, const LogRecord& record);
  Status CopyInPieces(uint64_t start, uint64_t offset, uint64_t length, const LogRecord& record);
  uint64_t CopyToRing(uint64_t offset, const char* src, size_t n);
  void CopyFromRing(uint64_t lsn, char* dst, size_t n) const;
  // ReadRecord from the ring: false if the record may no longer be there.
  bool ReadFromRing(uint64_t at, LogRecordBuf* record) const;
  // from_offset: from % ring_bytes_, which the caller has at hand.
  void Publish(uint64_t from, uint64_t from_offset, uint64_t to, bool continued);
  Status WaitForSpace(uint64_t pos);
  void RequestDurable(uint64_t lsn);
  void ArmAsyncDeadline();
  uint64_t ReuseLimit() const;
  uint32_t SpareSegments() const;  // options_.spare_bytes in this log's segments
  Status Refuse() const;

  // --- Flusher (log_flusher.cc) ---
  void FlusherMain();
  bool FlushRound(bool stopping);
  uint64_t AdvanceFilled();
  // SM_PARANOID: the record [start, end), just published whole, reads back from the ring as a
  // valid record written at `start` (header and checksum). Flusher only; start >= written.
  bool CheckPublishedRecord(uint64_t start, uint64_t end) const;
  // Invariant 4: every segment that [durable, written) touches is in dirty_segments_.
  bool DirtySegmentsCover(uint64_t durable, uint64_t written) const;
  Status WriteOut(uint64_t to);
  Status WriteChunk(uint64_t from, uint64_t to);
  void StageTail(uint64_t from, uint64_t to);
  Status WriteBytes(io::File* file, uint64_t offset, const void* data, size_t n);
  Status SyncDirty();
  Status SegmentForWrite(uint64_t segment_start, std::shared_ptr<io::File>* file);
  void PrepareAhead();
  size_t ReleaseDurable(uint64_t lsn);  // returns the waiters it woke
  void SetFatal(const Status& cause);
  std::chrono::steady_clock::time_point NextWake() const;
  // Asks for the ring lines from pos on (the next record's) for writing (Insert).
  void PrefetchNextRecord(uint64_t pos) const;
  static constexpr int kPrefetchLines = 4;
  // How soon the flusher looks again while a request lies beyond its walk (NextWake).
  static constexpr std::chrono::microseconds kUnpublishedPoll{50};

  io::FileSystem* const fs_;
  const LogOptions options_;
  const std::shared_ptr<LogDirectory> dir_;
  const uint64_t ring_bytes_;
  const uint64_t slot_count_;
  const uint64_t eager_write_bytes_;  // filled - written that wakes the flusher to write
  io::AlignedBuffer ring_;
  // Completion slots (Insert protocol, step 3). Release stores by inserters, seq_cst loads by
  // the flusher: release/acquire publishes the ring bytes (see Publish for the requests).
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;
  uint64_t open_end_ = kFirstLsn;  // where the log ended at open
  uint64_t tail_bytes_ = 0;        // set by Open (FindEnd), then constant

  // The reservation counter, alone on its line: every Insert does a fetch_add here. relaxed:
  // the reservation orders nothing; publication goes through slots_.
  alignas(64) std::atomic<uint64_t> insert_{kFirstLsn};
  // Flusher progress. release stores by the flusher after the bytes are written / synced;
  // acquire loads by inserters (ring reuse) and committers.
  alignas(64) std::atomic<uint64_t> written_{kFirstLsn};
  std::atomic<uint64_t> durable_{kFirstLsn};
  std::atomic<uint64_t> filled_{kFirstLsn};  // published copy of the flusher's walk (stats)
  // Requests to the flusher, raised by FetchMax (a full barrier) and then a Post. An inserter
  // that publishes a piece below a request wakes the flusher if it sees the request; if the
  // flusher walked before the piece was published and the inserter did not see the request,
  // the flusher finds the request beyond its walk and polls (NextWake) instead of sleeping.
  alignas(64) std::atomic<uint64_t> durable_request_{kFirstLsn};
  std::atomic<uint64_t> write_request_{kFirstLsn};  // inserters waiting for ring space
  // The earliest async-commit deadline (steady_clock ns; 0: none armed). seq_cst, with a fence
  // in ArmAsyncDeadline: a commit that sees it armed relies on the flusher's later exchange
  // and walk.
  std::atomic<int64_t> async_deadline_ns_{0};
  // When the latest durable request was made (steady_clock ns): the flusher's GroupGather ends
  // a hold once requests stop coming. relaxed: a hint; the request itself wakes the flusher.
  std::atomic<int64_t> last_request_ns_{0};
  // Close and TEST_Kill tell the flusher to leave (seq_cst / release stores, read after the
  // Baton wakes it; the thread join orders everything else).
  std::atomic<bool> stop_{false};
  std::atomic<bool> killed_{false};  // leave without a final round
  std::atomic<bool> fatal_{false};   // release after fatal_status_ is set; acquire to read it
  threads::Baton wake_;              // the flusher's alarm; posted by anyone, waited by it

  LsnWaitList durable_waiters_;
  LsnWaitList space_waiters_;

  // Flusher-private (and Open's before the flusher starts).
  std::thread flusher_;
  uint64_t filled_walk_ = kFirstLsn;
  uint64_t walk_record_start_ = kFirstLsn;  // where the record being walked began
  std::vector<std::shared_ptr<io::File>> dirty_segments_;
  std::shared_ptr<io::File> current_segment_;
  uint64_t current_segment_start_ = 0;
  std::unique_ptr<SegmentPreparer> preparer_;  // null: read-only, or not started
  bool next_segment_requested_ = false;        // of preparer_, for the current segment's end
  // kStagedWriteBytes: a write that ends in a partial block is copied here whole, up to this
  // size (larger ones stage only the partial block), so that it goes out in one call.
  static constexpr size_t kStagedWriteBytes = 64u << 10;
  io::AlignedBuffer staging_;
  GroupGather gather_;          // when a durable request's sync may wait for its group
  int64_t gather_hold_ns_ = 0;  // the current hold's end (steady_clock ns); 0: none

  mutable threads::SpinLock fatal_lock_;
  Status fatal_status_;   // set once; GUARDED_BY(fatal_lock_)
  bool started_ = false;  // the flusher runs (Open succeeded)
  // Set by Close and TEST_Kill; checked by every call. release/acquire: a caller that sees it
  // set sees the state Close left.
  std::atomic<bool> closed_{false};
  threads::Mutex control_mu_;  // serializes control-file updates (checkpoint, truncate, close)

  // Statistics. Counted by the flusher unless noted; relaxed: they order nothing.
  struct Counters {
    std::atomic<uint64_t> records{0}, writes{0}, bytes_written{0}, syncs{0};
    std::atomic<uint64_t> commits[kCommitModeCount]{};     // by committers
    std::atomic<uint64_t> flush_waits{0}, space_waits{0};  // by waiters
    std::atomic<uint64_t> waiters_released{0}, max_group{0};
    std::atomic<uint64_t> group_histogram[LogStats::kGroupBuckets]{};
    std::atomic<uint64_t> segments_created{0}, segments_removed{0};
  };
  Counters counters_;
};

}  // namespace sm::log
