// Volume: allocation that survives reopen, growth by extents, large and multi-range volumes,
// rejection of files that are not (valid) volumes without writing to them, NoSpace on growth,
// crash safety of pages and of the allocation map, fatal sync failures, and concurrency.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sm/io/aligned_buffer.h"
#include "sm/io/testing/fault_file.h"
#include "sm/page/page.h"
#include "sm/space/volume.h"
#include "tests/io/io_test_util.h"
#include "tests/test_util.h"
#include "threads/runtime.h"
#include "threads/sync.h"

using namespace sm;
using sm::io::AlignedBuffer;
using sm::space::Volume;
using sm::space::VolumeOptions;
using sm::test::TestFs;

namespace {

constexpr uint64_t kFirstDataPage = 3;  // 0 header, 1 and 2 the map slots of range 0

bool Contains(const Status& s, const std::string& needle) {
  return std::string(s.message()).find(needle) != std::string::npos;
}

std::unique_ptr<Volume> CreateVolume(io::FileSystem* fs, const std::string& path,
                                     uint32_t extent_pages = 256) {
  VolumeOptions options;
  options.extent_pages = extent_pages;
  std::unique_ptr<Volume> volume;
  Status s = Volume::Create(fs, path, options, &volume);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return volume;
}

std::unique_ptr<Volume> OpenVolume(io::FileSystem* fs, const std::string& path) {
  std::unique_ptr<Volume> volume;
  Status s = Volume::Open(fs, path, &volume);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(volume->CheckInvariants());
  return volume;
}

// Writes page id with `stamp` at the start of the payload and bytes derived from it in every
// sector, so that a torn write of two stamps is visible to the checksum.
void WriteStamped(Volume* volume, PageId id, uint64_t stamp) {
  AlignedBuffer page(kPageBytes);
  InitPage(page.data(), id, PageType::kBtreeLeaf);
  for (size_t b = kPageHeaderBytes; b < kPageBytes; ++b) page.data()[b] = char(stamp * 31 + b);
  std::memcpy(page.data() + kPageHeaderBytes, &stamp, sizeof(stamp));
  REQUIRE(volume->WritePage(id, page.data()).ok());
}

Status ReadStamp(Volume* volume, PageId id, uint64_t* stamp) {
  AlignedBuffer page(kPageBytes);
  SM_TRY(volume->ReadPage(id, page.data()));
  std::memcpy(stamp, page.data() + kPageHeaderBytes, sizeof(*stamp));
  return Status::OK();
}

std::vector<uint64_t> AllocatedSet(const Volume& volume) {
  std::vector<uint64_t> ids;
  for (uint64_t p = 0; p < volume.page_count(); ++p) {
    if (volume.IsAllocated(PageId(p))) ids.push_back(p);
  }
  return ids;
}

// The whole file as bytes, through the FileSystem (so it works for both implementations).
std::string FileBytes(io::FileSystem* fs, const std::string& path) {
  std::unique_ptr<io::File> file;
  io::OpenOptions options;
  options.read_only = true;
  options.direct = false;
  REQUIRE(fs->Open(path, options, &file).ok());
  uint64_t size = 0;
  REQUIRE(file->Size(&size).ok());
  std::string bytes(size, '\0');
  REQUIRE(file->Read(0, bytes.data(), size).ok());
  return bytes;
}

void OverwriteFile(io::FileSystem* fs, const std::string& path, uint64_t offset,
                   const std::string& bytes) {
  std::unique_ptr<io::File> file;
  io::OpenOptions options;
  options.create = true;
  options.direct = false;
  REQUIRE(fs->Open(path, options, &file).ok());
  REQUIRE(file->Write(offset, bytes.data(), bytes.size()).ok());
  REQUIRE(file->Sync().ok());
}

}  // namespace

