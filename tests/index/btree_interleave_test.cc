// Miss interleaving (BtreeOptions::miss_interleaving, btree.h): a descent about to fix a leaf
// through its parent's frame hint yields to the worker's other ready fibers, a lookup once more
// before it searches the leaf, and only then (not under an exclusive latch or mutex, nor in a
// STEPS team); the operation's result is unchanged. And the adaptive mode's chooser
// (InterleaveChooser), on a clock the test drives.
#include <atomic>
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "index/btree.h"
#include "index/interleave_chooser.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "threads/worker.h"

using namespace sm;
using sm::test::Key64;
using sm::test::TreeEnv;
using sm::test::ValueFor;

namespace {

constexpr uint64_t kKeys = 3000;  // several leaves under an inner root

// What the looking-up fiber holds or is: a mutex; a STEPS team's state (team_slot) on a worker
// whose CTX sites switch (teams on), or are muted (adaptive STEPS running without teams).
enum class Held { kNothing, kMutex, kTeamState, kTeamStateMuted };

// On one worker: a lookup that has already descended once (so the root remembers the leaf's
// frame), made while another fiber is ready. Returns whether that fiber ran before the lookup
// returned; the lookup's result is checked (after the runtime stops: Catch2's checks are for the
// test's thread).
bool OtherFiberRanDuringLookup(TreeEnv& env, Held held) {
  auto runtime = sm::test::MakeRuntime(1);
  std::atomic<bool> other_ran{false};
  std::atomic<bool> lookup_ok{false};
  std::atomic<bool> ran_during{false};
  threads::WaitGroup done;
  done.Add(1);
  runtime->Spawn(
      [&] {
        const uint64_t n = kKeys / 2;
        std::string value;
        bool ok = env.tree->Lookup(Key64(n), &value).ok();  // fills the root's child hints
        threads::Mutex mu;
        if (held == Held::kMutex) mu.lock();
        int team_state = 0;  // what steps/ would keep there; only its presence is read
        threads::Fiber* self = threads::Fiber::Current();
        if (held == Held::kTeamState || held == Held::kTeamStateMuted) self->team_slot = &team_state;
        threads::SetCtxMutedOnThisThread(held == Held::kTeamStateMuted);
        threads::WaitGroup other_done;
        other_done.Add(1);
        runtime->Spawn(
            [&] {
              other_ran.store(true);
              other_done.Done();
            },
            0);
        ok = ok && threads::Worker::Current()->HasReadyFibers();
        ok = ok && env.tree->Lookup(Key64(n), &value).ok() && value == ValueFor(n, 0);
        ran_during.store(other_ran.load());
        if (held == Held::kMutex) mu.unlock();
        self->team_slot = nullptr;
        threads::SetCtxMutedOnThisThread(false);
        other_done.Wait();
        lookup_ok.store(ok);
        done.Done();
      },
      0);
  done.Wait();
  runtime->Shutdown();
  REQUIRE(lookup_ok.load());
  return ran_during.load();
}

// On one worker, with a fiber that counts its turns and yields until told to stop: how many
// turns it had during one lookup of `key` (made after a first lookup filled the root's child
// hints), and whether that lookup found `key` with its value.
struct TurnsDuringLookup {
  int turns = 0;
  bool found = false;
  bool value_right = false;
};
TurnsDuringLookup CountTurnsDuringLookup(TreeEnv& env, uint64_t key) {
  auto runtime = sm::test::MakeRuntime(1);
  std::atomic<int> turns{0};
  std::atomic<bool> stop{false};
  TurnsDuringLookup result;
  threads::WaitGroup done;
  done.Add(1);
  runtime->Spawn(
      [&] {
        std::string value;
        (void)env.tree->Lookup(Key64(kKeys / 2), &value);  // fills the root's child hints
        threads::WaitGroup other_done;
        other_done.Add(1);
        runtime->Spawn(
            [&] {
              while (!stop.load()) {
                turns.fetch_add(1);
                threads::Worker::Current()->Yield();
              }
              other_done.Done();
            },
            0);
        threads::Worker::Current()->Yield();  // the counter's first turn, before the lookup
        const int before = turns.load();
        Status s = env.tree->Lookup(Key64(key), &value);
        result.turns = turns.load() - before;
        result.found = s.ok();
        result.value_right = s.ok() && value == ValueFor(key, 0);
        if (!s.ok()) s.PermitUnchecked();
        stop.store(true);
        other_done.Wait();
        done.Done();
      },
      0);
  done.Wait();
  runtime->Shutdown();
  return result;
}

void Fill(TreeEnv& env) {
  for (uint64_t n = 0; n < kKeys; ++n) REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0)).ok());
  index::BtreeStats stats;
  sm::test::RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 2);
}

