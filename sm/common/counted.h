// Counted: a count with its noun in the right number ("1 table", "2 tables"), for the reports
// people read (OpenReport, RecoveryReport).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sm {

// `n`, a space, and `singular` if n is 1, else `plural` (by default `singular` + "s").
inline std::string Counted(uint64_t n, std::string_view singular, std::string_view plural = {}) {
  std::string out = std::to_string(n);
  out += ' ';
  if (n == 1) {
    out += singular;
  } else if (plural.empty()) {
    out += singular;
    out += 's';
  } else {
    out += plural;
  }
  return out;
}

}  // namespace sm
