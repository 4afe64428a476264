// STEPS: team formation and round-robin CTX switching, the team-size cap, strays on lock
// waits and sleeps rejoining at their next operation, CTX skipped under an exclusive latch,
// disabled sites, the bound on passing a waiting team over, teams on two workers at once,
// STEPS off, and the adaptive mode (teams dissolved and formed again, probes that alternate
// the two).
#include "steps/steps.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "threads/baton.h"
#include "threads/ctx_point.h"
#include "threads/runtime.h"
#include "threads/sync.h"

using namespace sm;
using steps::Op;
using threads::Worker;

using sm::test::MakeRuntime;

namespace {
SM_DEFINE_CTX_SITE(kSiteOn, "test.steps.on");
SM_DEFINE_CTX_SITE(kSiteOff, "test.steps.off");

// Installs STEPS for one test and removes it after.
struct StepsScope {
  explicit StepsScope(uint32_t cap) : StepsScope(steps::StepsOptions{cap}) {}
  explicit StepsScope(const steps::StepsOptions& options) {
    kSiteOn.enabled = true;
    kSiteOff.enabled = false;
    steps::Install(options);
    steps::ResetStats();
  }
  ~StepsScope() { steps::Uninstall(); }
};

// The statistics of the team list named `name`, which the test must have used.
steps::TeamStats TeamRow(const std::string& name) {
  const std::vector<steps::TeamStats> rows = steps::Stats();
  const auto row = std::find_if(rows.begin(), rows.end(),
                                [&](const steps::TeamStats& r) { return r.name == name; });
  INFO("team list " << name);
  REQUIRE(row != rows.end());
  return *row;
}

// Runs `fibers` fibers on worker `worker`, spawned by a root fiber so that all are queued
// before the first runs; each runs body(i).
template <typename Body>
void RunFibers(threads::Runtime* rt, int worker, int fibers, Body body, threads::WaitGroup* wg) {
  wg->Add(fibers);
  rt->Spawn(
      [=] {
        for (int i = 0; i < fibers; ++i) {
          Worker::Current()->Spawn([=] {
            body(i);
            wg->Done();
          });
        }
      },
      worker);
}

// Runs `fibers` fibers on each worker of a new runtime with `workers` workers, body(w, i) on
// fiber i of worker w, and returns once all have finished and the runtime has shut down, so
// that a test reads its traces and statistics with no fiber running.
template <typename Body>
void RunOnWorkers(unsigned workers, int fibers, Body body) {
  auto rt = MakeRuntime(workers);
  threads::WaitGroup wg;
  for (int w = 0; w < static_cast<int>(workers); ++w) {
    RunFibers(rt.get(), w, fibers, [body, w](int i) { body(w, i); }, &wg);
  }
  wg.Wait();
  rt->Shutdown();
}

// RunOnWorkers on a single worker, body(i) on fiber i: there the schedule, and so the trace, is
// exact.
template <typename Body>
void RunOnOneWorker(int fibers, Body body) {
  RunOnWorkers(1, fibers, [body](int, int i) { body(i); });
}

// Runs `fibers` fibers on one worker, each through operation `key` with three CTX points and
// then a commit. Returns the trace: a fiber's index before each of its CTX points, and 100 + its
// index at its commit.
std::vector<int> OperationThenCommitTrace(int fibers, steps::TeamKey key) {
  std::vector<int> trace;
  RunOnOneWorker(fibers, [&](int i) {
    steps::BeginOp(key);
    for (int k = 0; k < 3; ++k) {
      trace.push_back(i);
      SM_CTX(kSiteOn);
    }
    steps::BeginOp(steps::KeyFor(Op::kCommit, 0));
    trace.push_back(100 + i);
    steps::Detach();
  });
  return trace;
}
}  // namespace

TEST_CASE("a team runs its operation round robin at CTX points", "[unit][steps]") {
  StepsScope scope(32);
  REQUIRE(OperationThenCommitTrace(4, steps::KeyFor(Op::kIndexFetch, 7)) ==
          std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 100, 101, 102, 103});
  const steps::TeamStats fetch = TeamRow("index fetch (7)");
  CHECK(fetch.teams == 1);
  CHECK(fetch.entered == 4);
  CHECK(fetch.completed == 4);
  CHECK(fetch.strays() == 0);
  CHECK(fetch.ctx_switches == 12);
  CHECK(fetch.AverageTeamSize() == 4.0);
}

