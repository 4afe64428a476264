// LogManager::Verify: the full read of the retained log that Open does not do (Open scans only
// from the checkpoint hint), and its transaction-chain check.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "log/log_format.h"
#include "log/log_manager.h"
#include "sm/io/testing/fault_file.h"
#include "tests/log/log_test_util.h"

using namespace sm;
using namespace sm::log;
using sm::io::FaultInjectionFileSystem;
using sm::logtest::Damage;
using sm::logtest::MakePayload;
using sm::logtest::SmallOptions;

namespace {


Lsn Append(LogManager* log, TxnId txn, Lsn prev, uint32_t seq) {
  std::string payload = MakePayload(1, seq, 150);
  Lsn lsn;
  REQUIRE(log->Insert(logtest::CommentRecord(payload, txn, prev), &lsn).ok());
  return lsn;
}

}  // namespace

TEST_CASE("log Verify reads the records before the checkpoint hint that Open skips",
          "[unit][log]") {
  FaultInjectionFileSystem fs(21);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  const SegmentGeometry g = log->geometry();
  std::vector<Lsn> lsns;  // three interleaved transaction chains
  for (uint32_t i = 0; i < 400; ++i) {
    lsns.push_back(Append(log.get(), TxnId(1 + i % 3), i >= 3 ? lsns[i - 3] : Lsn::Invalid(), i));
  }
  REQUIRE(log->FlushAll().ok());
  REQUIRE(log->SetCheckpoint(lsns[350]).ok());
  LogVerifyReport report;
  REQUIRE(log->Verify(&report).ok());
  CHECK(report.records == 400);
  CHECK(report.transactions == 3);
  CHECK(report.segments > 1);
  CHECK(report.start_lsn == Lsn(kFirstLsn));
  REQUIRE(log->Close().ok());

  Damage(&fs, g, lsns[40].value() + 100, 1);
  log = logtest::OpenLog(&fs, SmallOptions());  // the damage lies before the scan's start
  Status s = log->Verify(&report);
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  CHECK(std::string(s.message()).find("LSN " + std::to_string(lsns[40].value())) !=
        std::string::npos);
  REQUIRE(log->Close().ok());
}

TEST_CASE("log Verify reports a transaction chain that skips a record", "[unit][log]") {
  FaultInjectionFileSystem fs(22);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  Lsn a = Append(log.get(), TxnId(7), Lsn::Invalid(), 0);
  Append(log.get(), TxnId(7), a, 1);
  Append(log.get(), TxnId(8), Lsn::Invalid(), 2);
  // A reused id starts a new chain.
  Lsn d = Append(log.get(), TxnId(7), Lsn::Invalid(), 3);
  Append(log.get(), TxnId(7), d, 4);
  LogVerifyReport report;
  REQUIRE(log->Verify(&report).ok());
  CHECK(report.records == 5);
  // Checksum-valid, links pointing backwards, yet not to the transaction's previous record.
  Lsn bad = Append(log.get(), TxnId(7), a, 5);
  Status s = log->Verify(&report);
  INFO(s.ToString());
  REQUIRE(s.IsCorruption());
  CHECK(std::string(s.message()).find("LSN " + std::to_string(bad.value())) != std::string::npos);
  REQUIRE(log->Close().ok());
}
