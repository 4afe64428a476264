// fiber_demo: what `tools/run tpcc` runs until the TPC-C driver exists. It exercises the fiber
// runtime the way the driver will: one fiber per terminal on every worker, each running
// "transactions" that take latches, pass CTX sites, and do O_DIRECT I/O through the reactor
// on a scratch file, with a progress line every second and a summary at the end.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "threads/baton.h"
#include "threads/ctx_point.h"
#include "threads/reactor.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"

using namespace sm::threads;

namespace {
SM_DEFINE_CTX_SITE(kCtxDemoBegin, "demo.txn_begin");
SM_DEFINE_CTX_SITE(kCtxDemoWork, "demo.txn_work");

constexpr size_t kBlock = 8192;
constexpr int kBlocks = 1024;

struct Shared {
  std::unique_ptr<Latch[]> latches{new Latch[64]};
  long counters[64] = {};
  std::atomic<long> txns{0};
  std::atomic<long> ios{0};
  std::atomic<long> errors{0};
  std::atomic<bool> stop{false};
  int fd = -1;
};

void Terminal(Shared& shared, uint64_t seed) {
  std::mt19937_64 rng(seed);
  void* buf = std::aligned_alloc(kDirectIoAlignment, kBlock);
  std::memset(buf, 0, kBlock);
  while (!shared.stop.load(std::memory_order_relaxed)) {
    SM_CTX(kCtxDemoBegin);
    int slot = static_cast<int>(rng() % 64);
    {
      LatchGuard guard(shared.latches[slot], LatchMode::kExclusive);
      ++shared.counters[slot];
    }
    SM_CTX(kCtxDemoWork);
    if (rng() % 16 == 0) {  // one in 16 transactions touches the disk
      uint64_t offset = (rng() % kBlocks) * kBlock;
      sm::Status s = (rng() & 1) ? Reactor::Write(shared.fd, buf, kBlock, offset)
                                 : Reactor::Read(shared.fd, buf, kBlock, offset);
      if (!s.ok()) shared.errors.fetch_add(1);
      shared.ios.fetch_add(1, std::memory_order_relaxed);
    }
    shared.txns.fetch_add(1, std::memory_order_relaxed);
    Worker::Current()->Yield();
  }
  std::free(buf);
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fiber runtime demo (stands in for the TPC-C driver, which is not built yet)"};
  unsigned workers = 0;
  int users = 10;
  double duration = 10;
  std::string dir = "data";
  bool list = false;
  app.add_option("--workers", workers, "OS threads (0 = all cores)");
  app.add_option("--users", users, "fibers (terminals) in all")->check(CLI::Range(1, 100000));
  app.add_option("--duration", duration, "seconds to run")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--db", dir, "directory for the scratch file");
  app.add_flag("--list-ctx-points", list, "list the CTX sites linked into this binary");
  CLI11_PARSE(app, argc, argv);

  if (list) {
    for (CtxSite* site : ListCtxSites()) std::printf("%08x %s\n", site->id, site->name);
    return 0;
  }
  std::printf("NOTE: the TPC-C driver is not built yet; this is the fiber runtime demo.\n");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = dir + "/fiber-demo.scratch";
  Shared shared;
  shared.fd = open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
  if (shared.fd < 0) shared.fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (shared.fd < 0) {
    std::fprintf(stderr, "cannot create %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  if (ftruncate(shared.fd, kBlock * kBlocks) != 0) {
    std::fprintf(stderr, "cannot size %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  RuntimeOptions options;
  options.workers = workers;
  std::unique_ptr<Runtime> rt;
  sm::Status s = Runtime::Create(options, &rt);
  if (!s.ok()) {
    std::fprintf(stderr, "runtime: %s\n", s.ToString().c_str());
    return 2;
  }
  std::printf("%u workers, %d fibers, %.0f s\n", rt->worker_count(), users, duration);
  for (int u = 0; u < users; ++u) rt->Spawn([&shared, u] { Terminal(shared, 1000 + u); });
  double t0 = sm::bench::NowSeconds();
  long last = 0;
  for (int sec = 1; sec <= static_cast<int>(duration); ++sec) {
    SleepFor(std::chrono::seconds(1));
    long now = shared.txns.load();
    std::printf("  %3d s  %10ld txn/s  %8ld I/Os\n", sec, now - last, shared.ios.load());
    std::fflush(stdout);
    last = now;
  }
  double rest = duration - static_cast<int>(duration);
  if (rest > 0) SleepFor(std::chrono::nanoseconds(static_cast<long>(rest * 1e9)));
  shared.stop = true;
  rt->Shutdown();
  double elapsed = sm::bench::NowSeconds() - t0;
  long total = 0;
  for (long c : shared.counters) total += c;
  close(shared.fd);
  std::filesystem::remove(path, ec);
  bool consistent = total == shared.txns.load() && shared.errors.load() == 0;
  std::printf("summary: %ld txns in %.1f s (%.0f txn/s), %ld I/Os, %ld I/O errors, "
              "counters %s\n", shared.txns.load(), elapsed, shared.txns.load() / elapsed,
              shared.ios.load(), shared.errors.load(), consistent ? "consistent" : "WRONG");
  sm::bench::PrintJsonLine({{"txns", shared.txns.load()},
                            {"txn_per_s", shared.txns.load() / elapsed},
                            {"ios", shared.ios.load()},
                            {"consistency", consistent ? "pass" : "fail"},
                            {"workers", rt->worker_count()},
                            {"users", users}});
  return consistent ? 0 : 1;
}
