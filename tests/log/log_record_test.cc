// Log record format: CRC32C, the record type table, header encoding and the validity checks
// (every damaged byte is noticed), segment header and control block codecs, and a round trip of
// every record type through a log on the fault file system.
#include "log/log_record.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sm/common/crc32c.h"
#include "log/log_format.h"
#include "tests/log/log_test_util.h"
#include "tests/test_util.h"

using namespace sm;
using namespace sm::log;

namespace {

// A record image as the inserter lays it out at `lsn`.
std::string EncodeImage(const LogRecord& record, uint64_t lsn, uint64_t hint = 0) {
  RecordHeader header;
  EncodeHeader(record, lsn, hint, PayloadCrc(record.payload), &header);
  std::string image(header.length, '\0');
  std::memcpy(image.data(), &header, sizeof(header));
  std::memcpy(image.data() + kRecordHeaderBytes, record.payload.data(), record.payload.size());
  return image;
}

RecordCheck Check(const std::string& image, uint64_t lsn) {
  RecordHeader header;
  std::memcpy(&header, image.data(), sizeof(header));
  RecordCheck c = CheckHeader(header, lsn);
  if (c != RecordCheck::kValid) return c;
  if (header.length > image.size()) return RecordCheck::kTruncated;
  return CheckRecord(image.data());
}

}  // namespace

TEST_CASE("crc32c matches the standard check value and chains", "[unit][log]") {
  const char* digits = "123456789";
  REQUIRE(Crc32c(digits, 9) == 0xE3069283u);
  REQUIRE(Crc32cPortable(digits, 9) == 0xE3069283u);
  std::mt19937_64 rng(7);
  std::string data(10000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 10000}) {
    REQUIRE(Crc32c(data.data(), n) == Crc32cPortable(data.data(), n));
    size_t half = n / 3;
    REQUIRE(Crc32c(data.data() + half, n - half, Crc32c(data.data(), half)) ==
            Crc32c(data.data(), n));
  }
}

TEST_CASE("the record type table names every type and its kind", "[unit][log]") {
  REQUIRE(kLogFormatVersion >= 1);
  REQUIRE_FALSE(IsKnownType(0));
  REQUIRE(IsKnownType(static_cast<uint8_t>(RecordType::kTxnCommit)));
  REQUIRE(std::string(RecordTypeName(RecordType::kTxnCommit)) == "txn_commit");
  REQUIRE(KindOf(RecordType::kTxnCommit) == RecordKind::kTxnControl);
  REQUIRE(KindOf(RecordType::kCompensation) == RecordKind::kCompensation);
  REQUIRE(KindOf(RecordType::kPageUndoRedo) == RecordKind::kUndoRedo);
  REQUIRE(KindOf(RecordType::kPageRedo) == RecordKind::kRedoOnly);
  REQUIRE(KindOf(RecordType::kCheckpointEnd) == RecordKind::kCheckpoint);
  REQUIRE(std::string(RecordKindName(RecordKind::kUndoRedo)) == "undo-redo");
  int known = 0;
  for (int t = 0; t < 256; ++t) known += IsKnownType(static_cast<uint8_t>(t)) ? 1 : 0;
  REQUIRE(known == 10);
  REQUIRE(std::string(CommitModeName(CommitMode::kAsync)) == "async");
}

TEST_CASE("a record round-trips and every damaged byte is detected", "[unit][log]") {
  std::string payload = logtest::MakePayload(3, 4, 37);  // 37: exercises padding
  LogRecord record;
  record.type = RecordType::kPageUndoRedo;
  record.subtype = 9;
  record.flags = kFlagSystemTxn;
  record.txn = TxnId(77);
  record.prev_lsn = Lsn(4096);
  record.page = PageId(12345);
  record.payload = payload;
  const uint64_t lsn = 8192;
  std::string image = EncodeImage(record, lsn, 4096);
  REQUIRE(image.size() == RecordBytes(37));
  REQUIRE(image.size() % kRecordAlignment == 0);
  REQUIRE(Check(image, lsn) == RecordCheck::kValid);
  REQUIRE(Check(image, lsn + 8) == RecordCheck::kBadHeader);  // not written for that position

  LogRecordView view;
  DecodeRecord(image.data(), &view);
  REQUIRE(view.lsn == Lsn(lsn));
  REQUIRE(view.type == RecordType::kPageUndoRedo);
  REQUIRE(view.subtype == 9);
  REQUIRE(view.flags == kFlagSystemTxn);
  REQUIRE(view.txn == TxnId(77));
  REQUIRE(view.prev_lsn == Lsn(4096));
  REQUIRE(view.page == PageId(12345));
  REQUIRE(view.durable_hint == Lsn(4096));
  REQUIRE(view.payload == payload);
  REQUIRE(view.end_lsn() == Lsn(lsn + image.size()));

  // Every single-byte change anywhere in the record (padding included) makes it invalid.
  for (size_t i = 0; i < image.size(); ++i) {
    std::string damaged = image;
    damaged[i] ^= 0x20;
    INFO("byte " << i);
    REQUIRE(Check(damaged, lsn) != RecordCheck::kValid);
  }
  // A record cut short is not valid either.
  REQUIRE(Check(image.substr(0, image.size() - 8), lsn) == RecordCheck::kTruncated);
}

