// Choosing among candidate code layouts by measuring them (tools/run layout).
//
// Why: a layout is one fixed point of one profile, and call-chain clustering with another
// cluster size, or the order checked in, can miss the cache less or more with the same
// instructions (function_order.h). So each candidate order is linked into its own `tpcc` and
// run under callgrind, TPC-C Payment and the standard mix, STEPS off and on (the runs the
// order was profiled from); the one with the fewest L1-I misses, the four per-transaction
// figures summed, is kept. The score is neutral between the modes: it
// rewards fewer misses, not a larger reduction by STEPS.
//
// Invariants: the candidate measured first is the order the given binary was linked with, if
// any, and another replaces it only if it measures clearly fewer misses (BestLayout's margin),
// so a search never replaces the checked-in order with one that measures no better.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tools/icache/tpcc_runs.h"

namespace sm::icache {

// One candidate: its name ("current", "16 KiB clusters"), its layout file's text and the
// `tpcc` binary linked with it.
struct LayoutCandidate {
  std::string name;
  std::string text;
  std::string binary;
  // L1-I misses per transaction: Payment serial, Payment with STEPS, mix serial, mix with STEPS.
  double misses[4] = {0, 0, 0, 0};
  double Score() const { return misses[0] + misses[1] + misses[2] + misses[3]; }
};

// `relink` with "{order}" and "{binary}" replaced by the quoted paths: the command that links
// `tpcc` with the layout file `order` into `binary`. Empty if `relink` lacks either.
std::string RelinkCommand(std::string_view relink, const std::string& order,
                          const std::string& binary);

// The index of the chosen candidate, -1 if none: the first one (the current order, when there
// is one) unless another scores more than `margin` (a fraction) below it, and then the lowest
// of those, the earliest of equals. The margin keeps the current order against a candidate that
// only draws level: the same order linked into another file, at another path, measures slightly
// apart (a run's addresses on the stack differ, and with them a few branches in the C library),
// and the order checked in should not churn on that.
int BestLayout(const std::vector<LayoutCandidate>& candidates, double margin);

// Runs Payment and the mix with `candidate->binary`, STEPS off and on, two at a time, and
// fills candidate->misses. False if a run failed (the reason is printed).
bool MeasureLayout(const TpccRunOptions& options, LayoutCandidate* candidate);

}  // namespace sm::icache
