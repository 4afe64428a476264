// SlottedPage: the documented byte format, insert/get ordering, update (shrink, grow in the
// gap, grow through compaction), erase, compaction, NoSpace leaving the page byte-identical,
// records taken from the same page, the invariant checker on corrupt areas, and a seeded
// random test against a std::vector<std::string> model.
#include "sm/page/slotted_page.h"

#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/test_util.h"

using sm::SlottedPage;
using sm::Status;

namespace {

using sm::kPageBytes;
// The lowest area offset: right after the common page header.
constexpr uint16_t kMinAreaOffset = sm::kPageHeaderBytes;

using PageBuffer = std::array<char, kPageBytes>;

std::span<const char> Rec(const std::string& s) { return {s.data(), s.size()}; }
std::string Str(std::span<const char> s) { return std::string(s.data(), s.size()); }

// A page whose bytes below the area hold a pattern, so tests can see they are never touched.
struct TestPage {
  explicit TestPage(uint16_t area_offset = kMinAreaOffset) : page(bytes.data(), area_offset) {
    bytes.fill('\xAB');
    page.Init();
  }
  TestPage(const TestPage&) = delete;  // `page` points into `bytes`
  PageBuffer bytes;
  SlottedPage page;
};

size_t AreaFree(uint16_t area_offset) {
  return kPageBytes - area_offset - SlottedPage::kAreaHeaderBytes;
}

// Equal to the model, compared without materializing the records (the random test calls it
// after every operation).
bool Holds(const SlottedPage& page, const std::vector<std::string>& model) {
  if (page.slot_count() != model.size()) return false;
  for (uint16_t i = 0; i < model.size(); ++i) {
    std::span<const char> rec = page.Get(i);
    if (rec.size() != model[i].size()) return false;
    if (!rec.empty() && std::memcmp(rec.data(), model[i].data(), rec.size()) != 0) return false;
  }
  return true;
}

std::vector<std::string> Contents(const SlottedPage& page) {
  std::vector<std::string> out;
  for (uint16_t i = 0; i < page.slot_count(); ++i) out.push_back(Str(page.Get(i)));
  return out;
}

uint16_t LoadU16(const PageBuffer& bytes, size_t offset) {
  return static_cast<uint16_t>(static_cast<uint8_t>(bytes[offset]) |
                               static_cast<uint8_t>(bytes[offset + 1]) << 8);
}

void StoreU16(PageBuffer& bytes, size_t offset, uint16_t value) {
  bytes[offset] = static_cast<char>(value & 0xFF);
  bytes[offset + 1] = static_cast<char>(value >> 8);
}

// Inserts records of `length` bytes at the end until the next one does not fit.
int Fill(SlottedPage& page, size_t length, char fill = 'f') {
  int inserted = 0;
  while (page.CanInsert(length)) {
    REQUIRE(page.Insert(page.slot_count(), Rec(std::string(length, fill))).ok());
    ++inserted;
  }
  return inserted;
}

}  // namespace

TEST_CASE("slotted page byte format is the documented one", "[unit][slotted]") {
  TestPage t;
  REQUIRE(t.page.Insert(0, Rec("xyz"), 0x01020304).ok());
  REQUIRE(t.page.Insert(0, Rec("")).ok());
  const size_t a = kMinAreaOffset;
  REQUIRE(LoadU16(t.bytes, a + 0) == 2);               // slot_count
  REQUIRE(LoadU16(t.bytes, a + 2) == kPageBytes - 3);  // heap_begin
  REQUIRE(LoadU16(t.bytes, a + 4) == 0);               // fragmented_bytes
  REQUIRE(LoadU16(t.bytes, a + 6) == 0);               // flags
  REQUIRE(LoadU16(t.bytes, a + 8) == kPageBytes);      // slot 0: empty record, tag 0
  REQUIRE(LoadU16(t.bytes, a + 10) == 0);
  REQUIRE(LoadU16(t.bytes, a + 12) == 0);
  REQUIRE(LoadU16(t.bytes, a + 14) == 0);
  REQUIRE(LoadU16(t.bytes, a + 16) == kPageBytes - 3);  // slot 1: "xyz", tag 0x01020304
  REQUIRE(LoadU16(t.bytes, a + 18) == 3);
  REQUIRE(LoadU16(t.bytes, a + 20) == 0x0304);
  REQUIRE(LoadU16(t.bytes, a + 22) == 0x0102);
  REQUIRE(std::string(t.bytes.data() + kPageBytes - 3, 3) == "xyz");
  for (size_t i = 0; i < a; ++i) REQUIRE(t.bytes[i] == '\xAB');
}

