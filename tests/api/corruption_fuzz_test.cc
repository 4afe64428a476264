// The corruption fuzzer: damage one spot of a cleanly closed database, reopen it, and demand
// that the damage is reported - at Open, by a read, or by Verify - naming the page, the log
// LSN or the file, and that no read ever returns wrong data as if it were good.
//
// Phases (Zero's test_restart shape): build a database once on the in-memory file system
// (several tables with multi-level B-trees, updates and deletes, a dropped table, a small log
// segment size so the log rolls over many times) and close it; keep a model of every table.
// Then each trial copies the closed database to a fresh directory, applies one corruption,
// and opens the copy:
//   Open fails                  -> "at open"; the status must be Corruption (InvalidArgument
//                                  for a volume header that no longer says it is a volume)
//                                  and must name where (page id, LSN, or file name).
//   reads (scans both ways, a Get for every model key and for deleted keys) -> any difference
//                                  from the model with an OK status is WRONG DATA; Corruption
//                                  is "on read".
//   VerifyWithReport            -> "by verify" if nothing before saw it; it must also report
//                                  whatever the reads saw.
//   a damaged map copy          -> "repaired at open" (see below).
//   nothing reported            -> UNDETECTED.
// The test fails on any wrong data, undetected corruption, unexpected error or unnamed place.
//
// Targets, chosen from the base copy once (CollectRegions), each a byte range that matters:
//   data page       an allocated page in a tree (catalog or table): the page checksum covers
//                   all 8 KiB, and every such page is read by Verify's tree walk.
//   dropped page    an allocated page of the dropped table: in no tree (the test keeps them
//                   allocated, as a crash between a drop and the reclamation of its pages
//                   does), so only Verify's page pass reads it. The other allocated pages
//                   outside the trees are leaves the B-tree retired (btree_merge.cc): they
//                   hold nothing and nothing reads them but that pass, so they count as dead
//                   bytes (below). Most of such a page is zeros, and a zeroed first sector
//                   leaves one Verify cannot tell from a page allocated and not yet written.
//   volume header   page 0 (checked at Open).
//   map copy        an allocation-map page. The map is kept twice on purpose (a torn map write
//                   must not lose the map), so Open takes the valid copy, re-marks every tree
//                   page allocated (the survivor may be older) and reports the damaged copy in
//                   its OpenReport, as Verify does: "repaired at open".
//   log record      the live log, [start LSN, end): for a closed database the final
//                   checkpoint's records, which Open reads.
//   segment header  the 36 meaningful bytes of the header block of each segment holding live
//                   log (the rest of the block is zero padding nobody reads).
//   control file    the 52 meaningful bytes of log.control (likewise).
//   meta file       sm.meta (one checksummed block).
// Dead bytes are not targets of the must-detect rule, because no reader ever uses them, so
// damage there changes nothing: free pages, the part of a live segment before the start LSN
// (records a checkpoint has made unnecessary; Close truncates the log to its last checkpoint),
// the zeroed space after the end of the log, retired spare segments, retired leaves, the
// padding of the header blocks. A share of the trials samples them anyway ("dead"), where any
// outcome but wrong data, a crash or a hang is fine.
//
// Kinds: a bit flip (1-8 bytes from a random offset in the region, each XORed with a random
// non-zero mask) or a zeroed, aligned 512-byte sector containing a random offset of the region;
// a corruption that would change no byte of its region is drawn again. A fifth of the trials
// is a resealed flip instead: 1-4 bytes flipped and the checksum of the page, log record or
// block recomputed, so that the damage reaches the structure checks behind the checksum (the
// length fields, links, page ids and slot arrays a decoder must not trust). No detection is
// promised there - a valid checksum over changed bytes looks like a correct write of other
// data - only that Open, Verify and the reads of a database Verify accepts neither crash nor
// hang (ExamineResealed).
//
// The trial's seed is printed (SM_SEED replays the whole run). A watchdog aborts, naming the
// trial, if one takes longer than a minute, so a hang shows up as a named failure rather than
// a ctest timeout.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "index/btree_node.h"
#include "log/log_format.h"
#include "log/log_reader.h"
#include "log/log_record.h"
#include "sm/api/api_internal.h"
#include "sm/common/crc32c.h"
#include "sm/io/aligned_buffer.h"
#include "sm/io/testing/fault_file.h"
#include "sm/page/page.h"
#include "sm/sm.h"
#include "sm/space/alloc_map.h"
#include "sm/space/volume.h"
#include "tests/fs_util.h"
#include "tests/test_util.h"