TEST_CASE("allocate, free and reopen keep the allocation map", "[unit][volume]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::string path = t.Path("data.vol");
  std::set<uint64_t> expected;
  {
    auto volume = CreateVolume(t.fs, path, 64);
    REQUIRE(volume->page_count() == 64);
    REQUIRE(volume->allocated_pages() == 3);
    for (uint64_t i = 0; i < 40; ++i) {
      PageId id;
      REQUIRE(volume->AllocatePage(&id).ok());
      REQUIRE(id.value() == kFirstDataPage + i);  // lowest free first
      WriteStamped(volume.get(), id, id.value() * 10);
      expected.insert(id.value());
    }
    for (uint64_t p : {5, 9, 10, 30}) {
      REQUIRE(volume->FreePage(PageId(p)).ok());
      expected.erase(p);
    }
    PageId id;
    REQUIRE(volume->AllocatePage(&id).ok());
    REQUIRE(id.value() == 5);  // the lowest freed page comes back first
    expected.insert(5);
    REQUIRE(volume->CheckInvariants());
    REQUIRE(volume->Close().ok());
    REQUIRE(volume->AllocatePage(&id).IsClosed());
  }
  auto volume = OpenVolume(t.fs, path);
  for (uint64_t p : {0, 1, 2}) expected.insert(p);
  std::vector<uint64_t> allocated = AllocatedSet(*volume);
  REQUIRE(allocated == std::vector<uint64_t>(expected.begin(), expected.end()));
  REQUIRE(volume->allocated_pages() == expected.size());
  uint64_t stamp = 0;
  REQUIRE(ReadStamp(volume.get(), PageId(40), &stamp).ok());
  REQUIRE(stamp == 400);
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(id.value() == 9);
}

TEST_CASE("misuse is InvalidArgument and changes nothing", "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 16);
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(volume->FreePage(id).ok());
  Status double_free = volume->FreePage(id);
  REQUIRE(double_free.IsInvalidArgument());
  REQUIRE(Contains(double_free, "not allocated"));
  for (uint64_t meta : {0, 1, 2}) REQUIRE(volume->FreePage(PageId(meta)).IsInvalidArgument());
  REQUIRE(volume->FreePage(PageId(1000)).IsInvalidArgument());
  REQUIRE(volume->allocated_pages() == 3);

  AlignedBuffer page(kPageBytes);
  InitPage(page.data(), id, PageType::kBtreeLeaf);
  REQUIRE(volume->WritePage(id, page.data()).IsInvalidArgument());  // not allocated
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(volume->WritePage(PageId(id.value() + 1), page.data()).IsInvalidArgument());
  InitPage(page.data(), PageId(1), PageType::kAllocMap);
  REQUIRE(volume->WritePage(PageId(1), page.data()).IsInvalidArgument());  // metadata
  InitPage(page.data(), id, PageType::kAllocMap);
  REQUIRE(volume->WritePage(id, page.data()).IsInvalidArgument());  // metadata type
  Status beyond = volume->ReadPage(PageId(16), page.data());
  REQUIRE(beyond.IsInvalidArgument());
  REQUIRE(Contains(beyond, "beyond the end"));
  REQUIRE(volume->ReadPage(PageId(0), page.data()).ok());  // the header reads and verifies
  REQUIRE(PageTypeOf(page.data()) == PageType::kVolumeHeader);
  REQUIRE(volume->CheckInvariants());

  std::unique_ptr<Volume> again;
  Status exists = Volume::Create(t.fs, t.Path("v"), VolumeOptions{}, &again);
  REQUIRE(exists.IsInvalidArgument());
  REQUIRE(Contains(exists, "exists"));
  VolumeOptions bad;
  bad.extent_pages = 0;
  REQUIRE(Volume::Create(t.fs, t.Path("w"), bad, &again).IsInvalidArgument());
}