TEST_CASE("a full team makes the next fibers form a team that runs after it", "[unit][steps]") {
  StepsScope scope(2);
  REQUIRE(OperationThenCommitTrace(4, steps::KeyFor(Op::kScan, 0)) ==
          std::vector<int>{0, 1, 0, 1, 0, 1, 100, 101, 2, 3, 2, 3, 2, 3, 102, 103});
  const steps::TeamStats scan = TeamRow("scan");
  CHECK(scan.teams == 2);
  CHECK(scan.AverageTeamSize() == 2.0);
}

// Two fibers on one worker under `options`: fiber 0 runs the operations `waiter` and records
// -1; fiber 1 runs `prefix`, then `chain_ops` operations alternating between chain[0] and
// chain[1], recording k after operation k. Returns the record.
std::vector<int> WaiterAndChain(const steps::StepsOptions& options,
                                std::vector<steps::TeamKey> waiter,
                                std::vector<steps::TeamKey> prefix,
                                std::array<steps::TeamKey, 2> chain, int chain_ops) {
  StepsScope scope(options);
  std::vector<int> trace;
  RunOnOneWorker(2, [&](int i) {
    if (i == 0) {
      for (steps::TeamKey key : waiter) steps::BeginOp(key);
      trace.push_back(-1);
    } else {
      for (steps::TeamKey key : prefix) steps::BeginOp(key);
      for (int k = 0; k < chain_ops; ++k) {
        steps::BeginOp(chain[k % 2]);
        trace.push_back(k);
      }
    }
    steps::Detach();
  });
  return trace;
}

// Fiber 0 waits in a scan team while fiber 1, alone, runs one operation after another. Each
// pick prefers the team fiber 1 just joined (the paper's policy) and so passes over the scan
// team, until it has been passed over max_pass_overs times: then it runs.
std::vector<int> PassOverTrace(uint32_t max_pass_overs, int chain_ops) {
  steps::StepsOptions options;
  options.max_pass_overs = max_pass_overs;
  const steps::TeamKey fetch = steps::KeyFor(Op::kIndexFetch, 1);
  return WaiterAndChain(options, {fetch, steps::KeyFor(Op::kScan, 0)}, {fetch},
                        {steps::KeyFor(Op::kInsert, 1), steps::KeyFor(Op::kUpdate, 1)},
                        chain_ops);
}

TEST_CASE("a waiting team is passed over for the last member's team at most so many times",
          "[unit][steps]") {
  constexpr int kChainOps = 100;
  for (uint32_t limit : {1u, 2u, 8u, 99u}) {
    INFO("max_pass_overs " << limit);
    std::vector<int> trace = PassOverTrace(limit, kChainOps);
    REQUIRE(trace.size() == kChainOps + 1);
    const auto scan_at = std::find(trace.begin(), trace.end(), -1) - trace.begin();
    CHECK(scan_at == limit);  // after `limit` operations of fiber 1
    CHECK(TeamRow("scan").forced_turns == 1);  // the bound, not the paper's pick, ran it
    trace.erase(trace.begin() + scan_at);
    for (int k = 0; k < kChainOps; ++k) CHECK(trace[k] == k);
  }
  // The default lets the chain run to its end first (it is far shorter than the bound).
  const std::vector<int> trace = PassOverTrace(steps::StepsOptions().max_pass_overs, kChainOps);
  CHECK(trace.back() == -1);
  CHECK(TeamRow("scan").forced_turns == 0);
  // Fiber 1's team went on alone from one operation to the next: each counts as a team of
  // one that formed, was entered once and ran.
  for (const char* row : {"insert (1)", "update"}) {
    INFO(row);
    const steps::TeamStats stats = TeamRow(row);
    CHECK(stats.teams == kChainOps / 2);
    CHECK(stats.entered == kChainOps / 2);
    CHECK(stats.activations == kChainOps / 2);
    CHECK(stats.AverageTeamSize() == 1.0);
  }
}