// A tree of kKeys keys with miss interleaving forced on (or off).
struct FilledTree : TreeEnv {
  explicit FilledTree(index::MissInterleaving mode) : TreeEnv(256, OptionsWith(mode)) {
    Fill(*this);
  }
  static index::BtreeOptions OptionsWith(index::MissInterleaving mode) {
    index::BtreeOptions options;
    options.miss_interleaving = mode;
    return options;
  }
};

}  // namespace

TEST_CASE("miss interleaving yields to a ready fiber before the leaf fix", "[unit][btree]") {
  FilledTree env(index::MissInterleaving::kOn);
  CHECK(OtherFiberRanDuringLookup(env, Held::kNothing));
}

TEST_CASE("an interleaved lookup yields again before it searches the leaf", "[unit][btree]") {
  FilledTree env(index::MissInterleaving::kOn);
  // Once before the leaf is fixed, once before its record is compared; the result is the
  // search's whatever record was asked for.
  for (uint64_t key : {uint64_t{0}, kKeys / 3, kKeys - 1}) {
    TurnsDuringLookup t = CountTurnsDuringLookup(env, key);
    CHECK(t.turns == 2);
    CHECK(t.found);
    CHECK(t.value_right);
  }
  TurnsDuringLookup absent = CountTurnsDuringLookup(env, kKeys + 5);
  CHECK(absent.turns == 2);
  CHECK_FALSE(absent.found);
}

TEST_CASE("without miss interleaving a lookup of a resident leaf does not yield", "[unit][btree]") {
  FilledTree env(index::MissInterleaving::kOff);
  CHECK_FALSE(OtherFiberRanDuringLookup(env, Held::kNothing));
}

TEST_CASE("miss interleaving does not yield while the fiber holds an exclusive latch or mutex",
          "[unit][btree]") {
  FilledTree env(index::MissInterleaving::kOn);
  CHECK_FALSE(OtherFiberRanDuringLookup(env, Held::kMutex));
}

TEST_CASE("miss interleaving yields in a STEPS worker's fiber only while its teams are off",
          "[unit][btree]") {
  FilledTree env(index::MissInterleaving::kOn);
  CHECK_FALSE(OtherFiberRanDuringLookup(env, Held::kTeamState));  // teams switch at CTX instead
  CHECK(OtherFiberRanDuringLookup(env, Held::kTeamStateMuted));
}

namespace {

// Drives a chooser through `epochs` epochs in which the worker does `rate_off` descents per
// millisecond without interleaving and `rate_on` with it; returns the epochs it interleaved.
// regime(now_ns) is the worker's regime (InterleaveChooser's "Regimes") at each clock reading.
template <typename Regime>
uint32_t DriveChooser(index::InterleaveChooser* chooser, uint32_t epochs, double rate_off,
                      double rate_on, int64_t* now_ns, Regime regime) {
  using index::InterleaveChooser;
  uint32_t interleaved = 0;
  for (uint32_t e = 0; e < epochs; ++e) {
    const bool on = chooser->current();
    interleaved += on ? 1 : 0;
    const double per_ms = on ? rate_on : rate_off;
    // Enough descents to pass an epoch, each advancing the clock by 1 / per_ms ms.
    const uint64_t descents = static_cast<uint64_t>(per_ms * InterleaveChooser::kEpochNs / 1e6) +
                              2 * InterleaveChooser::kClockEvery;
    const uint64_t probes_before = chooser->probes();
    for (uint64_t d = 0;
         d < descents && chooser->current() == on && chooser->probes() == probes_before; ++d) {
      *now_ns += static_cast<int64_t>(1e6 / per_ms);
      chooser->CountDescent([&] { return *now_ns; }, [&] { return regime(*now_ns); });
    }
  }
  return interleaved;
}

uint32_t DriveChooser(index::InterleaveChooser* chooser, uint32_t epochs, double rate_off,
                      double rate_on, int64_t* now_ns) {
  return DriveChooser(chooser, epochs, rate_off, rate_on, now_ns,
                      [](int64_t) { return index::InterleaveChooser::OneRegime(); });
}

}  // namespace

