// The TPC-C run: see driver.h.
#include "tpcc/driver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sm/common/assert.h"
#include "tpcc/inputs.h"
#include "tpcc/random.h"

namespace sm::tpcc {

// ---- Mix ---------------------------------------------------------------------------------------

Status Mix::Parse(std::string_view text, Mix* mix) {
  for (int t = 0; t < kTxnTypeCount; ++t) {
    std::string name = TxnTypeName(static_cast<TxnType>(t));  // "new_order"
    std::string dashed = name, joined = name;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    joined.erase(std::remove(joined.begin(), joined.end(), '_'), joined.end());
    if (text == name || text == dashed || text == joined) {
      mix->weights.fill(0);
      mix->weights[t] = 1;
      return Status::OK();
    }
  }
  Mix parsed;
  size_t pos = 0;
  for (int t = 0; t < kTxnTypeCount; ++t) {
    size_t end = text.find(',', pos);
    std::string_view part = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    if (part.empty() || part.size() > 6 ||
        part.find_first_not_of("0123456789") != std::string_view::npos) {
      return Status::InvalidArgument(
          "--mix takes five weights (new_order,payment,order_status,delivery,stock_level), "
          "e.g. 45,43,4,4,4, or one transaction name (new_order, payment, order_status, "
          "delivery, stock_level), not '" + std::string(text) + "'");
    }
    parsed.weights[t] = static_cast<uint32_t>(std::stoul(std::string(part)));
    if ((end == std::string_view::npos) != (t == kTxnTypeCount - 1)) {
      return Status::InvalidArgument("--mix takes exactly five comma-separated weights, not '" +
                                     std::string(text) + "'");
    }
    pos = end + 1;
  }
  if (parsed.total() == 0) return Status::InvalidArgument("--mix: the weights are all zero");
  *mix = parsed;
  return Status::OK();
}

std::string Mix::ToString() const {
  std::string s;
  for (int t = 0; t < kTxnTypeCount; ++t) {
    if (t > 0) s += ",";
    s += std::to_string(weights[t]);
  }
  return s;
}

uint32_t Mix::total() const {
  uint32_t n = 0;
  for (uint32_t w : weights) n += w;
  return n;
}

namespace {

using Clock = std::chrono::steady_clock;

// One worker's statistics, written only by the fibers of that worker.
struct alignas(64) WorkerStats {
  std::array<Counter, kTxnTypeCount> completed, deadlocks, timeouts;
  Counter rolled_back, order_lines, remote_order_lines, remote_payments, payments_by_name,
      order_status_by_name, delivery_skipped;
  std::array<Histogram, kTxnTypeCount> latency;
};

// A plain copy of the statistics of all workers.
struct StatsSnapshot {
  std::array<uint64_t, kTxnTypeCount> completed{}, deadlocks{}, timeouts{};
  uint64_t rolled_back = 0, order_lines = 0, remote_order_lines = 0, remote_payments = 0,
           payments_by_name = 0, order_status_by_name = 0, delivery_skipped = 0;
  std::array<Histogram::Snapshot, kTxnTypeCount> latency;

  void Add(const WorkerStats& w) {
    for (int t = 0; t < kTxnTypeCount; ++t) {
      completed[t] += w.completed[t].Read();
      deadlocks[t] += w.deadlocks[t].Read();
      timeouts[t] += w.timeouts[t].Read();
      latency[t].Add(w.latency[t].Read());
    }
    rolled_back += w.rolled_back.Read();
    order_lines += w.order_lines.Read();
    remote_order_lines += w.remote_order_lines.Read();
    remote_payments += w.remote_payments.Read();
    payments_by_name += w.payments_by_name.Read();
    order_status_by_name += w.order_status_by_name.Read();
    delivery_skipped += w.delivery_skipped.Read();
  }
  StatsSnapshot Since(const StatsSnapshot& e) const {
    StatsSnapshot d = *this;
    for (int t = 0; t < kTxnTypeCount; ++t) {
      d.completed[t] -= e.completed[t];
      d.deadlocks[t] -= e.deadlocks[t];
      d.timeouts[t] -= e.timeouts[t];
      d.latency[t] = latency[t].Since(e.latency[t]);
    }
    d.rolled_back -= e.rolled_back;
    d.order_lines -= e.order_lines;
    d.remote_order_lines -= e.remote_order_lines;
    d.remote_payments -= e.remote_payments;
    d.payments_by_name -= e.payments_by_name;
    d.order_status_by_name -= e.order_status_by_name;
    d.delivery_skipped -= e.delivery_skipped;
    return d;
  }
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t c : completed) n += c;
    return n;
  }
  uint64_t aborts() const {
    uint64_t n = 0;
    for (int t = 0; t < kTxnTypeCount; ++t) n += deadlocks[t] + timeouts[t];
    return n;
  }
};

