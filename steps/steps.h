// STEPS: execution teams and fast CTX switching (Harizopoulos & Ailamaki, VLDB 2004).
//
// Owns: per-worker team lists (one per storage operation, and per index for index fetch,
// insert and delete: paper Table 2), the CTX handler installed into threads/ctx_point.h, the
// team-leave and idle hooks installed into the worker, and the per-operation statistics
// (paper Table 4).
//
// How a fiber moves (all on its own worker; fibers never migrate, so each worker has its
// own teams and STEPS runs on every core at once):
//   - The storage layer calls BeginOp(key) at the start of every operation (the paper's
//     "STEPS wrapper", which it runs at the end of the previous one). The fiber leaves the
//     team of its previous operation and joins the team for `key` (a new team behind the
//     current one when that is full: max_team_size). Then:
//       * if its old team still has members, the CPU passes to the next of them (the old
//         team goes on with its operation);
//       * else the old team is done and the next team to run is picked: the one the last
//         member joined (the paper's policy), unless the oldest waiting team has been
//         passed over max_pass_overs times (so every team makes progress). Begin teams (new
//         transactions) run only when no other team waits (or after 1,024 picks), so fibers
//         that finish transactions one at a time (behind a hot lock) gather there and start
//         the next ones as a team;
//       * if the worker has ready fibers (strays woken by I/O or locks, new fibers), they
//         run first, through the regular scheduler, and get to join their teams; when the
//         run queue is empty the worker's idle hook resumes the next team.
//   - At an enabled CTX site, a team member that holds no exclusive latch or mutex switches
//     straight to the next member (Worker::DirectSwitch); the last switches to the first.
//     Nothing else is updated on that path but two counters. Strays, fibers outside teams,
//     disabled sites and latch holders fall through.
//   - A member that blocks (lock, latch, I/O, log flush) or yields leaves its team through the
//     five steps of paper section 4.1.3: disconnect, mark stray, bring the scheduler state up
//     to date, hint that the next member runs next (Worker::SetNextHint), switch through the
//     regular path (the worker's Block/Yield). It rejoins at its next BeginOp.
//   - Detach() ends a fiber's membership (end of a client's work, or before it exits).
//   - Adaptive mode (StepsOptions::adaptive): STEPS pays only where the instruction misses it
//     saves cost more than its switches and bookkeeping, which depends on the machine and the
//     workload. Each worker counts the transactions it begins in short epochs, alternating
//     epochs with teams and without (a probe, which ends early once teams are clearly
//     slower), then runs the faster mode (AdaptivePolicy: teams only if they win by a margin)
//     for run_epochs epochs, twice as many after each probe that confirms the choice, and
//     probes again. Turning teams off dissolves them: every member becomes a stray and the
//     parked ones are made ready; turning them on lets fibers join at their next operation.
//     Without teams BeginOp only takes turns at begin, as with STEPS off, and the worker's
//     CTX sites are muted (threads/ctx_point.h), so that its operations cost what they cost
//     with STEPS off but for a branch at each site and wrapper, not a call (steps_bench
//     --wall-clock's mix_wall_auto_ratio compares auto with off).
//
// Invariants (per worker):
//   1. Every team member is kParked except the one running; no member is in a run queue, so
//      a DirectSwitch to the next member is always to a parked fiber.
//   2. At most one team is active (the one whose members CTX among themselves); the others
//      wait in `waiting` order.
//   3. A team with no members is retired at once (to the worker's free list, for reuse).
//
// Thread/fiber safety: BeginOp, Detach and the CTX handler run on the calling fiber's
// worker and touch only that worker's state. Install/Uninstall are process-wide and must be
// called while no fiber uses teams. Stats() may be called from any thread (counters are
// read racily but each is a single word written by one worker).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "threads/fiber.h"

