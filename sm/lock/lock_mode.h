// Lock modes of the hierarchical lock manager (Gray, Lorie, Putzolu & Traiger, 1976):
// IS, IX, S, SIX and X, plus kNone ("no lock", the identity of the join), and INC, the
// increment (escrow) mode of a key whose holders only add to counters in its record
// (Gray & Reuter, "Transaction Processing", 7.11; O'Neil's escrow method without bounds):
// additions commute, so INC is compatible with INC and with nothing else but kNone. A reader
// (S) waits for every adder to finish and so reads only committed sums; a writer (X) waits
// too. INC is a key mode: its parents need IX, as for X.
//
// XK is X on a key alone, not on the gap before it (InnoDB's LOCK_X | LOCK_REC_NOT_GAP): what
// a writer of a key's record holds (update, delete, insert of the key; a read for update). In
// next-key locking an insertion into the gap before key k asks for IX on k (instant) to find
// out whether a scanner holds that gap (S on k) or a delete closed it (X on k, the deleted
// key's next key); a writer of k's own record has done neither, so XK lets that IX through and
// excludes everything else. Without it, inserters queue behind any uncommitted writer of the
// next key (TPC-C's history rows, appended by concurrent Payments of one district). Order:
// IS < IX < XK < X; XK is incomparable with S, SIX and INC (their join with it is X).
//
// Owns: the compatibility matrix, the supremum (join) table used for conversions, and the
// intention mode a parent needs for a child mode. All are constexpr tables so that the lock
// table's fast path is an index and a bit test.
//
// Invariants (checked by static_asserts below and exhaustively by tests/lock/lock_mode_test):
//   1. Compatible() is symmetric; kNone is compatible with every mode; X with none but kNone.
//   2. Supremum() is commutative, associative and idempotent, with kNone as identity; the
//      result covers both arguments (Covers(Supremum(a, b), a)).
//   3. Covers(held, wanted) == (Supremum(held, wanted) == held): a request for a covered mode
//      changes nothing, which is why a re-request in a covered mode is a no-op.
//   4. A stronger mode is never more compatible: if Covers(a, b) then every mode compatible
//      with a is compatible with b.
//
// Thread/fiber safety: constants and pure functions only.
#pragma once

#include <cstdint>

