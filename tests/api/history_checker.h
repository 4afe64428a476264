// HistoryChecker: decides whether a recorded history of reads and writes over a small key space
// is serializable, or at least read committed, in the manner of Adya's dependency graphs and
// Elle's version-traceable histories.
//
// Owns: nothing but the History it is given (by const reference) and the indexes it builds.
//
// The recorded history. Every key holds an initial version (kInitialVersion) and the history's
// transactions only read and overwrite keys. A version is named by its writer's unique tag and
// the write's index within that writer (Version), so two writes of one key by one transaction
// are different versions. A workload makes versions traceable by storing in each row the
// version it writes and the version it overwrote (EncodeVersionValue); a read then reports the
// exact version it saw. An Attempt is one try of a transaction: its tag (never reused, also
// not by a retry), whether it committed, its reads and writes in program order, and two logical
// times (ticks of one clock shared by all attempts): for each read and write, a tick taken
// after it returned, and the attempt's finish tick, taken before it called Commit or Abort.
// Between the two the writer held its write lock, so these intervals let the checker see two
// uncommitted writers of one key at once (a dirty write) without trusting the engine.
//
// What is checked, and the name of each anomaly in the report:
//   1. Reads of committed attempts (both levels):
//      - internal: after writing k, an attempt reads its own latest write of k;
//      - G1a (aborted read): no version written by an aborted attempt is read;
//      - G1b (intermediate read): no version that its writer overwrote itself is read;
//      - garbage read: every version read was written to that key by a recorded attempt;
//      - G1 (uncommitted read): no read returns before the writer of the version it saw
//        began to commit (a dirty read of a writer that committed later; seen by ticks).
//   2. Dirty writes (both levels): for each key, the intervals [write tick, finish tick] of
//      different attempts (committed or aborted) that wrote it are disjoint.
//   3. The version order of each key (<< in Adya) and the final state:
//      - serializable: from the values, as a chain: each committed writer's first write of k
//        names the version it overwrote. The chain from the final version must pass through
//        every committed writer of k exactly once and end at the initial version, and two
//        committed writers must never overwrite the same version (a lost update). The chain
//        must agree with the order of the writers' lock intervals;
//      - read committed: lost updates are allowed there, so the order is that of the committed
//        writers' lock intervals;
//      and at both levels the final state holds the last version of that order.
//   4. Cycles (Tarjan SCC over committed attempts) in the dependency graph:
//      ww  writer of a version -> writer of the next version of that key;
//      wr  writer of a version -> each other attempt that read it;
//      rw  reader of a version -> writer of the next version (anti-dependency; serializable
//          only, since read committed allows G2).
//      A cycle of ww edges is G0, of ww and wr edges G1c, with one rw edge G-single, else G2.
//
// Invariants of a History given to Check: tags are non-zero and unique; final_state has one
// entry per key and keys are below final_state.size(). Violations are reported as anomalies
// rather than asserted, so a broken recorder cannot pass silently.
//
// Thread safety: Check is a pure function of its argument; a History is built by one thread
// (workloads record per fiber and merge).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sm::test::iso {

// A version of a key: its writer's tag and the write's index within that writer; writer 0 is
// the initial version of every key.
struct Version {
  uint64_t writer = 0;
  uint32_t index = 0;
  bool operator==(const Version&) const = default;
};
inline constexpr Version kInitialVersion{};

inline std::string VersionName(Version v) {
  if (v == kInitialVersion) return "init";
  return "T" + std::to_string(v.writer) + "." + std::to_string(v.index);
}

// The row value that makes a write traceable: "<writer>.<index>/<prev writer>.<prev index>",
// then optionally '#' and `padding_bytes` filler bytes (to give rows a size).
inline std::string EncodeVersionValue(Version me, Version prev, size_t padding_bytes = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%" PRIu64 ".%" PRIu32 "/%" PRIu64 ".%" PRIu32, me.writer,
                me.index, prev.writer, prev.index);
  std::string value = buf;
  if (padding_bytes > 0)
    value += "#" + std::string(padding_bytes, static_cast<char>('a' + me.index % 26));
  return value;
}