// Keying and mean think times of clause 5.2.5.7, in seconds, in TxnType order.
constexpr double kKeyingS[kTxnTypeCount] = {18, 3, 2, 2, 2};
constexpr double kThinkS[kTxnTypeCount] = {12, 12, 10, 5, 5};

enum class Phase : int { kWarmup, kMeasure, kStop };

class Terminal;
struct RunState;

// Re-spawns thinking terminals when their think time is up.
class ThinkTimer {
 public:
  explicit ThinkTimer(RunState* st) : st_(st) {}
  ~ThinkTimer() { Stop(); }
  void Start();
  // Schedules t to run again at `due`; finishes it at once if the timer has stopped.
  void Schedule(Clock::time_point due, Terminal* t);
  // Finishes every terminal still waiting and joins the thread.
  void Stop();

 private:
  struct Entry {
    Clock::time_point due;
    Terminal* terminal;
    bool operator>(const Entry& o) const { return due > o.due; }
  };
  void Main();

  RunState* const st_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                                                // GUARDED_BY(mu_)
  std::thread thread_;
};

struct RunState {
  Engine* engine = nullptr;
  const DatabaseInfo* info = nullptr;
  const RunOptions* options = nullptr;
  std::atomic<Phase> phase{Phase::kWarmup};  // relaxed: terminals only need to notice soon
  std::vector<std::unique_ptr<WorkerStats>> stats;
  std::vector<std::unique_ptr<Terminal>> terminals;
  std::unique_ptr<ThinkTimer> timer;

  std::mutex mu;  // never held across a suspension
  std::condition_variable cv;
  uint32_t finished = 0;                        // GUARDED_BY(mu)
  Status error;                                 // GUARDED_BY(mu)
  Clock::time_point window_open, window_close;  // count mode; GUARDED_BY(mu)

  // Count mode: transactions started and ended (warm-up included); relaxed, as every
  // decision on them is made by the one fiber whose increment crosses the edge.
  std::atomic<uint64_t> started{0}, ended{0};

  bool counting() const { return options->transactions > 0; }
  uint64_t total_transactions() const {
    return options->warmup_transactions + options->transactions;
  }
  bool stopping() const { return phase.load(std::memory_order_relaxed) == Phase::kStop; }
  void OpenWindow() {
    {
      std::lock_guard<std::mutex> guard(mu);
      window_open = Clock::now();
    }
    if (options->on_window) options->on_window(true);
  }
  void CloseWindow() {
    if (options->on_window) options->on_window(false);
    {
      // Under mu: Run checks stopping() under it before it waits, so the wake-up is not lost.
      std::lock_guard<std::mutex> guard(mu);
      window_close = Clock::now();
      phase.store(Phase::kStop, std::memory_order_relaxed);
    }
    cv.notify_all();
  }
  void Fail(Status s) {
    {
      std::lock_guard<std::mutex> guard(mu);
      if (error.ok()) error = std::move(s);
    }
    s.PermitUnchecked();  // the first error ends the run; a later one only confirms it
    phase.store(Phase::kStop, std::memory_order_relaxed);
    cv.notify_all();
  }
  void TerminalFinished() {
    std::lock_guard<std::mutex> guard(mu);
    ++finished;
    cv.notify_all();
  }
};

