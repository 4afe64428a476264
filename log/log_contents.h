// SummarizeLog: what a log directory holds, counted per record type and sub-type, read without
// a LogManager (sm_admin log): which records fill the log, and how much of it each kind takes.
//
// Owns nothing beyond the call: it opens the directory read-only, reads from the control
// block's start LSN (where the retained log begins) to the first position that holds no valid
// record (an unbounded LogReader scan, as a recovery tool reads), and writes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "log/log_record.h"
#include "sm/common/ids.h"
#include "sm/common/status.h"
#include "sm/io/file.h"

namespace sm::log {

struct LogContents {
  struct Tally {
    uint64_t records = 0;
    uint64_t bytes = 0;  // on disk: headers, payloads and padding
  };
  std::map<std::pair<RecordType, uint8_t>, Tally> by_type;  // (type, sub-type)
  Tally total;
  Lsn start;  // the control block's start LSN
  Lsn end;    // where the scan stopped
};

// Fails with the directory's or a read's error; a stop at an invalid record is the end (the
// tail of a crashed run), as for LogReader's unbounded mode.
Status SummarizeLog(io::FileSystem* fs, const std::string& dir, LogContents* contents);

}  // namespace sm::log
