// Lock modes and ids: the compatibility matrix and supremum table, exhaustively, against
// the textbook tables written out independently; lock id hierarchy and hashing.
#include "sm/lock/lock_mode.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "sm/lock/lock_id.h"

using namespace sm::lock;

namespace {
constexpr LockMode kModes[] = {LockMode::kIS, LockMode::kIX, LockMode::kS, LockMode::kSIX,
                               LockMode::kX};
}  // namespace

TEST_CASE("compatibility matrix: all 25 pairs", "[unit][lock]") {
  // Gray et al. 1976, table 2, written row by row as strings: IS IX S SIX X.
  const char* kExpected[] = {
      /* IS  */ "YYYYN",
      /* IX  */ "YYNNN",
      /* S   */ "YNYNN",
      /* SIX */ "YNNNN",
      /* X   */ "NNNNN",
  };
  int checked = 0;
  for (int a = 0; a < 5; ++a) {
    for (int b = 0; b < 5; ++b) {
      INFO(LockModeName(kModes[a]) << " vs " << LockModeName(kModes[b]));
      CHECK(Compatible(kModes[a], kModes[b]) == (kExpected[a][b] == 'Y'));
      ++checked;
    }
  }
  REQUIRE(checked == 25);
  for (LockMode m : kModes) {
    CHECK(Compatible(LockMode::kNone, m));
    CHECK(Compatible(m, LockMode::kNone));
  }
}

TEST_CASE("supremum table: all 25 pairs", "[unit][lock]") {
  using M = LockMode;
  const M kExpected[5][5] = {
      /* IS  */ {M::kIS, M::kIX, M::kS, M::kSIX, M::kX},
      /* IX  */ {M::kIX, M::kIX, M::kSIX, M::kSIX, M::kX},
      /* S   */ {M::kS, M::kSIX, M::kS, M::kSIX, M::kX},
      /* SIX */ {M::kSIX, M::kSIX, M::kSIX, M::kSIX, M::kX},
      /* X   */ {M::kX, M::kX, M::kX, M::kX, M::kX},
  };
  for (int a = 0; a < 5; ++a) {
    for (int b = 0; b < 5; ++b) {
      INFO(LockModeName(kModes[a]) << " + " << LockModeName(kModes[b]));
      CHECK(Supremum(kModes[a], kModes[b]) == kExpected[a][b]);
      // The supremum is the weakest mode that covers both: any mode covering both covers it.
      for (LockMode c : kModes) {
        if (Covers(c, kModes[a]) && Covers(c, kModes[b])) {
          CHECK(Covers(c, Supremum(kModes[a], kModes[b])));
        }
      }
    }
    CHECK(Supremum(LockMode::kNone, kModes[a]) == kModes[a]);
  }
  CHECK(Covers(LockMode::kSIX, LockMode::kS));
  CHECK(Covers(LockMode::kSIX, LockMode::kIX));
  CHECK_FALSE(Covers(LockMode::kS, LockMode::kIX));
  CHECK_FALSE(Covers(LockMode::kIX, LockMode::kS));
}

TEST_CASE("intention modes and parent coverage", "[unit][lock]") {
  CHECK(IntentionFor(LockMode::kS) == LockMode::kIS);
  CHECK(IntentionFor(LockMode::kIS) == LockMode::kIS);
  CHECK(IntentionFor(LockMode::kX) == LockMode::kIX);
  CHECK(IntentionFor(LockMode::kSIX) == LockMode::kIX);
  CHECK(IntentionFor(LockMode::kIX) == LockMode::kIX);
  CHECK(ParentCoversChild(LockMode::kX, LockMode::kX));
  CHECK(ParentCoversChild(LockMode::kS, LockMode::kS));
  CHECK(ParentCoversChild(LockMode::kSIX, LockMode::kS));
  CHECK_FALSE(ParentCoversChild(LockMode::kSIX, LockMode::kX));
  CHECK_FALSE(ParentCoversChild(LockMode::kS, LockMode::kIX));
  CHECK_FALSE(ParentCoversChild(LockMode::kIX, LockMode::kS));
}

