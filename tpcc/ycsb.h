// A YCSB-like key-value workload over the engine adapter (tpcc/engine.h), so that the engines
// that run TPC-C can also be set side by side on YCSB's core workloads.
//
// Owns: the usertable's keys and values, the request distributions, the load, and the run
// (terminals, operation mix, statistics), with the checks every operation makes.
//
// Data: record n (0 <= n < records, loaded in order; workload E's inserts take the numbers
// after the largest present) has the key YcsbKey(n), its 8-byte big-endian number, so the keys
// compare with memcmp in number order in every engine and record n's neighbours are n - 1 and
// n + 1. Its value is kYcsbValueBytes bytes: the number and a version (8 bytes little-endian
// each), then bytes drawn from both; YcsbValueMatches recognises any version of record n.
//
// Operations, one per transaction: read (Get), update (Update of the whole value with a new
// version, without reading it first), scan (from a chosen record, 1..kYcsbMaxScan records,
// uniform length) and insert (a new record). Reads and scans run read committed: one
// operation is atomic at any level, and YCSB itself has no transactions. Updates and inserts
// run serializable, which for a transaction that writes one key and reads nothing means the
// same, and which every adapter gives to writers (LMDB's read-committed transactions are
// read-only snapshots).
//
// Checks, on every operation of a run: a read finds its record with a value of that record; an
// update or insert succeeds; a scan returns ascending keys that start at its first record, each
// with a value of its record, with consecutive numbers among the loaded records, and as many
// as it asked for unless the table ended. A failed check stops the run with Corruption.
//
// Request distributions: uniform over the loaded records, or YCSB's scrambled Zipfian
// (ScrambledZipfianGenerator): a Zipfian rank (theta 0.99) over 10^10 items, hashed with FNV-1a
// 64 and reduced modulo the record count, so the hot records are spread over the key space.
//
// Thread/fiber safety: the functions are called from a plain thread; the run's terminals are
// spawned on the engine's workers (Engine::Spawn), one worker's never at the same time.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sm/common/status.h"
#include "tpcc/driver.h"
#include "tpcc/engine.h"
#include "tpcc/random.h"

namespace sm::tpcc {

enum class YcsbWorkload : uint8_t { kA, kB, kC, kE };
enum class YcsbDistribution : uint8_t { kUniform, kZipfian };
inline constexpr std::array<YcsbWorkload, 4> kYcsbWorkloads = {YcsbWorkload::kA, YcsbWorkload::kB,
                                                               YcsbWorkload::kC, YcsbWorkload::kE};
inline constexpr std::array<YcsbDistribution, 2> kYcsbDistributions = {YcsbDistribution::kUniform,
                                                                       YcsbDistribution::kZipfian};
const char* YcsbWorkloadName(YcsbWorkload workload);              // "a"
const char* YcsbDistributionName(YcsbDistribution distribution);  // "uniform"
bool ParseYcsbWorkload(std::string_view text, YcsbWorkload* workload);
bool ParseYcsbDistribution(std::string_view text, YcsbDistribution* distribution);

enum class YcsbOp : uint8_t { kRead, kUpdate, kScan, kInsert };
inline constexpr int kYcsbOpCount = 4;
const char* YcsbOpName(YcsbOp op);
// The workload's share of each operation, in percent, in YcsbOp order: A 50/50/0/0,
// B 95/5/0/0, C 100/0/0/0, E 0/0/95/5.
std::array<uint32_t, kYcsbOpCount> YcsbMix(YcsbWorkload workload);

inline constexpr size_t kYcsbKeyBytes = 8;
inline constexpr size_t kYcsbValueBytes = 100;
inline constexpr uint32_t kYcsbMaxScan = 100;

std::string YcsbKey(uint64_t record);
// The number of a key of kYcsbKeyBytes bytes.
uint64_t YcsbRecordOf(std::string_view key);
void YcsbValue(uint64_t record, uint64_t version, std::string* value);
bool YcsbValueMatches(uint64_t record, std::string_view value);

// Draws record numbers in [0, records) by a request distribution.
class YcsbKeyChooser {
 public:
  YcsbKeyChooser(YcsbDistribution distribution, uint64_t records);
  uint64_t Next(Rng& rng);

 private:
  uint64_t ZipfianRank(Rng& rng) const;

  YcsbDistribution distribution_;
  uint64_t records_;
  double alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
};

// What a YCSB load left in the meta table (its own key, beside TPC-C's).
struct YcsbInfo {
  uint64_t records = 0;  // loaded; a run's inserts add to the table, not to this
};
// Opens the YCSB schema and reads its meta row; NotFound (saying to load first) if the
// database holds no completed YCSB load.
[[nodiscard]] Status OpenYcsb(Engine* engine, YcsbInfo* info);

struct YcsbLoadOptions {
  uint64_t records = 1'000'000;
  uint32_t batch = 1000;  // records per transaction
  double progress_interval_s = 1;
  std::function<void(uint64_t done, double seconds)> progress;  // may be empty
};
struct YcsbLoadResult {
  uint64_t records = 0;
  double seconds = 0;
  uint64_t retried_batches = 0;
};
// Creates the YCSB schema and loads it: each worker inserts a contiguous range of records in
// key order, in batches that commit without syncing; the meta row's commit is durable, and a
// checkpoint follows. A database that holds a load or part of one is refused.
[[nodiscard]] Status YcsbLoad(Engine* engine, const YcsbLoadOptions& options,
                              YcsbLoadResult* result);

struct YcsbRunOptions {
  YcsbWorkload workload = YcsbWorkload::kA;
  YcsbDistribution distribution = YcsbDistribution::kZipfian;
  uint32_t users = 1;  // terminals; terminal i runs on worker i % workers
  double duration_s = 10;
  double warmup_s = 0;
  uint64_t seed = 1;
  double interval_s = 1;                    // progress period; 0: none
  const std::atomic<bool>* stop = nullptr;  // as RunOptions::stop
};

struct YcsbRunResult {
  double measured_s = 0;
  uint64_t ops = 0;
  double ops_per_s = 0;
  LatencySummary latency;  // all operations
  std::array<uint64_t, kYcsbOpCount> ops_by_type{};
  std::array<LatencySummary, kYcsbOpCount> latency_by_type{};
  uint64_t retries = 0;          // attempts aborted as retryable (deadlock, timeout, conflict)
  uint64_t scanned_records = 0;  // by the measured scans
  unsigned workers = 0;
  bool interrupted = false;
};

struct YcsbProgress {
  double elapsed_s = 0;
  bool warming_up = false;
  double ops_per_s = 0;  // over the interval
  double p95_ms = 0;     // over the interval
};

[[nodiscard]] Status YcsbRun(Engine* engine, const YcsbInfo& info, const YcsbRunOptions& options,
                             const std::function<void(const YcsbProgress&)>& progress,
                             YcsbRunResult* result);

}  // namespace sm::tpcc
