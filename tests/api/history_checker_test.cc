// The isolation checker (history_checker.h) on hand-written histories: each anomaly it claims to
// find is found, at the levels that forbid it and not at those that allow it, and a serializable
// history passes. Keys are small integers; ticks are written out where the check needs them.
#include "tests/api/history_checker.h"

#include <catch2/catch.hpp>

namespace sm::test::iso {
namespace {

// A history builder: attempts are added in order and returned by reference for recording
// (room is reserved, so a reference stays valid while more attempts are added).
struct Builder {
  History h;
  explicit Builder(uint32_t keys) {
    h.final_state.assign(keys, kInitialVersion);
    h.attempts.reserve(16);
  }
  Attempt& Txn(uint64_t tag, Outcome outcome = Outcome::kCommitted) {
    Attempt a;
    a.tag = tag;
    a.outcome = outcome;
    h.attempts.push_back(a);
    return h.attempts.back();
  }
};

void ExpectAnomaly(const History& h, Level level, std::string_view kind) {
  const CheckResult r = Check(h, level);
  INFO(r.Report());
  CHECK_FALSE(r.ok());
  CHECK(r.Has(kind));
}

void ExpectClean(const History& h, Level level) {
  const CheckResult r = Check(h, level);
  INFO(r.Report());
  CHECK(r.ok());
}

TEST_CASE("version values round-trip and reject junk", "[unit][isolation]") {
  Version me, prev;
  REQUIRE(DecodeVersionValue(EncodeVersionValue({12000007, 3}, kInitialVersion), &me, &prev));
  CHECK(me == Version{12000007, 3});
  CHECK(prev == kInitialVersion);
  CHECK_FALSE(DecodeVersionValue("12.1/0.0x", &me, &prev));
  CHECK_FALSE(DecodeVersionValue("1000", &me, &prev));
}

TEST_CASE("checker: a serializable history passes at both levels", "[unit][isolation]") {
  Builder b(2);
  Attempt& t1 = b.Txn(1);
  t1.Read(0, kInitialVersion);
  const Version v1 = t1.Write(0, kInitialVersion, 1);
  t1.finished_at = 2;
  Attempt& t2 = b.Txn(2);
  t2.Read(0, v1);
  t2.Read(1, kInitialVersion);
  const Version v2 = t2.Write(0, v1, 3);
  t2.Read(0, v2);  // its own write
  t2.finished_at = 4;
  Attempt& t3 = b.Txn(3, Outcome::kAborted);  // aborted and unseen
  t3.Write(1, kInitialVersion, 5);
  t3.finished_at = 6;
  Attempt& t4 = b.Txn(4);
  t4.Read(1, kInitialVersion);
  t4.Read(0, v2);
  b.h.final_state[0] = v2;
  ExpectClean(b.h, Level::kSerializable);
  ExpectClean(b.h, Level::kReadCommitted);
  const CheckResult r = Check(b.h, Level::kSerializable);
  CHECK(r.committed == 3);
  CHECK(r.aborted == 1);
  CHECK(r.ww_edges == 1);  // T1 -> T2 on key 0
  CHECK(r.wr_edges == 2);  // T1 -> T2, T2 -> T4 on key 0
  // Each read is followed by the reader's own write, or reads a last version: no rw edges.
  CHECK(r.rw_edges == 0);
}

TEST_CASE("checker: write skew is a G2 cycle, allowed under read committed", "[unit][isolation]") {
  Builder b(2);
  Attempt& t1 = b.Txn(1);
  t1.Read(0, kInitialVersion);
  t1.Read(1, kInitialVersion);
  const Version v1 = t1.Write(1, kInitialVersion, 1);
  t1.finished_at = 3;
  Attempt& t2 = b.Txn(2);
  t2.Read(0, kInitialVersion);
  t2.Read(1, kInitialVersion);
  const Version v2 = t2.Write(0, kInitialVersion, 2);
  t2.finished_at = 4;
  b.h.final_state = {v2, v1};
  ExpectAnomaly(b.h, Level::kSerializable, "G2 cycle");
  ExpectClean(b.h, Level::kReadCommitted);
}

TEST_CASE("checker: a lost update is caught, allowed under read committed", "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1);
  t1.Read(0, kInitialVersion);
  t1.Write(0, kInitialVersion, 1);
  t1.finished_at = 2;
  Attempt& t2 = b.Txn(2);
  t2.Read(0, kInitialVersion);  // read before T1 wrote, wrote after T1 committed
  const Version v2 = t2.Write(0, kInitialVersion, 3);
  t2.finished_at = 4;
  b.h.final_state[0] = v2;
  ExpectAnomaly(b.h, Level::kSerializable, "lost update");
  ExpectClean(b.h, Level::kReadCommitted);
}

TEST_CASE("checker: a read of an aborted write is G1a", "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1, Outcome::kAborted);
  const Version dirty = t1.Write(0, kInitialVersion, 1);
  t1.finished_at = 3;
  Attempt& t2 = b.Txn(2);
  t2.Read(0, dirty);
  ExpectAnomaly(b.h, Level::kSerializable, "G1a");
  ExpectAnomaly(b.h, Level::kReadCommitted, "G1a");
}

TEST_CASE("checker: a read before the writer committed is an uncommitted read",
          "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1);
  const Version v1 = t1.Write(0, kInitialVersion, 1);
  t1.finished_at = 3;  // it committed, but only after the read below
  Attempt& t2 = b.Txn(2);
  t2.Read(0, v1, 2);
  t2.finished_at = 4;
  b.h.final_state[0] = v1;
  ExpectAnomaly(b.h, Level::kSerializable, "G1 (uncommitted read)");
  ExpectAnomaly(b.h, Level::kReadCommitted, "G1 (uncommitted read)");
  b.h.attempts[1].ops[0].at = 5;  // read after the commit began: fine
  ExpectClean(b.h, Level::kReadCommitted);
}

TEST_CASE("checker: a read of an overwritten intermediate version is G1b", "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1);
  t1.Read(0, kInitialVersion);
  const Version first = t1.Write(0, kInitialVersion, 1);
  const Version second = t1.Write(0, first, 2);
  t1.finished_at = 3;
  Attempt& t2 = b.Txn(2);
  t2.Read(0, first);
  b.h.final_state[0] = second;
  ExpectAnomaly(b.h, Level::kSerializable, "G1b");
  ExpectAnomaly(b.h, Level::kReadCommitted, "G1b");
}

TEST_CASE("checker: each of two writers reading the other's write is a G1c cycle",
          "[unit][isolation]") {
  Builder b(2);
  Attempt& a1 = b.Txn(1);
  Attempt& a2 = b.Txn(2);
  const Version v1 = a1.Write(0, kInitialVersion, 1);
  const Version v2 = a2.Write(1, kInitialVersion, 2);
  a1.Read(1, v2);
  a2.Read(0, v1);
  a1.finished_at = 3;
  a2.finished_at = 4;
  b.h.final_state = {v1, v2};
  ExpectAnomaly(b.h, Level::kSerializable, "G1c cycle");
  ExpectAnomaly(b.h, Level::kReadCommitted, "G1c cycle");
}

TEST_CASE("checker: overlapping uncommitted writes of a key are a dirty write",
          "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1);
  const Version v1 = t1.Write(0, kInitialVersion, 1);
  t1.finished_at = 4;  // still holding its write at tick 2
  Attempt& t2 = b.Txn(2);
  t2.Read(0, v1);
  const Version v2 = t2.Write(0, v1, 2);
  t2.finished_at = 3;
  b.h.final_state[0] = v2;
  ExpectAnomaly(b.h, Level::kSerializable, "G0 (dirty write)");
  ExpectAnomaly(b.h, Level::kReadCommitted, "G0 (dirty write)");
}

TEST_CASE("checker: a cycle of overwrites is G0", "[unit][isolation]") {
  // T1 then T2 on key 0, T2 then T1 on key 1 (untimed, so only the chains order them).
  Builder b(2);
  Attempt& a1 = b.Txn(1);
  Attempt& a2 = b.Txn(2);
  const Version k0_1 = a1.Write(0, kInitialVersion);
  const Version k1_2 = a2.Write(1, kInitialVersion);
  const Version k0_2 = a2.Write(0, k0_1);
  const Version k1_1 = a1.Write(1, k1_2);
  b.h.final_state = {k0_2, k1_1};
  ExpectAnomaly(b.h, Level::kSerializable, "G0 cycle");
}

TEST_CASE("checker: an aborted write left in the final state is caught", "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1, Outcome::kAborted);
  b.h.final_state[0] = t1.Write(0, kInitialVersion, 1);
  t1.finished_at = 2;
  ExpectAnomaly(b.h, Level::kSerializable, "final state");
  ExpectAnomaly(b.h, Level::kReadCommitted, "final state");
}

TEST_CASE("checker: a read of a version nobody wrote is garbage", "[unit][isolation]") {
  Builder b(2);
  Attempt& t1 = b.Txn(1);
  t1.Read(1, Version{77, 1});
  ExpectAnomaly(b.h, Level::kSerializable, "garbage read");
}

TEST_CASE("checker: a stale read after one's own write is internal", "[unit][isolation]") {
  Builder b(1);
  Attempt& t1 = b.Txn(1);
  const Version v1 = t1.Write(0, kInitialVersion, 1);
  t1.Read(0, kInitialVersion);
  t1.finished_at = 2;
  b.h.final_state[0] = v1;
  ExpectAnomaly(b.h, Level::kSerializable, "internal");
}

}  // namespace
}  // namespace sm::test::iso