namespace sm::steps {

enum class Op : uint8_t { kBegin, kCommit, kIndexFetch, kScan, kInsert, kUpdate, kDelete };
inline constexpr int kOpCount = 7;
const char* OpName(Op op);

// The team list an operation joins. `index` tells indexes apart for the operations whose
// code path depends on the index (fetch, insert, delete); other operations use 0.
struct TeamKey {
  Op op = Op::kBegin;
  uint32_t index = 0;
  uint64_t packed() const { return (uint64_t(op) << 32) | index; }
};
// Drops `index` for begin, commit, scan and update.
inline TeamKey KeyFor(Op op, uint32_t index) {
  bool per_index = op == Op::kIndexFetch || op == Op::kInsert || op == Op::kDelete;
  return TeamKey{op, per_index ? index : 0};
}

struct StepsOptions {
  uint32_t max_team_size = 32;  // a full team makes the next joiner start a new one
  // How many picks may pass over the oldest waiting team for the team the last member joined
  // (the paper's policy). Following that policy keeps a team's members together from one
  // operation to the next through their transactions; each forced turn of an older team
  // interleaves another transaction type's code and splits teams. The bound only keeps a
  // fiber that runs a very long transaction alone from starving the worker's other teams: a low
  // bound splits the teams of TPC-C's mix and raises its L1-I misses, while Payment alone
  // hardly changes (steps_bench's mix_l1i_misses_per_txn_steps and
  // payment_l1i_misses_per_txn_steps; tpcc run --max-pass-overs sets the bound).
  uint32_t max_pass_overs = 4096;
  bool adaptive = false;        // probe teams on and off per worker and run the faster
  uint32_t epoch_ms = 100;      // adaptive: the length of one epoch
  uint32_t probe_pairs = 3;     // adaptive: epochs with and without teams per probe, each
  uint32_t run_epochs = 20;     // adaptive: epochs in the chosen mode after a probe that
                                //   changed the choice (or the first)
  uint32_t max_run_epochs = 320;  // adaptive: the longest run (see AdaptivePolicy)
  double teams_margin = 0.02;   // adaptive: teams must be this much faster to be chosen
  double decisive_margin = 0.10;  // adaptive: a probe whose teams' rate so far is this much
                                  //   below the other's ends after that pair (AdaptivePolicy)
};

// Adaptive mode's choice after each probe, given the probe's ratio of transaction rates
// (with teams / without). Teams are chosen only if they win by `teams_margin`: a probe
// measures two noisy rates, and teams cost bookkeeping that a tie does not repay. A probe that
// confirms the previous choice doubles the run after it (up to max_run_epochs), one that
// changes it starts again from run_epochs, so a worker whose workload has settled spends ever
// less time probing the mode it does not use (the probe's epochs in the losing mode are what
// the adaptive mode costs). For the same reason a probe stops early once teams are clearly
// slower: after any pair whose ratio so far is 1 - decisive_margin or less, else after
// probe_pairs pairs (a workload where teams are clearly slower, such as TPC-C's mix at one
// warehouse by steps_bench --wall-clock's mix_wall_speedup, then pays one epoch with teams
// per probe instead of probe_pairs). Only that verdict comes early. Choosing teams commits the
// worker to them for a run, and a single pair of epochs on a busy machine can show teams well
// ahead by chance where they are slower; the mode exists to keep STEPS from being slower than
// off (steps_bench --wall-clock's mix_wall_auto_ratio against mix_wall_speedup), so teams are
// chosen on every pair of a probe.
class AdaptivePolicy {
 public:
  explicit AdaptivePolicy(const StepsOptions& options)
      : margin_(options.teams_margin),
        decisive_(options.decisive_margin),
        pairs_(std::max<uint32_t>(options.probe_pairs, 1)),
        min_run_(std::max<uint32_t>(options.run_epochs, 1)),
        max_run_(std::max(options.max_run_epochs, min_run_)),
        run_(min_run_) {}
  // Whether a probe that has run `pairs` pairs, at `ratio` so far, is over.
  bool ProbeDone(uint32_t pairs, double ratio) const {
    return pairs >= pairs_ || ratio <= 1.0 - decisive_;
  }
  void OnProbe(double ratio) {
    const bool teams = ratio >= 1.0 + margin_;
    run_ = probed_ && teams == teams_ ? std::min(run_ * 2, max_run_) : min_run_;
    teams_ = teams;
    probed_ = true;
  }
  bool teams() const { return teams_; }  // before the first probe: teams
  uint32_t run_epochs() const { return run_; }