// Options whose picks pass over a waiting team at most twice: the admission tests below
// need the oldest team in flight to get its turn early.
steps::StepsOptions EarlyTurns() {
  steps::StepsOptions options;
  options.max_pass_overs = 2;
  return options;
}

// Fiber 0 reaches its next transaction (begin) after one operation; fiber 1 has four to go.
// The scheduler prefers the team the last member joined only twice here (then the oldest team
// runs), which would let fiber 0 start its transaction alone. Begin teams run only when no
// other team waits, so fiber 0 waits for fiber 1 and both start as one team.
TEST_CASE("new transactions gather at begin while others are in flight", "[unit][steps]") {
  StepsScope scope(EarlyTurns());
  std::vector<int> trace;
  RunOnOneWorker(2, [&](int i) {
    const Op path[] = {Op::kIndexFetch, Op::kUpdate, Op::kInsert, Op::kCommit};
    for (int k = i == 0 ? 3 : 0; k < 4; ++k) {
      steps::BeginOp(steps::KeyFor(path[k], 1));
      trace.push_back(10 * i + k);
    }
    steps::BeginOp(steps::KeyFor(Op::kBegin, 0));
    trace.push_back(100 + i);
    SM_CTX(kSiteOn);
    trace.push_back(200 + i);
    steps::Detach();
  });
  REQUIRE(trace == std::vector<int>{10, 11, 3, 12, 13, 100, 101, 200, 201});
  const steps::TeamStats begin = TeamRow("begin");
  CHECK(begin.teams == 1);
  CHECK(begin.AverageTeamSize() == 2.0);
}

// The wait at begin is bounded: a transaction with many operations in flight does not hold
// new ones back until it ends (fiber 0's commit runs early: EarlyTurns).
TEST_CASE("a long transaction in flight holds begin back only so long", "[unit][steps]") {
  constexpr int kLongOps = 4000;  // well beyond the begin team's bound of 1,024 picks
  const std::vector<int> trace = WaiterAndChain(
      EarlyTurns(), {steps::KeyFor(Op::kCommit, 0), steps::KeyFor(Op::kBegin, 0)}, {},
      {steps::KeyFor(Op::kIndexFetch, 1), steps::KeyFor(Op::kUpdate, 1)}, kLongOps);
  const auto begin_at = std::find(trace.begin(), trace.end(), -1) - trace.begin();
  INFO("begin ran after " << begin_at << " of " << kLongOps << " operations");
  CHECK(begin_at > 0);
  CHECK(begin_at < kLongOps / 2);
  CHECK(TeamRow("begin").forced_turns == 1);
}

TEST_CASE("a member that waits for a lock or sleeps goes stray and rejoins later",
          "[unit][steps]") {
  StepsScope scope(32);
  std::vector<std::string> trace;
  threads::Baton lock_granted;
  RunOnOneWorker(3, [&](int i) {
    for (int round = 0; round < 2; ++round) {
      steps::BeginOp(steps::KeyFor(Op::kUpdate, 0));
      trace.push_back("u" + std::to_string(i));
      if (round == 0 && i == 1) {
        threads::WaitReasonScope reason(threads::WaitReason::kLock);
        lock_granted.Wait();  // fiber 1 blocks on a "lock" that fiber 2 grants
      }
      if (round == 0 && i == 2) {
        lock_granted.Post();
        threads::SleepFor(std::chrono::milliseconds(1));  // fiber 2 goes stray asleep
      }
      SM_CTX(kSiteOn);
      trace.push_back("v" + std::to_string(i));
    }
    steps::Detach();
  });
  REQUIRE(trace.size() == 12);  // everyone finished both rounds
  const steps::TeamStats update = TeamRow("update");
  CHECK(update.stray[static_cast<int>(threads::WaitReason::kLock)] == 1);
  CHECK(update.stray[static_cast<int>(threads::WaitReason::kSleep)] == 1);
  CHECK(update.entered == 6);  // the strays rejoined at their next operation
  CHECK(update.completed + update.strays() == 6);
}

