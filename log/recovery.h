// ARIES restart recovery: the checkpoint record format and the three-pass driver (analysis,
// redo, undo) that runs on a freshly opened log.
//
// Owns: the payload of kCheckpointEnd records (the transaction table and the dirty page table
// of a fuzzy checkpoint), the recovered transaction table, the order of the passes, and the
// records the driver itself writes during undo (kTxnAbort when a loser's rollback begins,
// kTxnEnd when it is finished). It owns no page and no record format of the layers above: page
// records reach the layer that registered them through RecoveryTarget (implemented in sm/txn),
// so log/ includes none of their headers.
//
// The passes (Mohan et al., ARIES, 1992, simplified where noted):
//   Analysis  starts at the control file's checkpoint (LogManager::checkpoint_lsn(); else at
//             start_lsn() with empty tables), loads the tables from the first kCheckpointEnd
//             whose begin_lsn is that checkpoint, and scans to the end of the log:
//               - a record with a txn id enters the table (state active) and sets its last_lsn;
//                 an undo-redo record sets undo_next to itself, a compensation record to its
//                 undo_next_lsn; other records of the transaction (begin, abort, commit,
//                 redo-only) leave undo_next as it was: they have nothing to undo. A record at
//                 or below the transaction's last_lsn (written between the checkpoint's begin
//                 and end records, and already in the checkpoint's table) moves neither LSN;
//               - kTxnCommit marks the transaction committed, kTxnAbort aborting, kTxnEnd
//                 removes it (also when the checkpoint's table already reflects the record);
//               - comments and checkpoint records belong to no transaction and no page;
//               - a page record whose page is not in the dirty page table enters it with
//                 rec_lsn = its LSN (for the report; redo does not depend on it, see below).
//             The next transaction id is one above the largest seen (or the checkpoint's).
//   Redo      repeats history from redo_lsn = min(checkpoint begin, rec_lsn of every page in the
//             checkpoint's dirty page table) (start_lsn without a checkpoint): every page record
//             (kinds kRedoOnly, kUndoRedo, kCompensation) goes to RecoveryTarget::Redo, which
//             applies it to each page it names that does not reflect it yet (page LSN test). Redo
//             does not skip records by the analysis dirty page table: the page LSN test decides,
//             and records that name several pages (structure changes) are handled alike.
//   Undo      writes kTxnAbort for each loser (transaction neither committed nor ended) whose
//             rollback had not begun, then rolls the losers back together, always
//             taking the largest undo_next first: an undo-redo record goes to
//             RecoveryTarget::Undo, which undoes it logically and logs a compensation record
//             whose undo_next is the record's prev_lsn; a compensation record makes undo jump to
//             its undo_next; any other record moves undo to its prev_lsn; a transaction whose
//             undo_next reaches 0 gets kTxnEnd. Committed
//             transactions without an end record get one too. Every record written is flushed
//             before Recover returns.
//
// Idempotence: a crash at any point of recovery leaves a log that recovers to the same state.
// Redo writes no log records; undo writes compensation records that the next redo repeats and
// whose undo_next makes the next undo continue where this one stopped.
//
// Thread/fiber safety: Recover runs alone, before the database admits transactions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "log/log_record.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"

namespace sm::log {

class LogManager;

// The state of a transaction in the recovered transaction table and in a checkpoint.
enum class TxnStatus : uint8_t {
  kActive = 1,     // loser if the log ends here
  kCommitted = 2,  // commit record seen, no end record yet
  kAborting = 3,   // rollback began (kTxnAbort) but did not finish: a loser
};
const char* TxnStatusName(TxnStatus status);

struct RecoveredTxn {
  TxnId id;
  TxnStatus status = TxnStatus::kActive;
  Lsn first_lsn;  // its first record: the log must keep everything from here while it lives
  Lsn last_lsn;   // its latest record (prev_lsn of the next one it writes)
  Lsn undo_next;  // the next record to undo; Lsn::Invalid(): nothing left to undo
};

struct DirtyPage {
  PageId page;
  Lsn rec_lsn;  // no change to the page below this LSN is missing from its disk image
};

// The payload of a kCheckpointEnd record.
struct CheckpointData {
  Lsn begin_lsn;     // the matching kCheckpointBegin record
  TxnId next_txn_id;  // no transaction id below this will be handed out again
  std::vector<RecoveredTxn> txns;
  std::vector<DirtyPage> dirty_pages;

