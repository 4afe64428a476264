// What the `tpcc` driver's subcommands share: exit codes, the options every verb takes, opening
// the engine from them, the way verbs report, and the handling of SIGINT and SIGTERM. (Only the
// driver binary includes this; the sm_tpcc library knows nothing of it.)
//
// Output: with --output plain every line goes to stdout. With json (or csv, `tpcc run` only)
// stdout carries only the machine-readable result, so that `tpcc run --output json | jq`
// works, and the lines for people (Say) go to stderr.
//
// Signals (StartSignalThread): SIGINT and SIGTERM are blocked in every thread and taken by one
// thread with sigwait, so no engine thread is interrupted inside a system call. The first one
// during a run sets the run's stop flag (SetStopFlag); any other ends the process as the
// signal's default action would.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sm/common/status.h"
#include "sm/sm.h"
#include "tpcc/consistency.h"
#include "tpcc/driver.h"
#include "tpcc/schema.h"
#include "tpcc/sm_engine.h"

namespace sm::tpcc {

inline constexpr int kExitFailed = 1;  // the work ran and failed (or a check failed)
inline constexpr int kExitUsage = 2;   // bad options or an unknown verb; nothing was done
// The largest millisecond option: a day.
inline constexpr uint32_t kMaxMs = 86'400'000;
// The source revision the binary was built from ("unknown" outside git): git_revision.cc,
// which includes the header cmake/git_revision.cmake writes at every build.
const char* GitRevision();

struct CommonOptions {
  // Which engine: sm (ours, the default) or another embedded engine's adapter
  // (tpcc/engines/engines.h), whose database is the directory <db>/<engine>.
  std::string engine = "sm";
  std::string db = "./data/tpcc";
  uint32_t warehouses = 1;
  bool warehouses_given = false;
  unsigned workers = 0;  // 0: all cores
  std::string buffer_pool = "1G";
  std::string log_buffer = "8M";   // the log's in-memory ring
  std::string reserve_free = "0";  // free space the data file keeps at open
  uint32_t writer_interval_ms = 100;
  uint32_t writer_quiet_ms = 5000;
  std::string miss_interleaving = sm::MissInterleavingName(sm::Options().miss_interleaving);
  uint32_t checkpoint_interval_ms =  // the engine's defaults
      static_cast<uint32_t>(sm::Options().checkpoint_interval.count());
  double checkpoint_spread = sm::Options().checkpoint_spread;
  uint64_t lock_timeout_ms = 10000;  // the engine's default
  std::string commit = "durable";
  uint64_t seed = 1;
  std::string output = "plain";
  double interval_s = 1;
  std::string checks = "on";
  std::string read_for_update = "lock";
  // STEPS (run only).
  bool steps = false;
  bool steps_adaptive = false;  // --steps auto
  uint32_t team_size = 32;
  uint32_t max_pass_overs = sm::Options().steps_max_pass_overs;
  std::string ctx_placement;
  uint32_t load_fibers = 2;  // load only: loading fibers per worker
  bool ch = false;           // load only: also the CH-benCHmark tables
};

// Adds the options of CommonOptions to a verb.
void AddCommon(CLI::App* app, CommonOptions* o);

// A numeric option's range [lo, hi], which its error message names ("--users takes a number in
// 1..655350, not '0'"); CLI::Range's message reads less well for fractions.
template <typename T>
CLI::Validator NumberIn(T lo, T hi) {
  auto text = [](T v) {
    char buf[32];
    if constexpr (std::is_floating_point_v<T>) {
      std::snprintf(buf, sizeof buf, "%.15g", static_cast<double>(v));
    } else {
      std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    }
    return std::string(buf);
  };
  const std::string range = text(lo) + ".." + text(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& input) -> std::string {
        T value{};
        if (CLI::detail::lexical_cast(input, value) && value >= lo && value <= hi) return {};
        return "takes a number in " + range + ", not '" + input + "'";
      },
      "in " + range);
}

bool Json(const CommonOptions& o);
bool Csv(const CommonOptions& o);
// A line of progress or results for people: stdout with --output plain, else stderr.
void Say(const CommonOptions& o, const char* format, ...) __attribute__((format(printf, 2, 3)));
// The machine-readable result (--output json or csv) on stdout, flushed.
void Emit(const std::string& text);
// Prints the message; returns kExitUsage.
int UsageError(const std::string& message);
// Prints what failed (and a JSON error line with --output json); returns the exit code.
int Failure(const CommonOptions& o, const std::string& what, const Status& s);
// A count and an optional binary unit, in any case: "4096", "64K", "64KB", "64KiB", "512M",
// "2G", "1T". False for anything else, and for sizes beyond 2^64 - 1.
bool ParseBytes(std::string_view text, uint64_t* bytes);
std::string BytesText(uint64_t bytes);
// Validates the options every verb shares and opens the engine (creating the database if
// `create`; with `read_only`, sm::Options::read_only: no recovery and nothing written, for the
// verbs that only read); returns 0 or the exit code, having printed why. A read-only open of a
// database that needs recovery fails with kExitFailed and says how to recover it
// (`tpcc check --recover`).
int OpenEngine(const CommonOptions& o, bool create, std::unique_ptr<SmEngine>* engine,
               bool read_only = false);

// The directory of the database of o.engine: --db for sm, <db>/<engine> for another engine.
std::string EngineDirectory(const CommonOptions& o);
// OpenEngine for any --engine (load, run and check): ours, or another engine's adapter with
// the options that map onto it (the cache is --buffer-pool, the commit mode --commit).
int OpenAnyEngine(const CommonOptions& o, bool create, std::unique_ptr<Engine>* engine,
                  bool read_only = false);

// --prewarm: reads our database into the buffer pool, as far as it fits (Database::Prewarm),
// says how much and records it as out["prewarmed_pages"]; returns 0 or the exit code, having
// printed why (another engine has no such call), closing the engine on failure.
int Prewarm(const CommonOptions& o, Engine* engine, nlohmann::json* out);

// A latency summary as JSON (count, mean_ms, p50_ms, ..., max_ms).
nlohmann::json LatencyJson(const LatencySummary& l);

nlohmann::json ConditionsJson(const std::vector<ConditionResult>& results);

// Runs and prints the consistency conditions `conditions` ("when": before the run, ...); false
// if any failed, or if they could not run (*error set).
bool RunChecks(const CommonOptions& o, Engine* engine, const DatabaseInfo& info,
               const std::vector<int>& conditions, const char* when,
               std::vector<ConditionResult>* results, Status* error);

// Blocks SIGINT and SIGTERM and starts the thread that takes them (see the top). Call it before
// any other thread starts, so that every thread inherits the mask.
void StartSignalThread();
// The flag the next SIGINT or SIGTERM sets instead of ending the process (nullptr: none).
void SetStopFlag(std::atomic<bool>* flag);
// The signal that set the stop flag (0: none).
int StopSignal();
// Ends the process as `signal`'s default action does (exit status 128 + signal in a shell),
// after an interrupted run has reported: a shell script sees that its child was interrupted.
[[noreturn]] void ExitBySignal(int signal);

}  // namespace sm::tpcc