TEST_CASE("CTX does not switch while an exclusive latch is held", "[unit][steps]") {
  StepsScope scope(32);
  std::vector<std::string> trace;
  threads::Latch latch;
  RunOnOneWorker(2, [&](int i) {
    steps::BeginOp(steps::KeyFor(Op::kInsert, 3));
    {
      threads::LatchGuard guard(latch, threads::LatchMode::kExclusive);
      trace.push_back("held" + std::to_string(i));
      SM_CTX(kSiteOn);  // skipped: a teammate would block on the latch
      trace.push_back("still" + std::to_string(i));
    }
    SM_CTX(kSiteOn);  // taken
    trace.push_back("after" + std::to_string(i));
    steps::Detach();
  });
  REQUIRE(trace ==
          std::vector<std::string>{"held0", "still0", "held1", "still1", "after0", "after1"});
  const steps::TeamStats insert = TeamRow("insert (3)");
  CHECK(insert.ctx_skipped_latch == 2);
  CHECK(insert.ctx_switches == 2);
}

TEST_CASE("disabled CTX sites and STEPS off leave the schedule alone", "[unit][steps]") {
  for (bool installed : {true, false}) {
    std::unique_ptr<StepsScope> scope;
    if (installed) scope = std::make_unique<StepsScope>(32);
    std::vector<int> trace;
    RunOnOneWorker(3, [&](int i) {
      steps::BeginOp(steps::KeyFor(Op::kIndexFetch, 1));
      for (int k = 0; k < 2; ++k) {
        trace.push_back(i);
        SM_CTX(kSiteOff);
        if (!installed) SM_CTX(kSiteOn);  // no handler installed: nothing happens
      }
      steps::Detach();
    });
    REQUIRE(trace == std::vector<int>{0, 0, 1, 1, 2, 2});
  }
}

TEST_CASE("teams run on two workers at once", "[unit][steps]") {
  StepsScope scope(32);
  constexpr int kFibers = 6, kRounds = 50, kPoints = 4;
  std::vector<int> traces[2];
  std::atomic<int> bad_worker{0};
  RunOnWorkers(2, kFibers, [&](int w, int i) {
    for (int round = 0; round < kRounds; ++round) {
      steps::BeginOp(steps::KeyFor(round % 2 ? Op::kIndexFetch : Op::kUpdate, 5));
      for (int p = 0; p < kPoints; ++p) {
        if (Worker::Current()->index() != w) bad_worker.fetch_add(1);
        traces[w].push_back(i);
        SM_CTX(kSiteOn);
      }
    }
    steps::Detach();
  });
  REQUIRE(bad_worker.load() == 0);
  for (auto& trace : traces) {
    REQUIRE(trace.size() == size_t{kFibers} * kRounds * kPoints);
    // Round robin within a team: consecutive entries come from different fibers.
    size_t repeats = 0;
    for (size_t k = 1; k < trace.size(); ++k) repeats += trace[k] == trace[k - 1];
    CHECK(repeats < trace.size() / 10);
  }
  uint64_t switches = 0;
  for (const auto& row : steps::Stats()) switches += row.ctx_switches;
  CHECK(switches > 2 * kFibers * kRounds);
}

TEST_CASE("turning teams off dissolves them and the members run on without switching",
          "[unit][steps]") {
  StepsScope scope(32);
  std::vector<int> trace;
  RunOnOneWorker(4, [&](int i) {
    steps::BeginOp(steps::KeyFor(Op::kIndexFetch, 7));
    trace.push_back(i);
    SM_CTX(kSiteOn);
    if (i == 0) steps::SetTeamsEnabledForTest(false);
    trace.push_back(10 + i);
    SM_CTX(kSiteOn);
    trace.push_back(20 + i);
    steps::BeginOp(steps::KeyFor(Op::kCommit, 0));
    trace.push_back(100 + i);
    steps::Detach();
  });
  // One round robin in the team; then each fiber runs to its end in team order.
  REQUIRE(trace == std::vector<int>{0, 1, 2, 3, 10, 20, 100, 11, 21, 101, 12, 22, 102, 13, 23,
                                    103});
  CHECK(TeamRow("index fetch (7)").ctx_switches == 4);
}

