// The YCSB-like workload: see ycsb.h.
#include "tpcc/ycsb.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "tpcc/histogram.h"

namespace sm::tpcc {

namespace {

using Clock = std::chrono::steady_clock;

// The meta row of a YCSB load: its format version and record count, little-endian.
constexpr std::string_view kYcsbMetaKey = "ycsb";
constexpr uint64_t kYcsbMetaVersion = 1;

// YCSB's ScrambledZipfianGenerator: theta, item count and that count's zeta, as YCSB fixes them.
constexpr double kZipfianTheta = 0.99;
constexpr double kZipfianItems = 1e10;
constexpr double kZipfianZetan = 26.46902820178302;

uint64_t SplitMix(uint64_t* x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of the number, then the absolute value of the
// result as a signed number.
uint64_t FnvHash64(uint64_t value) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; ++i) {
    hash ^= value & 0xff;
    hash *= 1099511628211ull;
    value >>= 8;
  }
  return static_cast<int64_t>(hash) < 0 ? ~hash + 1 : hash;
}

double UnitDouble(Rng& rng) { return static_cast<double>(rng.Next() >> 11) * 0x1.0p-53; }

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Runs `body` as one transaction: aborts it if body or the commit fails.
template <typename Body>
Status InTxn(EngineTxn* txn, TxnIsolation isolation, CommitKind kind, Body&& body) {
  Status s = txn->Begin(isolation);
  if (!s.ok()) return s;
  s = body();
  if (s.ok()) s = txn->Commit(kind);
  if (!s.ok() && txn->active()) txn->Abort().PermitUnchecked();  // s is the error to report
  return s;
}

// Runs `attempt` until it does not fail with a retryable status; *retries counts the others.
template <typename Attempt>
Status Retrying(Attempt&& attempt, uint64_t* retries) {
  for (;;) {
    Status s = attempt();
    if (!s.IsRetryable()) return s;
    ++*retries;
  }
}

Status ReadYcsbInfo(Engine* engine, YcsbInfo* info) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  std::string value;
  Status s = InTxn(txn.get(), TxnIsolation::kReadCommitted, CommitKind::kDefault,
                   [&] { return txn->Get(TableId::kMeta, kYcsbMetaKey, &value); });
  if (!s.ok()) return s;
  if (value.size() != 16 || Load64(value.data()) != kYcsbMetaVersion) {
    return Status::Corruption("the YCSB meta row is damaged or of another format: load again");
  }
  info->records = Load64(value.data() + 8);
  return Status::OK();
}

Status WriteYcsbInfo(Engine* engine, const YcsbInfo& info) {
  std::string value(16, '\0');
  std::memcpy(value.data(), &kYcsbMetaVersion, 8);
  std::memcpy(value.data() + 8, &info.records, 8);
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  return InTxn(txn.get(), TxnIsolation::kSerializable, CommitKind::kDurable,
               [&] { return txn->Insert(TableId::kMeta, kYcsbMetaKey, value); });
}

// The first (or with `reverse` the last) record of the usertable; NotFound if it is empty.
Status EdgeRecord(Engine* engine, bool reverse, uint64_t* record) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  bool found = false;
  Status s = InTxn(txn.get(), TxnIsolation::kReadCommitted, CommitKind::kDefault, [&] {
    return txn->Scan(TableId::kUsertable, {}, {}, reverse, [&](std::string_view key, auto) {
      found = key.size() == kYcsbKeyBytes;
      if (found) *record = YcsbRecordOf(key);
      return false;
    });
  });
  if (!s.ok()) return s;
  return found ? Status::OK() : Status::NotFound("the usertable is empty");
}

// What the loading workers share.
struct LoadState {
  std::atomic<uint64_t> done{0};     // records committed; relaxed: only progress reads it
  std::atomic<uint64_t> retried{0};  // relaxed: read after the workers finished
  std::mutex mu;
  std::condition_variable cv;
  unsigned finished = 0;  // GUARDED_BY(mu)
  Status error;           // GUARDED_BY(mu)

  void Finish(Status s) {
    {
      std::lock_guard<std::mutex> guard(mu);
      ++finished;
      if (error.ok()) error = std::move(s);
    }
    s.PermitUnchecked();  // the first error is the one reported
    cv.notify_all();
  }
};

