// LogManager::Verify: a full read of the retained log, for `sm_admin verify` and
// DatabaseImpl::VerifyWithReport.
//
// Owns: the checks a record gets beyond those of the reader (log_reader.h, which already
// rejects a bad checksum, a record not at its own position, impossible lengths and links that
// point forward).
//
// Why it exists: Open scans only from the control file's checkpoint hint, so damage in records
// between the log's start LSN and that hint (still needed by undo of a long transaction, or
// simply retained until the next truncation) would stay unseen until recovery needed them.
//
// Checks, over [start_lsn, end) where end is the insert position when Verify began:
//   1. Every position the scan reaches holds a valid record, and the last one ends exactly at
//      the end bound (the insert position when Verify began, flushed first). The reader is
//      bounded, so a bad record is Corruption naming its LSN.
//   2. Transaction chains: a record of transaction T whose prev_lsn lies inside the range must
//      name the previous record of T seen by this scan. A record with no predecessor starts a
//      chain (a transaction id reused after a restart begins with prev_lsn 0); a prev_lsn below
//      the range names a record that truncation has retired and cannot be checked.
//
// Concurrency: the scan holds control_mu_, so no checkpoint truncates the range meanwhile (a
// checkpoint's truncation waits for the scan); the bound is durable before the scan starts,
// and nothing below the durable LSN is rewritten. Inserts and commits proceed.
#include <string>
#include <unordered_map>

#include "log/log_manager.h"

namespace sm::log {

std::string LogVerifyReport::ToString() const {
  return "(log): LSN " + std::to_string(start_lsn.value()) + " to " +
         std::to_string(end_lsn.value()) + ", " + std::to_string(records) + " records, " +
         std::to_string(bytes) + " bytes in " + std::to_string(segments) +
         (segments == 1 ? " segment, " : " segments, ") + std::to_string(transactions) +
         " transaction chains";
}

namespace {

std::string At(const LogRecordView& record) {
  return "log record at LSN " + std::to_string(record.lsn.value());
}

// Check 2 for one record; `last` maps a transaction id to its last record seen.
Status CheckChain(const LogRecordView& record, uint64_t start,
                  std::unordered_map<uint64_t, uint64_t>* last) {
  if (!record.txn.valid()) return Status::OK();
  uint64_t prev = record.prev_lsn.value();
  auto it = last->find(record.txn.value());
  if (record.prev_lsn.valid() && prev >= start) {
    uint64_t expected = it == last->end() ? 0 : it->second;
    if (prev != expected) {
      return Status::Corruption(At(record) + ": transaction " + std::to_string(record.txn.value()) +
                                " links back to LSN " + std::to_string(prev) +
                                ", but its previous record is at " +
                                (expected == 0 ? std::string("none") : std::to_string(expected)));
    }
  }
  (*last)[record.txn.value()] = record.lsn.value();
  return Status::OK();
}

}  // namespace

Status LogManager::Verify(LogVerifyReport* report) {
  *report = LogVerifyReport();
  if (closed_.load(std::memory_order_acquire)) return Status::Closed("the log is closed");
  // The bound must be a record boundary (the durable LSN may lie inside a record still being
  // streamed): the insert position now, made durable.
  const uint64_t end = end_lsn().value();
  SM_TRY(Flush(Lsn(end)));
  std::lock_guard<threads::Mutex> guard(control_mu_);
  const uint64_t start = dir_->control().start_lsn;
  LogReader scan(dir_);
  LogReader* reader = &scan;
  reader->SetEnd(Lsn(end));
  report->start_lsn = Lsn(start);
  report->end_lsn = Lsn(end);
  if (start < end) {
    const SegmentGeometry& g = geometry();
    report->segments = (g.SegmentStart(end - 1) - g.SegmentStart(start)) / g.data_bytes() + 1;
  }
  SM_TRY(reader->Seek(Lsn(start)));
  std::unordered_map<uint64_t, uint64_t> last;
  LogRecordView record;
  for (;;) {
    Status s = reader->Next(&record);
    if (s.IsNotFound()) {
      s.PermitUnchecked();
      break;
    }
    SM_TRY(s);
    SM_TRY(CheckChain(record, start, &last));
    ++report->records;
    report->bytes += record.length;
  }
  report->transactions = last.size();
  if (reader->position().value() != end) {
    // The bound is a record boundary; stopping short of it means a record claims to run past
    // it, which no writer produces.
    return Status::Corruption("log record at LSN " + std::to_string(reader->position().value()) +
                              " runs past the end of the log (" + std::to_string(end) + ")");
  }
  return Status::OK();
}

}  // namespace sm::log