 private:
  double margin_;
  double decisive_;
  uint32_t pairs_;
  uint32_t min_run_, max_run_;
  uint32_t run_;
  bool teams_ = true;
  bool probed_ = false;
};

// Installs the CTX handler and the worker hooks. With STEPS off, nothing is installed and
// BeginOp/Detach return at once: the same fibers run under the same scheduler.
void Install(const StepsOptions& options);
void Uninstall();
namespace detail {
extern std::atomic<bool> g_installed;
// Whether the calling worker thread runs without teams (adaptive mode): a copy of its mode
// that the wrapper reads without reaching the worker's state, set by the worker itself when
// the mode changes and again at every begin.
extern constinit thread_local bool tls_without_teams;
void BeginOpInTeams(TeamKey key);
}  // namespace detail
inline bool Installed() { return detail::g_installed.load(std::memory_order_acquire); }

// The STEPS wrapper: call at the start of each storage operation on a fiber. With STEPS off
// it costs a load and a predictable branch, inline; on a worker that adaptive mode runs
// without teams, a load and a branch more for every operation but begin (which counts the
// transaction and takes turns).
inline void BeginOp(TeamKey key) {
  if (Installed() && (key.op == Op::kBegin || !detail::tls_without_teams)) {
    detail::BeginOpInTeams(key);
  }
}
// Leave the current team (if any) and stop being tracked. Required before a fiber that
// called BeginOp finishes.
void Detach();

// Names an index for reports ("index fetch (customer)").
void SetIndexName(uint32_t index, std::string name);

struct TeamStats {
  std::string name;        // e.g. "index fetch (customer)"
  uint64_t teams = 0;      // teams formed
  uint64_t entered = 0;    // fibers that joined
  uint64_t completed = 0;  // members that finished the operation in the team
  uint64_t stray[threads::kWaitReasonCount] = {};  // members that left, by wait reason
  uint64_t ctx_switches = 0;                       // CTX switches taken
  uint64_t ctx_skipped_latch = 0;                  // CTX points passed holding an exclusive latch
  uint64_t size_sum = 0;                           // sum of team sizes when each team first ran
  uint64_t activations = 0;                        // teams of this list that ran
  // Activations that went to a team of this list although the team the last member joined
  // was waiting, because this one had been passed over as often as the bound allows
  // (StepsOptions::max_pass_overs, or the admission bound for begin): how often the bound,
  // not the paper's pick, chose the next team.
  uint64_t forced_turns = 0;
  double AverageTeamSize() const {
    return activations == 0 ? 0.0 : double(size_sum) / double(activations);
  }
  uint64_t strays() const;
  std::string StrayReasons() const;  // "lock 12, i/o 3" (the reasons that occurred), or "-"
};

// Statistics summed over all workers, one row per team list that was used, sorted by name.
std::vector<TeamStats> Stats();
void ResetStats();

// Adaptive mode, summed over workers: probes finished and what each chose, epochs run with
// and without teams, and the last probe's rate ratio (teams / no teams) on each worker.
struct AdaptiveStats {
  uint64_t probes = 0;
  uint64_t chose_teams = 0;
  uint64_t chose_serial = 0;
  uint64_t epochs_teams = 0;
  uint64_t epochs_serial = 0;
  std::vector<double> last_ratio;  // per worker that finished a probe
};
AdaptiveStats GetAdaptiveStats();
// Tests: forces the calling fiber's worker into a mode now (as a probe's decision would).
void SetTeamsEnabledForTest(bool enabled);

}  // namespace sm::steps