inline bool DecodeVersionValue(std::string_view value, Version* me, Version* prev) {
  const std::string s(value.substr(0, value.find('#')));
  int consumed = 0;
  const int n = std::sscanf(s.c_str(), "%" SCNu64 ".%" SCNu32 "/%" SCNu64 ".%" SCNu32 "%n",
                            &me->writer, &me->index, &prev->writer, &prev->index, &consumed);
  return n == 4 && consumed == static_cast<int>(s.size());
}

inline constexpr uint64_t kUntimed = std::numeric_limits<uint64_t>::max();

enum class OpKind : uint8_t { kRead, kWrite };

struct Op {
  OpKind kind = OpKind::kRead;
  uint32_t key = 0;
  Version version;         // read: the version seen; write: the version written
  Version prev;            // write: the version it overwrote, as its writer saw it
  uint64_t at = kUntimed;  // a tick taken after the read or write returned
};

enum class Outcome : uint8_t { kCommitted, kAborted };

struct Attempt {
  uint64_t tag = 0;
  Outcome outcome = Outcome::kAborted;
  std::vector<Op> ops;
  uint64_t finished_at = kUntimed;  // a tick before Commit or Abort was called
  uint32_t writes = 0;

  bool committed() const { return outcome == Outcome::kCommitted; }
  void Read(uint32_t key, Version version, uint64_t at = kUntimed) {
    ops.push_back(Op{OpKind::kRead, key, version, {}, at});
  }
  // Records a write over `prev` and returns the version it creates.
  Version Write(uint32_t key, Version prev, uint64_t at = kUntimed) {
    const Version me{tag, ++writes};
    ops.push_back(Op{OpKind::kWrite, key, me, prev, at});
    return me;
  }
};

struct History {
  std::vector<Attempt> attempts;
  std::vector<Version> final_state;  // per key, read after every attempt finished
};

enum class Level : uint8_t { kSerializable, kReadCommitted };

struct CheckResult {
  uint64_t anomaly_count = 0;
  std::vector<std::string> anomalies;      // the first kAnomaliesKeptPerKind of each kind
  std::map<std::string, uint64_t> counts;  // anomalies by kind (the text before its ':')
  uint64_t committed = 0, aborted = 0, reads = 0, writes = 0, timed_writes = 0;
  uint64_t ww_edges = 0, wr_edges = 0, rw_edges = 0;

  static constexpr uint64_t kAnomaliesKeptPerKind = 5;
  bool ok() const { return anomaly_count == 0; }
  // True if some anomaly's text starts with `kind` (e.g. "G1a", "G2"): for tests.
  bool Has(std::string_view kind) const {
    return std::any_of(anomalies.begin(), anomalies.end(),
                       [&](const std::string& a) { return a.rfind(kind, 0) == 0; });
  }
  // "kind n, kind n, ..."
  std::string Counts() const {
    std::string out;
    for (const auto& [kind, n] : counts) {
      out += (out.empty() ? "" : ", ") + kind + " " + std::to_string(n);
    }
    return out;
  }
  std::string Report() const {
    std::string out = Counts() + "\n";
    for (const std::string& a : anomalies) out += a + "\n";
    if (anomaly_count > anomalies.size()) {
      out += "... and " + std::to_string(anomaly_count - anomalies.size()) + " more\n";
    }
    return out;
  }
};

namespace internal {

struct VersionHash {
  size_t operator()(const Version& v) const { return v.writer * 0x9E3779B97F4A7C15ull ^ v.index; }
};

enum class EdgeKind : uint8_t { kWW, kWR, kRW };
inline const char* EdgeKindName(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kWW:
      return "ww";
    case EdgeKind::kWR:
      return "wr";
    case EdgeKind::kRW:
      return "rw";
  }
  return "?";
}

struct Edge {
  uint32_t to;  // attempt index
  EdgeKind kind;
  uint32_t key;
};

// One attempt's writes of one key, as far as the version order needs them.
struct KeyWrites {
  uint32_t attempt = 0;
  Version first_prev;             // what its first write of the key overwrote
  Version last;                   // its last write of the key: the version others may see
  uint64_t locked_at = kUntimed;  // the earliest write tick
};

class Checker {
 public:
  Checker(const History& history, Level level) : h_(history), level_(level) {}

  CheckResult Run() {
    IndexAttempts();
    IndexWrites();
    CheckReads();
    CheckDirtyWrites();
    order_.resize(key_count());
    for (uint32_t key = 0; key < h_.final_state.size(); ++key) OrderKey(key);
    BuildGraph();
    FindCycles();
    return std::move(result_);
  }

