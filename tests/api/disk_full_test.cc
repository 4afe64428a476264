// Disk full at the level of the whole database: a size limit on the fault-injecting file system
// a little above the current usage, then writes until the engine refuses. The refusal must be a
// clear NoSpace (or the log's Fatal naming NoSpace as its cause), never a crash; once the limit
// is lifted the database reopens - after a crash or after Close - with every acknowledged commit,
// verifies, and takes new writes. The limit is steered to hit where the space is needed: the
// data volume's growth by an extent, the creation of the next log segment, the log control
// file rewritten by a checkpoint, and the creation of the database.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "sm/api/api_internal.h"
#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/api/io_fault_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

using test::TableImage;

enum class FullAt : uint8_t { kVolumeGrowth, kLogSegment, kCheckpoint };

const char* FullAtName(FullAt at) {
  switch (at) {
    case FullAt::kVolumeGrowth:
      return "volume growth";
    case FullAt::kLogSegment:
      return "log segment creation";
    case FullAt::kCheckpoint:
      return "checkpoint";
  }
  return "?";
}

// Options that make the limit hit `at` first. The volume starts with one extent (256 pages,
// 2 MiB) and grows by another; log segments are preallocated at creation.
Options DiskFullOptions(io::FileSystem* fs, FullAt at) {
  Options o = test::SmallDbOptions(fs);  // no checkpoints: no spare segments to recycle
  o.buffer_pool_bytes = 512u << 10;
  // Volume growth: one 16 MiB segment is never half full before the volume needs its second
  // extent, so no log file grows. Log segments: small ones, and a workload of updates that
  // grows the log but not the volume.
  o.log_segment_bytes = at == FullAt::kVolumeGrowth ? 16u << 20 : 128u << 10;
  o.log_buffer_bytes = 64u << 10;
  return o;
}

bool SaysNoSpace(const Status& s) {
  std::string text = s.ToString();
  return s.IsNoSpace() || (s.IsFatal() && (text.find("NoSpace") != std::string::npos ||
                                           text.find("No space") != std::string::npos));
}

// One transaction of `rows` writes: inserts of new keys (volume growth) or updates of the first
// 100 keys (log growth only). Acknowledged commits go into *acked.
Status WriteBatch(Database* db, Table* table, FullAt at, int batch, TableImage* acked) {
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn));
  TableImage draft = *acked;
  for (int i = 0; i < 20; ++i) {
    int n = at == FullAt::kVolumeGrowth ? batch * 20 + i : (batch * 20 + i) % 100;
    std::string key = test::KeyOf(n);
    // Large values for the volume, so that its extent fills in few operations.
    std::string value = "b" + std::to_string(batch) +
                        std::string(at == FullAt::kVolumeGrowth ? 1500 : 300, 'v');
    Status s = table->Upsert(txn.get(), key, value);
    if (!s.ok()) {
      Status aborted = txn->Abort();
      aborted.PermitUnchecked();  // may fail too if the log is the one that is full
      return s;
    }
    draft[key] = value;
  }
  SM_TRY(txn->Commit());
  *acked = std::move(draft);
  return Status::OK();
}

