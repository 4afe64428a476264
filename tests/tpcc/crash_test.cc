// Crash recovery with the consistency conditions as the oracle: a mixed run is cut off by a
// simulated crash (the log stops, unsynced writes are dropped or torn), Open recovers, and
// conditions 1-10 and 12 hold; the recovered database then runs again and still holds them.
#include <catch2/catch.hpp>

#include <random>

#include "sm/api/api_internal.h"
#include "tests/test_util.h"
#include "tests/tpcc/tpcc_test_util.h"
#include "tpcc/driver.h"

namespace sm::tpcc::test {
namespace {

// Loads, then `rounds` times: reopen (recovering), check, run, maybe checkpoint, crash.
void CrashRounds(uint64_t seed, int rounds) {
  std::mt19937_64 rng(seed);
  io::FaultInjectionFileSystem fs(seed);
  SmEngineOptions options = TestEngineOptions(&fs, /*workers=*/2);
  DatabaseInfo info;
  {
    std::unique_ptr<SmEngine> engine;
    REQUIRE(SmEngine::Open(options, &engine).ok());
    LoadOptions lo;
    lo.scale = Scale{1000, 300};
    lo.seed = seed;
    LoadResult loaded;
    REQUIRE(Load(engine.get(), lo, &loaded).ok());
    info = loaded.info;
    REQUIRE(engine->Close().ok());
  }
  for (int round = 0; round < rounds; ++round) {
    INFO("round " << round);
    std::unique_ptr<SmEngine> engine;
    sm::OpenReport report;
    Status s = SmEngine::Open(options, &engine, &report);
    INFO(s.ToString());
    REQUIRE(s.ok());
    if (round == 0) CHECK_FALSE(report.recovered);  // after a crash: whatever it had to do
    REQUIRE(OpenLoaded(engine.get(), 1, &info).ok());
    CHECK(FailedConditions(engine.get(), info, RunConditions()).empty());
    REQUIRE(engine->Verify().ok());

    RunOptions run;
    run.users = 8;
    run.duration_s = 0.3 + 0.1 * double(rng() % 4);
    run.seed = seed + round;
    RunResult result;
    Status ran = Run(engine.get(), info, run, nullptr, &result);
    INFO(ran.ToString());
    REQUIRE(ran.ok());
    CHECK(result.completed > 0);
    if (rng() % 2 == 0) REQUIRE(engine->Checkpoint().ok());
    static_cast<api::DatabaseImpl*>(engine->database())->TEST_Crash();
    engine.reset();
    fs.SimulateCrash(rng() % 2 == 0 ? io::CrashMode::kDropUnsynced : io::CrashMode::kTearUnsynced);
  }
  std::unique_ptr<SmEngine> engine;
  REQUIRE(SmEngine::Open(options, &engine).ok());
  REQUIRE(OpenLoaded(engine.get(), 1, &info).ok());
  CHECK(FailedConditions(engine.get(), info, RunConditions()).empty());
  REQUIRE(engine->Verify().ok());
  REQUIRE(engine->Close().ok());
}

TEST_CASE("the conditions hold after a crash in the middle of a run", "[crash][tpcc]") {
  CrashRounds(::sm::test::TestSeed("tpcc crash during a run"), 3);
}

// The same over twenty seeds (about a minute).
TEST_CASE("the conditions hold after many crashes in the middle of runs", "[crash][tpcc][.slow]") {
  const uint64_t seed = ::sm::test::TestSeed("tpcc crashes in the middle of runs");
  for (int i = 0; i < 20; ++i) CrashRounds(seed + i, 3);
}

}  // namespace
}  // namespace sm::tpcc::test