 private:
  struct WrittenVersion {
    uint32_t attempt;
    uint32_t key;
  };

  void Anomaly(std::string text) {
    const uint64_t of_kind = ++result_.counts[text.substr(0, text.find(':'))];
    if (of_kind <= CheckResult::kAnomaliesKeptPerKind) {
      result_.anomalies.push_back(std::move(text));
    }
    ++result_.anomaly_count;
  }
  std::string Name(uint32_t attempt) const {
    return "T" + std::to_string(h_.attempts[attempt].tag);
  }
  static std::string K(uint32_t key) { return "key " + std::to_string(key); }
  uint32_t key_count() const { return static_cast<uint32_t>(h_.final_state.size()); }

  void IndexAttempts() {
    for (uint32_t a = 0; a < h_.attempts.size(); ++a) {
      const Attempt& attempt = h_.attempts[a];
      if (attempt.tag == 0 || !by_tag_.emplace(attempt.tag, a).second) {
        Anomaly("recorder: tag " + std::to_string(attempt.tag) + " is zero or used twice");
      }
      ++(attempt.committed() ? result_.committed : result_.aborted);
    }
  }

  // Every write's version -> (attempt, key); per key, each attempt's KeyWrites.
  void IndexWrites() {
    writers_.assign(key_count(), {});
    for (uint32_t a = 0; a < h_.attempts.size(); ++a) {
      for (const Op& op : h_.attempts[a].ops) {
        if (op.kind != OpKind::kWrite) continue;
        if (op.key >= key_count()) {
          Anomaly("recorder: " + Name(a) + " wrote " + K(op.key) + ", beyond the key space");
          continue;
        }
        versions_[op.version] = WrittenVersion{a, op.key};
        auto [it, fresh] = slot_.emplace(SlotKey(a, op.key), writers_[op.key].size());
        if (fresh) writers_[op.key].push_back(KeyWrites{a, op.prev, op.version, op.at});
        KeyWrites& w = writers_[op.key][it->second];
        w.last = op.version;
        w.locked_at = std::min(w.locked_at, op.at);
        if (h_.attempts[a].committed()) {
          ++result_.writes;
          if (op.at != kUntimed) ++result_.timed_writes;
        }
      }
    }
  }

  static uint64_t SlotKey(uint32_t attempt, uint32_t key) {
    return (uint64_t{attempt} << 32) | key;
  }
  // `attempt`'s writes of `key`, or null.
  const KeyWrites* WritesOf(uint32_t attempt, uint32_t key) const {
    auto it = slot_.find(SlotKey(attempt, key));
    return it == slot_.end() ? nullptr : &writers_[key][it->second];
  }
  // The last version `attempt` wrote of `key`, if any.
  std::optional<Version> LastWrite(uint32_t attempt, uint32_t key) const {
    const KeyWrites* w = WritesOf(attempt, key);
    if (w == nullptr) return std::nullopt;
    return w->last;
  }

  void CheckReads() {
    for (uint32_t a = 0; a < h_.attempts.size(); ++a) {
      if (!h_.attempts[a].committed()) continue;
      std::unordered_map<uint32_t, Version> own;  // key -> this attempt's latest write so far
      for (const Op& op : h_.attempts[a].ops) {
        if (op.kind == OpKind::kWrite) {
          own[op.key] = op.version;
          continue;
        }
        ++result_.reads;
        if (op.key >= key_count()) {
          Anomaly("recorder: " + Name(a) + " read " + K(op.key) + ", beyond the key space");
          continue;
        }
        auto mine = own.find(op.key);
        if (mine != own.end()) {
          if (!(op.version == mine->second)) {
            Anomaly("internal: " + Name(a) + " read " + K(op.key) + " as " +
                    VersionName(op.version) + " after writing " + VersionName(mine->second));
          }
          continue;
        }
        CheckExternalRead(a, op);
      }
    }
  }