class Terminal {
 public:
  Terminal(RunState* st, uint32_t index, const NuConstants& run_constants)
      : st_(st),
        w_(static_cast<uint16_t>(index % st->info->warehouses + 1)),
        d_(static_cast<uint8_t>((index / st->info->warehouses) % kDistrictsPerWarehouse + 1)),
        worker_(static_cast<int>(index % st->engine->workers())),
        gen_(*st->info, run_constants, DeriveSeed(st->options->seed, 1000 + index)),
        txn_(st->engine->NewTxn()) {
    for (int t = 0; t < kTxnTypeCount; ++t) {
      deck_.insert(deck_.end(), st->options->mix.weights[t], static_cast<TxnType>(t));
    }
    next_card_ = deck_.size();
    next_type_ = NextType();
  }

  int worker() const { return worker_; }
  // Runs the terminal on a fiber of its worker. A terminal that gets none (a resource limit,
  // such as the count of fiber stacks: the message names it) stops the run with that error.
  void Spawn() {
    Status s = st_->engine->Spawn([this] { Loop(); }, worker_);
    if (!s.ok()) NotStarted(std::move(s));
  }
  void NotStarted(Status why) {
    st_->Fail(std::move(why));
    Finish();
  }

  // Runs transactions until the run stops (the terminal is finished) or it has to think (the
  // timer spawns it again).
  void Loop() {
    WorkerStats& stats = *st_->stats[worker_];
    while (!st_->stopping()) {
      TxnType type = next_type_;
      bool measured = true;
      if (st_->counting()) {
        uint64_t number = st_->started.fetch_add(1, std::memory_order_relaxed);
        if (number >= st_->total_transactions()) break;
        if (number == st_->options->warmup_transactions) st_->OpenWindow();
        measured = number >= st_->options->warmup_transactions;
      }
      Status s = RunOne(type, stats, measured);
      if (!s.ok()) {
        st_->Fail(std::move(s));
        break;
      }
      if (st_->counting() &&
          st_->ended.fetch_add(1, std::memory_order_relaxed) + 1 == st_->total_transactions()) {
        st_->CloseWindow();
      }
      next_type_ = NextType();
      double delay_s = ThinkSeconds(type, next_type_);
      if (delay_s > 0 && !st_->stopping()) {
        auto due = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(delay_s));
        st_->timer->Schedule(due, this);
        return;
      }
    }
    txn_.reset();  // before the run ends: the engine may be closed right after
    st_->TerminalFinished();
  }

  void Finish() {
    txn_.reset();
    st_->TerminalFinished();
  }

 private:
  TxnType NextType() {
    if (next_card_ == deck_.size()) {
      for (size_t i = deck_.size() - 1; i > 0; --i) {
        std::swap(deck_[i], deck_[static_cast<size_t>(gen_.rng().Uniform(0, static_cast<int64_t>(i)))]);
      }
      next_card_ = 0;
    }
    return deck_[next_card_++];
  }

  double ThinkSeconds(TxnType done, TxnType next) {
    const RunOptions& o = *st_->options;
    if (o.spec_think_times) {
      return gen_.rng().Exponential(kThinkS[static_cast<int>(done)]) +
             kKeyingS[static_cast<int>(next)];
    }
    return o.think_time_s > 0 ? gen_.rng().Exponential(o.think_time_s) : 0;
  }

  // Runs fn until it completes; counts retryable aborts. OK with *stopped when the run ended
  // during the retries.
  template <typename Fn>
  Status Attempt(TxnType type, WorkerStats& stats, Fn&& fn, bool* stopped) {
    *stopped = false;
    for (;;) {
      Status s = fn();
      if (s.ok()) return s;
      if (s.IsDeadlock()) {
        stats.deadlocks[static_cast<int>(type)].Add();
      } else if (s.IsLockTimeout()) {
        stats.timeouts[static_cast<int>(type)].Add();
      } else {
        return s;
      }
      if (st_->stopping()) {
        *stopped = true;
        return Status::OK();
      }
    }
  }

  // measured: in count mode, whether this transaction is one of the measured ones.
  Status RunOne(TxnType type, WorkerStats& stats, bool measured) {
    const auto start = Clock::now();
    const int64_t now_us = NowMicros();
    bool stopped = false;
    switch (type) {
      case TxnType::kNewOrder:
        gen_.NewOrder(w_, now_us, &new_order_);
        SM_TRY(Attempt(type, stats,
                       [&] {
                         return NewOrder(txn_.get(), new_order_, &new_order_out_,
                                         st_->options->access_order);
                       },
                       &stopped));
        if (!stopped && !new_order_out_.rolled_back && st_->options->new_order_committed) {
          st_->options->new_order_committed(new_order_, new_order_out_);
        }
        break;
      case TxnType::kPayment:
        gen_.Payment(w_, now_us, &payment_);
        SM_TRY(Attempt(type, stats,
                       [&] {
                         return Payment(txn_.get(), payment_, &payment_out_,
                                        st_->options->access_order, st_->options->ytd_write);
                       },
                       &stopped));
        break;
      case TxnType::kOrderStatus:
        gen_.OrderStatus(w_, &order_status_);
        SM_TRY(Attempt(type, stats,
                       [&] { return OrderStatus(txn_.get(), order_status_, &order_status_out_); },
                       &stopped));
        break;
      case TxnType::kDelivery:
        gen_.Delivery(w_, now_us, &delivery_);
        SM_TRY(Attempt(type, stats, [&] { return Delivery(txn_.get(), delivery_, &delivery_out_); },
                       &stopped));
        break;
      case TxnType::kStockLevel:
        gen_.StockLevel(w_, d_, &stock_level_);
        SM_TRY(Attempt(type, stats,
                       [&] { return StockLevel(txn_.get(), stock_level_, &stock_level_out_); },
                       &stopped));
        break;
    }
    if (st_->counting()) {
      if (!measured) return Status::OK();  // a warm-up transaction
    } else if (stopped || st_->stopping()) {
      return Status::OK();  // ended after the window: not counted
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
    const int t = static_cast<int>(type);
    stats.latency[t].Record(static_cast<uint64_t>(ns.count()));
    stats.completed[t].Add();
    Audit(type, stats);
    return Status::OK();
  }

  // The figures of clause 9.2.2.5.
  void Audit(TxnType type, WorkerStats& stats) {
    switch (type) {
      case TxnType::kNewOrder:
        if (new_order_out_.rolled_back) stats.rolled_back.Add();
        stats.order_lines.Add(new_order_.ol_cnt);
        for (int i = 0; i < new_order_.ol_cnt; ++i) {
          if (new_order_.lines[i].supply_w_id != w_) stats.remote_order_lines.Add();
        }
        break;
      case TxnType::kPayment:
        if (payment_.c_w != w_) stats.remote_payments.Add();
        if (payment_.by_name) stats.payments_by_name.Add();
        break;
      case TxnType::kOrderStatus:
        if (order_status_.by_name) stats.order_status_by_name.Add();
        break;
      case TxnType::kDelivery:
        stats.delivery_skipped.Add(static_cast<uint64_t>(delivery_out_.skipped));
        break;
      case TxnType::kStockLevel:
        break;
    }
  }

  RunState* const st_;
  const uint16_t w_;
  const uint8_t d_;
  const int worker_;
  InputGenerator gen_;
  std::unique_ptr<EngineTxn> txn_;
  std::vector<TxnType> deck_;
  size_t next_card_ = 0;
  TxnType next_type_ = TxnType::kNewOrder;

  NewOrderInput new_order_;
  NewOrderOutput new_order_out_;
  PaymentInput payment_;
  PaymentOutput payment_out_;
  OrderStatusInput order_status_;
  OrderStatusOutput order_status_out_;
  DeliveryInput delivery_;
  DeliveryOutput delivery_out_;
  StockLevelInput stock_level_;
  StockLevelOutput stock_level_out_;
};

