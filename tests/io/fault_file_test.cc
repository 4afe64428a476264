// FaultInjectionFileSystem: injected read/write/sync faults, short writes, the size limit,
// crashes that keep, drop or tear unsynced writes (checked against a per-sector model), dead
// handles after a crash, and seeded replay.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sm/io/aligned_buffer.h"
#include "sm/io/testing/fault_file.h"
#include "tests/io/io_test_util.h"
#include "tests/test_util.h"

using namespace sm;
using sm::io::AlignedBuffer;
using sm::io::CrashMode;
using sm::io::FaultInjectionFileSystem;
using sm::io::FaultOp;
using sm::test::CreateOptions;

namespace {

constexpr size_t kSector = FaultInjectionFileSystem::kSectorBytes;

// Sector contents that identify who wrote them: every 8-byte word is (tag << 32 | sector).
void FillSectors(char* buf, uint64_t first_sector, size_t count, uint32_t tag) {
  for (size_t s = 0; s < count; ++s) {
    uint64_t word = (uint64_t{tag} << 32) | (first_sector + s);
    for (size_t w = 0; w < kSector / 8; ++w) std::memcpy(buf + s * kSector + w * 8, &word, 8);
  }
}

// The tag of a sector, or -1 if its bytes are not all from one writer (a torn sector).
int64_t SectorTag(const char* sector, uint64_t index) {
  uint64_t first;
  std::memcpy(&first, sector, 8);
  for (size_t w = 1; w < kSector / 8; ++w) {
    if (std::memcmp(sector + w * 8, &first, 8) != 0) return -1;
  }
  if (first == 0) return 0;  // never written
  if ((first & 0xffffffff) != index) return -1;
  return static_cast<int64_t>(first >> 32);
}

struct Fixture {
  explicit Fixture(uint64_t seed) : fs(seed) { REQUIRE(fs.CreateDir("/db").ok()); }
  std::unique_ptr<io::File> Open(const std::string& name, bool direct = false) {
    std::unique_ptr<io::File> file;
    REQUIRE(fs.Open("/db/" + name, CreateOptions(direct), &file).ok());
    return file;
  }
  FaultInjectionFileSystem fs;
};

void WriteTag(io::File* file, uint64_t first_sector, size_t count, uint32_t tag) {
  std::vector<char> buf(count * kSector);
  FillSectors(buf.data(), first_sector, count, tag);
  REQUIRE(file->Write(first_sector * kSector, buf.data(), buf.size()).ok());
}

std::vector<int64_t> ReadTags(io::File* file, size_t sectors) {
  std::vector<char> buf(sectors * kSector);
  size_t got = 0;
  REQUIRE(file->ReadUpTo(0, buf.data(), buf.size(), &got).ok());
  std::vector<int64_t> tags(sectors, 0);
  for (size_t s = 0; s < sectors && (s + 1) * kSector <= got; ++s) {
    tags[s] = SectorTag(buf.data() + s * kSector, s);
  }
  return tags;
}

}  // namespace

TEST_CASE("fail the Nth read, write and sync", "[unit][fault]") {
  Fixture f(1);
  auto file = f.Open("a");
  WriteTag(file.get(), 0, 4, 1);
  f.fs.FailNth(FaultOp::kWrite, 3);
  WriteTag(file.get(), 0, 1, 2);
  WriteTag(file.get(), 1, 1, 2);
  std::vector<char> buf(kSector);
  FillSectors(buf.data(), 2, 1, 2);
  Status s = file->Write(2 * kSector, buf.data(), kSector);
  REQUIRE(s.IsIOError());
  REQUIRE(std::string(s.message()).find("/db/a") != std::string::npos);
  WriteTag(file.get(), 3, 1, 2);  // the countdown fired once
  REQUIRE(ReadTags(file.get(), 4) == std::vector<int64_t>{2, 2, 1, 2});  // failed write: nothing

  f.fs.FailNth(FaultOp::kRead, 1);
  REQUIRE(file->Read(0, buf.data(), kSector).IsIOError());
  REQUIRE(file->Read(0, buf.data(), kSector).ok());

  f.fs.FailNth(FaultOp::kSync, 2);
  REQUIRE(file->Sync().ok());
  REQUIRE(file->Sync().IsIOError());
  REQUIRE(file->Sync().ok());

  io::FaultCounters c = f.fs.counters();
  REQUIRE(c.write_faults == 1);
  REQUIRE(c.read_faults == 1);
  REQUIRE(c.sync_faults == 1);
  REQUIRE(c.writes == 5);
  REQUIRE(c.syncs == 3);
}