namespace sm {
namespace {

constexpr char kBaseDir[] = "/base";
constexpr char kTrialDir[] = "/trial";
constexpr uint64_t kSectorBytes = io::FaultInjectionFileSystem::kSectorBytes;

using Model = std::map<std::string, std::map<std::string, std::string>>;  // table -> rows

Options FuzzOptions(io::FileSystem* fs, const std::string& path) {
  Options o;
  o.path = path;
  o.file_system = fs;
  o.create_if_missing = path == kBaseDir;
  o.buffer_pool_bytes = 2u << 20;  // smaller than the data: pages are evicted while loading
  o.log_segment_bytes = 64u << 10;
  o.log_buffer_bytes = 64u << 10;
  o.checkpoint_interval = std::chrono::milliseconds(0);
  o.background_write_interval = std::chrono::milliseconds(0);
  o.workers = 1;
  o.direct_io = false;
  return o;
}

// ---- The base database ------------------------------------------------------------------

std::string RandomValue(std::mt19937_64& rng, size_t min_bytes, size_t max_bytes) {
  std::string v(min_bytes + rng() % (max_bytes - min_bytes + 1), '\0');
  for (char& c : v) c = static_cast<char>('a' + rng() % 26);
  return v;
}

// Long keys keep the inner fanout low, so a few thousand rows make a three-level tree.
std::string LongKey(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "acct%08d", i);
  // The distinguishing digits come last, so separators cannot be shortened.
  return std::string(100, static_cast<char>('k' + i % 7)) + buf;
}

std::string ShortKey(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "o%07d", i);
  return buf;
}

// Runs ops over `rows` in transactions of `batch`, committing (or sometimes aborting, which the
// model ignores).
void Load(Database* db, Table* t, std::map<std::string, std::string>* rows,
          const std::vector<std::pair<std::string, std::string>>& puts, std::mt19937_64& rng) {
  for (size_t i = 0; i < puts.size(); i += 50) {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    std::map<std::string, std::string> staged = *rows;
    for (size_t j = i; j < std::min(puts.size(), i + 50); ++j) {
      const auto& [key, value] = puts[j];
      if (value.empty()) {
        Status s = t->Delete(txn.get(), key);
        REQUIRE((s.ok() || s.IsNotFound()));
        staged.erase(key);
      } else {
        REQUIRE(t->Upsert(txn.get(), key, value).ok());
        staged[key] = value;
      }
    }
    if (rng() % 10 == 0) {
      REQUIRE(txn->Abort().ok());
    } else {
      REQUIRE(txn->Commit().ok());
      *rows = std::move(staged);
    }
  }
}

struct Base {
  Model model;
  std::vector<uint64_t> dropped_pages;  // allocated pages of the dropped table
};

void BuildBase(io::FileSystem* fs, uint64_t seed, Base* base) {
  std::mt19937_64 rng(seed);
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(FuzzOptions(fs, kBaseDir), &db).ok());
  Table *accounts = nullptr, *orders = nullptr, *by_value = nullptr, *scratch = nullptr;
  REQUIRE(db->CreateTable("accounts", &accounts).ok());
  REQUIRE(db->CreateTable("orders", &orders).ok());
  REQUIRE(db->CreateIndex("orders_by_value", &by_value).ok());
  REQUIRE(db->CreateTable("scratch", &scratch).ok());
  std::vector<std::pair<std::string, std::string>> puts;
  for (int i = 0; i < 2500; ++i) puts.emplace_back(LongKey(i), RandomValue(rng, 10, 300));
  for (int i = 0; i < 1500; ++i) {  // updates and deletes
    int k = static_cast<int>(rng() % 2500);
    puts.emplace_back(LongKey(k), rng() % 3 == 0 ? "" : RandomValue(rng, 10, 300));
  }
  Load(db.get(), accounts, &base->model["accounts"], puts, rng);
  puts.clear();
  for (int i = 0; i < 2000; ++i) puts.emplace_back(ShortKey(i), RandomValue(rng, 40, 600));
  for (int i = 0; i < 800; ++i) puts.emplace_back(ShortKey(static_cast<int>(rng() % 2000)), "");
  Load(db.get(), orders, &base->model["orders"], puts, rng);
  puts.clear();
  for (const auto& [key, value] : base->model["orders"]) {
    puts.emplace_back(IndexKey(value.substr(0, 6), key), "x");
  }
  Load(db.get(), by_value, &base->model["orders_by_value"], puts, rng);
  puts.clear();
  for (int i = 0; i < 600; ++i) puts.emplace_back(ShortKey(i), RandomValue(rng, 100, 400));
  std::map<std::string, std::string> scratch_rows;
  Load(db.get(), scratch, &scratch_rows, puts, rng);
  // The dropped table's pages stay allocated in no tree.
  static_cast<api::DatabaseImpl*>(db.get())->TEST_KeepDroppedPages();
  std::vector<PageId> pages;
  index::VerifyOptions verify;
  verify.pages = &pages;
  REQUIRE(static_cast<api::TableImpl*>(scratch)->tree()->Verify(nullptr, verify).ok());
  for (PageId id : pages) base->dropped_pages.push_back(id.value());
  REQUIRE(db->DropTable("scratch").ok());
  std::string report;
  Status verified = static_cast<api::DatabaseImpl*>(db.get())->VerifyWithReport(&report);
  INFO(verified.ToString());
  REQUIRE(verified.ok());
  std::printf("%s", report.c_str());
  REQUIRE(db->Close().ok());
}

