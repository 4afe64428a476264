// The log across crashes and faults: unsynced writes dropped or torn (every acknowledged record
// survives, the torn tail is cut, new records continue after it), corruption in the middle of
// the log reported as Corruption with its LSN, and the sticky fatal state after a failed write
// or sync.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "log/log_dir.h"
#include "log/log_format.h"
#include "log/log_manager.h"
#include "sm/io/aligned_buffer.h"
#include "tests/log/log_test_util.h"
#include "tests/test_util.h"
#include "threads/sync.h"

using namespace sm;
using namespace sm::log;
using sm::io::CrashMode;
using sm::io::FaultInjectionFileSystem;
using sm::io::FaultOp;
using sm::logtest::Damage;
using sm::logtest::MakePayload;
using sm::logtest::SmallOptions;

namespace {


struct Inserted {
  Lsn lsn;
  Lsn end;
  std::string payload;
};

Inserted InsertOne(LogManager* log, uint32_t writer, uint32_t seq, size_t bytes) {
  Inserted r;
  r.payload = MakePayload(writer, seq, bytes);
  REQUIRE(log->Insert(logtest::CommentRecord(r.payload, TxnId(writer)), &r.lsn, &r.end).ok());
  return r;
}

Status OpenStatus(io::FileSystem* fs, LogOpenReport* report = nullptr) {
  std::unique_ptr<LogManager> log;
  return LogManager::Open(fs, logtest::kDir, SmallOptions(), &log, report);
}

}  // namespace

TEST_CASE("a crash that drops unsynced writes keeps every durable record", "[crash][log]") {
  FaultInjectionFileSystem fs(11);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  std::vector<Inserted> records;
  for (uint32_t i = 0; i < 120; ++i) {
    records.push_back(InsertOne(log.get(), 1, i, 20 + i % 90));
    if (i % 10 == 9) REQUIRE(log->Flush(records.back().end).ok());
  }
  for (uint32_t i = 120; i < 160; ++i) {  // volatile: > buffer/4, so some are written, unsynced
    records.push_back(InsertOne(log.get(), 1, i, 200));
  }
  Lsn durable = log->durable_lsn();
  REQUIRE(durable == records[119].end);
  log->TEST_Kill();                            // the process dies...
  fs.SimulateCrash(CrashMode::kDropUnsynced);  // ...and the machine with it
  log.reset();

  LogOpenReport report;
  log = logtest::OpenLog(&fs, SmallOptions(), &report);
  REQUIRE(report.end_lsn == durable);
  REQUIRE(report.records_scanned == 120);
  Inserted next = InsertOne(log.get(), 2, 0, 64);
  REQUIRE(next.lsn == durable);
  REQUIRE(log->Close().ok());
  auto back = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(back.size() == 121);
  for (size_t i = 0; i < 120; ++i) REQUIRE(back[i].view().payload == records[i].payload);
  REQUIRE(back[120].view().payload == next.payload);
}

TEST_CASE("a torn last record is cut, the log continues over it, reopening agrees",
          "[crash][log]") {
  FaultInjectionFileSystem fs(12);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  const SegmentGeometry g = log->geometry();
  std::vector<Inserted> records;
  for (uint32_t i = 0; i < 30; ++i) records.push_back(InsertOne(log.get(), 1, i, 100));
  REQUIRE(log->FlushAll().ok());
  // The last group: inserted while the durable LSN stood at the end of record 29.
  for (uint32_t i = 30; i < 35; ++i) records.push_back(InsertOne(log.get(), 1, i, 100));
  REQUIRE(log->FlushAll().ok());
  log->TEST_Kill();  // no Close: the control file knows nothing of this session
  fs.SimulateCrash(CrashMode::kKeepUnsynced);
  log.reset();
  // A torn write in the last group: record 32 is garbled, 33 and 34 survived intact.
  Damage(&fs, g, records[32].lsn.value() + 70, 16);

  LogOpenReport report;
  log = logtest::OpenLog(&fs, SmallOptions(), &report);
  INFO(report.ToString());
  REQUIRE(report.end_lsn == records[32].lsn);
  REQUIRE(report.bytes_cut == records[34].end.value() - records[32].lsn.value());
  // A record of the same size lands exactly where 32 was and ends where 33 began: the remnants
  // were zeroed, so 33 must not come back behind it.
  Inserted again = InsertOne(log.get(), 2, 0, 100);
  REQUIRE(again.lsn == records[32].lsn);
  REQUIRE(again.end == records[33].lsn);
  REQUIRE(log->Close().ok());
  for (int i = 0; i < 2; ++i) {
    log = logtest::OpenLog(&fs, SmallOptions(), &report);
    REQUIRE(report.end_lsn == again.end);
    REQUIRE(report.bytes_cut == 0);
    REQUIRE(log->Close().ok());
  }
  auto back = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(back.size() == 33);
  REQUIRE(back[31].view().payload == records[31].payload);
  REQUIRE(back[32].view().payload == again.payload);
}