TEST_CASE("the volume grows by whole extents", "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 16);
  for (uint64_t i = 0; i < 13; ++i) {
    PageId id;
    REQUIRE(volume->AllocatePage(&id).ok());
  }
  REQUIRE(volume->page_count() == 16);
  REQUIRE(t.fault->used_bytes() == 16 * kPageBytes);
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(id.value() == 16);
  REQUIRE(volume->page_count() == 32);
  REQUIRE(t.fault->used_bytes() == 32 * kPageBytes);
  REQUIRE(volume->Sync().ok());
  volume.reset();
  volume = OpenVolume(t.fs, t.Path("v"));
  REQUIRE(volume->page_count() == 32);
  REQUIRE(volume->allocated_pages() == 17);
}

TEST_CASE("Reserve grows the file until enough pages are free, by whole extents",
          "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 16);
  REQUIRE(volume->page_count() == 16);  // 3 metadata pages and 13 free
  REQUIRE(volume->Reserve(13).ok());
  CHECK(volume->page_count() == 16);  // enough free already: nothing grows
  REQUIRE(volume->Reserve(40).ok());
  CHECK(volume->page_count() == 48);  // 3 + 40 pages rounded up to whole extents
  CHECK(t.fault->used_bytes() == 48 * kPageBytes);
  const uint64_t before = volume->page_count();
  for (int i = 0; i < 40; ++i) {  // the reserved pages are allocated without growing
    PageId id;
    REQUIRE(volume->AllocatePage(&id).ok());
  }
  CHECK(volume->page_count() == before);
  Status too_much = volume->Reserve(sm::space::kMaxVolumePages + 1);
  CHECK(too_much.IsNoSpace());
  CHECK(volume->page_count() == before);  // a refused reservation changes nothing
  REQUIRE(volume->Sync().ok());
  volume.reset();
  volume = OpenVolume(t.fs, t.Path("v"));
  CHECK(volume->page_count() == before);
  CHECK(volume->allocated_pages() == 43);
}

TEST_CASE("a 10,000-page volume on disk", "[unit][volume]") {
  TestFs t(true);
  std::string path = t.Path("big.vol");
  {
    auto volume = CreateVolume(t.fs, path, 256);
    for (uint64_t i = 0; i < 10000; ++i) {
      PageId id;
      REQUIRE(volume->AllocatePage(&id).ok());
      if (i % 97 == 0) WriteStamped(volume.get(), id, ~id.value());
    }
    for (uint64_t p = kFirstDataPage; p < 10000 + kFirstDataPage; p += 3) {
      if ((p - kFirstDataPage) % 97 != 0) REQUIRE(volume->FreePage(PageId(p)).ok());
    }
    REQUIRE(volume->CheckInvariants());
    REQUIRE(volume->Close().ok());
  }
  REQUIRE(std::filesystem::file_size(path) == 10240 * kPageBytes);  // 40 extents of 256
  auto volume = OpenVolume(t.fs, path);
  REQUIRE(volume->page_count() == 10240);
  uint64_t allocated = 3;
  for (uint64_t p = kFirstDataPage; p < 10000 + kFirstDataPage; ++p) {
    uint64_t i = p - kFirstDataPage;
    bool kept = p % 3 != 0 || i % 97 == 0;
    REQUIRE(volume->IsAllocated(PageId(p)) == kept);
    allocated += kept;
    if (i % 97 == 0) {
      uint64_t stamp = 0;
      REQUIRE(ReadStamp(volume.get(), PageId(p), &stamp).ok());
      REQUIRE(stamp == ~p);
    }
  }
  REQUIRE(volume->allocated_pages() == allocated);
  REQUIRE(!volume->IsAllocated(PageId(10000 + kFirstDataPage)));
}