// ---- Targets ------------------------------------------------------------------------------

enum class Target : uint8_t {
  kDataPage,
  kDroppedPage,
  kVolumeHeader,
  kMapCopy,
  kLogRecord,
  kSegmentHeader,
  kControlFile,
  kMetaFile,
  kDead,
};
constexpr int kTargetCount = 9;
const char* TargetName(Target t) {
  static const char* const kNames[kTargetCount] = {"data page",    "dropped page", "volume header",
                                                   "map copy",     "log record",   "segment header",
                                                   "control file", "meta file",    "dead"};
  return kNames[static_cast<int>(t)];
}

// A byte range of a file (relative to the database directory) and what it is.
struct Region {
  Target target;
  std::string file;
  uint64_t begin = 0, end = 0;
  uint64_t page = 0;  // for page targets: the page id the report must name
  std::string what;   // for messages
};

struct Regions {
  std::vector<Region> by_target[kTargetCount];
  void Add(Region r) {
    if (r.begin < r.end) by_target[static_cast<int>(r.target)].push_back(std::move(r));
  }
};

bool IsRetiredLeaf(space::Volume* volume, uint64_t id) {
  io::AlignedBuffer page(kPageBytes);
  return volume->ReadPage(PageId(id), page.data()).ok() && index::Node::IsRetired(page.data());
}

void CollectVolume(io::FileSystem* fs, const Base& base, Regions* out) {
  std::unique_ptr<space::Volume> volume;
  REQUIRE(space::Volume::Open(fs, std::string(kBaseDir) + "/data.sm", &volume).ok());
  for (uint64_t id = 0; id < volume->page_count(); ++id) {
    Region r{Target::kDead,         "data.sm", id * kPageBytes,
             (id + 1) * kPageBytes, id,        "page " + std::to_string(id)};
    bool dropped = std::count(base.dropped_pages.begin(), base.dropped_pages.end(), id) != 0;
    if (id == 0) {
      r.target = Target::kVolumeHeader;
    } else if (space::AllocMap::IsMetadataPage(id)) {
      r.target = Target::kMapCopy;
    } else if (!volume->IsAllocated(PageId(id))) {
      r.target = Target::kDead;  // a free page: never read
    } else if (IsRetiredLeaf(volume.get(), id)) {
      r.target = Target::kDead;  // holds nothing; only Verify's page pass reads it
    } else {
      r.target = dropped ? Target::kDroppedPage : Target::kDataPage;
    }
    out->Add(r);
  }
  // Destroyed without Close: opening wrote nothing and closing must not either.
}