TEST_CASE("faults can be restricted to some files", "[unit][fault]") {
  Fixture f(2);
  auto log = f.Open("log.0001");
  auto data = f.Open("data.vol");
  f.fs.SetFaultFilter("log.");
  f.fs.FailNth(FaultOp::kWrite, 1);
  WriteTag(data.get(), 0, 1, 1);  // not counted: filtered out
  std::vector<char> buf(kSector);
  REQUIRE(log->Write(0, buf.data(), kSector).IsIOError());
  f.fs.ClearFaults();
  REQUIRE(log->Write(0, buf.data(), kSector).ok());
}

TEST_CASE("a short write stores a prefix of whole sectors", "[unit][fault]") {
  std::set<size_t> prefixes;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Fixture f(seed);
    auto file = f.Open("s");
    WriteTag(file.get(), 0, 16, 1);
    f.fs.FailNth(FaultOp::kShortWrite, 1);
    std::vector<char> buf(16 * kSector);
    FillSectors(buf.data(), 0, 16, 2);
    Status s = file->Write(0, buf.data(), buf.size());
    REQUIRE(s.IsIOError());
    REQUIRE(std::string(s.message()).find("short write") != std::string::npos);
    std::vector<int64_t> tags = ReadTags(file.get(), 16);
    size_t prefix = 0;
    while (prefix < 16 && tags[prefix] == 2) ++prefix;
    for (size_t i = prefix; i < 16; ++i) REQUIRE(tags[i] == 1);  // old data after the prefix
    REQUIRE(prefix < 16);
    prefixes.insert(prefix);
    REQUIRE(f.fs.counters().short_writes == 1);
  }
  REQUIRE(prefixes.size() > 5);  // the length varies with the seed
}

TEST_CASE("fault probabilities are seeded and replayable", "[unit][fault]") {
  auto run = [](uint64_t seed) {
    Fixture f(seed);
    auto file = f.Open("p");
    WriteTag(file.get(), 0, 1, 1);
    f.fs.SetFailProbability(FaultOp::kRead, 0.25);
    std::vector<bool> failed;
    std::vector<char> buf(kSector);
    for (int i = 0; i < 1000; ++i) failed.push_back(!file->Read(0, buf.data(), kSector).ok());
    return failed;
  };
  std::vector<bool> a = run(42), b = run(42), c = run(43);
  REQUIRE(a == b);
  REQUIRE(a != c);
  size_t failures = std::count(a.begin(), a.end(), true);
  REQUIRE(failures > 180);
  REQUIRE(failures < 320);
}