  // A committed attempt's read of a version it did not write itself.
  void CheckExternalRead(uint32_t reader, const Op& read) {
    const uint32_t key = read.key;
    const Version v = read.version;
    if (v == kInitialVersion) return;
    auto it = versions_.find(v);
    if (it == versions_.end() || it->second.key != key) {
      Anomaly("garbage read: " + Name(reader) + " read " + K(key) + " as " + VersionName(v) +
              ", which no recorded attempt wrote to that key");
      return;
    }
    const uint32_t writer = it->second.attempt;
    if (writer == reader) {
      Anomaly("internal: " + Name(reader) + " read its own " + VersionName(v) + " of " + K(key) +
              " before writing it");
      return;
    }
    if (!h_.attempts[writer].committed()) {
      Anomaly("G1a (aborted read): " + Name(reader) + " read " + K(key) + " as " + VersionName(v) +
              ", written by " + Name(writer) + ", which aborted");
      return;
    }
    if (!(*LastWrite(writer, key) == v)) {
      Anomaly("G1b (intermediate read): " + Name(reader) + " read " + K(key) + " as " +
              VersionName(v) + ", which " + Name(writer) + " overwrote with " +
              VersionName(*LastWrite(writer, key)));
      return;
    }
    // The read returned before its writer began to commit: it saw uncommitted data (P1),
    // even though the writer committed later.
    const uint64_t writer_finish = h_.attempts[writer].finished_at;
    if (read.at != kUntimed && writer_finish != kUntimed && read.at < writer_finish) {
      Anomaly("G1 (uncommitted read): " + Name(reader) + " read " + K(key) + " as " +
              VersionName(v) + " at tick " + std::to_string(read.at) + ", before " + Name(writer) +
              " began to commit (tick " + std::to_string(writer_finish) + ")");
    }
  }

  // Two attempts' lock intervals on one key must not overlap (checked for timed writers).
  void CheckDirtyWrites() {
    for (uint32_t key = 0; key < key_count(); ++key) {
      std::vector<const KeyWrites*> timed;
      for (const KeyWrites& w : writers_[key]) {
        if (w.locked_at != kUntimed) timed.push_back(&w);
      }
      std::sort(timed.begin(), timed.end(),
                [](const KeyWrites* x, const KeyWrites* y) { return x->locked_at < y->locked_at; });
      for (size_t i = 1; i < timed.size(); ++i) {
        const KeyWrites& before = *timed[i - 1];
        const KeyWrites& after = *timed[i];
        const uint64_t end = h_.attempts[before.attempt].finished_at;
        if (end == kUntimed || end > after.locked_at) {
          Anomaly("G0 (dirty write): " + Name(after.attempt) + " wrote " + K(key) + " at tick " +
                  std::to_string(after.locked_at) + " while " + Name(before.attempt) +
                  " (written at tick " + std::to_string(before.locked_at) +
                  ") had not finished (tick " + std::to_string(end) + ")");
        }
      }
    }
  }

  // order_[key]: the committed writers of key in version order, then the final-state check.
  void OrderKey(uint32_t key) {
    if (level_ == Level::kSerializable) {
      ChainOrder(key);
    } else {
      LockOrder(key, &order_[key]);
    }
    const Version last =
        order_[key].empty() ? kInitialVersion : CommittedLast(key, order_[key].back());
    if (!(h_.final_state[key] == last)) {
      Anomaly("final state: " + K(key) + " holds " + VersionName(h_.final_state[key]) +
              ", but the last committed version in version order is " + VersionName(last));
    }
  }

  Version CommittedLast(uint32_t key, uint32_t attempt) const { return *LastWrite(attempt, key); }

  // Committed writers of `key` ordered by their write ticks (untimed ones cannot be ordered).
  void LockOrder(uint32_t key, std::vector<uint32_t>* order) {
    std::vector<const KeyWrites*> committed;
    for (const KeyWrites& w : writers_[key]) {
      if (!h_.attempts[w.attempt].committed()) continue;
      if (w.locked_at == kUntimed) {
        Anomaly("recorder: " + Name(w.attempt) + "'s write of " + K(key) +
                " has no tick, so its place in the version order is unknown");
        continue;
      }
      committed.push_back(&w);
    }
    std::sort(committed.begin(), committed.end(),
              [](const KeyWrites* x, const KeyWrites* y) { return x->locked_at < y->locked_at; });
    order->clear();
    for (const KeyWrites* w : committed) order->push_back(w->attempt);
  }

