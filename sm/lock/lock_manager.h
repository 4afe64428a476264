// LockManager: the hierarchical lock manager (strict two-phase locking).
//
// Owns: the lock table (a fixed array of hash buckets, each a SpinLock and a chain of lock
// heads, see lock_table.h), FIFO granting with conversions, waiting through each owner's
// Baton, deadlock detection, lock-wait timeouts, key-range (next-key) locking, statistics,
// and the registry of owners (for CheckInvariants).
//
// ---- Granting ------------------------------------------------------------------------------
//   * A new request is granted at once iff it is compatible with every granted mode AND no
//     request is queued (no waiter, no pending conversion): no barging, so an X waiter is not
//     starved by a stream of S requests.
//   * A request by an owner that already holds the lock in a covering mode is a no-op (locks
//     are not counted: one Release drops the lock whatever the number of requests). A
//     stronger mode is a conversion to Supremum(held, wanted) (S + IX = SIX, ...). A
//     conversion is granted at once iff the new mode is compatible with every OTHER holder;
//     otherwise it waits in the head's conversion queue, which is served before any plain
//     waiter, so upgrades are not starved by later requests.
//   * Every release (and every removal of a waiter) re-runs the grant pass: conversions that
//     became compatible, then, if no conversion is pending, plain waiters in FIFO order until
//     the first conflict. Each granted waiter is woken through its owner's Baton after the
//     bucket latch is dropped (a fiber on another worker is woken through that worker's
//     remote queue; a plain thread through its futex).
//   * Durations: kCommit locks are held until ReleaseAll (or Release, for read-committed
//     short read locks). kInstant locks are granted and released at once: the caller only
//     waits until the mode could be granted. If the owner already holds the lock, an instant
//     request is served as a commit-duration conversion (the stronger mode is kept), which is
//     conservative and never wrong under strict 2PL.
//
// ---- Hierarchy -------------------------------------------------------------------------------
// Database > table > key (lock_id.h). Before locking a child in mode m an owner must hold
// IntentionFor(m) (IS for IS/S, IX for IX/SIX/X/INC/XK) on every ancestor. Lock() takes exactly what
// it is told; LockHierarchical(), LockTable() and LockKey() take the ancestors' intention
// locks first, top-down, and skip the child lock altogether when an ancestor is held in a mode
// that covers it (table S or SIX covers key S/IS, table X covers everything). Intention locks
// are always commit duration.
//
// ---- Key-range locking (next-key locking, after ARIES/KVL) for serializable B-trees ----------
// Keys are locked through LockKey (table, key bytes). "next key of k" = the smallest key in
// the table greater than k, or LockId::TableEnd(table) when k is beyond the last key. With
// strict 2PL the protocol below prevents phantoms:
//
//   operation (serializable)        locks                                       duration
//   fetch k, found                  S on k                                      commit
//   fetch k, not found              S on next key of k      (RangeOp::kScan)    commit
//   scan [lo, hi]                   S on every key returned, and S on the first
//                                   key > hi (or TableEnd)  (RangeOp::kScan)    commit
//   insert k                        IX on next key of k     (RangeOp::kInsert)  instant
//                                   then XK on k                                commit
//   insert k, k already present     S on k, then report Duplicate               commit
//   delete k                        XK on k                                     commit
//                                   X on next key of k      (RangeOp::kDelete)  commit
//   update non-key fields of k      XK on k                                     commit
//   add to a counter of k           INC on k                                    commit
//
// Why it works: a scan's S locks cover every gap (prev, key] it read, the S on the key after
// hi covers the gap ending the range; an insert into any of those gaps must first get IX on
// the key that follows the gap, which conflicts with the scanner's S, so it waits until the
// scanner commits. IX is compatible with IX, so inserters into one gap do not block each
// other. A delete holds X on the next key so that its gap stays closed until it commits (a
// rollback can re-insert k). A writer of k's record holds XK, X on the key alone: it excludes
// every reader and writer of k but lets an insertion into the gap before k pass (IX), since
// the writer read no gap and closed none; X on a next key (a delete's) still stops it. A read-committed scan takes S on keys and releases each with
// Release() after reading it, and takes no range lock.
//
// Rules for the B-tree: (1) Never wait for a lock while holding a page latch: request with
// LockWait::kNoWait under the latch; on Status::Busy release the latch, lock with kBlock,
// re-latch and re-validate (the next key may have changed; then lock the new next key too).
// (2) Take the range lock on the next key as it is found under the leaf latch, before
// inserting. (3) Hash collisions of key ids only ever add conflicts.
//
// ---- Deadlocks and timeouts -----------------------------------------------------------------
// Waits-for graph: an owner W waiting on lock L waits for (a) every other holder of L whose
// granted mode conflicts with W's wanted mode; if W's request is a new one (not a conversion),
// also for (b) every owner with a pending conversion on L and (c) the waiter immediately
// ahead of W (which transitively waits for everything ahead of it: FIFO grants W only after
// it). Detection runs at once, on the blocking path only: the blocking owner takes the global
// detector mutex (a fiber-aware threads::Mutex, never touched by grants or releases), registers
// itself as waiting, and searches depth-first for a cycle through itself. The detector reads
// each lock's queue under that lock's bucket latch, one bucket at a time; only registered
// (waiting) owners are expanded, and a registered owner stays alive and keeps its waiting
// request until it unregisters, which also needs the mutex. Because registration and search
// happen under one mutex, the last owner to close a cycle always finds it, so no deadlock is
// missed. Grants and releases that run concurrently with a search can only remove edges, so
// a search may (rarely) report a cycle that has just dissolved: an unnecessary, retryable
// abort, never a hang.
// Victim policy: the YOUNGEST transaction of the cycle (largest TxnId; on a tie, the
// requester). Its waiting request is removed from the queue (a conversion falls back to the
// mode already held) and its lock call returns Status::Deadlock; the other members keep
// waiting and proceed once the victim's transaction aborts and releases its locks. The
// search repeats until no cycle passes through the requester, so each cycle loses exactly
// one member.
// Timeout: a wait longer than options.lock_wait_timeout returns Status::LockTimeout, after
// removing the request from the queue. If the request was granted (or picked as a victim)
// just as the timer fired, the grant wins: the call waits for the pending wake-up and returns
// OK (or Deadlock), so the table and the outcome always agree.
//
// ---- Inheritance (speculative lock inheritance, Johnson et al., VLDB 2009) -------------------
// Every transaction takes IS or IX on the database and on each table it touches, and in an
// OLTP mix nearly all of them are compatible, yet acquiring and releasing them costs as much as
// the key lock itself. ReleaseAll(owner, Inherit::kIntentions) therefore keeps the owner's
// granted IS/IX locks on the database and tables (state kInherited) for the owner's next
// transaction, unless a request waits on the lock. Such a lock stays in the head's granted list
// and counts in its granted modes, so nothing compatible notices it:
//   * The owner's next transaction claims it on first use (Claim, under the bucket latch) and
//     then holds it like a lock it acquired. A lock it does not use is released at its end.
//   * A request that conflicts with an inherited lock revokes it (RevokeInherited, under the
//     bucket latch, before deciding whether to wait): the idle owner is no transaction and
//     must not make anyone wait or appear in the waits-for graph. The owner notices the
//     kRevoked state when it next looks and simply acquires the lock again.
// Why it is safe: a kInherited lock protects nothing (its owner runs no transaction until it
// claims it), so revoking it breaks no promise, and claiming happens under the same latch, so a
// lock is either claimed (a normal holder the requester waits for) or revoked, never both. No
// waiter ever conflicts with a kInherited lock: revocation precedes every wait, and a lock with
// a waiter is released rather than kept. An owner that is destroyed gives its locks up
// (Retire).
//
// ---- STEPS -----------------------------------------------------------------------------------
// Lock() passes the CTX site "lock.acquire" before it touches the table (no latch held), and a
// lock wait is tagged WaitReason::kLock, so a team member that blocks on a lock is reported
// as stray for that reason.
//
// Thread/fiber safety: every method may be called from any fiber or plain thread, each owner
// by one caller at a time. A waiting call suspends only the calling fiber (its worker runs
// others) or, on a plain thread, blocks that thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "sm/common/status.h"
#include "sm/lock/lock_id.h"
#include "sm/lock/lock_mode.h"
#include "sm/lock/lock_owner.h"
#include "sm/lock/lock_table.h"
#include "threads/sync.h"

