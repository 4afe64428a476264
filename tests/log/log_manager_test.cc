// LogManager: empty logs and reopening, concurrent inserts from many fibers on two workers,
// group commit, the three commit modes, records larger than the log buffer, segment roll-over,
// truncation and recycling, checkpoint hints, random reads along undo chains.
#include "log/log_manager.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/forwarding_fs.h"
#include "tests/log/log_test_util.h"
#include "tests/test_util.h"
#include "threads/sync.h"

using namespace sm;
using namespace sm::log;
using sm::logtest::MakePayload;
using sm::logtest::SmallOptions;

namespace {

std::vector<std::string> ListLogDir(io::FileSystem* fs) {
  std::vector<std::string> names;
  REQUIRE(fs->ListDir(logtest::kDir, &names).ok());
  return names;
}

size_t CountPrefix(const std::vector<std::string>& names, const std::string& prefix) {
  return std::count_if(names.begin(), names.end(),
                       [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("an empty log opens, closes, and reopens at the same end", "[unit][log]") {
  io::FaultInjectionFileSystem fs(1);
  LogOpenReport report;
  auto log = logtest::OpenLog(&fs, SmallOptions(), &report);
  REQUIRE(report.created);
  REQUIRE(report.end_lsn == Lsn(kFirstLsn));
  REQUIRE(report.records_scanned == 0);
  REQUIRE(report.segments == 1);
  REQUIRE(log->end_lsn() == Lsn(kFirstLsn));
  REQUIRE(log->FlushAll().ok());
  REQUIRE(log->Close().ok());
  REQUIRE(log->Insert(logtest::CommentRecord("x"), nullptr).code() == Status::Code::kClosed);
  for (int i = 0; i < 2; ++i) {
    log = logtest::OpenLog(&fs, SmallOptions(), &report);
    REQUIRE_FALSE(report.created);
    REQUIRE(report.end_lsn == Lsn(kFirstLsn));
    REQUIRE(report.bytes_cut == 0);
    REQUIRE(log->Close().ok());
  }
  // Without create_if_missing a missing log is NotFound.
  LogOptions options = SmallOptions();
  options.create_if_missing = false;
  std::unique_ptr<LogManager> none;
  REQUIRE(LogManager::Open(&fs, "/db/other", options, &none).IsNotFound());
}

TEST_CASE("a log with records reopens twice at the same end", "[unit][log]") {
  io::FaultInjectionFileSystem fs(2);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  Lsn lsn, end;
  for (uint32_t i = 0; i < 100; ++i) {
    std::string p = MakePayload(1, i, i * 7 % 300);
    REQUIRE(log->Insert(logtest::CommentRecord(p), &lsn, &end).ok());
  }
  REQUIRE(log->Close().ok());
  for (int i = 0; i < 2; ++i) {
    LogOpenReport report;
    log = logtest::OpenLog(&fs, SmallOptions(), &report);
    REQUIRE(report.end_lsn == end);
    REQUIRE(report.records_scanned == 100u + i);
    REQUIRE(report.bytes_cut == 0);
    REQUIRE(log->Insert(logtest::CommentRecord("after reopen"), &lsn, &end).ok());
    REQUIRE(lsn == report.end_lsn);
    REQUIRE(log->Close().ok());
  }
  REQUIRE(logtest::ReadAll(&fs, Lsn(kFirstLsn)).size() == 102);
}

TEST_CASE("many fibers on two workers insert concurrently, each record is there once",
          "[random][log]") {
  const uint64_t seed = sm::test::TestSeed("log concurrent insert");
  io::FaultInjectionFileSystem fs(seed);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  auto rt = sm::test::MakeRuntime(2);
  constexpr uint32_t kFibers = 24, kRecords = 150;
  std::vector<std::vector<Lsn>> lsns(kFibers);
  std::vector<std::vector<size_t>> sizes(kFibers);
  std::atomic<int> failures{0};
  threads::WaitGroup wg;
  wg.Add(kFibers);
  for (uint32_t f = 0; f < kFibers; ++f) {
    rt->Spawn([&, f] {
      std::mt19937_64 rng(seed + f);
      for (uint32_t i = 0; i < kRecords; ++i) {
        size_t bytes = 8 + rng() % (rng() % 8 == 0 ? 3000 : 120);  // some span ring blocks
        std::string p = MakePayload(f, i, bytes);
        Lsn lsn;
        if (!log->Insert(logtest::CommentRecord(p, TxnId(f + 1)), &lsn).ok()) failures++;
        lsns[f].push_back(lsn);
        sizes[f].push_back(bytes);
        if (rng() % 16 == 0) threads::Worker::Current()->Yield();
      }
      wg.Done();
    });
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  REQUIRE(log->FlushAll().ok());
  REQUIRE(log->CheckInvariants());
  LogStats stats = log->stats();
  REQUIRE(stats.records == kFibers * kRecords);
  REQUIRE(log->Close().ok());

  auto records = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(records.size() == kFibers * kRecords);
  std::map<Lsn, std::pair<uint32_t, uint32_t>> expected;  // lsn -> (fiber, seq)
  for (uint32_t f = 0; f < kFibers; ++f) {
    for (uint32_t i = 0; i < kRecords; ++i) {
      if (i > 0) REQUIRE(lsns[f][i - 1] < lsns[f][i]);  // a fiber's own records in order
      REQUIRE(expected.emplace(lsns[f][i], std::make_pair(f, i)).second);
    }
  }
  Lsn last;
  for (const LogRecordBuf& rec : records) {
    const LogRecordView& v = rec.view();
    REQUIRE(last < v.lsn);
    last = v.lsn;
    auto it = expected.find(v.lsn);
    REQUIRE(it != expected.end());
    auto [f, i] = it->second;
    REQUIRE(v.txn == TxnId(f + 1));
    uint32_t got[2] = {};
    if (v.payload.size() >= 8) std::memcpy(got, v.payload.data(), 8);
    INFO("lsn " << v.lsn.value() << " expected (" << f << "," << i << ") size " << sizes[f][i]
                << " found (" << got[0] << "," << got[1] << ") size " << v.payload.size());
    REQUIRE(v.payload == MakePayload(f, i, sizes[f][i]));
    expected.erase(it);
  }
  REQUIRE(expected.empty());
  REQUIRE(stats.segments_created >= 2);  // rolled over into new segments
}

TEST_CASE("group commit: many committers share few syncs", "[unit][log]") {
  io::FaultInjectionFileSystem base(3);
  logtest::SlowSyncFileSystem fs(&base, std::chrono::microseconds(2000));
  LogOptions options = SmallOptions();
  options.buffer_bytes = 256 * 1024;
  auto log = logtest::OpenLog(&fs, options);
  auto rt = sm::test::MakeRuntime(2);
  constexpr int kFibers = 64, kCommits = 10;
  std::atomic<int> not_durable{0}, failures{0};
  threads::WaitGroup wg;
  wg.Add(kFibers);
  for (int f = 0; f < kFibers; ++f) {
    rt->Spawn([&, f] {
      Lsn prev;
      for (int i = 0; i < kCommits; ++i) {
        std::string p = MakePayload(f, i, 40);
        Lsn lsn, commit;
        if (!log->Insert(logtest::CommentRecord(p, TxnId(f + 1), prev), &lsn).ok()) failures++;
        if (!log->Commit(TxnId(f + 1), lsn, CommitMode::kDurable, &commit).ok()) failures++;
        if (log->durable_lsn() <= commit) not_durable++;
        prev = commit;
      }
      wg.Done();
    });
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  REQUIRE(not_durable.load() == 0);
  LogStats stats = log->stats();
  INFO(stats.ToString());
  REQUIRE(stats.commits[static_cast<int>(CommitMode::kDurable)] == kFibers * kCommits);
  // One sync per commit would be 640; with 64 committers waiting together it is far fewer.
  REQUIRE(stats.syncs * 4 <= uint64_t{kFibers * kCommits});
  REQUIRE(stats.max_group >= 8);
  REQUIRE(stats.CommitsPerSync() >= 4.0);
  REQUIRE(log->Close().ok());
}

namespace {

// Committers on one worker, each doing `work` of computation before every durable commit (a
// terminal running its next transaction), over a log whose syncs take `sync`: the log's
// statistics.
LogStats RunSequentialCommitters(bool gather, int committers, int commits,
                                 std::chrono::microseconds work, std::chrono::microseconds sync) {
  io::FaultInjectionFileSystem base(11);
  logtest::SlowSyncFileSystem fs(&base, sync);
  LogOptions options = SmallOptions();
  options.buffer_bytes = 256 * 1024;
  options.gather_groups = gather;
  auto log = logtest::OpenLog(&fs, options);
  auto rt = sm::test::MakeRuntime(1);
  std::atomic<int> failures{0};
  threads::WaitGroup wg;
  wg.Add(committers);
  for (int f = 0; f < committers; ++f) {
    rt->Spawn([&, f] {
      Lsn prev;
      for (int i = 0; i < commits; ++i) {
        const auto until = std::chrono::steady_clock::now() + work;
        while (std::chrono::steady_clock::now() < until) {
        }
        Lsn lsn, commit;
        if (!log->Insert(logtest::CommentRecord(MakePayload(f, i, 40), TxnId(f + 1), prev), &lsn)
                 .ok() ||
            !log->Commit(TxnId(f + 1), lsn, CommitMode::kDurable, &commit).ok() ||
            log->durable_lsn() <= commit) {
          failures++;
        }
        prev = commit;
      }
      wg.Done();
    });
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  LogStats stats = log->stats();
  REQUIRE(log->Close().ok());
  return stats;
}

}  // namespace

TEST_CASE("group commit: a sync waits for the committers of the last round", "[unit][log]") {
  // Eight terminals on one worker: each commit comes 200 us after the one before, while a sync
  // takes 4 ms. Syncing at the first request splits every round in two (the first committer
  // alone, then the rest); holding the sync for the round keeps it whole.
  constexpr int kCommitters = 8, kCommits = 12;
  const auto work = std::chrono::microseconds(200), sync = std::chrono::microseconds(4000);
  LogStats eager = RunSequentialCommitters(false, kCommitters, kCommits, work, sync);
  LogStats gathered = RunSequentialCommitters(true, kCommitters, kCommits, work, sync);
  INFO("eager: " << eager.ToString());
  INFO("gathered: " << gathered.ToString());
  REQUIRE(gathered.commits[static_cast<int>(CommitMode::kDurable)] == kCommitters * kCommits);
  REQUIRE(gathered.max_group == kCommitters);
  // Whole rounds after the first few syncs (which time the disk and learn the round).
  REQUIRE(gathered.CommitsPerSync() >= 0.75 * kCommitters);
  REQUIRE(gathered.syncs < eager.syncs);
}

TEST_CASE("commit modes: durable waits, async is synced within its bound, none promises nothing",
          "[unit][log]") {
  io::FaultInjectionFileSystem fs(4);
  LogOptions options = SmallOptions();
  options.async_flush_interval = std::chrono::milliseconds(20);
  auto log = logtest::OpenLog(&fs, options);
  Lsn commit;
  REQUIRE(log->Commit(TxnId(1), Lsn::Invalid(), CommitMode::kDurable, &commit).ok());
  REQUIRE(log->durable_lsn() > commit);

  // none: nothing asks for a sync, so the record stays volatile.
  REQUIRE(log->Commit(TxnId(2), Lsn::Invalid(), CommitMode::kNone, &commit).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(log->durable_lsn() <= commit);
  uint64_t syncs_before = log->stats().syncs;

  // async: returns at once, durable within the interval (plus scheduling slack).
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(log->Commit(TxnId(3), Lsn::Invalid(), CommitMode::kAsync, &commit).ok());
  while (log->durable_lsn() <= commit &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto took = std::chrono::steady_clock::now() - t0;
  REQUIRE(log->durable_lsn() > commit);
  REQUIRE(took >= std::chrono::milliseconds(15));   // it waited for the deadline...
  REQUIRE(took < std::chrono::milliseconds(1000));  // ...and no longer than needed
  REQUIRE(log->stats().syncs == syncs_before + 1);  // the none commit rode along

  // The default mode comes from the options.
  options.commit_mode = CommitMode::kNone;
  REQUIRE(log->Close().ok());
  log = logtest::OpenLog(&fs, options);
  REQUIRE(log->Commit(TxnId(4), Lsn::Invalid(), &commit).ok());
  LogStats stats = log->stats();
  REQUIRE(stats.commits[static_cast<int>(CommitMode::kNone)] == 1);
  REQUIRE(log->Close().ok());
}

TEST_CASE("a flush ending in a partial block is written in one call", "[unit][log]") {
  io::FaultInjectionFileSystem fs(5);
  LogOptions options = SmallOptions();
  options.buffer_bytes = 64 * 1024;
  options.segment_bytes = 1024 * 1024;
  auto log = logtest::OpenLog(&fs, options);
  REQUIRE(log->FlushAll().ok());
  for (size_t bytes : {100, 6000, 13000}) {
    INFO(bytes);
    const LogStats before = log->stats();
    const uint64_t from = BlockFloor(log->written_lsn().value());
    Lsn lsn, end;
    REQUIRE(log->Insert(logtest::CommentRecord(MakePayload(1, 0, bytes)), &lsn, &end).ok());
    REQUIRE(log->Flush(end).ok());
    const LogStats after = log->stats();
    REQUIRE(end.value() % kLogBlockBytes != 0);
    REQUIRE(after.writes == before.writes + 1);
    REQUIRE(after.bytes_written == before.bytes_written + BlockCeil(end.value()) - from);
  }
  REQUIRE(log->Close().ok());
  auto records = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(records.size() == 3);
}

TEST_CASE("a record larger than the log buffer is streamed through it", "[unit][log]") {
  io::FaultInjectionFileSystem fs(5);
  auto log = logtest::OpenLog(&fs, SmallOptions());  // 16 KiB buffer, 60 KiB segments
  auto rt = sm::test::MakeRuntime(2);
  const std::string big = MakePayload(99, 0, 200 * 1024);  // spans 4 segments
  Lsn big_lsn;
  std::atomic<int> failures{0};
  std::vector<Lsn> small(400);
  threads::WaitGroup wg;
  wg.Add(3);
  rt->Spawn(
      [&] {
        if (!log->Insert(logtest::CommentRecord(big, TxnId(99)), &big_lsn).ok()) failures++;
        wg.Done();
      },
      0);
  for (int f = 0; f < 2; ++f) {
    rt->Spawn(
        [&, f] {
          for (int i = f; i < 400; i += 2) {
            std::string p = MakePayload(f, i, 50);
            if (!log->Insert(logtest::CommentRecord(p, TxnId(f + 1)), &small[i]).ok()) failures++;
          }
          wg.Done();
        },
        f);
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  REQUIRE(log->stats().space_waits > 0);
  LogRecordBuf buf;
  REQUIRE(log->ReadRecord(big_lsn, &buf).ok());
  REQUIRE(buf.view().payload == big);
  REQUIRE(log->Close().ok());
  auto records = logtest::ReadAll(&fs, Lsn(kFirstLsn));
  REQUIRE(records.size() == 401);
  size_t bigs = 0;
  for (const LogRecordBuf& r : records) {
    if (r.view().lsn == big_lsn) {
      REQUIRE(r.view().payload == big);
      ++bigs;
    }
  }
  REQUIRE(bigs == 1);
}

TEST_CASE("a payload given in parts is logged as their concatenation", "[unit][log]") {
  io::FaultInjectionFileSystem fs(6);
  auto log = logtest::OpenLog(&fs, SmallOptions());  // 16 KiB buffer
  // Part layouts: empty parts among others, sizes that leave every padding length, and one
  // payload larger than the buffer (streamed through it in pieces that cut across parts).
  std::vector<std::vector<size_t>> layouts = {
      {0, 5}, {1, 0, 2, 0}, {7}, {3, 3, 3}, {4096, 13, 0, 4095}, {9000, 9000, 3}};
  std::vector<std::string> wholes;
  std::vector<Lsn> lsns;
  for (size_t l = 0; l < layouts.size(); ++l) {
    std::vector<std::string> parts;
    for (size_t p = 0; p < layouts[l].size(); ++p) {
      parts.push_back(MakePayload(static_cast<uint32_t>(l), static_cast<uint32_t>(p), layouts[l][p]));
    }
    std::vector<std::string_view> views(parts.begin(), parts.end());
    std::string whole;
    for (const std::string& part : parts) whole += part;
    LogRecord record = logtest::CommentRecord({}, TxnId(l + 1));
    record.payload_parts = views;
    REQUIRE(record.payload_bytes() == whole.size());
    REQUIRE(PayloadCrc(record) == PayloadCrc(whole));
    Lsn lsn;
    REQUIRE(log->Insert(record, &lsn).ok());
    wholes.push_back(whole);
    lsns.push_back(lsn);
  }
  LogRecordBuf buf;
  REQUIRE(log->ReadRecord(lsns.back(), &buf).ok());
  REQUIRE(buf.view().payload == wholes.back());
  REQUIRE(log->Close().ok());
  auto records = logtest::ReadAll(&fs, Lsn(kFirstLsn));  // checks every record's checksum
  REQUIRE(records.size() == wholes.size());
  for (size_t i = 0; i < records.size(); ++i) {
    INFO("layout " << i);
    REQUIRE(records[i].view().lsn == lsns[i]);
    REQUIRE(records[i].view().payload == wholes[i]);
  }
}

namespace {

// Delete waits until the test releases it (at most 10 s) and records whether it had to give
// up waiting.
class HeldDeleteFileSystem final : public test::ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  Status Delete(const std::string& path) override {
    deleting_.store(true);
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return released_; })) {
      gave_up_.store(true);
    }
    lock.unlock();
    return ForwardingFileSystem::Delete(path);
  }

  bool deleting() const { return deleting_.load(); }
  bool gave_up() const { return gave_up_.load(); }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::atomic<bool> deleting_{false}, gave_up_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

}  // namespace

// A checkpoint's truncation may delete gigabytes of segments; the flusher must meanwhile be
// able to open its next segment, or the log buffer fills and every inserter waits.
TEST_CASE("the flusher opens new segments while a truncation deletes old ones", "[unit][log]") {
  io::FaultInjectionFileSystem base(7);
  HeldDeleteFileSystem fs(&base);
  LogOptions options = SmallOptions();  // 64 KiB segments; two spares at most
  auto log = logtest::OpenLog(&fs, options);
  const uint64_t data_bytes = log->geometry().data_bytes();
  Lsn lsn, end;
  uint32_t seq = 0;
  auto insert_segments = [&](uint64_t segments) {
    const Lsn from = log->end_lsn();
    while (log->end_lsn().value() - from.value() < segments * data_bytes) {
      REQUIRE(log->Insert(logtest::CommentRecord(MakePayload(1, seq++, 450)), &lsn, &end).ok());
    }
    REQUIRE(log->FlushAll().ok());
  };
  insert_segments(6);
  const Lsn keep = lsn;  // the last record: at least four segments retire, two are deleted
  Status truncated;
  std::thread truncator([&] { truncated = log->Truncate(keep); });
  while (!fs.deleting()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  insert_segments(3);  // the flusher creates (or recycles) three segments meanwhile
  fs.Release();
  truncator.join();
  REQUIRE(truncated.ok());
  REQUIRE_FALSE(fs.gave_up());
  REQUIRE(log->start_lsn() == keep);
  REQUIRE(log->Close().ok());
}

TEST_CASE("the next segment is made ahead, once the current one is half written",
          "[unit][log]") {
  io::FaultInjectionFileSystem fs(6);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  const uint64_t data_bytes = log->geometry().data_bytes();
  const uint64_t next = log->geometry().SegmentEnd(kFirstLsn);
  Lsn lsn, end;
  uint32_t seq = 0;
  auto fill_to = [&](uint64_t fraction_num, uint64_t fraction_den) {
    while (log->end_lsn().value() - kFirstLsn < data_bytes * fraction_num / fraction_den) {
      REQUIRE(log->Insert(logtest::CommentRecord(MakePayload(1, seq++, 450)), &lsn, &end).ok());
    }
    REQUIRE(log->FlushAll().ok());
  };
  auto next_exists = [&] {
    auto names = ListLogDir(&fs);
    return std::count(names.begin(), names.end(), SegmentFileName(next)) == 1;
  };
  fill_to(1, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE_FALSE(next_exists());  // not asked for yet
  fill_to(5, 8);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!next_exists() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(next_exists());  // made by the preparer, before any record needs it
  REQUIRE(log->stats().segments_created == 1);  // the first: the next counts once taken
  fill_to(3, 2);
  REQUIRE(log->stats().segments_created == 2);
  REQUIRE(log->Close().ok());
  REQUIRE(logtest::ReadAll(&fs, Lsn(kFirstLsn)).size() == seq);
}

TEST_CASE("segments roll over, truncation retires them, spares are reused", "[unit][log]") {
  io::FaultInjectionFileSystem fs(6);
  LogOptions options = SmallOptions();
  options.spare_bytes = 2 * options.segment_bytes;
  auto log = logtest::OpenLog(&fs, options);
  const uint64_t data_bytes = log->geometry().data_bytes();
  std::vector<Lsn> lsns;
  Lsn end;
  for (uint32_t i = 0; i < 600; ++i) {  // ~600 * 520 bytes: 5+ segments
    std::string p = MakePayload(1, i, 450);
    lsns.emplace_back();
    REQUIRE(log->Insert(logtest::CommentRecord(p), &lsns.back(), &end).ok());
  }
  REQUIRE(log->FlushAll().ok());
  auto names = ListLogDir(&fs);
  size_t segments = CountPrefix(names, "log.0");
  REQUIRE(segments >= 5);
  REQUIRE(std::count(names.begin(), names.end(), SegmentFileName(kFirstLsn)) == 1);

  // Keep from record 400 on: every segment that ends at or before it goes.
  Lsn keep = lsns[400];
  REQUIRE(log->Truncate(keep).ok());
  REQUIRE(log->start_lsn() == keep);
  names = ListLogDir(&fs);
  uint64_t retired = (keep.value() - kFirstLsn) / data_bytes;
  REQUIRE(CountPrefix(names, "log.0") == segments - retired);
  REQUIRE(CountPrefix(names, "spare.") == std::min<uint64_t>(retired, 2));
  REQUIRE(log->stats().segments_removed == retired);
  REQUIRE(log->Truncate(Lsn(end.value() + 4096)).IsInvalidArgument());  // not durable

  // New segments take the spares: their stale records must never be read as records.
  for (uint32_t i = 600; i < 900; ++i) {
    std::string p = MakePayload(1, i, 450);
    lsns.emplace_back();
    REQUIRE(log->Insert(logtest::CommentRecord(p), &lsns.back(), &end).ok());
  }
  REQUIRE(log->Close().ok());
  names = ListLogDir(&fs);
  REQUIRE(CountPrefix(names, "spare.") == 0);  // ~2.6 segments more: both spares taken

  LogOpenReport report;
  log = logtest::OpenLog(&fs, options, &report);
  REQUIRE(report.start_lsn == keep);
  REQUIRE(report.scan_start_lsn == keep);
  REQUIRE(report.end_lsn == end);
  REQUIRE(report.records_scanned == 500);
  REQUIRE(log->Close().ok());
  auto records = logtest::ReadAll(&fs, keep);
  REQUIRE(records.size() == 500);
  for (uint32_t i = 0; i < 500; ++i) {
    REQUIRE(records[i].view().lsn == lsns[400 + i]);
    REQUIRE(records[i].view().payload == MakePayload(1, 400 + i, 450));
  }
}

TEST_CASE("spare_bytes bounds the retired segments kept for reuse", "[unit][log]") {
  const uint64_t budget_segments = GENERATE(0, 3, 5);  // 0: the floor of two
  io::FaultInjectionFileSystem fs(8);
  LogOptions options = SmallOptions();
  options.spare_bytes = budget_segments * options.segment_bytes;
  auto log = logtest::OpenLog(&fs, options);
  const uint64_t data_bytes = log->geometry().data_bytes();
  Lsn lsn, end;
  for (uint32_t i = 0; log->end_lsn().value() < kFirstLsn + 8 * data_bytes; ++i) {
    REQUIRE(log->Insert(logtest::CommentRecord(MakePayload(1, i, 450)), &lsn, &end).ok());
  }
  REQUIRE(log->FlushAll().ok());
  REQUIRE(log->Truncate(lsn).ok());
  const uint64_t retired = log->stats().segments_removed;
  REQUIRE(retired >= 7);
  const uint64_t spares = CountPrefix(ListLogDir(&fs), "spare.");
  CAPTURE(budget_segments, retired, spares);
  REQUIRE(spares == std::max<uint64_t>(budget_segments, 2));
  REQUIRE(log->Close().ok());
}

TEST_CASE("the checkpoint hint is where open starts scanning", "[unit][log]") {
  io::FaultInjectionFileSystem fs(7);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  Lsn lsn, checkpoint, end;
  for (int i = 0; i < 50; ++i) REQUIRE(log->Insert(logtest::CommentRecord("before"), &lsn).ok());
  LogRecord begin;
  begin.type = RecordType::kCheckpointBegin;
  REQUIRE(log->Insert(begin, &checkpoint).ok());
  LogRecord finish;
  finish.type = RecordType::kCheckpointEnd;
  finish.payload = "tables";
  REQUIRE(log->Insert(finish, &lsn, &end).ok());
  REQUIRE(log->SetCheckpoint(checkpoint).IsInvalidArgument());  // not durable yet
  REQUIRE(log->Flush(end).ok());
  REQUIRE(log->SetCheckpoint(checkpoint).ok());
  for (int i = 0; i < 10; ++i) REQUIRE(log->Insert(logtest::CommentRecord("after"), &lsn).ok());
  REQUIRE(log->Close().ok());
  LogOpenReport report;
  log = logtest::OpenLog(&fs, SmallOptions(), &report);
  REQUIRE(report.checkpoint_lsn == checkpoint);
  REQUIRE(report.scan_start_lsn == checkpoint);
  REQUIRE(report.records_scanned == 12);
  REQUIRE(log->checkpoint_lsn() == checkpoint);
  REQUIRE(log->Close().ok());
}

TEST_CASE("records still in the log buffer are read back from it, without a sync", "[unit][log]") {
  io::FaultInjectionFileSystem fs(9);
  LogOptions options = SmallOptions();
  options.buffer_bytes = 64 * 1024;
  options.async_flush_interval = std::chrono::hours(1);  // nothing is synced unless asked
  auto log = logtest::OpenLog(&fs, options);
  std::vector<Lsn> lsns;
  Lsn prev;
  for (int i = 0; i < 20; ++i) {
    const std::string payload = MakePayload(1, i, 40 + i);
    LogRecord r = logtest::CommentRecord(payload, TxnId(1), prev);
    REQUIRE(log->Insert(r, &prev).ok());
    lsns.push_back(prev);
  }
  const uint64_t syncs = log->stats().syncs;
  const Lsn durable = log->durable_lsn();
  REQUIRE(durable <= lsns.front());  // none of them is durable
  for (int i = 19; i >= 0; --i) {
    LogRecordBuf buf;
    REQUIRE(log->ReadRecord(lsns[i], &buf).ok());
    REQUIRE(buf.view().payload == MakePayload(1, i, 40 + i));
    REQUIRE(buf.view().lsn == lsns[i]);
  }
  REQUIRE(log->stats().syncs == syncs);
  REQUIRE(log->durable_lsn() == durable);
  // Once more than a buffer's worth has been inserted after it, a record is read from the file.
  const std::string filler(4000, 'f');
  for (int i = 0; i < 20; ++i) {
    Lsn lsn;
    REQUIRE(log->Insert(logtest::CommentRecord(filler), &lsn).ok());
  }
  LogRecordBuf buf;
  REQUIRE(log->ReadRecord(lsns[0], &buf).ok());
  REQUIRE(buf.view().payload == MakePayload(1, 0, 40));
  REQUIRE(log->durable_lsn() > lsns[0]);
  REQUIRE(log->Close().ok());
}

TEST_CASE("undo chains are read back record by record, durable or not", "[unit][log]") {
  io::FaultInjectionFileSystem fs(8);
  auto log = logtest::OpenLog(&fs, SmallOptions());
  auto rt = sm::test::MakeRuntime(2);
  constexpr int kTxns = 8, kOps = 60;
  std::atomic<int> mismatches{0};
  threads::WaitGroup wg;
  wg.Add(kTxns);
  for (int t = 0; t < kTxns; ++t) {
    rt->Spawn([&, t] {
      std::vector<Lsn> chain;
      Lsn prev;
      for (int i = 0; i < kOps; ++i) {
        std::string p = MakePayload(t, i, 30 + i);
        LogRecord r = logtest::CommentRecord(p, TxnId(t + 1), prev);
        r.type = RecordType::kPageUndoRedo;
        r.page = PageId(i + 1);
        if (!log->Insert(r, &prev).ok()) mismatches++;
        chain.push_back(prev);
      }
      // Roll back: follow prev_lsn from the last record (much of it not yet durable).
      Lsn at = prev;
      for (int i = kOps - 1; i >= 0; --i) {
        LogRecordBuf buf;
        if (!log->ReadRecord(at, &buf).ok() || buf.view().payload != MakePayload(t, i, 30 + i) ||
            buf.view().txn != TxnId(t + 1)) {
          mismatches++;
          break;
        }
        at = buf.view().prev_lsn;
      }
      if (at.valid()) mismatches++;
      wg.Done();
    });
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(mismatches.load() == 0);
  // A bounded reader of the live log stops at the durable LSN. (The rollbacks above read from
  // the log buffer where they could, so they need not have made anything durable: flush, so
  // that every record is there to read.)
  REQUIRE(log->FlushAll().ok());
  auto reader = log->NewReader();
  REQUIRE(reader->end() == log->durable_lsn());
  LogRecordView view;
  size_t n = 0;
  Status s;
  while ((s = reader->Next(&view)).ok()) ++n;
  INFO(s.ToString());
  REQUIRE(s.IsNotFound());
  REQUIRE(n == size_t{kTxns} * kOps);
  REQUIRE(log->Close().ok());
  REQUIRE(logtest::ReadAll(&fs, Lsn(kFirstLsn)).size() == size_t{kTxns} * kOps);
}