void ThinkTimer::Start() { thread_ = std::thread([this] { Main(); }); }

void ThinkTimer::Schedule(Clock::time_point due, Terminal* t) {
  {
    std::lock_guard<std::mutex> guard(mu_);
    if (!stopping_) {
      queue_.push(Entry{due, t});
      cv_.notify_one();
      return;
    }
  }
  t->Finish();
}

void ThinkTimer::Stop() {
  std::vector<Terminal*> waiting;
  {
    std::lock_guard<std::mutex> guard(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    while (!queue_.empty()) {
      waiting.push_back(queue_.top().terminal);
      queue_.pop();
    }
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  for (Terminal* t : waiting) t->Finish();
}

void ThinkTimer::Main() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    Entry next = queue_.top();
    if (Clock::now() < next.due) {
      cv_.wait_until(lock, next.due);
      continue;
    }
    queue_.pop();
    lock.unlock();
    next.terminal->Spawn();
    lock.lock();
  }
}

}  // namespace

LatencySummary Summarize(const Histogram::Snapshot& h) {
  constexpr double kMs = 1e-6;
  LatencySummary s;
  if (h.count == 0) return s;
  s.count = h.count;
  s.mean_ms = h.Mean() * kMs;
  s.p50_ms = static_cast<double>(h.Quantile(0.50)) * kMs;
  s.p90_ms = static_cast<double>(h.Quantile(0.90)) * kMs;
  s.p95_ms = static_cast<double>(h.Quantile(0.95)) * kMs;
  s.p99_ms = static_cast<double>(h.Quantile(0.99)) * kMs;
  s.max_ms = static_cast<double>(h.max) * kMs;
  return s;
}