TEST_CASE("an initialized area is empty and entirely free", "[unit][slotted]") {
  for (uint16_t area_offset : {kMinAreaOffset, uint16_t{101}, SlottedPage::kMaxAreaOffset}) {
    CAPTURE(area_offset);
    TestPage t(area_offset);
    REQUIRE(t.page.slot_count() == 0);
    REQUIRE(t.page.FreeBytes() == AreaFree(area_offset));
    REQUIRE(t.page.ContiguousFreeBytes() == AreaFree(area_offset));
    REQUIRE(t.page.FragmentedBytes() == 0);
    REQUIRE(t.page.CheckInvariants());
    for (size_t i = 0; i < area_offset; ++i) REQUIRE(t.bytes[i] == '\xAB');
  }
}

TEST_CASE("inserts at a position shift later slots and keep the caller's order",
          "[unit][slotted]") {
  TestPage t;
  REQUIRE(t.page.Insert(0, Rec("bb")).ok());
  REQUIRE(t.page.Insert(1, Rec("dddd")).ok());
  REQUIRE(t.page.Insert(0, Rec("a")).ok());
  REQUIRE(t.page.Insert(2, Rec("ccc")).ok());
  REQUIRE(t.page.Insert(4, Rec("")).ok());
  REQUIRE(Contents(t.page) == std::vector<std::string>{"a", "bb", "ccc", "dddd", ""});
  REQUIRE(t.page.FreeBytes() ==
          AreaFree(kMinAreaOffset) - (1 + 2 + 3 + 4) - 5 * SlottedPage::kSlotBytes);
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE("slot tags move with their slots and survive updates and compaction",
          "[unit][slotted]") {
  TestPage t;
  REQUIRE(t.page.Insert(0, Rec("bb"), 2).ok());
  REQUIRE(t.page.Insert(1, Rec("dddd"), 4).ok());
  REQUIRE(t.page.Insert(0, Rec("a"), 1).ok());
  REQUIRE(t.page.Insert(2, Rec("ccc"), 3).ok());
  REQUIRE(t.page.Tag(0) == 1);
  REQUIRE(t.page.Tag(1) == 2);
  REQUIRE(t.page.Tag(2) == 3);
  REQUIRE(t.page.Tag(3) == 4);
  REQUIRE(t.page.Update(1, Rec(std::string(200, 'B'))).ok());  // moved into the gap
  REQUIRE(t.page.Update(2, Rec("c")).ok());                    // in place
  t.page.Erase(0);
  t.page.Compact();
  REQUIRE(Contents(t.page) == std::vector<std::string>{std::string(200, 'B'), "c", "dddd"});
  REQUIRE(t.page.Tag(0) == 2);
  REQUIRE(t.page.Tag(1) == 3);
  REQUIRE(t.page.Tag(2) == 4);
  t.page.SetTag(1, 0xFFFFFFFF);
  REQUIRE(t.page.Tag(1) == 0xFFFFFFFF);
  REQUIRE(Str(t.page.Get(1)) == "c");
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE("update shrinks and regrows in place, grows into the gap, and compacts to grow",
          "[unit][slotted]") {
  TestPage t;
  REQUIRE(t.page.Insert(0, Rec(std::string(100, 'a'))).ok());
  REQUIRE(t.page.Insert(1, Rec(std::string(100, 'b'))).ok());
  const char* where = t.page.Get(0).data();
  size_t free_before = t.page.FreeBytes();

  SECTION("shrink and same size stay in place; the tail becomes fragmented") {
    REQUIRE(t.page.Update(0, Rec(std::string(60, 'x'))).ok());
    REQUIRE(t.page.Get(0).data() == where);
    REQUIRE(t.page.FragmentedBytes() == 40);
    REQUIRE(t.page.Update(0, Rec(std::string(60, 'y'))).ok());
    REQUIRE(t.page.Get(0).data() == where);
    REQUIRE(t.page.FreeBytes() == free_before + 40);
    REQUIRE(Contents(t.page) ==
            std::vector<std::string>{std::string(60, 'y'), std::string(100, 'b')});
  }
  SECTION("growing beyond the old length moves the record into the gap") {
    REQUIRE(t.page.Update(0, Rec(std::string(150, 'x'))).ok());
    REQUIRE(t.page.Get(0).data() != where);
    REQUIRE(t.page.FragmentedBytes() == 100);
    REQUIRE(t.page.FreeBytes() == free_before - 50);
    REQUIRE(Contents(t.page) ==
            std::vector<std::string>{std::string(150, 'x'), std::string(100, 'b')});
  }
  SECTION("growing when the gap is too small compacts first") {
    Fill(t.page, 100);
    // Erasing slot i and moving on to i + 1 skips one survivor each time: holes everywhere.
    for (uint16_t i = 2; i < t.page.slot_count(); ++i) t.page.Erase(i);
    // The erased slots' directory entries joined the gap: fill it with empty records (slots
    // only) until it is too small.
    while (t.page.ContiguousFreeBytes() >= 300) {
      REQUIRE(t.page.Insert(t.page.slot_count(), Rec("")).ok());
    }
    REQUIRE(t.page.ContiguousFreeBytes() < 300);
    REQUIRE(t.page.FreeBytes() + 100 >= 300);
    REQUIRE(t.page.Update(1, Rec(std::string(300, 'z'))).ok());
    REQUIRE(t.page.FragmentedBytes() == 0);
    REQUIRE(Str(t.page.Get(1)) == std::string(300, 'z'));
    REQUIRE(Str(t.page.Get(0)) == std::string(100, 'a'));
  }
  SECTION("to and from an empty record") {
    REQUIRE(t.page.Update(0, Rec("")).ok());
    REQUIRE(t.page.Get(0).empty());
    REQUIRE(t.page.FreeBytes() == free_before + 100);
    REQUIRE(t.page.Update(0, Rec("q")).ok());
    REQUIRE(Str(t.page.Get(0)) == "q");
  }
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE("erase shifts later slots down and frees the record's bytes", "[unit][slotted]") {
  TestPage t;
  for (std::string s : {"one", "two", "three", "four"}) {
    REQUIRE(t.page.Insert(t.page.slot_count(), Rec(s)).ok());
  }
  size_t free_before = t.page.FreeBytes();
  t.page.Erase(1);  // "two": in the middle of the heap, becomes a hole
  REQUIRE(Contents(t.page) == std::vector<std::string>{"one", "three", "four"});
  REQUIRE(t.page.FreeBytes() == free_before + 3 + SlottedPage::kSlotBytes);
  REQUIRE(t.page.FragmentedBytes() == 3);
  size_t contiguous = t.page.ContiguousFreeBytes();
  t.page.Erase(2);  // "four": the lowest record, its bytes join the gap directly
  REQUIRE(t.page.ContiguousFreeBytes() == contiguous + 4 + SlottedPage::kSlotBytes);
  REQUIRE(t.page.FragmentedBytes() == 3);
  REQUIRE(t.page.CheckInvariants());
  t.page.Erase(0);
  t.page.Erase(0);
  REQUIRE(t.page.slot_count() == 0);
  REQUIRE(t.page.ContiguousFreeBytes() == AreaFree(kMinAreaOffset));
  REQUIRE(t.page.FragmentedBytes() == 0);
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE("compaction packs the records at the end and keeps slots and contents",
          "[unit][slotted]") {
  TestPage t;
  std::vector<std::string> model;
  for (int i = 0; i < 50; ++i) {
    model.push_back(std::string(1 + i % 17, static_cast<char>('A' + i % 26)));
    REQUIRE(t.page.Insert(static_cast<uint16_t>(i), Rec(model.back())).ok());
  }
  for (int i = 48; i >= 0; i -= 3) {
    t.page.Erase(static_cast<uint16_t>(i));
    model.erase(model.begin() + i);
  }
  REQUIRE(t.page.FragmentedBytes() > 0);
  size_t free_before = t.page.FreeBytes();
  t.page.Compact();
  REQUIRE(t.page.FragmentedBytes() == 0);
  REQUIRE(t.page.FreeBytes() == free_before);
  REQUIRE(t.page.ContiguousFreeBytes() == free_before);
  REQUIRE(Contents(t.page) == model);
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE("an insert that does not fit returns NoSpace and leaves the page byte-identical",
          "[unit][slotted]") {
  TestPage t;
  Fill(t.page, 97);
  SECTION("without fragmentation") {
    PageBuffer before = t.bytes;
    Status s = t.page.Insert(0, Rec(std::string(t.page.FreeBytes() - 3, 'n')));
    REQUIRE(s.IsNoSpace());
    REQUIRE(before == t.bytes);
  }
  SECTION("with fragments that would not suffice even when compacted") {
    t.page.Erase(5);
    t.page.Erase(9);
    REQUIRE(t.page.FragmentedBytes() == 2 * 97);
    PageBuffer before = t.bytes;
    REQUIRE(t.page.Insert(3, Rec(std::string(t.page.FreeBytes() - 3, 'n'))).IsNoSpace());
    REQUIRE(before == t.bytes);
    // Exactly the free bytes fit, through a compaction.
    std::string exact(t.page.FreeBytes() - SlottedPage::kSlotBytes, 'e');
    REQUIRE(t.page.Insert(3, Rec(exact)).ok());
    REQUIRE(t.page.FreeBytes() == 0);
    REQUIRE(Str(t.page.Get(3)) == exact);
    REQUIRE(t.page.CheckInvariants());
  }
}

TEST_CASE("an update that does not fit returns NoSpace and leaves the page byte-identical",
          "[unit][slotted]") {
  TestPage t;
  Fill(t.page, 200);
  t.page.Erase(3);
  uint16_t victim = 4;
  size_t limit = t.page.FreeBytes() + 200;  // the old record's bytes count as free
  PageBuffer before = t.bytes;
  REQUIRE(limit + 1 <= SlottedPage::kMaxRecordBytes);
  REQUIRE(t.page.Update(victim, Rec(std::string(limit + 1, 'u'))).IsNoSpace());
  REQUIRE(before == t.bytes);
  REQUIRE(t.page.Update(victim, Rec(std::string(limit, 'u'))).ok());
  REQUIRE(t.page.FreeBytes() == 0);
  REQUIRE(Str(t.page.Get(victim)) == std::string(limit, 'u'));
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE(
    "record size limit: four maximal records fit the smallest area, longer ones are "
    "rejected",
    "[unit][slotted]") {
  TestPage t(SlottedPage::kMaxAreaOffset);
  std::string max(SlottedPage::kMaxRecordBytes, 'm');
  REQUIRE(Fill(t.page, max.size()) >= 4);
  REQUIRE(t.page.Update(0, Rec(max)).ok());

  TestPage e;
  REQUIRE(e.page.Insert(0, Rec("small")).ok());
  PageBuffer before = e.bytes;
  std::string too_long(SlottedPage::kMaxRecordBytes + 1, 'x');
  REQUIRE(e.page.Insert(0, Rec(too_long)).IsInvalidArgument());
  REQUIRE(e.page.Update(0, Rec(too_long)).IsInvalidArgument());
  REQUIRE(before == e.bytes);
  REQUIRE_FALSE(e.page.CanInsert(too_long.size()));
}

TEST_CASE("records may come from the same page, even when the page compacts", "[unit][slotted]") {
  TestPage t;
  Fill(t.page, 50, 'p');
  for (uint16_t i = 0; i < t.page.slot_count(); ++i) {
    std::string s(50, static_cast<char>('a' + i % 26));
    REQUIRE(t.page.Update(i, Rec(s)).ok());  // in place: distinct contents per slot
  }
  t.page.Erase(10);
  t.page.Erase(20);
  t.page.Erase(30);
  std::vector<std::string> model = Contents(t.page);
  REQUIRE(t.page.ContiguousFreeBytes() < 54);  // the insert below must compact
  REQUIRE(t.page.Insert(0, t.page.Get(7)).ok());
  model.insert(model.begin(), model[7]);
  REQUIRE(Contents(t.page) == model);
  // Grow slot 3 inside the gap, then copy it over the shorter slot 1: the source is another
  // live record, and the gap is too small, so the move goes through a compaction.
  std::string grown = model[3] + model[4].substr(0, 20);
  REQUIRE(t.page.Update(3, Rec(grown)).ok());
  model[3] = grown;
  // Leave a 30-byte gap: too small for the 70-byte move, enough with slot 1's 50 bytes.
  std::string filler(t.page.ContiguousFreeBytes() - SlottedPage::kSlotBytes - 30, 'F');
  REQUIRE(t.page.Insert(t.page.slot_count(), Rec(filler)).ok());
  model.push_back(filler);
  REQUIRE(t.page.ContiguousFreeBytes() == 30);
  REQUIRE(t.page.Update(1, t.page.Get(3)).ok());
  model[1] = model[3];
  REQUIRE(Contents(t.page) == model);
  REQUIRE(t.page.CheckInvariants());
}

TEST_CASE("CheckInvariants rejects corrupt areas", "[unit][slotted]") {
  TestPage good;
  for (std::string s : {"alpha", "beta", "gamma"}) {
    REQUIRE(good.page.Insert(good.page.slot_count(), Rec(s)).ok());
  }
  good.page.Erase(1);  // one hole: fragmented_bytes == 4
  REQUIRE(good.page.CheckInvariants());
  const size_t a = kMinAreaOffset;
  const size_t slot0 = a + 8, slot1 = a + 8 + SlottedPage::kSlotBytes;

  auto corrupt = [&](auto&& poke) {
    PageBuffer bytes = good.bytes;
    poke(bytes);
    return SlottedPage(bytes.data(), kMinAreaOffset).CheckInvariants();
  };
  auto add = [](PageBuffer& b, size_t off, int delta) {
    StoreU16(b, off, static_cast<uint16_t>(LoadU16(b, off) + delta));
  };
  REQUIRE(corrupt([](PageBuffer&) {}));
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { add(b, a + 4, 1); }));  // accounting
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { add(b, a + 4, -1); }));
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { StoreU16(b, a, 0xFFFF); }));      // slot_count
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { StoreU16(b, a + 2, 0x3000); }));  // heap_begin
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { StoreU16(b, a + 2, a + 8); }));   // below dir_end
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { StoreU16(b, a + 6, 1); }));       // flags
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) {  // overlap: "gamma" moved onto "alpha"'s bytes
    StoreU16(b, slot1, static_cast<uint16_t>(LoadU16(b, slot0) - 3));
  }));
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { add(b, slot1, -1); }));       // below heap_begin
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { add(b, slot0 + 2, 100); }));  // past the page
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) {  // empty record not at kPageBytes
    StoreU16(b, slot0 + 2, 0);
    add(b, a + 4, 5);
  }));
  REQUIRE_FALSE(corrupt([&](PageBuffer& b) { StoreU16(b, slot0 + 2, 0xF000); }));
}

