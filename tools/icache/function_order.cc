// Call-chain clustering of a callgrind profile into a link order.
#include "tools/icache/function_order.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <sstream>

namespace sm::icache {

namespace {

struct Cluster {
  std::vector<size_t> members;  // function indexes, in layout order
  uint64_t bytes = 0;
  uint64_t ir = 0;
};

}  // namespace

std::vector<std::string> CallChainOrder(const FunctionProfile& profile,
                                        const std::map<std::string, uint64_t>& sizes,
                                        uint64_t cluster_bytes) {
  std::vector<std::string> names;  // sorted: self_ir is a map
  std::map<std::string, size_t> index;
  for (const auto& [name, ir] : profile.self_ir) {
    if (ir == 0 || sizes.count(name) == 0) continue;
    index[name] = names.size();
    names.push_back(name);
  }
  const size_t n = names.size();
  // Each function's most frequent caller (the first by name among equals).
  std::vector<size_t> caller(n, n);
  std::vector<uint64_t> caller_calls(n, 0);
  for (const auto& [arc, count] : profile.calls) {
    auto a = index.find(arc.first);
    auto b = index.find(arc.second);
    if (a == index.end() || b == index.end() || a->second == b->second) continue;
    if (count > caller_calls[b->second]) {
      caller[b->second] = a->second;
      caller_calls[b->second] = count;
    }
  }
  std::vector<Cluster> clusters(n);
  std::vector<size_t> cluster_of(n);
  for (size_t f = 0; f < n; ++f) {
    clusters[f].members = {f};
    clusters[f].bytes = std::max<uint64_t>(sizes.at(names[f]), 1);
    clusters[f].ir = profile.self_ir.at(names[f]);
    cluster_of[f] = f;
  }
  std::vector<size_t> by_heat(n);
  std::iota(by_heat.begin(), by_heat.end(), 0);
  std::stable_sort(by_heat.begin(), by_heat.end(), [&](size_t a, size_t b) {
    return profile.self_ir.at(names[a]) > profile.self_ir.at(names[b]);
  });
  for (size_t f : by_heat) {
    if (caller[f] == n) continue;
    Cluster& into = clusters[cluster_of[caller[f]]];
    Cluster& from = clusters[cluster_of[f]];
    if (&into == &from || into.bytes + from.bytes > cluster_bytes) continue;
    for (size_t g : from.members) cluster_of[g] = cluster_of[caller[f]];
    into.members.insert(into.members.end(), from.members.begin(), from.members.end());
    into.bytes += from.bytes;
    into.ir += from.ir;
    from = Cluster();
  }
  std::vector<const Cluster*> live;
  for (const Cluster& c : clusters) {
    if (!c.members.empty()) live.push_back(&c);
  }
  // Densest first; among equals, by the first member's name.
  std::stable_sort(live.begin(), live.end(), [](const Cluster* a, const Cluster* b) {
    return static_cast<double>(a->ir) / static_cast<double>(a->bytes) >
           static_cast<double>(b->ir) / static_cast<double>(b->bytes);
  });
  std::vector<std::string> order;
  order.reserve(n);
  for (const Cluster* c : live) {
    for (size_t f : c->members) order.push_back(names[f]);
  }
  return order;
}

std::string LayoutFileText(const std::vector<std::string>& order,
                           const std::map<std::string, std::vector<std::string>>& aliases,
                           const std::string& header) {
  std::string out;
  std::istringstream lines(header);
  std::string line;
  while (std::getline(lines, line)) out += line.empty() ? "#\n" : "# " + line + "\n";
  out += ".text." + std::string(kHotCodeStart) + "\n";
  for (const std::string& name : order) {
    out += ".text." + name + "\n";
    auto it = aliases.find(name);
    if (it == aliases.end()) continue;
    for (const std::string& alias : it->second) out += ".text." + alias + "\n";
  }
  return out;
}

}  // namespace sm::icache
