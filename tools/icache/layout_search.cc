// Measuring candidate code layouts (see layout_search.h).
#include "tools/icache/layout_search.h"

#include <cstdio>

namespace sm::icache {

namespace {

// `text` with every `token` replaced by `value`; false if `token` does not occur.
bool ReplaceAll(std::string* text, std::string_view token, const std::string& value) {
  bool found = false;
  for (size_t at = text->find(token); at != std::string::npos;
       at = text->find(token, at + value.size())) {
    text->replace(at, token.size(), value);
    found = true;
  }
  return found;
}

}  // namespace

std::string RelinkCommand(std::string_view relink, const std::string& order,
                          const std::string& binary) {
  std::string command(relink);
  if (!ReplaceAll(&command, "{order}", ShellQuote(order))) return "";
  if (!ReplaceAll(&command, "{binary}", ShellQuote(binary))) return "";
  return command;
}

int BestLayout(const std::vector<LayoutCandidate>& candidates, double margin) {
  if (candidates.empty()) return -1;
  const double bar = candidates[0].Score() * (1.0 - margin);
  int best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const double score = candidates[i].Score();
    if (score < bar && (best == 0 || score < candidates[best].Score())) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

bool MeasureLayout(const TpccRunOptions& options, LayoutCandidate* candidate) {
  TpccRunOptions o = options;
  o.tpcc = candidate->binary;
  const TpccWorkload workloads[2] = {*FindTpccWorkload("payment"), *FindTpccWorkload("mix")};
  for (int w = 0; w < 2; ++w) {
    Counters counters[2];
    if (!RunTpccPair(o, workloads[w], Geometry{}, counters)) return false;
    for (int steps = 0; steps < 2; ++steps) {
      candidate->misses[2 * w + steps] =
          static_cast<double>(counters[steps].L1iMisses()) / static_cast<double>(o.transactions);
    }
  }
  return true;
}

}  // namespace sm::icache
