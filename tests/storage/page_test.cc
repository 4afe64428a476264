// CRC32C (known vectors, hardware == portable, chaining) and the common page header: sealing,
// verification, and every way a page can be rejected.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sm/io/aligned_buffer.h"
#include "sm/common/crc32c.h"
#include "sm/page/page.h"
#include "tests/test_util.h"

using namespace sm;

namespace {
bool Contains(const Status& s, const std::string& needle) {
  return std::string(s.message()).find(needle) != std::string::npos;
}
}  // namespace

TEST_CASE("CRC32C matches the published test vectors", "[unit][crc]") {
  REQUIRE(Crc32c("123456789", 9) == 0xE3069283u);
  REQUIRE(Crc32c("", 0) == 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), up(32), down(32);
  for (int i = 0; i < 32; ++i) up[i] = static_cast<uint8_t>(i), down[i] = static_cast<uint8_t>(31 - i);
  REQUIRE(Crc32c(zeros.data(), 32) == 0x8A9136AAu);
  REQUIRE(Crc32c(ones.data(), 32) == 0x62A8AB43u);
  REQUIRE(Crc32c(up.data(), 32) == 0x46DD794Eu);
  REQUIRE(Crc32c(down.data(), 32) == 0x113FDB5Cu);
  REQUIRE(Crc32cPortable("123456789", 9) == 0xE3069283u);
  if (Crc32cHardwareAvailable()) REQUIRE(Crc32cHardware("123456789", 9) == 0xE3069283u);
}

TEST_CASE("hardware and portable CRC32C agree and chain", "[random][crc]") {
  uint64_t seed = test::TestSeed("crc32c hw == sw");
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> buf(20000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (int i = 0; i < 500; ++i) {
    size_t offset = rng() % 64;  // unaligned starts
    size_t len = rng() % (buf.size() - offset);
    uint32_t init = i % 2 == 0 ? 0 : static_cast<uint32_t>(rng());
    uint32_t portable = Crc32cPortable(buf.data() + offset, len, init);
    if (Crc32cHardwareAvailable()) {
      REQUIRE(Crc32cHardware(buf.data() + offset, len, init) == portable);
    }
    REQUIRE(Crc32c(buf.data() + offset, len, init) == portable);
    size_t split = len == 0 ? 0 : rng() % len;
    uint32_t chained = Crc32c(buf.data() + offset + split, len - split,
                              Crc32c(buf.data() + offset, split, init));
    REQUIRE(chained == portable);
  }
  // Every length around the hardware path's boundaries: the 4-, 2- and 1-byte tail steps, the
  // unrolled 32-byte loop and the three 256-byte stripes (768 bytes) with what follows them.
  for (size_t len = 0; len < 2 * 768 + 64; ++len) {
    for (size_t offset = 0; offset < 8; offset += 3) {
      uint32_t portable = Crc32cPortable(buf.data() + offset, len, 7);
      REQUIRE(Crc32c(buf.data() + offset, len, 7) == portable);
    }
  }
}

TEST_CASE("a sealed page verifies and keeps its header fields", "[unit][page]") {
  io::AlignedBuffer page(kPageBytes);
  std::memset(page.data(), 0xee, kPageBytes);
  InitPage(page.data(), PageId(42), PageType::kBtreeLeaf);
  REQUIRE(PageTypeOf(page.data()) == PageType::kBtreeLeaf);
  REQUIRE(PageIdOf(page.data()) == PageId(42));
  REQUIRE(PageLsn(page.data()) == Lsn(0));
  REQUIRE(HeaderOf(page.data())->format_version == kPageFormatVersion);
  REQUIRE(page.data()[kPageBytes - 1] == 0);  // InitPage zeroes the page
  SetPageLsn(page.data(), Lsn(0x1122334455));
  std::memcpy(page.data() + kPageHeaderBytes, "payload", 7);
  SealPage(page.data());
  REQUIRE(VerifyPage(page.data(), PageId(42)).ok());
  REQUIRE(PageLsn(page.data()) == Lsn(0x1122334455));
  REQUIRE(HeaderOf(page.data())->checksum == ComputePageChecksum(page.data()));
  // Little-endian layout at the documented offsets.
  uint64_t raw_lsn;
  std::memcpy(&raw_lsn, page.data() + 16, 8);
  REQUIRE(raw_lsn == 0x1122334455u);
  REQUIRE(static_cast<uint8_t>(page.data()[6]) == 3);  // type, low byte
}

TEST_CASE("any flipped bit is a checksum mismatch naming the page", "[random][page]") {
  uint64_t seed = test::TestSeed("page bit flips");
  std::mt19937_64 rng(seed);
  io::AlignedBuffer page(kPageBytes);
  for (int i = 0; i < 200; ++i) {
    InitPage(page.data(), PageId(7), PageType::kBtreeInner);
    for (size_t b = kPageHeaderBytes; b < kPageBytes; b += 97) page.data()[b] = static_cast<char>(rng());
    SealPage(page.data());
    size_t bit = rng() % (kPageBytes * 8);
    page.data()[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    Status s = VerifyPage(page.data(), PageId(7));
    REQUIRE(s.IsCorruption());
    REQUIRE(Contains(s, "page 7"));
    REQUIRE(Contains(s, "checksum mismatch"));
  }
}

TEST_CASE("wrong id, unknown type, other formats and never-written pages are rejected",
          "[unit][page]") {
  io::AlignedBuffer page(kPageBytes);
  InitPage(page.data(), PageId(9), PageType::kCatalog);
  SealPage(page.data());
  Status wrong_id = VerifyPage(page.data(), PageId(10));
  REQUIRE(wrong_id.IsCorruption());
  REQUIRE(Contains(wrong_id, "page 10"));
  REQUIRE(Contains(wrong_id, "names page 9"));

  HeaderOf(page.data())->format_version = kPageFormatVersion + 1;
  SealPage(page.data());
  Status newer = VerifyPage(page.data(), PageId(9));
  REQUIRE(newer.IsCorruption());
  REQUIRE(Contains(newer, "page 9"));
  REQUIRE(Contains(newer, "format version " + std::to_string(kPageFormatVersion + 1)));

  HeaderOf(page.data())->format_version = kPageFormatVersion - 1;
  SealPage(page.data());
  Status older = VerifyPage(page.data(), PageId(9));
  REQUIRE(older.IsCorruption());
  REQUIRE(Contains(older, "format version " + std::to_string(kPageFormatVersion - 1)));
  REQUIRE(Contains(older, "not supported"));

  HeaderOf(page.data())->format_version = kPageFormatVersion;
  HeaderOf(page.data())->type = kMaxPageType + 1;
  SealPage(page.data());
  Status unknown = VerifyPage(page.data(), PageId(9));
  REQUIRE(unknown.IsCorruption());
  REQUIRE(Contains(unknown, "unknown page type 7"));

  std::memset(page.data(), 0, kPageBytes);
  REQUIRE(IsZeroPage(page.data()));
  Status zero = VerifyPage(page.data(), PageId(9));
  REQUIRE(zero.IsCorruption());
  REQUIRE(Contains(zero, "page 9: never written"));
  page.data()[kPageBytes - 1] = 1;
  REQUIRE(!IsZeroPage(page.data()));
}