// The live log is [control start LSN, end), found by reading it as Open does.
void CollectLog(io::FileSystem* fs, Regions* out) {
  const std::string dir = std::string(kBaseDir) + "/log";
  std::string block;
  REQUIRE(test::ReadWholeFile(fs, dir + "/" + log::kControlFileName, &block).ok());
  log::ControlBlock control;
  REQUIRE(log::DecodeControl(block.data(), "control", &control).ok());
  std::unique_ptr<log::LogReader> reader;
  REQUIRE(log::LogReader::Open(fs, dir, &reader).ok());
  REQUIRE(reader->Seek(Lsn(control.start_lsn)).ok());
  log::LogRecordView record;
  Status s;
  while ((s = reader->Next(&record)).ok()) {
  }
  REQUIRE(s.IsNotFound());
  const uint64_t start = control.start_lsn, end = reader->position().value();
  REQUIRE(start < end);
  log::SegmentGeometry g(control.segment_bytes);
  constexpr uint64_t kMetaBlockBytes = 36;  // 8 magic, 4 version, 4 count, 2 words, 4 crc
  out->Add({Target::kControlFile, std::string("log/") + log::kControlFileName, 0, 52, 0, ""});
  out->Add({Target::kDead, std::string("log/") + log::kControlFileName, 52, log::kLogBlockBytes, 0,
            "control padding"});
  std::vector<std::string> names;
  REQUIRE(fs->ListDir(dir, &names).ok());
  for (const std::string& name : names) {
    uint64_t seg = 0;
    std::string file = "log/" + name;
    if (!log::ParseSegmentFileName(name, &seg)) {
      if (name != log::kControlFileName) {
        out->Add({Target::kDead, file, 0, control.segment_bytes, 0, "spare " + name});
      }
      continue;
    }
    const uint64_t seg_end = g.SegmentEnd(seg);
    const bool live = seg < end && seg_end > start;
    out->Add({live ? Target::kSegmentHeader : Target::kDead, file, 0, kMetaBlockBytes, 0,
              "header of " + name});
    out->Add({Target::kDead, file, kMetaBlockBytes, log::kSegmentHeaderBytes, 0, "padding"});
    uint64_t lo = std::clamp(start, seg, seg_end), hi = std::clamp(end, seg, seg_end);
    out->Add({Target::kDead, file, g.FileOffset(seg, seg), g.FileOffset(seg, lo), 0,
              "before the start LSN in " + name});
    out->Add({Target::kLogRecord, file, g.FileOffset(seg, lo), g.FileOffset(seg, hi), 0,
              "LSN " + std::to_string(lo) + ".." + std::to_string(hi)});
    out->Add({Target::kDead, file, g.FileOffset(seg, hi), control.segment_bytes, 0,
              "after the end of the log in " + name});
  }
}

Regions CollectRegions(io::FileSystem* fs, const Base& base) {
  Regions regions;
  CollectVolume(fs, base, &regions);
  CollectLog(fs, &regions);
  std::string meta;
  REQUIRE(test::ReadWholeFile(fs, std::string(kBaseDir) + "/sm.meta", &meta).ok());
  regions.Add({Target::kMetaFile, "sm.meta", 0, meta.size(), 0, ""});
  for (int t = 0; t < kTargetCount; ++t) {
    std::printf("  %-15s %zu regions\n", TargetName(static_cast<Target>(t)),
                regions.by_target[t].size());
    if (t != static_cast<int>(Target::kDead)) REQUIRE(!regions.by_target[t].empty());
  }
  return regions;
}

// ---- Corruptions --------------------------------------------------------------------------

enum class Kind : uint8_t { kBitFlip, kZeroSector, kResealed };
constexpr int kKindCount = 3;
const char* KindName(Kind k) {
  static const char* const kNames[kKindCount] = {"bit flip", "zeroed sector", "resealed flip"};
  return kNames[static_cast<int>(k)];
}

// The checksummed structure of `region` that holds file offset `at`: its bytes [*lo, *hi). False
// if there is none (a log record that runs into the next segment file).
bool SealedBounds(const Region& region, uint64_t at, const std::string& bytes, uint64_t* lo,
                  uint64_t* hi) {
  if (region.target != Target::kLogRecord) {
    *lo = region.begin;
    *hi = region.end;
    return region.target != Target::kDead;
  }
  for (uint64_t pos = region.begin; pos < region.end;) {  // the region starts at a record
    log::RecordHeader header;
    std::memcpy(&header, bytes.data() + pos, sizeof header);
    uint64_t end = pos + header.length;
    if (header.length < log::kRecordHeaderBytes || end > region.end) return false;
    if (at < end) {
      *lo = pos;
      *hi = end;
      return true;
    }
    pos = end;
  }
  return false;
}

