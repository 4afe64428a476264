// STEPS: team lists, the wrapper, the CTX handler, stray handling, statistics.
#include "steps/steps.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "sm/common/assert.h"
#include "threads/ctx_point.h"
#include "threads/worker.h"

namespace sm::steps {

using threads::Fiber;
using threads::WaitReason;
using threads::Worker;

namespace {

// A begin team waits for at most this many picks of teams in flight (see PickTeam).
constexpr uint32_t kMaxAdmissionPassOvers = 1024;

// Counters written only by their worker; a relaxed load + store compiles to a plain
// increment (no locked instruction on the CTX path) and keeps cross-thread reads defined.
struct Counter {
  std::atomic<uint64_t> value{0};
  void Add(uint64_t n = 1) {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get() const { return value.load(std::memory_order_relaxed); }
  void Reset() { value.store(0, std::memory_order_relaxed); }
};

struct ListStats {
  Counter teams, entered, completed, ctx_switches, ctx_skipped_latch, size_sum, activations;
  Counter forced_turns;  // activations taken from the preferred team by a pass-over bound
  Counter stray[threads::kWaitReasonCount];
};

struct Team;
struct TeamList;

// Per-fiber state, kept in Fiber::team_slot.
struct Member {
  explicit Member(Fiber* f) : fiber(f) {}
  Fiber* fiber;
  Team* team = nullptr;  // null: stray
  // The team ring; a stray links to itself, so that `next == this` tells the CTX handler and
  // the wrapper in one test that there is no teammate (stray, or alone in its team).
  Member* prev = this;
  Member* next = this;
};

// One execution team: a ring of members, all wanting the same operation. Teams are recycled
// (WorkerTeams::free_teams), so forming one allocates nothing.
struct Team {
  TeamList* list = nullptr;  // the team list (operation, index) it belongs to
  ListStats* stats = nullptr;
  Member* head = nullptr;  // the member that runs first when the team becomes active
  uint32_t size = 0;
  uint32_t passed_over = 0;     // picks that passed it over as the oldest (not admission)
  uint64_t waiting_since = 0;   // WorkerTeams::picks when it last started waiting
  bool measured = false;  // its size was counted at its first activation
  // Links in its list's teams (formation order) and in the worker's waiting queue.
  Team* list_prev = nullptr;
  Team* list_next = nullptr;
  Team* wait_prev = nullptr;
  Team* wait_next = nullptr;
  bool waiting = false;