  // The version chain from the final state back to the initial version, through the committed
  // writers' first_prev links (serializable: a writer read the version it overwrote).
  void ChainOrder(uint32_t key) {
    std::unordered_map<Version, const KeyWrites*, VersionHash> by_last;  // committed writers
    std::unordered_map<Version, uint32_t, VersionHash> overwriter;       // prev -> attempt
    for (const KeyWrites& w : writers_[key]) {
      if (!h_.attempts[w.attempt].committed()) continue;
      by_last.emplace(w.last, &w);
      auto [it, fresh] = overwriter.emplace(w.first_prev, w.attempt);
      if (!fresh) {
        Anomaly("lost update: " + Name(it->second) + " and " + Name(w.attempt) +
                " both overwrote " + K(key) + " version " + VersionName(w.first_prev));
      }
    }
    std::vector<uint32_t> chain;  // newest first
    Version v = h_.final_state[key];
    while (!(v == kInitialVersion) && chain.size() <= by_last.size()) {
      auto it = by_last.find(v);
      if (it == by_last.end()) {
        Anomaly("version chain of " + K(key) + " breaks at " + VersionName(v) +
                ", which is not the last write of a committed attempt");
        break;
      }
      chain.push_back(it->second->attempt);
      v = it->second->first_prev;
    }
    if (chain.size() > by_last.size()) Anomaly("version chain of " + K(key) + " loops");
    if (chain.size() < by_last.size()) {
      Anomaly("lost update: " + K(key) + " has " + std::to_string(by_last.size()) +
              " committed writers but its version chain passes through " +
              std::to_string(chain.size()));
    }
    std::reverse(chain.begin(), chain.end());
    order_[key] = chain;
    CheckChainAgainstLocks(key);
  }

  // The chain's order must be the order in which the writers held the key's lock.
  void CheckChainAgainstLocks(uint32_t key) {
    const std::vector<uint32_t>& chain = order_[key];
    for (size_t i = 1; i < chain.size(); ++i) {
      const uint64_t before = WritesOf(chain[i - 1], key)->locked_at;
      const uint64_t after = WritesOf(chain[i], key)->locked_at;
      if (before == kUntimed || after == kUntimed || before < after) continue;
      Anomaly("version order of " + K(key) + ": " + Name(chain[i]) + " overwrote " +
              Name(chain[i - 1]) + "'s version but wrote before it (ticks " +
              std::to_string(after) + " < " + std::to_string(before) + ")");
    }
  }

  void AddEdge(uint32_t from, uint32_t to, EdgeKind kind, uint32_t key) {
    if (from == to) return;
    graph_[from].push_back(Edge{to, kind, key});
    switch (kind) {
      case EdgeKind::kWW:
        ++result_.ww_edges;
        break;
      case EdgeKind::kWR:
        ++result_.wr_edges;
        break;
      case EdgeKind::kRW:
        ++result_.rw_edges;
        break;
    }
  }

  void BuildGraph() {
    graph_.assign(h_.attempts.size(), {});
    // position of each committed writer in its key's order, to find "the next version"
    std::vector<std::unordered_map<uint32_t, size_t>> position(key_count());
    for (uint32_t key = 0; key < key_count(); ++key) {
      for (size_t i = 0; i < order_[key].size(); ++i) {
        position[key][order_[key][i]] = i;
        if (i > 0) AddEdge(order_[key][i - 1], order_[key][i], EdgeKind::kWW, key);
      }
    }
    for (uint32_t a = 0; a < h_.attempts.size(); ++a) {
      if (!h_.attempts[a].committed()) continue;
      for (const Op& op : h_.attempts[a].ops) {
        if (op.kind == OpKind::kRead && op.key < key_count()) AddReadEdges(a, op, position);
      }
    }
  }

  void AddReadEdges(uint32_t reader, const Op& read,
                    const std::vector<std::unordered_map<uint32_t, size_t>>& position) {
    const std::vector<uint32_t>& order = order_[read.key];
    size_t next = 0;  // index in order of the version after the one read
    if (!(read.version == kInitialVersion)) {
      auto it = versions_.find(read.version);
      if (it == versions_.end() || it->second.key != read.key) return;  // reported already
      const uint32_t writer = it->second.attempt;
      auto pos = position[read.key].find(writer);
      if (pos == position[read.key].end()) return;  // not in the order: reported already
      if (!(CommittedLast(read.key, writer) == read.version)) return;  // G1b, reported
      AddEdge(writer, reader, EdgeKind::kWR, read.key);
      next = pos->second + 1;
    }
    if (level_ == Level::kSerializable && next < order.size()) {
      AddEdge(reader, order[next], EdgeKind::kRW, read.key);
    }
  }