Status LoadRange(Engine* engine, uint64_t lo, uint64_t hi, uint32_t batch, LoadState* state) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  std::string value;
  for (uint64_t begin = lo; begin < hi; begin += batch) {
    const uint64_t end = std::min<uint64_t>(hi, begin + batch);
    uint64_t retried = 0;
    Status s = Retrying(
        [&] {
          return InTxn(txn.get(), TxnIsolation::kSerializable, CommitKind::kBulk, [&] {
            for (uint64_t n = begin; n < end; ++n) {
              YcsbValue(n, 0, &value);
              Status i = txn->Insert(TableId::kUsertable, YcsbKey(n), value);
              if (!i.ok()) return i;
            }
            return Status::OK();
          });
        },
        &retried);
    state->retried.fetch_add(retried, std::memory_order_relaxed);
    if (!s.ok()) return s;
    state->done.fetch_add(end - begin, std::memory_order_relaxed);
  }
  return Status::OK();
}

// ---- the run ------------------------------------------------------------------------------

enum class Phase : int { kWarmup, kMeasure, kStop };

// One worker's statistics, written only by that worker's terminals.
struct alignas(64) YcsbWorkerStats {
  std::array<Histogram, kYcsbOpCount> latency;  // nanoseconds
  Counter retries, scanned;
};

struct YcsbSnapshot {
  std::array<Histogram::Snapshot, kYcsbOpCount> latency;
  uint64_t retries = 0, scanned = 0;

  Histogram::Snapshot All() const {
    Histogram::Snapshot all;
    for (const Histogram::Snapshot& h : latency) all.Add(h);
    return all;
  }
  YcsbSnapshot Since(const YcsbSnapshot& earlier) const {
    YcsbSnapshot d;
    for (int i = 0; i < kYcsbOpCount; ++i) d.latency[i] = latency[i].Since(earlier.latency[i]);
    d.retries = retries - earlier.retries;
    d.scanned = scanned - earlier.scanned;
    return d;
  }
};

struct YcsbRunState {
  Engine* engine = nullptr;
  const YcsbRunOptions* options = nullptr;
  uint64_t records = 0;                      // loaded: reads, updates and scans choose among them
  std::atomic<uint64_t> next_insert{0};      // the next insert's record; relaxed: a unique number
  std::atomic<Phase> phase{Phase::kWarmup};  // relaxed: terminals only need to notice soon
  std::vector<std::unique_ptr<YcsbWorkerStats>> stats;

  std::mutex mu;  // never held across a suspension
  std::condition_variable cv;
  uint32_t finished = 0;  // GUARDED_BY(mu)
  Status error;           // GUARDED_BY(mu)

  bool stopping() const { return phase.load(std::memory_order_relaxed) == Phase::kStop; }
  void Finish(Status s) {
    {
      std::lock_guard<std::mutex> guard(mu);
      ++finished;
      if (!s.ok()) phase.store(Phase::kStop, std::memory_order_relaxed);
      if (error.ok()) error = std::move(s);
    }
    s.PermitUnchecked();  // the first error ends the run; a later one only confirms it
    cv.notify_all();
  }
  YcsbSnapshot Read() const {
    YcsbSnapshot s;
    for (const auto& w : stats) {
      for (int i = 0; i < kYcsbOpCount; ++i) s.latency[i].Add(w->latency[i].Read());
      s.retries += w->retries.Read();
      s.scanned += w->scanned.Read();
    }
    return s;
  }
};

Status Mismatch(const char* what, uint64_t record) {
  return Status::Corruption(std::string("ycsb: ") + what + " (record " + std::to_string(record) +
                            ")");
}

class YcsbTerminal {
 public:
  YcsbTerminal(YcsbRunState* st, uint32_t index)
      : st_(st),
        worker_(static_cast<int>(index % st->engine->workers())),
        rng_(DeriveSeed(st->options->seed, 2000 + index)),
        chooser_(st->options->distribution, st->records),
        mix_(YcsbMix(st->options->workload)),
        txn_(st->engine->NewTxn()) {}

  void Spawn() {
    Status s = st_->engine->Spawn([this] { st_->Finish(Loop()); }, worker_);
    if (!s.ok()) st_->Finish(std::move(s));
  }

