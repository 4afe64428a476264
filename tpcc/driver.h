// The TPC-C run: terminals on fibers, the transaction mix, think times, retries, statistics.
//
// Owns: the terminals and their assignment, the measurement window (warm-up, then the measured
// duration), the per-worker statistics and the RunResult.
//
// Terminals: `users` of them; terminal i has home warehouse i % W + 1, the fixed Stock-Level
// district (i / W) % 10 + 1 (clause 2.8.1.1), runs on worker i % workers (Engine::Spawn) and
// has its own input generator (seed derived from the run seed and i). It draws transaction
// types from a shuffled deck built from the mix weights (45,43,4,4,4 is a deck of 100 cards;
// each deck is reshuffled when used up), so every 100 transactions of a terminal follow the
// mix exactly, which keeps the minimum percentages of clause 5.2.3 without luck.
//
// One transaction: generate its input, then run it until it completes. A deadlock victim or a
// lock timeout is aborted (by the transaction function) and run again with the same input;
// each such abort is counted by cause. The response time is measured from the first attempt
// to the end of the last, and a completed New-Order that rolled back (the 1 % unused item)
// counts as completed, as the spec says. Any other error stops the run and is reported.
//
// Think time: none by default. With think_time_s > 0 every transaction is followed by a
// negative-exponential think time of that mean; with spec_think_times, by the keying and
// think times of clause 5.2.5 (keying 18/3/2/2/2 s, mean think 12/12/10/5/5 s). A terminal
// that thinks gives its fiber back: a timer thread spawns it again when the time is up, so a
// thinking terminal costs no worker time.
//
// Measurement: statistics are recorded only for transactions that end inside the measured
// window [warm-up end, warm-up end + duration), or in count mode (RunOptions::transactions) for
// the measured transactions by number. Each worker has its own counters and
// histograms, written only by that worker's fibers (which never run at the same time), read
// racily for the progress line and exactly after the run. A stop request (RunOptions::stop)
// closes the window early: a run stopped in its warm-up measured nothing (an empty result,
// not the warm-up's figures).
//
// Thread/fiber safety: Run is called from a plain thread, which it uses for the progress line.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/histogram.h"
#include "tpcc/schema.h"
#include "tpcc/transactions.h"

namespace sm::tpcc {

// Transaction weights in TxnType order.
struct Mix {
  std::array<uint32_t, kTxnTypeCount> weights{45, 43, 4, 4, 4};

  // "45,43,4,4,4" (five non-negative integers, not all zero) or one type name, e.g. "payment"
  // ("new_order", "new-order" and "neworder" all work).
  [[nodiscard]] static Status Parse(std::string_view text, Mix* mix);
  std::string ToString() const;  // "45,43,4,4,4"
  uint32_t total() const;
};

struct RunOptions {
  uint32_t users = 10;
  Mix mix;
  double duration_s = 10;
  double warmup_s = 0;
  double think_time_s = 0;        // mean think time after each transaction; 0: none
  bool spec_think_times = false;  // clause 5.2.5 keying and think times instead
  AccessOrder access_order = AccessOrder::kHotRowsLast;  // New-Order's and Payment's
  YtdWrite ytd_write = YtdWrite::kAdd;                    // Payment's W_YTD and D_YTD
  uint64_t seed = 1;
  double interval_s = 1;  // progress callback period; 0: none
  // Count mode (transactions > 0, instead of duration_s and warmup_s): the terminals together
  // run warmup_transactions, then `transactions` measured ones, then stop. Transactions are
  // numbered as they start; the window opens when number warmup_transactions starts and closes
  // when the last measured one completes, and on_window(true / false) is called there on the
  // fiber that crosses the edge (the instruction-cache harness toggles callgrind's collection).
  // Unlike a timed window this is the same work on every run, fast or slow (under valgrind).
  uint64_t transactions = 0;
  uint64_t warmup_transactions = 0;
  std::function<void(bool open)> on_window;
  // Called on the terminal's fiber right after a New-Order committed (its Commit returned OK;
  // not for the 1 % that roll back), in the warm-up and after the window too: every order the
  // engine acknowledged, for a caller that keeps a ledger of them (tpcc crash-test). The
  // worker runs nothing else while it runs, so it must be short. May be empty.
  std::function<void(const NewOrderInput&, const NewOrderOutput&)> new_order_committed;
  // When not null, polled by Run's thread every kStopPollMs: once it reads true the run ends
  // as if its time were up (the driver's Ctrl-C) and reports what it measured until then,
  // with RunResult::interrupted set. A flag, not a callback, so that a signal may set it.
  const std::atomic<bool>* stop = nullptr;
};

inline constexpr int kStopPollMs = 100;

struct LatencySummary {
  uint64_t count = 0;
  double mean_ms = 0, p50_ms = 0, p90_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
};

// One progress line's figures: over the interval since the previous line (a time series, not
// running totals), except where said.
struct RunProgress {
  double elapsed_s = 0;   // since the start, warm-up included
  double interval_s = 0;  // the interval's length
  bool warming_up = false;
  double tx_per_s = 0;
  std::array<uint64_t, kTxnTypeCount> completed{};
  uint64_t aborts = 0;  // deadlock victims and lock timeouts (each run again)
  // All types. max_ms is 0: a histogram's maximum cannot be taken over an interval.
  LatencySummary latency;
  uint64_t measured_completed = 0;  // since the measured window began (0 in the warm-up)
};

// The 90th-percentile response-time limits of clause 5.2.5.3, in seconds, in TxnType order.
// Delivery's 5 s bounds the queueing of a deferred Delivery; this driver runs Delivery in
// place (docs/design/tpcc.md), so its whole execution is held to the 5 s, not to the 80 s the
// clause gives a deferred execution to complete.
inline constexpr std::array<double, kTxnTypeCount> kP90LimitS = {5, 5, 5, 5, 20};

struct TypeResult {
  uint64_t completed = 0;
  uint64_t rolled_back = 0;            // New-Order only
  uint64_t deadlock_retries = 0;       // aborts as a deadlock victim, then run again
  uint64_t lock_timeout_retries = 0;   // aborts after a lock-wait timeout, then run again
  LatencySummary latency;
};

struct RunResult {
  double measured_s = 0;
  uint64_t completed = 0;
  double tx_per_s = 0;
  double nopm = 0;  // New-Orders (rolled back included) per minute
  std::array<TypeResult, kTxnTypeCount> types{};
  LatencySummary latency;  // all types
  uint64_t deadlock_retries = 0, lock_timeout_retries = 0;
  std::array<double, kTxnTypeCount> mix_percent{};  // of the completed transactions
  // Audit figures of clause 9.2.2.5 over what ran.
  double new_order_rollback_percent = 0;
  double order_lines_per_order = 0;
  double remote_order_line_percent = 0;
  double remote_payment_percent = 0;
  double payment_by_name_percent = 0;
  double order_status_by_name_percent = 0;
  uint64_t delivery_skipped_districts = 0;
  EngineStats engine;  // the engine's counters over the whole run (warm-up included)
  unsigned workers = 0;
  bool interrupted = false;  // ended early by RunOptions::stop
};

// A histogram of nanoseconds as milliseconds.
LatencySummary Summarize(const Histogram::Snapshot& h);

using RunProgressFn = std::function<void(const RunProgress&)>;

[[nodiscard]] Status Run(Engine* engine, const DatabaseInfo& info, const RunOptions& options,
                         const RunProgressFn& progress, RunResult* result);

}  // namespace sm::tpcc