// Recomputes the checksum of the structure [lo, hi) of `region` after its bytes were changed,
// so that the damage gets past the checksum to the structure checks behind it.
void Reseal(const Region& region, uint64_t lo, uint64_t hi, std::string* bytes) {
  char* b = bytes->data();
  auto store = [&](uint64_t crc_at, uint32_t crc) { std::memcpy(b + crc_at, &crc, 4); };
  switch (region.target) {
    case Target::kControlFile:  // log_format.h: CRC of [0, 48) at 48
      return store(48, Crc32c(b, 48));
    case Target::kSegmentHeader:  // CRC of [0, 32) at 32
      return store(32, Crc32c(b, 32));
    case Target::kMetaFile:  // CRC of the block but its last 4 bytes, there
      return store(hi - 4, Crc32c(b, hi - 4));
    case Target::kLogRecord: {  // log_record.h: CRC of [64, length) and then of [4, 64)
      uint32_t crc = Crc32c(b + lo + log::kRecordHeaderBytes, hi - lo - log::kRecordHeaderBytes);
      return store(lo, Crc32c(b + lo + 4, log::kRecordHeaderBytes - 4, crc));
    }
    default:  // a page
      return SealPage(b + lo);
  }
}

// Damages bytes of `region` in `bytes` (the whole file); false if nothing in the region changed.
bool Corrupt(Kind kind, const Region& region, std::mt19937_64& rng, std::string* bytes,
             std::string* what) {
  const std::string before = bytes->substr(region.begin, region.end - region.begin);
  uint64_t at = region.begin + rng() % (region.end - region.begin);
  if (kind == Kind::kResealed) {
    uint64_t lo = 0, hi = 0;
    if (!SealedBounds(region, at, *bytes, &lo, &hi)) return false;
    uint64_t n = std::min<uint64_t>(1 + rng() % 4, hi - at);
    for (uint64_t i = 0; i < n; ++i) (*bytes)[at + i] ^= static_cast<char>(1 + rng() % 255);
    Reseal(region, lo, hi, bytes);
    *what = "flip " + std::to_string(n) + " bytes at " + std::to_string(at) + ", resealed";
  } else if (kind == Kind::kBitFlip) {
    uint64_t n = std::min<uint64_t>(1 + rng() % 8, region.end - at);
    for (uint64_t i = 0; i < n; ++i) (*bytes)[at + i] ^= static_cast<char>(1 + rng() % 255);
    *what = "flip " + std::to_string(n) + " bytes at " + std::to_string(at);
  } else {
    uint64_t sector = at / kSectorBytes * kSectorBytes;
    uint64_t n = std::min<uint64_t>(kSectorBytes, bytes->size() - sector);
    std::memset(bytes->data() + sector, 0, n);
    *what = "zero sector at " + std::to_string(sector);
  }
  return bytes->compare(region.begin, region.end - region.begin, before) != 0;
}

// ---- One trial ----------------------------------------------------------------------------

enum class Outcome : uint8_t { kAtOpen, kOnRead, kByVerify, kRepairedAtOpen, kUndetected, kCount };
const char* OutcomeName(Outcome o) {
  static const char* const kNames[] = {"at open", "on read", "by verify", "repaired at open",
                                       "undetected"};
  return kNames[static_cast<int>(o)];
}

struct Tally {
  uint64_t trials = 0;
  uint64_t by_target[kTargetCount] = {};
  uint64_t by_kind[kKindCount] = {};
  // Resealed flips (the checksum recomputed): no detection is promised - a valid checksum over
  // changed bytes is what a correct write of other data looks like - only that nothing crashes
  // or hangs and that a database Verify accepts can be read.
  uint64_t reseal_detected = 0, reseal_accepted_same = 0, reseal_accepted_changed = 0;
  uint64_t outcome[static_cast<int>(Outcome::kCount)] = {};
  uint64_t dead_reported = 0, dead_harmless = 0;
  uint64_t wrong_data = 0;
  uint64_t unexpected = 0;  // an error that is not Corruption, or a report naming no place
  std::vector<std::string> failures;  // the first few, for the test's output

  void Fail(const std::string& why) {
    if (failures.size() < 20) failures.push_back(why);
  }
};