 private:
  Status Loop() {
    YcsbWorkerStats& stats = *st_->stats[worker_];
    Status s;
    while (s.ok() && !st_->stopping()) {
      const YcsbOp op = NextOp();
      const auto start = Clock::now();
      uint64_t retries = 0, scanned = 0;
      s = Retrying([&] { return Attempt(op, &scanned); }, &retries);
      if (s.ok() && !st_->stopping()) {
        stats.latency[static_cast<int>(op)].Record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
        stats.retries.Add(retries);
        stats.scanned.Add(scanned);
      }
    }
    txn_.reset();  // before the run ends: the engine may be closed right after
    return s;
  }

  YcsbOp NextOp() {
    auto draw = static_cast<uint32_t>(rng_.Uniform(0, 99));
    for (int i = 0; i < kYcsbOpCount; ++i) {
      if (draw < mix_[i]) return static_cast<YcsbOp>(i);
      draw -= mix_[i];
    }
    return YcsbOp::kRead;  // not reached: a mix adds up to 100
  }

  Status Attempt(YcsbOp op, uint64_t* scanned) {
    switch (op) {
      case YcsbOp::kRead:
        return Read(chooser_.Next(rng_));
      case YcsbOp::kUpdate:
        return Update(chooser_.Next(rng_));
      case YcsbOp::kScan:
        return Scan(chooser_.Next(rng_), static_cast<uint32_t>(rng_.Uniform(1, kYcsbMaxScan)),
                    scanned);
      case YcsbOp::kInsert:
        return Insert(st_->next_insert.fetch_add(1, std::memory_order_relaxed));
    }
    return Status::InvalidArgument("no such operation");
  }

  Status Read(uint64_t record) {
    Status s = InTxn(txn_.get(), TxnIsolation::kReadCommitted, CommitKind::kDefault, [&] {
      return txn_->Get(TableId::kUsertable, YcsbKey(record), txn_->value_buffer());
    });
    if (s.IsNotFound()) return Mismatch("a read found no record", record);
    if (!s.ok()) return s;
    return YcsbValueMatches(record, *txn_->value_buffer())
               ? Status::OK()
               : Mismatch("a read found another record's value", record);
  }

  Status Update(uint64_t record) {
    YcsbValue(record, rng_.Next(), &value_);
    Status s = InTxn(txn_.get(), TxnIsolation::kSerializable, CommitKind::kDefault,
                     [&] { return txn_->Update(TableId::kUsertable, YcsbKey(record), value_); });
    return s.IsNotFound() ? Mismatch("an update found no record", record) : s;
  }

  Status Insert(uint64_t record) {
    YcsbValue(record, 0, &value_);
    Status s = InTxn(txn_.get(), TxnIsolation::kSerializable, CommitKind::kDefault,
                     [&] { return txn_->Insert(TableId::kUsertable, YcsbKey(record), value_); });
    return s.IsDuplicate() ? Mismatch("an insert found its record there", record) : s;
  }

  Status Scan(uint64_t first, uint32_t length, uint64_t* scanned) {
    uint32_t count = 0;
    uint64_t previous = 0;
    const char* wrong = nullptr;
    Status s = InTxn(txn_.get(), TxnIsolation::kReadCommitted, CommitKind::kDefault, [&] {
      count = 0;
      wrong = nullptr;
      return txn_->Scan(TableId::kUsertable, YcsbKey(first), {}, false,
                        [&](std::string_view key, std::string_view value) {
                          wrong = CheckScanned(first, count, previous, key, value);
                          if (wrong != nullptr) return false;
                          previous = YcsbRecordOf(key);
                          return ++count < length;
                        });
    });
    if (!s.ok()) return s;
    if (wrong != nullptr) return Mismatch(wrong, first);
    if (count < std::min<uint64_t>(length, st_->records - first)) {
      return Mismatch("a scan returned fewer records than there are", first);
    }
    *scanned = count;
    return Status::OK();
  }

  // What is wrong with the scan's count-th row (0-based), or nullptr.
  const char* CheckScanned(uint64_t first, uint32_t count, uint64_t previous, std::string_view key,
                           std::string_view value) const {
    if (key.size() != kYcsbKeyBytes) return "a scan returned a key of the wrong size";
    const uint64_t n = YcsbRecordOf(key);
    if (count == 0 && n != first) return "a scan did not start at its first record";
    if (count > 0 && n <= previous) return "a scan's keys are not ascending";
    if (count > 0 && n < st_->records && n != previous + 1) return "a scan skipped a record";
    if (!YcsbValueMatches(n, value)) return "a scan returned another record's value";
    return nullptr;
  }