TEST_CASE("teams form again once turned back on", "[unit][steps]") {
  StepsScope scope(32);
  auto rt = MakeRuntime(1);
  std::vector<int> trace;
  threads::WaitGroup wg;
  auto body = [&](int i) {
    steps::BeginOp(steps::KeyFor(Op::kBegin, 0));
    steps::BeginOp(steps::KeyFor(Op::kScan, 0));
    for (int k = 0; k < 2; ++k) {
      trace.push_back(i);
      SM_CTX(kSiteOn);
    }
    steps::BeginOp(steps::KeyFor(Op::kCommit, 0));
    steps::Detach();
  };
  wg.Add(1);
  rt->Spawn(
      [&] {
        steps::SetTeamsEnabledForTest(false);
        threads::WaitGroup serial;
        RunFibers(rt.get(), 0, 3, body, &serial);
        serial.Wait();  // without teams: each fiber's scan runs whole
        steps::SetTeamsEnabledForTest(true);
        threads::WaitGroup teams;
        RunFibers(rt.get(), 0, 3, [&](int i) { body(10 + i); }, &teams);
        teams.Wait();
        wg.Done();
      },
      0);
  wg.Wait();
  rt->Shutdown();
  REQUIRE(trace == std::vector<int>{0, 0, 1, 1, 2, 2, 10, 11, 12, 10, 11, 12});
}

TEST_CASE("a worker without teams mutes its CTX sites until teams are on or STEPS is installed "
          "again",
          "[unit][steps]") {
  auto rt = MakeRuntime(2);
  // Runs `body` on a fiber of `worker` and waits for it.
  auto on_worker = [&](int worker, auto body) {
    threads::WaitGroup wg;
    wg.Add(1);
    rt->Spawn(
        [&] {
          body();
          wg.Done();
        },
        worker);
    wg.Wait();
  };
  bool muted0 = false, muted1 = true, after_on = true, after_install = true;
  {
    StepsScope scope(32);
    on_worker(0, [&] {
      steps::SetTeamsEnabledForTest(false);
      muted0 = threads::CtxMutedOnThisThread();
    });
    on_worker(1, [&] { muted1 = threads::CtxMutedOnThisThread(); });  // its own mode: teams
    on_worker(0, [&] {
      steps::SetTeamsEnabledForTest(true);
      after_on = threads::CtxMutedOnThisThread();
      steps::SetTeamsEnabledForTest(false);  // and off again, for the reinstall below
    });
  }
  {
    StepsScope scope(32);  // Install starts every worker with teams
    on_worker(0, [&] {
      steps::BeginOp(steps::KeyFor(Op::kBegin, 0));
      after_install = threads::CtxMutedOnThisThread();
      steps::Detach();
    });
  }
  rt->Shutdown();
  CHECK(muted0);
  CHECK_FALSE(muted1);
  CHECK_FALSE(after_on);
  CHECK_FALSE(after_install);
}

namespace {
// Runs 4 fibers on one worker in adaptive mode, each a loop of tiny transactions, until
// `probes` probes have finished (or a generous deadline: epochs are wall-clock time).
steps::AdaptiveStats RunAdaptive(const steps::StepsOptions& options, uint64_t probes) {
  StepsScope scope(options);
  constexpr int kFibers = 4;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::atomic<bool> stop{false};
  std::atomic<int> begun{0}, done{0};
  RunOnOneWorker(kFibers, [&](int) {
    for (int t = 0; !stop.load(std::memory_order_relaxed); ++t) {
      steps::BeginOp(steps::KeyFor(Op::kBegin, 0));
      begun.fetch_add(1, std::memory_order_relaxed);
      steps::BeginOp(steps::KeyFor(Op::kIndexFetch, 3));
      for (int p = 0; p < 4; ++p) SM_CTX(kSiteOn);
      steps::BeginOp(steps::KeyFor(Op::kCommit, 0));
      done.fetch_add(1, std::memory_order_relaxed);
      if (t % 64 == 0 && (steps::GetAdaptiveStats().probes >= probes ||
                          std::chrono::steady_clock::now() > deadline)) {
        stop.store(true, std::memory_order_relaxed);
      }
    }
    steps::Detach();
  });
  CHECK(done.load() == begun.load());  // every transaction finished across the switches
  return steps::GetAdaptiveStats();
}

// Adaptive mode with epochs of 1 ms and short runs, so that a test sees several probes.
steps::StepsOptions FastAdaptive(uint32_t probe_pairs) {
  steps::StepsOptions options;
  options.adaptive = true;
  options.epoch_ms = 1;
  options.probe_pairs = probe_pairs;
  options.run_epochs = 2;
  return options;
}
}  // namespace