TEST_CASE("the size limit turns growth into NoSpace and changes nothing", "[unit][fault]") {
  Fixture f(3);
  auto a = f.Open("a", true);
  auto b = f.Open("b", true);
  f.fs.SetSizeLimit(5 * 4096);
  AlignedBuffer buf(4 * 4096);
  REQUIRE(a->Write(0, buf.data(), 3 * 4096).ok());
  REQUIRE(b->Write(0, buf.data(), 2 * 4096).ok());
  REQUIRE(f.fs.used_bytes() == 5 * 4096);
  Status s = b->Write(2 * 4096, buf.data(), 4096);
  REQUIRE(s.IsNoSpace());
  REQUIRE(std::string(s.message()).find("/db/b") != std::string::npos);
  REQUIRE(a->Resize(4 * 4096).IsNoSpace());
  uint64_t size = 0;
  REQUIRE(b->Size(&size).ok());
  REQUIRE(size == 2 * 4096);
  REQUIRE(a->Write(0, buf.data(), 3 * 4096).ok());  // overwriting needs no space
  REQUIRE(a->Resize(4096).ok());                     // shrinking frees some
  REQUIRE(b->Write(2 * 4096, buf.data(), 2 * 4096).ok());
  REQUIRE(f.fs.Delete("/db/a").ok());
  REQUIRE(f.fs.used_bytes() == 4 * 4096);
  REQUIRE(f.fs.counters().no_space == 2);
}

TEST_CASE("crash keeps or drops unsynced writes and resizes", "[unit][fault][crash]") {
  auto mode = GENERATE(CrashMode::kKeepUnsynced, CrashMode::kDropUnsynced);
  Fixture f(4);
  auto file = f.Open("c");
  WriteTag(file.get(), 0, 8, 1);
  REQUIRE(file->Sync().ok());
  WriteTag(file.get(), 2, 2, 2);
  WriteTag(file.get(), 8, 4, 3);  // extends the file
  REQUIRE(file->Resize(14 * kSector).ok());
  REQUIRE(f.fs.pending_ops() == 3);
  io::CrashReport report = f.fs.SimulateCrash(mode);
  REQUIRE(f.fs.pending_ops() == 0);
  auto reopened = f.Open("c");
  uint64_t size = 0;
  REQUIRE(reopened->Size(&size).ok());
  if (mode == CrashMode::kKeepUnsynced) {
    REQUIRE(report.ops_kept == 3);
    REQUIRE(size == 14 * kSector);
    REQUIRE(ReadTags(reopened.get(), 14) ==
            std::vector<int64_t>{1, 1, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3, 0, 0});
  } else {
    REQUIRE(report.ops_dropped == 3);
    REQUIRE(size == 8 * kSector);
    REQUIRE(ReadTags(reopened.get(), 8) == std::vector<int64_t>(8, 1));
  }
}

TEST_CASE("after a crash every old handle fails and new ones see what survived",
          "[unit][fault][crash]") {
  Fixture f(5);
  auto file = f.Open("h");
  WriteTag(file.get(), 0, 1, 1);
  f.fs.SimulateCrash(CrashMode::kDropUnsynced);
  std::vector<char> buf(kSector);
  uint64_t size = 0;
  size_t got = 0;
  REQUIRE(file->Read(0, buf.data(), kSector).IsIOError());
  REQUIRE(file->ReadUpTo(0, buf.data(), kSector, &got).IsIOError());
  REQUIRE(file->Write(0, buf.data(), kSector).IsIOError());
  REQUIRE(file->Sync().IsIOError());
  REQUIRE(file->Size(&size).IsIOError());
  REQUIRE(file->Resize(0).IsIOError());
  auto reopened = f.Open("h");  // metadata (the create) survived, the data did not
  REQUIRE(reopened->Size(&size).ok());
  REQUIRE(size == 0);
  WriteTag(reopened.get(), 0, 1, 2);
  REQUIRE(ReadTags(reopened.get(), 1) == std::vector<int64_t>{2});
}

