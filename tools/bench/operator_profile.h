// Costs per operator of a query run under callgrind: EXPLAIN ANALYZE with instructions, cache
// misses and mispredicted branches in place of times.
//
// The measured process runs its query with QueryOptions::profile_operators, so that each of the
// first kProfileSlots operators runs its Open, Next and Close in functions named after its
// preorder number (query/operator.h), and writes the operator tree (OperatorTreeJson). The
// measuring process reads callgrind's inclusive cost of the calls into those functions
// (icache::FunctionProfile::called) and takes each operator's self cost as its inclusive cost
// less its children's.
//
// Invariant checked: an operator's inclusive cost is at least the sum of its children's (a
// child runs only inside its parent's calls); a dump where it is not is refused, since its
// costs cannot be attributed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "query/operator.h"
#include "tools/icache/callgrind_parts.h"

namespace sm::bench {

// The tree with what each operator did: {"slot", "name", "detail", "est_rows", "rows",
// "rows_read", "children": [...]}; slot is -1 for an operator without one.
nlohmann::json OperatorTreeJson(const query::Operator& root);

// Each operator's costs from `functions` (a dump of a profiled run of the query that wrote
// `tree`), as a flat preorder list of {"operator", "depth", "rows", "rows_in" (its children's
// rows and the rows it read from tables), "instructions",
// "self_instructions", "self_l1i_misses", "self_l1d_misses", "self_mispredicts"}, also printed
// as a table; `total` is the whole dump's counters (the cursor's work outside the operators is
// its difference from the root's). False (with *error) if the dump has no slot functions or
// breaks the invariant above.
bool OperatorCosts(const nlohmann::json& tree, const icache::FunctionProfile& functions,
                   const icache::Counters& total, nlohmann::json* costs, std::string* error);

}  // namespace sm::bench