namespace sm::lock {

enum class LockMode : uint8_t { kNone = 0, kIS, kIX, kS, kSIX, kX, kInc, kXK };

inline constexpr int kLockModeCount = 8;  // including kNone

namespace detail {
using M = LockMode;
// kCompatible[a][b]: may one owner hold a while another holds b? Rows and columns in enum
// order (None, IS, IX, S, SIX, X, INC, XK).
inline constexpr bool kCompatible[kLockModeCount][kLockModeCount] = {
    /* None */ {true, true, true, true, true, true, true, true},
    /* IS   */ {true, true, true, true, true, false, false, true},
    /* IX   */ {true, true, true, false, false, false, false, true},
    /* S    */ {true, true, false, true, false, false, false, false},
    /* SIX  */ {true, true, false, false, false, false, false, false},
    /* X    */ {true, false, false, false, false, false, false, false},
    /* INC  */ {true, false, false, false, false, false, true, false},
    /* XK   */ {true, true, true, false, false, false, false, false},
};
// kSupremum[a][b]: the weakest mode that covers both a and b (the join of the mode lattice
// None < IS < {IX, S} < SIX < X, where IX and S are incomparable and IX v S = SIX;
// None < INC < X, INC incomparable with every other mode: only X covers INC and another; and
// IX < XK < X, XK incomparable with S, SIX and INC).
inline constexpr LockMode kSupremum[kLockModeCount][kLockModeCount] = {
    /* None */ {M::kNone, M::kIS, M::kIX, M::kS, M::kSIX, M::kX, M::kInc, M::kXK},
    /* IS   */ {M::kIS, M::kIS, M::kIX, M::kS, M::kSIX, M::kX, M::kX, M::kXK},
    /* IX   */ {M::kIX, M::kIX, M::kIX, M::kSIX, M::kSIX, M::kX, M::kX, M::kXK},
    /* S    */ {M::kS, M::kS, M::kSIX, M::kS, M::kSIX, M::kX, M::kX, M::kX},
    /* SIX  */ {M::kSIX, M::kSIX, M::kSIX, M::kSIX, M::kSIX, M::kX, M::kX, M::kX},
    /* X    */ {M::kX, M::kX, M::kX, M::kX, M::kX, M::kX, M::kX, M::kX},
    /* INC  */ {M::kInc, M::kX, M::kX, M::kX, M::kX, M::kX, M::kInc, M::kX},
    /* XK   */ {M::kXK, M::kXK, M::kXK, M::kX, M::kX, M::kX, M::kX, M::kXK},
};

constexpr uint8_t ModeBit(LockMode m) { return static_cast<uint8_t>(1u << static_cast<int>(m)); }

// kIncompatibleMask[m]: the set (as ModeBit bits) of modes that conflict with m. The lock
// table keeps the set of granted modes of each lock as such a bit set, so a grant check is
// one AND.
constexpr uint8_t IncompatibleMask(LockMode m) {
  uint8_t mask = 0;
  for (int other = 0; other < kLockModeCount; ++other) {
    if (!kCompatible[static_cast<int>(m)][other]) mask |= ModeBit(static_cast<LockMode>(other));
  }
  return mask;
}
inline constexpr uint8_t kIncompatibleMask[kLockModeCount] = {
    IncompatibleMask(M::kNone), IncompatibleMask(M::kIS),  IncompatibleMask(M::kIX),
    IncompatibleMask(M::kS),    IncompatibleMask(M::kSIX), IncompatibleMask(M::kX),
    IncompatibleMask(M::kInc),  IncompatibleMask(M::kXK),
};
}  // namespace detail

constexpr bool Compatible(LockMode a, LockMode b) {
  return detail::kCompatible[static_cast<int>(a)][static_cast<int>(b)];
}

constexpr LockMode Supremum(LockMode a, LockMode b) {
  return detail::kSupremum[static_cast<int>(a)][static_cast<int>(b)];
}

// True if holding `held` already grants everything `wanted` asks for.
constexpr bool Covers(LockMode held, LockMode wanted) { return Supremum(held, wanted) == held; }

// The intention mode an owner must hold on the parent before it may lock a child in `child`
// mode: IS for IS/S, IX for IX/SIX/X/INC/XK, kNone for kNone.
constexpr LockMode IntentionFor(LockMode child) {
  switch (child) {
    case LockMode::kNone:
      return LockMode::kNone;
    case LockMode::kIS:
    case LockMode::kS:
      return LockMode::kIS;
    case LockMode::kIX:
    case LockMode::kSIX:
    case LockMode::kX:
    case LockMode::kInc:
    case LockMode::kXK:
      return LockMode::kIX;
  }
  return LockMode::kX;
}

// True if holding `parent` on a parent lock implicitly grants `child` on every child of it,
// so the child lock need not be taken at all (S and SIX cover reads below, X everything).
constexpr bool ParentCoversChild(LockMode parent, LockMode child) {
  if (parent == LockMode::kX) return true;
  if (parent == LockMode::kS || parent == LockMode::kSIX) {
    return child == LockMode::kIS || child == LockMode::kS;
  }
  return false;
}

// The mode that holding `parent` implicitly grants on every child: X under X, S under S and
// SIX (its IX part grants nothing below: writes there lock explicitly), else none. So for
// every mode c but kNone, ParentCoversChild(parent, c) == Covers(ImpliedOnChildren(parent), c)
// (checked below).
constexpr LockMode ImpliedOnChildren(LockMode parent) {
  if (parent == LockMode::kX) return LockMode::kX;
  if (parent == LockMode::kS || parent == LockMode::kSIX) return LockMode::kS;
  return LockMode::kNone;
}

const char* LockModeName(LockMode mode);

// --- Compile-time checks of the invariants above -------------------------------------------
namespace detail {
constexpr bool CheckTables() {
  for (int a = 0; a < kLockModeCount; ++a) {
    LockMode ma = static_cast<LockMode>(a);
    if (!Compatible(LockMode::kNone, ma)) return false;
    if (Supremum(LockMode::kNone, ma) != ma) return false;  // identity
    if (Supremum(ma, ma) != ma) return false;               // idempotent
    for (int b = 0; b < kLockModeCount; ++b) {
      LockMode mb = static_cast<LockMode>(b);
      if (Compatible(ma, mb) != Compatible(mb, ma)) return false;  // symmetric
      if (Supremum(ma, mb) != Supremum(mb, ma)) return false;      // commutative
      LockMode s = Supremum(ma, mb);
      if (!Covers(s, ma) || !Covers(s, mb)) return false;
      for (int c = 0; c < kLockModeCount; ++c) {
        LockMode mc = static_cast<LockMode>(c);
        if (Supremum(Supremum(ma, mb), mc) != Supremum(ma, Supremum(mb, mc))) return false;
        // Invariant 4: a covers b => compatible(c, a) implies compatible(c, b).
        if (Covers(ma, mb) && Compatible(mc, ma) && !Compatible(mc, mb)) return false;
      }
      if (mb != LockMode::kNone &&
          ParentCoversChild(ma, mb) != Covers(ImpliedOnChildren(ma), mb)) {
        return false;
      }
    }
  }
  return true;
}
static_assert(CheckTables(), "lock mode tables violate the lattice invariants");
static_assert(Supremum(LockMode::kS, LockMode::kIX) == LockMode::kSIX);
static_assert(!Compatible(LockMode::kX, LockMode::kIS));
static_assert(Compatible(LockMode::kInc, LockMode::kInc));
static_assert(!Compatible(LockMode::kInc, LockMode::kS));
static_assert(Compatible(LockMode::kXK, LockMode::kIX));
static_assert(!Compatible(LockMode::kXK, LockMode::kXK));
}  // namespace detail

}  // namespace sm::lock