namespace {

StatsSnapshot ReadStats(const RunState& st) {
  StatsSnapshot s;
  for (const auto& w : st.stats) s.Add(*w);
  return s;
}

Histogram::Snapshot AllTypes(const StatsSnapshot& s) {
  Histogram::Snapshot h;
  for (const auto& t : s.latency) h.Add(t);
  return h;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

void Fill(const StatsSnapshot& s, double seconds, RunResult* r) {
  r->measured_s = seconds;
  r->completed = s.total();
  r->tx_per_s = seconds > 0 ? static_cast<double>(r->completed) / seconds : 0;
  const int no = static_cast<int>(TxnType::kNewOrder);
  r->nopm = seconds > 0 ? static_cast<double>(s.completed[no]) * 60.0 / seconds : 0;
  for (int t = 0; t < kTxnTypeCount; ++t) {
    TypeResult& tr = r->types[t];
    tr.completed = s.completed[t];
    tr.deadlock_retries = s.deadlocks[t];
    tr.lock_timeout_retries = s.timeouts[t];
    tr.latency = Summarize(s.latency[t]);
    r->deadlock_retries += s.deadlocks[t];
    r->lock_timeout_retries += s.timeouts[t];
    r->mix_percent[t] = Percent(s.completed[t], r->completed);
  }
  r->types[no].rolled_back = s.rolled_back;
  r->latency = Summarize(AllTypes(s));
  r->new_order_rollback_percent = Percent(s.rolled_back, s.completed[no]);
  r->order_lines_per_order =
      s.completed[no] == 0 ? 0 : static_cast<double>(s.order_lines) / s.completed[no];
  r->remote_order_line_percent = Percent(s.remote_order_lines, s.order_lines);
  const int p = static_cast<int>(TxnType::kPayment);
  r->remote_payment_percent = Percent(s.remote_payments, s.completed[p]);
  r->payment_by_name_percent = Percent(s.payments_by_name, s.completed[p]);
  r->order_status_by_name_percent =
      Percent(s.order_status_by_name, s.completed[static_cast<int>(TxnType::kOrderStatus)]);
  r->delivery_skipped_districts = s.delivery_skipped;
}

// The progress figures of one interval [from, now) whose statistics are `interval`.
RunProgress Progress(const StatsSnapshot& interval, Clock::time_point start, Clock::time_point from,
                     Clock::time_point now, bool warming_up, uint64_t measured_completed) {
  RunProgress p;
  p.elapsed_s = std::chrono::duration<double>(now - start).count();
  p.interval_s = std::chrono::duration<double>(now - from).count();
  SM_DASSERT(p.interval_s >= 0);
  p.warming_up = warming_up;
  p.tx_per_s = p.interval_s > 0 ? static_cast<double>(interval.total()) / p.interval_s : 0;
  p.completed = interval.completed;
  p.aborts = interval.aborts();
  p.latency = Summarize(AllTypes(interval));
  p.latency.max_ms = 0;  // the snapshot's max is the run's so far (Histogram::Snapshot::Since)
  p.measured_completed = measured_completed;
  return p;
}

EngineStats Delta(const EngineStats& after, const EngineStats& before) {
  EngineStats d = after;
  d.lock_requests -= before.lock_requests;
  d.lock_waits -= before.lock_waits;
  d.deadlocks -= before.deadlocks;
  d.lock_timeouts -= before.lock_timeouts;
  d.pool_hits -= before.pool_hits;
  d.pool_hinted_hits -= before.pool_hinted_hits;
  d.pool_misses -= before.pool_misses;
  d.pool_writes -= before.pool_writes;
  d.log_bytes -= before.log_bytes;
  d.log_syncs -= before.log_syncs;
  d.log_space_waits -= before.log_space_waits;
  d.txn_committed -= before.txn_committed;
  d.txn_aborted -= before.txn_aborted;
  d.checkpoints -= before.checkpoints;
  return d;  // pool_dirty_pages and commits_per_sync: as after the run
}

}  // namespace

Status Run(Engine* engine, const DatabaseInfo& info, const RunOptions& options,
           const RunProgressFn& progress, RunResult* result) {
  if (options.users == 0) return Status::InvalidArgument("--users must be at least 1");
  if (options.mix.total() == 0) return Status::InvalidArgument("the mix is empty");
  if (options.transactions == 0 && !(options.duration_s > 0)) {
    return Status::InvalidArgument("--duration must be positive");
  }
  if (options.transactions > 0 && options.warmup_s > 0) {
    return Status::InvalidArgument(
        "a run of a number of transactions warms up by number (--warmup-transactions), not by "
        "time (--warmup)");
  }
  if (options.warmup_s < 0 || options.think_time_s < 0 || options.interval_s < 0) {
    return Status::InvalidArgument("--warmup, --think-time and --interval must not be negative");
  }
  *result = RunResult();
  RunState st;
  st.engine = engine;
  st.info = &info;
  st.options = &options;
  for (unsigned w = 0; w < engine->workers(); ++w) st.stats.push_back(std::make_unique<WorkerStats>());
  Rng rng(DeriveSeed(options.seed, 999));
  const NuConstants run_constants = NuConstants::ForRun(info.load_constants, rng);
  for (uint32_t i = 0; i < options.users; ++i) {
    st.terminals.push_back(std::make_unique<Terminal>(&st, i, run_constants));
  }
  st.timer = std::make_unique<ThinkTimer>(&st);
  st.timer->Start();

  const EngineStats engine_before = engine->Stats();
  const auto start = Clock::now();
  const auto to_duration = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const auto warmup_end = start + to_duration(options.warmup_s);
  auto measure_end = options.transactions > 0 ? Clock::time_point::max()
                                              : warmup_end + to_duration(options.duration_s);
  if (options.warmup_s == 0) st.phase.store(Phase::kMeasure, std::memory_order_relaxed);
  // Each worker's terminals are spawned by one fiber on that worker, so all of them are
  // queued, in terminal order, before the first runs: every run starts the same way (counted
  // runs under callgrind repeat), whatever the timing between this thread and the workers.
  std::vector<std::vector<Terminal*>> by_worker(engine->workers());
  for (auto& t : st.terminals) by_worker[t->worker()].push_back(t.get());
  for (unsigned w = 0; w < by_worker.size(); ++w) {
    if (by_worker[w].empty()) continue;
    Status spawned = engine->Spawn(
        [terminals = by_worker[w]] {
          for (Terminal* t : terminals) t->Spawn();
        },
        static_cast<int>(w));
    if (!spawned.ok()) {
      for (Terminal* t : by_worker[w]) t->NotStarted(spawned);
    }
  }

  StatsSnapshot at_warmup_end;  // zero unless there is a warm-up
  StatsSnapshot previous;
  auto previous_tick = start;
  const auto interval = to_duration(options.interval_s > 0 ? options.interval_s : 1e9);
  auto next_tick = start + interval;
  bool interrupted = false;
  {
    std::unique_lock<std::mutex> lock(st.mu);
    for (;;) {
      auto now = Clock::now();
      interrupted = options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
      if (interrupted || !st.error.ok() || now >= measure_end || st.stopping()) break;
      if (st.phase.load(std::memory_order_relaxed) == Phase::kWarmup && now >= warmup_end) {
        lock.unlock();
        at_warmup_end = ReadStats(st);
        for (auto& w : st.stats) {
          for (Histogram& h : w->latency) h.ResetMax();
        }
        lock.lock();
        st.phase.store(Phase::kMeasure, std::memory_order_relaxed);
      }
      if (now >= next_tick && options.interval_s > 0 && progress) {
        lock.unlock();
        StatsSnapshot current = ReadStats(st);
        const bool warming_up = now < warmup_end;
        progress(Progress(current.Since(previous), start, previous_tick, now, warming_up,
                          warming_up ? 0 : current.Since(at_warmup_end).total()));
        previous = current;
        previous_tick = now;
        while (next_tick <= now) next_tick += interval;
        lock.lock();
      }
      auto wake = std::min(measure_end, next_tick);
      if (st.phase.load(std::memory_order_relaxed) == Phase::kWarmup) wake = std::min(wake, warmup_end);
      if (options.stop != nullptr) wake = std::min(wake, now + std::chrono::milliseconds(kStopPollMs));
      st.cv.wait_until(lock, wake);
    }
  }
  const bool stopped_in_warmup = st.phase.load(std::memory_order_relaxed) == Phase::kWarmup;
  const auto stopped_at = Clock::now();
  st.phase.store(Phase::kStop, std::memory_order_relaxed);
  st.timer->Stop();
  {
    std::unique_lock<std::mutex> lock(st.mu);
    st.cv.wait(lock, [&] { return st.finished == st.terminals.size(); });
  }
  if (!st.error.ok()) return st.error;
  // Every terminal has finished: the statistics are exact from here on.
  if (interrupted && stopped_in_warmup) at_warmup_end = ReadStats(st);  // nothing measured
  double measured_s = 0;
  if (options.transactions > 0) {
    // An interrupted count-mode window may have opened and not closed, or not even opened.
    const bool opened = st.window_open != Clock::time_point();
    const auto close = st.window_close != Clock::time_point() ? st.window_close : stopped_at;
    measured_s = opened ? std::chrono::duration<double>(close - st.window_open).count() : 0;
  } else if (!stopped_in_warmup) {
    measured_s = std::chrono::duration<double>(stopped_at - std::max(warmup_end, start)).count();
  }
  SM_ASSERT(measured_s >= 0);
  Fill(ReadStats(st).Since(at_warmup_end), measured_s, result);
  result->engine = Delta(engine->Stats(), engine_before);
  result->workers = engine->workers();
  result->interrupted = interrupted;
  SM_ASSERT(interrupted || options.transactions == 0 || result->completed == options.transactions);
  return Status::OK();
}

}  // namespace sm::tpcc