namespace sm::lock {

struct LockManagerOptions {
  // Hash buckets of the lock table; rounded up to a power of two, at least 1024.
  size_t bucket_count = 8192;
  // A lock wait longer than this fails with Status::LockTimeout (backstop against anything
  // the detector cannot see, e.g. a wait on a latch held by a waiting transaction). A year
  // or more means "wait forever" (no timer is armed).
  std::chrono::nanoseconds lock_wait_timeout = std::chrono::seconds(10);
  // Search for deadlocks whenever a request blocks. Off: only timeouts end deadlocks.
  bool detect_deadlocks = true;
};

enum class LockDuration : uint8_t { kCommit, kInstant };
enum class LockWait : uint8_t {
  kBlock,   // wait until granted, a deadlock, or the timeout
  kNoWait,  // return Status::Busy at once (leaving no trace) if the request would wait
};
// What ReleaseAll keeps for the owner's next transaction, see "Inheritance" above.
enum class Inherit : uint8_t { kNothing, kIntentions };
// Key-range lock on the next key, see "Key-range locking" above.
enum class RangeOp : uint8_t {
  kScan,    // S, commit: serializable scan end / not-found fetch
  kInsert,  // IX, instant: insert into the gap before the next key
  kDelete,  // X, commit: delete of the key before the next key
};

class LockManager {
 public:
  explicit LockManager(const LockManagerOptions& options = {});
  // Requires that every owner has been destroyed (so nothing is locked).
  ~LockManager();
  LockManager(const LockManager&) = delete;
  LockManager& operator=(const LockManager&) = delete;