  YcsbRunState* const st_;
  const int worker_;
  Rng rng_;
  YcsbKeyChooser chooser_;
  const std::array<uint32_t, kYcsbOpCount> mix_;
  std::unique_ptr<EngineTxn> txn_;
  std::string value_;
};

void Fill(const YcsbSnapshot& s, double measured_s, YcsbRunResult* r) {
  r->measured_s = measured_s;
  const Histogram::Snapshot all = s.All();
  r->ops = all.count;
  r->ops_per_s = measured_s > 0 ? static_cast<double>(all.count) / measured_s : 0;
  r->latency = Summarize(all);
  for (int i = 0; i < kYcsbOpCount; ++i) {
    r->ops_by_type[i] = s.latency[i].count;
    r->latency_by_type[i] = Summarize(s.latency[i]);
  }
  r->retries = s.retries;
  r->scanned_records = s.scanned;
}

Status CheckRunOptions(const YcsbInfo& info, const YcsbRunOptions& options) {
  if (info.records == 0) return Status::InvalidArgument("the usertable holds no records");
  if (options.users == 0) return Status::InvalidArgument("--users must be at least 1");
  if (!(options.duration_s > 0)) return Status::InvalidArgument("--duration must be positive");
  if (options.warmup_s < 0 || options.interval_s < 0) {
    return Status::InvalidArgument("--warmup and --interval must not be negative");
  }
  return Status::OK();
}

}  // namespace

const char* YcsbWorkloadName(YcsbWorkload workload) {
  switch (workload) {
    case YcsbWorkload::kA:
      return "a";
    case YcsbWorkload::kB:
      return "b";
    case YcsbWorkload::kC:
      return "c";
    case YcsbWorkload::kE:
      return "e";
  }
  return "?";
}

const char* YcsbDistributionName(YcsbDistribution distribution) {
  return distribution == YcsbDistribution::kUniform ? "uniform" : "zipfian";
}

bool ParseYcsbWorkload(std::string_view text, YcsbWorkload* workload) {
  for (YcsbWorkload w : kYcsbWorkloads) {
    if (text == YcsbWorkloadName(w)) {
      *workload = w;
      return true;
    }
  }
  return false;
}

bool ParseYcsbDistribution(std::string_view text, YcsbDistribution* distribution) {
  for (YcsbDistribution d : kYcsbDistributions) {
    if (text == YcsbDistributionName(d)) {
      *distribution = d;
      return true;
    }
  }
  return false;
}

const char* YcsbOpName(YcsbOp op) {
  switch (op) {
    case YcsbOp::kRead:
      return "read";
    case YcsbOp::kUpdate:
      return "update";
    case YcsbOp::kScan:
      return "scan";
    case YcsbOp::kInsert:
      return "insert";
  }
  return "?";
}

std::array<uint32_t, kYcsbOpCount> YcsbMix(YcsbWorkload workload) {
  switch (workload) {
    case YcsbWorkload::kA:
      return {50, 50, 0, 0};
    case YcsbWorkload::kB:
      return {95, 5, 0, 0};
    case YcsbWorkload::kC:
      return {100, 0, 0, 0};
    case YcsbWorkload::kE:
      return {0, 0, 95, 5};
  }
  return {100, 0, 0, 0};
}

std::string YcsbKey(uint64_t record) {
  std::string key(kYcsbKeyBytes, '\0');
  for (size_t i = 0; i < kYcsbKeyBytes; ++i) {
    key[i] = static_cast<char>(record >> (8 * (kYcsbKeyBytes - 1 - i)));
  }
  return key;
}

uint64_t YcsbRecordOf(std::string_view key) {
  uint64_t record = 0;
  for (size_t i = 0; i < kYcsbKeyBytes; ++i) record = (record << 8) | static_cast<uint8_t>(key[i]);
  return record;
}

void YcsbValue(uint64_t record, uint64_t version, std::string* value) {
  value->resize(kYcsbValueBytes);
  char* p = value->data();
  std::memcpy(p, &record, 8);
  std::memcpy(p + 8, &version, 8);
  uint64_t state = record * 0x9E3779B97F4A7C15ull ^ version;
  for (size_t at = 16; at < kYcsbValueBytes; at += 8) {
    const uint64_t bytes = SplitMix(&state);
    std::memcpy(p + at, &bytes, std::min<size_t>(8, kYcsbValueBytes - at));
  }
}