TEST_CASE("a torn crash persists whole sectors, as the report says", "[unit][fault][crash]") {
  constexpr size_t kWrites = 12, kPerWrite = 8;
  io::CrashReport total;
  size_t mixed_writes = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Fixture f(seed);
    auto file = f.Open("t");
    WriteTag(file.get(), 0, kWrites * kPerWrite, 1);
    REQUIRE(file->Sync().ok());
    for (size_t w = 0; w < kWrites; ++w) WriteTag(file.get(), w * kPerWrite, kPerWrite, 100 + w);
    io::CrashReport r = f.fs.SimulateCrash(CrashMode::kTearUnsynced);
    REQUIRE(r.ops_kept + r.ops_dropped + r.ops_torn == kWrites);
    REQUIRE(r.torn_sectors_kept + r.torn_sectors_dropped == r.ops_torn * kPerWrite);
    std::vector<int64_t> tags = ReadTags(f.Open("t").get(), kWrites * kPerWrite);
    size_t new_sectors = 0;
    for (size_t w = 0; w < kWrites; ++w) {
      size_t fresh = 0;
      for (size_t s = w * kPerWrite; s < (w + 1) * kPerWrite; ++s) {
        REQUIRE((tags[s] == 1 || tags[s] == int64_t(100 + w)));  // never a torn sector
        fresh += tags[s] != 1;
      }
      new_sectors += fresh;
      mixed_writes += fresh != 0 && fresh != kPerWrite;
    }
    // The model: kept writes contribute all their sectors, torn ones those the report kept.
    REQUIRE(new_sectors == r.ops_kept * kPerWrite + r.torn_sectors_kept);
    total.ops_kept += r.ops_kept;
    total.ops_dropped += r.ops_dropped;
    total.ops_torn += r.ops_torn;
  }
  REQUIRE(total.ops_kept > 0);
  REQUIRE(total.ops_dropped > 0);
  REQUIRE(total.ops_torn > 0);
  REQUIRE(mixed_writes > 0);  // some writes persisted only in part
}

TEST_CASE("torn unaligned writes split at absolute sector boundaries", "[unit][fault][crash]") {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Fixture f(seed);
    auto file = f.Open("u");
    std::vector<char> old_bytes(4 * kSector, 'o'), new_bytes(1000, 'n');
    REQUIRE(file->Write(0, old_bytes.data(), old_bytes.size()).ok());
    REQUIRE(file->Sync().ok());
    REQUIRE(file->Write(700, new_bytes.data(), new_bytes.size()).ok());  // pieces end at 1024, 1536
    f.fs.SimulateCrash(CrashMode::kTearUnsynced);
    std::vector<char> back(4 * kSector);
    REQUIRE(f.Open("u")->Read(0, back.data(), back.size()).ok());
    auto uniform = [&](size_t begin, size_t end) {
      return std::all_of(back.begin() + begin, back.begin() + end,
                         [&](char c) { return c == back[begin]; });
    };
    REQUIRE(uniform(0, 700));
    REQUIRE(back[0] == 'o');
    REQUIRE(uniform(700, 1024));
    REQUIRE(uniform(1024, 1536));
    REQUIRE(uniform(1536, 1700));
    REQUIRE(uniform(1700, 2048));
    REQUIRE(back[1700] == 'o');
  }
}

TEST_CASE("the same seed gives the same torn image", "[unit][fault][crash]") {
  auto run = [](uint64_t seed) {
    Fixture f(seed);
    auto file = f.Open("r");
    WriteTag(file.get(), 0, 64, 1);
    REQUIRE(file->Sync().ok());
    for (uint32_t w = 0; w < 16; ++w) WriteTag(file.get(), (w * 5) % 60, 4, 10 + w);
    f.fs.SimulateCrash(CrashMode::kTearUnsynced);
    return ReadTags(f.Open("r").get(), 64);
  };
  REQUIRE(run(7) == run(7));
  REQUIRE(run(7) != run(8));
}

TEST_CASE("a failed sync loses data that a later sync does not bring back",
          "[unit][fault][crash]") {
  size_t lost_runs = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Fixture f(seed);
    auto file = f.Open("g");
    WriteTag(file.get(), 0, 16, 1);
    REQUIRE(file->Sync().ok());
    WriteTag(file.get(), 0, 16, 2);
    f.fs.FailNth(FaultOp::kSync, 1);
    REQUIRE(file->Sync().IsIOError());
    REQUIRE(ReadTags(file.get(), 16) == std::vector<int64_t>(16, 2));  // still cached
    REQUIRE(file->Sync().ok());
    f.fs.SimulateCrash(CrashMode::kKeepUnsynced);
    std::vector<int64_t> tags = ReadTags(f.Open("g").get(), 16);
    for (int64_t tag : tags) REQUIRE((tag == 1 || tag == 2));
    lost_runs += std::count(tags.begin(), tags.end(), 1) > 0;
  }
  REQUIRE(lost_runs > 0);
}