  // Starts loading the lock-table bucket `id` hashes to, for writing, without waiting. A caller
  // that knows a lock it will ask for shortly (a point operation's key, before its descent)
  // calls it first so that the bucket's cache miss overlaps other work: random key locks in a
  // large table otherwise find their bucket out of the cache, and Lock waits for it.
  void Prefetch(const LockId& id) const;

  // Locks `id` in `mode` for `owner`, exactly as named (no parent locks). OK: granted (or
  // already covered). Deadlock / LockTimeout: not granted; retryable after the transaction
  // aborts. Busy: kNoWait and it would have waited.
  [[nodiscard]] Status Lock(LockOwner* owner, const LockId& id, LockMode mode,
                            LockDuration duration = LockDuration::kCommit,
                            LockWait wait = LockWait::kBlock);
  // Lock() after taking the intention locks on every ancestor of `id` (see "Hierarchy"). An
  // ancestor the owner holds in a mode that covers `mode` on its children (ParentCoversChild)
  // grants the request: nothing below it is locked. *effective (if given), on success: the
  // mode the owner now has on `id`, held or, in that case, implied by the ancestor
  // (ImpliedOnChildren); for a kCommit request it covers `mode`.
  [[nodiscard]] Status LockHierarchical(LockOwner* owner, const LockId& id, LockMode mode,
                                        LockDuration duration = LockDuration::kCommit,
                                        LockWait wait = LockWait::kBlock,
                                        LockMode* effective = nullptr);
  [[nodiscard]] Status LockTable(LockOwner* owner, TableId table, LockMode mode,
                                 LockWait wait = LockWait::kBlock, LockMode* effective = nullptr) {
    return LockHierarchical(owner, LockId::Table(table), mode, LockDuration::kCommit, wait,
                            effective);
  }
  [[nodiscard]] Status LockKey(LockOwner* owner, TableId table, std::string_view key,
                               LockMode mode, LockDuration duration = LockDuration::kCommit,
                               LockWait wait = LockWait::kBlock) {
    return LockHierarchical(owner, LockId::Key(table, key), mode, duration, wait);
  }
  // The range lock on `next_key` (a key id or LockId::TableEnd) for `op`, with parents.
  [[nodiscard]] Status LockKeyRange(LockOwner* owner, const LockId& next_key, RangeOp op,
                                    LockWait wait = LockWait::kBlock);