bool YcsbValueMatches(uint64_t record, std::string_view value) {
  if (value.size() != kYcsbValueBytes || Load64(value.data()) != record) return false;
  uint64_t state = record * 0x9E3779B97F4A7C15ull ^ Load64(value.data() + 8);
  for (size_t at = 16; at < kYcsbValueBytes; at += 8) {
    const uint64_t bytes = SplitMix(&state);
    if (std::memcmp(value.data() + at, &bytes, std::min<size_t>(8, kYcsbValueBytes - at)) != 0) {
      return false;
    }
  }
  return true;
}

YcsbKeyChooser::YcsbKeyChooser(YcsbDistribution distribution, uint64_t records)
    : distribution_(distribution), records_(std::max<uint64_t>(records, 1)) {
  const double zeta2theta = 1 + std::pow(0.5, kZipfianTheta);
  alpha_ = 1 / (1 - kZipfianTheta);
  eta_ = (1 - std::pow(2 / kZipfianItems, 1 - kZipfianTheta)) / (1 - zeta2theta / kZipfianZetan);
  half_pow_theta_ = std::pow(0.5, kZipfianTheta);
}

uint64_t YcsbKeyChooser::ZipfianRank(Rng& rng) const {
  const double u = UnitDouble(rng);
  const double uz = u * kZipfianZetan;
  if (uz < 1) return 0;
  if (uz < 1 + half_pow_theta_) return 1;
  return static_cast<uint64_t>(kZipfianItems * std::pow(eta_ * u - eta_ + 1, alpha_));
}

uint64_t YcsbKeyChooser::Next(Rng& rng) {
  if (distribution_ == YcsbDistribution::kUniform) {
    return static_cast<uint64_t>(rng.Uniform(0, static_cast<int64_t>(records_ - 1)));
  }
  return FnvHash64(ZipfianRank(rng)) % records_;
}

Status OpenYcsb(Engine* engine, YcsbInfo* info) {
  bool created = false;
  Status s = engine->OpenSchema(Schema::kYcsb, /*create=*/false, &created);
  if (s.ok()) s = ReadYcsbInfo(engine, info);
  if (s.IsNotFound()) {
    return Status::NotFound(
        "the database holds no completed YCSB load: run `tpcc ycsb load` first");
  }
  return s;
}

Status YcsbLoad(Engine* engine, const YcsbLoadOptions& options, YcsbLoadResult* result) {
  if (options.records == 0 || options.batch == 0) {
    return Status::InvalidArgument("a YCSB load needs at least one record and batch");
  }
  bool created = false;
  SM_TRY(engine->OpenSchema(Schema::kYcsb, /*create=*/true, &created));
  YcsbInfo info;
  Status s = ReadYcsbInfo(engine, &info);
  if (s.ok()) {
    return Status::InvalidArgument("the database already holds a YCSB load of " +
                                   std::to_string(info.records) + " records");
  }
  if (!s.IsNotFound()) return s;
  uint64_t any = 0;
  s = EdgeRecord(engine, /*reverse=*/false, &any);
  if (s.ok()) {
    return Status::InvalidArgument(
        "the database holds part of a YCSB load that did not finish: remove it and load again");
  }
  if (!s.IsNotFound()) return s;

  const auto start = Clock::now();
  LoadState state;
  const unsigned workers = engine->workers();
  for (unsigned w = 0; w < workers; ++w) {
    const uint64_t lo = options.records * w / workers, hi = options.records * (w + 1) / workers;
    Status spawned = engine->Spawn(
        [&, lo, hi] { state.Finish(LoadRange(engine, lo, hi, options.batch, &state)); },
        static_cast<int>(w));
    if (!spawned.ok()) state.Finish(std::move(spawned));
  }
  const auto interval = std::chrono::duration<double>(
      options.progress_interval_s > 0 ? options.progress_interval_s : 1);
  {
    std::unique_lock<std::mutex> lock(state.mu);
    while (!state.cv.wait_for(lock, interval, [&] { return state.finished == workers; })) {
      if (!options.progress) continue;
      lock.unlock();
      options.progress(state.done.load(std::memory_order_relaxed),
                       std::chrono::duration<double>(Clock::now() - start).count());
      lock.lock();
    }
  }
  if (!state.error.ok()) return state.error;
  info.records = options.records;
  SM_TRY(WriteYcsbInfo(engine, info));
  SM_TRY(engine->Checkpoint());
  result->records = options.records;
  result->seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result->retried_batches = state.retried.load(std::memory_order_relaxed);
  return Status::OK();
}

