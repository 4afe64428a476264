// Miss interleaving (BtreeOptions::interleave_misses, btree.h): a descent about to fix a leaf
// through its parent's frame hint yields to the worker's other ready fibers, and only then; the
// operation's result is unchanged.
#include <atomic>
#include <catch2/catch.hpp>
#include <string>

#include "index/btree.h"
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

enum class Held { kNothing, kMutex };

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

void Fill(TreeEnv& env) {
  for (uint64_t n = 0; n < kKeys; ++n) REQUIRE(env.tree->Insert(Key64(n), ValueFor(n, 0)).ok());
  index::BtreeStats stats;
  sm::test::RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 2);
}

}  // namespace

TEST_CASE("miss interleaving yields to a ready fiber before the leaf fix", "[unit][btree]") {
  index::BtreeOptions options;
  options.interleave_misses = true;
  TreeEnv env(256, options);
  Fill(env);
  CHECK(OtherFiberRanDuringLookup(env, Held::kNothing));
}

TEST_CASE("without miss interleaving a lookup of a resident leaf does not yield",
          "[unit][btree]") {
  TreeEnv env(256);
  Fill(env);
  CHECK_FALSE(OtherFiberRanDuringLookup(env, Held::kNothing));
}

TEST_CASE("miss interleaving does not yield while the fiber holds an exclusive latch or mutex",
          "[unit][btree]") {
  index::BtreeOptions options;
  options.interleave_misses = true;
  TreeEnv env(256, options);
  Fill(env);
  CHECK_FALSE(OtherFiberRanDuringLookup(env, Held::kMutex));
}
