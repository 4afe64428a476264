// Instruction footprints of the operators' code (Zhou & Ross, SIGMOD 2004, section 6.1): per
// module (a scan, a scan with a predicate, a hash join's build and its probe, an aggregation
// and each aggregate function, ...), the functions it runs and their code bytes, as
// `tools/run query-footprints` (tools/bench/query_footprints.cc) writes them to
// query/footprints.txt, which is compiled in.
//
// A group of modules has the footprint of the union of their functions, each counted once
// (modules share much code: value decoding, expression evaluation), not the sum of theirs.
//
// The file: '#' starts a comment; "function ID BYTES NAME" gives a function (its mangled name
// and code size); "module NAME ID..." lists a module's functions; "threshold ROWS" (or
// "threshold none") is the cardinality threshold of refinement (refine.h), the
// `calibrated_threshold` that `tools/run query-calibrate` writes: "none" when buffering never
// won its sweep. Without the line, the paper's threshold holds.
//
// Invariants: every module's function ids are defined; a name appears once; at most one
// threshold line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sm/common/status.h"

namespace sm::query {

class FootprintTable {
 public:
  // Reads the file format above; InvalidArgument (naming `source` and the line) if malformed.
  [[nodiscard]] static Status Parse(std::string_view text, const std::string& source,
                                    FootprintTable* out);
  // query/footprints.txt as compiled in, parsed and as text.
  static const FootprintTable& Default();
  static const char* DefaultText();
  // `text` (a table in the format above) with its threshold line replaced by one for
  // `threshold_rows` (< 0: none), or such a line added.
  static std::string WithThreshold(std::string_view text, double threshold_rows);

  bool Has(const std::string& module) const { return modules_.count(module) != 0; }
  // The code bytes of the union of the modules' functions; modules not in the table add
  // nothing (*unknown, if given, lists them).
  uint64_t Bytes(const std::vector<std::string>& modules,
                 std::vector<std::string>* unknown = nullptr) const;
  std::vector<std::string> ModuleNames() const;
  // The calibrated threshold: rows, +infinity for "none", or < 0 if the table has none.
  double threshold_rows() const { return threshold_rows_; }

 private:
  double threshold_rows_ = -1;
  std::vector<uint32_t> function_bytes_;                  // by function id
  std::map<std::string, std::vector<uint32_t>> modules_;  // module -> function ids
};

}  // namespace sm::query