TEST_CASE("the adaptive mode alternates teams and no teams and picks one per probe",
          "[unit][steps]") {
  steps::AdaptiveStats stats = RunAdaptive(FastAdaptive(1), 2);
  INFO("probes " << stats.probes << ", epochs with teams " << stats.epochs_teams
                 << ", without " << stats.epochs_serial);
  REQUIRE(stats.probes >= 1);
  CHECK(stats.chose_teams + stats.chose_serial == stats.probes);
  CHECK(stats.epochs_teams >= stats.probes);
  CHECK(stats.epochs_serial >= stats.probes);
  REQUIRE(stats.last_ratio.size() == 1);
  CHECK(stats.last_ratio[0] > 0);
}

TEST_CASE("an adaptive probe ends after one pair once teams are clearly slower",
          "[unit][steps]") {
  steps::StepsOptions options = FastAdaptive(3);
  options.teams_margin = 100;  // teams are never chosen: only probes run with teams
  for (bool decisive : {true, false}) {
    // A margin of -100 makes every first pair decisive (teams below 101 times the rate
    // without); one of 100 makes none (teams below -99 times).
    options.decisive_margin = decisive ? -100.0 : 100.0;
    steps::AdaptiveStats stats = RunAdaptive(options, 3);
    const uint64_t teams_per_probe = decisive ? 1 : 3;
    INFO("decisive " << decisive << ": probes " << stats.probes << ", epochs with teams "
                     << stats.epochs_teams << ", without " << stats.epochs_serial);
    REQUIRE(stats.probes >= 3);
    CHECK(stats.chose_teams == 0);
    // Every finished probe ran teams_per_probe epochs with teams; one more probe may have begun.
    CHECK(stats.epochs_teams >= stats.probes * teams_per_probe);
    CHECK(stats.epochs_teams <= (stats.probes + 1) * teams_per_probe);
  }
}

TEST_CASE("the adaptive policy wants a margin for teams and probes less once settled",
          "[unit][steps]") {
  steps::StepsOptions options;
  options.run_epochs = 10;
  options.max_run_epochs = 40;
  options.teams_margin = 0.02;
  steps::AdaptivePolicy policy(options);
  CHECK(policy.teams());  // before any probe
  CHECK(policy.run_epochs() == 10);
  policy.OnProbe(1.01);  // a win inside the margin is no win
  CHECK_FALSE(policy.teams());
  CHECK(policy.run_epochs() == 10);
  policy.OnProbe(0.80);  // confirmed: the run doubles, up to the cap
  CHECK(policy.run_epochs() == 20);
  policy.OnProbe(0.90);
  CHECK(policy.run_epochs() == 40);
  policy.OnProbe(1.0);
  CHECK(policy.run_epochs() == 40);
  CHECK_FALSE(policy.teams());
  policy.OnProbe(1.05);  // a change starts again from the shortest run
  CHECK(policy.teams());
  CHECK(policy.run_epochs() == 10);
  policy.OnProbe(1.30);
  CHECK(policy.teams());
  CHECK(policy.run_epochs() == 20);
}

TEST_CASE("the adaptive policy ends a probe early only when teams are clearly slower",
          "[unit][steps]") {
  steps::StepsOptions options;
  options.probe_pairs = 3;
  options.decisive_margin = 0.10;
  steps::AdaptivePolicy policy(options);
  CHECK(policy.ProbeDone(1, 0.80));        // teams clearly slower
  CHECK(policy.ProbeDone(2, 0.90));
  CHECK_FALSE(policy.ProbeDone(1, 1.20));  // teams faster: every pair must say so
  CHECK_FALSE(policy.ProbeDone(2, 1.50));
  CHECK_FALSE(policy.ProbeDone(1, 0.95));
  CHECK_FALSE(policy.ProbeDone(2, 1.05));
  CHECK(policy.ProbeDone(3, 1.00));  // all pairs run
  CHECK(policy.ProbeDone(3, 1.20));
}