  // True if no owner other than `owner` holds, converts to or waits for a lock on the table
  // `table` or on the database in a mode that lets it change rows below (IX, SIX, X). Every
  // writer of a row holds such a lock until it ends (its row lock needs the intention, or the
  // ancestor's X covers the row), so while this holds, and a leaf is latched so that nobody
  // can start changing its rows, each row of the leaf is committed: a read-committed scan may
  // read the leaf without its per-row read locks (index/btree_hooks.h,
  // KeyLockHook::ReadsCommittedWithoutLocks). Takes two bucket latches; never waits.
  bool NoOtherWriter(const LockOwner* owner, TableId table) const;

  // Releases the owner's lock on `id` whatever its mode (read-committed short read locks).
  // Returns false if the owner did not hold it. The owner must not be waiting.
  bool Release(LockOwner* owner, const LockId& id);
  // Releases every lock of the owner, children before parents (reverse acquisition order),
  // except what `inherit` keeps, and adds its statistics to the manager's. End of transaction
  // (commit or abort).
  void ReleaseAll(LockOwner* owner, Inherit inherit = Inherit::kNothing);

  // Counts a re-request that a caller found covered by a lock the owner holds without
  // asking Lock() (as Lock() would count it). The owner's own fiber only.
  static void CountCovered(LockOwner* owner) {
    ++owner->stats_.requests;
    ++owner->stats_.covered;
  }

  // Totals over all owners, live (their counters as they stand) and destroyed.
  LockStats stats() const;
  const LockManagerOptions& options() const { return options_; }

  // Walks the whole table (each bucket under its latch) and every registered owner:
  // head invariants of lock_table.h, and each owner's lock list matches the table. Requires
  // that no lock call is in flight except calls blocked in a wait. Prints the first violation
  // to stderr and returns false. In paranoid builds (SM_PARANOID) every state transition -
  // grant, queueing, conversion, release, claim, bequest, revocation, victim or timeout, the
  // end of a wait - checks the heads of its bucket under the latch, and every Lock, Release
  // and ReleaseAll ends with a check of its owner's request (Lock) or requests against the
  // table.
  bool CheckInvariants() const;

  // Test hooks (each takes the relevant latches).
  size_t TEST_LockHeadCount() const;                   // resources with a non-empty queue
  size_t TEST_WaiterCount(const LockId& id) const;     // waiting + converting requests
  size_t TEST_GrantedCount(const LockId& id) const;    // granted (incl. converting) requests
  std::string TEST_Dump() const;                       // the whole table, one head per line

 private:
  friend class LockOwner;
  struct DetectorEdge {
    LockOwner* owner;
    bool registered;  // owner->dd_registered_, read while its request pinned it
  };
  struct DetectorFrame {
    LockOwner* owner;
    size_t next_edge;
    size_t end_edge;
  };

  Bucket& BucketFor(uint64_t mix) const { return buckets_[mix & bucket_mask_]; }
  Status LockExact(LockOwner* owner, const LockId& id, LockMode mode, LockDuration duration,
                   LockWait wait, LockMode* held);
  Status LockAncestor(LockOwner* owner, const LockId& ancestor, uint64_t mix, LockMode mode,
                      LockWait wait, LockMode* implied);
  // LockAncestor's path when the owner lacks the intention: a conversion or a new request,
  // out of line (noinline) so that the usual path stays small.
  [[gnu::noinline]] Status StrengthenAncestor(LockOwner* owner, const LockId& ancestor,
                                              uint64_t mix, LockRequest* req, LockMode intent,
                                              LockWait wait);
  Status Acquire(LockOwner* owner, const LockId& id, uint64_t mix, LockMode mode,
                 LockDuration duration, LockWait wait);
  // Acquire's path for a request that cannot be granted now: refused (kNoWait), or queued and
  // waited for. Called with the bucket latched; releases it. Out of line (noinline), so that
  // what is left of Acquire, the immediate grant of nearly every request, is small enough to
  // inline into LockExact (Lock and LockHierarchical).
  [[gnu::noinline]] Status Enqueue(LockOwner* owner, Bucket& bucket, LockHead* head,
                                   const LockId& id, uint64_t mix, LockMode mode,
                                   LockDuration duration, LockWait wait);
  Status Convert(LockOwner* owner, LockRequest* req, LockMode target, LockWait wait);
  Status WaitForGrant(LockOwner* owner, LockRequest* req, LockMode wanted);
  void HandleTimeout(LockOwner* owner, LockRequest* req);
  Status FinishWait(LockOwner* owner, LockRequest* req, LockMode wanted);
  void ReleaseRequest(LockRequest* req);
  // ReleaseRequest's path when requests are queued on the head: grants and wakes them. Called
  // with the bucket latched; releases it.
  void ReleaseQueued(Bucket& bucket, LockRequest* req);
  // Gives up whatever a dying owner keeps, adds its statistics to retired_stats_, and
  // unregisters it.
  void Retire(LockOwner* owner);
  void ReleaseHeld(LockOwner* owner, Inherit inherit);