// Reads every table of the model completely; the first difference is *wrong.
Status ReadAll(Database* db, const Model& model, std::string* wrong) {
  std::vector<std::string> names = db->TableNames();
  std::vector<std::string> expected;
  for (const auto& [name, rows] : model) expected.push_back(name);
  if (names != expected) {
    *wrong = "table names differ";
    return Status::OK();
  }
  std::unique_ptr<Transaction> txn;
  SM_TRY(db->Begin(&txn, Isolation::kReadCommitted));
  for (const auto& [name, rows] : model) {
    Table* t = nullptr;
    SM_TRY(db->OpenTable(name, &t));
    for (bool reverse : {false, true}) {
      ScanOptions scan;
      scan.reverse = reverse;
      std::unique_ptr<Cursor> cursor;
      SM_TRY(t->NewCursor(txn.get(), scan, &cursor));
      auto fwd = rows.begin();
      auto rev = rows.rbegin();
      while (cursor->Valid()) {
        if (reverse ? rev == rows.rend() : fwd == rows.end()) {
          *wrong = name + ": scan returned more rows than the model has";
          return Status::OK();
        }
        const auto& row = reverse ? *rev : *fwd;
        if (cursor->key() != row.first || cursor->value() != row.second) {
          *wrong = name + ": scan returned a row the model does not have there";
          return Status::OK();
        }
        reverse ? (void)++rev : (void)++fwd;
        SM_TRY(cursor->Next());
      }
      if (reverse ? rev != rows.rend() : fwd != rows.end()) {
        *wrong = name + ": scan ended early";
        return Status::OK();
      }
    }
    for (const auto& [key, value] : rows) {
      std::string got;
      SM_TRY(t->Get(txn.get(), key, &got));
      if (got != value) {
        *wrong = name + ": Get returned a wrong value";
        return Status::OK();
      }
    }
  }
  return txn->Commit();
}

// True if the message says where: the page id, an LSN, or the damaged file's name.
bool NamesPlace(const Region& region, const std::string& message) {
  if (region.target == Target::kDataPage || region.target == Target::kDroppedPage) {
    std::string needle = "page " + std::to_string(region.page);
    for (size_t at = message.find(needle); at != std::string::npos;
         at = message.find(needle, at + 1)) {
      size_t after = at + needle.size();
      if (after == message.size() || !std::isdigit(static_cast<unsigned char>(message[after]))) {
        return true;
      }
    }
    return false;
  }
  switch (region.target) {
    case Target::kVolumeHeader:
      return message.find("data.sm") != std::string::npos;
    case Target::kMapCopy:
      return message.find("data.sm") != std::string::npos ||
             message.find("allocation map") != std::string::npos;
    case Target::kLogRecord:
    case Target::kSegmentHeader:
      return message.find("LSN") != std::string::npos ||
             message.find(region.file.substr(4)) != std::string::npos;
    case Target::kControlFile:
      return message.find(log::kControlFileName) != std::string::npos;
    case Target::kMetaFile:
      return message.find("sm.meta") != std::string::npos;
    default:
      return true;
  }
}

bool AcceptableError(const Region& region, const Status& s) {
  if (s.IsCorruption()) return true;
  // A volume header that no longer says "volume" is refused as not a volume at all.
  return region.target == Target::kVolumeHeader && s.IsInvalidArgument();
}

struct Trial {
  io::FileSystem* fs;
  const Model* model;
  const Region* region;
  Kind kind;
  std::string what;  // the corruption, for messages
};

// A resealed flip: Open, then Verify (which trusts nothing behind a checksum), then - only for
// a database Verify accepts - the reads, whose results may differ from the model.
void ExamineResealed(const Trial& trial, Tally* tally) {
  std::unique_ptr<Database> db;
  Status s = Database::Open(FuzzOptions(trial.fs, kTrialDir), &db);
  if (!s.ok()) {
    ++tally->reseal_detected;
    return;
  }
  std::string report;
  Status verified = static_cast<api::DatabaseImpl*>(db.get())->VerifyWithReport(&report);
  if (!verified.ok()) {
    ++tally->reseal_detected;
    return;
  }
  std::string wrong;
  Status read = ReadAll(db.get(), *trial.model, &wrong);
  if (read.ok() && wrong.empty()) {
    ++tally->reseal_accepted_same;
  } else {
    read.PermitUnchecked();
    ++tally->reseal_accepted_changed;
  }
}