TEST_CASE("the adaptive chooser interleaves where that is faster and not where it is slower",
          "[unit][btree]") {
  using index::InterleaveChooser;
  int64_t now = 1'000'000'000;
  SECTION("faster with interleaving") {
    InterleaveChooser chooser;
    CHECK_FALSE(chooser.current());  // a probe first, starting without
    DriveChooser(&chooser, 1 + InterleaveChooser::kProbeEpochs, 1000, 1200, &now);
    CHECK(chooser.probes() == 1);
    CHECK(chooser.current());
    CHECK_FALSE(chooser.probing());
    // Confirmed by later probes: the runs double.
    const uint32_t first_run = chooser.run_epochs();
    const uint32_t on = DriveChooser(&chooser, 3000, 1000, 1200, &now);
    CHECK(chooser.run_epochs() > first_run);
    CHECK(on > 3000 * 9 / 10);
  }
  SECTION("slower with interleaving") {
    InterleaveChooser chooser;
    const uint32_t on = DriveChooser(&chooser, 3000, 1000, 900, &now);
    CHECK(chooser.probes() >= 2);
    CHECK_FALSE(chooser.current());
    CHECK(on < 3000 / 10);  // only the probes' epochs
  }
  SECTION("a tie within the margin does not interleave") {
    InterleaveChooser chooser;
    DriveChooser(&chooser, 1 + InterleaveChooser::kProbeEpochs, 1000, 1010, &now);
    CHECK(chooser.probes() == 1);
    CHECK_FALSE(chooser.current());
  }
}

TEST_CASE("the adaptive chooser counts no epoch that saw STEPS teams or a switch of them",
          "[unit][btree]") {
  using index::InterleaveChooser;
  int64_t now = 1'000'000'000;
  const uint32_t epochs = 4 * InterleaveChooser::kProbeEpochs;
  SECTION("teams all along: nothing is measured, nothing chosen") {
    InterleaveChooser chooser;
    DriveChooser(&chooser, epochs, 1000, 1200, &now,
                 [](int64_t) { return std::optional<uint32_t>(); });
    CHECK(chooser.probes() == 0);
    CHECK(chooser.dropped_epochs() >= epochs - 1);
    CHECK_FALSE(chooser.current());
  }
  SECTION("a switch in every epoch: nothing is measured") {
    InterleaveChooser chooser;
    // The regime changes every half epoch, so every epoch spans a change.
    DriveChooser(&chooser, epochs, 1000, 1200, &now, [](int64_t t) {
      return std::optional<uint32_t>(static_cast<uint32_t>(t / (InterleaveChooser::kEpochNs / 2)));
    });
    CHECK(chooser.probes() == 0);
    CHECK(chooser.dropped_epochs() >= epochs - 1);
  }
  SECTION("one regime throughout: the probe decides as without regimes") {
    InterleaveChooser chooser;
    DriveChooser(&chooser, 1 + InterleaveChooser::kProbeEpochs, 1000, 1200, &now,
                 [](int64_t) { return std::optional<uint32_t>(7); });
    CHECK(chooser.probes() == 1);
    CHECK(chooser.dropped_epochs() == 0);
    CHECK(chooser.current());
  }
}