TEST_CASE("volumes beyond one allocation-map range", "[unit][volume]") {
  TestFs t(false);
  const uint64_t range = space::kPagesPerRange;
  {
    auto volume = CreateVolume(t.fs, t.Path("v"), 8192);
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < range + 1000; ++i) {
      PageId id;
      REQUIRE(volume->AllocatePage(&id).ok());
      ids.push_back(id.value());
    }
    // The map slots of range 1 are never handed out.
    REQUIRE(std::find(ids.begin(), ids.end(), range) == ids.end());
    REQUIRE(std::find(ids.begin(), ids.end(), range + 1) == ids.end());
    REQUIRE(ids.back() == range + 1000 + kFirstDataPage + 1);
    REQUIRE(volume->FreePage(PageId(range - 1)).ok());
    REQUIRE(volume->FreePage(PageId(range + 2)).ok());
    REQUIRE(volume->FreePage(PageId(range)).IsInvalidArgument());
    REQUIRE(volume->CheckInvariants());
    REQUIRE(volume->Close().ok());
  }
  auto volume = OpenVolume(t.fs, t.Path("v"));
  REQUIRE(!volume->IsAllocated(PageId(range - 1)));
  REQUIRE(volume->IsAllocated(PageId(range)));
  REQUIRE(!volume->IsAllocated(PageId(range + 2)));
  REQUIRE(volume->IsAllocated(PageId(range + 3)));
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(id.value() == range - 1);
}

TEST_CASE("files that are not valid volumes are rejected and left untouched",
          "[unit][volume]") {
  bool posix = GENERATE(true, false);
  TestFs t(posix);
  std::string good = t.Path("good.vol");
  {
    auto volume = CreateVolume(t.fs, good, 32);
    PageId id;
    REQUIRE(volume->AllocatePage(&id).ok());
    REQUIRE(volume->Close().ok());
  }
  const std::string original = FileBytes(t.fs, good);
  std::string bad = t.Path("bad.vol");

  auto expect_rejected = [&](const std::string& bytes, bool invalid_argument,
                             const std::string& reason) {
    OverwriteFile(t.fs, bad, 0, bytes);
    uint64_t writes_before = t.fault ? t.fault->counters().writes : 0;
    std::unique_ptr<Volume> volume;
    Status s = Volume::Open(t.fs, bad, &volume);
    INFO(s.ToString());
    REQUIRE(!s.ok());
    REQUIRE(volume == nullptr);
    REQUIRE((invalid_argument ? s.IsInvalidArgument() : s.IsCorruption()));
    REQUIRE(Contains(s, reason));
    REQUIRE(Contains(s, bad));
    REQUIRE(FileBytes(t.fs, bad) == bytes);  // nothing was written
    if (t.fault) REQUIRE(t.fault->counters().writes == writes_before);
    REQUIRE(t.fs->Delete(bad).ok());
  };

  std::mt19937_64 rng(1);
  std::string noise(2 * kPageBytes, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  expect_rejected(noise, true, "not a volume");
  expect_rejected(std::string(100, 'x'), false, "truncated");
  expect_rejected(original.substr(0, 16 * kPageBytes), false, "truncated");

  std::string newer = original;
  uint32_t version = space::kVolumeFormatVersion + 1;
  std::memcpy(newer.data() + kPageHeaderBytes + 8, &version, sizeof(version));
  SealPage(newer.data());
  expect_rejected(newer, true, "newer");

  std::string flipped = original;
  flipped[kPageBytes / 2] ^= 4;  // inside the header page
  expect_rejected(flipped, false, "page 0: checksum mismatch");

  std::string no_map = original;
  std::memset(no_map.data() + 1 * kPageBytes, 0xab, 2 * kPageBytes);  // both map slots
  expect_rejected(no_map, false, "no valid allocation map");

  std::unique_ptr<Volume> volume;
  REQUIRE(Volume::Open(t.fs, t.Path("missing.vol"), &volume).IsNotFound());
  OverwriteFile(t.fs, bad, 0, "");
  REQUIRE(Volume::Open(t.fs, bad, &volume).IsInvalidArgument());  // empty file
  REQUIRE(FileBytes(t.fs, good) == original);
}

TEST_CASE("disk full during growth is NoSpace and the volume stays consistent",
          "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 8);
  t.fault->SetSizeLimit(t.fault->used_bytes() + 8 * kPageBytes);  // room for one more extent
  std::vector<PageId> ids;
  Status s;
  for (;;) {
    PageId id;
    s = volume->AllocatePage(&id);
    if (!s.ok()) break;
    ids.push_back(id);
  }
  REQUIRE(s.IsNoSpace());
  REQUIRE(ids.size() == 13);  // 5 + 8 data pages
  REQUIRE(volume->page_count() == 16);
  REQUIRE(volume->allocated_pages() == 16);
  REQUIRE(volume->CheckInvariants());
  PageId id;
  REQUIRE(volume->AllocatePage(&id).IsNoSpace());  // still full, still consistent
  REQUIRE(volume->FreePage(ids[4]).ok());
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(id == ids[4]);
  REQUIRE(volume->Sync().ok());
  t.fault->SetSizeLimit(io::FaultInjectionFileSystem::kNoSizeLimit);
  REQUIRE(volume->AllocatePage(&id).ok());
  REQUIRE(volume->page_count() == 24);
  REQUIRE(volume->Close().ok());
  auto reopened = OpenVolume(t.fs, t.Path("v"));
  REQUIRE(reopened->allocated_pages() == 17);
}

TEST_CASE("a torn page write is caught by the checksum after a crash", "[unit][volume][crash]") {
  size_t torn = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    TestFs t(false, seed);
    std::vector<PageId> ids;
    {
      auto volume = CreateVolume(t.fs, t.Path("v"), 64);
      for (int i = 0; i < 16; ++i) {
        PageId id;
        REQUIRE(volume->AllocatePage(&id).ok());
        WriteStamped(volume.get(), id, 1);
        ids.push_back(id);
      }
      REQUIRE(volume->Sync().ok());
      for (PageId id : ids) WriteStamped(volume.get(), id, 2);
      t.fault->SimulateCrash(io::CrashMode::kTearUnsynced);
    }
    auto volume = OpenVolume(t.fs, t.Path("v"));
    for (PageId id : ids) {
      REQUIRE(volume->IsAllocated(id));
      uint64_t stamp = 0;
      Status s = ReadStamp(volume.get(), id, &stamp);
      if (s.ok()) {
        REQUIRE((stamp == 1 || stamp == 2));
      } else {
        REQUIRE(s.IsCorruption());
        REQUIRE(Contains(s, "page " + std::to_string(id.value()) + ": checksum mismatch"));
        ++torn;
      }
    }
  }
  REQUIRE(torn > 0);
}

