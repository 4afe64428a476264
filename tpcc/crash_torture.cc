// tpcc crash-test: see crash_torture.h.
#include "tpcc/crash_torture.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tpcc/cli_common.h"
#include "tpcc/consistency.h"
#include "tpcc/driver.h"
#include "tpcc/keys.h"
#include "tpcc/loader.h"
#include "tpcc/random.h"
#include "tpcc/rows.h"
#include "tpcc/schema.h"
#include "tpcc/sm_engine.h"

namespace sm::tpcc {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kReportFd = 3;  // the child's end of the report pipe

// One acknowledged New-Order as the ledger holds it (and sends it to a child).
struct AckRecord {
  uint32_t o_id;
  uint32_t c_id;
  uint16_t w;
  uint8_t d;
  uint8_t ol_cnt;
};
static_assert(sizeof(AckRecord) == 12);
static_assert(std::has_unique_object_representations_v<AckRecord>, "no padding on the pipe");

struct LedgerHeader {
  uint64_t count;
  uint64_t verified;  // records [0, verified) were checked in full before
};

bool ParseScale(const std::string& name, Scale* scale) {
  if (name == "small") {
    *scale = Scale{1000, 300};  // the reduced scale of tests/tpcc
    return true;
  }
  if (name == "full") {
    *scale = Scale::Standard();
    return true;
  }
  return false;
}

std::string OrderText(const AckRecord& a) {
  char text[128];
  std::snprintf(text, sizeof text, "New-Order (w %u, d %u, o_id %u; c_id %u, %u lines)",
                unsigned(a.w), unsigned(a.d), a.o_id, a.c_id, unsigned(a.ol_cnt));
  return text;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// ---- the child -------------------------------------------------------------------------------

// The child's end of the report pipe. Line is called from terminal fibers on every worker: a
// line shorter than PIPE_BUF goes out in one write(2), which the kernel keeps whole.
class Reporter {
 public:
  void Line(std::string line) const {
    std::replace(line.begin(), line.end(), '\n', ' ');
    line.push_back('\n');
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(kReportFd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(kExitFailed);  // the parent is gone: nobody to report to
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  int Error(const std::string& what) const {
    std::fprintf(stderr, "tpcc crash-test-child: %s\n", what.c_str());
    Line("error " + what);
    return kExitFailed;
  }
};

// The ledger from stdin (see the file comment of crash_torture.h); empty input, no ledger.
Status ReadLedger(std::vector<AckRecord>* acks, uint64_t* verified) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("reading the ledger", errno);
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  acks->clear();
  *verified = 0;
  if (bytes.empty()) return Status::OK();
  LedgerHeader header;
  if (bytes.size() < sizeof header) {
    return Status::Corruption("the ledger is shorter than its header");
  }
  std::memcpy(&header, bytes.data(), sizeof header);
  if (bytes.size() != sizeof header + header.count * sizeof(AckRecord) ||
      header.verified > header.count) {
    return Status::Corruption("the ledger's size does not match its header");
  }
  acks->resize(header.count);
  if (header.count > 0) {
    std::memcpy(acks->data(), bytes.data() + sizeof header, header.count * sizeof(AckRecord));
  }
  *verified = header.verified;
  return Status::OK();
}

uint64_t PackOrder(uint16_t w, uint8_t d, uint32_t o_id) {
  return (uint64_t{w} << 40) | (uint64_t{d} << 32) | o_id;
}

// What the ledger check found: ledger indices with what is wrong.
struct LedgerCheck {
  std::vector<std::pair<uint64_t, std::string>> lost;        // no such order, or another one
  std::vector<std::pair<uint64_t, std::string>> incomplete;  // lines or NEW-ORDER disagree
};

// Checks one acknowledged order in full: O_OL_CNT ORDER-LINE rows, and a NEW-ORDER row exactly
// when the order is undelivered.
Status CheckOrderInFull(EngineTxn* txn, const AckRecord& a, const OrderRow& order,
                        std::string* problem) {
  const std::string prefix = OrderKey(a.w, a.d, a.o_id);
  uint64_t lines = 0;
  SM_TRY(txn->Scan(TableId::kOrderLine, prefix, PrefixEnd(prefix), false,
                   [&](std::string_view, std::string_view) {
                     ++lines;
                     return true;
                   }));
  std::string value;
  Status s = txn->Get(TableId::kNewOrder, NewOrderKey(a.w, a.d, a.o_id), &value);
  if (!s.ok() && !s.IsNotFound()) return s;
  const bool has_new_order = s.ok();
  problem->clear();
  if (lines != a.ol_cnt) {
    *problem = std::to_string(lines) + " ORDER-LINE rows, not " + std::to_string(a.ol_cnt);
  }
  if (has_new_order != (order.carrier_id == 0)) {
    if (!problem->empty()) *problem += "; ";
    *problem += has_new_order ? "a NEW-ORDER row although delivered (O_CARRIER_ID " +
                                    std::to_string(order.carrier_id) + ")"
                              : "no NEW-ORDER row although undelivered";
  }
  return Status::OK();
}

// The ledger's orders against the database: one scan of ORDER for all of them, the rest only
// for those from `verified` on.
Status CheckLedgerIn(EngineTxn* txn, const std::vector<AckRecord>& acks, uint64_t verified,
                     LedgerCheck* out) {
  struct Seen {
    OrderRow row{};
    bool present = false;
  };
  std::unordered_map<uint64_t, Seen> orders;
  orders.reserve(acks.size());
  for (const AckRecord& a : acks) orders.emplace(PackOrder(a.w, a.d, a.o_id), Seen{});
  Status bad_row;
  SM_TRY(
      txn->Scan(TableId::kOrder, {}, {}, false, [&](std::string_view key, std::string_view value) {
        KeyReader reader(key);
        uint16_t w = 0;
        uint8_t d = 0;
        uint32_t o_id = 0;
        if (!reader.U16(&w) || !reader.U8(&d) || !reader.U32(&o_id)) return true;
        auto it = orders.find(PackOrder(w, d, o_id));
        if (it == orders.end()) return true;
        if (!DecodeRow(value, &it->second.row)) {
          bad_row = Status::Corruption("tpcc.order: a row of the wrong size");
          return false;
        }
        it->second.present = true;
        return true;
      }));
  SM_TRY(bad_row);
  std::string problem;
  for (uint64_t i = 0; i < acks.size(); ++i) {
    const AckRecord& a = acks[i];
    const Seen& seen = orders[PackOrder(a.w, a.d, a.o_id)];
    if (!seen.present) {
      out->lost.emplace_back(i, "no ORDER row");
      continue;
    }
    if (seen.row.c_id != a.c_id || seen.row.ol_cnt != a.ol_cnt) {
      out->lost.emplace_back(i, "the ORDER row is another order (c_id " +
                                    std::to_string(seen.row.c_id) + ", " +
                                    std::to_string(seen.row.ol_cnt) + " lines)");
      continue;
    }
    if (i < verified) continue;
    SM_TRY(CheckOrderInFull(txn, a, seen.row, &problem));
    if (!problem.empty()) out->incomplete.emplace_back(i, problem);
  }
  return Status::OK();
}

Status CheckLedger(Engine* engine, const std::vector<AckRecord>& acks, uint64_t verified,
                   LedgerCheck* out) {
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  SM_TRY(txn->Begin(TxnIsolation::kReadCommitted));
  Status s = CheckLedgerIn(txn.get(), acks, verified, out);
  if (!s.ok()) {
    txn->Abort().PermitUnchecked();  // the check's error is the one to report
    return s;
  }
  return txn->Commit();
}

json Problems(const std::vector<std::pair<uint64_t, std::string>>& problems) {
  json out = json::array();
  for (const auto& [index, why] : problems) out.push_back({index, why});
  return out;
}

// The oracle after a recovery (the file comment of crash_torture.h), as the `verify` line's
// JSON: acks, acks_in_full, lost and incomplete ([ledger index, what]), failed_conditions
// ([{condition, detail}]), ledger_error, conditions_error, verify_error ("" when fine), seconds.
json CheckAfterRecovery(Engine* engine, const DatabaseInfo& info,
                        const std::vector<AckRecord>& acks, uint64_t verified, bool full_check) {
  const auto start = Clock::now();
  json out = {{"acks", acks.size()}, {"acks_in_full", acks.size() - verified}};
  LedgerCheck ledger;
  Status s = CheckLedger(engine, acks, verified, &ledger);
  out["ledger_error"] = s.ok() ? "" : s.ToString();
  out["lost"] = Problems(ledger.lost);
  out["incomplete"] = Problems(ledger.incomplete);
  out["ledger_ms"] = Ms(Clock::now() - start);

  const std::vector<int> conditions = full_check
                                          ? std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12}
                                          : std::vector<int>{1, 2, 3, 4};
  std::vector<ConditionResult> results;
  s = CheckConsistency(engine, info, conditions, &results);
  out["conditions_error"] = s.ok() ? "" : s.ToString();
  out["conditions_checked"] = conditions.size();
  json failed = json::array();
  for (const ConditionResult& r : results) {
    if (!r.passed) failed.push_back({{"condition", r.condition}, {"detail", r.detail}});
  }
  out["failed_conditions"] = failed;
  out["conditions_ms"] = Ms(Clock::now() - start) - out["ledger_ms"].get<double>();

  const auto verify_start = Clock::now();
  s = engine->Verify();
  out["verify_ms"] = Ms(Clock::now() - verify_start);
  out["verify_error"] = s.ok() ? "" : s.ToString();
  out["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

SmEngineOptions ChildEngineOptions(const CrashChildOptions& o) {
  SmEngineOptions e;
  e.db.path = o.db;
  e.db.create_if_missing = o.role == "load";
  e.db.buffer_pool_bytes = size_t{o.buffer_pool_mib} << 20;
  e.db.log_segment_bytes = 16u << 20;  // of a new database: segments come and go in a test
  e.db.commit_mode = CommitMode::kDurable;
  e.db.checkpoint_interval = std::chrono::milliseconds(o.checkpoint_ms);
  e.db.workers = o.workers;
  return e;
}

int OpenReporting(const CrashChildOptions& o, const Reporter& report,
                  std::unique_ptr<SmEngine>* engine) {
  report.Line("opening");
  const auto start = Clock::now();
  sm::OpenReport r;
  Status s = SmEngine::Open(ChildEngineOptions(o), engine, &r);
  if (!s.ok()) return report.Error("open: " + s.ToString());
  // No disk damage here: a tree Open could not walk, or a page in no tree that does not read
  // back, is a bug that kept pages (r.ToString() says which).
  if (!r.orphan_sweep_skipped.empty() || r.orphan_pages_damaged != 0) {
    return report.Error("open kept pages in no tree: " + r.ToString());
  }
  char line[192];
  std::snprintf(line, sizeof line, "opened %d %.3f %llu %llu %llu %llu", r.recovered ? 1 : 0,
                Ms(Clock::now() - start), static_cast<unsigned long long>(r.redo_records),
                static_cast<unsigned long long>(r.losers),
                static_cast<unsigned long long>(r.torn_pages_repaired),
                static_cast<unsigned long long>(r.orphan_pages_freed));
  report.Line(line);
  return 0;
}

int LoadRole(const CrashChildOptions& o, const Reporter& report) {
  Scale scale;
  if (!ParseScale(o.scale, &scale)) return report.Error("--scale takes small or full");
  std::unique_ptr<SmEngine> engine;
  if (int rc = OpenReporting(o, report, &engine); rc != 0) return rc;
  bool created = false;
  if (Status s = engine->OpenSchema(Schema::kTpcc, /*create=*/true, &created); !s.ok()) {
    return report.Error("schema: " + s.ToString());
  }
  DatabaseInfo info;
  Status s = ReadDatabaseInfo(engine.get(), &info);
  if (s.ok()) {
    report.Line("reused");
  } else if (!s.IsNotFound()) {
    return report.Error("reading the database: " + s.ToString());
  } else {
    LoadOptions lo;
    lo.scale = scale;
    lo.seed = o.seed;
    LoadResult result;
    if (Status l = Load(engine.get(), lo, &result); !l.ok()) {
      return report.Error("load: " + l.ToString());
    }
    char line[96];
    std::snprintf(line, sizeof line, "loaded %llu %.3f",
                  static_cast<unsigned long long>(result.rows), result.seconds);
    report.Line(line);
  }
  if (Status c = engine->Close(); !c.ok()) return report.Error("close: " + c.ToString());
  return 0;
}

int CycleRole(const CrashChildOptions& o, const Reporter& report) {
  std::vector<AckRecord> acks;
  uint64_t verified = 0;
  if (Status s = ReadLedger(&acks, &verified); !s.ok()) {
    return report.Error("ledger: " + s.ToString());
  }
  std::unique_ptr<SmEngine> engine;
  if (int rc = OpenReporting(o, report, &engine); rc != 0) return rc;
  DatabaseInfo info;
  if (Status s = OpenLoaded(engine.get(), 0, &info); !s.ok()) {
    return report.Error("after recovery: " + s.ToString());
  }
  report.Line("verify " +
              CheckAfterRecovery(engine.get(), info, acks, verified, o.full_check).dump());
  if (!o.run) {
    if (Status s = engine->Close(); !s.ok()) return report.Error("close: " + s.ToString());
    return 0;
  }
  if (Status s = RecordRunStart(engine.get(), &info); !s.ok()) {
    return report.Error("counting the run: " + s.ToString());
  }
  RunOptions run;
  run.users = 10 * info.warehouses;
  run.duration_s = 1e6;  // until killed
  run.seed = o.seed;
  run.interval_s = 0;
  run.new_order_committed = [&report](const NewOrderInput& in, const NewOrderOutput& out) {
    char line[96];
    std::snprintf(line, sizeof line, "ack %u %u %u %u %u", unsigned(in.w), unsigned(in.d), out.o_id,
                  in.c, unsigned(in.ol_cnt));
    report.Line(line);
  };
  report.Line("running");
  RunResult result;
  Status s = Run(engine.get(), info, run, nullptr, &result);
  return report.Error("the run ended before the kill: " + s.ToString());
}

// ---- the parent: children -------------------------------------------------------------------

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("writing to a child", errno);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

// One child process and what it said.
struct Child {
  pid_t pid = -1;
  int report_fd = -1;
  std::string pending;  // the start of a line not yet complete
  Clock::time_point started, opening_at, running_at, killed_at, last_line_at;
  std::optional<Clock::time_point> deadline;  // when to kill it
  bool opening = false, opened = false, verified = false, running = false;
  bool killed = false, hung = false;
  const char* killed_in = "";
  // From its `opened` line.
  bool recovered = false;
  double open_ms = 0;
  uint64_t redo_records = 0, losers = 0, torn_pages = 0;
  uint64_t orphan_pages = 0;  // pages in no tree that the open gave back
  uint64_t acks = 0;
  bool verify_failed = false;
  double check_ms = 0;
  std::string load_line, error;
  int wait_status = 0;
};

// Forks and execs this binary with `args`; `input` goes to its stdin, its fd 3 reports.
Status StartChild(const std::vector<std::string>& args, const std::string& input, Child* child) {
  int in[2], report[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Status::IOError("pipe", errno);
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Status::IOError("pipe", errno);
  }
  std::vector<char*> argv;
  static char kName[] = "tpcc";
  argv.push_back(kName);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    for (int fd : {in[0], in[1], report[0], report[1]}) ::close(fd);
    return Status::IOError("fork", error);
  }
  if (pid == 0) {
    // Async-signal-safe calls only until exec. dup2 clears O_CLOEXEC on the new descriptor;
    // one already in place keeps it, so clear it by hand.
    auto place = [](int fd, int target) {
      return fd == target ? ::fcntl(fd, F_SETFD, 0) == 0 : ::dup2(fd, target) == target;
    };
    if (!place(in[0], STDIN_FILENO) || !place(report[1], kReportFd)) ::_exit(127);
    ::signal(SIGPIPE, SIG_DFL);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(report[1]);
  child->pid = pid;
  child->report_fd = report[0];
  child->started = child->last_line_at = Clock::now();
  Status s = WriteAll(in[1], input);  // EPIPE if it died already: its exit status says why
  ::close(in[1]);
  return s;
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "status " + std::to_string(status);
}

// What the parent chose for one cycle; drawn from the seed in this order, every draw every time.
struct CyclePlan {
  unsigned workers = 1;
  uint32_t buffer_pool_mib = 64;
  uint32_t checkpoint_ms = 0;
  bool kill_in_recovery = false;
  double recovery_fraction = 0;  // where in the recovery time the parent expects it lands
  uint32_t kill_ms = 0;          // after `running`
  uint64_t seed = 0;
};

struct LedgerEntry {
  AckRecord ack;
  uint32_t cycle;  // in which it was acknowledged
};

struct Counts {
  uint32_t cycles = 0;
  uint64_t acknowledged = 0, lost = 0, incomplete = 0;
  uint64_t consistency_failures = 0, verify_failures = 0, check_errors = 0;
  uint64_t recovery_failures = 0, child_failures = 0;
  uint64_t verifications = 0;
  uint64_t reloads = 0;  // fresh databases after --reload-every cycles
  uint64_t kills_in_recovery = 0, kills_in_run = 0;
  uint64_t checkpoint_cycles = 0, recoveries = 0, redo_records = 0, losers = 0, torn_pages = 0;
  uint64_t orphan_pages = 0;
  double max_open_ms = 0, max_check_ms = 0;
  // What the checks found.
  uint64_t failures() const {
    return lost + incomplete + consistency_failures + verify_failures + check_errors;
  }
  bool failed() const { return failures() + recovery_failures + child_failures > 0; }
};

// ---- the parent: the loop --------------------------------------------------------------------

class CrashTorture {
 public:
  // `scratch`: db is a directory of our own, removed after a pass unless --keep.
  CrashTorture(const CrashTestOptions& o, uint64_t seed, std::string db, bool scratch,
               uint32_t kill_min_ms, uint32_t kill_max_ms)
      : o_(o),
        seed_(seed),
        db_(std::move(db)),
        scratch_(scratch),
        kill_min_ms_(kill_min_ms),
        kill_max_ms_(kill_max_ms),
        rng_(seed) {}

  // Loads if needed, runs the cycles and the last verification; the exit status.
  int Main();

 private:
  CyclePlan Plan();
  std::vector<std::string> ChildArgs(const char* role, const CyclePlan& plan, bool run) const;
  bool Load();
  void RunCycle(uint32_t cycle);
  void FinalVerification();
  bool Reload();
  void Supervise(Child* child, const CyclePlan& plan, uint32_t cycle);
  void Kill(Child* child);
  void OnLine(Child* child, const CyclePlan& plan, uint32_t cycle, std::string_view line);
  void OnVerify(Child* child, uint32_t cycle, std::string_view text);
  bool Ended(Child* child, uint32_t cycle, bool expect_kill);
  void PrintCycle(uint32_t cycle, const CyclePlan& plan, const Child& child) const;
  void Failure(uint32_t cycle, const std::string& what);
  std::string LedgerBytes();
  void AddPhantomAck(uint32_t cycle);
  std::string ReplayCommand() const;
  void PrintSummary(double seconds) const;
  json ResultJson(double seconds) const;

  const CrashTestOptions o_;
  const uint64_t seed_;
  const std::string db_;
  const bool scratch_;
  const uint32_t kill_min_ms_, kill_max_ms_;
  Rng rng_;
  std::vector<LedgerEntry> ledger_;
  uint64_t verified_ = 0;  // ledger_[0, verified_) were checked in full
  uint64_t sent_ = 0;      // the ledger size the current child was given
  double recovery_ms_estimate_ = 50;
  bool stop_ = false;
  bool loaded_here_ = false;  // db_ was loaded by this run (not reused), so Reload may drop it
  bool phantom_added_ = false;
  int consecutive_child_failures_ = 0;
  Counts n_;
};

CyclePlan CrashTorture::Plan() {
  CyclePlan p;
  const bool small = o_.scale == "small";
  p.workers = static_cast<unsigned>(1 + rng_.Uniform(0, 1));
  if (o_.workers != 0) p.workers = o_.workers;
  // A quarter of the cycles with a pool well below the database's size (10 MB small, 120 MB
  // full, and growing), so that fixers evict and write pages back.
  p.buffer_pool_mib = rng_.Uniform(0, 3) == 0 ? (small ? 4 : 32) : (small ? 64 : 256);
  // Half with background checkpoints every 10-150 ms, so that kills land inside them.
  const bool checkpoints = rng_.Uniform(0, 1) == 1;
  const auto interval = static_cast<uint32_t>(rng_.Uniform(10, 150));
  p.checkpoint_ms = checkpoints ? interval : 0;
  p.kill_in_recovery = rng_.Uniform(0, 99) < 15;
  p.recovery_fraction = static_cast<double>(rng_.Uniform(0, 999)) / 1000.0;
  p.kill_ms = static_cast<uint32_t>(rng_.Uniform(kill_min_ms_, kill_max_ms_));
  p.seed = rng_.Next();
  return p;
}

std::vector<std::string> CrashTorture::ChildArgs(const char* role, const CyclePlan& plan,
                                                 bool run) const {
  std::vector<std::string> args = {
      "crash-test-child", "--role", role, "--db", db_, "--parent-pid", std::to_string(::getpid())};
  auto add = [&args](const char* name, std::string value) {
    args.push_back(name);
    args.push_back(std::move(value));
  };
  add("--scale", o_.scale);
  add("--seed", std::to_string(plan.seed));
  add("--workers", std::to_string(plan.workers));
  add("--buffer-pool-mib", std::to_string(plan.buffer_pool_mib));
  add("--checkpoint-ms", std::to_string(plan.checkpoint_ms));
  if (run) args.push_back("--run");
  if (o_.full_check) args.push_back("--full-check");
  return args;
}

std::string CrashTorture::LedgerBytes() {
  LedgerHeader header{ledger_.size(), verified_};
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  bytes.reserve(sizeof header + ledger_.size() * sizeof(AckRecord));
  for (const LedgerEntry& e : ledger_) {
    bytes.append(reinterpret_cast<const char*>(&e.ack), sizeof e.ack);
  }
  sent_ = ledger_.size();
  return bytes;
}

void CrashTorture::Failure(uint32_t cycle, const std::string& what) {
  std::printf("cycle %u: FAILURE: %s\n", cycle, what.c_str());
  std::fflush(stdout);
}

void CrashTorture::Kill(Child* child) {
  if (child->killed) return;
  ::kill(child->pid, SIGKILL);
  child->killed = true;
  child->killed_at = Clock::now();
  child->killed_in = !child->opened ? "recovery" : !child->running ? "checks" : "run";
}

void CrashTorture::Supervise(Child* child, const CyclePlan& plan, uint32_t cycle) {
  // A child that says nothing for this long with no kill due is stuck.
  constexpr auto kHang = std::chrono::seconds(120);
  char buffer[1 << 16];
  for (;;) {
    const auto now = Clock::now();
    if (child->deadline && now >= *child->deadline) {
      child->deadline.reset();
      Kill(child);
    }
    if (!child->killed && !child->deadline && now - child->last_line_at > kHang) {
      child->hung = true;
      Kill(child);
    }
    int timeout_ms = 1000;
    if (child->deadline) {
      timeout_ms = static_cast<int>(std::clamp(Ms(*child->deadline - now) + 0.5, 0.0, 1000.0));
    }
    pollfd p{child->report_fd, POLLIN, 0};
    int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    ssize_t n = ::read(child->report_fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every copy of the write end is closed: the child is gone
    child->pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t end; (end = child->pending.find('\n', start)) != std::string::npos;
         start = end + 1) {
      child->last_line_at = Clock::now();
      OnLine(child, plan, cycle, std::string_view(child->pending).substr(start, end - start));
    }
    child->pending.erase(0, start);
  }
  ::close(child->report_fd);
  child->report_fd = -1;
  while (::waitpid(child->pid, &child->wait_status, 0) < 0 && errno == EINTR) {
  }
}

void CrashTorture::OnLine(Child* child, const CyclePlan& plan, uint32_t cycle,
                          std::string_view line) {
  const size_t space = line.find(' ');
  const std::string_view word = line.substr(0, space);
  const std::string rest(space == std::string_view::npos ? std::string_view()
                                                         : line.substr(space + 1));
  const auto now = Clock::now();
  if (word == "opening") {
    child->opening = true;
    child->opening_at = now;
    if (plan.kill_in_recovery && !child->killed) {
      child->deadline = now + std::chrono::microseconds(static_cast<int64_t>(
                                  plan.recovery_fraction * recovery_ms_estimate_ * 1000));
    }
  } else if (word == "opened") {
    int recovered = 0;
    unsigned long long redo = 0, losers = 0, torn = 0, orphans = 0;
    if (std::sscanf(rest.c_str(), "%d %lf %llu %llu %llu %llu", &recovered, &child->open_ms, &redo,
                    &losers, &torn, &orphans) != 6) {
      child->error = "a malformed line: " + std::string(line);
      return;
    }
    child->opened = true;
    child->recovered = recovered != 0;
    child->redo_records = redo;
    child->losers = losers;
    child->torn_pages = torn;
    child->orphan_pages = orphans;
    recovery_ms_estimate_ = std::max(1.0, Ms(now - child->opening_at));
    if (plan.kill_in_recovery && !child->killed) {
      child->deadline.reset();  // it opened before the kill came: a normal cycle
    }
  } else if (word == "verify") {
    OnVerify(child, cycle, rest);
  } else if (word == "running") {
    child->running = true;
    child->running_at = now;
    if (!child->killed) child->deadline = now + std::chrono::milliseconds(plan.kill_ms);
  } else if (word == "ack") {
    unsigned w = 0, d = 0, o_id = 0, c_id = 0, ol_cnt = 0;
    if (std::sscanf(rest.c_str(), "%u %u %u %u %u", &w, &d, &o_id, &c_id, &ol_cnt) != 5) {
      child->error = "a malformed line: " + std::string(line);
      return;
    }
    AckRecord a{o_id, c_id, static_cast<uint16_t>(w), static_cast<uint8_t>(d),
                static_cast<uint8_t>(ol_cnt)};
    ledger_.push_back({a, cycle});
    ++child->acks;
    ++n_.acknowledged;
  } else if (word == "loaded" || word == "reused") {
    child->load_line = std::string(line);
  } else if (word == "error") {
    child->error = rest;
  } else {
    child->error = "an unexpected line: " + std::string(line);
  }
}

void CrashTorture::OnVerify(Child* child, uint32_t cycle, std::string_view text) {
  child->verified = true;
  ++n_.verifications;
  const uint64_t failures_before = n_.failures();
  json v;
  try {
    v = json::parse(text);
  } catch (const json::exception& e) {
    ++n_.check_errors;
    child->verify_failed = true;
    Failure(cycle, std::string("the checks' report does not parse: ") + e.what());
    return;
  }
  std::vector<bool> drop(sent_, false);
  auto problems = [&](const char* key, uint64_t* count, const char* what, bool remove) {
    for (const json& p : v[key]) {
      const uint64_t index = p[0].get<uint64_t>();
      if (index >= sent_) continue;
      ++*count;
      const LedgerEntry& e = ledger_[index];
      Failure(cycle, std::string(what) + ": " + OrderText(e.ack) + ", acknowledged in cycle " +
                         std::to_string(e.cycle) + ": " + p[1].get<std::string>());
      if (remove) drop[index] = true;
    }
  };
  problems("lost", &n_.lost, "LOST COMMIT", /*remove=*/true);
  problems("incomplete", &n_.incomplete, "INCOMPLETE COMMIT", /*remove=*/false);
  for (const char* key : {"ledger_error", "conditions_error"}) {
    if (const std::string e = v[key].get<std::string>(); !e.empty()) {
      ++n_.check_errors;
      Failure(cycle, std::string("a check could not run (") + key + "): " + e);
    }
  }
  if (!v["failed_conditions"].empty()) ++n_.consistency_failures;
  for (const json& f : v["failed_conditions"]) {
    const int c = f["condition"].get<int>();
    Failure(cycle, "consistency condition " + std::to_string(c) + " (" + ConditionText(c) +
                       "): " + f["detail"].get<std::string>());
  }
  if (const std::string e = v["verify_error"].get<std::string>(); !e.empty()) {
    ++n_.verify_failures;
    Failure(cycle, "the B-tree verifier: " + e);
  }
  child->verify_failed = n_.failures() != failures_before;
  child->check_ms = v.value("seconds", 0.0) * 1000;
  n_.max_check_ms = std::max(n_.max_check_ms, child->check_ms);
  // Lost orders leave the ledger; what the child was given is now checked in full.
  uint64_t kept = 0;
  for (uint64_t i = 0; i < ledger_.size(); ++i) {
    if (i < sent_ && drop[i]) continue;
    ledger_[kept++] = ledger_[i];
  }
  const uint64_t removed = ledger_.size() - kept;
  ledger_.resize(kept);
  sent_ -= removed;
  verified_ = sent_;
}

// After Supervise: counts how it ended; false if it did not end as it should have.
bool CrashTorture::Ended(Child* child, uint32_t cycle, bool expect_kill) {
  const int st = child->wait_status;
  const bool our_kill = child->killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  if (our_kill && !child->hung) {
    if (std::strcmp(child->killed_in, "recovery") == 0) ++n_.kills_in_recovery;
    if (std::strcmp(child->killed_in, "run") == 0) ++n_.kills_in_run;
  }
  n_.orphan_pages += child->orphan_pages;
  if (child->recovered) {
    ++n_.recoveries;
    n_.redo_records += child->redo_records;
    n_.losers += child->losers;
    n_.torn_pages += child->torn_pages;
    n_.max_open_ms = std::max(n_.max_open_ms, child->open_ms);
  }
  const bool ok = expect_kill ? our_kill && !child->hung && child->error.empty()
                              : WIFEXITED(st) && WEXITSTATUS(st) == 0 && child->error.empty();
  if (ok) {
    consecutive_child_failures_ = 0;
    return true;
  }
  std::string what = child->hung ? "the child said nothing for two minutes and was killed"
                                 : "the child ended by itself (" + ExitText(st) + ")";
  if (!child->error.empty()) what += ": " + child->error;
  if (!child->opened && child->opening) {
    ++n_.recovery_failures;
    Failure(cycle, "the database did not open (recovery failed): " + what);
    stop_ = true;  // nothing later can open it either
  } else {
    ++n_.child_failures;
    Failure(cycle, what);
    if (++consecutive_child_failures_ == 3) {
      std::printf("stopping: three children in a row failed\n");
      stop_ = true;
    }
  }
  return false;
}

bool CrashTorture::Load() {
  CyclePlan plan;
  plan.seed = DeriveSeed(seed_, 0);
  plan.buffer_pool_mib = o_.scale == "small" ? 64 : 256;
  plan.workers = 2;
  Child child;
  if (Status s = StartChild(ChildArgs("load", plan, false), std::string(), &child); !s.ok()) {
    std::printf("cannot start the loading process: %s\n", s.ToString().c_str());
    return false;
  }
  Supervise(&child, plan, 0);
  if (!Ended(&child, 0, /*expect_kill=*/false)) return false;
  if (child.load_line.rfind("loaded", 0) == 0) {
    unsigned long long rows = 0;
    double seconds = 0;
    std::sscanf(child.load_line.c_str(), "loaded %llu %lf", &rows, &seconds);
    std::printf("loaded %llu rows (scale %s) into %s in %.2f s\n", rows, o_.scale.c_str(),
                db_.c_str(), seconds);
    loaded_here_ = true;
  } else {
    std::printf("reusing the TPC-C database at %s\n", db_.c_str());
  }
  return true;
}

void CrashTorture::PrintCycle(uint32_t cycle, const CyclePlan& plan, const Child& child) const {
  char ckpt[32];
  if (plan.checkpoint_ms != 0) {
    std::snprintf(ckpt, sizeof ckpt, "ckpt %3u ms", plan.checkpoint_ms);
  } else {
    std::snprintf(ckpt, sizeof ckpt, "ckpt   none");
  }
  std::string open = "not opened";
  if (child.opened) {
    char text[96];
    std::snprintf(text, sizeof text, "open %5.0f ms (redo %llu, losers %llu, freed %llu)",
                  child.open_ms, static_cast<unsigned long long>(child.redo_records),
                  static_cast<unsigned long long>(child.losers),
                  static_cast<unsigned long long>(child.orphan_pages));
    open = text;
  }
  std::string checks = "checks -";
  if (child.verified) {
    char text[64];
    std::snprintf(text, sizeof text, "checks %s (%.0f ms)", child.verify_failed ? "FAILED" : "ok",
                  child.check_ms);
    checks = text;
  }
  char end[96];
  if (child.killed) {
    const auto since = child.running   ? child.running_at
                       : child.opening ? child.opening_at
                                       : child.started;
    std::snprintf(end, sizeof end, "killed in %s after %.0f ms", child.killed_in,
                  Ms(child.killed_at - since));
  } else {
    std::snprintf(end, sizeof end, "ended: %s", ExitText(child.wait_status).c_str());
  }
  std::printf("cycle %4u/%u | %u worker%s, pool %3u MiB, %s | %s | %s | +%llu acks (%llu) | %s\n",
              cycle, o_.cycles, plan.workers, plan.workers == 1 ? " " : "s", plan.buffer_pool_mib,
              ckpt, open.c_str(), checks.c_str(), static_cast<unsigned long long>(child.acks),
              static_cast<unsigned long long>(n_.acknowledged), end);
  std::fflush(stdout);
}

void CrashTorture::AddPhantomAck(uint32_t cycle) {
  LedgerEntry phantom = ledger_.back();
  phantom.ack.o_id += 1000000;  // far beyond any order a district reaches here
  phantom.cycle = cycle;
  ledger_.push_back(phantom);
  phantom_added_ = true;
  std::printf("cycle %u: TEST: the ledger also holds %s, which the engine never acknowledged\n",
              cycle, OrderText(phantom.ack).c_str());
}

void CrashTorture::RunCycle(uint32_t cycle) {
  const CyclePlan plan = Plan();
  if (plan.checkpoint_ms != 0) ++n_.checkpoint_cycles;
  Child child;
  if (Status s = StartChild(ChildArgs("cycle", plan, /*run=*/true), LedgerBytes(), &child);
      !s.ok() && child.pid < 0) {
    Failure(cycle, "cannot start the child: " + s.ToString());
    ++n_.child_failures;
    stop_ = true;
    return;
  }
  Supervise(&child, plan, cycle);
  const bool ok = Ended(&child, cycle, /*expect_kill=*/true);
  n_.cycles = cycle;
  if (o_.test_drop_ack && !phantom_added_ && !ledger_.empty()) AddPhantomAck(cycle);
  if (!ok || child.verify_failed || cycle % o_.progress_every == 0 || cycle == o_.cycles) {
    PrintCycle(cycle, plan, child);
  }
}

void CrashTorture::FinalVerification() {
  CyclePlan plan = Plan();
  plan.checkpoint_ms = 0;
  plan.kill_in_recovery = false;  // this child must recover, check and close
  Child child;
  if (Status s = StartChild(ChildArgs("cycle", plan, /*run=*/false), LedgerBytes(), &child);
      !s.ok() && child.pid < 0) {
    Failure(n_.cycles, "cannot start the last verification: " + s.ToString());
    ++n_.child_failures;
    return;
  }
  Supervise(&child, plan, n_.cycles);
  if (!Ended(&child, n_.cycles, /*expect_kill=*/false)) return;
  if (!child.verified) {
    ++n_.child_failures;
    Failure(n_.cycles, "the last verification reported no checks");
    return;
  }
  std::printf(
      "verification after cycle %u: recovered in %.0f ms (redo %llu, losers %llu), checked %llu acks: %s\n",
      n_.cycles, child.open_ms, static_cast<unsigned long long>(child.redo_records),
      static_cast<unsigned long long>(child.losers), static_cast<unsigned long long>(sent_),
      child.verify_failed ? "FAILED" : "ok");
}

// Every acknowledged order is checked after every recovery, and the database grows with every
// cycle, so the checks cost more and more; a long run therefore starts over now and then: it
// verifies what it has (as after the last cycle), then drops the database and loads a new one
// with an empty ledger. False if the verification or the load failed (the run stops).
bool CrashTorture::Reload() {
  const uint64_t failures_before = n_.failures() + n_.child_failures;
  FinalVerification();
  if (n_.failures() + n_.child_failures != failures_before) return false;
  std::error_code ec;
  std::filesystem::remove_all(db_, ec);
  if (ec) {
    Failure(n_.cycles, "cannot remove " + db_ + " to load it again: " + ec.message());
    ++n_.child_failures;
    return false;
  }
  ledger_.clear();
  verified_ = 0;
  sent_ = 0;
  ++n_.reloads;
  return Load();
}

// To `digits` decimals, for the JSON line.
double Round(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

std::string CrashTorture::ReplayCommand() const {
  std::string command = "tpcc crash-test --seed " + std::to_string(seed_) + " --cycles " +
                        std::to_string(o_.cycles) + " --scale " + o_.scale + " --kill-ms " +
                        o_.kill_ms + " --reload-every " + std::to_string(o_.reload_every);
  if (o_.workers != 0) command += " --workers " + std::to_string(o_.workers);
  if (o_.full_check) command += " --full-check";
  if (o_.test_drop_ack) command += " --TEST-drop-ack";
  return command;
}

void CrashTorture::PrintSummary(double seconds) const {
  using ull = unsigned long long;
  const Counts& n = n_;
  std::printf("\n== crash-test: %u cycles in %.1f s (seed %llu) ==\n", n.cycles, seconds,
              ull{seed_});
  std::printf("acknowledged New-Orders: %llu; lost %llu, incomplete %llu; %llu fresh databases "
              "(--reload-every %u)\n",
              ull{n.acknowledged}, ull{n.lost}, ull{n.incomplete}, ull{n.reloads},
              o_.reload_every);
  std::printf(
      "kills: %llu in the run, %llu in recovery; %llu cycles with "
      "background checkpoints\n",
      ull{n.kills_in_run}, ull{n.kills_in_recovery}, ull{n.checkpoint_cycles});
  std::printf(
      "recoveries: %llu (%llu records redone, %llu losers rolled back, %llu torn pages, %llu "
      "pages in no tree given back); longest open %.0f ms, longest checks %.0f ms\n",
      ull{n.recoveries}, ull{n.redo_records}, ull{n.losers}, ull{n.torn_pages}, ull{n.orphan_pages},
      n.max_open_ms, n.max_check_ms);
  std::printf(
      "checks: %llu, of which %llu with a failed consistency condition, %llu with a failed "
      "B-tree verification, %llu could not run\n",
      ull{n.verifications}, ull{n.consistency_failures}, ull{n.verify_failures},
      ull{n.check_errors});
  std::printf("processes: %llu recovery failures, %llu other failures\n", ull{n.recovery_failures},
              ull{n.child_failures});
  std::printf("result: %s\n", n.failed() ? "FAIL" : "pass");
  if (n.failed()) std::printf("replay the same choices: %s\n", ReplayCommand().c_str());
  if (!scratch_ || n.failed() || o_.keep) std::printf("the database is at %s\n", db_.c_str());
}

json CrashTorture::ResultJson(double seconds) const {
  const Counts& n = n_;
  return {{"command", "crash-test"},
          {"cycles", n.cycles},
          {"acknowledged_commits", n.acknowledged},
          {"lost_commits", n.lost},
          {"incomplete_commits", n.incomplete},
          {"consistency_failures", n.consistency_failures},
          {"verify_failures", n.verify_failures},
          {"check_errors", n.check_errors},
          {"recovery_failures", n.recovery_failures},
          {"child_failures", n.child_failures},
          {"verifications", n.verifications},
          {"kills_during_recovery", n.kills_in_recovery},
          {"kills_during_run", n.kills_in_run},
          {"checkpoint_cycles", n.checkpoint_cycles},
          {"reloads", n.reloads},
          {"recoveries", n.recoveries},
          {"redo_records", n.redo_records},
          {"losers", n.losers},
          {"torn_pages_repaired", n.torn_pages},
          {"orphan_pages_freed", n.orphan_pages},
          {"max_open_ms", Round(n.max_open_ms, 1)},
          {"max_check_ms", Round(n.max_check_ms, 1)},
          {"seconds", Round(seconds, 2)},
          {"seed", seed_},
          {"replay", ReplayCommand()},
          {"scale", o_.scale},
          {"full_check", o_.full_check},
          {"db", db_},
          {"git_revision", GitRevision()},
          {"passed", !n.failed()}};
}

int CrashTorture::Main() {
  const auto start = Clock::now();
  std::printf("crash-test: seed %llu, %u cycles, scale %s, db %s\n",
              static_cast<unsigned long long>(seed_), o_.cycles, o_.scale.c_str(), db_.c_str());
  std::printf("replay these choices with: %s\n", ReplayCommand().c_str());
  std::fflush(stdout);
  if (!Load()) {
    stop_ = true;
    if (!n_.failed()) ++n_.child_failures;  // it could not even start
  }
  for (uint32_t cycle = 1; cycle <= o_.cycles && !stop_; ++cycle) {
    RunCycle(cycle);
    const bool epoch_ends = o_.reload_every != 0 && cycle % o_.reload_every == 0;
    if (!stop_ && epoch_ends && cycle < o_.cycles && loaded_here_ && !Reload()) stop_ = true;
  }
  if (!stop_) FinalVerification();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  PrintSummary(seconds);
  std::printf("%s\n", ResultJson(seconds).dump().c_str());
  std::fflush(stdout);
  return n_.failed() ? kExitFailed : 0;
}

bool ParseKillMs(const std::string& text, uint32_t* lo, uint32_t* hi) {
  unsigned a = 0, b = 0;
  char extra = 0;
  int n = std::sscanf(text.c_str(), "%u-%u%c", &a, &b, &extra);
  if (n == 1) b = a;
  if ((n != 1 && n != 2) || a == 0 || a > b || b > 3600000) return false;
  *lo = a;
  *hi = b;
  return true;
}

// ./data/crash-test/run-XXXXXX (made here); the database is its db/.
bool MakeScratchDir(std::string* dir) {
  std::error_code ec;
  std::filesystem::create_directories("./data/crash-test", ec);
  std::string pattern = "./data/crash-test/run-XXXXXX";
  if (ec || ::mkdtemp(pattern.data()) == nullptr) return false;
  *dir = pattern;
  return true;
}

// Makes sure descriptors 0-2 are open, so that the pipes to a child never take them.
void OpenStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) ::open("/dev/null", O_RDWR);
  }
}

}  // namespace

// ---- the verbs ---------------------------------------------------------------------------------

int CrashTest(const CrashTestOptions& options) {
  uint32_t kill_min = 0, kill_max = 0;
  if (!ParseKillMs(options.kill_ms, &kill_min, &kill_max)) {
    std::fprintf(stderr, "tpcc: --kill-ms takes MIN-MAX milliseconds such as 50-600, not '%s'\n",
                 options.kill_ms.c_str());
    return kExitUsage;
  }
  if (options.cycles == 0 || options.progress_every == 0) {
    std::fprintf(stderr, "tpcc: --cycles and --progress-every must be at least 1\n");
    return kExitUsage;
  }
  uint64_t seed = options.seed;
  std::random_device random;
  while (seed == 0) seed = (uint64_t{random()} << 32) ^ random();
  OpenStandardDescriptors();
  std::signal(SIGPIPE, SIG_IGN);  // a child that died early: EPIPE, and its exit status says why
  std::string scratch, db = options.db;
  if (db.empty()) {
    if (!MakeScratchDir(&scratch)) {
      std::fprintf(stderr, "tpcc: cannot make a directory under ./data/crash-test\n");
      return kExitFailed;
    }
    db = scratch + "/db";
  }
  CrashTorture torture(options, seed, db, !scratch.empty(), kill_min, kill_max);
  const int rc = torture.Main();
  if (!scratch.empty() && rc == 0 && !options.keep) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
  }
  return rc;
}