Status YcsbRun(Engine* engine, const YcsbInfo& info, const YcsbRunOptions& options,
               const std::function<void(const YcsbProgress&)>& progress, YcsbRunResult* result) {
  SM_TRY(CheckRunOptions(info, options));
  *result = YcsbRunResult();
  YcsbRunState st;
  st.engine = engine;
  st.options = &options;
  st.records = info.records;
  uint64_t last = 0;
  SM_TRY(EdgeRecord(engine, /*reverse=*/true, &last));
  st.next_insert.store(last + 1, std::memory_order_relaxed);
  for (unsigned w = 0; w < engine->workers(); ++w) {
    st.stats.push_back(std::make_unique<YcsbWorkerStats>());
  }
  std::vector<std::unique_ptr<YcsbTerminal>> terminals;
  for (uint32_t i = 0; i < options.users; ++i) {
    terminals.push_back(std::make_unique<YcsbTerminal>(&st, i));
  }
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const auto start = Clock::now();
  const auto warmup_end = start + seconds(options.warmup_s);
  const auto measure_end = warmup_end + seconds(options.duration_s);
  const auto interval = seconds(options.interval_s > 0 ? options.interval_s : 1e9);
  if (options.warmup_s == 0) st.phase.store(Phase::kMeasure, std::memory_order_relaxed);
  for (auto& t : terminals) t->Spawn();

  YcsbSnapshot at_warmup_end, previous;
  auto next_tick = start + interval, previous_tick = start;
  bool interrupted = false;
  {
    std::unique_lock<std::mutex> lock(st.mu);
    for (;;) {
      const auto now = Clock::now();
      interrupted = options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
      if (interrupted || !st.error.ok() || now >= measure_end || st.stopping()) break;
      const bool warming_up = st.phase.load(std::memory_order_relaxed) == Phase::kWarmup;
      if (warming_up && now >= warmup_end) {
        lock.unlock();
        at_warmup_end = st.Read();
        lock.lock();
        st.phase.store(Phase::kMeasure, std::memory_order_relaxed);
      }
      if (now >= next_tick && options.interval_s > 0 && progress) {
        lock.unlock();
        const YcsbSnapshot current = st.Read();
        const Histogram::Snapshot interval_ops = current.All().Since(previous.All());
        const double span = std::chrono::duration<double>(now - previous_tick).count();
        progress(YcsbProgress{
            std::chrono::duration<double>(now - start).count(),
            now<warmup_end, span> 0 ? static_cast<double>(interval_ops.count) / span : 0,
            static_cast<double>(interval_ops.Quantile(0.95)) * 1e-6});
        previous = current;
        previous_tick = now;
        while (next_tick <= now) next_tick += interval;
        lock.lock();
      }
      auto wake = std::min(measure_end, next_tick);
      if (warming_up) wake = std::min(wake, warmup_end);
      wake = std::min(wake, now + std::chrono::milliseconds(kStopPollMs));
      st.cv.wait_until(lock, wake);
    }
  }
  const bool stopped_in_warmup = st.phase.load(std::memory_order_relaxed) == Phase::kWarmup;
  const auto stopped_at = Clock::now();
  st.phase.store(Phase::kStop, std::memory_order_relaxed);
  {
    std::unique_lock<std::mutex> lock(st.mu);
    st.cv.wait(lock, [&] { return st.finished == terminals.size(); });
  }
  if (!st.error.ok()) return st.error;
  if (stopped_in_warmup) at_warmup_end = st.Read();  // nothing measured
  const double measured_s =
      stopped_in_warmup ? 0 : std::chrono::duration<double>(stopped_at - warmup_end).count();
  Fill(st.Read().Since(at_warmup_end), measured_s, result);
  result->workers = engine->workers();
  result->interrupted = interrupted;
  return Status::OK();
}

}  // namespace sm::tpcc