TEST_CASE("a bit flipped on disk is reported as corruption of that page", "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 16);
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());
  WriteStamped(volume.get(), id, 5);
  std::string page(kPageBytes, '\0');
  {
    std::unique_ptr<io::File> raw;
    io::OpenOptions options;
    options.direct = false;
    REQUIRE(t.fs->Open(t.Path("v"), options, &raw).ok());
    REQUIRE(raw->Read(id.value() * kPageBytes, page.data(), kPageBytes).ok());
    page[1000] ^= 0x20;
    REQUIRE(raw->Write(id.value() * kPageBytes, page.data(), kPageBytes).ok());
  }
  uint64_t stamp = 0;
  Status s = ReadStamp(volume.get(), id, &stamp);
  REQUIRE(s.IsCorruption());
  REQUIRE(Contains(s, "page " + std::to_string(id.value()) + ": checksum mismatch"));
}

// A crash in the middle of Sync (fdatasync fails after the map pages or the header were
// written, and the failed sync persisted only some of them): the ping-pong map slots and the
// single-sector header must leave the old or the new allocation state, never an unreadable
// volume.
TEST_CASE("a crash inside Sync leaves the old or the new allocation state",
          "[random][volume][crash]") {
  uint64_t seed = test::TestSeed("volume crash inside sync");
  std::mt19937_64 rng(seed);
  std::set<std::string> outcomes;
  for (int round = 0; round < 80; ++round) {
    TestFs t(false, rng());
    std::vector<uint64_t> old_state, new_state;
    uint64_t old_count = 0, new_count = 0;
    {
      auto volume = CreateVolume(t.fs, t.Path("v"), 16);
      for (int i = 0; i < 100; ++i) {
        PageId id;
        REQUIRE(volume->AllocatePage(&id).ok());
      }
      for (int sync = 0; sync < 1 + round % 3; ++sync) {  // alternate the slots a few times
        for (int j = 0; j < 5; ++j) {
          uint64_t page = kFirstDataPage + rng() % 100;
          if (volume->IsAllocated(PageId(page))) REQUIRE(volume->FreePage(PageId(page)).ok());
        }
        REQUIRE(volume->Sync().ok());
      }
      old_state = AllocatedSet(*volume);
      old_count = volume->page_count();
      for (int j = 0; j < 20; ++j) {
        uint64_t page = kFirstDataPage + rng() % 100;
        if (volume->IsAllocated(PageId(page))) REQUIRE(volume->FreePage(PageId(page)).ok());
      }
      bool grow = rng() % 2 == 0;
      for (int i = 0; i < (grow ? 200 : 10); ++i) {
        PageId id;
        REQUIRE(volume->AllocatePage(&id).ok());
      }
      new_state = AllocatedSet(*volume);
      new_count = volume->page_count();
      // Growth makes Sync sync twice (maps, then header); fail either.
      t.fault->FailNth(io::FaultOp::kSync, grow ? 1 + rng() % 2 : 1);
      Status s = volume->Sync();
      REQUIRE(s.IsFatal());
      PageId id;
      REQUIRE(volume->AllocatePage(&id).IsFatal());  // the fatal state is sticky
      REQUIRE(volume->Sync().IsFatal());
      t.fault->SimulateCrash(io::CrashMode::kTearUnsynced);
    }
    auto volume = OpenVolume(t.fs, t.Path("v"));
    uint64_t count = volume->page_count();
    REQUIRE((count == old_count || count == new_count));
    std::vector<uint64_t> new_masked;
    for (uint64_t p : new_state) {
      if (p < count) new_masked.push_back(p);
    }
    std::vector<uint64_t> found = AllocatedSet(*volume);
    if (found == old_state && count == old_count) {
      outcomes.insert("old");
    } else {
      REQUIRE(found == new_masked);
      outcomes.insert(count == new_count ? "new" : "new map, old header");
    }
  }
  REQUIRE(outcomes.count("old") == 1);
  REQUIRE(outcomes.size() >= 2);
}