int CrashTestChild(const CrashChildOptions& options) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the parent, which would have killed us
  // The parent may have died before that took effect (compared by pid: in a container the
  // parent may be pid 1 itself).
  if (options.parent_pid != 0 && ::getppid() != static_cast<pid_t>(options.parent_pid)) {
    return kExitFailed;
  }
  const Reporter report;
  if (options.role == "load") return LoadRole(options, report);
  return CycleRole(options, report);
}

void AddCrashTestOptions(CLI::App* cmd, CrashTestOptions* o) {
  cmd->add_option("--cycles", o->cycles, "crash/recover cycles")
      ->check(NumberIn(1u, 100'000'000u))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed of the choices (default: a random one, printed)")
      ->check(NumberIn<uint64_t>(0, UINT64_MAX));
  cmd->add_option(
      "--db", o->db,
      "database directory, loaded unless it holds a load (default: a new directory under "
      "./data/crash-test, removed if everything passed)");
  cmd->add_option("--scale", o->scale, "small (1,000 items, 300 customers per district) or full")
      ->capture_default_str()
      ->check(CLI::IsMember({"small", "full"}));
  cmd->add_option("--reload-every", o->reload_every,
                  "after this many cycles verify, then drop the database and load a new one, "
                  "which bounds its growth and the time of the checks (0: never; a database "
                  "given with --db that this run did not load is never dropped)")
      ->check(NumberIn(0u, 100'000'000u))
      ->capture_default_str();
  cmd->add_flag("--full-check", o->full_check,
                "check conditions 1-10 and 12 after every recovery, not only 1-4");
  cmd->add_option("--workers", o->workers,
                  "workers of each child (default: 1 or 2, chosen per cycle)")
      ->check(CLI::Range(0u, 64u));
  cmd->add_option("--kill-ms", o->kill_ms,
                  "the kill comes MIN-MAX ms after the child started running")
      ->capture_default_str();
  cmd->add_option("--progress-every", o->progress_every, "a progress line every this many cycles")
      ->check(NumberIn(1u, 100'000'000u))
      ->capture_default_str();
  cmd->add_flag("--keep", o->keep, "keep the default database directory even if everything passed");
  cmd->add_flag("--TEST-drop-ack", o->test_drop_ack,
                "pretend that one New-Order the engine never committed was acknowledged (the "
                "oracle's own test)")
      ->group("");
}

void AddCrashChildOptions(CLI::App* cmd, CrashChildOptions* o) {
  cmd->add_option("--role", o->role)->check(CLI::IsMember({"load", "cycle"}));
  cmd->add_option("--db", o->db)->required();
  cmd->add_option("--scale", o->scale)->check(CLI::IsMember({"small", "full"}));
  cmd->add_option("--seed", o->seed);
  cmd->add_option("--workers", o->workers)->check(CLI::Range(1u, 64u));
  cmd->add_option("--buffer-pool-mib", o->buffer_pool_mib)->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--checkpoint-ms", o->checkpoint_ms);
  cmd->add_flag("--run", o->run);
  cmd->add_option("--parent-pid", o->parent_pid);
  cmd->add_flag("--full-check", o->full_check);
}

}  // namespace sm::tpcc