TEST_CASE("corruption in the middle of the log is reported with its LSN", "[crash][log]") {
  FaultInjectionFileSystem fs(13);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  const SegmentGeometry g = log->geometry();
  std::vector<Inserted> records;
  for (uint32_t i = 0; i < 100; ++i) records.push_back(InsertOne(log.get(), 1, i, 150));
  REQUIRE(log->FlushAll().ok());
  for (uint32_t i = 100; i < 200; ++i) records.push_back(InsertOne(log.get(), 1, i, 150));
  REQUIRE(log->FlushAll().ok());
  const std::string lsn_text = std::to_string(records[40].lsn.value());

  SECTION("after a crash: later records were written after it was synced") {
    log->TEST_Kill();
    fs.SimulateCrash(CrashMode::kKeepUnsynced);
    log.reset();
    SECTION("payload byte") { Damage(&fs, g, records[40].lsn.value() + 100, 1); }
    SECTION("length field") { Damage(&fs, g, records[40].lsn.value() + 4, 2); }
    SECTION("lsn field") { Damage(&fs, g, records[40].lsn.value() + 8, 8); }
    Status s = OpenStatus(&fs);
    INFO(s.ToString());
    REQUIRE(s.IsCorruption());
    REQUIRE(std::string(s.message()).find("LSN " + lsn_text) != std::string::npos);
  }
  SECTION("after a clean close: the control file's durable hint covers it") {
    REQUIRE(log->Close().ok());
    // Damage the last record: after a clean close even the tail is known durable.
    Damage(&fs, g, records[199].lsn.value() + 100, 1);
    Status s = OpenStatus(&fs);
    INFO(s.ToString());
    REQUIRE(s.IsCorruption());
    REQUIRE(std::string(s.message()).find(std::to_string(records[199].lsn.value())) !=
            std::string::npos);
  }
  SECTION("a bounded reader reports it too, with the LSN") {
    REQUIRE(log->Close().ok());
    Damage(&fs, g, records[40].lsn.value() + 100, 1);
    std::unique_ptr<LogReader> reader;
    REQUIRE(LogReader::Open(&fs, logtest::kDir, &reader).ok());
    reader->SetEnd(records[199].end);
    REQUIRE(reader->Seek(Lsn(kFirstLsn)).ok());
    LogRecordView view;
    Status s;
    int n = 0;
    while ((s = reader->Next(&view)).ok()) ++n;
    REQUIRE(n == 40);
    REQUIRE(s.IsCorruption());
    REQUIRE(std::string(s.message()).find("LSN " + lsn_text) != std::string::npos);
    REQUIRE(reader->ReadAt(records[40].lsn, &view).IsCorruption());
    REQUIRE(reader->ReadAt(records[41].lsn, &view).ok());
  }
  SECTION("a bounded reader whose end falls inside a record stops there, without corruption") {
    // A live log becomes durable piece by piece, so its durable end can cut a record; the
    // bytes past that end are not written yet (here: damaged).
    REQUIRE(log->Close().ok());
    const uint64_t cut = records[150].lsn.value() + 96;
    REQUIRE(cut < records[150].end.value());
    Damage(&fs, g, cut + 8, 1);
    std::unique_ptr<LogReader> reader;
    REQUIRE(LogReader::Open(&fs, logtest::kDir, &reader).ok());
    reader->SetEnd(Lsn(cut));
    REQUIRE(reader->Seek(Lsn(kFirstLsn)).ok());
    LogRecordView view;
    Status s;
    int n = 0;
    while ((s = reader->Next(&view)).ok()) ++n;
    INFO(s.ToString());
    REQUIRE(n == 150);
    REQUIRE(s.IsNotFound());
  }
}