TEST_CASE("after a failed fdatasync the volume refuses writes but still reads",
          "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 16);
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());
  WriteStamped(volume.get(), id, 3);
  t.fault->FailNth(io::FaultOp::kSync, 1);
  Status s = volume->Sync();
  REQUIRE(s.IsFatal());
  REQUIRE(Contains(s, "fdatasync"));
  AlignedBuffer page(kPageBytes);
  InitPage(page.data(), id, PageType::kBtreeLeaf);
  REQUIRE(volume->WritePage(id, page.data()).IsFatal());
  REQUIRE(volume->FreePage(id).IsFatal());
  uint64_t stamp = 0;
  REQUIRE(ReadStamp(volume.get(), id, &stamp).ok());
  REQUIRE(stamp == 3);
  REQUIRE(volume->Close().IsFatal());
  REQUIRE(volume->ReadPage(id, page.data()).IsClosed());
}

TEST_CASE("redo of allocations and frees is idempotent and grows the volume",
          "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 16);
  REQUIRE(volume->RedoAllocate(PageId(40)).ok());
  REQUIRE(volume->RedoAllocate(PageId(40)).ok());
  REQUIRE(volume->page_count() == 48);
  REQUIRE(volume->IsAllocated(PageId(40)));
  REQUIRE(volume->allocated_pages() == 4);
  REQUIRE(volume->RedoFree(PageId(40)).ok());
  REQUIRE(volume->RedoFree(PageId(40)).ok());
  REQUIRE(volume->RedoFree(PageId(1000)).ok());  // beyond the end: nothing to free
  REQUIRE(!volume->IsAllocated(PageId(40)));
  REQUIRE(volume->RedoAllocate(PageId(0)).IsInvalidArgument());
  REQUIRE(volume->RedoFree(PageId(2)).IsInvalidArgument());
  REQUIRE(volume->CheckInvariants());
}

