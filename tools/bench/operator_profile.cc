// Costs per operator from a profiled run (contract in operator_profile.h).
#include "tools/bench/operator_profile.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <regex>

namespace sm::bench {

using nlohmann::json;

json OperatorTreeJson(const query::Operator& op) {
  json children = json::array();
  for (const auto& c : op.children()) children.push_back(OperatorTreeJson(*c));
  const uint32_t slot = op.profile_slot();
  return {{"slot", slot == query::kNoProfileSlot ? -1 : static_cast<int64_t>(slot)},
          {"name", op.name()},
          {"detail", op.detail()},
          {"est_rows", op.estimated_rows()},
          {"rows", op.stats().rows},
          {"rows_read", op.stats().rows_read},
          {"children", std::move(children)}};
}

namespace {

using SlotCosts = std::map<int64_t, icache::Counters>;

// Per slot, summed over its Open, Next and Close: the inclusive costs of the calls into the
// slot's functions, and (event "own") the instructions of those functions' own frames.
SlotCosts CostsBySlot(const icache::FunctionProfile& functions) {
  static const std::regex kSlot(R"(sm::query::OperatorSlot::(Open|Next|Close)<(\d+)u?>)");
  SlotCosts slots;
  for (const auto& [name, counters] : functions.called) {
    std::smatch m;
    if (!std::regex_search(name, m, kSlot)) continue;
    icache::Counters& c = slots[std::stoll(m[2].str())];
    for (const auto& [event, n] : counters.events) c.events[event] += n;
    auto own = functions.self_ir.find(name);
    if (own != functions.self_ir.end()) c.events["own"] += own->second;
  }
  return slots;
}

// a's events less b's, but for "own" (a slot's own frames are its operator's alone).
icache::Counters Less(icache::Counters a, const icache::Counters& b, bool* negative) {
  for (auto& [event, n] : a.events) {
    if (event == "own") continue;
    const uint64_t sub = b.Get(event);
    if (sub > n) *negative = true;
    n = sub > n ? 0 : n - sub;
  }
  return a;
}

struct Walk {
  const SlotCosts& slots;
  json* costs;
  std::string* error;

  icache::Counters Inclusive(const json& node) const {
    auto it = slots.find(node["slot"].get<int64_t>());
    return it == slots.end() ? icache::Counters{} : it->second;
  }

  // Appends the node's entry and its subtree's; *instructions: its inclusive instructions less
  // its subtree's slot frames.
  bool Visit(const json& node, int depth, uint64_t* instructions) {
    const icache::Counters inclusive = Inclusive(node);
    icache::Counters self = inclusive;
    bool negative = false;
    for (const json& child : node["children"]) self = Less(self, Inclusive(child), &negative);
    if (negative) {
      *error = "the children of " + node["name"].get<std::string>() +
               " cost more than it does: the dump does not nest operator calls";
      return false;
    }
    const uint64_t own = self.Get("own");
    const uint64_t self_ir = self.Instructions() > own ? self.Instructions() - own : 0;
    uint64_t rows_in = node["rows_read"].get<uint64_t>();
    for (const json& child : node["children"]) rows_in += child["rows"].get<uint64_t>();
    const size_t at = costs->size();
    costs->push_back({{"operator", node["name"]},
                      {"detail", node["detail"]},
                      {"depth", depth},
                      {"rows", node["rows"]},
                      {"rows_in", rows_in},
                      {"self_instructions", self_ir},
                      {"self_l1i_misses", self.L1iMisses()},
                      {"self_l1d_misses", self.L1dMisses()},
                      {"self_mispredicts", self.Mispredicts()}});
    *instructions = self_ir;
    for (const json& child : node["children"]) {
      uint64_t below = 0;
      if (!Visit(child, depth + 1, &below)) return false;
      *instructions += below;
    }
    (*costs)[at]["instructions"] = *instructions;
    return true;
  }
};

void PrintCosts(const json& costs, uint64_t run_instructions, uint64_t frames) {
  std::printf("%10s %10s %15s %15s %9s %11s %11s %11s  %s\n", "rows in", "rows out",
              "instructions", "self", "self/in", "self L1-I", "self L1-D", "self mispr",
              "operator (rows in: its children's and those it read from tables; self: children "
              "excluded)");
  for (const json& op : costs) {
    const uint64_t rows = op["rows"].get<uint64_t>();
    const uint64_t rows_in = op["rows_in"].get<uint64_t>();
    const uint64_t self = op["self_instructions"].get<uint64_t>();
    char per_row[32] = "-";
    if (rows_in > 0) {
      std::snprintf(per_row, sizeof(per_row), "%.1f", double(self) / double(rows_in));
    }
    std::string label(static_cast<size_t>(op["depth"].get<int>()) * 2, ' ');
    label += op["operator"].get<std::string>();
    const std::string detail = op["detail"].get<std::string>();
    if (!detail.empty()) {
      label += " " + (detail.size() > 60 ? detail.substr(0, 57) + "..." : detail);
    }
    std::printf("%10" PRIu64 " %10" PRIu64 " %15" PRIu64 " %15" PRIu64 " %9s %11" PRIu64
                " %11" PRIu64 " %11" PRIu64 "  %s\n",
                rows_in, rows, op["instructions"].get<uint64_t>(), self, per_row,
                op["self_l1i_misses"].get<uint64_t>(), op["self_l1d_misses"].get<uint64_t>(),
                op["self_mispredicts"].get<uint64_t>(), label.c_str());
  }
  const uint64_t operators = costs.empty() ? 0 : costs[0]["instructions"].get<uint64_t>();
  const uint64_t outside = run_instructions - frames - operators;
  std::printf("%21s %15" PRIu64 " %15" PRIu64 "  %s\n", "", run_instructions - frames, outside,
              "the whole run, less the profile slots' own frames (self: the cursor, outside "
              "the operators)");
  std::printf("%21s %15" PRIu64 " %15s  %s\n", "", frames, "",
              "the profile slots' own frames, subtracted above");
}

}  // namespace

bool OperatorCosts(const json& tree, const icache::FunctionProfile& functions,
                   const icache::Counters& total, json* costs, std::string* error) {
  const SlotCosts slots = CostsBySlot(functions);
  if (slots.empty()) {
    *error = "the dump has no operator slot functions (was the query profiled?)";
    return false;
  }
  *costs = json::array();
  Walk walk{slots, costs, error};
  uint64_t root = 0;
  if (!walk.Visit(tree, 0, &root)) return false;
  uint64_t frames = 0;
  for (const auto& [slot, counters] : slots) frames += counters.Get("own");
  if (walk.Inclusive(tree).Instructions() > total.Instructions() ||
      root + frames > total.Instructions()) {
    *error = "the operators cost more than the whole dump";
    return false;
  }
  PrintCosts(*costs, total.Instructions(), frames);
  for (json& op : *costs) op.erase("detail");  // printed; too long for the JSON line
  return true;
}

}  // namespace sm::bench
