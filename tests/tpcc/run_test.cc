// Short runs of the mix through the driver: two workers, then the consistency conditions.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/tpcc/tpcc_test_util.h"
#include "threads/fiber.h"
#include "tpcc/driver.h"
#include "tpcc/keys.h"

namespace sm::tpcc::test {
namespace {

RunResult MustRun(TestDb& db, const RunOptions& options) {
  RunResult result;
  Status s = Run(db.engine.get(), db.info, options, nullptr, &result);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return result;
}

TEST_CASE("a mixed run on two workers keeps conditions 1-10 and 12", "[random][tpcc]") {
  const uint64_t seed = ::sm::test::TestSeed("tpcc mixed run");
  auto db = LoadTestDb(2, Scale{1000, 300}, seed, /*workers=*/2);
  REQUIRE(FailedConditions(db->engine.get(), db->info, AllConditions()).empty());
  RunOptions options;
  options.users = 12;
  // Longer under the sanitizers, which slow every transaction down, so that as many complete.
  options.duration_s = ::sm::test::kSanitized ? 10 : 1.5;
  options.seed = seed;
  RunResult r = MustRun(*db, options);
  INFO("completed " << r.completed << ", deadlock retries " << r.deadlock_retries
                    << ", lock timeouts " << r.lock_timeout_retries);
  CHECK(r.workers == 2);
  CHECK(r.completed > 100);
  for (int t = 0; t < kTxnTypeCount; ++t) {
    INFO(TxnTypeName(static_cast<TxnType>(t)));
    CHECK(r.types[t].completed > 0);
    CHECK(r.types[t].latency.count == r.types[t].completed);
    CHECK(r.types[t].latency.p50_ms <= r.types[t].latency.p99_ms);
    CHECK(r.types[t].latency.p99_ms <= r.types[t].latency.max_ms * 1.07);
  }
  // The deck deals 45 % New-Orders to every terminal; over the run that is close to exact.
  CHECK(r.mix_percent[0] > 40);
  CHECK(r.mix_percent[0] < 50);
  CHECK(r.nopm == Approx(r.types[0].completed * 60.0 / r.measured_s));
  CHECK(r.engine.lock_requests > 0);
  CHECK(FailedConditions(db->engine.get(), db->info, RunConditions()).empty());
  // Condition 11 holds only until the first Delivery.
  if (r.types[static_cast<int>(TxnType::kDelivery)].completed > 0) {
    CHECK(FailedConditions(db->engine.get(), db->info, {11}) == std::vector<int>{11});
  }
  REQUIRE(db->engine->Verify().ok());
}

// Every way of reading for update is correct; they differ in deadlocks (counted, retried).
TEST_CASE("each read-for-update mode keeps the conditions", "[random][tpcc]") {
  const uint64_t seed = ::sm::test::TestSeed("tpcc read-for-update modes");
  for (ReadForUpdate mode : {ReadForUpdate::kLock, ReadForUpdate::kPlain}) {
    INFO(ReadForUpdateName(mode));
    auto db = LoadTestDb(1, TinyScale(), seed, /*workers=*/2, 64u << 20, mode);
    RunOptions options;
    options.users = 6;
    options.duration_s = 0.4;
    options.seed = seed;
    RunResult r = MustRun(*db, options);
    CHECK(r.completed > 0);
    CHECK(FailedConditions(db->engine.get(), db->info, RunConditions()).empty());
  }
}

// As when more terminals are asked for than the kernel allows fiber stacks (vm.max_map_count).
TEST_CASE("a terminal that gets no fiber ends the run with the error naming the limit",
          "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 33, /*workers=*/2);
  RunOptions options;
  options.users = 8;
  options.duration_s = 60;  // the error ends it first
  // The first stack asked for, that of the fiber that starts one worker's terminals.
  threads::FiberStackAllocator::TEST_FailNextAllocations(1, /*guard_page=*/true, ENOMEM);
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  Status s = Run(db->engine.get(), db->info, options, nullptr, &result);
  INFO(s.ToString());
  CHECK(s.IsIOError());
  CHECK(s.ToString().find("vm.max_map_count") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  // The engine is as usable as before.
  options.duration_s = 0.2;
  CHECK(MustRun(*db, options).completed > 0);
  CHECK(FailedConditions(db->engine.get(), db->info, RunConditions()).empty());
}

TEST_CASE("single-transaction mixes, a warm-up and think times", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 31, /*workers=*/2);
  SECTION("payment only") {
    RunOptions options;
    REQUIRE(Mix::Parse("payment", &options.mix).ok());
    options.users = 4;
    options.duration_s = 0.3;
    options.warmup_s = 0.2;
    RunResult r = MustRun(*db, options);
    CHECK(r.types[1].completed == r.completed);
    CHECK(r.completed > 0);
    CHECK(r.measured_s == Approx(0.3).margin(0.1));
  }
  SECTION("delivery only: the new orders run out and districts are skipped") {
    RunOptions options;
    REQUIRE(Mix::Parse("delivery", &options.mix).ok());
    options.users = 2;
    options.duration_s = ::sm::test::kSanitized ? 4 : 0.5;
    RunResult r = MustRun(*db, options);
    CHECK(r.types[3].completed >= 9);
    CHECK(r.delivery_skipped_districts > 0);
  }
  SECTION("think time: a terminal waits between its transactions") {
    RunOptions options;
    options.users = 3;
    options.duration_s = 0.5;
    options.think_time_s = 0.05;
    RunResult r = MustRun(*db, options);
    // At most about 3 terminals x 0.5 s / 0.05 s; far below an unthrottled run.
    CHECK(r.completed > 3);
    CHECK(r.completed < 100);
  }
  SECTION("bad options") {
    RunOptions options;
    options.users = 0;
    RunResult r;
    CHECK(Run(db->engine.get(), db->info, options, nullptr, &r).IsInvalidArgument());
    options.users = 1;
    options.duration_s = 0;
    CHECK(Run(db->engine.get(), db->info, options, nullptr, &r).IsInvalidArgument());
  }
  CHECK(FailedConditions(db->engine.get(), db->info, RunConditions()).empty());
}

// The hook tpcc crash-test builds its ledger on: one call per committed New-Order, none for
// the rolled-back ones, each naming an order that is in the database as it was entered.
TEST_CASE("the run reports every committed New-Order", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 47, /*workers=*/2);
  struct Reported {
    uint16_t w;
    uint8_t d;
    uint32_t o_id, c_id;
    uint8_t ol_cnt;
    bool rolled_back;
  };
  std::mutex mu;
  std::vector<Reported> reported;
  RunOptions options;
  options.users = 4;
  options.duration_s = 0.3;
  // On the terminals' fibers on two workers: no Catch2 assertions there.
  options.new_order_committed = [&](const NewOrderInput& in, const NewOrderOutput& out) {
    std::lock_guard<std::mutex> guard(mu);
    reported.push_back({in.w, in.d, out.o_id, in.c, in.ol_cnt, out.rolled_back});
  };
  RunResult r = MustRun(*db, options);
  const uint64_t committed = r.types[0].completed - r.types[0].rolled_back;
  REQUIRE(committed > 0);
  // Also those that end after the measured window, which the counts leave out.
  CHECK(reported.size() >= committed);
  for (const Reported& o : reported) {
    INFO("w " << o.w << " d " << unsigned(o.d) << " o_id " << o.o_id);
    CHECK_FALSE(o.rolled_back);
    const std::string prefix = OrderKey(o.w, o.d, o.o_id);
    const auto order = MustRead<OrderRow>(db->engine.get(), TableId::kOrder, prefix);
    CHECK(order.c_id == o.c_id);
    CHECK(order.ol_cnt == o.ol_cnt);
    CHECK(CountRows(db->engine.get(), TableId::kOrderLine, prefix, PrefixEnd(prefix)) == o.ol_cnt);
  }
}

}  // namespace
}  // namespace sm::tpcc::test