TEST_CASE("concurrent allocation from fibers on two workers and a plain thread",
          "[unit][volume]") {
  TestFs t(false);
  auto volume = CreateVolume(t.fs, t.Path("v"), 32);
  auto rt = test::MakeRuntime(2);
  constexpr int kFibers = 8, kEach = 300;
  std::vector<std::vector<uint64_t>> got(kFibers + 1);
  std::atomic<int> failures{0};
  threads::WaitGroup wg;
  wg.Add(kFibers);
  auto work = [&](int who) {
    for (int i = 0; i < kEach; ++i) {
      PageId id;
      if (!volume->AllocatePage(&id).ok()) ++failures;
      got[who].push_back(id.value());
      if (i % 3 == 0) {
        if (!volume->FreePage(id).ok()) ++failures;
        got[who].pop_back();
      }
      if (i % 50 == 0 && !volume->Sync().ok()) ++failures;
    }
  };
  for (int f = 0; f < kFibers; ++f) {
    rt->Spawn([&, f] {
      work(f);
      wg.Done();
    });
  }
  work(kFibers);
  wg.Wait();
  rt->Shutdown();
  REQUIRE(failures.load() == 0);
  std::set<uint64_t> all;
  size_t total = 0;
  for (const auto& ids : got) {
    all.insert(ids.begin(), ids.end());
    total += ids.size();
  }
  REQUIRE(all.size() == total);  // no page handed out twice
  REQUIRE(volume->allocated_pages() == total + 3);
  for (uint64_t p : all) REQUIRE(volume->IsAllocated(PageId(p)));
  REQUIRE(volume->CheckInvariants());
}

// Regression: a Sync whose header write failed (or a crash between its map and header
// writes) leaves valid map pages for a range that the durable header does not cover. When the
// volume grows into that range again, its first map write must overwrite both slots, or the
// stale page, if its sequence is higher, wins at the next Open.
TEST_CASE("stale map slots from an interrupted growth are overwritten", "[unit][volume][crash]") {
  TestFs t(false);
  const uint64_t range1 = space::kPagesPerRange;
  const std::string path = t.Path("v");
  auto volume = CreateVolume(t.fs, path, 8192);
  for (uint64_t i = 0; i < 7 * 8192 - 3; ++i) {
    PageId id;
    REQUIRE(volume->AllocatePage(&id).ok());
  }
  REQUIRE(volume->Close().ok());
  REQUIRE(volume->page_count() < range1);
  {
    // The leftover: a valid map page of range 1 in its slot 1, sequence 3, with page
    // range1 + 40 allocated.
    space::AllocMap stale;
    stale.Grow(range1 + 100);
    stale.Set(range1 + 40);
    AlignedBuffer page(kPageBytes);
    stale.Serialize(1, 1, volume->creation_id(), 3, page.data());
    SealPage(page.data());
    std::unique_ptr<io::File> raw;
    REQUIRE(t.fs->Open(path, io::OpenOptions{}, &raw).ok());
    REQUIRE(raw->Write((range1 + 1) * kPageBytes, page.data(), kPageBytes).ok());
    REQUIRE(raw->Sync().ok());
  }
  volume = OpenVolume(t.fs, path);
  PageId id;
  REQUIRE(volume->AllocatePage(&id).ok());  // grows into range 1
  REQUIRE(volume->page_count() > range1 + 2);
  REQUIRE(volume->RedoAllocate(PageId(range1 + 50)).ok());
  std::vector<uint64_t> expected = AllocatedSet(*volume);
  REQUIRE(volume->Close().ok());
  volume = OpenVolume(t.fs, path);
  REQUIRE(AllocatedSet(*volume) == expected);
  REQUIRE(!volume->IsAllocated(PageId(range1 + 40)));
  REQUIRE(volume->IsAllocated(PageId(range1 + 50)));
}
