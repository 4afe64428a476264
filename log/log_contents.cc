// SummarizeLog (log_contents.h).
#include "log/log_contents.h"

#include <memory>

#include "log/log_dir.h"
#include "log/log_reader.h"

namespace sm::log {

Status SummarizeLog(io::FileSystem* fs, const std::string& dir, LogContents* contents) {
  *contents = LogContents();
  LogDirectoryOptions options;
  options.read_only = true;
  std::unique_ptr<LogDirectory> directory;
  SM_TRY(LogDirectory::Open(fs, dir, options, &directory));
  contents->start = Lsn(directory->control().start_lsn);
  LogReader reader(std::move(directory));
  SM_TRY(reader.Seek(contents->start));
  LogRecordView record;
  for (;;) {
    Status s = reader.Next(&record);
    if (s.IsNotFound()) {
      s.PermitUnchecked();
      break;
    }
    SM_TRY(s);
    LogContents::Tally& tally = contents->by_type[{record.type, record.subtype}];
    ++tally.records;
    tally.bytes += record.length;
    ++contents->total.records;
    contents->total.bytes += record.length;
  }
  contents->end = reader.position();
  return Status::OK();
}

}  // namespace sm::log
