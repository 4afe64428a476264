// The order in which the linker lays out the engine's hot functions (the binary's code layout),
// chosen from a callgrind profile by call-chain clustering (C3: Ottoni and Maher, "Optimizing
// Function Placement for Large-Scale Data-Center Applications", CGO 2017).
//
// Why: which functions share a set of a set-associative L1-I decides the conflict misses, and
// with the linker's default order that depends on everything linked ahead of them, so a change
// anywhere moves the TPC-C mix's misses with the same instructions (steps_bench's
// mix_l1i_misses_per_txn_serial). Laid out hot and together, the functions that run together
// stay contiguous whatever else changes: a contiguous stretch no larger than the cache never
// conflicts with itself.
//
// C3: every executed function starts as a cluster of its own. In order of decreasing own
// instructions, each function's cluster is appended to the cluster of its most frequent caller,
// unless the two together would exceed `cluster_bytes`. The clusters are then laid out by
// density (instructions per byte), densest first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/icache/callgrind_parts.h"

namespace sm::icache {

// The order: the functions of `profile` that have a size in `sizes` (the binary's own
// functions; library code and split-off cold parts have none) and ran at least one
// instruction. Deterministic: ties are broken by name.
std::vector<std::string> CallChainOrder(const FunctionProfile& profile,
                                        const std::map<std::string, uint64_t>& sizes,
                                        uint64_t cluster_bytes);

// The empty, page-aligned section that threads/fiber_switch.cc defines for the layout file to
// list first: the hot functions then start on a page boundary (see there).
inline constexpr const char* kHotCodeStart = "sm_hot_code_start";

// The layout file for `order`: `header` as comment lines, then one input section per line
// (".text.<symbol>", as g++ -ffunction-sections names them): the page-aligned start, then each
// function and its aliases (the linker knows the section by one of the names), which gold's
// --section-ordering-file lays out in this order.
std::string LayoutFileText(const std::vector<std::string>& order,
                           const std::map<std::string, std::vector<std::string>>& aliases,
                           const std::string& header);

}  // namespace sm::icache