namespace sm::tpcc::test {
namespace {

// The progress callback reports each interval's figures (a time series), not running totals:
// with no warm-up, the intervals' counts add up to the measured count so far.
TEST_CASE("progress reports each interval and not running totals", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 17, /*workers=*/2);
  RunOptions options;
  options.users = 4;
  options.duration_s = 1;
  options.interval_s = 0.2;
  std::vector<RunProgress> lines;
  RunResult r;
  Status s = Run(db->engine.get(), db->info, options,
                 [&](const RunProgress& p) { lines.push_back(p); }, &r);
  INFO(s.ToString());
  REQUIRE(s.ok());
  REQUIRE(lines.size() >= 2);
  uint64_t sum = 0;
  for (const RunProgress& p : lines) {
    CHECK_FALSE(p.warming_up);
    CHECK(p.interval_s > 0);
    CHECK(p.interval_s < 1);
    uint64_t interval_total = 0;
    for (uint64_t c : p.completed) interval_total += c;
    sum += interval_total;
    CHECK(p.measured_completed == sum);
    CHECK(p.tx_per_s == Approx(interval_total / p.interval_s));
    CHECK(p.latency.p50_ms <= p.latency.p90_ms);
    CHECK(p.latency.p90_ms <= p.latency.p95_ms);
  }
  CHECK(sum <= r.completed);
  CHECK_FALSE(r.interrupted);
}

// A stop request (the driver's Ctrl-C) ends the run at once, reporting what it measured.
TEST_CASE("a stop request ends a run early with what it measured", "[unit][tpcc]") {
  auto db = LoadTestDb(1, TinyScale(), 19, /*workers=*/2);
  std::atomic<bool> stop{false};
  RunOptions options;
  options.users = 4;
  options.stop = &stop;
  SECTION("measuring") {
    options.duration_s = 600;
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop.store(true);
    });
    RunResult r = MustRun(*db, options);
    stopper.join();
    CHECK(r.interrupted);
    CHECK(r.completed > 0);
    CHECK(r.measured_s < 60);
    CHECK(r.tx_per_s == Approx(r.completed / r.measured_s));
  }
  SECTION("in the warm-up: nothing was measured") {
    options.warmup_s = 600;
    options.duration_s = 1;
    stop.store(true);
    RunResult r = MustRun(*db, options);
    CHECK(r.interrupted);
    CHECK(r.completed == 0);
    CHECK(r.measured_s == 0);
  }
  SECTION("counting transactions") {
    options.transactions = 1'000'000'000;
    stop.store(true);
    RunResult r = MustRun(*db, options);
    CHECK(r.interrupted);
    CHECK(r.completed < options.transactions);
  }
  CHECK(FailedConditions(db->engine.get(), db->info, RunConditions()).empty());
}

// Clause 5.2.5.3's 90th-percentile limits, in TxnType order.
TEST_CASE("the response-time limits are the specification's", "[unit][tpcc]") {
  CHECK(kP90LimitS[static_cast<int>(TxnType::kNewOrder)] == 5);
  CHECK(kP90LimitS[static_cast<int>(TxnType::kPayment)] == 5);
  CHECK(kP90LimitS[static_cast<int>(TxnType::kOrderStatus)] == 5);
  CHECK(kP90LimitS[static_cast<int>(TxnType::kDelivery)] == 5);
  CHECK(kP90LimitS[static_cast<int>(TxnType::kStockLevel)] == 20);
}

}  // namespace
}  // namespace sm::tpcc::test