void CheckReopened(io::FaultInjectionFileSystem* fs, const Options& options,
                   const TableImage& acked) {
  std::unique_ptr<Database> db = test::RequireReopensTo(options, acked);
  // And it takes new writes, beyond where the disk was full.
  Table* table = nullptr;
  REQUIRE(db->OpenTable("t", &table).ok());
  TableImage more = acked;
  for (int batch = 1000; batch < 1010; ++batch) {
    REQUIRE(WriteBatch(db.get(), table, FullAt::kVolumeGrowth, batch, &more).ok());
  }
  REQUIRE(db->Checkpoint().ok());
  REQUIRE(db->Verify().ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("disk full: a clear NoSpace, then the database reopens with every acknowledged commit",
          "[crash][api]") {
  const FullAt at = GENERATE(FullAt::kVolumeGrowth, FullAt::kLogSegment, FullAt::kCheckpoint);
  const bool crash = GENERATE(true, false);
  INFO(FullAtName(at) << (crash ? ", reopened after a crash" : ", reopened after Close"));
  io::FaultInjectionFileSystem fs(21);
  Options options = DiskFullOptions(&fs, at);
  TableImage acked;
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(options, &db).ok());
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  int batch = 0;
  for (; batch < 5; ++batch) REQUIRE(WriteBatch(db.get(), table, at, batch, &acked).ok());
  REQUIRE(db->Checkpoint().ok());

  Status full;
  uint64_t used = fs.used_bytes();
  if (at == FullAt::kCheckpoint) {
    fs.SetSizeLimit(used);  // nothing may grow: the control file's rewrite needs a new block
    full = db->Checkpoint();
  } else {
    // Less than a volume extent (2 MiB) or a log segment (128 KiB) above the usage.
    fs.SetSizeLimit(used + (at == FullAt::kVolumeGrowth ? (1u << 20) : (64u << 10)));
    for (; batch < 5000 && full.ok(); ++batch) {
      full = WriteBatch(db.get(), table, at, batch, &acked);
    }
  }
  INFO(full.ToString());
  REQUIRE(fs.counters().no_space > 0);
  REQUIRE(SaysNoSpace(full));
  const char* where = at == FullAt::kVolumeGrowth ? "/data.sm"
                      : at == FullAt::kLogSegment ? "/log/log.0"
                                                  : "/log/log.control";
  REQUIRE(full.ToString().find(where) != std::string::npos);
  std::printf("disk full at %s after %d batches: %s\n", FullAtName(at), batch,
              full.ToString().c_str());

  // While the disk is full, what is there stays readable and consistent.
  TableImage found;
  REQUIRE(test::ReadTable(db.get(), "t", &found).ok() == !full.IsFatal());
  if (!full.IsFatal()) {
    REQUIRE(found == acked);
    REQUIRE(db->Verify().ok());
  }
  if (crash) {
    static_cast<api::DatabaseImpl*>(db.get())->TEST_Crash();
    db.reset();
    fs.SimulateCrash(io::CrashMode::kDropUnsynced);
  } else {
    Status closed = db->Close();
    // A full volume or control file leaves the database healthy, so Close (which needs no new
    // space: the control file's rewrite replaces the old one) may succeed; a failed log never.
    if (full.IsFatal()) REQUIRE_FALSE(closed.ok());
    closed.PermitUnchecked();
    db.reset();
  }
  fs.SetSizeLimit(io::FaultInjectionFileSystem::kNoSizeLimit);
  CheckReopened(&fs, options, acked);
}

TEST_CASE("disk full while the database is created: NoSpace, then it is created",
          "[crash][api]") {
  // What a finished creation uses: the volume's first extent, the first log segment, the
  // log's control file and the meta file.
  uint64_t created_bytes = 0;
  {
    io::FaultInjectionFileSystem fs(22);
    std::unique_ptr<Database> db;
    REQUIRE(Database::Open(DiskFullOptions(&fs, FullAt::kLogSegment), &db).ok());
    created_bytes = fs.used_bytes();
    REQUIRE(db->Close().ok());
  }
  // Full at the volume, at the first log segment, and one byte short of the end (the last
  // files written: the checkpoint's control file and the meta file).
  const uint64_t limit =
      GENERATE_COPY(uint64_t{64} << 10, (uint64_t{2} << 20) + (64u << 10), created_bytes - 1);
  INFO("limit " << limit << " of " << created_bytes);
  io::FaultInjectionFileSystem fs(22);
  Options options = DiskFullOptions(&fs, FullAt::kLogSegment);
  fs.SetSizeLimit(limit);
  std::unique_ptr<Database> db;
  Status s = Database::Open(options, &db);
  INFO(s.ToString());
  REQUIRE(SaysNoSpace(s));
  REQUIRE(db == nullptr);
  fs.SetSizeLimit(io::FaultInjectionFileSystem::kNoSizeLimit);
  OpenReport report;
  REQUIRE(Database::Open(options, &db, &report).ok());
  REQUIRE(report.created);
  Table* table = nullptr;
  REQUIRE(db->CreateTable("t", &table).ok());
  REQUIRE(db->Close().ok());
  CheckReopened(&fs, options, {});
}

}  // namespace
}  // namespace sm
