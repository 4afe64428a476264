// Benchmark "bufferpool": the hit path of the buffer pool.
//
//   fix_unfix_ns            Fix(shared) + Release of a resident page, one fiber on one worker
//   fix_unfix_ns_2w         the same from one fiber on each of two workers (per operation,
//                           wall time / total operations / 2 workers)
//   fix_unfix_instructions  instructions per Fix + Release on the hit path, counted by
//                           callgrind (the binary re-runs itself under valgrind with
//                           instrumentation on only around the measured loop)
//
// Pages: 512 resident pages of a volume in a temporary directory; the pool is larger than
// the data. Medians over --repeat runs.
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sm/buffer/buffer_pool.h"
#include "sm/io/file.h"
#include "sm/space/volume.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "tools/bench/bench_util.h"

using namespace sm;
using sm::bench::Median;
using sm::bench::NowSeconds;

namespace {

constexpr int kPages = 512;

struct Setup {
  std::string dir;
  std::unique_ptr<space::Volume> volume;
  std::unique_ptr<buffer::BufferPool> pool;
  std::vector<PageId> pages;
};

void Die(const char* what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(1);
}

Setup MakeSetup() {
  Setup setup;
  char tmpl[] = "/tmp/sm-bufbench-XXXXXX";
  setup.dir = mkdtemp(tmpl);
  Status s = space::Volume::Create(io::FileSystem::Default(), setup.dir + "/data.vol",
                                   space::VolumeOptions{}, &setup.volume);
  if (!s.ok()) Die("create volume", s);
  buffer::BufferPoolOptions options;
  options.pool_bytes = 2 * kPages * kPageBytes;
  s = buffer::BufferPool::Create(setup.volume.get(), options, &setup.pool);
  if (!s.ok()) Die("create pool", s);
  for (int i = 0; i < kPages; ++i) {
    buffer::PageHandle h;
    s = setup.pool->FixNew(PageType::kBtreeLeaf, &h);
    if (!s.ok()) Die("FixNew", s);
    setup.pages.push_back(h.page_id());
  }
  return setup;
}

void TearDown(Setup& setup) {
  setup.pool.reset();
  setup.volume.reset();
  std::error_code ec;
  std::filesystem::remove_all(setup.dir, ec);
}

// Runs `ops` Fix+Release on pseudo-random resident pages; returns seconds.
double HitLoop(buffer::BufferPool* pool, const std::vector<PageId>& pages, long ops,
               uint64_t seed) {
  uint64_t x = seed | 1;
  double t0 = NowSeconds();
  for (long i = 0; i < ops; ++i) {
    x ^= x << 13;  // xorshift: cheap, so the loop measures the pool
    x ^= x >> 7;
    x ^= x << 17;
    buffer::PageHandle h;
    Status s = pool->Fix(pages[x % pages.size()], threads::LatchMode::kShared, &h);
    if (!s.ok()) Die("Fix", s);
  }
  return NowSeconds() - t0;
}

double RunWorkers(Setup& setup, unsigned workers, long ops) {
  threads::RuntimeOptions options;
  options.workers = workers;
  std::unique_ptr<threads::Runtime> rt;
  Status s = threads::Runtime::Create(options, &rt);
  if (!s.ok()) Die("runtime", s);
  std::vector<double> seconds(workers);
  threads::WaitGroup wg;
  wg.Add(workers);
  for (unsigned w = 0; w < workers; ++w) {
    rt->Spawn(
        [&, w] {
          seconds[w] = HitLoop(setup.pool.get(), setup.pages, ops, 88172645463325252ull + w);
          wg.Done();
        },
        static_cast<int>(w));
  }
  wg.Wait();
  rt->Shutdown();
  double worst = 0;
  for (double x : seconds) worst = std::max(worst, x);
  return worst * 1e9 / double(ops);  // ns per op per worker
}

// Under callgrind: instrumentation is on only around the hit loop.
void InnerCallgrind(long ops) {
  Setup setup = MakeSetup();
  HitLoop(setup.pool.get(), setup.pages, 1000, 7);  // warm
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
  HitLoop(setup.pool.get(), setup.pages, ops, 7);
  CALLGRIND_STOP_INSTRUMENTATION;
  CALLGRIND_DUMP_STATS_AT("hit-loop");
  TearDown(setup);
}

// Runs this binary under callgrind and returns instructions per Fix+Release (or -1).
double CallgrindInstructions(const char* self, long ops) {
  char out_tmpl[] = "/tmp/sm-bufbench-cg-XXXXXX";
  int fd = mkstemp(out_tmpl);
  if (fd < 0) return -1;
  close(fd);
  std::string cmd =
      "valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=" + std::string(out_tmpl) +
      " " + self + " --inner-callgrind " + std::to_string(ops) + " >/dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  double per_op = -1;
  if (rc == 0) {
    // The dump named "hit-loop" is the part file with the largest totals; the simplest
    // reliable read is the "totals:" lines of every part: take the largest.
    std::string grep = "grep -h '^totals:' " + std::string(out_tmpl) + "* | awk '{print $2}'";
    FILE* p = popen(grep.c_str(), "r");
    double best = 0, v;
    while (p != nullptr && std::fscanf(p, "%lf", &v) == 1) best = std::max(best, v);
    if (p != nullptr) pclose(p);
    // The loop's own xorshift and call overhead are included: a few instructions per op.
    if (best > 0) per_op = best / double(ops);
  }
  std::string rm = "rm -f " + std::string(out_tmpl) + "*";
  (void)!std::system(rm.c_str());
  return per_op;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Buffer pool hit-path benchmark"};
  int repeat = 5;
  long ops = 2000000;
  long inner = 0;
  bool no_callgrind = false;
  app.add_option("--repeat", repeat, "runs per figure (median)")->check(CLI::PositiveNumber);
  app.add_option("--ops", ops, "Fix+Release per worker per run")->check(CLI::PositiveNumber);
  app.add_flag("--no-callgrind", no_callgrind, "skip the instruction count");
  app.add_option("--inner-callgrind", inner, "(internal) run the loop under callgrind");
  CLI11_PARSE(app, argc, argv);
  if (inner > 0) {
    InnerCallgrind(inner);
    return 0;
  }
  Setup setup = MakeSetup();
  std::vector<double> one, two;
  for (int r = 0; r < repeat; ++r) {
    one.push_back(RunWorkers(setup, 1, ops));
    two.push_back(RunWorkers(setup, 2, ops));
  }
  buffer::BufferPoolStats st = setup.pool->stats();
  TearDown(setup);
  double instr = no_callgrind ? -1 : CallgrindInstructions(argv[0], 100000);
  std::printf("bufferpool benchmark: %d resident pages, %d runs, median\n", kPages, repeat);
  std::printf("  fix+unfix (shared, hit), 1 worker     %7.1f ns   (target <= 40 ns)\n",
              Median(one));
  std::printf("  fix+unfix (shared, hit), 2 workers    %7.1f ns per op per worker\n", Median(two));
  if (instr > 0) {
    std::printf("  instructions per fix+unfix (callgrind) %6.0f\n", instr);
  } else {
    std::printf("  instructions per fix+unfix: not measured\n");
  }
  std::printf("  pool: %llu hits, %llu misses\n", (unsigned long long)st.hits,
              (unsigned long long)st.misses);
  sm::bench::PrintJsonLine({{"fix_unfix_ns", Median(one)},
                            {"fix_unfix_ns_2w", Median(two)},
                            {"fix_unfix_instructions", instr},
                            {"repeat", repeat}});
  return 0;
}