  // The LSN redo must start at for this checkpoint: min(begin_lsn, every rec_lsn).
  Lsn RedoLsn() const;
  // The oldest LSN the log must keep: min(RedoLsn(), every first_lsn).
  Lsn OldestNeeded() const;
};

std::string EncodeCheckpoint(const CheckpointData& data);
// Corruption (naming the field) if `payload` is not a well-formed checkpoint.
Status DecodeCheckpoint(std::string_view payload, CheckpointData* data);

// What the layers above do for recovery (implemented by sm/txn's TxnManager).
class RecoveryTarget {
 public:
  virtual ~RecoveryTarget() = default;
  // Redo pass: applies a page record to every page it names that does not reflect it yet (the
  // page LSN test; sm/ stamps a page with the end LSN of the last record applied, as
  // PostgreSQL does, so the WAL rule flushes whole records). *pages_applied: pages changed.
  virtual Status Redo(const LogRecordView& record, uint32_t* pages_applied) = 0;
  // Between redo and undo: the target checks that redo left every page whole (e.g. that each
  // torn page was rebuilt from a full image); an error stops recovery before undo.
  virtual Status EndRedo() { return Status::OK(); }
  // Undo pass: undoes the undo-redo record `record` of loser `txn` logically, logging a
  // compensation record with prev_lsn = txn->last_lsn and undo_next = record.prev_lsn, and
  // sets txn->last_lsn to that record's LSN.
  virtual Status Undo(RecoveredTxn* txn, const LogRecordView& record) = 0;
};

struct RecoveryOptions {
  bool undo = true;  // false: stop after redo (tests and log dumps); losers stay in the report
  // Analysis only (a read-only open): nothing is redone, undone or written; the report's
  // unfinished, losers and dirty_pages say whether a full recovery would have work to do.
  bool analysis_only = false;
};

struct RecoveryReport {
  Lsn checkpoint_lsn;  // the checkpoint analysis started from (invalid: none)
  Lsn analysis_lsn;    // where analysis started reading
  Lsn redo_lsn;        // where redo started
  Lsn end_lsn;         // the end of the log after recovery
  uint64_t analysis_records = 0;
  uint64_t analysis_page_records = 0;  // of those, page records (also ones naming no page)
  uint64_t redo_records = 0;  // page records passed to Redo
  uint64_t redo_pages_applied = 0;
  uint64_t undo_records = 0;  // records passed to Undo
  uint64_t redo_bytes = 0;    // log bytes scanned by redo
  uint64_t winners = 0;       // committed transactions seen by analysis
  std::vector<TxnId> losers;  // rolled back (or left, if !undo)
  uint64_t dirty_pages = 0;   // analysis dirty page table size
  // Transactions analysis left without an end record: losers, and winners whose end record
  // is missing (recovery writes one).
  uint64_t unfinished = 0;
  TxnId next_txn_id;
  double analysis_seconds = 0, redo_seconds = 0, undo_seconds = 0;

  bool nothing_to_do() const { return redo_records == 0 && losers.empty(); }
  // After analysis: whether redo or undo would have anything to do. No page record lies after
  // the checkpoint's begin and its dirty page table is empty (then redo, which starts there,
  // meets no page record), and every transaction has ended (no undo, no end record to write).
  bool analysis_clean() const {
    return analysis_page_records == 0 && dirty_pages == 0 && unfinished == 0;
  }
  std::string ToString() const;
};

// Runs analysis, redo and undo (if options.undo) on `log`, which has just been opened; only
// analysis if options.analysis_only (which also suits a read-only log).
Status Recover(LogManager* log, RecoveryTarget* target, const RecoveryOptions& options,
               RecoveryReport* report);

}  // namespace sm::log