  void Append(Member* m) {
    m->team = this;
    if (head == nullptr) {
      head = m->prev = m->next = m;
    } else {
      m->prev = head->prev;
      m->next = head;
      head->prev->next = m;
      head->prev = m;
    }
    ++size;
  }
  void Remove(Member* m) {
    SM_DASSERT(m->team == this);
    if (m->next == m) {
      head = nullptr;
    } else {
      m->prev->next = m->next;
      m->next->prev = m->prev;
      if (head == m) head = m->next;
    }
    m->prev = m->next = m;
    m->team = nullptr;
    --size;
  }
};

// The teams of one list (one operation, and index where it matters) on one worker, oldest
// first: a full team's overflow runs after it.
struct TeamList {
  ListStats* stats = nullptr;
  bool admission = false;  // the begin list: new transactions gather here (see PickTeam)
  Team* first = nullptr;
  Team* last = nullptr;
};

// Teams of one worker. Every structure on the BeginOp path is intrusive or directly indexed:
// the wrapper runs at every storage operation, so its cost is paid by every transaction.
struct WorkerTeams {
  Worker* worker = nullptr;
  Team* active = nullptr;
  Team* wait_first = nullptr;  // non-empty teams, not active, oldest first
  Team* wait_last = nullptr;
  uint64_t picks = 0;  // PickTeam calls that activated a team
  // Adaptive mode (steps.h): the probe/run cycle of this worker.
  struct Adapt {
    bool serial = false;  // teams dissolved: operations run without them
    bool started = false;
    uint32_t begins = 0;       // transactions begun in the current epoch
    bool probing = true;       // a probe is in progress (else a run)
    uint32_t probe_epoch = 0;  // epochs of the probe done: even ones with teams, odd without
    uint32_t run_left = 0;     // epochs of the run still to go
    std::optional<AdaptivePolicy> policy;  // made at the first epoch's end
    std::chrono::steady_clock::time_point epoch_start;
    double txns[2] = {0, 0};  // probe totals by mode: [0] without teams, [1] with
    double secs[2] = {0, 0};
  } adapt;
  Counter probes, chose_teams, chose_serial, epochs_teams, epochs_serial;
  std::atomic<double> last_ratio{0};
  // The lists by operation and index: directly for small indexes, else by key.
  static constexpr uint32_t kDirectIndexes = 256;
  std::unique_ptr<TeamList> direct[kOpCount][kDirectIndexes];
  std::unordered_map<uint64_t, std::unique_ptr<TeamList>> other_lists;
  std::vector<std::unique_ptr<Team>> teams;  // every team ever made (owner)
  // Retired teams, linked through list_next: an intrusive stack, so that retiring a team
  // (once per team, on the wrapper's general path) is two stores and no vector growth.
  Team* free_teams = nullptr;
  std::map<uint64_t, std::unique_ptr<ListStats>> stats;  // per list; never shrinks
};

struct Global {
  std::mutex mu;
  StepsOptions options;                               // writes GUARDED_BY(mu)
  std::vector<std::unique_ptr<WorkerTeams>> workers;  // GUARDED_BY(mu)
  std::map<uint32_t, std::string> index_names;        // GUARDED_BY(mu)
};

// Read at every join and pick; constant-initialized globals, so reading them needs no guard
// check.
constinit std::atomic<uint32_t> g_max_team_size{32};
constinit std::atomic<uint32_t> g_max_pass_overs{4096};
// Adaptive mode's options; written by Install before workers run operations.
constinit std::atomic<bool> g_adaptive{false};
StepsOptions g_adaptive_options;

Global& G() {
  static Global* g = new Global();  // outlives every worker
  return *g;
}

// A worker's first team operation makes its state; out of line, so that the common path of
// TeamsOf (on every operation) is two loads.
[[gnu::noinline, gnu::cold]] void MakeTeamsOf(Worker* worker) {
  auto wt = std::make_unique<WorkerTeams>();
  wt->worker = worker;
  worker->team_state = wt.get();
  std::lock_guard<std::mutex> guard(G().mu);
  G().workers.push_back(std::move(wt));
}

inline WorkerTeams& TeamsOf(Worker* worker) {
  if (worker->team_state == nullptr) [[unlikely]] MakeTeamsOf(worker);
  return *static_cast<WorkerTeams*>(worker->team_state);
}

ListStats* StatsFor(WorkerTeams& wt, uint64_t key) {
  auto it = wt.stats.find(key);
  if (it != wt.stats.end()) return it->second.get();
  auto stats = std::make_unique<ListStats>();
  ListStats* raw = stats.get();
  std::lock_guard<std::mutex> guard(G().mu);  // Stats() iterates this map
  wt.stats.emplace(key, std::move(stats));
  return raw;
}

// A list's first use makes it; out of line, like MakeTeamsOf.
[[gnu::noinline, gnu::cold]] void MakeList(WorkerTeams& wt, TeamKey key,
                                           std::unique_ptr<TeamList>* slot) {
  *slot = std::make_unique<TeamList>();
  (*slot)->stats = StatsFor(wt, key.packed());
  (*slot)->admission = key.op == Op::kBegin;
}

// The list of an index beyond the directly indexed ones; out of line, like MakeList.
[[gnu::noinline, gnu::cold]] TeamList* OtherListFor(WorkerTeams& wt, TeamKey key) {
  std::unique_ptr<TeamList>* slot = &wt.other_lists[key.packed()];
  if (*slot == nullptr) MakeList(wt, key, slot);
  return slot->get();
}

inline TeamList* ListFor(WorkerTeams& wt, TeamKey key) {
  if (key.index >= WorkerTeams::kDirectIndexes) [[unlikely]] return OtherListFor(wt, key);
  std::unique_ptr<TeamList>* slot = &wt.direct[static_cast<int>(key.op)][key.index];
  if (*slot == nullptr) [[unlikely]] MakeList(wt, key, slot);
  return slot->get();
}

void PushWaiting(WorkerTeams& wt, Team* team, bool front) {
  SM_DASSERT(!team->waiting);
  team->waiting = true;
  team->waiting_since = wt.picks;
  if (wt.wait_first == nullptr) {
    team->wait_prev = team->wait_next = nullptr;
    wt.wait_first = wt.wait_last = team;
  } else if (front) {
    team->wait_prev = nullptr;
    team->wait_next = wt.wait_first;
    wt.wait_first->wait_prev = team;
    wt.wait_first = team;
  } else {
    team->wait_next = nullptr;
    team->wait_prev = wt.wait_last;
    wt.wait_last->wait_next = team;
    wt.wait_last = team;
  }
}

void RemoveWaiting(WorkerTeams& wt, Team* team) {
  if (!team->waiting) return;
  team->waiting = false;
  (team->wait_prev ? team->wait_prev->wait_next : wt.wait_first) = team->wait_next;
  (team->wait_next ? team->wait_next->wait_prev : wt.wait_last) = team->wait_prev;
  team->wait_prev = team->wait_next = nullptr;
}

// A worker's teams are allocated until its free list covers the most that live at once; out
// of line, like MakeList.
[[gnu::noinline, gnu::cold]] Team* AllocateTeam(WorkerTeams& wt) {
  wt.teams.push_back(std::make_unique<Team>());
  return wt.teams.back().get();
}

// Puts `team` last in `list` (teams of one list run in the order they formed).
void LinkLast(Team* team, TeamList* list) {
  team->list = list;
  team->stats = list->stats;
  team->list_prev = list->last;
  team->list_next = nullptr;
  (list->last ? list->last->list_next : list->first) = team;
  list->last = team;
}

// Takes `team` out of its list.
void UnlinkFromList(Team* team) {
  TeamList* list = team->list;
  (team->list_prev ? team->list_prev->list_next : list->first) = team->list_next;
  (team->list_next ? team->list_next->list_prev : list->last) = team->list_prev;
}

// Takes `team` out of its list, and out of the active slot or the waiting queue.
void Unlink(WorkerTeams& wt, Team* team) {
  if (wt.active == team) wt.active = nullptr;
  RemoveWaiting(wt, team);
  UnlinkFromList(team);
}

// A team formed in `list` (new, or relabelled): last in the list, counted, waiting.
void FormIn(WorkerTeams& wt, Team* team, TeamList* list) {
  LinkLast(team, list);
  team->stats->teams.Add();
  PushWaiting(wt, team, /*front=*/false);
}

// A new team, last in `list`, waiting.
Team* NewTeam(WorkerTeams& wt, TeamList* list) {
  Team* team;
  if (wt.free_teams == nullptr) [[unlikely]] {
    team = AllocateTeam(wt);
  } else {
    team = wt.free_teams;
    wt.free_teams = team->list_next;
    *team = Team();
  }
  FormIn(wt, team, list);
  return team;
}

// A team lost its last member: forget it.
void DestroyTeam(WorkerTeams& wt, Team* team) {
  SM_DASSERT(team->size == 0);
  Unlink(wt, team);
  team->list_next = wt.free_teams;
  wt.free_teams = team;
}

// A member alone in `team` wants an operation of `list` whose last team is full or absent:
// the team becomes a new team of `list`, with the member still in it. This is what retiring
// the team and forming a new one would do (the free list would hand back this very team),
// without taking the member out of its ring and putting it back: in TPC-C's mix most teams
// are formed by a member that ran its last operation alone.
void RelabelLoneTeam(WorkerTeams& wt, Team* team, TeamList* list) {
  SM_DASSERT(team->size == 1);
  Unlink(wt, team);
  team->passed_over = 0;
  team->waiting_since = 0;
  team->measured = false;
  FormIn(wt, team, list);
}

void Activate(WorkerTeams& wt, Team* team) {
  RemoveWaiting(wt, team);
  wt.active = team;
  team->passed_over = 0;
  if (!team->measured) {  // a team resumed after strays ran is not a new team
    team->measured = true;
    team->stats->activations.Add();
    team->stats->size_sum.Add(team->size);
  }
}

// How often a waiting team has been passed over: for an admission team every pick while it
// waits counts (kept as a stamp, so a pick need not walk the waiting teams to count).
uint64_t PassedOver(const WorkerTeams& wt, const Team* t) {
  return t->list->admission ? wt.picks - t->waiting_since : t->passed_over;
}

// How often `oldest` may be passed over before it must run: the admission bound for a begin
// team, the configured one for any other.
uint64_t PassOverLimit(const Team* oldest) {
  return oldest->list->admission ? kMaxAdmissionPassOvers
                                 : g_max_pass_overs.load(std::memory_order_relaxed);
}

// The oldest waiting team that is not an admission team, or an admission team that has
// waited kMaxAdmissionPassOvers picks; null if there is none.
Team* OldestInFlight(WorkerTeams& wt) {
  for (Team* t = wt.wait_first; t != nullptr; t = t->wait_next) {
    if (!t->list->admission || PassedOver(wt, t) >= kMaxAdmissionPassOvers) return t;
  }
  return nullptr;
}

// Picks the next team to run: `preferred` (the team the last member joined) unless the
// oldest waiting team has been passed over max_pass_overs times. Returns null if no team
// waits.
//
// Admission teams (begin) run only when no other team waits: a fiber that finished its
// transaction waits for the others to reach begin too. Without this, a hot lock makes teams
// impossible: its waiters are woken one at a time, each runs to its commit and straight into
// its next transaction alone, and so every transaction runs alone. With it, the woken fibers
// finish their transactions one after another (the same code, back to back) and gather at
// begin, and the next transactions start as one team. A begin team that has been passed over
// kMaxAdmissionPassOvers times runs like any other, so a long transaction in flight (a big
// scan) delays new ones only so long.
Team* PickTeam(WorkerTeams& wt, Team* preferred) {
  if (wt.wait_first == nullptr) return nullptr;
  // Teams of one list run in the order they formed: a full team's overflow runs after it.
  if (preferred != nullptr) preferred = preferred->list->first;
  Team* oldest = OldestInFlight(wt);
  if (oldest == nullptr) {
    oldest = wt.wait_first;  // only new transactions wait
  } else if (preferred != nullptr && preferred->list->admission) {
    preferred = nullptr;
  }
  Team* pick = oldest;
  bool preferred_waits = preferred != nullptr && preferred != wt.active && preferred->waiting;
  // A begin team that is the oldest here has waited its kMaxAdmissionPassOvers already.
  const uint64_t limit = PassOverLimit(oldest);
  if (preferred_waits) {
    if (PassedOver(wt, oldest) < limit) {
      pick = preferred;
    } else if (preferred != oldest) {
      oldest->stats->forced_turns.Add();
    }
  }
  if (pick != oldest && !oldest->list->admission) ++oldest->passed_over;
  Activate(wt, pick);
  ++wt.picks;
  return pick;
}

// The member alone in the active `team` wants an operation of `list`, which has no team: the
// team goes on as the first team of `list`. This is what RelabelLoneTeam and the pick after it
// (RunNext, RunActiveTeam, PickTeam) come to, without the queue traffic: the pick prefers the
// team the last member joined, here the member's own. Only if the oldest waiting team has
// been passed over as often as the bound allows would the pick go elsewhere; then this
// returns false, having changed nothing, and the general path forces that turn. In TPC-C's
// mix, long transactions (Delivery, Stock-Level) run their loops alone this way, a dozen
// operations per transaction of the mix.
bool GoOnAlone(WorkerTeams& wt, Team* team, TeamList* list) {
  SM_DASSERT(team->size == 1 && wt.active == team && list->last == nullptr);
  SM_DASSERT(!list->admission && !team->waiting);
  // The pick's bookkeeping (PickTeam): with the team itself waiting, the oldest team in
  // flight would be the one found here, or the team itself if none is found.
  if (Team* oldest = OldestInFlight(wt)) {
    if (PassedOver(wt, oldest) >= PassOverLimit(oldest)) return false;
    if (!oldest->list->admission) ++oldest->passed_over;
  }
  UnlinkFromList(team);
  LinkLast(team, list);
  team->stats->teams.Add();    // a team formed (FormIn)
  team->stats->entered.Add();  // the member entered it (RunNext)
  team->passed_over = 0;
  team->waiting_since = wt.picks;
  team->stats->activations.Add();  // and it ran at once (Activate)
  team->stats->size_sum.Add(1);
  team->measured = true;
  ++wt.picks;
  return true;
}

// The last team of `list` if it has room for one more member, else null.
inline Team* LastWithRoom(TeamList* list) {
  Team* team = list->last;
  if (team == nullptr || team->size >= g_max_team_size.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  return team;
}

// Takes `m` out of its team; returns the member that should run next in its place (the
// next member of the same team, or the head of the next team), or null.
[[gnu::always_inline]] inline Fiber* Disconnect(WorkerTeams& wt, Member* m) {
  Team* team = m->team;
  if (team == nullptr) return nullptr;
  Member* successor = m->next != m ? m->next : nullptr;
  bool was_active = wt.active == team;
  team->Remove(m);
  if (team->size == 0) {
    DestroyTeam(wt, team);
    return nullptr;
  }
  return was_active ? successor->fiber : nullptr;
}

// The team a member joins for `key` without making a list or a team: its list's last team,
// if that has room even with `m` still in it (when `m` leaves that very team, a full one
// would have room after all: the general path handles it). Null otherwise.
inline Team* LastTeamWithRoom(WorkerTeams& wt, TeamKey key) {
  if (key.index >= WorkerTeams::kDirectIndexes) return nullptr;
  TeamList* list = wt.direct[static_cast<int>(key.op)][key.index].get();
  return list == nullptr ? nullptr : LastWithRoom(list);
}

// Other work is waiting (strays, new fibers): the regular scheduler runs it first, and the
// idle hook resumes the teams when the run queue drains. The interrupted team waits at the
// front. Rare (most transactions of the TPC-C mix never come here): cold, so that it does not
// sit among the wrapper's pieces.
[[gnu::noinline, gnu::cold]] void RunReadyFibersFirst(WorkerTeams& wt, Worker* worker) {
  if (wt.active != nullptr) {
    PushWaiting(wt, wt.active, /*front=*/true);
    wt.active = nullptr;
  }
  worker->ParkAndSwitch(nullptr);
}

// The caller joined `joined` and its old team does not go on: the active team runs, or, if
// none is active (the old team is done, or the caller was stray), the next team is picked.
[[gnu::noinline]] void RunActiveTeam(WorkerTeams& wt, Worker* worker, Fiber* self, Team* joined) {
  if (wt.active == nullptr) {
    Team* next_team = PickTeam(wt, joined);
    if (next_team != nullptr && next_team->head->fiber != self) {
      worker->DirectSwitch(next_team->head->fiber);
    }
    return;  // we head the team that runs now, or were switched back to
  }
  if (wt.active != joined) worker->DirectSwitch(wt.active->head->fiber);  // wait our turn
}

// The wrapper's tail once `m` is in `joined`: the next fiber runs (see JoinAndRunNext).
[[gnu::always_inline]] inline void RunNext(WorkerTeams& wt, Member* m, Fiber* successor,
                                           Team* joined) {
  joined->stats->entered.Add();
  Worker* worker = wt.worker;
  if (worker->HasReadyFibers()) [[unlikely]] return RunReadyFibersFirst(wt, worker);
  if (successor != nullptr) return worker->DirectSwitch(successor);
  RunActiveTeam(wt, worker, m->fiber, joined);
}

// The wrapper's tail, whichever path it took: the caller's member `m`, out of its old team,
// joins `joined`, and the next fiber runs. `successor` is the next member of the old team if
// that team goes on with its operation, else null. Out of line, so that both paths share one
// copy of the join and the switch: in the mix, many operations run in a team of one and so
// take the general path.
[[gnu::noinline]] void JoinAndRunNext(WorkerTeams& wt, Member* m, Fiber* successor,
                                      Team* joined) {
  joined->Append(m);
  RunNext(wt, m, successor, joined);
}

// Runs at every enabled CTX site of a fiber in a team.
void OnCtx(threads::CtxSite& site) {
  SM_DASSERT(site.enabled.load(std::memory_order_relaxed));  // the hook checked
  Worker* worker = Worker::Current();
  if (worker == nullptr) return;
  Fiber* self = worker->current_context();
  auto* m = static_cast<Member*>(self->team_slot);
  if (m == nullptr || m->next == m) return;  // no team, stray, or no teammate
  if (self->exclusive_held() != 0) {
    m->team->stats->ctx_skipped_latch.Add();
    return;
  }
  m->team->stats->ctx_switches.Add();
  worker->DirectSwitch(m->next->fiber);
}

// Paper section 4.1.3: a member blocks or yields.
void OnLeave(Fiber* fiber, WaitReason reason) {
  auto* m = static_cast<Member*>(fiber->team_slot);
  if (m == nullptr || m->team == nullptr) return;  // already stray
  WorkerTeams& wt = TeamsOf(fiber->worker());
  m->team->stats->stray[static_cast<int>(reason)].Add();  // 1, 2: disconnect, mark stray
  Fiber* next = Disconnect(wt, m);
  if (next == nullptr && wt.active == nullptr) {
    if (Team* team = PickTeam(wt, nullptr)) next = team->head->fiber;
  }
  // 3: the worker's state (current fiber, queues) was never left stale by DirectSwitch.
  // 4: the next member runs next; 5: the caller switches through the regular path.
  if (next != nullptr) fiber->worker()->SetNextHint(next);
}

Fiber* OnIdle(Worker* worker) {
  if (worker->team_state == nullptr) return nullptr;
  WorkerTeams& wt = TeamsOf(worker);
  if (wt.active != nullptr) return nullptr;  // its running member will pass the CPU on
  Team* team = PickTeam(wt, nullptr);
  return team == nullptr ? nullptr : team->head->fiber;
}


// ---- Adaptive mode ----------------------------------------------------------------------

// Ends every team of the worker: each member becomes a stray and the parked ones are made
// ready, in team order (`self`, the caller, is running and stays so).
void DissolveTeams(WorkerTeams& wt, Fiber* self) {
  auto dissolve = [&](Team* team) {
    while (team->head != nullptr) {
      Member* m = team->head;
      team->Remove(m);
      if (m->fiber != self) wt.worker->MakeReady(m->fiber);
    }
    DestroyTeam(wt, team);
  };
  if (wt.active != nullptr) dissolve(wt.active);
  while (wt.wait_first != nullptr) dissolve(wt.wait_first);
}

// Copies the worker's mode into the calling thread's flags (it must be the worker's thread).
void SyncThreadMode(const WorkerTeams& wt) {
  detail::tls_without_teams = wt.adapt.serial;
  threads::SetCtxMutedOnThisThread(wt.adapt.serial);
}

// At begin, without adaptive mode (whose tick takes the general path): copies the worker's
// mode to the thread (an Install since the last begin may have reset it) and says whether
// teams run.
inline bool TeamsRunAtBegin(const WorkerTeams& wt) {
  if (g_adaptive.load(std::memory_order_relaxed)) return false;
  SyncThreadMode(wt);
  return !wt.adapt.serial;
}

void SetTeamsEnabled(WorkerTeams& wt, Fiber* self, bool enabled) {
  if (wt.adapt.serial != enabled) return;  // already so
  wt.adapt.serial = !enabled;
  if (!enabled) DissolveTeams(wt, self);
  SyncThreadMode(wt);
}

// An epoch ended: adds it to the probe, decides once the probe is done, and sets the mode of
// the next epoch.
void EndEpoch(WorkerTeams& wt, Fiber* self, double seconds) {
  WorkerTeams::Adapt& a = wt.adapt;
  const int mode = a.serial ? 0 : 1;
  (mode ? wt.epochs_teams : wt.epochs_serial).Add();
  if (!a.policy.has_value()) a.policy.emplace(g_adaptive_options);
  bool teams;
  if (a.probing) {
    a.txns[mode] += a.begins;
    a.secs[mode] += seconds;
    ++a.probe_epoch;
    const double serial_rate = a.txns[0] / std::max(a.secs[0], 1e-9);
    const double teams_rate = a.txns[1] / std::max(a.secs[1], 1e-9);
    const double ratio = serial_rate > 0 ? teams_rate / serial_rate : 1.0;
    if (a.probe_epoch % 2 == 0 && a.policy->ProbeDone(a.probe_epoch / 2, ratio)) {
      a.policy->OnProbe(ratio);
      wt.probes.Add();
      (a.policy->teams() ? wt.chose_teams : wt.chose_serial).Add();
      wt.last_ratio.store(ratio, std::memory_order_relaxed);
      a.txns[0] = a.txns[1] = a.secs[0] = a.secs[1] = 0;
      a.probing = false;
      a.run_left = a.policy->run_epochs();
      teams = a.policy->teams();
    } else {
      teams = a.probe_epoch % 2 == 0;
    }
  } else if (--a.run_left > 0) {
    teams = a.policy->teams();
  } else {  // the next probe, starting with teams
    a.probing = true;
    a.probe_epoch = 0;
    teams = true;
  }
  SetTeamsEnabled(wt, self, teams);
  a.begins = 0;
}

// Called as a transaction begins: counts it and reads the clock every 16 begins. Out of
// line: only adaptive mode calls it, and the wrapper's general path stays small.
[[gnu::noinline]] void AdaptTick(WorkerTeams& wt, Fiber* self) {
  WorkerTeams::Adapt& a = wt.adapt;
  if ((++a.begins & 15) != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (!a.started) {  // the first probe starts with teams
    a.started = true;
    a.epoch_start = now;
    a.begins = 0;
    return;
  }
  const std::chrono::duration<double> elapsed = now - a.epoch_start;
  if (elapsed.count() * 1000 < g_adaptive_options.epoch_ms) return;
  a.epoch_start = now;
  EndEpoch(wt, self, elapsed.count());
}

}  // namespace

const char* OpName(Op op) {
  switch (op) {
    case Op::kBegin:
      return "begin";
    case Op::kCommit:
      return "commit";
    case Op::kIndexFetch:
      return "index fetch";
    case Op::kScan:
      return "scan";
    case Op::kInsert:
      return "insert";
    case Op::kUpdate:
      return "update";
    case Op::kDelete:
      return "delete";
  }
  return "?";
}

void Install(const StepsOptions& options) {
  g_max_team_size.store(std::max<uint32_t>(options.max_team_size, 1), std::memory_order_relaxed);
  g_max_pass_overs.store(options.max_pass_overs, std::memory_order_relaxed);
  g_adaptive_options = options;
  g_adaptive_options.epoch_ms = std::max<uint32_t>(options.epoch_ms, 1);
  g_adaptive.store(options.adaptive, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> guard(G().mu);  // no fiber uses teams now: start afresh
    for (auto& wt : G().workers) wt->adapt = WorkerTeams::Adapt();
  }
  Worker::SetTeamHooks(&OnLeave, &OnIdle);
  threads::SetCtxHandler(&OnCtx);
  detail::g_installed.store(true, std::memory_order_release);
}

void Uninstall() {
  detail::g_installed.store(false, std::memory_order_release);
  threads::SetCtxHandler(nullptr);
  Worker::SetTeamHooks(nullptr, nullptr);
}

namespace detail {

std::atomic<bool> g_installed{false};
constinit thread_local bool tls_without_teams = false;

// A fiber's first team operation; out of line, like MakeList.
[[gnu::noinline, gnu::cold]] Member* MakeMember(Fiber* self) {
  auto* m = new Member(self);
  self->team_slot = m;
  return m;
}

// The wrapper's general path: a fiber's first operation, a member without teammates or a
// stray, a new list or team, and begin in adaptive mode or without teams.
[[gnu::noinline]] void BeginOpInTeamsSlow(TeamKey key, Worker* worker) {
  Fiber* self = worker->current_fiber();
  if (self == nullptr) return;  // the scheduler context has no teams
  WorkerTeams& wt = TeamsOf(worker);
  if (key.op == Op::kBegin) {
    if (g_adaptive.load(std::memory_order_relaxed)) AdaptTick(wt, self);
    SyncThreadMode(wt);  // an Install since the last begin may have reset the mode
  }
  if (wt.adapt.serial) [[unlikely]] {
    // Without teams fibers take turns at begin only, as with STEPS off.
    if (key.op == Op::kBegin) worker->YieldForTurn();
    return;
  }
  auto* m = static_cast<Member*>(self->team_slot);
  if (m == nullptr) [[unlikely]] m = MakeMember(self);
  Team* team = m->team;
  if (team != nullptr) team->stats->completed.Add();
  TeamList* list = ListFor(wt, key);
  if (team != nullptr && team->size == 1) {
    if (list->last == nullptr && !list->admission && wt.active == team &&
        !worker->HasReadyFibers() && GoOnAlone(wt, team, list)) {
      return;
    }
    if (LastWithRoom(list) == nullptr) {
      RelabelLoneTeam(wt, team, list);
      return RunNext(wt, m, /*successor=*/nullptr, team);
    }
  }
  Fiber* successor = Disconnect(wt, m);
  Team* joined = LastWithRoom(list);  // after Disconnect: its own full team has room now
  JoinAndRunNext(wt, m, successor, joined != nullptr ? joined : NewTeam(wt, list));
}

// The common case, which does what the general path does for it: a member with teammates
// moves to the last team of an existing list that has room. Its calls are all tail calls,
// so that it needs no frame: the wrapper runs at every operation.
void BeginOpInTeams(TeamKey key) {
  Worker* worker = Worker::Current();
  if (worker == nullptr) return;  // plain threads have no teams
  Fiber* self = worker->current_context();
  auto* m = static_cast<Member*>(self->team_slot);
  if (m == nullptr || m->next == m) [[unlikely]] return BeginOpInTeamsSlow(key, worker);
  // A member was made after its worker's teams.
  auto& wt = *static_cast<WorkerTeams*>(worker->team_state);
  // The wrapper skips other operations while the thread runs without teams, and the
  // thread's copy of the mode is set whenever the worker's changes.
  SM_DASSERT(key.op == Op::kBegin || !wt.adapt.serial);
  if (key.op == Op::kBegin && !TeamsRunAtBegin(wt)) [[unlikely]] {
    return BeginOpInTeamsSlow(key, worker);
  }
  Team* joined = LastTeamWithRoom(wt, key);
  if (joined == nullptr) [[unlikely]] return BeginOpInTeamsSlow(key, worker);
  Team* old = m->team;
  Fiber* successor = wt.active == old ? m->next->fiber : nullptr;
  old->stats->completed.Add();
  old->Remove(m);  // it keeps a member: no team is retired
  JoinAndRunNext(wt, m, successor, joined);
}

}  // namespace detail

void Detach() {
  Fiber* self = Worker::CurrentFiber();
  if (self == nullptr || self->team_slot == nullptr) return;
  auto* m = static_cast<Member*>(self->team_slot);
  Worker* worker = self->worker();
  WorkerTeams& wt = TeamsOf(worker);
  if (m->team != nullptr) m->team->stats->completed.Add();
  Fiber* next = Disconnect(wt, m);
  self->team_slot = nullptr;
  delete m;
  if (next == nullptr && wt.active == nullptr) {
    if (Team* team = PickTeam(wt, nullptr)) next = team->head->fiber;
  }
  if (next != nullptr) worker->YieldTo(next);  // the team goes on; we queue as a stray
}

void SetIndexName(uint32_t index, std::string name) {
  std::lock_guard<std::mutex> guard(G().mu);
  G().index_names[index] = std::move(name);
}

uint64_t TeamStats::strays() const {
  uint64_t total = 0;
  for (uint64_t s : stray) total += s;
  return total;
}

std::string TeamStats::StrayReasons() const {
  std::string out;
  for (int r = 0; r < threads::kWaitReasonCount; ++r) {
    if (stray[r] == 0) continue;
    if (!out.empty()) out += ", ";
    out += threads::WaitReasonName(static_cast<WaitReason>(r)) + std::string(" ") +
           std::to_string(stray[r]);
  }
  return out.empty() ? "-" : out;
}

std::vector<TeamStats> Stats() {
  std::lock_guard<std::mutex> guard(G().mu);
  std::map<std::string, TeamStats> rows;
  for (auto& wt : G().workers) {
    for (auto& [key, ls] : wt->stats) {
      Op op = static_cast<Op>(key >> 32);
      uint32_t index = static_cast<uint32_t>(key);
      std::string name = OpName(op);
      if (KeyFor(op, 1).index != 0) {
        auto it = G().index_names.find(index);
        name += " (" + (it != G().index_names.end() ? it->second : std::to_string(index)) + ")";
      }
      TeamStats& row = rows[name];
      row.name = name;
      row.teams += ls->teams.Get();
      row.entered += ls->entered.Get();
      row.completed += ls->completed.Get();
      row.ctx_switches += ls->ctx_switches.Get();
      row.ctx_skipped_latch += ls->ctx_skipped_latch.Get();
      row.size_sum += ls->size_sum.Get();
      row.activations += ls->activations.Get();
      row.forced_turns += ls->forced_turns.Get();
      for (int r = 0; r < threads::kWaitReasonCount; ++r) row.stray[r] += ls->stray[r].Get();
    }
  }
  std::vector<TeamStats> out;
  for (auto& [name, row] : rows) out.push_back(row);
  return out;
}

void ResetStats() {
  std::lock_guard<std::mutex> guard(G().mu);
  for (auto& wt : G().workers) {
    for (auto& [key, ls] : wt->stats) {
      for (Counter* c : {&ls->teams, &ls->entered, &ls->completed, &ls->ctx_switches,
                         &ls->ctx_skipped_latch, &ls->size_sum, &ls->activations,
                         &ls->forced_turns}) {
        c->Reset();
      }
      for (auto& c : ls->stray) c.Reset();
    }
    for (Counter* c : {&wt->probes, &wt->chose_teams, &wt->chose_serial, &wt->epochs_teams,
                       &wt->epochs_serial}) {
      c->Reset();
    }
  }
}

AdaptiveStats GetAdaptiveStats() {
  std::lock_guard<std::mutex> guard(G().mu);
  AdaptiveStats out;
  for (auto& wt : G().workers) {
    out.probes += wt->probes.Get();
    out.chose_teams += wt->chose_teams.Get();
    out.chose_serial += wt->chose_serial.Get();
    out.epochs_teams += wt->epochs_teams.Get();
    out.epochs_serial += wt->epochs_serial.Get();
    if (wt->probes.Get() > 0) {
      out.last_ratio.push_back(wt->last_ratio.load(std::memory_order_relaxed));
    }
  }
  return out;
}

void SetTeamsEnabledForTest(bool enabled) {
  Fiber* self = Worker::CurrentFiber();
  SM_ASSERT(self != nullptr);
  SetTeamsEnabled(TeamsOf(self->worker()), self, enabled);
}

}  // namespace sm::steps