TEST_CASE("a failed write or sync makes the log fatal, and it stays fatal", "[crash][log]") {
  FaultInjectionFileSystem fs(14);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  Inserted durable = InsertOne(log.get(), 1, 0, 100);
  Lsn commit;
  REQUIRE(log->Commit(TxnId(1), durable.lsn, CommitMode::kDurable, &commit).ok());
  Lsn durable_end = log->durable_lsn();

  FaultOp op = GENERATE(FaultOp::kWrite, FaultOp::kShortWrite, FaultOp::kSync);
  fs.SetFaultFilter("/log.0");  // segment files only
  fs.FailNth(op, 1);
  Inserted doomed = InsertOne(log.get(), 1, 1, 3000);
  Status s = log->Commit(TxnId(1), doomed.lsn, CommitMode::kDurable, &commit);
  INFO(s.ToString());
  REQUIRE(s.IsFatal());
  REQUIRE(log->health().IsFatal());
  Lsn lsn;
  REQUIRE(log->Insert(logtest::CommentRecord("later"), &lsn).IsFatal());
  REQUIRE(log->Flush(log->end_lsn()).IsFatal());
  REQUIRE(log->Commit(TxnId(2), Lsn::Invalid(), CommitMode::kNone, &lsn).IsFatal());
  fs.ClearFaults();
  REQUIRE(log->Flush(log->end_lsn()).IsFatal());  // never retried, even once the disk is fine
  REQUIRE(log->Close().IsFatal());

  fs.SimulateCrash(CrashMode::kTearUnsynced);
  LogOpenReport report;
  log = logtest::OpenLog(&fs, SmallOptions(), &report);
  REQUIRE(report.end_lsn >= durable_end);
  auto back = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(back.size() >= 2);
  REQUIRE(back[0].view().payload == durable.payload);
  REQUIRE(back[1].view().type == RecordType::kTxnCommit);
  REQUIRE(log->Close().ok());
}

TEST_CASE("a full disk when the next segment is needed makes the log fatal", "[crash][log]") {
  FaultInjectionFileSystem fs(16);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  fs.SetSizeLimit(fs.used_bytes());  // the current segment may fill; no new file may grow
  Status s;
  uint32_t i = 0;
  for (; i < 1000 && s.ok(); ++i) {  // ~130 KiB: needs two more 60 KiB segments
    Lsn lsn, end;
    std::string p = MakePayload(1, i, 64);
    s = log->Insert(logtest::CommentRecord(p), &lsn, &end);
    if (s.ok()) s = log->Flush(end);
  }
  INFO(s.ToString());
  REQUIRE(s.IsFatal());
  REQUIRE(std::string(s.message()).find("NoSpace") != std::string::npos);
  REQUIRE(i > 100);  // the first segment filled up before
  REQUIRE(log->Close().IsFatal());
}