  // Tarjan's strongly connected components, iteratively; each non-trivial one has a cycle.
  void FindCycles() {
    const uint32_t n = static_cast<uint32_t>(graph_.size());
    constexpr uint32_t kUnvisited = std::numeric_limits<uint32_t>::max();
    std::vector<uint32_t> index(n, kUnvisited), low(n, 0), component(n, kUnvisited);
    std::vector<bool> on_stack(n, false);
    std::vector<uint32_t> stack;
    std::vector<std::pair<uint32_t, size_t>> frames;  // (node, next edge)
    uint32_t counter = 0, components = 0;
    for (uint32_t root = 0; root < n; ++root) {
      if (index[root] != kUnvisited) continue;
      frames.push_back({root, 0});
      while (!frames.empty()) {
        auto& [v, e] = frames.back();
        if (e == 0 && index[v] == kUnvisited) {
          index[v] = low[v] = counter++;
          stack.push_back(v);
          on_stack[v] = true;
        }
        if (e < graph_[v].size()) {
          const uint32_t w = graph_[v][e++].to;
          if (index[w] == kUnvisited) {
            frames.push_back({w, 0});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        const uint32_t done = v;
        frames.pop_back();
        if (!frames.empty())
          low[frames.back().first] = std::min(low[frames.back().first], low[done]);
        if (low[done] != index[done]) continue;
        std::vector<uint32_t> members;
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = components;
          members.push_back(w);
        } while (w != done);
        if (members.size() > 1) ReportCycle(members.front(), component);
        ++components;
      }
    }
  }

  // A shortest cycle through `start` inside its component (BFS), printed edge by edge.
  void ReportCycle(uint32_t start, const std::vector<uint32_t>& component) {
    std::unordered_map<uint32_t, std::pair<uint32_t, Edge>> parent;  // node -> (from, edge)
    std::vector<uint32_t> queue{start};
    bool closed = false;
    std::pair<uint32_t, Edge> closing{};
    for (size_t i = 0; i < queue.size() && !closed; ++i) {
      const uint32_t v = queue[i];
      for (const Edge& e : graph_[v]) {
        if (component[e.to] != component[start]) continue;
        if (e.to == start) {
          closing = {v, e};
          closed = true;
          break;
        }
        if (parent.emplace(e.to, std::make_pair(v, e)).second) queue.push_back(e.to);
      }
    }
    if (!closed) return Anomaly("cycle: a component of " + Name(start) + " without a cycle?");
    std::vector<std::pair<uint32_t, Edge>> path{closing};  // built backwards
    for (uint32_t v = closing.first; v != start; v = parent.at(v).first)
      path.push_back(parent.at(v));
    std::reverse(path.begin(), path.end());
    int rw = 0, wr = 0;
    std::string text = Name(start);
    for (const auto& [from, e] : path) {
      rw += e.kind == EdgeKind::kRW;
      wr += e.kind == EdgeKind::kWR;
      text += " -" + std::string(EdgeKindName(e.kind)) + "(" + K(e.key) + ")-> " + Name(e.to);
    }
    const char* kind = rw == 0 ? (wr == 0 ? "G0" : "G1c") : (rw == 1 ? "G-single" : "G2");
    Anomaly(std::string(kind) + " cycle: " + text);
  }

  const History& h_;
  const Level level_;
  CheckResult result_;
  std::unordered_map<uint64_t, uint32_t> by_tag_;
  std::unordered_map<Version, WrittenVersion, VersionHash> versions_;
  std::vector<std::vector<KeyWrites>> writers_;  // per key
  std::unordered_map<uint64_t, uint32_t> slot_;  // SlotKey -> index in writers_[key]
  std::vector<std::vector<uint32_t>> order_;     // per key: committed writers, oldest first
  std::vector<std::vector<Edge>> graph_;         // per attempt (aborted ones have no edges)
};

}  // namespace internal

inline CheckResult Check(const History& history, Level level) {
  return internal::Checker(history, level).Run();
}

}  // namespace sm::test::iso
