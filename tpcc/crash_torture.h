// tpcc crash-test: a TPC-C database crashed with SIGKILL and recovered, cycle after cycle, in
// real processes on the POSIX file system, with the New-Orders the engine acknowledged and the
// consistency conditions as the oracle.
//
// Owns: the parent's loop (its choices, the children, the kills, the ledger of acknowledged
// New-Orders, the counts and the report) and the child's side (open with recovery, verify,
// run until killed).
//
// Processes. The parent never opens the database, so it never starts a fiber runtime and may
// fork at any time. Every database access is in a child: the same binary, exec'ed with the
// hidden verb `crash-test-child`, in one of two roles:
//   load   open (creating), load a TPC-C database unless one is loaded, close. Never killed.
//   cycle  open (restart recovery runs), verify (below); then with --run: count a run, run the
//          mix with durable commits and report every acknowledged New-Order until killed;
//          without --run (the verification after the last cycle): close and exit 0.
// So the verification after the kill of cycle k is done by the child of cycle k + 1, after its
// recovery and before it runs anything; a kill that lands before that child reported (in its
// recovery, say) leaves the verification to the next child.
//
// Child -> parent: text lines on fd 3, a pipe. Each line goes out in one write(2); the lines of
// terminals on two workers never interleave because each is shorter than PIPE_BUF.
//   opening                                 Database::Open starts
//   opened <recovered> <ms> <redo_records> <losers> <torn_pages_repaired>
//   verify <JSON object>                    what the checks found (CheckAfterRecovery)
//   running                                 the mix runs
//   ack <w> <d> <o_id> <c_id> <ol_cnt>      a New-Order whose Commit returned OK (durable)
//   loaded <rows> <seconds> | reused        (load)
//   error <text>                            then exit status 1
// Parent -> child: the ledger on stdin, read whole before the database is opened: a header
// {u64 count, u64 verified} and `count` AckRecords (host byte order). Records [0, verified)
// were checked in full by an earlier verification.
//
// The oracle, after every recovery: (1) every acknowledged New-Order of this invocation has its
// ORDER row, with the acknowledged customer and line count (one scan of ORDER); those
// acknowledged since the last completed verification also have O_OL_CNT ORDER-LINE rows and a
// NEW-ORDER row exactly when undelivered. A lost order is reported once and leaves the ledger.
// (2) Consistency conditions 1-4 of clause 3.3.2 (1-10 and 12 with --full-check). (3) The
// B-tree verifier (Database::Verify).
//
// Epochs: the database grows by every cycle's orders and check (1) reads them all, so a long
// run would slow down without bound. Every --reload-every cycles (default 500) the parent runs
// a verification child as after the last cycle, then drops the database (only one this run
// loaded) and loads a new one with an empty ledger.
//
// A cycle, in the parent (the function that makes each transition):
//   started (StartChild) -> opening, opened, checked, running (OnLine, on the child's lines)
//   -> killed (Kill, when the deadline passes) -> reaped (Supervise) -> counted (Ended).
// The deadline is set at `running` (a kill after --kill-ms), or, in the cycles chosen for a kill
// in recovery, at `opening` (a fraction of the last open's duration; if the child opens first,
// the cycle goes on as a normal one).
//
// Invariants:
//   1. The parent never opens the database, so it has no runtime (no threads) when it forks.
//   2. An order enters the ledger only from an `ack` line, i.e. after its Commit returned OK.
//   3. Ledger entries [0, verified_) were checked in full. A `verify` report's indices refer to
//      the ledger as sent to that child (sent_ entries), which until the report is processed
//      only grows at its end.
//   4. A lost order is counted once: it leaves the ledger when reported.
//
// Failure model: SIGKILL stops the process at an arbitrary instruction. What it had written
// survives in the OS cache, what it had not written is lost; no write is torn. Power loss
// (unsynced writes dropped or torn) is simulated in process by tests/tpcc/crash_test.cc.
//
// Replay: --seed S repeats the parent's choices (per cycle: workers, buffer pool, checkpoint
// interval, kill delay, kill in recovery or not) and the terminals' inputs. Where a kill lands
// in the child's work depends on timing as well, so a replay is close, not exact.
//
// Thread/fiber safety: the parent is single-threaded. In a child the acknowledgement hook runs
// on the terminals' fibers on every worker; one write(2) per line is all they share.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace sm::tpcc {

struct CrashTestOptions {
  uint32_t cycles = 50;
  uint64_t seed = 0;  // 0: a random seed
  std::string db;     // empty: a fresh directory under ./data/crash-test, removed if all passed
  std::string scale = "small";
  bool full_check = false;
  unsigned workers = 0;  // 0: 1 or 2, chosen per cycle
  std::string kill_ms = "50-600";
  uint32_t progress_every = 1;  // a progress line every this many cycles
  uint32_t reload_every = 500;  // cycles per database (0: one database for the whole run)
  bool keep = false;            // keep the default directory even if all passed
  // Pretends that the engine acknowledged one New-Order it never committed, so that the oracle
  // must report a lost commit (the test of the oracle itself).
  bool test_drop_ack = false;
};

struct CrashChildOptions {
  std::string role = "cycle";  // load | cycle
  std::string db;
  std::string scale = "small";
  uint64_t seed = 1;
  unsigned workers = 1;
  uint32_t buffer_pool_mib = 64;
  uint32_t checkpoint_ms = 0;  // 0: no background checkpoints
  bool run = false;
  bool full_check = false;
  uint64_t parent_pid = 0;  // exit at once if the parent is not this one (0: no check)
};

// Adds the options of `tpcc crash-test` and of the hidden `tpcc crash-test-child`.
void AddCrashTestOptions(CLI::App* cmd, CrashTestOptions* options);
void AddCrashChildOptions(CLI::App* cmd, CrashChildOptions* options);

// The verbs; they return the exit status: 0 no lost commit and no failure, 1 otherwise,
// 2 bad options.
int CrashTest(const CrashTestOptions& options);
int CrashTestChild(const CrashChildOptions& options);

}  // namespace sm::tpcc