// Regression: CreateSegment used to reuse the file a failed attempt left and sync it again.
// After a failed fdatasync the second one may succeed without the writes the first lost - here
// the segment's preallocation, which the retry's Resize to the same size does not repeat - so
// the "created" segment could be durably one block long. The retry must start a fresh file.
TEST_CASE("a segment whose creation sync failed is created afresh, never re-synced",
          "[crash][log]") {
  constexpr uint64_t kSegmentBytes = 64u << 10;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    INFO("seed " << seed);
    FaultInjectionFileSystem fs(seed);
    LogDirectoryOptions options;
    options.create_if_missing = true;
    options.segment_bytes = kSegmentBytes;
    std::unique_ptr<LogDirectory> dir;
    REQUIRE(LogDirectory::Open(&fs, "/log", options, &dir).ok());
    std::shared_ptr<io::File> segment;
    fs.FailNth(FaultOp::kSync, 1);
    REQUIRE_FALSE(dir->CreateSegment(kFirstLsn, &segment).ok());
    fs.ClearFaults();
    REQUIRE(dir->CreateSegment(kFirstLsn, &segment).ok());
    segment.reset();
    dir.reset();
    fs.SimulateCrash(CrashMode::kDropUnsynced);  // only what the successful sync covered
    std::unique_ptr<io::File> file;
    io::OpenOptions read;
    read.read_only = true;
    REQUIRE(fs.Open("/log/" + SegmentFileName(kFirstLsn), read, &file).ok());
    uint64_t bytes = 0;
    REQUIRE(file->Size(&bytes).ok());
    REQUIRE(bytes == kSegmentBytes);
  }
}

// Regression: a record longer than the free log buffer is written in pieces, and a sync
// between two pieces (another committer's) makes durable - and the control file's durable hint,
// which a checkpoint records - point inside the record. Open took a record that merely started
// below the hint for synced, so a crash that lost the record's tail made the log unopenable
// ("lies below LSN ..., up to which the log was known to be synced"). Here the state is built
// directly: the hint one block into the last record, the record's bytes after it never written.
TEST_CASE("a torn record that straddles the control file's durable hint is a torn tail",
          "[crash][log]") {
  FaultInjectionFileSystem fs(17);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  Inserted kept = InsertOne(log.get(), 1, 0, 100);
  REQUIRE(log->Flush(kept.end).ok());
  Inserted torn = InsertOne(log.get(), 1, 1, 12000);  // spans blocks
  REQUIRE(log->Flush(torn.end).ok());
  log->TEST_Kill();
  log.reset();
  fs.SimulateCrash(CrashMode::kKeepUnsynced);

  const uint64_t mid = BlockCeil(torn.lsn.value() + 1);  // where the first piece ended
  REQUIRE(mid + kRecordAlignment < torn.end.value());
  {
    LogDirectoryOptions options;
    std::unique_ptr<LogDirectory> dir;
    REQUIRE(LogDirectory::Open(&fs, logtest::kDir, options, &dir).ok());
    ControlBlock control = dir->control();
    control.durable_hint = mid;
    REQUIRE(dir->WriteControl(control).ok());
    std::shared_ptr<io::File> segment;
    REQUIRE(dir->GetSegment(kFirstLsn, &segment).ok());
    io::AlignedBuffer zeros(BlockCeil(torn.end.value()) - mid);
    std::memset(zeros.data(), 0, zeros.size());
    SegmentGeometry g = dir->geometry();
    REQUIRE(segment->Write(g.FileOffset(kFirstLsn, mid), zeros.data(), zeros.size()).ok());
    REQUIRE(segment->Sync().ok());
  }
  LogOpenReport report;
  std::unique_ptr<LogManager> reopened;
  Status s = LogManager::Open(&fs, logtest::kDir, SmallOptions(), &reopened, &report);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(report.end_lsn == torn.lsn);  // the torn record is cut, the one before it kept
  auto back = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(back.size() == 1);
  REQUIRE(back[0].view().payload == kept.payload);
  REQUIRE(reopened->Close().ok());
}

TEST_CASE("a crash before anything was synced leaves an empty log", "[crash][log]") {
  FaultInjectionFileSystem fs(15);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  for (uint32_t i = 0; i < 10; ++i) InsertOne(log.get(), 1, i, 50);
  log->TEST_Kill();
  fs.SimulateCrash(CrashMode::kDropUnsynced);
  log.reset();
  LogOpenReport report;
  log = logtest::OpenLog(&fs, SmallOptions(), &report);
  REQUIRE(report.end_lsn == Lsn(kFirstLsn));
  REQUIRE(report.records_scanned == 0);
  REQUIRE(log->Close().ok());
}