TEST_CASE("a checksummed record whose links point forward is corruption", "[unit][log]") {
  LogRecord record = logtest::CommentRecord("x", TxnId(1), Lsn(9000));
  std::string image = EncodeImage(record, 8192);
  REQUIRE(Check(image, 8192) == RecordCheck::kBadLinks);
  REQUIRE(Check(EncodeImage(logtest::CommentRecord("x"), 8192, 8200), 8192) ==
          RecordCheck::kBadLinks);  // a durable hint above its own position
}

TEST_CASE("segment header and control block codecs detect damage", "[unit][log]") {
  std::vector<char> block(kLogBlockBytes);
  EncodeSegmentHeader(SegmentHeader{1 << 20, 4096 + (1 << 20) - 4096}, block.data());
  SegmentHeader header;
  REQUIRE(DecodeSegmentHeader(block.data(), "seg", &header).ok());
  REQUIRE(header.segment_bytes == 1 << 20);
  block[20] ^= 1;
  REQUIRE(DecodeSegmentHeader(block.data(), "seg", &header).IsCorruption());

  ControlBlock control{65536, 8192, 12288, 16384};
  EncodeControl(control, block.data());
  ControlBlock back;
  REQUIRE(DecodeControl(block.data(), "ctl", &back).ok());
  REQUIRE(back.start_lsn == 8192);
  REQUIRE(back.checkpoint_lsn == 12288);
  REQUIRE(back.durable_hint == 16384);
  REQUIRE(DecodeSegmentHeader(block.data(), "seg", &header).IsCorruption());  // wrong magic

  uint64_t start = 0;
  REQUIRE(ParseSegmentFileName(SegmentFileName(0x1234000), &start));
  REQUIRE(start == 0x1234000);
  REQUIRE_FALSE(ParseSegmentFileName("log.control", &start));
  REQUIRE(ParseSpareFileName(SpareFileName(77), &start));
  REQUIRE(start == 77);
  SegmentGeometry g(64 * 1024);
  REQUIRE(g.SegmentStart(kFirstLsn) == kFirstLsn);
  REQUIRE(g.SegmentStart(kFirstLsn + g.data_bytes()) == kFirstLsn + g.data_bytes());
  REQUIRE(g.FileOffset(kFirstLsn, 5000) == 5000);
  REQUIRE(SegmentGeometry::Validate(1000).IsInvalidArgument());
}

TEST_CASE("every record type round-trips through a log on the fault file system", "[unit][log]") {
  io::FaultInjectionFileSystem fs(1);
  auto log = logtest::OpenLog(&fs, logtest::SmallOptions());
  std::vector<std::pair<Lsn, std::string>> written;
  Lsn prev;
  int t = 0;
  for (uint8_t raw = 1; raw < 255; ++raw) {
    if (!IsKnownType(raw)) continue;
    std::string payload = logtest::MakePayload(raw, 0, 16 * raw);
    LogRecord r;
    r.type = static_cast<RecordType>(raw);
    r.subtype = raw;
    r.txn = TxnId(42);
    r.prev_lsn = prev;
    r.page = PageId(raw * 10);
    r.undo_next = r.type == RecordType::kCompensation ? prev : Lsn::Invalid();
    r.payload = payload;
    Lsn lsn;
    REQUIRE(log->Insert(r, &lsn).ok());
    written.emplace_back(lsn, payload);
    prev = lsn;
    ++t;
  }
  // Random reads (the undo path) before and after the records are durable.
  LogRecordBuf buf;
  REQUIRE(log->ReadRecord(written.back().first, &buf).ok());
  REQUIRE(buf.view().payload == written.back().second);
  REQUIRE(log->Close().ok());

  auto records = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(records.size() == written.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const LogRecordView& v = records[i].view();
    REQUIRE(v.lsn == written[i].first);
    REQUIRE(v.payload == written[i].second);
    REQUIRE(v.txn == TxnId(42));
    REQUIRE(v.subtype == static_cast<uint8_t>(v.type));
    REQUIRE(v.page == PageId(v.subtype * 10));
    REQUIRE(v.prev_lsn == (i == 0 ? Lsn::Invalid() : written[i - 1].first));
  }
}

TEST_CASE("invalid inserts are refused before they take log space", "[unit][log]") {
  io::FaultInjectionFileSystem fs(2);
  auto log = logtest::OpenLog(&fs, logtest::SmallOptions());
  Lsn lsn;
  LogRecord bad = logtest::CommentRecord("x");
  bad.type = RecordType::kInvalid;
  REQUIRE(log->Insert(bad, &lsn).IsInvalidArgument());
  bad = logtest::CommentRecord("x");
  bad.flags = 0x8000;
  REQUIRE(log->Insert(bad, &lsn).IsInvalidArgument());
  static const char one_byte[1] = {};
  // Longer than the format allows (the bytes are never read: the size is checked first).
  REQUIRE(
      log->Insert(logtest::CommentRecord(std::string_view(one_byte, kMaxPayloadBytes + 1)), &lsn)
          .IsInvalidArgument());
  REQUIRE(log->end_lsn() == Lsn(kFirstLsn));
  REQUIRE(log->Close().ok());
}