TEST_CASE("deleting or renaming over an open file", "[unit][fault]") {
  Fixture f(6);
  auto a = f.Open("a");
  auto b = f.Open("b");
  WriteTag(a.get(), 0, 2, 1);
  WriteTag(b.get(), 0, 1, 2);
  REQUIRE(f.fs.Rename("/db/a", "/db/b").ok());  // b's old contents are unlinked
  REQUIRE(f.fs.used_bytes() == 2 * kSector);
  WriteTag(b.get(), 1, 1, 3);  // the orphan still works
  REQUIRE(ReadTags(f.Open("b").get(), 2) == std::vector<int64_t>{1, 1});
  REQUIRE(f.fs.Delete("/db/b").ok());
  REQUIRE(ReadTags(a.get(), 2) == std::vector<int64_t>{1, 1});
  REQUIRE(f.fs.used_bytes() == 0);
}

// Random writes, syncs and crashes against a model of which values each sector may hold:
// after a crash a sector holds its durable value or the value of some unsynced write to it.
TEST_CASE("random crash cycles match the sector model", "[random][fault][crash]") {
  uint64_t seed = test::TestSeed("fault fs crash model");
  std::mt19937_64 rng(seed);
  FaultInjectionFileSystem fs(seed);
  REQUIRE(fs.CreateDir("/db").ok());
  constexpr size_t kSectors = 256;
  std::vector<int64_t> durable(kSectors, 0);
  std::vector<std::set<int64_t>> possible(kSectors);
  std::vector<int64_t> latest(kSectors, 0);
  uint32_t next_tag = 1;
  std::unique_ptr<io::File> file;
  REQUIRE(fs.Open("/db/m", CreateOptions(false), &file).ok());
  REQUIRE(file->Resize(kSectors * kSector).ok());
  REQUIRE(file->Sync().ok());
  for (int cycle = 0; cycle < 2000; ++cycle) {
    int ops = 1 + static_cast<int>(rng() % 12);
    for (int op = 0; op < ops; ++op) {
      if (rng() % 5 == 0) {
        REQUIRE(file->Sync().ok());
        for (size_t s = 0; s < kSectors; ++s) possible[s].clear(), durable[s] = latest[s];
        continue;
      }
      size_t count = 1 + rng() % 16;
      size_t first = rng() % (kSectors - count);
      uint32_t tag = next_tag++;
      WriteTag(file.get(), first, count, tag);
      for (size_t s = first; s < first + count; ++s) possible[s].insert(tag), latest[s] = tag;
    }
    auto mode = static_cast<CrashMode>(rng() % 3);
    fs.SimulateCrash(mode);
    REQUIRE(fs.Open("/db/m", CreateOptions(false), &file).ok());
    std::vector<int64_t> tags = ReadTags(file.get(), kSectors);
    for (size_t s = 0; s < kSectors; ++s) {
      bool ok = mode == CrashMode::kKeepUnsynced   ? tags[s] == latest[s]
                : mode == CrashMode::kDropUnsynced ? tags[s] == durable[s]
                                                   : tags[s] == durable[s] ||
                                                         possible[s].count(tags[s]) != 0;
      if (!ok) {
        INFO("cycle " << cycle << " sector " << s << " mode " << int(mode) << " tag "
                      << tags[s]);
        REQUIRE(ok);
      }
      durable[s] = latest[s] = tags[s];
      possible[s].clear();
    }
  }
  REQUIRE(fs.counters().crashes == 2000);
}