namespace {

// What the torn-crash test knows: every record it inserted (lsn -> payload; commit records have
// an empty payload) and the end of the last commit acknowledged durable.
struct Model {
  std::mutex mu;
  std::map<uint64_t, std::string> expected;  // GUARDED_BY(mu)
  std::atomic<uint64_t> acknowledged{kFirstLsn};

  void Add(Lsn lsn, std::string payload) {
    std::lock_guard<std::mutex> guard(mu);
    expected[lsn.value()] = std::move(payload);
  }
  void Acknowledge(uint64_t end) {
    uint64_t prev = acknowledged.load();
    while (prev < end && !acknowledged.compare_exchange_weak(prev, end)) {
    }
  }
};

// After a reopen: the log holds only records the model inserted, at the LSNs it got, intact,
// and everything below the acknowledged end. Forgets what was cut.
void VerifyReopened(io::FileSystem* fs, Model* model, Lsn end) {
  REQUIRE(end.value() >= model->acknowledged.load());
  auto back = logtest::ReadAll(fs, Lsn(kFirstLsn));
  std::set<uint64_t> found;
  for (const LogRecordBuf& r : back) {
    auto it = model->expected.find(r.view().lsn.value());
    REQUIRE(it != model->expected.end());  // no stale or foreign record
    REQUIRE(r.view().payload == it->second);
    found.insert(it->first);
  }
  auto acknowledged_end = model->expected.lower_bound(model->acknowledged.load());
  for (auto it = model->expected.begin(); it != acknowledged_end; ++it) {
    REQUIRE(found.count(it->first) == 1);  // everything below a durable commit survived
  }
  model->expected.erase(model->expected.lower_bound(end.value()), model->expected.end());
}

// One writer fiber: records, and now and then a commit - mostly ones that do not wait, so that
// crashes find unsynced writes to tear.
void Writer(LogManager* log, Model* model, uint32_t writer, uint64_t seed,
            const std::atomic<bool>& stop) {
  std::mt19937_64 r(seed);
  for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
    std::string p = MakePayload(writer, i, 8 + r() % 400);
    Lsn lsn, commit;
    if (!log->Insert(logtest::CommentRecord(p, TxnId(writer)), &lsn).ok()) return;
    model->Add(lsn, p);
    if (r() % 2 == 0) continue;
    CommitMode mode = r() % 4 == 0 ? CommitMode::kDurable
                      : r() % 2    ? CommitMode::kAsync
                                   : CommitMode::kNone;
    Status s = log->Commit(TxnId(writer), lsn, mode, &commit);
    if (commit.valid()) model->Add(commit, "");  // appended, even if the wait failed
    if (!s.ok()) return;
    if (mode == CommitMode::kDurable) {
      model->Acknowledge(commit.value() + RecordBytes(0));
    } else {
      threads::Worker::Current()->Yield();
    }
  }
}

}  // namespace

TEST_CASE("torn crashes at random moments keep every acknowledged record", "[crash][random][log]") {
  const uint64_t seed = sm::test::TestSeed("log torn crashes");
  FaultInjectionFileSystem fs(seed);
  std::mt19937_64 rng(seed);
  Model model;
  for (uint32_t cycle = 0; cycle < 4; ++cycle) {
    LogOpenReport report;
    auto log = logtest::OpenLog(&fs, SmallOptions(), &report);
    INFO("cycle " << cycle << ": " << report.ToString());
    VerifyReopened(&fs, &model, report.end_lsn);

    auto rt = sm::test::MakeRuntime(2);
    std::atomic<bool> stop{false};
    threads::WaitGroup wg;
    wg.Add(8);
    for (uint32_t f = 0; f < 8; ++f) {
      uint64_t writer_seed = rng();
      rt->Spawn([&, f, writer_seed] {
        Writer(log.get(), &model, cycle * 100 + f + 1, writer_seed, stop);
        wg.Done();
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2 + rng() % 15));
    fs.SimulateCrash(CrashMode::kTearUnsynced);  // while fibers insert and commit
    log->TEST_Kill();                            // wakes every waiter; their calls fail from now on
    stop.store(true);
    wg.Wait();
    rt->Shutdown();
  }
}
