// LogReader: reads log records back - a forward scan from an LSN across segments, and random
// reads of single records by LSN (undo chains).
//
// Owns: a read window (an aligned buffer holding up to window_bytes of one segment) and a
// scratch buffer where records that straddle a window or segment boundary are reassembled.
//
// Two modes, set by SetEnd:
//   bounded (end = an LSN known to be the end of a valid log, e.g. LogManager::Open's end or the
//            durable LSN of a live log): an invalid record below the end is Corruption naming its
//            LSN; reaching the end is NotFound.
//   unbounded (end = Lsn::Invalid(), the default of a reader opened on a directory): the first
//            position that holds no valid record ends the log (NotFound, and last_stop() says
//            what was found there). LogManager::Open uses this mode and then decides whether
//            that stop is a torn tail or corruption (log_manager.h).
// In both modes a record whose checksum matches but whose links point forward is Corruption, and
// a failed read is the file's IOError.
//
// A record view returned by Next or ReadAt points into the reader's buffers and stays valid
// until the next call on the reader; LogRecordBuf::Assign copies it.
//
// Thread/fiber safety: one reader is used by one fiber or thread at a time; any number of
// readers may work on one directory concurrently, also while a LogManager appends to it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "log/log_dir.h"
#include "log/log_record.h"
#include "sm/common/status.h"
#include "sm/io/aligned_buffer.h"

namespace sm::log {

class LogReader {
 public:
  static constexpr size_t kDefaultWindowBytes = 1 << 20;

  // A reader over the log in `dir`, opened read-only (no LogManager needed), unbounded.
  static Status Open(io::FileSystem* fs, const std::string& dir,
                     std::unique_ptr<LogReader>* reader);
  explicit LogReader(std::shared_ptr<LogDirectory> dir, size_t window_bytes = kDefaultWindowBytes);

  // Sets the end bound (Lsn::Invalid(): unbounded). Forgets buffered bytes, so a reader of a
  // live log sees what was written since.
  void SetEnd(Lsn end);
  Lsn end() const { return end_; }

  // Positions the scan at `lsn`, which must be a record's LSN (or the end).
  Status Seek(Lsn lsn);
  Lsn position() const { return Lsn(pos_); }

  // Reads the record at the scan position and moves past it. NotFound at the end of the log.
  Status Next(LogRecordView* record);
  // Reads the record at `lsn`; Corruption (naming lsn) if no valid record is there, NotFound if
  // lsn is at or past the end bound.
  Status ReadAt(Lsn lsn, LogRecordView* record);

  // What was found at a position (unbounded analysis, used by LogManager::Open).
  struct Probe {
    RecordCheck check = RecordCheck::kBadHeader;
    uint32_t length = 0;  // the header's length if the header is plausible, else 0
    LogRecordView view;   // set when check == kValid
  };
  // Examines `pos` without regard to the end bound. Fails only on a read error.
  Status ProbeAt(uint64_t pos, Probe* probe);
  // The stop of the last unbounded Next that returned NotFound.
  const Probe& last_stop() const { return last_stop_; }

  // Every valid record at an 8-byte aligned position in [from, end of the last segment file),
  // found by checking each position for a header naming it: used to tell a torn tail from
  // corruption in the middle of the log.
  struct Survey {
    uint64_t valid_records = 0;
    uint64_t first_valid_lsn = 0;  // 0: none
    uint64_t last_valid_end = 0;   // end of the last valid record found (0: none)
    uint64_t max_durable_hint = 0;
  };
  Status SurveyAfter(uint64_t from, Survey* survey);

  uint64_t bytes_read() const { return bytes_read_; }

 private:
  // Points *out at the n bytes at pos (in the window or reassembled in scratch_). *available is
  // false if some of them do not exist (missing or bad segment, short file, past the bound).
  Status Fetch(uint64_t pos, size_t n, const char** out, bool* available);
  Status Refill(uint64_t pos);
  Status Assemble(uint64_t pos, size_t n, bool* available);
  Status Classify(uint64_t pos, bool bounded, LogRecordView* record);
  uint64_t window_end() const { return win_lo_ + win_len_; }

  std::shared_ptr<LogDirectory> dir_;
  const size_t window_bytes_;
  io::AlignedBuffer window_;
  uint64_t win_lo_ = 0;   // LSN of window_[0]
  uint64_t win_len_ = 0;  // valid bytes in the window (0: empty)
  std::string scratch_;
  Lsn end_;
  uint64_t pos_ = kFirstLsn;
  Probe last_stop_;
  uint64_t bytes_read_ = 0;
};

}  // namespace sm::log
