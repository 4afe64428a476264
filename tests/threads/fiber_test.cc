// Fiber runtime: creation, direct switching, scheduler fairness, cross-worker wake-ups,
// sleeping, idle workers.
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"
#include "threads/baton.h"
#include "threads/runtime.h"
#include "threads/sync.h"

using namespace sm::threads;
using Clock = std::chrono::steady_clock;

using sm::test::MakeRuntime;

TEST_CASE("thousands of fibers are created and finish on two workers", "[unit][fiber]") {
  auto rt = MakeRuntime(2);
  std::atomic<int> ran{0};
  WaitGroup wg;
  constexpr int kFibers = 5000;
  wg.Add(kFibers);
  for (int i = 0; i < kFibers; ++i) {
    REQUIRE(rt->Spawn([&] {
      ran.fetch_add(1);
      Worker::Current()->Yield();
      wg.Done();
    }) != nullptr);
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(ran.load() == kFibers);
  REQUIRE(rt->worker(0).live_fibers() == 0);
  REQUIRE(rt->worker(1).live_fibers() == 0);
  REQUIRE(rt->Spawn([] {}) == nullptr);  // no fibers after shutdown
}

TEST_CASE("a fiber stack the kernel refuses is an error naming the limit", "[unit][fiber]") {
  auto rt = MakeRuntime(1);
  struct Case {
    bool guard_page;
    const char* names;  // what the message must name
  };
  // The fiber of the previous round has called Done but may not have ended yet.
  auto quiet = [&rt] {
    for (int i = 0; i < 5000 && rt->worker(0).live_fibers() != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return rt->worker(0).live_fibers() == 0;
  };
  for (const Case& c : {Case{true, "vm.max_map_count"}, Case{false, "ulimit -v"}}) {
    INFO(c.names);
    REQUIRE(quiet());
    FiberStackAllocator::TEST_FailNextAllocations(1, c.guard_page, ENOMEM);
    Fiber* fiber = nullptr;
    bool ran = false;
    sm::Status refused = rt->TrySpawn([&] { ran = true; }, 0, &fiber);
    INFO(refused.ToString());
    CHECK(refused.IsIOError());
    CHECK(refused.ToString().find(c.names) != std::string::npos);
    CHECK(fiber == nullptr);
    CHECK(rt->worker(0).live_fibers() == 0);  // nothing half made
    // The next one gets its stack.
    WaitGroup done;
    done.Add(1);
    REQUIRE(rt->TrySpawn([&] { done.Done(); }, 0, &fiber).ok());
    done.Wait();
    CHECK_FALSE(ran);
  }
  rt->Shutdown();
  Fiber* fiber = nullptr;
  CHECK(rt->TrySpawn([] {}, 0, &fiber).IsClosed());
  CHECK(fiber == nullptr);
}

TEST_CASE("fibers spawned by fibers run on the same worker", "[unit][fiber]") {
  auto rt = MakeRuntime(2);
  std::atomic<int> wrong_worker{0};
  WaitGroup wg;
  wg.Add(100);
  for (int i = 0; i < 100; ++i) {
    rt->Spawn([&] {
      Worker* parent = Worker::Current();
      parent->Spawn([&, parent] {
        if (Worker::Current() != parent) wrong_worker.fetch_add(1);
        wg.Done();
      });
    });
  }
  wg.Wait();
  REQUIRE(wrong_worker.load() == 0);
}

TEST_CASE("direct switch follows the ring and bypasses the run queue", "[unit][fiber]") {
  auto rt = MakeRuntime(1);
  std::string order;
  Fiber* ring[3] = {};
  bool done = false;
  Baton finished;
  for (int i = 1; i < 3; ++i) {
    ring[i] = rt->Spawn(
        [&, i] {
          Worker* w = Worker::Current();
          w->ParkAndSwitch(nullptr);  // park until the ring reaches us
          while (!done) {
            order += static_cast<char>('A' + i);
            w->DirectSwitch(ring[(i + 1) % 3]);
          }
        },
        0);
  }
  rt->Spawn(
      [&] {
        Worker* w = Worker::Current();
        ring[0] = Fiber::Current();
        uint64_t scheduler_before = w->stats().scheduler_switches;
        for (int round = 0; round < 4; ++round) {
          order += 'A';
          w->DirectSwitch(ring[1]);
        }
        // Three direct switches per round and no scheduler switch in between.
        CHECK(w->stats().scheduler_switches == scheduler_before);
        done = true;
        w->MakeReady(ring[1]);
        w->MakeReady(ring[2]);
        finished.Post();
      },
      0);
  finished.Wait();
  rt->Shutdown();
  REQUIRE(order == "ABCABCABCABC");
}

TEST_CASE("yielding fibers are scheduled round robin", "[unit][fiber]") {
  auto rt = MakeRuntime(1);
  constexpr int kFibers = 8;
  constexpr int kRounds = 50;
  std::vector<int> trace;
  Baton start;
  WaitGroup wg;
  wg.Add(kFibers);
  // Spawned by a root fiber, so that all are queued before the first runs.
  rt->Spawn(
      [&] {
        for (int f = 0; f < kFibers; ++f) {
          Worker::Current()->Spawn([&, f] {
            for (int r = 0; r < kRounds; ++r) {
              trace.push_back(f);
              Worker::Current()->Yield();
            }
            wg.Done();
          });
        }
      },
      0);
  wg.Wait();
  rt->Shutdown();
  REQUIRE(trace.size() == kFibers * kRounds);
  for (size_t i = 0; i < trace.size(); ++i) REQUIRE(trace[i] == static_cast<int>(i % kFibers));
}

// Runs `fibers` fibers on one worker, each `turns` times: YieldForTurn, trace its number, and
// then, if `yield_inside`, a Yield (a transaction that gives up the CPU midway). Counts the
// YieldForTurn calls that switched.
struct TurnRun {
  std::vector<int> trace;
  int turn_yields = 0;
};
TurnRun RunTurns(int fibers, int turns, bool yield_inside) {
  auto rt = MakeRuntime(1);
  TurnRun run;
  WaitGroup wg;
  wg.Add(fibers);
  rt->Spawn(  // a root fiber spawns them all, so that all are queued before the first runs
      [&] {
        for (int f = 0; f < fibers; ++f) {
          Worker::Current()->Spawn([&, f] {
            Worker* worker = Worker::Current();
            for (int t = 0; t < turns; ++t) {
              const uint64_t before = worker->SwitchCount();
              worker->YieldForTurn();
              run.turn_yields += worker->SwitchCount() != before;
              run.trace.push_back(f);
              if (yield_inside) worker->Yield();
            }
            wg.Done();
          });
        }
      },
      0);
  wg.Wait();
  rt->Shutdown();
  return run;
}

void RequireRoundRobin(const std::vector<int>& trace, int fibers, int turns) {
  REQUIRE(trace.size() == static_cast<size_t>(fibers * turns));
  for (size_t i = 0; i < trace.size(); ++i) REQUIRE(trace[i] == static_cast<int>(i % fibers));
}

TEST_CASE("fibers take turns at YieldForTurn unless they gave up the CPU since", "[unit][fiber]") {
  constexpr int kFibers = 3;
  constexpr int kTurns = 20;
  // Fibers that never give up the CPU otherwise take one turn each: every call but a fiber's
  // first (it has just been switched to) yields.
  TurnRun run = RunTurns(kFibers, kTurns, /*yield_inside=*/false);
  RequireRoundRobin(run.trace, kFibers, kTurns);
  REQUIRE(run.turn_yields == kFibers * (kTurns - 1));
  // Fibers that yield inside each turn have let the others run already: the order is the
  // same, and no call yields.
  run = RunTurns(kFibers, kTurns, /*yield_inside=*/true);
  RequireRoundRobin(run.trace, kFibers, kTurns);
  REQUIRE(run.turn_yields == 0);
}

TEST_CASE("batons wake fibers across workers and from plain threads", "[unit][fiber]") {
  auto rt = MakeRuntime(2);
  constexpr int kRoundTrips = 2000;
  auto ping = std::make_unique<Baton[]>(kRoundTrips);
  auto pong = std::make_unique<Baton[]>(kRoundTrips);
  std::atomic<int> ping_worker{-1}, pong_worker{-1};
  WaitGroup wg;
  wg.Add(2);
  rt->Spawn(
      [&] {
        ping_worker = Worker::Current()->index();
        for (int i = 0; i < kRoundTrips; ++i) {
          ping[i].Post();
          pong[i].Wait();
        }
        wg.Done();
      },
      0);
  rt->Spawn(
      [&] {
        pong_worker = Worker::Current()->index();
        for (int i = 0; i < kRoundTrips; ++i) {
          ping[i].Wait();
          pong[i].Post();
        }
        wg.Done();
      },
      1);
  wg.Wait();
  REQUIRE(ping_worker.load() == 0);
  REQUIRE(pong_worker.load() == 1);
  REQUIRE(rt->worker(0).stats().remote_wakeups + rt->worker(1).stats().remote_wakeups > 0);

  // A plain OS thread waits for a fiber, and a fiber for a plain thread.
  Baton to_thread, to_fiber;
  std::atomic<bool> fiber_woke{false};
  rt->Spawn([&] {
    to_thread.Post();
    to_fiber.Wait();
    fiber_woke = true;
  });
  to_thread.Wait();
  std::thread poster([&] { to_fiber.Post(); });
  poster.join();
  rt->Shutdown();
  REQUIRE(fiber_woke.load());
}

TEST_CASE("timed waits time out on fibers and threads", "[unit][fiber]") {
  auto rt = MakeRuntime(1);
  Baton never;
  auto t0 = Clock::now();
  REQUIRE_FALSE(never.WaitFor(std::chrono::milliseconds(20)));
  REQUIRE(Clock::now() - t0 >= std::chrono::milliseconds(20));

  std::atomic<bool> fiber_timed_out{false}, posted_seen{false};
  Baton fiber_never, fiber_posted;
  WaitGroup wg;
  wg.Add(2);
  rt->Spawn([&] {
    auto start = Clock::now();
    bool got = fiber_never.WaitFor(std::chrono::milliseconds(20));
    fiber_timed_out = !got && Clock::now() - start >= std::chrono::milliseconds(20);
    wg.Done();
  });
  rt->Spawn([&] {
    posted_seen = fiber_posted.WaitFor(std::chrono::seconds(30));
    wg.Done();
  });
  fiber_posted.Post();
  wg.Wait();
  rt->Shutdown();
  REQUIRE(fiber_timed_out.load());
  REQUIRE(posted_seen.load());
}

TEST_CASE("sleeping fibers wake after their deadline", "[unit][fiber]") {
  auto rt = MakeRuntime(1);
  std::atomic<int> early{0};
  WaitGroup wg;
  const int delays_ms[] = {40, 10, 30, 20};
  wg.Add(4);
  for (int d : delays_ms) {
    rt->Spawn(
        [&, d] {
          auto start = Clock::now();
          SleepFor(std::chrono::milliseconds(d));
          if (Clock::now() - start < std::chrono::milliseconds(d)) early.fetch_add(1);
          wg.Done();
        },
        0);
  }
  wg.Wait();
  rt->Shutdown();
  REQUIRE(early.load() == 0);
}

TEST_CASE("sleeping fibers wake in deadline order", "[unit][fiber]") {
  // The deadlines share one base instant, and the sleepers are spawned by one fiber so that
  // none of them runs before all are queued: the order cannot depend on how quickly the test
  // thread spawns (it did under TSan, where spawning took longer than the gaps).
  auto rt = MakeRuntime(1);
  std::vector<int> woke;
  WaitGroup wg;
  const int delays_ms[] = {40, 10, 30, 20};
  wg.Add(4);
  rt->Spawn(
      [&] {
        auto base = Clock::now();
        for (int d : delays_ms) {
          Worker::Current()->Spawn([&, base, d] {
            SleepUntil(base + std::chrono::milliseconds(d));
            woke.push_back(d);
            wg.Done();
          });
        }
      },
      0);
  wg.Wait();
  rt->Shutdown();
  REQUIRE(woke == std::vector<int>{10, 20, 30, 40});
}

TEST_CASE("an idle worker sleeps instead of spinning", "[unit][fiber]") {
  auto rt = MakeRuntime(2);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  getrusage(RUSAGE_SELF, &after);
  auto cpu_us = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000L + r.ru_utime.tv_usec +
           r.ru_stime.tv_usec;
  };
  // Two spinning workers would burn ~600 ms of CPU here; sleeping ones burn almost none.
  REQUIRE(cpu_us(after) - cpu_us(before) < 100000);
  rt->Shutdown();
}

TEST_CASE("bad runtime options are rejected", "[unit][fiber]") {
  std::unique_ptr<Runtime> rt;
  RuntimeOptions options;
  options.fiber_stack_bytes = 1024;
  REQUIRE(Runtime::Create(options, &rt).IsInvalidArgument());
  options = RuntimeOptions{};
  options.workers = 5000;
  REQUIRE(Runtime::Create(options, &rt).IsInvalidArgument());
}

// Regression: a Baton posted from another worker after the waiter registered but before it
// blocked left a remote wake for a fiber that then yielded; the wake re-queued a fiber that
// was already in the run queue (run-queue corruption, lost fibers at shutdown).
TEST_CASE("remote wake of a fiber that did not block is not re-queued", "[unit][fiber]") {
  auto rt = MakeRuntime(2);
  constexpr int kRounds = 20000;
  std::atomic<Baton*> to_post{nullptr};
  std::atomic<bool> stop{false};
  WaitGroup wg;
  wg.Add(3);
  rt->Spawn(
      [&] {  // poster on worker 1: posts as soon as a baton is published
        while (!stop.load()) {
          if (Baton* b = to_post.exchange(nullptr)) b->Post();
        }
        wg.Done();
      },
      1);
  rt->Spawn(
      [&] {  // keeps worker 0's run queue non-empty
        while (!stop.load()) Worker::Current()->Yield();
        wg.Done();
      },
      0);
  rt->Spawn(
      [&] {
        for (int i = 0; i < kRounds; ++i) {
          Baton b;
          to_post.store(&b);
          b.Wait();
          Worker::Current()->Yield();
        }
        stop = true;
        wg.Done();
      },
      0);
  wg.Wait();
  rt->Shutdown();
  REQUIRE(rt->worker(0).live_fibers() == 0);
}

// Regression: a fiber waiter that saw the post before blocking returned while the poster was
// still reading its (stack) waiter record and about to wake it; the late wake then reached
// a fiber that had finished (use after free in the remote queue). Many short-lived waiters
// posted from the other worker make the window likely; ASan reported it before the fix.
TEST_CASE("a posted waiter does not return before the poster is done with it", "[unit][fiber]") {
  auto rt = MakeRuntime(2);
  constexpr int kWaiters = 4000;
  std::atomic<Baton*> slot{nullptr};
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  WaitGroup wg;
  wg.Add(1);
  rt->Spawn(
      [&] {
        while (!stop.load()) {
          if (Baton* b = slot.exchange(nullptr)) b->Post();
        }
        wg.Done();
      },
      1);
  for (int i = 0; i < kWaiters; ++i) {
    rt->Spawn(
        [&] {
          Baton b;
          Baton* expected = nullptr;
          while (!slot.compare_exchange_weak(expected, &b)) {
            expected = nullptr;
            Worker::Current()->Yield();
          }
          b.Wait();
          done.fetch_add(1);
        },
        0);
  }
  while (done.load() < kWaiters) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  wg.Wait();
  rt->Shutdown();
  REQUIRE(done.load() == kWaiters);
}
