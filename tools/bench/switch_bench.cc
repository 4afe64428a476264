// Benchmark "switch": the cost of the fiber runtime's two ways to switch.
//
//   direct_switch_ns        one Worker::DirectSwitch in a ring of fibers (the CTX primitive)
//   scheduler_roundtrip_ns  one fiber yields through the run queue and is resumed after the
//                           other ready fiber has yielded once (two scheduler switches)
//   cross_worker_wake_us    a fiber posts a Baton to a fiber on the other worker and waits
//                           for the reply (one round trip through the remote queues)
//
// Figures are medians of --repeat runs on one worker (two for the cross-worker figure).
#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "threads/baton.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"

using namespace sm::threads;
using sm::bench::Median;
using sm::bench::NowSeconds;

namespace {

bool g_pin = false;

std::unique_ptr<Runtime> MakeRuntime(unsigned workers) {
  RuntimeOptions options;
  options.workers = workers;
  options.pin_workers = g_pin;
  std::unique_ptr<Runtime> rt;
  if (!Runtime::Create(options, &rt).ok()) std::abort();
  return rt;
}

// ns per direct switch: `ring` fibers pass control around `laps` times. Every member runs
// the same loop, so all are suspended at the same call site, as team members at a CTX point.
// The ring is built by a root fiber on the worker, so no member runs before all exist.
double DirectSwitchNs(int ring, long laps) {
  auto rt = MakeRuntime(1);
  std::vector<Fiber*> fibers(ring);
  bool done = false;
  long laps_left = laps;
  double t0 = 0, seconds = 0;
  Baton finished;
  auto member = [&](int i) {
    Worker* w = Worker::Current();
    if (i + 1 < ring) {
      w->ParkAndSwitch(nullptr);  // wait to be switched to
    } else {
      t0 = NowSeconds();  // the last one spawned starts the ring
    }
    // Hoisted: a division per switch would count in direct_switch_ns.
    Fiber* next = fibers[(i + 1) % ring];
    for (;;) {
      if (i == ring - 1 && --laps_left < 0) break;
      if (done) return;
      w->DirectSwitch(next);
    }
    seconds = NowSeconds() - t0;
    done = true;
    for (int j = 0; j + 1 < ring; ++j) w->MakeReady(fibers[j]);
    finished.Post();
  };
  rt->Spawn([&] {
    for (int i = 0; i < ring; ++i) fibers[i] = Worker::Current()->Spawn([&member, i] { member(i); });
  }, 0);
  finished.Wait();
  rt->Shutdown();
  return seconds * 1e9 / (double(laps) * ring);
}

// ns per scheduler round trip with two ready fibers yielding to each other.
double SchedulerRoundTripNs(long round_trips) {
  auto rt = MakeRuntime(1);
  double seconds = 0;
  WaitGroup wg;
  wg.Add(2);
  for (int f = 0; f < 2; ++f) {
    rt->Spawn([&, f] {
      Worker* w = Worker::Current();
      double t0 = NowSeconds();
      for (long i = 0; i < round_trips; ++i) w->Yield();
      if (f == 0) seconds = NowSeconds() - t0;
      wg.Done();
    }, 0);
  }
  wg.Wait();
  rt->Shutdown();
  return seconds * 1e9 / double(round_trips);
}

double CrossWorkerWakeUs(int round_trips) {
  auto rt = MakeRuntime(2);
  auto ping = std::make_unique<Baton[]>(round_trips);
  auto pong = std::make_unique<Baton[]>(round_trips);
  double seconds = 0;
  WaitGroup wg;
  wg.Add(2);
  rt->Spawn([&] {
    double t0 = NowSeconds();
    for (int i = 0; i < round_trips; ++i) {
      ping[i].Post();
      pong[i].Wait();
    }
    seconds = NowSeconds() - t0;
    wg.Done();
  }, 0);
  rt->Spawn([&] {
    for (int i = 0; i < round_trips; ++i) {
      ping[i].Wait();
      pong[i].Post();
    }
    wg.Done();
  }, 1);
  wg.Wait();
  rt->Shutdown();
  return seconds * 1e6 / round_trips;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fiber switch micro-benchmark"};
  int repeat = 5;
  long iterations = 2000000;
  int ring = 10;
  app.add_option("--repeat", repeat, "runs per figure (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--iterations", iterations, "switches per run")->check(CLI::PositiveNumber);
  app.add_flag("--pin", g_pin, "pin workers to cores (off: on a shared machine pinning to a busy core hurts)");
  app.add_option("--ring", ring, "fibers in the direct-switch ring")->check(CLI::Range(2, 10000));
  CLI11_PARSE(app, argc, argv);

  std::vector<double> direct, sched, cross;
  for (int r = 0; r < repeat; ++r) {
    direct.push_back(DirectSwitchNs(ring, iterations / ring));
    sched.push_back(SchedulerRoundTripNs(iterations / 2));
    cross.push_back(CrossWorkerWakeUs(20000));
  }
  double direct_ns = Median(direct), sched_ns = Median(sched), cross_us = Median(cross);
  std::printf("switch benchmark: %d runs, median\n", repeat);
  std::printf("  direct switch (ring of %d fibers)      %7.2f ns   (target <= 10 ns)\n", ring,
              direct_ns);
  std::printf("  scheduler round trip (2 fibers yield)  %7.2f ns   (target <= 30 ns)\n",
              sched_ns);
  std::printf("  cross-worker wake round trip           %7.2f us\n", cross_us);
  sm::bench::PrintJsonLine({{"direct_switch_ns", direct_ns},
                            {"scheduler_roundtrip_ns", sched_ns},
                            {"cross_worker_roundtrip_us", cross_us},
                            {"ring", ring},
                            {"repeat", repeat}});
  return 0;
}
