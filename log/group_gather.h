// GroupGather: when the log's flusher holds a sync back so that more committers join its group.
//
// Why. A durable commit waits for the sync that covers its record. The flusher used to sync as
// soon as one commit asked, so on a worker that runs its terminals' transactions one after
// another (fibers), the first commit after a sync started the next sync alone and the others,
// arriving microseconds later, waited for the one after it: a group of one, then a group of the
// rest, each committer waiting for two syncs. Holding the sync until the committers that the
// last sync released have asked again (they are running their next transactions) makes every
// group whole: one sync per round of the terminals.
//
// The rule, with L the recent sync latency (a moving average of the flusher's own syncs):
//   - no hold once as many wait as are expected (the waiters the last sync released and those
//     still waiting just after it: every committer that took part in the last round), nor
//     before any sync has been timed, nor while L is below kMinHeldSyncNs: a sync that short
//     costs the committers left for the next one less than a hold would cost the round
//     (`tools/run bench tpcc`, key tx_per_s_1w_durable, measures it);
//   - a hold ends once no new request has come for a quiet gap of L/8, at most kMaxGapNs (the
//     committers still to come are not running), or L/2 after it began (a hold never costs a
//     committer more than half a sync).
// So the extra wait of a commit is bounded by L/2, and is one quiet gap when fewer committers
// come back than left (a terminal that ran a read-only transaction, or stopped).
//
// Thread safety: none; the flusher alone uses it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace sm::log {

class GroupGather {
 public:
  static constexpr int64_t kMaxGapNs = 1'000'000;
  static constexpr int64_t kMinHeldSyncNs = 500'000;

  // With durable requests pending and `waiting` waiters linked: the time (ns, the clock of
  // now_ns) until which to hold the sync, or 0 to sync now. last_request_ns: when the latest
  // durable request was made.
  int64_t HoldUntil(int64_t now_ns, int64_t last_request_ns, size_t waiting) {
    if (sync_ns_ < kMinHeldSyncNs || waiting >= expected_) return 0;
    if (hold_start_ns_ == 0) hold_start_ns_ = now_ns;
    const int64_t gap = std::min(sync_ns_ / 8, kMaxGapNs);
    const int64_t quiet_end = std::max(last_request_ns, hold_start_ns_) + gap;
    const int64_t until = std::min(quiet_end, hold_start_ns_ + sync_ns_ / 2);
    return now_ns >= until ? 0 : until;
  }

  // After a sync that took sync_ns, with `committers` waiters released by it or still waiting
  // just after it: the next group's expectation, and the latency average (weight 1/4 to the
  // newest).
  void Synced(int64_t sync_ns, size_t committers) {
    sync_ns = std::max<int64_t>(sync_ns, 1);
    sync_ns_ = sync_ns_ == 0 ? sync_ns : (3 * sync_ns_ + sync_ns) / 4;
    expected_ = committers;
    hold_start_ns_ = 0;
  }

  int64_t sync_ns() const { return sync_ns_; }

 private:
  int64_t sync_ns_ = 0;        // moving average; 0: no sync timed yet
  size_t expected_ = 0;        // committers of the last round
  int64_t hold_start_ns_ = 0;  // when the current hold began; 0: not holding
};

}  // namespace sm::log