TEST_CASE("random operations against a vector model", "[random][slotted]") {
  std::mt19937_64 rng(sm::test::TestSeed("slotted_page_random"));
  auto uniform = [&](size_t lo, size_t hi) {
    return std::uniform_int_distribution<size_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 40; ++round) {
    auto area_offset = static_cast<uint16_t>(uniform(kMinAreaOffset, SlottedPage::kMaxAreaOffset));
    // Record sizes per round: tiny (many slots), mixed, or large (few slots, many NoSpace).
    const size_t size_mode = uniform(0, 2);
    auto record_size = [&]() -> size_t {
      if (uniform(0, 99) == 0) return SlottedPage::kMaxRecordBytes + uniform(0, 1);
      switch (size_mode) {
        case 0:
          return uniform(0, 12);
        case 1:
          return uniform(0, 3) == 0 ? uniform(0, 900) : uniform(0, 60);
        default:
          return uniform(300, SlottedPage::kMaxRecordBytes);
      }
    };
    TestPage t(area_offset);
    std::vector<std::string> model;
    size_t used = 0;  // sum over the model of record bytes + slot bytes
    for (int op = 0; op < 3000; ++op) {
      CAPTURE(round, op, area_offset, model.size());
      const size_t expected_free = AreaFree(area_offset) - used;
      const size_t kind = uniform(0, 99);
      PageBuffer before = t.bytes;
      if (kind < 45 || model.empty()) {
        std::string rec(record_size(), static_cast<char>(uniform(0, 255)));
        auto at = static_cast<uint16_t>(uniform(0, model.size()));
        Status s = t.page.Insert(at, Rec(rec));
        if (rec.size() > SlottedPage::kMaxRecordBytes) {
          REQUIRE(s.IsInvalidArgument());
          REQUIRE(before == t.bytes);
        } else if (rec.size() + SlottedPage::kSlotBytes > expected_free) {
          REQUIRE(s.IsNoSpace());
          REQUIRE(before == t.bytes);
        } else {
          REQUIRE(s.ok());
          model.insert(model.begin() + at, rec);
          used += rec.size() + SlottedPage::kSlotBytes;
        }
      } else if (kind < 70) {
        auto at = static_cast<uint16_t>(uniform(0, model.size() - 1));
        t.page.Erase(at);
        used -= model[at].size() + SlottedPage::kSlotBytes;
        model.erase(model.begin() + at);
      } else if (kind < 97) {
        auto at = static_cast<uint16_t>(uniform(0, model.size() - 1));
        std::string rec(uniform(0, 1) ? record_size() : model[at].size() + uniform(0, 8),
                        static_cast<char>(uniform(0, 255)));
        Status s = t.page.Update(at, Rec(rec));
        if (rec.size() > SlottedPage::kMaxRecordBytes) {
          REQUIRE(s.IsInvalidArgument());
          REQUIRE(before == t.bytes);
        } else if (rec.size() > expected_free + model[at].size()) {
          REQUIRE(s.IsNoSpace());
          REQUIRE(before == t.bytes);
        } else {
          REQUIRE(s.ok());
          used = used - model[at].size() + rec.size();
          model[at] = rec;
        }
      } else {
        t.page.Compact();
        REQUIRE(t.page.FragmentedBytes() == 0);
      }
      REQUIRE(t.page.CheckInvariants());
      REQUIRE(t.page.FreeBytes() == AreaFree(area_offset) - used);
      REQUIRE(Holds(t.page, model));
    }
  }
}