// Open, read, verify; classifies into *tally.
void Examine(const Trial& trial, Tally* tally) {
  if (trial.kind == Kind::kResealed) return ExamineResealed(trial, tally);
  const Region& region = *trial.region;
  const bool dead = region.target == Target::kDead;
  auto detected = [&](Outcome where, const Status& s) {
    if (dead) {
      ++tally->dead_reported;
      return;
    }
    ++tally->outcome[static_cast<int>(where)];
    if (!AcceptableError(region, s) || !NamesPlace(region, s.ToString())) {
      ++tally->unexpected;
      tally->Fail(trial.what + ": " + OutcomeName(where) + ": " + s.ToString());
    }
  };
  std::unique_ptr<Database> db;
  OpenReport open_report;
  Status s = Database::Open(FuzzOptions(trial.fs, kTrialDir), &db, &open_report);
  if (!s.ok()) return detected(Outcome::kAtOpen, s);
  std::string wrong;
  Status read = ReadAll(db.get(), *trial.model, &wrong);
  if (!wrong.empty()) {
    read.PermitUnchecked();
    ++tally->wrong_data;
    tally->Fail(trial.what + ": WRONG DATA: " + wrong);
    return;
  }
  std::string report;
  Status verified = static_cast<api::DatabaseImpl*>(db.get())->VerifyWithReport(&report);
  if (!read.ok()) {
    if (verified.ok()) {
      ++tally->unexpected;
      tally->Fail(trial.what + ": a read failed (" + read.ToString() + ") but Verify passed");
    }
    return detected(Outcome::kOnRead, read);
  }
  if (!verified.ok()) return detected(Outcome::kByVerify, verified);
  if (dead) {
    ++tally->dead_harmless;
    return;
  }
  // A damaged map copy: the other copy serves, Open re-marks the trees' pages and says so,
  // and so does Verify; the reads above have checked that nothing was lost.
  if (region.target == Target::kMapCopy && open_report.map_copies_rejected != 0 &&
      report.find("allocation-map copies were invalid") != std::string::npos) {
    ++tally->outcome[static_cast<int>(Outcome::kRepairedAtOpen)];
    return;
  }
  ++tally->outcome[static_cast<int>(Outcome::kUndetected)];
  tally->Fail(trial.what + ": UNDETECTED");
}

void RunTrial(io::FileSystem* fs, const Model& model, const Regions& regions, std::mt19937_64& rng,
              Tally* tally, std::string* description) {
  // Some draws cannot change their region (zeroing a sector of a region that is all zero, a
  // resealed flip where no checksum covers the byte): draw again, so that every trial damages
  // something and the count of trials means what it says.
  Target target = Target::kDead;
  Kind kind = Kind::kBitFlip;
  const Region* picked = nullptr;
  std::string path, bytes, what;
  bool changed = false;
  REQUIRE(test::DeleteDir(fs, kTrialDir).ok());
  REQUIRE(test::CopyDir(fs, kBaseDir, kTrialDir).ok());
  for (int draw_count = 0; draw_count < 20 && !changed; ++draw_count) {
    // One trial in eight samples dead bytes; the rest spread over the live targets evenly.
    target = static_cast<Target>(rng() % (kTargetCount - 1));
    if (rng() % 8 == 0 && !regions.by_target[static_cast<int>(Target::kDead)].empty()) {
      target = Target::kDead;
    }
    const std::vector<Region>& choices = regions.by_target[static_cast<int>(target)];
    picked = &choices[rng() % choices.size()];
    // Two in five each bit flips and zeroed sectors, one in five resealed flips (not in dead
    // bytes, which no checksum covers).
    const uint64_t draw = rng() % 5;
    kind = draw < 2 ? Kind::kBitFlip : draw < 4 ? Kind::kZeroSector : Kind::kResealed;
    if (target == Target::kDead && kind == Kind::kResealed) kind = Kind::kBitFlip;
    path = std::string(kTrialDir) + "/" + picked->file;
    REQUIRE(test::ReadWholeFile(fs, path, &bytes).ok());
    for (int attempt = 0; attempt < 50 && !changed; ++attempt) {
      changed = Corrupt(kind, *picked, rng, &bytes, &what);
    }
  }
  if (!changed) return;  // counted as a missing trial, which the caller bounds
  const Region& region = *picked;
  REQUIRE(test::WriteWholeFile(fs, path, bytes).ok());
  ++tally->trials;
  ++tally->by_target[static_cast<int>(target)];
  ++tally->by_kind[static_cast<int>(kind)];
  *description =
      std::string(TargetName(target)) + " " + region.file + " (" + region.what + "): " + what;
  Examine(Trial{fs, &model, &region, kind, *description}, tally);
}

