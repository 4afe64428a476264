// SummarizeLog: the per-type counts of a log read back without a LogManager (sm_admin log).
#include <catch2/catch.hpp>
#include <string>

#include "log/log_contents.h"
#include "log/log_manager.h"
#include "sm/io/testing/fault_file.h"
#include "tests/log/log_test_util.h"

using namespace sm;
using namespace sm::log;
using sm::io::FaultInjectionFileSystem;
using sm::logtest::MakePayload;
using sm::logtest::SmallOptions;

namespace {

// Appends a record and returns its length on disk.
uint64_t Append(LogManager* log, RecordType type, uint8_t subtype, size_t payload_bytes,
                uint32_t seq) {
  std::string payload = MakePayload(1, seq, payload_bytes);
  LogRecord record = logtest::CommentRecord(payload, TxnId(1 + seq));
  record.type = type;
  record.subtype = subtype;
  Lsn start, end;
  REQUIRE(log->Insert(record, &start, &end).ok());
  return end.value() - start.value();
}

}  // namespace

TEST_CASE("SummarizeLog counts the records and bytes of each type and sub-type",
          "[unit][log]") {
  FaultInjectionFileSystem fs(5);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  uint64_t comment_bytes = 0, redo_bytes = 0, commit_bytes = 0;
  for (uint32_t i = 0; i < 300; ++i) {  // several segments of SmallOptions
    comment_bytes += Append(log.get(), RecordType::kComment, 0, 40 + i % 90, i);
    redo_bytes += Append(log.get(), RecordType::kPageRedo, 7, 500, i);
    if (i % 3 == 0) commit_bytes += Append(log.get(), RecordType::kTxnCommit, 0, 0, i);
  }
  REQUIRE(log->FlushAll().ok());
  const Lsn end = log->end_lsn();
  REQUIRE(log->Close().ok());

  LogContents contents;
  Status s = SummarizeLog(&fs, logtest::kDir, &contents);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(contents.by_type.size() == 3);
  const auto& comments = contents.by_type[{RecordType::kComment, 0}];
  const auto& redos = contents.by_type[{RecordType::kPageRedo, 7}];
  const auto& commits = contents.by_type[{RecordType::kTxnCommit, 0}];
  CHECK(comments.records == 300);
  CHECK(comments.bytes == comment_bytes);
  CHECK(redos.records == 300);
  CHECK(redos.bytes == redo_bytes);
  CHECK(commits.records == 100);
  CHECK(commits.bytes == commit_bytes);
  CHECK(contents.total.records == 700);
  CHECK(contents.total.bytes == comment_bytes + redo_bytes + commit_bytes);
  CHECK(contents.start == Lsn(kFirstLsn));
  CHECK(contents.end == end);
}

TEST_CASE("SummarizeLog reports a missing log directory as an error", "[unit][log]") {
  FaultInjectionFileSystem fs(6);
  LogContents contents;
  Status s = SummarizeLog(&fs, "/nowhere/log", &contents);
  CHECK_FALSE(s.ok());
  CHECK(contents.total.records == 0);
}