  // Inheritance (see above).
  LockRequest* FindOwn(LockOwner* owner, const LockId& id, uint64_t mix);
  LockRequest* Claim(LockOwner* owner, LockRequest* req);
  bool Bequeath(LockRequest* req);

  // Under the bucket latch.
  static LockHead* FindHead(const Bucket& bucket, const LockId& id);
  // `caller`: the owner whose fiber runs the call; its head pool supplies or takes the head.
  static LockHead* CreateHead(Bucket& bucket, const LockId& id, LockOwner* caller);
  static void FreeHeadIfEmpty(Bucket& bucket, LockHead* head, LockOwner* caller);
  static void Unlink(Bucket& bucket, LockRequest* req, WakeList* wakes);
  static uint64_t RevokeInherited(LockHead* head, LockMode wanted);
  static void GrantWaiters(LockHead* head, WakeList* wakes);
  static void GrantQueued(LockHead* head, LockRequest& r, WakeList* wakes);
  static void RemoveWaiter(Bucket& bucket, LockRequest* req, LockOwner* caller,
                           WakeList* wakes);

  // Deadlock detection (deadlock_detector.cc), under detector_mutex_.
  void DetectDeadlocks(LockOwner* self);
  void Unregister(LockOwner* owner);
  LockOwner* FindCycleVictim(LockOwner* self);
  void PushFrame(LockOwner* owner);
  void CollectBlockers(LockOwner* owner);
  void Victimize(LockOwner* victim, LockOwner* self);

  // Invariant checks (lock_manager_check.cc).
  bool CheckHead(const LockHead& head, size_t* request_count) const;
  bool CheckOwner(const LockOwner& owner, size_t* request_count) const;
  bool CheckOwnerRequest(const LockOwner& owner, const LockRequest& r,
                         size_t* request_count) const;
  // The SM_PARANOID checks at the state transitions, which hold while other calls run: every
  // head of the bucket (its latch held: ...Locked); the calling owner at the end of its call,
  // waiting for nothing, with its whole lock list (Now: ReleaseAll, Release) or its request on
  // `id` (Lock: a walk of the whole list at every lock would be quadratic in the locks a
  // transaction takes) matching the table.
  bool CheckBucketLocked(const Bucket& bucket) const;
  bool CheckBucket(Bucket& bucket) const;
  bool CheckOwnerNow(const LockOwner& owner) const;
  bool CheckOwnerLock(const LockOwner& owner, const LockId& id) const;
  // Granted (incl. converting) and waiting (incl. converting) request counts of `id`.
  void QueueLengths(const LockId& id, size_t* granted, size_t* waiting) const;

  void RegisterOwner(LockOwner* owner);

  const LockManagerOptions options_;
  const size_t bucket_mask_;
  std::unique_ptr<Bucket[]> buckets_;

  threads::Mutex detector_mutex_;  // the waits-for graph: see "Deadlocks" above
  uint64_t dd_epoch_ = 0;               // GUARDED_BY(detector_mutex_)
  std::vector<DetectorEdge> dd_edges_;  // reused; GUARDED_BY(detector_mutex_)
  std::vector<DetectorFrame> dd_stack_;  // reused; GUARDED_BY(detector_mutex_)

  mutable threads::SpinLock owners_latch_;
  LockStats retired_stats_;  // of the owners destroyed so far; GUARDED_BY(owners_latch_)
  using OwnerList = boost::intrusive::list<
      LockOwner,
      boost::intrusive::member_hook<LockOwner, boost::intrusive::list_member_hook<>,
                                    &LockOwner::registry_hook_>,
      boost::intrusive::constant_time_size<false>>;
  OwnerList owners_;  // GUARDED_BY(owners_latch_)
};

}  // namespace sm::lock