// Aborts the process, naming the trial, if a trial runs longer than the limit.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit) : limit_(limit), thread_([this] { Run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> guard(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(const std::string& what) {
    std::lock_guard<std::mutex> guard(mu_);
    what_ = what;
    since_ = std::chrono::steady_clock::now();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      if (std::chrono::steady_clock::now() - since_ > limit_) {
        std::fprintf(stderr, "corruption fuzzer: trial hangs: %s\n", what_.c_str());
        std::abort();
      }
    }
  }
  const std::chrono::seconds limit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
  std::thread thread_;
};

void Summarize(const Tally& t, double seconds) {
  std::printf("corruption fuzzer: %llu trials in %.1f s;",
              static_cast<unsigned long long>(t.trials), seconds);
  for (int i = 0; i < kTargetCount; ++i) {
    std::printf(" %s %llu,", TargetName(static_cast<Target>(i)),
                static_cast<unsigned long long>(t.by_target[i]));
  }
  for (int i = 0; i < kKindCount; ++i) {
    std::printf(" %s %llu%s", KindName(static_cast<Kind>(i)),
                static_cast<unsigned long long>(t.by_kind[i]), i + 1 < kKindCount ? "," : "\n");
  }
  std::printf(
      "  detected at open %llu, on read %llu, by verify %llu; map copy repaired at "
      "open (and reported) %llu; undetected %llu; wrong data %llu; unexpected %llu; "
      "dead bytes: reported %llu, harmless %llu\n",
      static_cast<unsigned long long>(t.outcome[0]), static_cast<unsigned long long>(t.outcome[1]),
      static_cast<unsigned long long>(t.outcome[2]), static_cast<unsigned long long>(t.outcome[3]),
      static_cast<unsigned long long>(t.outcome[4]), static_cast<unsigned long long>(t.wrong_data),
      static_cast<unsigned long long>(t.unexpected),
      static_cast<unsigned long long>(t.dead_reported),
      static_cast<unsigned long long>(t.dead_harmless));
  std::printf(
      "  resealed flips (no detection promised): detected %llu, accepted with the same "
      "data %llu, accepted with changed data %llu\n",
      static_cast<unsigned long long>(t.reseal_detected),
      static_cast<unsigned long long>(t.reseal_accepted_same),
      static_cast<unsigned long long>(t.reseal_accepted_changed));
  std::fflush(stdout);
}

void RunFuzzer(const char* name, int trials) {
  const uint64_t seed = test::TestSeed(name);
  io::FaultInjectionFileSystem fs(seed);
  Base base;
  BuildBase(&fs, seed, &base);
  Regions regions = CollectRegions(&fs, base);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  Tally tally;
  Watchdog watchdog(std::chrono::seconds(60));
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < trials; ++i) {
    std::string description;
    watchdog.Start("trial " + std::to_string(i) + " of seed " + std::to_string(seed));
    RunTrial(&fs, base.model, regions, rng, &tally, &description);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Summarize(tally, seconds);
  for (const std::string& failure : tally.failures) std::printf("  FAILED: %s\n", failure.c_str());
  CHECK(tally.outcome[static_cast<int>(Outcome::kUndetected)] == 0);
  CHECK(tally.trials == [&] {
    uint64_t sum = tally.dead_reported + tally.dead_harmless + tally.wrong_data +
                   tally.reseal_detected + tally.reseal_accepted_same +
                   tally.reseal_accepted_changed;
    for (uint64_t n : tally.outcome) sum += n;
    return sum;
  }());
  CHECK(tally.wrong_data == 0);
  CHECK(tally.unexpected == 0);
  CHECK(tally.trials > static_cast<uint64_t>(trials) * 9 / 10);
}

TEST_CASE("corruption fuzzer: damage to a closed database is reported and never read as data",
          "[random][corruption][api]") {
  RunFuzzer("corruption fuzzer", test::kSanitized ? 100 : 1000);
}

TEST_CASE("corruption fuzzer (long)", "[.slow][random][corruption][api]") {
  RunFuzzer("corruption fuzzer (long)", 10000);
}

}  // namespace
}  // namespace sm