TEST_CASE("the increment mode: compatible with itself only, covered by X alone", "[unit][lock]") {
  const LockMode kInc = LockMode::kInc;
  CHECK(Compatible(kInc, kInc));
  CHECK(Compatible(kInc, LockMode::kNone));
  for (LockMode m : kModes) {
    INFO(LockModeName(m));
    CHECK_FALSE(Compatible(kInc, m));
    CHECK_FALSE(Compatible(m, kInc));
    // Only X covers INC and any other mode; INC covers none of them.
    CHECK(Supremum(kInc, m) == LockMode::kX);
    CHECK(Supremum(m, kInc) == LockMode::kX);
    CHECK_FALSE(Covers(kInc, m));
    CHECK(Covers(m, kInc) == (m == LockMode::kX));
  }
  CHECK(Supremum(kInc, kInc) == kInc);
  CHECK(Supremum(LockMode::kNone, kInc) == kInc);
  CHECK(IntentionFor(kInc) == LockMode::kIX);
  CHECK(ParentCoversChild(LockMode::kX, kInc));
  CHECK_FALSE(ParentCoversChild(LockMode::kSIX, kInc));
  CHECK_FALSE(ParentCoversChild(LockMode::kS, kInc));
  CHECK(std::string(LockModeName(kInc)) == "INC");
}

TEST_CASE("XK: X on a key alone lets the gap's inserters (IX) through", "[unit][lock]") {
  const LockMode kXK = LockMode::kXK;
  const char* kExpected = "YYNNN";  // IS IX S SIX X
  for (int i = 0; i < 5; ++i) {
    INFO(LockModeName(kModes[i]));
    CHECK(Compatible(kXK, kModes[i]) == (kExpected[i] == 'Y'));
    CHECK(Compatible(kModes[i], kXK) == (kExpected[i] == 'Y'));
  }
  CHECK_FALSE(Compatible(kXK, kXK));
  CHECK_FALSE(Compatible(kXK, LockMode::kInc));
  CHECK(Supremum(kXK, LockMode::kIX) == kXK);  // an owner's own insert below its key
  CHECK(Supremum(kXK, LockMode::kIS) == kXK);
  CHECK(Supremum(kXK, LockMode::kS) == LockMode::kX);
  CHECK(Supremum(kXK, LockMode::kSIX) == LockMode::kX);
  CHECK(Supremum(kXK, LockMode::kInc) == LockMode::kX);
  CHECK(Supremum(kXK, LockMode::kX) == LockMode::kX);
  CHECK(Covers(LockMode::kX, kXK));
  CHECK_FALSE(Covers(kXK, LockMode::kS));
  CHECK(IntentionFor(kXK) == LockMode::kIX);
  CHECK(ParentCoversChild(LockMode::kX, kXK));
  CHECK(std::string(LockModeName(kXK)) == "XK");
}

TEST_CASE("lock ids: hierarchy, equality, hashing", "[unit][lock]") {
  const LockId key = LockId::Key(7, "hello");
  CHECK(key.kind() == LockId::Kind::kKey);
  CHECK(key.table() == 7);
  CHECK(key == LockId::Key(7, std::string("hel") + "lo"));
  CHECK_FALSE(key == LockId::Key(8, "hello"));  // the table is part of the id
  CHECK_FALSE(key == LockId::Key(7, "hellp"));
  CHECK(key.Parent() == LockId::Table(7));
  CHECK(LockId::TableEnd(7).Parent() == LockId::Table(7));
  CHECK(LockId::Table(7).Parent() == LockId::Database());
  CHECK_FALSE(LockId::Database().Parent().valid());
  CHECK_FALSE(LockId().valid());
  CHECK_FALSE(LockId::TableEnd(7) == LockId::KeyHash(7, 0));
  CHECK(LockId::KeyHash(7, LockId::HashKey("hello")) == key);

  // Every length from 0 to 40 and every single-byte change gives a distinct hash.
  std::set<uint64_t> hashes;
  std::string s;
  for (int len = 0; len <= 40; ++len) {
    hashes.insert(LockId::HashKey(s));
    for (size_t i = 0; i < s.size(); ++i) {
      std::string t = s;
      t[i] ^= 1;
      hashes.insert(LockId::HashKey(t));
    }
    s.push_back(static_cast<char>('a' + len % 26));
  }
  CHECK(hashes.size() == 41 + 40 * 41 / 2);
  // Binary keys with zero bytes of different lengths do not alias.
  CHECK(LockId::HashKey(std::string(3, '\0')) != LockId::HashKey(std::string(4, '\0')));
  CHECK(LockId::HashKey(std::string(8, '\0')) != LockId::HashKey(std::string(9, '\0')));
}
