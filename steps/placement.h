// CTX placement: which CTX sites (threads/ctx_point.h) are enabled, read from a placement file.
//
// Owns: the placement file format and applying it to the sites compiled into the binary.
//
// Format: one site per line, "<site name>" optionally followed by free text (the placement
// tool writes the operation, the fragment's footprint and its misses there); '#' starts a
// comment; blank lines are ignored. Applying a placement enables exactly the listed sites and
// disables every other one. A name that no compiled-in site has is an error (InvalidArgument
// naming the file, line and name): a stale placement must be regenerated, not half applied.
//
// The default placement, steps/ctx_placement.txt, is the output of the placement tool
// (tools/icache/ctx_place, `tools/run ctx-place`) for this code at 32 KiB 8-way; the operation
// boundaries themselves are team switches (BeginOp).
//
// Thread/fiber safety: apply before workers run operations (sites are read with relaxed loads).
#pragma once

#include <string>
#include <vector>

#include "sm/common/status.h"

namespace sm::steps {

struct Placement {
  std::vector<std::string> sites;  // in file order
};

// Parses a placement file.
[[nodiscard]] Status ReadPlacement(const std::string& path, Placement* placement);
// Parses placement text (`source` names it in errors).
[[nodiscard]] Status ParsePlacement(const std::string& text, const std::string& source,
                                    Placement* placement);
// Enables exactly placement.sites (InvalidArgument, changing nothing, if one is unknown).
[[nodiscard]] Status ApplyPlacement(const Placement& placement);
// The checked-in default placement, compiled into the library (so installed binaries have it).
Placement DefaultPlacement();

}  // namespace sm::steps
